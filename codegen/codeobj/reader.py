"""Read any AMDGPU code object (ours, LLVM/clang, Triton, prebuilt) into kernels.

A kernel is found through its descriptor symbol NAME.kd (AMDGPUUsage "Symbols": the descriptor is an
STT_OBJECT named `<kernel>.kd`); its code starts at the descriptor's address plus
kernel_code_entry_byte_offset, and its metadata is the `amdhsa.kernels` entry whose `.symbol` names the
descriptor. Relocatable objects (ET_REL) are read too: there the entry offset is still a relocation, so the
code is located through the kernel's STT_FUNC symbol instead.

A loadable object also yields its image: every PT_LOAD segment with its virtual address, memory size, file
bytes and permissions (AMDGPUUsage "Code Object" / ELF "Program Headers": the loader places the segments of
one object in one contiguous allocation at base + p_vaddr, zero-filling p_memsz past p_filesz), which is what
a kernel reaching its .rodata/.data PC-relatively (s_getpc_b64 + @rel32 relocations) needs mapped, and the
dynamic relocations (.rela.dyn) the loader applies once it knows the load base (`LoadImage.relocated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import elf_format as E
from .descriptor import DESCRIPTOR_SIZE, KernelDescriptor
from .elf_reader import ElfFile, Section, Symbol
from .errors import CodeObjectError
from .metadata import CONTRACT_KEY, parse_notes, unpack_metadata
from .targets import decode_e_flags


@dataclass(frozen=True)
class LoadSegment:
    """One PT_LOAD program header: `memsz` bytes at virtual address `vaddr`, the first len(data) from the file
    and the rest zero (.bss); `writable`/`executable` from p_flags (PF_W, PF_X)."""

    vaddr: int
    memsz: int
    data: bytes
    writable: bool
    executable: bool
    sections: tuple[str, ...] = ()  # the allocated sections it holds, for messages (".rodata", ".text")

    @property
    def name(self) -> str:
        perms = "r" + ("w" if self.writable else "-") + ("x" if self.executable else "-")
        return f"code object segment {perms} [{' '.join(self.sections) or 'no sections'}]"


# dynamic relocations a code object loader applies (AMDGPUUsage "Relocation Records": ABS32_LO/HI, ABS64 take
# S + A; RELATIVE64 takes B + A), with the byte width each writes
_DYNAMIC_WIDTH = {E.R_AMDGPU_ABS32_LO: 4, E.R_AMDGPU_ABS32_HI: 4, E.R_AMDGPU_ABS32: 4, E.R_AMDGPU_ABS64: 8,
                  E.R_AMDGPU_RELATIVE64: 8}


@dataclass(frozen=True)
class DynamicRelocation:
    """One .rela.dyn entry: patch `offset` (a virtual address) with B + A (RELATIVE64) or B + S + A, where S is
    the defined symbol's virtual address (`symbol_value`)."""

    offset: int
    type: int
    addend: int
    symbol: str = ""
    symbol_value: int = 0


@dataclass(frozen=True)
class LoadImage:
    """What a loader places in memory: the PT_LOAD segments in address order and the dynamic relocations."""

    segments: tuple[LoadSegment, ...] = ()
    relocations: tuple[DynamicRelocation, ...] = ()

    def relocated(self, base: int) -> tuple[LoadSegment, ...]:
        """The segments as they are once loaded at `base`: every dynamic relocation applied."""
        if not self.relocations:
            return self.segments
        patched = {i: bytearray(seg.data.ljust(seg.memsz, b"\0")) for i, seg in enumerate(self.segments)}
        for r in self.relocations:
            width = _DYNAMIC_WIDTH[r.type]
            value = base + r.addend + (0 if r.type == E.R_AMDGPU_RELATIVE64 else r.symbol_value)
            if r.type == E.R_AMDGPU_ABS32_HI:
                value >>= 32
            i = next(i for i, seg in enumerate(self.segments)
                     if seg.vaddr <= r.offset and r.offset + width <= seg.vaddr + seg.memsz)
            at = r.offset - self.segments[i].vaddr
            patched[i][at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        return tuple(LoadSegment(seg.vaddr, seg.memsz, bytes(patched[i]), seg.writable, seg.executable,
                                 seg.sections) for i, seg in enumerate(self.segments))


@dataclass(frozen=True)
class Kernel:
    name: str
    code: bytes
    code_address: int  # virtual address (ET_DYN) or offset in its section (ET_REL)
    descriptor: KernelDescriptor
    descriptor_bytes: bytes
    descriptor_address: int
    metadata: dict[str, Any] = field(default_factory=dict)  # this kernel's amdhsa.kernels map ({} if none)
    image: LoadImage = LoadImage()  # its code object's loadable image (empty for ET_REL)

    @property
    def args(self) -> list[dict[str, Any]]:
        args = self.metadata.get(".args", [])
        return args if isinstance(args, list) else []

    @property
    def contract(self) -> dict[str, Any] | None:
        value = self.metadata.get(CONTRACT_KEY)
        return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class CodeObject:
    elf_type: str  # "ET_DYN" or "ET_REL"
    e_flags: int
    processor: str | None
    mach: int
    xnack: str
    sramecc: str
    abi_version: int
    code_object_version: int | None
    metadata: dict[str, Any]
    kernels: tuple[Kernel, ...]
    image: LoadImage = LoadImage()  # PT_LOAD segments and dynamic relocations (empty for ET_REL)

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise CodeObjectError(f"no kernel {name!r} in the code object; it has: "
                              f"{', '.join(k.name for k in self.kernels) or 'none'}")

    @property
    def target(self) -> str | None:
        value = self.metadata.get("amdhsa.target")
        return value if isinstance(value, str) else None


def read_metadata(elf: ElfFile) -> dict[str, Any]:
    """The NT_AMDGPU_METADATA map; several notes (as from linking several objects) have their kernels
    concatenated."""
    merged: dict[str, Any] = {}
    for sec in elf.sections_of_type(E.SHT_NOTE):
        for note in parse_notes(elf.section_data(sec), f"note section {sec.name}"):
            if note.name != E.NOTE_NAME_AMDGPU or note.type != E.NT_AMDGPU_METADATA:
                continue
            value = unpack_metadata(note.desc, f"note section {sec.name}")
            kernels = value.get("amdhsa.kernels", [])
            if not isinstance(kernels, list):
                raise CodeObjectError(f"metadata amdhsa.kernels is a {type(kernels).__name__}, expected a list")
            for i, k in enumerate(kernels):
                if not isinstance(k, dict):
                    raise CodeObjectError(f"metadata amdhsa.kernels[{i}] is a {type(k).__name__}, expected a map")
            if not merged:
                merged = value
            else:
                merged["amdhsa.kernels"] = list(merged.get("amdhsa.kernels", [])) + kernels
    return merged


def _code_end(elf: ElfFile, section: Section, start: int, symbols: list[Symbol], dyn: bool) -> int:
    """Where a kernel without a symbol size ends: at the next symbol in its section, or the section end."""
    base = section.addr if dyn else 0
    later = [s.value for s in symbols
             if s.shndx == section.index and s.value > start and s.type in (E.STT_FUNC, E.STT_NOTYPE)]
    return min(later, default=base + section.size)


def read(data: bytes) -> CodeObject:
    """Parse a code object; malformed input raises CodeObjectError naming the problem."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodeObjectError(f"expected the bytes of a code object, got {type(data).__name__}")
    elf = ElfFile(bytes(data))
    if elf.type not in (E.ET_DYN, E.ET_REL):
        raise CodeObjectError(f"ELF type {elf.type} is neither ET_DYN (a loadable code object) nor ET_REL")
    dyn = elf.type == E.ET_DYN
    metadata = read_metadata(elf)
    symbols = elf.symbol_table if dyn else _symtab(elf)
    by_name = {s.name: s for s in symbols if s.shndx != E.SHN_UNDEF}
    maps = metadata.get("amdhsa.kernels", [])
    meta_by_symbol: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(maps):
        sym = m.get(".symbol", f"{m.get('.name')}.kd")
        if not isinstance(sym, str):
            raise CodeObjectError(f"metadata amdhsa.kernels[{i}].symbol is not a string")
        meta_by_symbol[sym] = m
    kd_symbols = [s for s in symbols if s.name.endswith(".kd") and s.shndx != E.SHN_UNDEF
                  and s.type in (E.STT_OBJECT, E.STT_NOTYPE)]
    order = [name for name in meta_by_symbol if name in by_name]
    missing = [name for name in meta_by_symbol if name not in by_name]
    if missing:
        raise CodeObjectError(f"metadata describes kernel descriptor(s) {', '.join(missing)} that no symbol "
                              "defines")
    order += [s.name for s in kd_symbols if s.name not in meta_by_symbol]
    image = load_image(elf) if dyn else LoadImage()
    kernels = []
    for kd_name in order:
        kd = by_name[kd_name]
        name = kd_name[:-3]
        what = f"kernel descriptor {kd_name}"
        if dyn:
            _, raw = elf.read_at_address(kd.value, DESCRIPTOR_SIZE, what)
        else:
            sec = elf.section(kd.shndx, what)
            body = elf.section_data(sec)
            if kd.value + DESCRIPTOR_SIZE > len(body):
                raise CodeObjectError(f"{what} at {sec.name}+{kd.value:#x} runs past the section end")
            raw = body[kd.value:kd.value + DESCRIPTOR_SIZE]
        desc = KernelDescriptor.from_bytes(raw)
        func = by_name.get(name)
        if dyn:
            entry = kd.value + desc.kernel_code_entry_byte_offset
            section, _ = elf.read_at_address(entry, 1, f"code of kernel {name!r}", executable=True)
            if func is not None and func.value == entry and func.size:
                end = entry + func.size
            else:
                end = _code_end(elf, section, entry, symbols, True)
            end = min(end, section.addr + section.size)
            _, code = elf.read_at_address(entry, end - entry, f"code of kernel {name!r}", executable=True)
        else:
            if func is None:
                raise CodeObjectError(f"kernel {name!r}: relocatable object has {kd_name} but no symbol {name}")
            section = elf.section(func.shndx, f"kernel {name!r}")
            body = elf.section_data(section)
            entry = func.value
            end = entry + func.size if func.size else _code_end(elf, section, entry, symbols, False)
            if entry >= len(body) or end > len(body):
                raise CodeObjectError(f"kernel {name!r}: code [{entry:#x}, {end:#x}) lies outside section "
                                      f"{section.name} ({len(body):#x} bytes)")
            code = body[entry:end]
        kernels.append(Kernel(name, bytes(code), entry, desc, bytes(raw), kd.value,
                              meta_by_symbol.get(kd_name, {}), image))
    flags = decode_e_flags(elf.flags)
    return CodeObject(
        elf_type="ET_DYN" if dyn else "ET_REL", e_flags=elf.flags, processor=flags.processor, mach=flags.mach,
        xnack=flags.xnack, sramecc=flags.sramecc, abi_version=elf.abi_version,
        code_object_version=E.CODE_OBJECT_OF_ABI_VERSION.get(elf.abi_version), metadata=metadata,
        kernels=tuple(kernels), image=image)


def load_image(elf: ElfFile) -> LoadImage:
    """The PT_LOAD segments of a loadable object, sorted by address, and its dynamic relocations; overlapping
    segments, a file size larger than the memory size, a relocation outside every segment, of a type the loader
    does not apply, or against an undefined symbol are a CodeObjectError (the loader could not load it)."""
    out = []
    for i, seg in enumerate(elf.segments):
        if seg.type != E.PT_LOAD or seg.memsz == 0:
            continue
        if seg.filesz > seg.memsz:
            raise CodeObjectError(f"program header {i}: PT_LOAD p_filesz {seg.filesz:#x} exceeds p_memsz "
                                  f"{seg.memsz:#x}")
        names = tuple(s.name for s in elf.sections if s.alloc and s.size and seg.vaddr <= s.addr
                      and s.addr + s.size <= seg.vaddr + seg.memsz)
        out.append(LoadSegment(seg.vaddr, seg.memsz, elf.data[seg.offset:seg.offset + seg.filesz],
                               bool(seg.flags & E.PF_W), bool(seg.flags & E.PF_X), names))
    out.sort(key=lambda s: s.vaddr)
    for a, b in zip(out, out[1:], strict=False):
        if a.vaddr + a.memsz > b.vaddr:
            raise CodeObjectError(f"PT_LOAD segments overlap: [{a.vaddr:#x}, {a.vaddr + a.memsz:#x}) and "
                                  f"[{b.vaddr:#x}, {b.vaddr + b.memsz:#x})")
    relocations = []
    for table in elf.sections_of_type(E.SHT_RELA):
        if not table.alloc:  # a linked object's static relocations (--emit-relocs) are not the loader's
            continue
        symbols = elf.symbols(elf.section(table.link, f"relocation section {table.name} symbol table")) \
            if table.link else []
        for i, r in enumerate(elf.relocations(table)):
            what = f"{table.name} entry {i} ({E.RELOCATION_NAMES.get(r.type, r.type)} at {r.offset:#x})"
            if r.type == E.R_AMDGPU_NONE:
                continue
            width = _DYNAMIC_WIDTH.get(r.type)
            if width is None:
                raise CodeObjectError(f"{what}: not a dynamic relocation a loader applies (accepted: "
                                      f"{', '.join(E.RELOCATION_NAMES[t] for t in _DYNAMIC_WIDTH)})")
            if not any(s.vaddr <= r.offset and r.offset + width <= s.vaddr + s.memsz for s in out):
                raise CodeObjectError(f"{what}: patches bytes outside every PT_LOAD segment")
            name, value = "", 0
            if r.type != E.R_AMDGPU_RELATIVE64:
                if not 0 < r.symbol < len(symbols) or symbols[r.symbol].shndx == E.SHN_UNDEF:
                    raise CodeObjectError(f"{what}: symbol #{r.symbol} is not defined in the code object (the "
                                          "emulator loads one object; nothing else can provide it)")
                name, value = symbols[r.symbol].name, symbols[r.symbol].value
            relocations.append(DynamicRelocation(r.offset, r.type, r.addend, name, value))
    return LoadImage(tuple(out), tuple(relocations))


def _symtab(elf: ElfFile) -> list[Symbol]:
    tables = elf.sections_of_type(E.SHT_SYMTAB)
    return elf.symbols(tables[0]) if tables else []
