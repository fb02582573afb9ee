"""The LLVM generator: the tiled GEMM IR lowered to LLVM IR (llvmlite.ir) and compiled by LLVM's AMDGPU
backend, a second, independent route to the same kernel contract as the direct generator (codegen/gemm_asm).

    compile_gemm_llvm(problem, config=None, target="gfx942") -> CompiledKernel (code object, contract, stages)

Block-scaled (MX) and weight-only problems on gfx950 follow the shared plan (`GemmPlan.mx`) with their own builder
(mx_builder.py, mx_weight_only.py; this lowering's limits in mx_plan.py): operands straight into registers, the
f8f6f4 MFMAs of the catalog, the same ABI and epilogue.
"""

from .errors import LLVMCompileError
from .llvm_generator import GENERATOR, LlvmGenerator, compile_gemm_llvm

__all__ = ["GENERATOR", "LLVMCompileError", "LlvmGenerator", "compile_gemm_llvm"]
