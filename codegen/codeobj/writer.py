"""Write kernels we generated into a loadable code object (no assembler, no linker).

Each kernel contributes its code to .text (256-byte aligned, as LLVM aligns kernel entries), its 64-byte
descriptor to .rodata (64-byte aligned, as CP requires), the symbols NAME (STT_FUNC) and NAME.kd
(STT_OBJECT), and an R_AMDGPU_REL64 from the descriptor's kernel_code_entry_byte_offset to NAME: the same
shape llvm-mc gives for `.amdhsa_kernel`, resolved by the same layout code the linker uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import elf_format as E
from .description import KernelDescription
from .descriptor import (
    DESCRIPTOR_ALIGN,
    ENTRY_OFFSET_FIELD,
    compute_descriptor,
    sgpr_count,
    total_vgprs,
)
from .errors import CodeObjectError
from .image import Chunk, Reloc, Sym, build_shared_object
from .metadata import code_object_metadata, kernarg_layout, kernel_metadata, metadata_note
from .targets import check_setting, e_flags, target, target_id

CODE_ALIGN = 256
# What llvm-mc fills code alignment gaps with on GFX9 (`s_nop 0`, AMDGPUAsmBackend::writeNopData), so that the
# gaps between kernels disassemble as no-ops and our .text is byte-identical to LLVM's.
CODE_FILL = (0xBF800000).to_bytes(4, "little")
SUPPORTED_VERSIONS = (5, 6)


def write(kernels: Sequence[KernelDescription] | KernelDescription, target_name: str = "gfx942", *,
          xnack: str = "any", sramecc: str = "any", code_object_version: int = 5) -> bytes:
    """A code object holding `kernels`, for `target_name` with the given xnack/sramecc settings."""
    if isinstance(kernels, KernelDescription):
        kernels = [kernels]
    if not kernels:
        raise CodeObjectError("a code object needs at least one kernel")
    if code_object_version not in SUPPORTED_VERSIONS:
        raise CodeObjectError(f"code object version {code_object_version} is not supported; use one of "
                              f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    processor = target(target_name)
    check_setting("xnack", xnack)
    check_setting("sramecc", sramecc)
    chunks: list[Chunk] = []
    funcs: list[Sym] = []
    descriptors: list[Sym] = []
    relocs: list[Reloc] = []
    kernel_maps = []
    names: set[str] = set()
    for desc in kernels:
        if not isinstance(desc, KernelDescription):
            raise CodeObjectError(f"expected a KernelDescription, got {type(desc).__name__}")
        if not desc.name or not isinstance(desc.name, str) or "\0" in desc.name:
            raise CodeObjectError(f"kernel name {desc.name!r} is not a valid symbol name")
        if desc.name in names:
            raise CodeObjectError(f"kernel {desc.name!r} appears twice")
        names.add(desc.name)
        code = bytes(desc.code)
        if not code or len(code) % 4:
            raise CodeObjectError(f"kernel {desc.name!r}: code is {len(code)} bytes; instructions are whole "
                                  "dwords and a kernel needs at least one")
        layout = kernarg_layout(desc)
        kd = compute_descriptor(desc, processor, xnack, layout.size)
        kernel_maps.append(kernel_metadata(desc, layout, total_vgprs(desc), sgpr_count(desc, processor, xnack)))
        text = Chunk(".text", bytearray(code), len(code), CODE_ALIGN, E.SHF_ALLOC | E.SHF_EXECINSTR,
                     origin=f"{desc.name}:.text")
        rodata = Chunk(".rodata", bytearray(kd.to_bytes()), 64, DESCRIPTOR_ALIGN, E.SHF_ALLOC,
                       origin=f"{desc.name}.kd")
        chunks += [text, rodata]
        func = Sym(desc.name, text, 0, len(code), E.STT_FUNC, E.STB_GLOBAL, E.STV_PROTECTED)
        funcs.append(func)
        descriptors.append(Sym(f"{desc.name}.kd", rodata, 0, 64, E.STT_OBJECT, E.STB_GLOBAL, E.STV_PROTECTED))
        relocs.append(Reloc(rodata, ENTRY_OFFSET_FIELD, E.R_AMDGPU_REL64, func, ENTRY_OFFSET_FIELD))
    texts = [c for c in chunks if c.name == ".text"]
    for chunk in texts[:-1]:  # pad each kernel up to the next one's alignment, as llvm-mc's .p2align does
        gap = -chunk.size % CODE_ALIGN
        chunk.data += CODE_FILL * (gap // 4)
        chunk.size += gap
    # .text chunks first then .rodata ones: output section order does not depend on it (the layout orders
    # sections by kind), but symbol order follows llvm-mc: kernels first, then their descriptors.
    chunks.sort(key=lambda c: c.name != ".text")
    metadata = code_object_metadata(kernel_maps, target_id(processor, xnack, sramecc), code_object_version)
    return build_shared_object(chunks, funcs + descriptors, relocs, metadata_note(metadata),
                               e_flags(processor, xnack, sramecc),
                               E.ABI_VERSION_OF_CODE_OBJECT[code_object_version])
