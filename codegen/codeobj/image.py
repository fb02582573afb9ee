"""Lay out and emit a loadable AMDGPU shared object (ET_DYN) from relocatable pieces.

Both the writer (kernels we generate) and the linker (relocatable objects from LLVM) describe their input
as `Chunk`s, `Sym`s and `Reloc`s and call `build_shared_object`; there is one layout and one set of
relocation rules for both.

The layout deliberately reproduces ld.lld's default for `-shared` AMDGPU objects (max page size 4 KiB, no
separate code; read-only segment .note .dynsym .gnu.hash .hash .dynstr .rela.dyn .rodata; .text in its own
R+X segment; .dynamic/.got in the RELRO segment padded to a page; .data/.bss last), so that for the same
input both produce the same addresses and therefore the same kernel descriptor bytes (the descriptor holds
the code's address relative to itself). Relocation formulas are AMDGPUUsage's "AMDGPU Relocation Types"
table; dynamic relocations (R_AMDGPU_RELATIVE64 and symbolic R_AMDGPU_ABS64) are what the ROCm loader
applies.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import elf_format as E
from .errors import CodeObjectError

PAGE = 0x1000
GOT_ENTRY = 8


@dataclass(eq=False)
class Chunk:
    """One input section's bytes, bound for the output section `name`."""

    name: str
    data: bytearray | None  # None: SHT_NOBITS of `size` bytes
    size: int
    align: int
    flags: int
    origin: str = ""  # for messages: "file.o:.text"
    addr: int = 0  # assigned by the layout


@dataclass(eq=False)
class Sym:
    name: str
    chunk: Chunk | None  # None: absolute (when defined) or undefined
    value: int = 0
    size: int = 0
    type: int = E.STT_NOTYPE
    bind: int = E.STB_GLOBAL
    visibility: int = E.STV_DEFAULT
    defined: bool = True

    @property
    def absolute(self) -> bool:
        return self.defined and self.chunk is None

    @property
    def address(self) -> int:
        return (self.chunk.addr if self.chunk is not None else 0) + self.value

    @property
    def exported(self) -> bool:
        return (self.defined and self.bind in (E.STB_GLOBAL, E.STB_WEAK)
                and self.visibility in (E.STV_DEFAULT, E.STV_PROTECTED))

    @property
    def preemptible(self) -> bool:
        """Another module could interpose it: a default-visibility global of a shared object."""
        return self.exported and self.visibility == E.STV_DEFAULT and not self.absolute


@dataclass(eq=False)
class Reloc:
    chunk: Chunk
    offset: int
    type: int
    sym: Sym
    addend: int


@dataclass(eq=False)
class _Out:
    """An output section."""

    name: str
    type: int
    flags: int
    align: int
    size: int = 0
    data: bytearray | None = None
    entsize: int = 0
    link: str | None = None
    info: int = 0
    chunks: list[Chunk] = field(default_factory=list)
    addr: int = 0
    offset: int = 0
    index: int = 0

    @property
    def nobits(self) -> bool:
        return self.type == E.SHT_NOBITS


_WIDTH = {
    E.R_AMDGPU_ABS32_LO: 4, E.R_AMDGPU_ABS32_HI: 4, E.R_AMDGPU_ABS64: 8, E.R_AMDGPU_REL32: 4,
    E.R_AMDGPU_REL64: 8, E.R_AMDGPU_ABS32: 4, E.R_AMDGPU_GOTPCREL: 4, E.R_AMDGPU_GOTPCREL32_LO: 4,
    E.R_AMDGPU_GOTPCREL32_HI: 4, E.R_AMDGPU_REL32_LO: 4, E.R_AMDGPU_REL32_HI: 4, E.R_AMDGPU_REL16: 2,
}
_GOT_TYPES = (E.R_AMDGPU_GOTPCREL, E.R_AMDGPU_GOTPCREL32_LO, E.R_AMDGPU_GOTPCREL32_HI)
_ABS32_TYPES = (E.R_AMDGPU_ABS32_LO, E.R_AMDGPU_ABS32_HI, E.R_AMDGPU_ABS32)


def _reloc_name(kind: int) -> str:
    return E.RELOCATION_NAMES.get(kind, f"relocation type {kind}")


def _where(rel: Reloc) -> str:
    return f"{rel.chunk.origin or rel.chunk.name}+0x{rel.offset:x}"


@dataclass
class _DynReloc:
    out_chunk: _Out | Chunk
    offset: int
    type: int
    sym: Sym | None
    addend: int

    def address(self) -> int:
        return self.out_chunk.addr + self.offset


def _gnu_hash_section(names: list[bytes], first_index: int) -> tuple[bytes, list[int]]:
    """An SHT_GNU_HASH section sized as ld.lld sizes it; returns (bytes, order) where `order` is the
    permutation of `names` the dynamic symbol table must follow (grouped by bucket)."""
    count = len(names)
    buckets = max(count // 4, 1)
    bits = count * 12
    mask_words = 1
    while mask_words <= bits // 64:  # next power of two strictly above bits/64
        mask_words <<= 1
    shift2 = 26
    hashes = [E.gnu_hash(n) for n in names]
    order = sorted(range(count), key=lambda i: hashes[i] % buckets)
    bloom = [0] * mask_words
    for h in hashes:
        word = (h // 64) & (mask_words - 1)
        bloom[word] |= (1 << (h % 64)) | (1 << ((h >> shift2) % 64))
    bucket_words = [0] * buckets
    chain = []
    for pos, i in enumerate(order):
        b = hashes[i] % buckets
        last = pos + 1 == count or hashes[order[pos + 1]] % buckets != b
        chain.append((hashes[i] | 1) if last else (hashes[i] & ~1))
        if pos == 0 or hashes[order[pos - 1]] % buckets != b:
            bucket_words[b] = first_index + pos
    out = struct.pack("<IIII", buckets, first_index, mask_words, shift2)
    out += struct.pack(f"<{mask_words}Q", *bloom)
    out += struct.pack(f"<{buckets}I", *bucket_words)
    out += struct.pack(f"<{count}I", *chain)
    return out, order


def _sysv_hash_section(names: list[bytes]) -> bytes:
    """SHT_HASH over the dynamic symbol table (names[0] is the null symbol)."""
    n = len(names)
    bucket = [0] * n
    chain = [0] * n
    for i in range(1, n):
        h = E.sysv_hash(names[i]) % n
        chain[i] = bucket[h]
        bucket[h] = i
    return struct.pack(f"<II{n}I{n}I", n, n, *bucket, *chain)


class _StringTable:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.index: dict[bytes, int] = {b"": 0}

    def add(self, name: str | bytes) -> int:
        raw = name.encode() if isinstance(name, str) else name
        if raw not in self.index:
            self.index[raw] = len(self.data)
            self.data += raw + b"\0"
        return self.index[raw]


def build_shared_object(chunks: Sequence[Chunk], symbols: Sequence[Sym], relocs: Sequence[Reloc],
                        note: bytes, e_flags: int, abi_version: int) -> bytes:
    """Link the pieces into a loadable ET_DYN image (the phases: `_SharedObject`)."""
    return _SharedObject(chunks, symbols, relocs, note, e_flags, abi_version).build()


class _SharedObject:
    """One link, phase by phase as ld.lld does it: output sections from the input chunks; GOT slots and dynamic
    relocations; the dynamic symbol table, its hashes and the synthetic sections; addresses and file offsets;
    relocations applied; section contents and .symtab; program headers; the file."""

    def __init__(self, chunks: Sequence[Chunk], symbols: Sequence[Sym], relocs: Sequence[Reloc], note: bytes,
                 e_flags: int, abi_version: int) -> None:
        self.chunks, self.symbols, self.relocs = chunks, symbols, relocs
        self.note, self.e_flags, self.abi_version = note, e_flags, abi_version

    def build(self) -> bytes:
        self._output_sections()
        self._got_and_dynamic_relocations()
        self._dynamic_symbols()
        self._synthetic_sections()
        self._layout()
        self._apply_relocations()
        self._section_table()
        self._contents()
        self._symtab()
        return self._file()

    # -- output sections from input chunks, in order of first appearance
    def _output_sections(self) -> None:
        outs: dict[str, _Out] = {}
        for c in self.chunks:
            if not c.flags & E.SHF_ALLOC:
                continue
            o = outs.get(c.name)
            if o is None:
                o = outs[c.name] = _Out(c.name, E.SHT_NOBITS if c.data is None else E.SHT_PROGBITS, 0, 1)
            if c.data is not None:
                o.type = E.SHT_PROGBITS
            o.flags |= c.flags & (E.SHF_ALLOC | E.SHF_WRITE | E.SHF_EXECINSTR)
            o.align = max(o.align, c.align)
            o.chunks.append(c)
        self.outs = outs
        self.ro, self.rx, self.relro_in, self.rw, self.bss = [], [], [], [], []
        for o in outs.values():
            if o.flags & E.SHF_EXECINSTR:
                self.rx.append(o)
            elif not o.flags & E.SHF_WRITE:
                self.ro.append(o)
            elif o.name.startswith(".data.rel.ro"):
                self.relro_in.append(o)
            elif o.nobits:
                self.bss.append(o)
            else:
                self.rw.append(o)

    # -- GOT slots and dynamic relocations
    def _got_and_dynamic_relocations(self) -> None:
        got_syms: list[Sym] = []
        got_index: dict[int, int] = {}
        for rel in self.relocs:
            if rel.type not in _WIDTH:
                raise CodeObjectError(f"{_where(rel)}: unsupported {_reloc_name(rel.type)} against {rel.sym.name!r}")
            if not rel.sym.defined and rel.sym.bind != E.STB_WEAK:
                raise CodeObjectError(f"{_where(rel)}: undefined symbol {rel.sym.name!r} ({_reloc_name(rel.type)}); "
                                      "a code object cannot import symbols")
            if rel.type in _GOT_TYPES and id(rel.sym) not in got_index:
                got_index[id(rel.sym)] = len(got_syms)
                got_syms.append(rel.sym)
        got = _Out(".got", E.SHT_PROGBITS, E.SHF_ALLOC | E.SHF_WRITE, 8) if got_syms else None
        if got is not None:
            got.size = GOT_ENTRY * len(got_syms)
            got.data = bytearray(got.size)
        self.got, self.got_syms, self.got_index = got, got_syms, got_index

        self.exported = [s for s in self.symbols if s.exported]
        seen: set[str] = set()
        for s in self.exported:
            if s.name in seen:
                raise CodeObjectError(f"duplicate symbol {s.name!r}")
            seen.add(s.name)
        dyn_relocs: list[_DynReloc] = []
        for rel in self.relocs:
            if rel.type == E.R_AMDGPU_ABS64 and not rel.sym.absolute and rel.sym.defined:
                if not rel.chunk.flags & E.SHF_WRITE:
                    raise CodeObjectError(f"{_where(rel)}: {_reloc_name(rel.type)} against {rel.sym.name!r} needs a "
                                          "load-time relocation in a read-only section; put the pointer in .data")
                dyn_relocs.append(_DynReloc(rel.chunk, rel.offset, E.R_AMDGPU_ABS64, rel.sym, rel.addend))
            elif rel.type in _ABS32_TYPES and not rel.sym.absolute and rel.sym.defined:
                raise CodeObjectError(f"{_where(rel)}: {_reloc_name(rel.type)} against {rel.sym.name!r} cannot be "
                                      "resolved in a position-independent code object; compile with PC-relative "
                                      "addressing")
        if got is not None:
            for i, s in enumerate(got_syms):
                if not s.absolute and s.defined:
                    dyn_relocs.append(_DynReloc(got, i * GOT_ENTRY, E.R_AMDGPU_ABS64, s, 0))
        self.dyn_relocs = dyn_relocs

    # -- dynamic symbol table order (GNU hash groups by bucket), string table, hashes
    def _dynamic_symbols(self) -> None:
        self.dynstr = _StringTable()
        for s in self.exported:
            self.dynstr.add(s.name)
        self.gnu_hash, order = _gnu_hash_section([s.name.encode() for s in self.exported], 1)
        self.dynsyms = [self.exported[i] for i in order]
        self.dyn_index = {id(s): i + 1 for i, s in enumerate(self.dynsyms)}
        self.sysv_hash = _sysv_hash_section([b""] + [s.name.encode() for s in self.dynsyms])
        self.relative_count = sum(1 for d in self.dyn_relocs if self._final_reloc(d)[0] == E.R_AMDGPU_RELATIVE64)

    def _final_reloc(self, d: _DynReloc) -> tuple[int, int | None]:
        """Relative relocations first, then symbolic by (symbol index, offset): lld's -z combreloc order."""
        if d.sym is not None and d.sym.preemptible:
            return E.R_AMDGPU_ABS64, self.dyn_index[id(d.sym)]
        return E.R_AMDGPU_RELATIVE64, None

    @staticmethod
    def _section(name: str, kind: int, flags: int, align: int, size: int, entsize: int = 0,
                 link: str | None = None, info: int = 0) -> _Out:
        return _Out(name, kind, flags, align, size=size, entsize=entsize, link=link, info=info)

    def _synthetic_sections(self) -> None:
        section, A = self._section, E.SHF_ALLOC
        self.note_out = section(".note", E.SHT_NOTE, A, 4, len(self.note)) if self.note else None
        self.dynsym_out = section(".dynsym", E.SHT_DYNSYM, A, 8, E.SYM.size * (len(self.dynsyms) + 1), E.SYM.size,
                                  ".dynstr", 1)
        self.gnu_out = section(".gnu.hash", E.SHT_GNU_HASH, A, 8, len(self.gnu_hash), 0, ".dynsym")
        self.hash_out = section(".hash", E.SHT_HASH, A, 4, len(self.sysv_hash), 4, ".dynsym")
        self.dynstr_out = section(".dynstr", E.SHT_STRTAB, A, 1, len(self.dynstr.data))
        self.rela_out = (section(".rela.dyn", E.SHT_RELA, A, 8, E.RELA.size * len(self.dyn_relocs), E.RELA.size,
                                 ".dynsym") if self.dyn_relocs else None)
        dyn_tags = 7 + (4 if self.rela_out is not None and self.relative_count else
                        3 if self.rela_out is not None else 0)
        self.dynamic_out = section(".dynamic", E.SHT_DYNAMIC, A | E.SHF_WRITE, 8, E.DYN.size * dyn_tags, E.DYN.size,
                                   ".dynstr")
        self.padding_out = section(".relro_padding", E.SHT_NOBITS, A | E.SHF_WRITE, 1, 0)
        self.ro_list = [s for s in (self.note_out, self.dynsym_out, self.gnu_out, self.hash_out, self.dynstr_out,
                                    self.rela_out) if s] + self.ro
        self.relro_list = self.relro_in + [self.dynamic_out] + ([self.got] if self.got is not None else [])
        self.rw_list = self.rw + self.bss
        # Program headers: PHDR, LOAD (R), LOAD (RX)?, LOAD (RW relro), LOAD (RW)?, DYNAMIC, GNU_RELRO, GNU_STACK,
        # NOTE?
        self.phnum = 1 + 1 + (1 if self.rx else 0) + 1 + (1 if self.rw_list else 0) + 3 + (1 if self.note_out else 0)

    # -- addresses and file offsets
    def _layout(self) -> None:
        for o in list(self.ro) + self.rx + self.relro_in + self.rw_list:
            pos = 0
            for c in o.chunks:
                pos = E.align_up(pos, c.align)
                c.addr = pos  # relative for now
                pos += c.size
            o.size = pos
        self.off = E.EHDR.size + E.PHDR.size * self.phnum
        for o in self.ro_list:  # the first segment maps the file from offset 0: address == offset
            o.addr = o.offset = E.align_up(self.off, o.align)
            self.off = o.offset + o.size
        self.dot = self.ro_end = self.off
        self.rx_range = None
        if self.rx:
            self._place(self.rx)
            self.rx_range = (self.rx[0], self.dot)
        self._place(self.relro_list)
        self.relro_end = self.dot
        self.padding_out.addr, self.padding_out.offset = self.relro_end, self.off
        self.padding_out.size = E.align_up(self.relro_end, PAGE) - self.relro_end
        self.rw_range = None
        if self.rw_list:
            self._place(self.rw_list)
            self.rw_range = (self.rw_list[0], self.dot)
        for o in self.ro + self.rx + self.relro_in + self.rw_list:
            for c in o.chunks:
                c.addr += o.addr

    def _place(self, group: list[_Out]) -> None:
        """Start a new PT_LOAD: lld puts its first section on the next page at the current page offset (so
        the file needs no padding), the following ones right after at their alignment."""
        first = group[0]
        first.addr = E.align_up(self.dot, PAGE) + E.align_up(self.dot % PAGE, first.align)
        first.offset = self.off + ((first.addr - self.off) % PAGE)
        seg_addr, seg_off = first.addr, first.offset
        for o in group:
            if o is not first:
                o.addr = E.align_up(self.dot, o.align)
                o.offset = seg_off + (o.addr - seg_addr)
            self.dot = o.addr + o.size
            if not o.nobits:
                self.off = o.offset + o.size

    # -- apply relocations
    @staticmethod
    def _patch(target: bytearray, at: int, width: int, value: int, rel: Reloc) -> None:
        if at < 0 or at + width > len(target):
            raise CodeObjectError(f"{_where(rel)}: {_reloc_name(rel.type)} writes outside its section")
        target[at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")

    def _apply_relocations(self) -> None:
        got = self.got
        for rel in self.relocs:
            if rel.chunk.data is None:
                raise CodeObjectError(f"{_where(rel)}: relocation in a section without contents")
            s = rel.sym.address if rel.sym.defined else 0
            p = rel.chunk.addr + rel.offset
            a = rel.addend
            t = rel.type
            width = _WIDTH[t]
            if t == E.R_AMDGPU_ABS64:
                value = 0 if (rel.sym.defined and not rel.sym.absolute) else s + a  # loader adds the base
            elif t in (E.R_AMDGPU_ABS32, E.R_AMDGPU_ABS32_LO):
                value = s + a
            elif t == E.R_AMDGPU_ABS32_HI:
                value = (s + a) >> 32
            elif t in (E.R_AMDGPU_REL32, E.R_AMDGPU_REL64, E.R_AMDGPU_REL32_LO):
                value = s + a - p
                if t == E.R_AMDGPU_REL32 and not -(1 << 31) <= value < (1 << 31):
                    raise CodeObjectError(f"{_where(rel)}: {_reloc_name(t)} to {rel.sym.name!r} out of range")
            elif t == E.R_AMDGPU_REL32_HI:
                value = (s + a - p) >> 32
            elif t == E.R_AMDGPU_REL16:
                delta = s + a - p - 4
                if delta % 4 or not -(1 << 17) <= delta < (1 << 17):
                    raise CodeObjectError(f"{_where(rel)}: branch to {rel.sym.name!r} is out of range or misaligned")
                value = delta // 4
            else:  # GOT-relative
                assert got is not None
                g = got.addr + GOT_ENTRY * self.got_index[id(rel.sym)]
                value = g + a - p if t != E.R_AMDGPU_GOTPCREL32_HI else (g + a - p) >> 32
            self._patch(rel.chunk.data, rel.offset, width, value, rel)
        if got is not None:
            for i, s in enumerate(self.got_syms):
                if s.absolute or not s.defined:
                    got.data[i * 8:i * 8 + 8] = ((s.address if s.defined else 0) & (2**64 - 1)).to_bytes(8, "little")

    # -- section header table order and indices
    def _section_table(self) -> None:
        section = self._section
        self.alloc = self.ro_list + self.rx + self.relro_list + [self.padding_out] + self.rw_list
        self.symtab_out = section(".symtab", E.SHT_SYMTAB, 0, 8, 0, E.SYM.size, ".strtab")
        self.shstrtab_out = section(".shstrtab", E.SHT_STRTAB, 0, 1, 0)
        self.strtab_out = section(".strtab", E.SHT_STRTAB, 0, 1, 0)
        self.all_sections = self.alloc + [self.symtab_out, self.shstrtab_out, self.strtab_out]
        for i, o in enumerate(self.all_sections, start=1):
            o.index = i
        self.by_name = {o.name: o for o in self.all_sections}

    def _shndx(self, s: Sym) -> int:
        if not s.defined:
            return E.SHN_UNDEF
        if s.chunk is None:
            return E.SHN_ABS
        return self.outs[s.chunk.name].index if s.chunk.name in self.outs else E.SHN_ABS

    # -- synthetic contents
    def _contents(self) -> None:
        dynsym_data = bytearray(E.SYM.size)
        for s in self.dynsyms:
            dynsym_data += E.SYM.pack(self.dynstr.index[s.name.encode()], (s.bind << 4) | s.type, s.visibility,
                                      self._shndx(s), s.address, s.size)
        rela_data = bytearray()
        final = self._final_reloc
        ordered = sorted(self.dyn_relocs, key=lambda d: (final(d)[0] != E.R_AMDGPU_RELATIVE64, final(d)[1] or 0,
                                                         d.address()))
        for d in ordered:
            kind, index = final(d)
            if kind == E.R_AMDGPU_RELATIVE64:
                rela_data += E.RELA.pack(d.address(), kind, (d.sym.address if d.sym else 0) + d.addend)
            else:
                rela_data += E.RELA.pack(d.address(), (index << 32) | kind, d.addend)
        dyn_entries = []
        if self.rela_out is not None:
            dyn_entries += [(E.DT_RELA, self.rela_out.addr), (E.DT_RELASZ, self.rela_out.size),
                            (E.DT_RELAENT, E.RELA.size)]
            if self.relative_count:
                dyn_entries.append((E.DT_RELACOUNT, self.relative_count))
        dyn_entries += [(E.DT_SYMTAB, self.dynsym_out.addr), (E.DT_SYMENT, E.SYM.size),
                        (E.DT_STRTAB, self.dynstr_out.addr), (E.DT_STRSZ, self.dynstr_out.size),
                        (E.DT_GNU_HASH, self.gnu_out.addr), (E.DT_HASH, self.hash_out.addr), (E.DT_NULL, 0)]
        contents: dict[str, bytes] = {
            ".dynsym": bytes(dynsym_data), ".gnu.hash": self.gnu_hash, ".hash": self.sysv_hash,
            ".dynstr": bytes(self.dynstr.data), ".dynamic": b"".join(E.DYN.pack(t, v) for t, v in dyn_entries),
        }
        if self.note_out is not None:
            contents[".note"] = self.note
        if self.rela_out is not None:
            contents[".rela.dyn"] = bytes(rela_data)
        if self.got is not None:
            contents[".got"] = bytes(self.got.data)
        for o in self.ro + self.rx + self.relro_in + self.rw_list:
            if o.nobits:
                continue
            buf = bytearray(o.size)
            for c in o.chunks:
                if c.data is not None:
                    buf[c.addr - o.addr:c.addr - o.addr + c.size] = c.data
            contents[o.name] = bytes(buf)
        self.contents = contents

    # -- .symtab: null, input locals, hidden globals (made local), _DYNAMIC, then the globals
    def _symtab(self) -> None:
        strtab = _StringTable()
        locals_ = [s for s in self.symbols if s.bind == E.STB_LOCAL and s.type not in (E.STT_SECTION, E.STT_FILE)
                   and s.name]
        hidden = [s for s in self.symbols if s.bind != E.STB_LOCAL and s.defined and not s.exported]
        globals_ = [s for s in self.symbols if s.bind != E.STB_LOCAL and s.exported]
        symtab = bytearray(E.SYM.size)
        for s in locals_ + hidden:
            symtab += E.SYM.pack(strtab.add(s.name), (E.STB_LOCAL << 4) | s.type, s.visibility, self._shndx(s),
                                 s.address, s.size)
        symtab += E.SYM.pack(strtab.add("_DYNAMIC"), E.STT_NOTYPE, E.STV_HIDDEN, self.dynamic_out.index,
                             self.dynamic_out.addr, 0)
        first_global = len(symtab) // E.SYM.size
        for s in globals_:
            symtab += E.SYM.pack(strtab.add(s.name), (s.bind << 4) | s.type, s.visibility, self._shndx(s), s.address,
                                 s.size)
        self.symtab_out.info = first_global
        self.contents[".symtab"] = bytes(symtab)
        self.contents[".strtab"] = bytes(strtab.data)
        shstr = _StringTable()
        self.names = {o.name: shstr.add(o.name) for o in self.all_sections}
        self.contents[".shstrtab"] = bytes(shstr.data)
        # non-allocated sections after the last allocated byte
        for o in (self.symtab_out, self.shstrtab_out, self.strtab_out):
            o.size = len(self.contents[o.name])
            o.offset = E.align_up(self.off, o.align)
            self.off = o.offset + o.size
        self.shoff = E.align_up(self.off, 8)

    # -- program headers
    def _load(self, first: _Out, end_addr: int, flags: int, mem_end: int | None = None) -> tuple:
        file_end = max((o.offset + o.size for o in self.alloc if not o.nobits and first.addr <= o.addr < end_addr),
                       default=first.offset)
        return (E.PT_LOAD, flags, first.offset, first.addr, first.addr, file_end - first.offset,
                (mem_end if mem_end is not None else end_addr) - first.addr, PAGE)

    def _program_headers(self) -> list[tuple]:
        phnum, dyn, note_out = self.phnum, self.dynamic_out, self.note_out
        phdrs = [(E.PT_PHDR, E.PF_R, E.EHDR.size, E.EHDR.size, E.EHDR.size, E.PHDR.size * phnum,
                  E.PHDR.size * phnum, 8),
                 (E.PT_LOAD, E.PF_R, 0, 0, 0, self.ro_end, self.ro_end, PAGE)]
        if self.rx_range is not None:
            phdrs.append(self._load(self.rx_range[0], self.rx_range[1], E.PF_R | E.PF_X))
        relro_first = self.relro_list[0]
        padded_end = self.padding_out.addr + self.padding_out.size
        phdrs.append(self._load(relro_first, self.relro_end, E.PF_R | E.PF_W, padded_end))
        if self.rw_range is not None:
            phdrs.append(self._load(self.rw_range[0], self.rw_range[1], E.PF_R | E.PF_W))
        phdrs.append((E.PT_DYNAMIC, E.PF_R | E.PF_W, dyn.offset, dyn.addr, dyn.addr, dyn.size, dyn.size, 8))
        phdrs.append((E.PT_GNU_RELRO, E.PF_R, relro_first.offset, relro_first.addr, relro_first.addr,
                      _file_size(self.relro_list), padded_end - relro_first.addr, 1))
        phdrs.append((E.PT_GNU_STACK, E.PF_R | E.PF_W, 0, 0, 0, 0, 0, 0))
        if note_out is not None:
            phdrs.append((E.PT_NOTE, E.PF_R, note_out.offset, note_out.addr, note_out.addr, note_out.size,
                          note_out.size, 4))
        assert len(phdrs) == phnum
        return phdrs

    # -- assemble the file
    def _file(self) -> bytes:
        phdrs = self._program_headers()
        shoff, sections = self.shoff, self.all_sections
        out = bytearray(shoff + E.SHDR.size * (len(sections) + 1))
        out[0:E.EHDR.size] = E.EHDR.pack(E.elf_ident(self.abi_version), E.ET_DYN, E.EM_AMDGPU, E.EV_CURRENT, 0,
                                         E.EHDR.size, shoff, self.e_flags, E.EHDR.size, E.PHDR.size, self.phnum,
                                         E.SHDR.size, len(sections) + 1, self.shstrtab_out.index)
        for i, ph in enumerate(phdrs):
            E.PHDR.pack_into(out, E.EHDR.size + i * E.PHDR.size, *ph)
        for o in sections:
            if o.nobits:
                continue
            data = self.contents[o.name]
            out[o.offset:o.offset + len(data)] = data
        for o in sections:
            link = self.by_name[o.link].index if o.link else 0
            E.SHDR.pack_into(out, shoff + o.index * E.SHDR.size, self.names[o.name], o.type, o.flags, o.addr,
                             o.offset, o.size, link, o.info, o.align, o.entsize)
        return bytes(out)


def _file_size(group: list[_Out]) -> int:
    start = group[0].offset
    return max(o.offset + o.size for o in group if not o.nobits) - start
