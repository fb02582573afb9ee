"""Errors of the LLVM generator: LLVM refused the IR (parser, verifier) or the AMDGPU backend failed.

Either way the message says where in the generated LLVM IR the problem is (line and the text of that line,
as `Kernel.stages["llir"]` shows it), so a generator bug can be found without re-running LLVM by hand.
"""

from __future__ import annotations

from jitgemm.codegen.gemm_ir import IRError


class LLVMCompileError(IRError):
    """LLVM rejected the generated IR or its AMDGPU backend failed on it."""

    def __init__(self, stage: str, message: str, *, line: int | None = None, line_text: str | None = None,
                 kernel: str | None = None) -> None:
        self.stage = stage
        self.line = line
        self.line_text = line_text
        self.kernel = kernel
        self.reason = message
        where = f"LLVM IR line {line}" if line is not None else "LLVM IR"
        if kernel:
            where = f"kernel {kernel!r}, {where}"
        text = f" (`{line_text.strip()}`)" if line_text else ""
        super().__init__(f"{stage} error at {where}{text}: {message}")
