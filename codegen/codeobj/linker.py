"""Link relocatable AMDGPU objects (ET_REL, e.g. llvmlite's `emit_object`) into a loadable code object.

This is the part of `ld.lld -shared` a code object needs, done in Python at run time: input sections are
merged by name (.text*, .rodata*, .data*, .bss*), symbols resolved across the inputs, the AMDGPU
relocations applied (R_AMDGPU_REL64 for each descriptor's kernel_code_entry_byte_offset, REL32_LO/HI and
GOTPCREL32_LO/HI for PC-relative global addresses, ABS64 pointers in data), and the metadata note kept. The
layout is the shared one in image.py, the same as the writer's.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import elf_format as E
from .elf_reader import ElfFile
from .errors import CodeObjectError
from .image import Chunk, Reloc, Sym, build_shared_object
from .metadata import metadata_note, note_record, parse_notes, unpack_metadata

MAX_ALIGN = 1 << 16
MAX_NOBITS = 1 << 32
_OUTPUT_PREFIXES = (".text", ".rodata", ".data.rel.ro", ".data", ".bss")


def _output_name(name: str) -> str:
    for prefix in _OUTPUT_PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            return prefix
    return name


def _merge_notes(notes: list[tuple[str, bytes]]) -> bytes:
    """One object's note section is kept byte for byte; several objects' AMDGPU metadata notes are merged
    into one note listing all their kernels (the loader reads a single metadata note)."""
    for origin, data in notes:  # a note we pass on must at least be readable
        for note in parse_notes(data, f"{origin}: note section"):
            if note.name == E.NOTE_NAME_AMDGPU and note.type == E.NT_AMDGPU_METADATA:
                unpack_metadata(note.desc, f"{origin}: metadata note")
    if len(notes) <= 1:
        return notes[0][1] if notes else b""
    merged = None
    others = b""
    for origin, data in notes:
        for note in parse_notes(data, f"{origin}: note section"):
            if note.name == E.NOTE_NAME_AMDGPU and note.type == E.NT_AMDGPU_METADATA:
                value = unpack_metadata(note.desc, f"{origin}: metadata note")
                if merged is None:
                    merged = value
                    continue
                for key in ("amdhsa.version", "amdhsa.target"):
                    if key in value and key in merged and value[key] != merged[key]:
                        raise CodeObjectError(f"{origin}: {key} {value[key]!r} differs from {merged[key]!r} of "
                                              "an earlier input")
                kernels = value.get("amdhsa.kernels", [])
                if not isinstance(kernels, list):
                    raise CodeObjectError(f"{origin}: metadata amdhsa.kernels is not a list")
                merged["amdhsa.kernels"] = list(merged.get("amdhsa.kernels", [])) + kernels
            else:
                others += note_record(note.name, note.type, note.desc)
    return (metadata_note(merged) if merged is not None else b"") + others


def link(objects: Sequence[bytes] | bytes, names: Sequence[str] | None = None) -> bytes:
    """Link one or more ET_REL objects into a loadable ET_DYN code object."""
    if isinstance(objects, bytes | bytearray | memoryview):
        objects = [bytes(objects)]
    if not objects:
        raise CodeObjectError("nothing to link: no input objects")
    labels = list(names) if names is not None else [f"input {i}" for i in range(len(objects))]
    chunks: list[Chunk] = []
    all_syms: list[Sym] = []
    relocs: list[Reloc] = []
    globals_: dict[str, Sym] = {}
    pending: list[tuple[str, Sym]] = []  # undefined references to resolve by name
    notes: list[tuple[str, bytes]] = []
    flags = abi = None
    for label, blob in zip(labels, objects, strict=True):
        elf = ElfFile(blob)
        if elf.type != E.ET_REL:
            raise CodeObjectError(f"{label}: ELF type {elf.type} is not ET_REL; only relocatable objects are linked")
        if flags is None:
            flags, abi = elf.flags, elf.abi_version
        elif (elf.flags & 0xFF) != (flags & 0xFF) or elf.abi_version != abi:
            raise CodeObjectError(f"{label}: e_flags {elf.flags:#x} / ABI version {elf.abi_version} do not match "
                                  f"the first input's {flags:#x} / {abi}")
        section_chunks: dict[int, Chunk] = {}
        for sec in elf.sections:
            if sec.type == E.SHT_NOTE:
                if sec.alloc:
                    notes.append((f"{label}:{sec.name}", elf.section_data(sec)))
                continue
            if not sec.alloc or sec.type not in (E.SHT_PROGBITS, E.SHT_NOBITS):
                continue
            nobits = sec.type == E.SHT_NOBITS
            align = max(sec.align, 1)
            if align & (align - 1) or align > MAX_ALIGN:
                raise CodeObjectError(f"{label}: section {sec.name} alignment {sec.align} is not a power of two "
                                      f"up to {MAX_ALIGN}")
            if nobits and sec.size > MAX_NOBITS:
                raise CodeObjectError(f"{label}: section {sec.name} of {sec.size} bytes is larger than a code "
                                      f"object segment may be ({MAX_NOBITS} bytes)")
            chunk = Chunk(_output_name(sec.name), None if nobits else bytearray(elf.section_data(sec)), sec.size,
                          align, sec.flags, origin=f"{label}:{sec.name}")
            section_chunks[sec.index] = chunk
            chunks.append(chunk)
        symtabs = elf.sections_of_type(E.SHT_SYMTAB)
        raw_syms = elf.symbols(symtabs[0]) if symtabs else []
        syms: list[Sym | None] = []
        for s in raw_syms:
            if s.index == 0:
                syms.append(None)
                continue
            if s.shndx == E.SHN_UNDEF:
                sym = Sym(s.name, None, 0, 0, s.type, s.bind, s.visibility, defined=False)
                pending.append((label, sym))
            elif s.shndx == E.SHN_ABS:
                sym = Sym(s.name, None, s.value, s.size, s.type, s.bind, s.visibility)
            elif s.shndx == E.SHN_COMMON:
                raise CodeObjectError(f"{label}: common symbol {s.name!r} is not supported; define it in a section")
            elif s.shndx in section_chunks:
                if s.value > section_chunks[s.shndx].size:
                    raise CodeObjectError(f"{label}: symbol {s.name!r} value {s.value:#x} lies beyond its section "
                                          f"{section_chunks[s.shndx].origin} ({section_chunks[s.shndx].size:#x} bytes)")
                sym = Sym(s.name, section_chunks[s.shndx], s.value, s.size, s.type, s.bind, s.visibility)
            elif s.shndx < len(elf.sections):  # in a section we do not load (debug info, ...)
                sym = Sym(s.name, None, 0, 0, s.type, E.STB_LOCAL, E.STV_DEFAULT, defined=False)
            else:
                raise CodeObjectError(f"{label}: symbol {s.name!r} refers to section {s.shndx}, beyond the "
                                      f"{len(elf.sections)} sections")
            syms.append(sym)
            if s.type == E.STT_SECTION or not sym.defined and s.bind == E.STB_LOCAL:
                continue
            if sym.defined and sym.bind != E.STB_LOCAL:
                previous = globals_.get(sym.name)
                if previous is not None and previous.bind != E.STB_WEAK and sym.bind != E.STB_WEAK:
                    raise CodeObjectError(f"{label}: duplicate symbol {sym.name!r}")
                if previous is None or previous.bind == E.STB_WEAK:
                    globals_[sym.name] = sym
            if sym.defined:
                all_syms.append(sym)
        for table in elf.sections_of_type(E.SHT_RELA) + elf.sections_of_type(E.SHT_REL):
            target = elf.section(table.info, f"{label}: relocation section {table.name}")
            if target.index not in section_chunks:
                continue  # relocations of debug info and other sections we do not load
            for r in elf.relocations(table):
                if r.type == E.R_AMDGPU_NONE:
                    continue
                if not 0 < r.symbol < len(syms) or syms[r.symbol] is None:
                    raise CodeObjectError(f"{label}: relocation in {table.name} at {r.offset:#x} refers to symbol "
                                          f"{r.symbol}, beyond the {len(syms)} symbols")
                relocs.append(Reloc(section_chunks[target.index], r.offset, r.type, syms[r.symbol], r.addend))
    # resolve undefined references by name
    resolved: dict[int, Sym] = {}
    for _label, sym in pending:
        definition = globals_.get(sym.name)
        if definition is not None:
            resolved[id(sym)] = definition
    for rel in relocs:
        if not rel.sym.defined and id(rel.sym) in resolved:
            rel.sym = resolved[id(rel.sym)]
    assert flags is not None and abi is not None
    exported = [s for s in all_syms if s.bind == E.STB_LOCAL or globals_.get(s.name) is s]
    return build_shared_object(chunks, exported, relocs, _merge_notes(notes), flags, abi)
