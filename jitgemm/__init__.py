"""jitgemm: a JIT compiler for AMD GPUs driven by AMD's machine-readable ISA specification."""

from __future__ import annotations

__version__ = "0.1.0"

from codegen.gemm_ir import GemmConfig, GemmProblem  # noqa: E402

from .compiler import Kernel, compile  # noqa: E402
from .matmul import LaunchRecord, MatmulError, last_launch, matmul  # noqa: E402

__all__ = ["GemmConfig", "GemmProblem", "Kernel", "LaunchRecord", "MatmulError", "compile", "last_launch", "matmul"]
