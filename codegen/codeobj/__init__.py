"""AMDGPU HSA code objects (v5/v6) written, read and linked in Python, without an external toolchain.

The authority for every structure here is LLVM's AMDGPUUsage document (code object ELF header, kernel
descriptor, NT_AMDGPU_METADATA, relocations, kernel ABI); tests check each one against llvm-mc, ld.lld,
llvm-readelf, clang and Triton.

    write(kernels, "gfx942", xnack="off", sramecc="on")  -> bytes of a loadable ET_DYN
    read(code_object_bytes)                              -> CodeObject(kernels=(Kernel, ...), ...)
    link([relocatable_object_bytes, ...])                -> bytes of a loadable ET_DYN
"""

from .description import KernelArg, KernelDescription
from .descriptor import KernelDescriptor, compute_descriptor
from .errors import CodeObjectError
from .linker import link
from .metadata import CONTRACT_KEY, HIDDEN_ARGS_V5, STANDARD_HIDDEN_ARGS
from .reader import CodeObject, Kernel, read
from .targets import TARGETS, target_id
from .writer import write

__all__ = [
    "CONTRACT_KEY", "HIDDEN_ARGS_V5", "STANDARD_HIDDEN_ARGS", "TARGETS", "CodeObject", "CodeObjectError",
    "Kernel", "KernelArg", "KernelDescription", "KernelDescriptor", "compute_descriptor", "link", "read",
    "target_id", "write",
]
