"""Read an AMD MR-ISA XML file into the plain-data form that `isa.spec.data` turns into a Spec.

The plain form (dicts, lists, ints, strings) is also what the parsed-spec cache stores, so there is
one path from XML to objects whatever the source. Element names follow AMD's files exactly,
including their spelling `CondtionExpression` (the schema documentation says `ConditionExpression`;
both are accepted). Unknown elements are ignored.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from jitgemm.isa.errors import SpecError
from jitgemm.util.files import MAX_SPEC_BYTES, read_bounded

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

DATA_FORMAT_VERSION = 1
_TRUE = {"true", "1", "yes"}
# AMD's condition expressions nest a few levels; a file nesting hundreds deep is not a spec, and would exhaust
# Python's recursion limit in the reader, the builder or the condition compiler.
MAX_EXPRESSION_DEPTH = 64
# The widest encoding in AMD's files is 128 bits (CDNA4 ENC_VOP3PX2); a BitCount far beyond is not a layout.
MAX_ENCODING_BITS = 256


def _text(el: ET.Element | None, tag: str, default: str = "") -> str:
    if el is None:
        return default
    child = el.find(tag)
    if child is None or child.text is None:
        return default
    return child.text.strip()


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None:
        return default
    return value.strip().lower() in _TRUE


class _Reader:
    def __init__(self, raw: bytes, path: str) -> None:
        self.raw = raw
        self.path = path
        self.warnings: list[str] = []
        self._decoded: str | None = None

    # --- error helpers -------------------------------------------------------------------------
    def line_of(self, needle: str) -> int | None:
        """Line of the first occurrence of `needle` in the file (used only on the error path)."""
        if self._decoded is None:
            self._decoded = self.raw.decode("utf-8", errors="replace")
        idx = self._decoded.find(needle)
        if idx < 0:
            return None
        return self._decoded.count("\n", 0, idx) + 1

    def error(self, message: str, needle: str | None = None) -> SpecError:
        line = self.line_of(needle) if needle else None
        return SpecError(message, path=self.path, line=line)

    def int_of(self, el: ET.Element | None, what: str, default: int | None = None) -> int:
        if el is None or el.text is None or not el.text.strip():
            if default is not None:
                return default
            raise self.error(f"missing number for {what}")
        radix_text = el.get("Radix", "10")
        text = el.text.strip()
        try:
            radix = int(radix_text)
            return int(text, radix)
        except ValueError:
            raise self.error(f"{what}: {text!r} is not a number in radix {radix_text}", text) from None

    def count_of(self, el: ET.Element | None, what: str, default: int | None = None, minimum: int = 0) -> int:
        """A bit count or offset: an integer of at least `minimum` (a negative width is not a layout)."""
        value = self.int_of(el, what, default)
        if value < minimum:
            raise self.error(f"{what} is {value}; expected an integer >= {minimum}",
                             f">{el.text.strip()}<" if el is not None and el.text else None)
        return value

    def attr_int(self, el: ET.Element, name: str, what: str, default: int) -> int:
        """An integer attribute such as `Order` or `size`; anything else is an error naming the line."""
        text = el.get(name)
        if text is None or not text.strip():
            return default
        try:
            return int(text.strip(), 10)
        except ValueError:
            raise self.error(f"{what}: attribute {name}={text!r} is not an integer", f'{name}="{text}"') from None

    # --- sections ------------------------------------------------------------------------------
    def bit_field(self, f: ET.Element) -> list:
        name = _text(f, "FieldName")
        ranges = []
        layout = f.find("BitLayout")
        for r in (layout.findall("Range") if layout is not None else ()):
            pad = r.find("Padding")
            ranges.append([
                self.attr_int(r, "Order", f"bit range of field {name}", len(ranges)),
                self.count_of(r.find("BitOffset"), f"BitOffset of field {name}"),
                self.count_of(r.find("BitCount"), f"BitCount of field {name}", minimum=1),
                self.count_of(pad.find("BitCount"), f"padding of field {name}", 0) if pad is not None else 0,
                self.int_of(pad.find("Value"), f"padding value of field {name}", 0) if pad is not None else 0,
            ])
        ranges.sort(key=lambda r: r[0])
        predefined = []
        pv_parent = f.find("FieldPredefinedValues")
        for pv in (pv_parent.findall("PredefinedValue") if pv_parent is not None else ()):
            predefined.append([_text(pv, "Name"), self.int_of(pv.find("Value"), f"value in field {name}", 0)])
        return [name, ranges, _bool(f.get("IsConditional")), _text(f, "Description"), f.get("Signedness"),
                predefined]

    def expression(self, el: ET.Element | None, depth: int = 0):
        if el is None:
            return None
        if depth > MAX_EXPRESSION_DEPTH:
            raise self.error(f"condition expression nested deeper than {MAX_EXPRESSION_DEPTH} levels",
                             f"<{el.tag}")
        tag = el.tag
        if tag == "lit":
            val = el.get("val", "0")
            try:
                return ["lit", int(val, 0)]
            except ValueError:
                raise self.error(f"condition literal {val!r} is not an integer", f'val="{val}"') from None
        if tag == "id":
            return ["id", el.get("val", "")]
        if tag == "op":
            args = [self.expression(c, depth + 1) for c in el if c.tag in ("op", "lit", "id")]
            ty = None
            ty_el = el.find("ty/t")
            if ty_el is not None:
                ty = [ty_el.get("base", ""), self.attr_int(ty_el, "size", "type of a condition operator", 0)]
            return ["op", el.get("type", ""), args, ty]
        return None

    def encoding(self, e: ET.Element) -> dict:
        name = _text(e, "EncodingName")
        mask_el = e.find("EncodingIdentifierMask")
        ids_parent = e.find("EncodingIdentifiers")
        id_els = ids_parent.findall("EncodingIdentifier") if ids_parent is not None else []
        conditions = []
        conds_parent = e.find("EncodingConditions")
        for c in (conds_parent.findall("EncodingCondition") if conds_parent is not None else ()):
            body = c.find("CondtionExpression")
            if body is None:
                body = c.find("ConditionExpression")
            root = None
            if body is not None:
                kids = [k for k in body if k.tag in ("op", "lit", "id")]
                root = self.expression(kids[0]) if kids else None
            conditions.append([_text(c, "ConditionName"), root])
        fields = []
        micro = e.find("MicrocodeFormat")
        if micro is not None:
            for bm in micro.findall("BitMap"):
                fields.extend(self.bit_field(f) for f in bm.findall("Field"))
        bit_count = self.count_of(e.find("BitCount"), f"BitCount of encoding {name}", minimum=32)
        if bit_count % 32:
            raise self.error(f"BitCount of encoding {name} is {bit_count}; instructions are whole 32-bit words",
                             f"<EncodingName>{name}</EncodingName>")
        return {
            "name": name,
            "bit_count": bit_count,
            "order": self.attr_int(e, "Order", f"encoding {name}", 0),
            "mask": self.int_of(mask_el, f"identifier mask of {name}", 0),
            "mask_radix": self.attr_int(mask_el, "Radix", f"identifier mask of {name}", 10)
            if mask_el is not None else 10,
            "ids": [self.int_of(i, f"identifier of {name}") for i in id_els],
            "id_radix": self.attr_int(id_els[0], "Radix", f"identifier of {name}", 10) if id_els else 10,
            "conditions": conditions,
            "fields": fields,
            "description": _text(e, "Description"),
        }

    def instruction(self, i: ET.Element) -> dict:
        name = _text(i, "InstructionName")
        flags = {}
        fl = i.find("InstructionFlags")
        for f in (fl if fl is not None else ()):
            flags[f.tag] = _bool(f.text)
        aliases_el = i.find("AliasedInstructionNames")
        aliases = [a.text.strip() for a in (aliases_el if aliases_el is not None else ()) if a.text]
        encodings = []
        encs = i.find("InstructionEncodings")
        for ie in (encs.findall("InstructionEncoding") if encs is not None else ()):
            opcode_el = ie.find("Opcode")
            operands = []
            ops = ie.find("Operands")
            for o in (ops.findall("Operand") if ops is not None else ()):
                field_name = _text(o, "FieldName") or None
                operands.append([
                    self.attr_int(o, "Order", f"operand of {name}", len(operands)), field_name,
                    _text(o, "DataFormatName") or None,
                    _text(o, "OperandType") or None,
                    self.count_of(o.find("OperandSize"), f"OperandSize of {name}", 0),
                    _bool(o.get("Input")), _bool(o.get("Output")), _bool(o.get("IsImplicit")),
                    _bool(o.get("IsBinaryMicrocodeRequired"), True),
                ])
            operands.sort(key=lambda o: o[0])
            encodings.append([
                _text(ie, "EncodingName"), _text(ie, "EncodingCondition"),
                self.int_of(opcode_el, f"opcode of {name}"),
                self.attr_int(opcode_el, "Radix", f"opcode of {name}", 10) if opcode_el is not None else 10,
                operands,
            ])
        fg = i.find("FunctionalGroup")
        subgroups = []
        if fg is not None:
            sg = fg.find("FunctionalSubgroups")
            subgroups = [s.text.strip() for s in (sg if sg is not None else ()) if s.text]
        return {
            "name": name, "aliases": aliases, "description": _text(i, "Description"), "flags": flags,
            "encodings": encodings, "group": _text(fg, "Name") or None, "subgroups": subgroups,
        }

    def data_format(self, d: ET.Element) -> dict:
        name = _text(d, "DataFormatName")
        maps = []
        attrs = d.find("DataAttributes")
        for bm in (attrs.findall("BitMap") if attrs is not None else ()):
            maps.append([self.attr_int(bm, "Order", f"data format {name}", len(maps)),
                         [self.bit_field(f) for f in bm.findall("Field")]])
        return {
            "name": name, "description": _text(d, "Description"), "data_type": _text(d, "DataType"),
            "bit_count": self.count_of(d.find("BitCount"), f"BitCount of data format {name}", 0),
            "component_count": self.count_of(d.find("ComponentCount"), f"ComponentCount of {name}", 1, minimum=1),
            "maps": maps,
        }

    def operand_type(self, o: ET.Element) -> dict:
        name = _text(o, "OperandTypeName")
        values = []
        pvs = o.find("OperandPredefinedValues")
        for pv in (pvs.findall("PredefinedValue") if pvs is not None else ()):
            values.append([_text(pv, "Name"), self.int_of(pv.find("Value"), f"value in operand type {name}", 0),
                           _text(pv, "Description")])
        subtypes_el = o.find("Subtypes")
        subtypes = [s.text.strip() for s in (subtypes_el if subtypes_el is not None else ()) if s.text]
        fields = []
        micro = o.find("MicrocodeFormat")
        if micro is not None:
            for bm in micro.findall("BitMap"):
                fields.extend(self.bit_field(f) for f in bm.findall("Field"))
        return {"name": name, "description": _text(o, "Description"),
                "partitioned": _bool(o.get("IsPartitioned")), "values": values, "subtypes": subtypes,
                "fields": fields}

    @staticmethod
    def group(g: ET.Element) -> dict:
        subs = []
        for tag in ("FunctionalSubgroups", "Subgroups"):
            parent = g.find(tag)
            if parent is not None:
                for s in parent:
                    text = _text(s, "Name") or (s.text or "").strip()
                    if text:
                        subs.append(text)
        return {"name": _text(g, "Name") or _text(g, "FunctionalGroupName") or _text(g, "SubgroupName"),
                "description": _text(g, "Description"), "subgroups": subs}


def read_xml(path: str | Path, raw: bytes | None = None) -> dict:
    """Parse a spec file into plain data (see module docstring). Raises SpecError with file:line:col."""
    path = str(path)
    if raw is None:
        try:
            raw = read_bounded(path, MAX_SPEC_BYTES)
        except OSError as exc:
            raise SpecError(f"cannot read spec file: {exc.strerror or str(exc).split(': ', 1)[-1]}",
                            path=path) from None
    import xml.etree.ElementTree as ET  # only a cache miss parses XML

    reader = _Reader(raw, path)
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        line, col = exc.position
        raise SpecError(f"malformed XML: {exc.msg if hasattr(exc, 'msg') else exc}", path=path, line=line,
                        col=col + 1) from None
    except LookupError as exc:  # expat looks the declared encoding up in Python's codec registry
        raise SpecError(f"the XML declaration names an encoding Python does not know ({exc}); AMD's spec files "
                        f"are UTF-8", path=path, line=1) from None
    try:
        return _read_root(reader, root, raw)
    except RecursionError:
        raise SpecError("elements nested too deeply to be an AMD MR-ISA file", path=path) from None


def _read_root(reader: _Reader, root: ET.Element, raw: bytes) -> dict:
    path = reader.path
    if root.tag != "Spec":
        raise SpecError(f"root element is <{root.tag}>, expected <Spec> (an AMD MR-ISA file)", path=path, line=1)
    isa = root.find("ISA")
    if isa is None:
        raise SpecError("no <ISA> element under <Spec>", path=path)
    doc = root.find("Document")
    arch = isa.find("Architecture")
    arch_id_text = _text(arch, "ArchitectureId")
    data = {
        "format": DATA_FORMAT_VERSION,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "document": {
            "copyright": _text(doc, "Copyright"), "sensitivity": _text(doc, "Sensitivity"),
            "license": _text(doc, "License"), "release_date": _text(doc, "ReleaseDate"),
            "schema_version": _text(doc, "SchemaVersion"),
        },
        "architecture": {"name": _text(arch, "ArchitectureName"),
                         "id": int(arch_id_text) if arch_id_text.isdigit() else None},
        "encodings": [reader.encoding(e) for e in isa.iterfind("Encodings/Encoding")],
        "instructions": [reader.instruction(i) for i in isa.iterfind("Instructions/Instruction")],
        "data_formats": [reader.data_format(d) for d in isa.iterfind("DataFormats/DataFormat")],
        "operand_types": [reader.operand_type(o) for o in isa.iterfind("OperandTypes/OperandType")],
        "functional_groups": [reader.group(g) for g in isa.iterfind("FunctionalGroups/FunctionalGroup")],
        "functional_subgroups": [reader.group(g) for g in isa.iterfind("FunctionalSubgroups/FunctionalSubgroup")],
    }
    _check_references(reader, data)
    _check_layout(reader, data)
    data["warnings"] = reader.warnings
    return data


def _check_references(reader: _Reader, data: dict) -> None:
    """Every name an element uses must be defined; quirks of real files become warnings."""
    enc_fields: dict[str, set[str]] = {}
    enc_conds: dict[str, set[str]] = {}
    for e in data["encodings"]:
        if e["name"] in enc_fields:
            reader.warnings.append(f"encoding {e['name']} is defined more than once; the first is used")
            continue
        enc_fields[e["name"]] = {f[0] for f in e["fields"]}
        names = [c[0] for c in e["conditions"]]
        enc_conds[e["name"]] = set(names)
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            reader.warnings.append(f"encoding {e['name']} declares condition(s) {', '.join(dups)} more than once")
    formats = set()
    for d in data["data_formats"]:
        if d["name"] in formats:
            reader.warnings.append(f"data format {d['name']} is defined more than once; the first is used")
        formats.add(d["name"])
    types = set()
    for o in data["operand_types"]:
        if o["name"] in types:
            reader.warnings.append(f"operand type {o['name']} is defined more than once; the first is used")
        types.add(o["name"])
    for o in data["operand_types"]:
        for sub in o["subtypes"]:
            if sub not in types:
                raise reader.error(f"operand type {o['name']} names subtype {sub!r}, which is not defined",
                                   f"<Subtype>{sub}</Subtype>")
    empty_cond_reported: set[str] = set()
    for inst in data["instructions"]:
        iname = inst["name"]
        for enc_name, cond, _opcode, _radix, operands in inst["encodings"]:
            where = f"instruction {iname}, encoding {enc_name}"
            if enc_name not in enc_fields:
                raise reader.error(f"{where}: encoding {enc_name!r} is not defined",
                                   f"<InstructionName>{iname}</InstructionName>")
            if cond and cond not in enc_conds[enc_name]:
                if not enc_conds[enc_name]:
                    if enc_name not in empty_cond_reported:
                        empty_cond_reported.add(enc_name)
                        reader.warnings.append(f"encoding {enc_name} has no condition definitions; instructions "
                                               f"name condition {cond!r} (treated as always true)")
                else:
                    raise reader.error(f"{where}: condition {cond!r} is not defined by encoding {enc_name}",
                                       f"<InstructionName>{iname}</InstructionName>")
            for order, field_name, fmt, otype, _size, _inp, _out, implicit, _req in operands:
                owhere = f"{where}, operand {order}"
                if field_name and field_name not in enc_fields[enc_name] and not implicit:
                    raise reader.error(f"{owhere}: field {field_name!r} is not a field of {enc_name}",
                                       f"<InstructionName>{iname}</InstructionName>")
                if fmt and fmt not in formats:
                    raise reader.error(f"{owhere}: data format {fmt!r} is not defined",
                                       f"<DataFormatName>{fmt}</DataFormatName>")
                if otype and otype not in types:
                    raise reader.error(f"{owhere}: operand type {otype!r} is not defined",
                                       f"<OperandType>{otype}</OperandType>")


def _check_layout(reader: _Reader, data: dict) -> None:
    """Refuse a spec whose bit layouts cannot be what it claims, naming the element's path: every field inside
    its encoding's BitCount, no two fields of an encoding on the same bit (unless one is IsConditional: the XML
    says it exists only in some variants), each opcode within its encoding's OP field and unique per encoding
    and condition. A spec that broke these would assemble one instruction into another's bytes (an SDST field
    overlapping OP turned s_mov_b32 s1, s2 into s_mov_b64)."""
    op_width: dict[str, int] = {}
    seen_enc: set[str] = set()
    for e in data["encodings"]:
        name = e["name"]
        if name in seen_enc:   # the first definition is used (a warning says so)
            continue
        seen_enc.add(name)
        at = f"Spec/ISA/Encodings/Encoding[{name}]"
        bits = e["bit_count"]
        if bits > MAX_ENCODING_BITS:
            raise reader.error(f"{at}/BitCount: {bits} bits; encodings are at most {MAX_ENCODING_BITS}",
                               f"<EncodingName>{name}</EncodingName>")
        owner: dict[int, tuple[str, bool]] = {}
        for fname, ranges, conditional, *_ in e["fields"]:
            fat = f"{at}/MicrocodeFormat/BitMap/Field[{fname}]"
            for _order, offset, count, _pad, _padv in ranges:
                if offset + count > bits:
                    raise reader.error(f"{fat}: bits {offset}..{offset + count - 1} lie outside the encoding's "
                                       f"{bits} bits", f"<FieldName>{fname}</FieldName>")
                for bit in range(offset, offset + count):
                    other = owner.get(bit)
                    if other is not None and other[0] != fname and not (conditional or other[1]):
                        raise reader.error(f"{fat}: bit {bit} is also field {other[0]}'s (fields overlap; only "
                                           f"IsConditional fields may share bits)", f"<FieldName>{fname}</FieldName>")
                    owner[bit] = (fname, bool(conditional))
            if fname == "OP":
                op_width[name] = sum(r[2] for r in ranges)
    seen_op: dict[tuple[str, str, int], str] = {}
    for inst in data["instructions"]:
        iname = inst["name"]
        for enc_name, cond, opcode, _radix, _operands in inst["encodings"]:
            at = f"Spec/ISA/Instructions/Instruction[{iname}]/InstructionEncodings/InstructionEncoding[{enc_name}]"
            width = op_width.get(enc_name)
            if opcode < 0 or (width is not None and opcode >= 1 << width):
                accepted = f"0..{(1 << width) - 1} (the OP field is {width} bits)" if width is not None else ">= 0"
                raise reader.error(f"{at}/Opcode: {opcode} is not an opcode of {enc_name}; accepted: {accepted}",
                                   f"<InstructionName>{iname}</InstructionName>")
            key = (enc_name, cond, opcode)
            if key in seen_op and seen_op[key] != iname:
                raise reader.error(f"{at}/Opcode: {opcode} is also {seen_op[key]}'s in {enc_name}"
                                   + (f" (condition {cond})" if cond else ""),
                                   f"<InstructionName>{iname}</InstructionName>")
            seen_op.setdefault(key, iname)
