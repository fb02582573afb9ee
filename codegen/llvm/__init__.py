"""The LLVM generator: the tiled GEMM IR lowered to LLVM IR (llvmlite.ir) and compiled by LLVM's AMDGPU
backend, a second, independent route to the same kernel contract as the direct generator (codegen/gemm_asm).

    compile_gemm_llvm(problem, config=None, target="gfx942") -> CompiledLLVMGemm (code object, contract, llir)
"""

from .compile import GENERATOR, CompiledLLVMGemm, choose_config, compile_gemm_llvm, kernel_name
from .errors import LLVMCompileError

__all__ = ["GENERATOR", "CompiledLLVMGemm", "LLVMCompileError", "choose_config", "compile_gemm_llvm",
           "kernel_name"]
