"""Code generation: tiled GEMM IR, its lowerings, and code objects."""
