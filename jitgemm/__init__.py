"""jitgemm: a JIT compiler for AMD GPUs driven by AMD's machine-readable ISA specification."""

from __future__ import annotations

__version__ = "0.1.0"

from codegen.gemm_ir import GemmConfig, GemmProblem  # noqa: E402

from .compiler import Kernel, compile  # noqa: E402

_LAZY = {"matmul": "api", "last_launch": "api", "LaunchRecord": "api", "MatmulError": "api", "emulate": "emu",
         "explain": "selector", "use_prebuilt": "selector", "use_triton": "selector"}


def __getattr__(name: str):
    """`matmul` and friends import numpy; load them on first use so compile-only users start faster."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"jitgemm.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'jitgemm' has no attribute {name!r}")


__all__ = ["GemmConfig", "GemmProblem", "Kernel", "LaunchRecord", "MatmulError", "compile", "emulate", "explain",
           "last_launch", "matmul", "use_prebuilt", "use_triton"]
