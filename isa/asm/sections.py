"""What a whole-file assembly produces, before any ELF: sections with their items, symbols, relocations, kernel
blocks and metadata (`AsmObject`), the fixups that become relocations or patched values, the sections LLVM knows
by name (ELFAsmParser / MCContext::getELFSection) and the target-id spellings `.amdgcn_target` accepts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from jitgemm.isa.instruction import AsmInstruction

from . import expressions as X
from .macros import (
    Loc,
)

# Flags and types LLVM gives the sections it knows by name (ELFAsmParser / MCContext::getELFSection).
DEFAULT_SECTIONS = {".text": ("ax", "progbits"), ".data": ("aw", "progbits"), ".rodata": ("a", "progbits"),
                     ".bss": ("aw", "nobits")}


TRITON_TARGET = re.compile(r"amdgpu(\d+)\.(\d+)-amd-amdhsa-unknown-(gfx\w+)(.*)")


@dataclass
class Section:
    """One output section: its flags as ELF letters (`ax`, `a`, `aw`, ...), its type and contents."""

    name: str
    flags: str
    type: str  # progbits, nobits, note
    entsize: int = 0
    data: bytes = b""
    size: int = 0
    align: int = 1
    items: list = field(default_factory=list, repr=False)
    places: list = field(default_factory=list, repr=False)  # per item (Loc, statement or None, text)


@dataclass
class Symbol:
    name: str
    section: str | None = None  # None: undefined or absolute
    value: int = 0
    size: int = 0
    type: str = "notype"  # notype, function, object, section
    binding: str = "local"  # local, global, weak
    visibility: str = "default"  # default, protected, hidden, internal
    absolute: bool = False
    defined: bool = False


@dataclass(frozen=True)
class Relocation:
    section: str
    offset: int
    type: str  # AMDGPUUsage name without R_AMDGPU_: ABS32, ABS64, REL32_LO, ...
    symbol: str  # a symbol name, or a section name when `section_symbol`
    addend: int
    section_symbol: bool = False


@dataclass
class KernelBlock:
    """An `.amdhsa_kernel NAME` block: the descriptor's place and the values given, each with its line."""

    name: str
    section: str
    offset: int
    loc: Loc
    values: dict[str, int] = field(default_factory=dict)
    places: dict[str, Loc] = field(default_factory=dict)


class Listed(NamedTuple):
    """One assembled instruction, for `--show-encoding` and for tools: where it is and where it came from."""

    section: str
    offset: int
    size: int
    loc: Loc
    instruction: AsmInstruction


@dataclass
class AsmObject:
    """Everything an ELF writer needs from one assembly file."""

    file: str
    target: str | None = None  # the .amdgcn_target string, Triton's spelling normalized
    code_object_version: int | None = None
    sections: dict[str, Section] = field(default_factory=dict)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    relocations: list[Relocation] = field(default_factory=list)
    kernels: list[KernelBlock] = field(default_factory=list)
    metadata: str | None = None  # the .amdgpu_metadata YAML text
    metadata_loc: Loc | None = None
    listing: list[Listed] = field(default_factory=list)
    labels: list[tuple[str, str, int]] = field(default_factory=list)  # (name, section, offset), .L ones too


def normalize_target(text: str) -> str:
    """A target id as llvm-mc accepts it; Triton 3.9's `amdgpu9.42-amd-amdhsa-unknown-gfx942` spelling becomes
    `amdgcn-amd-amdhsa--gfx942` (the processor and features it names)."""
    m = TRITON_TARGET.fullmatch(text.strip())
    if m:
        return f"amdgcn-amd-amdhsa--{m.group(3)}{m.group(4)}"
    return text.strip()


@dataclass
class Fixup:
    section: str
    index: int  # item index in the section
    width: int
    node: X.Node
    loc: Loc
    col: int
    literal: bool  # in an instruction's literal dword (the last 4 bytes of the instruction)
    dot: str | None = None
