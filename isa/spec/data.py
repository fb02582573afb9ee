"""Build the immutable `Spec` from the plain-data form that `xml_reader` produces and the cache stores.

Keeping one builder means a spec loaded from XML and one loaded from the cache are the same objects;
a cache entry that does not have the expected shape raises `CorruptSpecData` and is rebuilt.
"""

from __future__ import annotations

from types import MappingProxyType

from jitgemm.isa.errors import SpecError

from . import conditions as _expr
from .instruction_table import Head, InstructionTable
from .model import (
    Architecture,
    BitField,
    BitRange,
    DataAttributeMap,
    DataFormat,
    Document,
    Encoding,
    EncodingCondition,
    FunctionalGroup,
    Instruction,
    InstructionEncoding,
    Operand,
    OperandType,
    Spec,
)
from .xml_reader import DATA_FORMAT_VERSION


class CorruptSpecData(ValueError):
    """Plain data that is not a spec this version of the builder wrote."""


def _field(d: list) -> BitField:
    name, ranges, conditional, description, signedness, predefined = d
    return BitField(
        name=name,
        ranges=tuple(BitRange(*r) for r in ranges),
        conditional=bool(conditional),
        description=description,
        signedness=signedness,
        predefined=MappingProxyType({k: v for k, v in predefined}),
    )


def _encoding(d: dict) -> Encoding:
    ids = tuple(d["ids"])
    return Encoding(
        name=d["name"], bit_count=d["bit_count"], order=d["order"], identifier_mask=d["mask"],
        identifier_mask_radix=d["mask_radix"], identifiers=ids, identifier_radix=d["id_radix"],
        conditions=tuple(EncodingCondition(n, _expr.from_data(e)) for n, e in d["conditions"]),
        fields=MappingProxyType({f[0]: _field(f) for f in d["fields"]}),
        description=d["description"], _identifier_set=frozenset(ids),
    )


def _instruction(d: dict) -> Instruction:
    encodings = tuple(
        InstructionEncoding(enc, cond, opcode, radix, tuple(map(Operand._make, operands)))
        for enc, cond, opcode, radix, operands in d["encodings"]
    )
    return Instruction(
        name=d["name"], aliases=tuple(d["aliases"]), description=d["description"],
        flags=MappingProxyType(dict(d["flags"])), encodings=encodings, functional_group=d["group"],
        functional_subgroups=tuple(d["subgroups"]),
    )


def instruction_heads(data: dict) -> list[Head]:
    """Each instruction's head (name, aliases, (encoding, opcode) pairs): the ones a cache entry stored beside
    its records (`instruction_heads`), else made from the records themselves (a fresh parse)."""
    heads = data.get("instruction_heads")
    if heads is None:
        return [(d["name"], tuple(d["aliases"]), tuple((e[0], e[2]) for e in d["encodings"]))
                for d in data["instructions"]]
    return [(name, tuple(aliases), tuple((enc, opcode) for enc, opcode in pairs)) for name, aliases, pairs in heads]


def _checked_heads(heads: list[Head]) -> list[Head]:
    for name, aliases, pairs in heads:
        if not isinstance(name, str) or not all(isinstance(a, str) for a in aliases) \
                or not all(isinstance(e, str) and isinstance(o, int) and not isinstance(o, bool) for e, o in pairs):
            raise CorruptSpecData(f"instruction head {name!r} does not have the expected shape")
    return heads


def _instruction_builder(source: str):
    """`_instruction` for an `InstructionTable`: a record that turns out malformed when first used (it was
    written by this version of the code and sealed, so only a bug can get here) is a SpecError naming it."""
    def build(record) -> Instruction:
        try:
            return _instruction(record)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise SpecError(f"parsed spec data of this file has a malformed instruction record ({exc!r}); "
                            f"delete the parsed-spec cache ({source}) to have it rebuilt", path=source) from None
    return build


def _data_format(d: dict) -> DataFormat:
    return DataFormat(
        name=d["name"], description=d["description"], data_type=d["data_type"], bit_count=d["bit_count"],
        component_count=d["component_count"],
        attributes=tuple(DataAttributeMap(order, tuple(_field(f) for f in fields)) for order, fields in d["maps"]),
    )


def _operand_type(d: dict) -> OperandType:
    values = tuple(map(tuple, d["values"]))
    by_name: dict[str, int] = {}
    by_value: dict[int, str] = {}
    for name, value, _desc in values:
        by_name.setdefault(name.lower(), value)
        by_value.setdefault(value, name)
    return OperandType(
        name=d["name"], description=d["description"], partitioned=d["partitioned"], raw_values=values,
        subtypes=tuple(d["subtypes"]), fields=tuple(_field(f) for f in d["fields"]),
        _by_name=MappingProxyType(by_name), _by_value=MappingProxyType(by_value),
    )


def _group(d: dict) -> FunctionalGroup:
    return FunctionalGroup(d["name"], d["description"], tuple(d["subgroups"]))


def build_spec(data: dict, source: str = "") -> Spec:
    """Objects from plain data. Raises CorruptSpecData when the data does not have the known shape."""
    try:
        if data.get("format") != DATA_FORMAT_VERSION:
            raise CorruptSpecData(f"spec data format {data.get('format')!r}, expected {DATA_FORMAT_VERSION}")
        encodings: dict[str, Encoding] = {}
        for e in data["encodings"]:
            encodings.setdefault(e["name"], _encoding(e))
        formats: dict[str, DataFormat] = {}
        for d in data["data_formats"]:
            formats.setdefault(d["name"], _data_format(d))
        types: dict[str, OperandType] = {}
        for o in data["operand_types"]:
            types.setdefault(o["name"], _operand_type(o))
        return Spec(
            document=Document(**data["document"]),
            architecture=Architecture(data["architecture"]["name"], data["architecture"]["id"]),
            encodings=encodings,
            instructions=InstructionTable(data["instructions"], _instruction_builder(source),
                                          _checked_heads(instruction_heads(data))),
            data_formats=formats,
            operand_types=types,
            functional_groups=tuple(_group(g) for g in data["functional_groups"]),
            functional_subgroups=tuple(_group(g) for g in data["functional_subgroups"]),
            source=source,
            sha256=data["sha256"],
            warnings=tuple(data.get("warnings", ())),
        )
    except CorruptSpecData:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, _expr.ExprError) as exc:
        raise CorruptSpecData(f"spec data does not have the expected shape: {exc!r}") from None
