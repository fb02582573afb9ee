"""Add or replace vendor keys in one kernel's AMDGPU metadata, in a relocatable object (ET_REL).

A compiler we do not control (LLVM through llvmlite) writes the NT_AMDGPU_METADATA note itself; this is how
facts only we know (the kernel contract under `jitgemm.contract`) get into it before `link`, which keeps
the note of a single input byte for byte. The note section is rewritten at the end of the file and its
section header pointed there: in a relocatable object nothing else refers to a section's file offset.
Keys beginning with "." are AMDGPUUsage's own ("Code Object V3 Metadata") and are refused; vendor keys are
conventionally prefixed with the vendor's name (e.g. `jitgemm.contract`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import elf_format as E
from .elf_reader import ElfFile
from .errors import CodeObjectError
from .metadata import check_plain, note_record, pack_metadata, parse_notes, plain, unpack_metadata


def set_kernel_metadata(obj: bytes, kernel: str, entries: Mapping[str, Any]) -> bytes:
    """A copy of the relocatable object `obj` whose metadata map for `kernel` has `entries` added (or
    replaced). CodeObjectError when the object is not relocatable, has no metadata note or no such kernel,
    or a key/value cannot be stored."""
    elf = ElfFile(bytes(obj))
    if elf.type != E.ET_REL:
        raise CodeObjectError(f"set_kernel_metadata: ELF type {elf.type} is not ET_REL; annotate the relocatable "
                              "object before linking it")
    for key, value in entries.items():
        if not isinstance(key, str) or not key or key.startswith("."):
            raise CodeObjectError(f"kernel {kernel!r}: metadata key {key!r} is not a vendor key (keys starting "
                                  "with '.' belong to AMDGPUUsage; use e.g. 'vendor.name')")
        check_plain(value, f"kernel {kernel!r} metadata {key}")
    found = None
    for sec in elf.sections_of_type(E.SHT_NOTE):
        notes = parse_notes(elf.section_data(sec), f"note section {sec.name}")
        for i, note in enumerate(notes):
            if note.name == E.NOTE_NAME_AMDGPU and note.type == E.NT_AMDGPU_METADATA:
                found = (sec, notes, i)
                break
        if found:
            break
    if found is None:
        raise CodeObjectError("set_kernel_metadata: the object has no NT_AMDGPU_METADATA note")
    sec, notes, index = found
    metadata = unpack_metadata(notes[index].desc, f"note section {sec.name}")
    kernels = metadata.get("amdhsa.kernels")
    if not isinstance(kernels, list):
        raise CodeObjectError(f"note section {sec.name}: amdhsa.kernels is missing or not a list")
    target = [k for k in kernels if isinstance(k, dict) and k.get(".name") == kernel]
    if not target:
        names = ", ".join(str(k.get(".name")) for k in kernels if isinstance(k, dict)) or "none"
        raise CodeObjectError(f"set_kernel_metadata: no kernel {kernel!r} in the metadata; it has: {names}")
    target[0].update({k: plain(v) for k, v in entries.items()})
    body = b"".join(note_record(n.name, n.type, pack_metadata(metadata) if i == index else n.desc)
                    for i, n in enumerate(notes))
    data = bytearray(elf.data)
    data += bytes(E.align_up(len(data), max(sec.align, 4)) - len(data))
    offset = len(data)
    data += body
    header = elf.shoff + sec.index * E.SHDR.size
    fields = list(E.SHDR.unpack_from(data, header))
    fields[4], fields[5] = offset, len(body)      # sh_offset, sh_size
    E.SHDR.pack_into(data, header, *fields)
    return bytes(data)
