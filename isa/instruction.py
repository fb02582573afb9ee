"""AsmInstruction objects: what the generators build, what the parser produces and what the decoder returns.

They hold operands in the terms a person (and LLVM's assembly syntax) uses — `v[4:7]`, `vcc`, `0.5`,
`offset:16` — not encoded field values, so code can build them without knowing any encoding, and one
object can be encoded in whichever of the spec's encodings fits. All of them are immutable and
hashable, so an encoded form can be cached per object.

Each object prints itself as LLVM's AMDGPU instruction printer spells it (`str(op)`, `inst.asm_text()`), so
this module needs nothing of the printer, the decoder or the forms: the listing layer (printer.py) lays out
lines, and a value's spelling has one home, here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .operand_syntax import (
    HEX_MODIFIERS,
    NAMED_REGISTERS,
    NUMBERED_REGISTER,
    PAIR_NAMES,
    UNPRINTED_MODIFIERS,
    float_text,
)

# Register kinds that are numbered (`s7`, `v[0:3]`, `a12`, `ttmp[4:7]`). Every other register is named
# (`vcc`, `exec_lo`, `m0`, `src_scc`, ...).
NUMBERED_KINDS = ("s", "v", "a", "ttmp")


@dataclass(frozen=True, slots=True)
class Reg:
    """A register or a range of consecutive registers.

    Numbered registers have `kind` in NUMBERED_KINDS; named ones carry their lowercase name in `kind`
    (index 0) and `count` 2 for 64-bit pairs such as `vcc` and `exec`.
    """

    kind: str
    index: int = 0
    count: int = 1

    def __str__(self) -> str:
        if self.kind not in NUMBERED_KINDS:
            return self.kind
        if self.count == 1:
            return f"{self.kind}{self.index}"
        return f"{self.kind}[{self.index}:{self.index + self.count - 1}]"


@dataclass(frozen=True, slots=True, eq=False)
class Imm:
    """A numeric constant: an int, or a float written with a decimal point.

    An int and a float are different constants even when numerically equal (`1` is the integer inline
    constant, `1.0` the float one), and so are 0.0 and -0.0. `hex` and `text` only affect printing (LLVM
    prints literals and some immediates in hex, hwreg fields symbolically), so `Imm(16) == Imm(16, hex=True)`.
    """

    value: int | float
    hex: bool = False
    text: str | None = None  # a symbolic spelling LLVM prints instead (e.g. hwreg(HW_REG_MODE))

    def _key(self):
        v = self.value
        if type(v) is float:
            return (float, struct.pack("<d", v))
        return (type(v), v)

    def __eq__(self, other) -> bool:
        return type(other) is Imm and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        if self.text is not None:
            return self.text
        value = self.value
        if isinstance(value, float):
            return float_text(value)
        if self.hex:
            return f"-0x{-value:x}" if value < 0 else f"0x{value:x}"
        return str(value)


@dataclass(frozen=True, slots=True)
class Label:
    """A symbol: a branch target, or a name the operand type may define (e.g. a special register)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Off:
    """The `off` keyword: an address operand that is not used (`global_load_dword v1, v[2:3], off`)."""

    def __str__(self) -> str:
        return "off"


OFF = Off()


@dataclass(frozen=True, slots=True)
class SrcMods:
    """A source operand with input modifiers: `-v1`, `|v1|`, `-|v1|`, `neg(1.0)`, `sext(v2)`."""

    operand: Operand
    neg: bool = False
    abs: bool = False
    sext: bool = False

    def __str__(self) -> str:
        inner = str(self.operand)
        if self.abs:
            inner = f"|{inner}|"
        if self.neg:
            # LLVM writes neg(...) only around a bare constant (AMDGPUInstPrinter::printOperandAndFPInputMods)
            inner = f"neg({inner})" if type(self.operand) is Imm and not self.abs else f"-{inner}"
        if self.sext:
            inner = f"sext({inner})"
        return inner


@dataclass(frozen=True, slots=True)
class Counters:
    """A partitioned operand written by parts, e.g. `vmcnt(0) lgkmcnt(1)`: ((name, value), ...) in the
    order written, names as LLVM spells them."""

    parts: tuple[tuple[str, int], ...]

    def __str__(self) -> str:
        return " ".join(f"{name}({value})" for name, value in self.parts)


Operand = Reg | Imm | Label | Off | SrcMods | Counters
ModifierValue = bool | int | str | tuple


def _normalize_modifiers(mods) -> tuple[tuple[str, ModifierValue], ...]:
    if not mods:
        return ()
    items = mods.items() if isinstance(mods, dict) else mods
    out = []
    for item in items:
        if isinstance(item, str):  # a bare flag name
            out.append((item, True))
            continue
        name, value = item
        if isinstance(value, list):
            value = tuple(value)
        out.append((str(name), value))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class AsmInstruction:
    """One machine instruction in assembly terms.

    `name` is the mnemonic as LLVM spells it, optionally with an encoding suffix (`v_add_f32`,
    `v_add_f32_e64`, `v_mov_b32_dpp`). `modifiers` are (name, value) pairs with LLVM's names:
    flags have value True (`("offen", True)`), others an int, a name or a tuple
    (`("offset", 16)`, `("dst_sel", "WORD_1")`, `("op_sel", (0, 1))`). A dict or a list of pairs or
    flag names is accepted and normalized.
    """

    name: str
    operands: tuple = ()
    modifiers: tuple = ()

    def __post_init__(self) -> None:
        if type(self.operands) is not tuple:
            object.__setattr__(self, "operands", tuple(self.operands))
        mods = self.modifiers
        if type(mods) is not tuple or any(type(m) is not tuple or type(m[1]) is list for m in mods):
            object.__setattr__(self, "modifiers", _normalize_modifiers(mods))

    def modifier(self, name: str, default=None):
        for key, value in self.modifiers:
            if key == name:
                return value
        return default

    def asm_text(self, unprinted: frozenset[str] = frozenset()) -> str:
        """The instruction in LLVM's syntax, as llvm-objdump prints it. Modifiers named in `unprinted` (a target's
        `unprinted_modifiers` for the instruction's encoding) are left out of the text, not out of the
        instruction; so are the modifiers LLVM has no syntax for (UNPRINTED_MODIFIERS)."""
        text = self.name
        if self.operands:
            text += " " + ", ".join([str(op) for op in self.operands])
        mods = [modifier_text(n, v) for n, v in self.modifiers if n not in UNPRINTED_MODIFIERS and n not in unprinted]
        if mods:
            text += " " + " ".join(mods)
        return text

    def __str__(self) -> str:
        return self.asm_text()


def modifier_text(name: str, value: ModifierValue) -> str:
    """One modifier as LLVM prints it: a flag by its name, a list as `name:[0,1]`, an int in decimal (hex for
    HEX_MODIFIERS), a name or an Imm as written."""
    if value is True:
        return name
    if isinstance(value, tuple):
        return f"{name}:[{','.join(x if isinstance(x, str) else str(int(x)) for x in value)}]"
    if isinstance(value, int) and name in HEX_MODIFIERS:
        return f"{name}:0x{value:x}"
    return f"{name}:{value}"


def _regs(kind: str, first: int, last: int | None) -> Reg:
    if last is None:
        return Reg(kind, first, 1)
    if last < first:
        raise ValueError(f"register range {kind}[{first}:{last}] is empty")
    return Reg(kind, first, last - first + 1)


def identifier_operand(name: str) -> Reg | Label | Off:
    """A bare word in operand position: a register (`s7`, `vcc`), `off`, or else a label/symbol."""
    low = name.lower()
    m = NUMBERED_REGISTER.match(low)
    if m:
        return Reg(m.group(1), int(m.group(2)), 1)
    if low == "off":
        return OFF
    if low in NAMED_REGISTERS:
        return Reg(low, 0, 2 if low in PAIR_NAMES else 1)
    return Label(name)


def range_operand(kind: str, first: int, last: int) -> Reg:
    """`kind[first:last]` as written (`S[4:7]`): ValueError for a kind that is not numbered or an empty range."""
    kind = kind.lower()
    if kind not in NUMBERED_KINDS:
        raise ValueError(f"{kind}[...] is not a register range (use s, v, a or ttmp)")
    return _regs(kind, first, last)


def s(first: int, last: int | None = None) -> Reg:
    """`s(7)` is s7, `s(4, 7)` is s[4:7]."""
    return _regs("s", first, last)


def v(first: int, last: int | None = None) -> Reg:
    """`v(1)` is v1, `v(0, 3)` is v[0:3]."""
    return _regs("v", first, last)


def a(first: int, last: int | None = None) -> Reg:
    """`a(0, 15)` is a[0:15] (accumulation VGPRs)."""
    return _regs("a", first, last)


def ttmp(first: int, last: int | None = None) -> Reg:
    return _regs("ttmp", first, last)


# Frequently used named registers.
VCC = Reg("vcc", 0, 2)
EXEC = Reg("exec", 0, 2)
M0 = Reg("m0")
SCC = Reg("src_scc")


@dataclass(frozen=True, slots=True)
class LabelDef:
    """A label definition in an instruction list given to `encode` (`loop:` in text)."""

    name: str


@dataclass(frozen=True, slots=True)
class Data:
    """Raw data words in an instruction list (`.long 0x...` in text; undecodable words disassemble to it)."""

    words: tuple[int, ...]
    width: int = 4


@dataclass(frozen=True, slots=True)
class Align:
    """Padding to a multiple of `boundary` bytes (`.p2align`); code is padded with `fill` words
    (s_nop 0 when None, as LLVM pads code)."""

    boundary: int
    fill: int | None = None
    fill_width: int = 1  # bytes per fill value (4 for .p2alignl)
    max_skip: int | None = None  # `.p2align 5, , 4`: no padding at all when more than this many bytes are needed
