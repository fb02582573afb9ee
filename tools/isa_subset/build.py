"""Compile the project's spec subsets (CDNA 3 / gfx942, CDNA 4 / gfx950) from YAML facts into XML files in
AMD's machine-readable ISA schema (specs/amdgpu_isa_cdna3_subset.xml, specs/amdgpu_isa_cdna4_subset.xml).

The XML is what the loader and the tests read; the YAML is what people edit, because it states each fact
once (a register run is a rule, an instruction is a template plus its differences) and carries the source
of every fact in comments. Output is deterministic, so a test can rebuild it and compare bytes.

One architecture's facts live in one folder (tools/cdna3_subset, tools/cdna4_subset). A folder whose
document.yaml says `extends: <folder>` holds only its differences from that folder: CDNA 4 keeps almost all of
CDNA 3, so its files add and override entries (see `merge_overlay`) instead of repeating 1,100 instructions.

    python tools/isa_subset/build.py [--arch gfx942|gfx950|all] [--output PATH] [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# target -> (folder of YAML facts, bundled XML written from them)
ARCHES = {
    "gfx942": (REPO / "tools" / "cdna3_subset", REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"),
    "gfx950": (REPO / "tools" / "cdna4_subset", REPO / "specs" / "amdgpu_isa_cdna4_subset.xml"),
}
DEFAULT_OUTPUT = ARCHES["gfx942"][1]
SOURCES = ("document.yaml", "encodings.yaml", "types.yaml", "instructions.yaml")

# Order in which instruction sections appear (AMD's files group instructions by primary encoding in this
# alphabetical order, then by opcode).
SECTION_ORDER = ("DS", "FLAT", "FLAT_GLBL", "FLAT_SCRATCH", "MTBUF", "MUBUF", "SMEM", "SOP1", "SOP2", "SOPC",
                 "SOPK", "SOPP", "VOP1", "VOP2", "VOP3", "VOP3P", "VOP3PX2", "VOPC")
_BINARY_OPS = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"}
_SET_OPS = {"within": ".within", "notwithin": ".notwithin"}


class BuildError(Exception):
    """A fact file that is malformed or inconsistent; the message names the file and the entry."""


# ---------------------------------------------------------------------------------------------------------
# small parsers


def _where(src: str, path: str) -> str:
    return f"{src}: {path}"


def parse_bits(spec: object, where: str) -> list[tuple[int, int, int]]:
    """Bit layout text ("31:23", "14", "5:0<<1", or a list of those, least significant range first) ->
    [(offset, count, padding)]."""
    items = spec if isinstance(spec, list) else [spec]
    ranges = []
    for item in items:
        if not isinstance(item, str):
            raise BuildError(f"{where}: bit range {item!r} must be a quoted string like \"31:23\" "
                             f"(unquoted, YAML reads it as a number)")
        m = re.fullmatch(r"(\d+)(?::(\d+))?(?:<<(\d+))?", item.strip())
        if not m:
            raise BuildError(f"{where}: bit range {item!r} is not of the form HI:LO, BIT or HI:LO<<PAD")
        hi = int(m.group(1))
        lo = int(m.group(2)) if m.group(2) is not None else hi
        if lo > hi:
            raise BuildError(f"{where}: bit range {item!r} has its low bit above its high bit")
        ranges.append((lo, hi - lo + 1, int(m.group(3) or 0)))
    return ranges


@dataclass
class Field:
    name: str
    ranges: list[tuple[int, int, int]]
    text: str

    @property
    def mask(self) -> int:
        out = 0
        for offset, count, _pad in self.ranges:
            out |= ((1 << count) - 1) << offset
        return out

    @property
    def width(self) -> int:
        return sum(count + pad for _o, count, pad in self.ranges)

    def insert(self, word: int, value: int, where: str) -> int:
        if value < 0 or value >> self.width:
            raise BuildError(f"{where}: value {value} does not fit field {self.name} ({self.width} bits)")
        shift = 0
        for offset, count, pad in self.ranges:
            if (value >> shift) & ((1 << pad) - 1):
                raise BuildError(f"{where}: value {value} has set bits where field {self.name} has padding")
            shift += pad
            word |= ((value >> shift) & ((1 << count) - 1)) << offset
            shift += count
        return word


def _fields(spec: dict, defaults: dict[str, str], where: str) -> dict[str, Field]:
    out: dict[str, Field] = {}
    for name, value in (spec or {}).items():
        if isinstance(value, dict):
            bits, text = value.get("bits"), value.get("text")
        else:
            bits, text = value, None
        if text is None:
            text = defaults.get(name)
        if not text:
            raise BuildError(f"{where}.{name}: no description (add it to field_text or give {{bits, text}})")
        out[name] = Field(name, parse_bits(bits, f"{where}.{name}"), str(text))
    return out


# ---------------------------------------------------------------------------------------------------------
# encodings


@dataclass
class Encoding:
    name: str
    order: int
    bits: int
    text: str
    ident: dict[str, int]
    conditions: list[tuple[str, object]]
    fields: dict[str, Field]
    opcodes: set[int] = field(default_factory=set)

    @property
    def mask(self) -> int:
        out = self.fields["OP"].mask
        for name in self.ident:
            out |= self.fields[name].mask
        return out

    def identifiers(self) -> list[int]:
        base = 0
        for name, value in self.ident.items():
            base = self.fields[name].insert(base, value, f"encodings.yaml: {self.name}.ident")
        return sorted(self.fields["OP"].insert(base, op, f"encodings.yaml: {self.name} opcode")
                      for op in self.opcodes)


def _check_expr(expr: object, enc: str, fields: dict[str, Field], where: str) -> None:
    if isinstance(expr, bool) or expr is None:
        raise BuildError(f"{where}: {expr!r} is not an expression")
    if isinstance(expr, int):
        return
    if isinstance(expr, str):
        fmt, _, fname = expr.partition(".")
        if not fname or fname not in fields:
            raise BuildError(f"{where}: {expr!r} must name a field of {enc} as FORMAT.FIELD")
        return
    if isinstance(expr, list) and expr and all(isinstance(x, int) and not isinstance(x, bool) for x in expr):
        return
    if isinstance(expr, list) and expr and isinstance(expr[0], str):
        op, args = expr[0], expr[1:]
        if op in _BINARY_OPS or op in _SET_OPS:
            if len(args) < 2 or (op not in ("&&", "||") and len(args) != 2):
                raise BuildError(f"{where}: operator {op!r} with {len(args)} operand(s)")
            for a in args:
                _check_expr(a, enc, fields, where)
            return
        raise BuildError(f"{where}: unknown operator {op!r}; known: {sorted(_BINARY_OPS | set(_SET_OPS))}")
    raise BuildError(f"{where}: {expr!r} is not an expression (int, \"FMT.FIELD\", [op, ...] or [int, ...])")


def load_encodings(doc: dict) -> dict[str, Encoding]:
    src = "encodings.yaml"
    defaults = doc.get("field_text") or {}
    raw = doc.get("encodings") or {}
    done: dict[str, Encoding] = {}

    def build(name: str, stack: tuple[str, ...]) -> Encoding:
        if name in done:
            return done[name]
        if name in stack:
            raise BuildError(_where(src, f"encodings.{name}: `base` chain loops through {' -> '.join(stack)}"))
        if name not in raw:
            raise BuildError(_where(src, f"encodings.{stack[-1]}: base {name!r} is not defined"))
        e = raw[name]
        where = _where(src, f"encodings.{name}")
        ident: dict[str, int] = {}
        fields: dict[str, Field] = {}
        if e.get("base"):
            parent = build(e["base"], stack + (name,))
            ident.update(parent.ident)
            fields.update(parent.fields)
        ident.update(e.get("ident") or {})
        fields.update(_fields(e.get("fields"), defaults, f"{where}.fields"))
        if "OP" not in fields:
            raise BuildError(f"{where}: no OP field")
        for fname, value in ident.items():
            if fname not in fields:
                raise BuildError(f"{where}.ident: {fname!r} is not a field of this encoding")
            if not isinstance(value, int):
                raise BuildError(f"{where}.ident.{fname}: {value!r} is not an integer")
        conditions = []
        for cname, expr in (e.get("conditions") or {}).items():
            _check_expr(expr, name, fields, f"{where}.conditions.{cname}")
            conditions.append((str(cname), expr))
        for key in ("order", "bits", "text"):
            if key not in e:
                raise BuildError(f"{where}: missing `{key}`")
        for f in fields.values():
            for offset, count, _pad in f.ranges:
                if offset + count > e["bits"]:
                    raise BuildError(f"{where}: field {f.name} reaches beyond bit {e['bits'] - 1}")
        enc = Encoding(name, int(e["order"]), int(e["bits"]), str(e["text"]), ident, conditions, fields)
        done[name] = enc
        return enc

    for name in raw:
        build(name, ())
    orders = [e.order for e in done.values()]
    if len(set(orders)) != len(orders):
        raise BuildError(_where(src, "two encodings share an Order value"))
    return dict(sorted(done.items(), key=lambda kv: kv[1].order))


# ---------------------------------------------------------------------------------------------------------
# data formats and operand types


@dataclass
class DataFormat:
    name: str
    text: str
    data_type: str
    bits: int
    components: list[list[tuple[str, int, int, str]]]   # per component: (field, offset, count, signedness)


_KINDS = {"bits": ("bits", "Bits", "Unsigned"), "int": ("integer", "Integer", "Signed"),
          "uint": ("integer", "Integer", "Unsigned"), "descriptor": ("descriptor", "Descriptor", "Unsigned")}


def load_data_formats(doc: dict) -> dict[str, DataFormat]:
    src = "types.yaml"
    layouts = doc.get("float_layouts") or {}
    out: dict[str, DataFormat] = {}
    for name, entry in (doc.get("data_formats") or {}).items():
        where = _where(src, f"data_formats.{name}")
        spec, text = (entry.get("spec"), entry.get("text")) if isinstance(entry, dict) else (entry, None)
        parts = str(spec).split()
        count = 1
        if parts and re.fullmatch(r"x\d+", parts[-1]):
            count = int(parts.pop()[1:])
        if len(parts) != 2:
            raise BuildError(f"{where}: {spec!r} is not '<kind> <width or element> [xN]'")
        kind, arg = parts
        if kind == "float":
            if arg not in layouts:
                raise BuildError(f"{where}: float element {arg!r} is not in float_layouts ({sorted(layouts)})")
            mant, exp = layouts[arg]
            width = mant + exp + 1
            comp = [[("Mantissa", i * width, mant, "DoesNotApply"), ("Exponent", i * width + mant, exp, "DoesNotApply"),
                     ("Sign", i * width + mant + exp, 1, "DoesNotApply")] for i in range(count)]
            data_type = "float"
            auto = (f"{arg.upper()} floating-point value." if count == 1
                    else f"{count} packed {arg.upper()} floating-point values.")
        elif kind in _KINDS:
            if not arg.isdigit():
                raise BuildError(f"{where}: {kind} needs a bit width, got {arg!r}")
            width = int(arg)
            data_type, fname, sign = _KINDS[kind]
            comp = [[(fname, i * width, width, sign)] for i in range(count)]
            noun = {"bits": "raw value", "int": "signed integer", "uint": "unsigned integer",
                    "descriptor": "descriptor"}[kind]
            auto = f"{width}-bit {noun}." if count == 1 else f"{count} packed {width}-bit {noun}s."
        else:
            raise BuildError(f"{where}: unknown kind {kind!r}; known: float, {', '.join(_KINDS)}")
        out[name] = DataFormat(name, str(text or auto), data_type, width * count, comp)
    return dict(sorted(out.items()))


@dataclass
class OperandType:
    name: str
    text: str
    subtypes: list[str]
    values: list[tuple[str, int, str]]
    fields: dict[str, Field]


def _block_values(name: str, block: dict, where: str) -> list[tuple[str, int, str]]:
    text = str(block.get("text") or "")
    if "run" in block:
        pattern, first, last, value = block["run"]
        return [(pattern.format(i=i), value + (i - first), text.format(i=i, name=pattern.format(i=i)))
                for i in range(first, last + 1)]
    if "items" in block:
        return [(str(n), int(v), text.format(i=v, name=n)) for n, v in block["items"]]
    raise BuildError(f"{where}: value block {name} has neither `run` nor `items`")


def load_operand_types(doc: dict) -> dict[str, OperandType]:
    src = "types.yaml"
    blocks = doc.get("value_blocks") or {}
    out: dict[str, OperandType] = {}
    for name, entry in (doc.get("operand_types") or {}).items():
        where = _where(src, f"operand_types.{name}")
        values: list[tuple[str, int, str]] = []
        for ref in entry.get("values") or []:
            bname, _, shift = str(ref).partition("@")
            if bname not in blocks:
                raise BuildError(f"{where}: value block {bname!r} is not defined in value_blocks")
            vals = _block_values(bname, blocks[bname], f"{src}: value_blocks.{bname}")
            if shift:
                delta = int(shift) - vals[0][1]
                vals = [(n, v + delta, t) for n, v, t in vals]
            values.extend(vals)
        names = [n.lower() for n, _v, _t in values]
        if len(set(names)) != len(names):
            raise BuildError(f"{where}: a predefined name appears twice")
        text = entry.get("text")
        if not text:
            raise BuildError(f"{where}: no `text`")
        out[name] = OperandType(name, str(text), list(entry.get("subtypes") or []), values,
                                _fields(entry.get("fields"), {}, f"{where}.fields"))
    for t in out.values():
        for sub in t.subtypes:
            if sub not in out:
                raise BuildError(_where(src, f"operand_types.{t.name}: subtype {sub!r} is not defined"))
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------------------
# instructions


@dataclass
class Operand:
    field: str | None
    fmt: str
    otype: str
    size: int
    input: bool
    output: bool
    implicit: bool
    required: bool


@dataclass
class InstEncoding:
    encoding: str
    condition: str
    opcode: int
    operands: list[Operand]


@dataclass
class Instruction:
    name: str
    aliases: list[str]
    text: str
    flags: dict[str, bool]
    encodings: list[InstEncoding]
    group: str
    subgroups: list[str]
    section: str
    opcode: int


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fill(text: str, params: dict, where: str) -> str:
    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in params:
            raise BuildError(f"{where}: no value for {{{key}}} (give `{key}` in the entry or template params)")
        return str(params[key])
    return _PLACEHOLDER.sub(sub, text)


def _format_name(short: str, formats: dict[str, DataFormat], where: str) -> str:
    for candidate in (f"FMT_NUM_{short}", f"FMT_{short}"):
        if candidate in formats:
            return candidate
    raise BuildError(f"{where}: data format {short!r} is not defined (neither FMT_NUM_{short} nor FMT_{short})")


def _operand(spec: str, enc: Encoding, formats: dict, types: dict, where: str) -> Operand:
    parts = spec.split(":")
    flags = parts.pop() if parts and re.fullmatch(r"[iomx]+", parts[-1]) else ""
    if len(parts) not in (3, 4) or not flags:
        raise BuildError(f"{where}: operand {spec!r} is not FIELD:FORMAT:TYPE[:SIZE]:FLAGS")
    fname, fmt_short, type_short = parts[:3]
    fmt = _format_name(fmt_short, formats, where)
    otype = f"OPR_{type_short}"
    if otype not in types:
        raise BuildError(f"{where}: operand type {otype!r} is not defined")
    if len(parts) == 4:
        if not parts[3].isdigit():
            raise BuildError(f"{where}: operand size {parts[3]!r} in {spec!r} is not a number")
        size = int(parts[3])
    elif fmt == "FMT_ANY":
        raise BuildError(f"{where}: operand {spec!r} uses FMT_ANY and needs an explicit size")
    else:
        size = formats[fmt].bits
    field_name = None if fname == "-" else fname
    if field_name is not None and field_name not in enc.fields:
        raise BuildError(f"{where}: {field_name!r} is not a field of {enc.name}")
    if "i" not in flags and "o" not in flags:
        raise BuildError(f"{where}: operand {spec!r} is neither input (i) nor output (o)")
    return Operand(field_name, fmt, otype, size, "i" in flags, "o" in flags, "m" in flags, "x" not in flags)


def _opcode(text: str, where: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(?:\+\s*(\d+))?\s*", text)
    if not m:
        raise BuildError(f"{where}: opcode {text!r} is not N or N+M")
    return int(m.group(1)) + int(m.group(2) or 0)


# "amd" records where AMD's own file was checked for the entry (read by tests/isa/test_cdna4_subset.py, not built).
_ENTRY_KEYS = {"name", "op", "desc", "aliases", "flags", "extra", "skip", "group", "t", "amd"}


def load_instructions(doc: dict, encodings: dict[str, Encoding], formats: dict, types: dict) -> list[Instruction]:
    src = "instructions.yaml"
    flag_names = list(doc.get("flags") or [])
    implicit = doc.get("implicit") or {}
    templates = doc.get("templates") or {}
    out: list[Instruction] = []
    seen: set[str] = set()
    for tname, entries in (doc.get("instructions") or {}).items():
        if tname not in templates:
            raise BuildError(_where(src, f"instructions.{tname}: no template of that name"))
        tpl = templates[tname]
        tpl_encs = [e["enc"] for e in tpl["encodings"]]
        for idx, entry in enumerate(entries or []):
            name = entry.get("name")
            where = _where(src, f"instructions.{tname}[{idx}] ({name})")
            if not name or "op" not in entry or not entry.get("desc"):
                raise BuildError(f"{where}: every entry needs name, op and desc")
            if name.upper() in seen:
                raise BuildError(f"{where}: {name} is defined twice")
            seen.add(name.upper())
            params = dict(tpl.get("params") or {})
            params.update({k: v for k, v in entry.items() if k not in _ENTRY_KEYS})
            for key in tpl.get("typed") or []:
                if key not in entry and "t" in entry:
                    params[key] = entry["t"]
            params["op"] = entry["op"]
            skip = set(entry.get("skip") or [])
            unknown = skip - set(tpl_encs)
            if unknown:
                raise BuildError(f"{where}: skip names {sorted(unknown)}, which template {tname} does not have")
            extras = []
            for macro in list(tpl.get("extra") or []) + list(entry.get("extra") or []):
                if macro not in implicit:
                    raise BuildError(f"{where}: implicit operand {macro!r} is not defined under `implicit`")
                extras.append(implicit[macro])
            encs = []
            for e in tpl["encodings"]:
                if e["enc"] in skip:
                    continue
                if e["enc"] not in encodings:
                    raise BuildError(f"{src}: templates.{tname}: encoding {e['enc']!r} is not defined")
                enc = encodings[e["enc"]]
                ewhere = f"{where}, {enc.name}"
                cond = e.get("cond", "default")
                if cond not in {c for c, _x in enc.conditions}:
                    raise BuildError(f"{ewhere}: condition {cond!r} is not defined by {enc.name}")
                opcode = _opcode(_fill(str(e.get("op", "{op}")), params, ewhere), ewhere)
                operands = [_operand(_fill(s, params, ewhere), enc, formats, types, ewhere)
                            for s in list(e.get("operands") or []) + extras]
                enc.opcodes.add(opcode)
                encs.append(InstEncoding(enc.name, cond, opcode, operands))
            flags = entry.get("flags") or []
            bad = set(flags) - set(flag_names)
            if bad:
                raise BuildError(f"{where}: unknown flag(s) {sorted(bad)}; known: {flag_names}")
            group = list(entry.get("group") or tpl.get("group") or [])
            if len(group) < 2:
                raise BuildError(f"{where}: group must be [group, subgroup, ...]")
            out.append(Instruction(name, list(entry.get("aliases") or []), str(entry["desc"]),
                                   {f: f in flags for f in flag_names}, encs, group[0], group[1:],
                                   str(tpl["section"]), int(entry["op"])))
    for inst in out:
        if inst.section not in SECTION_ORDER:
            raise BuildError(_where(src, f"{inst.name}: section {inst.section!r} is not one of {SECTION_ORDER}"))
    out.sort(key=lambda i: (SECTION_ORDER.index(i.section), i.opcode, i.name))
    _check_unique_opcodes(out)
    return out


def _check_unique_opcodes(instructions: list[Instruction]) -> None:
    owner: dict[tuple[str, int], str] = {}
    for inst in instructions:
        for ie in inst.encodings:
            key = (ie.encoding, ie.opcode)
            if owner.setdefault(key, inst.name) != inst.name:
                raise BuildError(f"instructions.yaml: {inst.name} and {owner[key]} both use opcode {ie.opcode} "
                                 f"of {ie.encoding}")


# ---------------------------------------------------------------------------------------------------------
# XML rendering (element and attribute names exactly as in AMD's files, 4-space indentation)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def open(self, tag: str, attrs: str = "") -> None:
        self.lines.append(f"{'  ' * self.depth}<{tag}{attrs}>")
        self.depth += 1

    def close(self, tag: str) -> None:
        self.depth -= 1
        self.lines.append(f"{'  ' * self.depth}</{tag}>")

    def leaf(self, tag: str, text: object, attrs: str = "") -> None:
        self.lines.append(f"{'  ' * self.depth}<{tag}{attrs}>{escape(str(text))}</{tag}>")

    def empty(self, tag: str, attrs: str = "") -> None:
        self.lines.append(f"{'  ' * self.depth}<{tag}{attrs}/>")

    def comment(self, text: str) -> None:
        self.lines.append(f"{'  ' * self.depth}<!-- {text} -->")


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _write_field(w: _Writer, f: Field, order_base: int = 0, signedness: str | None = None,
                 conditional: bool = True, text: bool = True) -> None:
    attrs = f' Signedness="{signedness}"' if signedness else ""
    if conditional:
        attrs = ' IsConditional="false"' + attrs
    w.open("Field", attrs)
    w.leaf("FieldName", f.name)
    if text:
        w.leaf("Description", f.text)
    w.open("BitLayout", f' RangeCount="{len(f.ranges)}"')
    for i, (offset, count, pad) in enumerate(f.ranges):
        w.open("Range", f' Order="{i + order_base}"')
        w.leaf("BitCount", count)
        w.leaf("BitOffset", offset)
        if pad:
            w.open("Padding")
            w.leaf("BitCount", pad)
            w.leaf("Value", "0", ' Radix="2"')
            w.close("Padding")
        w.close("Range")
    w.close("BitLayout")
    w.close("Field")


def _write_expr(w: _Writer, expr: object) -> None:
    if isinstance(expr, int):
        w.empty("lit", f' val="{expr}"')
        return
    if isinstance(expr, str):
        fmt, _, fname = expr.partition(".")
        w.open("op", ' type=".fieldderef"')
        w.open("op", ' type=".fieldderef"')
        w.empty("id", ' val="INST"')
        w.empty("id", f' val="{_attr(fmt)}"')
        w.close("op")
        w.empty("id", f' val="{_attr(fname)}"')
        _write_type(w, "I", 32)
        w.close("op")
        return
    assert isinstance(expr, list)
    if all(isinstance(x, int) for x in expr):
        w.open("op", ' type=".cons_array"')
        for x in expr:
            w.empty("lit", f' val="{x}"')
        w.close("op")
        return
    op = _SET_OPS.get(expr[0], expr[0])
    w.open("op", f' type="{_attr(op)}"')
    for a in expr[1:]:
        _write_expr(w, a)
    _write_type(w, "U", 1)
    w.close("op")


def _write_type(w: _Writer, base: str, size: int) -> None:
    w.open("ty")
    w.empty("t", f' base="{base}" size="{size}"')
    w.close("ty")


def _binary(value: int, width: int) -> str:
    return format(value, f"0{width}b")


def render(document: dict, encodings: dict[str, Encoding], formats: dict[str, DataFormat],
           types: dict[str, OperandType], instructions: list[Instruction]) -> str:
    w = _Writer()
    w.comment(document["banner"])
    w.open("Spec")
    w.open("Document")
    for key, tag in (("copyright", "Copyright"), ("sensitivity", "Sensitivity"), ("license", "License"),
                     ("release_date", "ReleaseDate"), ("schema_version", "SchemaVersion")):
        w.leaf(tag, document[key])
    w.close("Document")
    w.open("ISA")
    w.open("Architecture")
    w.leaf("ArchitectureName", document["architecture"]["name"])
    w.leaf("ArchitectureId", document["architecture"]["id"])
    w.close("Architecture")
    _render_encodings(w, encodings)
    _render_instructions(w, instructions)
    _render_data_formats(w, formats)
    _render_operand_types(w, types)
    w.close("ISA")
    w.close("Spec")
    return "\n".join(w.lines) + "\n"


def _render_encodings(w: _Writer, encodings: dict[str, Encoding]) -> None:
    w.open("Encodings")
    for enc in encodings.values():
        w.open("Encoding", f' Order="{enc.order}"')
        w.leaf("EncodingName", enc.name)
        w.leaf("BitCount", enc.bits)
        w.leaf("EncodingIdentifierMask", _binary(enc.mask, enc.bits), ' Radix="2"')
        w.open("EncodingIdentifiers")
        for ident in enc.identifiers():
            w.leaf("EncodingIdentifier", _binary(ident, enc.bits), ' Radix="2"')
        w.close("EncodingIdentifiers")
        w.open("EncodingConditions")
        for cname, expr in enc.conditions:
            w.open("EncodingCondition")
            w.leaf("ConditionName", cname)
            w.open("CondtionExpression")     # AMD's spelling
            _write_expr(w, expr)
            w.close("CondtionExpression")
            w.close("EncodingCondition")
        w.close("EncodingConditions")
        w.leaf("Description", enc.text)
        w.open("MicrocodeFormat")
        w.open("BitMap")
        for fname in sorted(enc.fields):
            _write_field(w, enc.fields[fname])
        w.close("BitMap")
        w.close("MicrocodeFormat")
        w.close("Encoding")
    w.close("Encodings")


def _render_operands(w: _Writer, operands: list[Operand]) -> None:
    if not operands:
        w.empty("Operands")
        return
    w.open("Operands")
    for order, o in enumerate(operands, start=1):
        w.open("Operand", f' Input="{_bool(o.input)}" Output="{_bool(o.output)}" IsImplicit="{_bool(o.implicit)}" '
                          f'IsBinaryMicrocodeRequired="{_bool(o.required)}" Order="{order}"')
        if o.field:
            w.leaf("FieldName", o.field)
        w.leaf("DataFormatName", o.fmt)
        w.leaf("OperandType", o.otype)
        w.leaf("OperandSize", o.size)
        w.close("Operand")
    w.close("Operands")


def _render_instructions(w: _Writer, instructions: list[Instruction]) -> None:
    w.open("Instructions")
    for inst in instructions:
        w.open("Instruction")
        w.open("InstructionFlags")
        for flag, value in inst.flags.items():
            w.leaf(flag, "TRUE" if value else "FALSE")
        w.close("InstructionFlags")
        w.leaf("InstructionName", inst.name)
        if inst.aliases:
            w.open("AliasedInstructionNames")
            for alias in inst.aliases:
                w.leaf("InstructionName", alias)
            w.close("AliasedInstructionNames")
        w.leaf("Description", inst.text)
        w.open("InstructionEncodings")
        for ie in inst.encodings:
            w.open("InstructionEncoding")
            w.leaf("EncodingName", ie.encoding)
            w.leaf("EncodingCondition", ie.condition)
            w.leaf("Opcode", ie.opcode, ' Radix="10"')
            _render_operands(w, ie.operands)
            w.close("InstructionEncoding")
        w.close("InstructionEncodings")
        w.open("FunctionalGroup")
        w.leaf("Name", inst.group)
        w.open("FunctionalSubgroups")
        for sub in inst.subgroups:
            w.leaf("Subgroup", sub)
        w.close("FunctionalSubgroups")
        w.close("FunctionalGroup")
        w.close("Instruction")
    w.close("Instructions")


def _render_data_formats(w: _Writer, formats: dict[str, DataFormat]) -> None:
    w.open("DataFormats")
    for fmt in formats.values():
        w.open("DataFormat")
        w.leaf("DataFormatName", fmt.name)
        w.leaf("Description", fmt.text)
        w.leaf("DataType", fmt.data_type)
        w.leaf("BitCount", fmt.bits)
        w.leaf("ComponentCount", len(fmt.components))
        w.open("DataAttributes")
        for i, comp in enumerate(fmt.components):
            w.open("BitMap", f' Order="{i}"')
            for fname, offset, count, sign in comp:
                # AMD numbers the single range of a data-format field 1 (encoding fields start at 0).
                _write_field(w, Field(fname, [(offset, count, 0)], ""), order_base=1, signedness=sign,
                             conditional=False, text=False)
            w.close("BitMap")
        w.close("DataAttributes")
        w.close("DataFormat")
    w.close("DataFormats")


def _render_operand_types(w: _Writer, types: dict[str, OperandType]) -> None:
    w.open("OperandTypes")
    for t in types.values():
        w.open("OperandType", f' IsPartitioned="{_bool(bool(t.fields))}"')
        w.leaf("OperandTypeName", t.name)
        w.leaf("Description", t.text)
        if t.subtypes:
            w.open("Subtypes")
            for sub in t.subtypes:
                w.leaf("Subtype", sub)
            w.close("Subtypes")
        if t.values:
            w.open("OperandPredefinedValues")
            for vname, value, vtext in t.values:
                w.open("PredefinedValue")
                w.leaf("Name", vname)
                w.leaf("Description", vtext)
                w.leaf("Value", value)
                w.close("PredefinedValue")
            w.close("OperandPredefinedValues")
        if t.fields:
            w.open("MicrocodeFormat")
            w.open("BitMap")
            for fname in sorted(t.fields):
                _write_field(w, t.fields[fname])
            w.close("BitMap")
            w.close("MicrocodeFormat")
        w.close("OperandType")
    w.close("OperandTypes")


def load_document(doc: dict) -> dict:
    for key in ("banner", "copyright", "sensitivity", "license", "release_date", "schema_version", "architecture"):
        if key not in doc:
            raise BuildError(f"document.yaml: missing `{key}`")
    return doc


def _read_yaml(folder: Path, name: str) -> dict:
    path = folder / name
    try:
        with path.open(encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise BuildError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise BuildError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise BuildError(f"{path}: expected a mapping at the top level")
    return data


def _merge_named(base: dict, overlay: dict) -> dict:
    """Entries by name: a new name is added; a known one takes the overlay's keys, and its `fields`, `ident` and
    `conditions` mappings are merged key by key (an encoding that changes one field restates only that field)."""
    out = dict(base)
    for name, entry in (overlay or {}).items():
        if name in out and isinstance(out[name], dict) and isinstance(entry, dict):
            merged = dict(out[name])
            for key, value in entry.items():
                if key in ("fields", "ident", "conditions") and isinstance(value, dict):
                    merged[key] = {**(merged.get(key) or {}), **value}
                else:
                    merged[key] = value
            out[name] = merged
        else:
            out[name] = entry
    return out


def merge_overlay(base: dict[str, dict], overlay: dict[str, dict], where: str) -> dict[str, dict]:
    """The facts of an architecture described as differences from another one.

    - encodings.yaml: `field_text` and `encodings` merged by name (`_merge_named`).
    - types.yaml: `float_layouts`, `data_formats`, `operand_types`, `value_blocks` merged by name.
    - instructions.yaml: `flags` replaced when given, `implicit` and `templates` merged by name; the entries under
      `instructions.<template>` are appended to the base's; `drop: [NAME, ...]` removes base instructions the
      architecture no longer has (a drop that names nothing is an error, so a typo cannot keep an instruction).
    """
    out = {name: dict(doc) for name, doc in base.items()}
    enc, ov = out["encodings.yaml"], overlay.get("encodings.yaml") or {}
    for key in ("field_text", "encodings"):
        enc[key] = _merge_named(enc.get(key) or {}, ov.get(key) or {})
    types, ov = out["types.yaml"], overlay.get("types.yaml") or {}
    for key in ("float_layouts", "data_formats", "operand_types", "value_blocks"):
        types[key] = _merge_named(types.get(key) or {}, ov.get(key) or {})
    ins, ov = out["instructions.yaml"], overlay.get("instructions.yaml") or {}
    if "flags" in ov:
        ins["flags"] = ov["flags"]
    for key in ("implicit", "templates"):
        ins[key] = _merge_named(ins.get(key) or {}, ov.get(key) or {})
    lists = {t: list(entries or []) for t, entries in (ins.get("instructions") or {}).items()}
    drop = {str(n).upper() for n in ov.get("drop") or []}
    found: set[str] = set()
    for t, entries in lists.items():
        kept = [e for e in entries if str(e.get("name", "")).upper() not in drop]
        found |= {str(e.get("name", "")).upper() for e in entries} & drop
        lists[t] = kept
    if drop - found:
        raise BuildError(f"{where}/instructions.yaml: drop names {sorted(drop - found)}, which the base does not have")
    for t, entries in (ov.get("instructions") or {}).items():
        lists.setdefault(t, []).extend(entries or [])
    ins["instructions"] = lists
    return out


def read_facts(folder: Path) -> dict[str, dict]:
    """The YAML documents of one architecture's folder, with `extends` resolved."""
    docs = {name: _read_yaml(folder, name) if (folder / name).is_file() or name == "document.yaml" else {}
            for name in SOURCES}
    parent = docs["document.yaml"].get("extends")
    if parent is None:
        missing = [n for n in SOURCES if not (folder / n).is_file()]
        if missing:
            raise BuildError(f"{folder}: missing {', '.join(missing)}")
        return docs
    base_folder = (folder / str(parent)).resolve()
    if base_folder == folder.resolve():
        raise BuildError(f"{folder}/document.yaml: `extends` names the folder itself")
    base = read_facts(base_folder)
    merged = merge_overlay(base, docs, str(folder))
    merged["document.yaml"] = docs["document.yaml"]
    return merged


def build(folder: Path = ARCHES["gfx942"][0]) -> str:
    """The XML text for the facts in `folder`. Raises BuildError naming the file and entry at fault."""
    docs = read_facts(folder)
    document = load_document(docs["document.yaml"])
    encodings = load_encodings(docs["encodings.yaml"])
    formats = load_data_formats(docs["types.yaml"])
    types = load_operand_types(docs["types.yaml"])
    instructions = load_instructions(docs["instructions.yaml"], encodings, formats, types)
    return render(document, encodings, formats, types, instructions)


def _one(folder: Path, output: Path, check: bool) -> int:
    try:
        text = build(folder)
    except BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 2
    data = text.encode("utf-8")
    if check:
        try:
            current = output.read_bytes()
        except OSError:
            current = b""
        if current != data:
            print(f"{output} is out of date; run python tools/isa_subset/build.py", file=sys.stderr)
            return 1
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    print(f"wrote {output} ({len(data):,} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="all", choices=[*ARCHES, "all"], help="which subset to build")
    parser.add_argument("--output", type=Path, help="where to write the XML (one --arch only)")
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when the output file differs from a fresh build")
    args = parser.parse_args(argv)
    arches = list(ARCHES) if args.arch == "all" else [args.arch]
    if args.output is not None and len(arches) != 1:
        parser.error("--output needs a single --arch")
    worst = 0
    for arch in arches:
        folder, output = ARCHES[arch]
        worst = max(worst, _one(folder, args.output or output, args.check))
    return worst


if __name__ == "__main__":
    sys.exit(main())
