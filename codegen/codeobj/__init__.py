"""AMDGPU HSA code objects (v5/v6) written, read and linked in Python, without an external toolchain.

The authority for every structure here is LLVM's AMDGPUUsage document (code object ELF header, kernel
descriptor, NT_AMDGPU_METADATA, relocations, kernel ABI); tests check each one against llvm-mc, ld.lld,
llvm-readelf, clang and Triton.

    write(kernels, "gfx942", xnack="off", sramecc="on")  -> bytes of a loadable ET_DYN
    read(code_object_bytes)                              -> CodeObject(kernels=(Kernel, ...), ...)
    link([relocatable_object_bytes, ...])                -> bytes of a loadable ET_DYN

Every name loads its module on first use: `jitgemm disasm` reads ELF sections with `elf_reader` alone, and
should not pay for the writer, the linker and the metadata codec (YAML, msgpack) in every new process.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "KernelArg": "description", "KernelDescription": "description",
    "KernelDescriptor": "descriptor", "compute_descriptor": "descriptor",
    "CodeObjectError": "errors", "link": "linker",
    "CONTRACT_KEY": "metadata", "HIDDEN_ARGS_V5": "metadata", "STANDARD_HIDDEN_ARGS": "metadata",
    "CodeObject": "reader", "Kernel": "reader", "read": "reader",
    "TARGETS": "targets", "target_id": "targets", "write": "writer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        if name in _EXPORTS.values():      # a submodule (`codeobj.targets`): imported on first use, as the names are
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value   # later look-ups are plain attribute hits
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
