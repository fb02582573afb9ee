"""ELF64 constants and record layouts shared by the reader, the writer and the linker.

Generic values are from the System V gABI; AMDGPU values (EM_AMDGPU, ELFOSABI_AMDGPU_HSA, the
ELFABIVERSION_AMDGPU_HSA_V* numbers, NT_AMDGPU_METADATA and the R_AMDGPU_* relocation numbers) are from
LLVM's AMDGPUUsage document, sections "ELF Code Object", "Note Records" and "Relocation Records".
"""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1

ET_REL = 1
ET_DYN = 3
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64

# AMDGPUUsage "AMDGPU ELF Header": EI_ABIVERSION per code object version.
ABI_VERSION_OF_CODE_OBJECT = {4: 2, 5: 3, 6: 4}
CODE_OBJECT_OF_ABI_VERSION = {v: k for k, v in ABI_VERSION_OF_CODE_OBJECT.items()}

# Section header types and flags.
SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_HASH = 5
SHT_DYNAMIC = 6
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_REL = 9
SHT_DYNSYM = 11
SHT_GNU_HASH = 0x6FFFFFF6

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_MERGE = 0x10
SHF_STRINGS = 0x20
SHF_INFO_LINK = 0x40

SHN_UNDEF = 0
SHN_ABS = 0xFFF1
SHN_COMMON = 0xFFF2
SHN_LORESERVE = 0xFF00

# Program headers.
PT_LOAD = 1
PT_DYNAMIC = 2
PT_NOTE = 4
PT_PHDR = 6
PT_GNU_STACK = 0x6474E551
PT_GNU_RELRO = 0x6474E552
PF_X = 1
PF_W = 2
PF_R = 4

# Symbols.
STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2
STT_NOTYPE = 0
STT_OBJECT = 1
STT_FUNC = 2
STT_SECTION = 3
STT_FILE = 4
STV_DEFAULT = 0
STV_INTERNAL = 1
STV_HIDDEN = 2
STV_PROTECTED = 3

# Dynamic section tags.
DT_NULL = 0
DT_HASH = 4
DT_STRTAB = 5
DT_SYMTAB = 6
DT_RELA = 7
DT_RELASZ = 8
DT_RELAENT = 9
DT_STRSZ = 10
DT_SYMENT = 11
DT_RELACOUNT = 0x6FFFFFF9
DT_GNU_HASH = 0x6FFFFEF5

# AMDGPUUsage "Note Records": the code object v3+ metadata note.
NOTE_NAME_AMDGPU = b"AMDGPU"
NT_AMDGPU_METADATA = 32

# AMDGPUUsage "Relocation Records" (AMDGPU Relocation Types table).
R_AMDGPU_NONE = 0
R_AMDGPU_ABS32_LO = 1
R_AMDGPU_ABS32_HI = 2
R_AMDGPU_ABS64 = 3
R_AMDGPU_REL32 = 4
R_AMDGPU_REL64 = 5
R_AMDGPU_ABS32 = 6
R_AMDGPU_GOTPCREL = 7
R_AMDGPU_GOTPCREL32_LO = 8
R_AMDGPU_GOTPCREL32_HI = 9
R_AMDGPU_REL32_LO = 10
R_AMDGPU_REL32_HI = 11
R_AMDGPU_RELATIVE64 = 13
R_AMDGPU_REL16 = 14

RELOCATION_NAMES = {
    R_AMDGPU_NONE: "R_AMDGPU_NONE", R_AMDGPU_ABS32_LO: "R_AMDGPU_ABS32_LO",
    R_AMDGPU_ABS32_HI: "R_AMDGPU_ABS32_HI", R_AMDGPU_ABS64: "R_AMDGPU_ABS64", R_AMDGPU_REL32: "R_AMDGPU_REL32",
    R_AMDGPU_REL64: "R_AMDGPU_REL64", R_AMDGPU_ABS32: "R_AMDGPU_ABS32", R_AMDGPU_GOTPCREL: "R_AMDGPU_GOTPCREL",
    R_AMDGPU_GOTPCREL32_LO: "R_AMDGPU_GOTPCREL32_LO", R_AMDGPU_GOTPCREL32_HI: "R_AMDGPU_GOTPCREL32_HI",
    R_AMDGPU_REL32_LO: "R_AMDGPU_REL32_LO", R_AMDGPU_REL32_HI: "R_AMDGPU_REL32_HI",
    R_AMDGPU_RELATIVE64: "R_AMDGPU_RELATIVE64", R_AMDGPU_REL16: "R_AMDGPU_REL16",
}

# Record layouts (little-endian ELF64).
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # e_ident .. e_shstrndx, 64 bytes
PHDR = struct.Struct("<IIQQQQQQ")  # p_type p_flags p_offset p_vaddr p_paddr p_filesz p_memsz p_align
SHDR = struct.Struct("<IIQQQQIIQQ")  # name type flags addr offset size link info addralign entsize
SYM = struct.Struct("<IBBHQQ")  # st_name st_info st_other st_shndx st_value st_size
RELA = struct.Struct("<QQq")  # r_offset r_info r_addend
DYN = struct.Struct("<qQ")  # d_tag d_val
NOTE_HEADER = struct.Struct("<III")  # namesz descsz type


def align_up(value: int, alignment: int) -> int:
    """Round up to a multiple of `alignment` (0 and 1 mean no alignment, as in ELF)."""
    if alignment <= 1:
        return value
    return (value + alignment - 1) // alignment * alignment


def elf_ident(abi_version: int) -> bytes:
    """e_ident of an AMDGPU HSA code object (AMDGPUUsage "AMDGPU ELF Header")."""
    return (ELF_MAGIC + bytes([ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_AMDGPU_HSA, abi_version])
            + bytes(7))


def sysv_hash(name: bytes) -> int:
    """The System V ABI symbol hash used by SHT_HASH."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name: bytes) -> int:
    """The GNU symbol hash (djb2) used by SHT_GNU_HASH."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h
