"""A bounds-checked ELF64 parser for code objects.

Every offset and size read from the file is checked before use, and every failure is a CodeObjectError
naming the structure (header, section, symbol, relocation) and the numbers that do not fit, so a truncated
or corrupted file can never surface as an IndexError or struct.error.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from . import elf_format as E
from .errors import CodeObjectError


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int

    @property
    def alloc(self) -> bool:
        return bool(self.flags & E.SHF_ALLOC)


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    align: int


@dataclass(frozen=True)
class Symbol:
    index: int
    name: str
    value: int
    size: int
    type: int
    bind: int
    visibility: int
    shndx: int


@dataclass(frozen=True)
class Relocation:
    offset: int
    type: int
    symbol: int
    addend: int


def _name(table: bytes, offset: int, what: str) -> str:
    if offset >= len(table) and offset != 0:
        raise CodeObjectError(f"{what}: name offset {offset} is outside its string table ({len(table)} bytes)")
    end = table.find(b"\0", offset)
    if end < 0:
        raise CodeObjectError(f"{what}: name at offset {offset} is not NUL-terminated")
    return table[offset:end].decode("utf-8", errors="replace")


class ElfFile:
    """A parsed ELF64 little-endian file; `data` is kept and sliced on demand."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        size = len(self.data)
        if size < 4 or self.data[:4] != E.ELF_MAGIC:
            raise CodeObjectError(f"not an ELF file: bad magic {self.data[:4]!r} (expected {E.ELF_MAGIC!r})")
        if size < E.EHDR.size:
            raise CodeObjectError(f"truncated ELF header: file is {size} bytes, the ELF64 header needs "
                                  f"{E.EHDR.size}")
        (ident, self.type, self.machine, _version, _entry, self.phoff, self.shoff, self.flags, _ehsize,
         self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx) = E.EHDR.unpack_from(self.data)
        if ident[4] != E.ELFCLASS64:
            raise CodeObjectError(f"ELF class {ident[4]} is not ELFCLASS64; code objects are 64-bit")
        if ident[5] != E.ELFDATA2LSB:
            raise CodeObjectError(f"ELF data encoding {ident[5]} is not little-endian")
        self.osabi = ident[7]
        self.abi_version = ident[8]
        if self.machine != E.EM_AMDGPU:
            raise CodeObjectError(f"wrong machine: e_machine={self.machine}, expected EM_AMDGPU ({E.EM_AMDGPU})")
        self.sections = self._read_sections()
        self.segments = self._read_segments()

    # -- tables
    def _table(self, what: str, offset: int, count: int, entsize: int, expected: int) -> None:
        if count and entsize != expected:
            raise CodeObjectError(f"{what}: entry size {entsize}, expected {expected}")
        end = offset + count * expected
        if count and (offset < 0 or end > len(self.data)):
            raise CodeObjectError(f"{what} (offset {offset}, {count} entries of {expected} bytes) runs past the "
                                  f"end of the file ({len(self.data)} bytes)")

    def _read_sections(self) -> list[Section]:
        shnum = self.shnum
        if self.shoff == 0:
            return []
        if shnum == 0:  # extended numbering: the real count is in section 0's sh_size
            self._table("section header table", self.shoff, 1, self.shentsize, E.SHDR.size)
            shnum = E.SHDR.unpack_from(self.data, self.shoff)[5]
            if shnum > len(self.data) // E.SHDR.size:
                raise CodeObjectError(f"section header table claims {shnum} sections, more than the file holds")
        self._table("section header table", self.shoff, shnum, self.shentsize, E.SHDR.size)
        raw = [E.SHDR.unpack_from(self.data, self.shoff + i * E.SHDR.size) for i in range(shnum)]
        strndx = self.shstrndx
        if strndx == 0xFFFF and raw:
            strndx = raw[0][6]
        names = b""
        if strndx and strndx < len(raw):
            names = self._slice(raw[strndx][4], raw[strndx][5], "section name table")
        elif strndx:
            raise CodeObjectError(f"section name table index {strndx} is beyond the {len(raw)} sections")
        out = []
        for i, (name, kind, flags, addr, offset, size, link, info, align, entsize) in enumerate(raw):
            label = _name(names, name, f"section {i}") if names else f"#{i}"
            out.append(Section(i, label, kind, flags, addr, offset, size, link, info, align, entsize))
            if kind != E.SHT_NOBITS and kind != E.SHT_NULL:
                self._slice(offset, size, f"section {label or i}")
        return out

    def _read_segments(self) -> list[Segment]:
        if self.phoff == 0 or self.phnum == 0:
            return []
        self._table("program header table", self.phoff, self.phnum, self.phentsize, E.PHDR.size)
        out = []
        for i in range(self.phnum):
            kind, flags, offset, vaddr, _paddr, filesz, memsz, align = E.PHDR.unpack_from(
                self.data, self.phoff + i * E.PHDR.size)
            self._slice(offset, filesz, f"program header {i}")
            out.append(Segment(kind, flags, offset, vaddr, filesz, memsz, align))
        return out

    def _slice(self, offset: int, size: int, what: str) -> bytes:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise CodeObjectError(f"{what} out of bounds: [{offset:#x}, {offset + size:#x}) lies outside the "
                                  f"file ({len(self.data):#x} bytes)")
        return self.data[offset:offset + size]

    # -- accessors
    def section_data(self, section: Section) -> bytes:
        if section.type == E.SHT_NOBITS:
            return bytes(min(section.size, 1 << 24))
        return self._slice(section.offset, section.size, f"section {section.name}")

    def section(self, index: int, what: str) -> Section:
        if not 0 <= index < len(self.sections):
            raise CodeObjectError(f"{what}: section index {index} is beyond the {len(self.sections)} sections")
        return self.sections[index]

    def sections_of_type(self, kind: int) -> list[Section]:
        return [s for s in self.sections if s.type == kind]

    def symbols(self, table: Section) -> list[Symbol]:
        data = self.section_data(table)
        if table.entsize not in (0, E.SYM.size):
            raise CodeObjectError(f"symbol table {table.name}: entry size {table.entsize}, expected {E.SYM.size}")
        strings = self.section_data(self.section(table.link, f"symbol table {table.name} string table"))
        out = []
        for i in range(len(data) // E.SYM.size):
            name, info, other, shndx, value, size = E.SYM.unpack_from(data, i * E.SYM.size)
            label = _name(strings, name, f"{table.name} symbol {i}")
            out.append(Symbol(i, label, value, size, info & 0xF, info >> 4, other & 0x3, shndx))
        return out

    def relocations(self, table: Section) -> list[Relocation]:
        if table.type != E.SHT_RELA:
            raise CodeObjectError(f"relocation section {table.name}: only SHT_RELA is used by AMDGPU")
        if table.entsize not in (0, E.RELA.size):
            raise CodeObjectError(f"relocation section {table.name}: entry size {table.entsize}, expected "
                                  f"{E.RELA.size}")
        data = self.section_data(table)
        return [Relocation(off, info & 0xFFFFFFFF, info >> 32, addend)
                for off, info, addend in (E.RELA.unpack_from(data, i * E.RELA.size)
                                          for i in range(len(data) // E.RELA.size))]

    @cached_property
    def symbol_table(self) -> list[Symbol]:
        """.dynsym when present (what the loader sees), else .symtab."""
        for kind in (E.SHT_DYNSYM, E.SHT_SYMTAB):
            tables = self.sections_of_type(kind)
            if tables:
                return self.symbols(tables[0])
        return []

    def read_at_address(self, addr: int, size: int, what: str, executable: bool = False) -> tuple[Section, bytes]:
        """Bytes at a virtual address of a loaded (ET_DYN) image, from the allocated section holding them."""
        for s in self.sections:
            if s.alloc and s.type != E.SHT_NOBITS and s.addr <= addr and addr + size <= s.addr + s.size:
                if executable and not s.flags & E.SHF_EXECINSTR:
                    continue
                data = self.section_data(s)
                return s, data[addr - s.addr:addr - s.addr + size]
        kind = "executable section" if executable else "allocated section"
        raise CodeObjectError(f"{what} at address {addr:#x} (+{size} bytes) is not inside any {kind}")
