"""The instruction model: an immutable, typed view of everything an MR-ISA spec file holds.

Objects here are built once per spec (from XML or from the parsed-spec cache) and shared by the
assembler, the disassembler, the emulator and the generators, so they are frozen and carry the
small amount of behaviour every client needs (field insert/extract, identifier matching,
case-insensitive look-ups) in one place.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from jitgemm.isa.errors import IsaError

from . import conditions as _expr

_EMPTY: Mapping = MappingProxyType({})


class SpecLookupError(IsaError, KeyError):
    """A name that the spec does not define; the message lists the closest names it does."""

    def __init__(self, what: str, name: str, suggestions: tuple[str, ...]) -> None:
        self.what = what
        self.name = name
        self.suggestions = suggestions
        hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f"unknown {what} {name!r}{hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


@dataclass(frozen=True, slots=True)
class BitRange:
    """One `<Range>` of a bit layout. `padding_*` are implied low bits of the value that are not
    stored (e.g. SMEM SBASE holds bits [6:1] of an even SGPR number)."""

    order: int
    offset: int
    count: int
    padding_count: int = 0
    padding_value: int = 0


@dataclass(frozen=True, slots=True)
class BitField:
    """A named field with a (possibly multi-range) bit layout. Ranges are kept in `Order`; range 0
    holds the least significant bits of the value."""

    name: str
    ranges: tuple[BitRange, ...]
    conditional: bool = False
    description: str = ""
    signedness: str | None = None
    predefined: Mapping[str, int] = field(default_factory=lambda: _EMPTY)

    @property
    def width(self) -> int:
        """Bits of the value, stored and implied."""
        return sum(r.count + r.padding_count for r in self.ranges)

    @property
    def stored_bits(self) -> int:
        return sum(r.count for r in self.ranges)

    def extract(self, word: int) -> int:
        value = 0
        shift = 0
        for r in self.ranges:
            value |= r.padding_value << shift
            shift += r.padding_count
            value |= ((word >> r.offset) & ((1 << r.count) - 1)) << shift
            shift += r.count
        return value

    def check(self, value: int) -> str | None:
        """Why `value` cannot be stored in this field, or None when it can."""
        if value < 0 or value >> self.width:
            return f"value {value} does not fit field {self.name} ({self.width} bits: 0..{(1 << self.width) - 1})"
        shift = 0
        for r in self.ranges:
            if r.padding_count:
                low = (value >> shift) & ((1 << r.padding_count) - 1)
                if low != r.padding_value:
                    return (f"value {value} of field {self.name} must have its {r.padding_count} low bit(s) at "
                            f"position {shift} equal to {r.padding_value} (they are not stored)")
            shift += r.padding_count + r.count
        return None

    def insert(self, word: int, value: int) -> int:
        """`word` with this field set to `value`; raises ValueError when the value cannot be stored."""
        problem = self.check(value)
        if problem:
            raise ValueError(problem)
        shift = 0
        for r in self.ranges:
            shift += r.padding_count
            mask = (1 << r.count) - 1
            word = (word & ~(mask << r.offset)) | (((value >> shift) & mask) << r.offset)
            shift += r.count
        return word

    @property
    def layout_text(self) -> str:
        """Bit layout for people, most significant range first, e.g. `[60:59]+[14]`."""
        parts = []
        for r in reversed(self.ranges):
            hi = r.offset + r.count - 1
            text = f"[{hi}:{r.offset}]" if r.count > 1 else f"[{r.offset}]"
            if r.padding_count:
                text += f"<<{r.padding_count}"
            parts.append(text)
        return "+".join(parts)


@dataclass(frozen=True, slots=True)
class EncodingCondition:
    name: str
    expression: _expr.Expr | None

    def holds(self, fields: Mapping[str, int]) -> bool:
        return _expr.holds(self.expression, fields)


@dataclass(frozen=True, slots=True)
class Encoding:
    """A microcode format. `identifier_mask`/`identifiers` decide which words belong to it."""

    name: str
    bit_count: int
    order: int
    identifier_mask: int
    identifier_mask_radix: int
    identifiers: tuple[int, ...]
    identifier_radix: int
    conditions: tuple[EncodingCondition, ...]
    fields: Mapping[str, BitField]
    description: str = ""
    _identifier_set: frozenset[int] = field(default=frozenset(), repr=False, compare=False)

    @property
    def byte_count(self) -> int:
        return self.bit_count // 8

    def matches(self, word: int) -> bool:
        """True when `word` (at least `bit_count` bits, little-endian order) carries one of this
        encoding's identifiers under its identifier mask."""
        return (word & self.identifier_mask) in self._identifier_set

    def condition(self, name: str) -> EncodingCondition | None:
        for cond in self.conditions:
            if cond.name == name:
                return cond
        return None

    def field(self, name: str) -> BitField:
        try:
            return self.fields[name]
        except KeyError:
            raise SpecLookupError(f"field of {self.name}", name, _closest(name, self.fields)) from None


class Operand(NamedTuple):
    """One `<Operand>` of an instruction encoding (a NamedTuple: specs hold tens of thousands)."""

    order: int
    field_name: str | None
    data_format: str | None
    operand_type: str | None
    size: int
    input: bool
    output: bool
    implicit: bool
    binary_microcode_required: bool


@dataclass(frozen=True, slots=True)
class InstructionEncoding:
    encoding_name: str
    condition_name: str
    opcode: int
    opcode_radix: int
    operands: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Instruction:
    name: str
    aliases: tuple[str, ...]
    description: str
    flags: Mapping[str, bool]
    encodings: tuple[InstructionEncoding, ...]
    functional_group: str | None = None
    functional_subgroups: tuple[str, ...] = ()

    def flag(self, name: str) -> bool:
        return self.flags.get(name, False)

    @property
    def is_branch(self) -> bool:
        return self.flag("IsBranch")

    @property
    def is_program_terminator(self) -> bool:
        return self.flag("IsProgramTerminator")

    def encoding(self, encoding_name: str) -> InstructionEncoding | None:
        for enc in self.encodings:
            if enc.encoding_name == encoding_name:
                return enc
        return None


@dataclass(frozen=True, slots=True)
class DataAttributeMap:
    """One `<BitMap>` of a data format's `<DataAttributes>` (one per component)."""

    order: int
    fields: tuple[BitField, ...]


@dataclass(frozen=True, slots=True)
class DataFormat:
    name: str
    description: str
    data_type: str
    bit_count: int
    component_count: int
    attributes: tuple[DataAttributeMap, ...]


class PredefinedValue(NamedTuple):
    name: str
    value: int
    description: str = ""


@dataclass(frozen=True, slots=True)
class OperandType:
    """An operand type: its named values (registers, constants, specials), subtypes and, for
    partitioned types such as OPR_WAITCNT, the sub-fields of the operand value."""

    name: str
    description: str
    partitioned: bool
    raw_values: tuple[tuple[str, int, str], ...]
    subtypes: tuple[str, ...]
    fields: tuple[BitField, ...]
    _by_name: Mapping[str, int] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)
    _by_value: Mapping[int, str] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)

    @property
    def values(self) -> tuple[PredefinedValue, ...]:
        """Every predefined value in file order (built on demand: the official file has thousands)."""
        return tuple(PredefinedValue._make(v) for v in self.raw_values)

    def value_of(self, name: str) -> int | None:
        """Encoded value of a predefined name (case-insensitive), or None."""
        return self._by_name.get(name.lower())

    def name_of(self, value: int) -> str | None:
        """First predefined name with this value, or None."""
        return self._by_value.get(value)

    def has(self, name: str) -> bool:
        return name.lower() in self._by_name

    @property
    def predefined(self) -> Mapping[str, int]:
        return MappingProxyType({n: v for n, v, _ in self.raw_values})


@dataclass(frozen=True, slots=True)
class FunctionalGroup:
    name: str
    description: str = ""
    subgroups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    copyright: str = ""
    sensitivity: str = ""
    license: str = ""
    release_date: str = ""
    schema_version: str = ""


@dataclass(frozen=True, slots=True)
class Architecture:
    name: str
    id: int | None


def _closest(name: str, pool, n: int = 5) -> tuple[str, ...]:
    return tuple(difflib.get_close_matches(name, list(pool), n=n, cutoff=0.5))


class Spec:
    """A loaded ISA spec. Immutable after construction; look-ups are dictionary hits."""

    __slots__ = ("document", "architecture", "encodings", "instructions", "data_formats", "operand_types",
                 "functional_groups", "functional_subgroups", "source", "sha256", "warnings",
                 "_by_name", "_by_opcode", "_display_names", "_reg_types", "__weakref__")

    def __init__(self, *, document: Document, architecture: Architecture, encodings: Mapping[str, Encoding],
                 instructions: Sequence[Instruction], data_formats: Mapping[str, DataFormat],
                 operand_types: Mapping[str, OperandType], functional_groups: tuple[FunctionalGroup, ...] = (),
                 functional_subgroups: tuple[FunctionalGroup, ...] = (), source: str = "", sha256: str = "",
                 warnings: tuple[str, ...] = ()) -> None:
        """`instructions` is a tuple of built instructions, or an `InstructionTable` that builds each one on
        first use (the loader's: a process that meets 50 instructions builds 50). Look-ups by name and opcode
        are indexes into it, made from the table's heads without building anything."""
        from .instruction_table import InstructionTable

        table = instructions if isinstance(instructions, InstructionTable) else InstructionTable.of(instructions)
        set_ = object.__setattr__
        set_(self, "document", document)
        set_(self, "architecture", architecture)
        set_(self, "encodings", MappingProxyType(dict(encodings)))
        set_(self, "instructions", table)
        set_(self, "data_formats", MappingProxyType(dict(data_formats)))
        set_(self, "operand_types", MappingProxyType(dict(operand_types)))
        set_(self, "functional_groups", tuple(functional_groups))
        set_(self, "functional_subgroups", tuple(functional_subgroups))
        set_(self, "source", source)
        set_(self, "sha256", sha256)
        set_(self, "warnings", tuple(warnings))
        by_name: dict[str, int] = {}
        display: list[str] = []
        by_opcode: dict[tuple[str, int], int] = {}
        for i, (name, aliases, opcodes) in enumerate(table.heads):
            display.append(name)
            by_name.setdefault(name.lower(), i)
            for alias in aliases:
                by_name.setdefault(alias.lower(), i)
                display.append(alias)
            for key in opcodes:
                by_opcode.setdefault(key, i)
        reg_types: dict[str, list[OperandType]] = {}
        for ot in self.operand_types.values():
            for key in ot._by_name:
                reg_types.setdefault(key, []).append(ot)
        set_(self, "_by_name", by_name)
        set_(self, "_by_opcode", by_opcode)
        set_(self, "_display_names", tuple(display))
        set_(self, "_reg_types", {k: tuple(v) for k, v in reg_types.items()})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Spec is immutable")

    def __repr__(self) -> str:
        return (f"<Spec {self.architecture.name!r} from {self.source or '?'}: {len(self.instructions)} instructions, "
                f"{len(self.encodings)} encodings>")

    # --- look-ups -------------------------------------------------------------------------------
    def find_instruction(self, name: str) -> Instruction | None:
        """Instruction by name or alias, case-insensitive; None when the spec has no such name."""
        index = self._by_name.get(name.lower())
        return None if index is None else self.instructions[index]

    def instruction(self, name: str) -> Instruction:
        """Like `find_instruction` but raises SpecLookupError naming the closest names."""
        index = self._by_name.get(name.lower())
        if index is None:
            raise SpecLookupError("instruction", name, self.closest_instruction_names(name))
        return self.instructions[index]

    def closest_instruction_names(self, name: str, n: int = 5) -> tuple[str, ...]:
        upper = name.upper()
        return tuple(difflib.get_close_matches(upper, self._display_names, n=n, cutoff=0.6))

    def encodings_of(self, name: str) -> tuple[tuple[InstructionEncoding, Encoding], ...]:
        """Every (instruction encoding, encoding) pair of an instruction, in spec order."""
        inst = self.instruction(name)
        return tuple((ie, self.encodings[ie.encoding_name]) for ie in inst.encodings)

    def instruction_by_opcode(self, encoding_name: str, opcode: int) -> Instruction | None:
        index = self._by_opcode.get((encoding_name, opcode))
        return None if index is None else self.instructions[index]

    def encoding(self, name: str) -> Encoding:
        try:
            return self.encodings[name]
        except KeyError:
            raise SpecLookupError("encoding", name, _closest(name, self.encodings)) from None

    def operand_type(self, name: str) -> OperandType:
        try:
            return self.operand_types[name]
        except KeyError:
            raise SpecLookupError("operand type", name, _closest(name, self.operand_types)) from None

    def data_format(self, name: str) -> DataFormat:
        try:
            return self.data_formats[name]
        except KeyError:
            raise SpecLookupError("data format", name, _closest(name, self.data_formats)) from None

    def operand_types_of_register(self, register: str) -> tuple[OperandType, ...]:
        """Operand types that predefine `register` (e.g. `vcc_lo`, `s7`, `acc3`), case-insensitive."""
        return self._reg_types.get(register.lower(), ())

    def counts(self) -> dict[str, int]:
        return {"instructions": len(self.instructions), "encodings": len(self.encodings),
                "operand_types": len(self.operand_types), "data_formats": len(self.data_formats)}
