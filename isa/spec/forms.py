"""The spec compiled for assembling and disassembling: one `Form` per (instruction, encoding) pair, and the
indexes that select forms (by mnemonic for the assembler, by identifier bits for the decoder).

A form knows, from the spec alone, the identifier word of its opcode, the field values its encoding
condition pins down (SRC0 = 255 for a literal variant, 250 for DPP), the operand slots in syntax
order with the operand type, register count and data format of each, and which modifiers its
encoding has fields for. This module only builds and selects forms: putting an instruction into a form is
`encoder.encode_form`, reading one out of a word `decoder.decode_form`. The encoder tries the forms of a
mnemonic from the shortest; the decoder finds forms through identifier masks and conditions. Forms are
built once per spec and cached.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.instruction import Imm, Label, Reg
from jitgemm.isa.modifiers import cache_control, modifier_kinds
from jitgemm.isa.operand_values import TypeTable

from . import conditions as _expr
from .field_codec import FieldCodec, Mismatch, compile_condition, condition_equalities, field_mask
from .model import Encoding, InstructionEncoding, Spec
from .model import Instruction as SpecInstruction

__all__ = ["Form", "Slot", "SpecForms", "TypeTable", "fixed_operand", "forms_of"]


# --- slots --------------------------------------------------------------------------------------------

class Slot:
    """One operand position in syntax order, with everything needed to encode and decode it."""

    __slots__ = ("index", "fname", "codec", "table", "type_name", "nregs", "size", "elem_bits", "is_float",
                 "src", "literal", "acc", "acc_implied", "sdwa_s", "output", "kind", "hex", "signed_imm",
                 "data_format", "container", "fast", "decoded", "mod_spots", "width_field")

    def __repr__(self) -> str:
        return f"<Slot {self.index} {self.fname} {self.type_name} x{self.nregs} {self.kind}>"


_SRC_FIELD = re.compile(r"V?SRC(\d)\Z")


def _elem_bits(spec: Spec, data_format: str | None, size: int) -> tuple[int, bool]:
    df = spec.data_formats.get(data_format) if data_format else None
    if df is None or df.name == "FMT_ANY" or df.bit_count <= 1:
        bits, is_float = size, False
    else:
        bits = df.bit_count // max(1, df.component_count)
        is_float = df.data_type == "float"
    if bits < 16:  # 8-bit floats (fp8/bf8) and smaller travel in 32-bit operands
        return 32, is_float
    if bits <= 16:
        return 16, is_float
    if bits <= 32:
        return 32, is_float
    return 64, is_float


# --- forms --------------------------------------------------------------------------------------------

class Form:
    """One (instruction, encoding) pair ready to encode and decode."""

    __slots__ = ("spec_inst", "ie", "enc", "name", "suffix", "mnemonic", "family", "size", "base_word",
                 "fixed", "cond", "cond_name", "slots", "nsrc", "mods", "codecs", "defaults", "order",
                 "rank", "decode_fields", "ds_two", "smem", "mubuf", "flat_saddr", "lds_vdata", "scratch",
                 "sdwa_sd", "vop3p", "scale_mfma", "width_slots", "two_sources", "opsel_dst", "srcmods", "imm_hex",
                 "cond_fields",
                 "return_vdst", "return_flag", "label_slot", "packers", "default_bits", "unpackers",
                 "literal_optional", "mix", "bus", "hidden",
                 "smem_sgpr_mask", "optional_imm", "shared_literal", "zero", "zero_word")

    def __repr__(self) -> str:
        return f"<Form {self.mnemonic} {self.enc.name}/{self.cond_name}>"

    def fixed_by_identifier(self, fname: str) -> bool:
        """The field's bits all belong to the encoding's identifier (e.g. ABID of CDNA 4's scaled MFMA): no
        syntax may set it."""
        f = self.enc.fields.get(fname)
        return f is not None and not field_mask(f) & ~self.enc.identifier_mask


def fixed_operand(slot: Slot):
    """The operand a fixed slot (one with no field: `vcc` of v_addc_co_u32 e32) always is."""
    table = slot.table
    for key in table.by_key:
        if key[0] == "name":
            name = key[1]
            return Reg(name, 0, 2 if name in syn.PAIR_NAMES else 1)
        if key[0] == "pair":
            return Reg(key[1], 0, 2)
    return Label(table.name)


# --- building forms from the spec ---------------------------------------------------------------------

_FAMILY_RANK = {"e64": 1, "dpp": 2, "sdwa": 2}


def _build_form(spec: Spec, tables: dict, inst: SpecInstruction, ie: InstructionEncoding, enc: Encoding,
                families: set[str], id_by_op: dict) -> Form | None:
    fields = enc.fields
    op_codec = FieldCodec(fields["OP"], enc.name) if "OP" in fields else None
    if op_codec is None:
        return None
    form = Form()
    form.spec_inst = inst
    form.ie = ie
    form.enc = enc
    form.family = syn.encoding_family(enc.name)
    form.name = syn.llvm_name(inst.name, inst.aliases)
    form.suffix = _suffix(form.name, form.family, families)
    form.mnemonic = form.name + form.suffix
    form.size = enc.byte_count
    form.order = enc.order
    # among forms of one size LLVM's matcher takes VOP3 before SDWA/DPP (`v_mov_b32 v0, |v1|` is VOP3)
    form.rank = _FAMILY_RANK.get(form.family, 0)
    form.codecs = {name: FieldCodec(f, enc.name) for name, f in fields.items()}
    base = id_by_op.get(ie.opcode)
    if base is None:
        base = (enc.identifiers[0] & ~field_mask(fields["OP"])) if enc.identifiers else 0
        base |= op_codec.pack(ie.opcode)
    cond = enc.condition(ie.condition_name) if ie.condition_name else None
    expression = cond.expression if cond is not None else None
    form.cond_name = ie.condition_name or "default"
    form.fixed = condition_equalities(expression)
    for name, value in form.fixed.items():
        if name in form.codecs:
            base |= form.codecs[name].pack(value & ((1 << form.codecs[name].width) - 1))
    form.base_word = base
    # fields the identifier fixes (OP, ENCODING, SEG, ...) are known to a condition too (`OP in [23, 24]`)
    known = {name: form.codecs[name].unpack(base) for name in _expr.referenced_fields(expression)
             if name in form.codecs and not field_mask(fields[name]) & ~enc.identifier_mask}
    known.update(form.fixed)
    form.cond = compile_condition(expression, known) if expression is not None else None
    form.cond_fields = tuple(sorted(n for n in _expr.referenced_fields(expression) if n in form.codecs))
    form.ds_two = syn.ds_two_offsets(form.name)
    form.smem = "IMM" in fields and "OFFSET" in fields and "SBASE" in fields
    # IMM = 0: the SGPR-offset register number sits in OFFSET's low bits, as wide as the SOFFSET field
    form.smem_sgpr_mask = (1 << fields["SOFFSET"].width) - 1 \
        if form.smem and "SOFFSET" in fields and fields["SOFFSET"].width < fields["OFFSET"].width else -1
    form.mubuf = "OFFEN" in fields and "IDXEN" in fields and "VADDR" in fields
    form.scratch = "SVE" in fields and "SCRATCH" in enc.name.upper()
    form.sdwa_sd = "SD" in fields and "SDST" in fields
    form.vop3p = "NEG_HI" in fields
    # CDNA 4 block-scaled MFMA (ENC_VOP3PX2): op_sel/op_sel_hi pick the scale bytes; LLVM's syntax for them
    # differs from other VOP3P forms (see modifiers.py)
    form.scale_mfma = "SCALE_SRC0" in fields and "SCALE_SRC1" in fields
    form.mix = form.vop3p and syn.is_vop3p_mix(form.name)
    form.imm_hex = "SDST" in fields and "SIMM16" in fields
    slots = _slots(spec, tables, form, ie, fields)
    _adapt_slots(form, slots, fields)
    unwritten = _source_modifiers(spec, form, slots, fields)
    _constant_bus(spec, form, slots)
    form.mods = modifier_kinds(form, fields, spec)
    read = _read_fields(form, slots, fields)
    form.hidden, form.zero = _required_zero(spec, form, fields, _hidden_bits(form, fields, unwritten, read), read,
                                               unwritten)
    if form.hidden:
        form.mods["keep_bits"] = "keep_bits"
    _defaults(form, fields)
    form.zero_word = _zero_word(form)
    form.decode_fields = tuple(sorted(read | {f for f, _bits in form.hidden}
                                      | ({z[0] for z in form.zero} if form.zero_word is None else set())))
    form.unpackers = tuple((n, form.codecs[n].simple, form.codecs[n].offset, form.codecs[n].mask, form.codecs[n])
                           for n in form.decode_fields)
    return form


def _slots(spec: Spec, tables: dict, form: Form, ie: InstructionEncoding, fields) -> list[Slot]:
    """The operands the syntax writes (not implicit ones), in syntax order, each with its field, type and kind."""
    visible = sorted((o for o in ie.operands if not o.implicit), key=lambda o: o.order)
    slots: list[Slot] = []
    for i, o in enumerate(visible):
        slot = Slot()
        slot.index = i
        slot.fname = o.field_name
        slot.codec = form.codecs.get(o.field_name) if o.field_name else None
        slot.type_name = o.operand_type
        slot.table = tables.get(o.operand_type) if o.operand_type else None
        slot.size = o.size or 32
        slot.nregs = max(1, (slot.size + 31) // 32)
        slot.elem_bits, slot.is_float = _elem_bits(spec, o.data_format, slot.size)
        # constants: a 16-bit operand only when its elements are 16-bit; 8-bit data travels in 32 bits
        # (scalar ALU operands are whole 32-bit registers, so only VALU encodings have 16-bit constants)
        slot.container = 16 if slot.size <= 16 and slot.elem_bits == 16 and form.family \
            and (form.name, len([s for s in slots if s.src is not None])) not in syn.INT16_AS_INT32 \
            else (64 if slot.size > 32 else 32)
        slot.data_format = o.data_format
        slot.output = o.output and not o.input
        slot.signed_imm = bool(o.data_format and re.match(r"FMT_NUM_I\d", o.data_format))
        slot.hex = False
        m = _SRC_FIELD.match(o.field_name or "")
        slot.src = int(m.group(1)) if m and o.input else None
        slot.literal = o.field_name == "LITERAL"
        slot.acc = None
        slot.acc_implied = False
        slot.sdwa_s = None
        if slot.literal:
            slot.kind = "literal"
        elif slot.codec is None:
            slot.kind = "fixed"
        elif slot.table is None:
            slot.kind = "parts"
        elif slot.table.partitioned:
            slot.kind = "label" if "TARGET" in slot.table.parts and len(slot.table.parts) == 1 else "parts"
        else:
            slot.kind = "reg"
        if slot.kind == "reg" and slot.table.acc:
            if slot.table.acc_only and not _acc_field_for(fields, o.field_name, slot.src):
                slot.acc_implied = True
            else:
                slot.acc = _acc_field_for(fields, o.field_name, slot.src)
                if slot.acc is None:
                    slot.acc_implied = slot.table.acc_only
        if slot.kind == "reg" and slot.src is not None and o.field_name.startswith("VSRC") \
                and f"S{slot.src}" in fields:
            slot.sdwa_s = f"S{slot.src}"
        slots.append(slot)
    form.optional_imm = None
    fname = syn.OPTIONAL_IMMEDIATES.get(form.name)
    if fname in fields and all(s.fname != fname for s in slots):
        slot = Slot()
        slot.index, slot.fname, slot.codec, slot.kind = len(slots), fname, form.codecs[fname], "parts"
        slot.type_name = slot.table = slot.data_format = slot.src = slot.acc = slot.sdwa_s = None
        slot.size, slot.nregs, slot.elem_bits, slot.container = 16, 1, 16, 32
        slot.is_float = slot.output = slot.signed_imm = slot.hex = slot.literal = slot.acc_implied = False
        form.optional_imm = slot
        slots.append(slot)
    return slots


def _adapt_slots(form: Form, slots: list[Slot], fields) -> None:
    """Syntax adapters keyed on the encoding's fields (MUBUF/FLAT addresses, SMEM offsets, SDWA SDST, returning
    atomics, f8f6f4 widths), then the slot facts the encoder and decoder read."""
    form.lds_vdata = None
    form.flat_saddr = None
    for slot in slots:
        if form.mubuf and slot.fname == "VADDR":
            slot.kind = "vaddr"
        elif slot.fname == "SADDR" and slot.kind == "reg":
            slot.kind = "saddr"
            form.flat_saddr = slot.index
        elif form.smem and slot.fname in ("SOFFSET", "OFFSET") and slot.kind == "reg":
            slot.kind = "smem_offset"
        elif form.sdwa_sd and slot.fname == "SDST":
            slot.kind = "sdwa_sdst"
        if form.mubuf and slot.fname == "VDATA" and "LDS" in fields:
            form.lds_vdata = slot
    for slot in slots:
        if slot.fname == "ADDR" and slot.kind == "reg" and (form.flat_saddr is not None or form.scratch):
            slot.kind = "flat_addr"
    # Memory atomics (a VDST and a DATA operand in one address encoding) write VDST only when they
    # return the old value, which LLVM selects with sc0 (glc on older targets): no VDST operand without it.
    form.return_vdst = None
    form.return_flag = None
    names = {s.fname for s in slots}
    if "VDST" in names and "DATA" in names and "ADDR" in names:
        for flag in ("sc0", "glc"):
            if syn.FLAG_FIELDS[flag] in fields:
                form.return_vdst = next(s for s in slots if s.fname == "VDST")
                form.return_flag = flag
                break
    for slot in slots:
        # f8f6f4 MFMA A/B: the register count follows the format CBSZ (A) / BLGP (B) selects
        slot.width_field = syn.F8F6F4_WIDTH_FIELDS.get(slot.fname) \
            if slot.data_format == syn.F8F6F4_OPERAND_FORMAT and slot.kind == "reg" else None
        if slot.width_field not in fields:
            slot.width_field = None
        slot.decoded = {} if (slot.kind == "reg" and slot.acc is None and not slot.acc_implied
                              and slot.sdwa_s is None and slot.width_field is None) else None
        slot.fast = _fast_values(slot)
    form.width_slots = tuple(s for s in slots if s.width_field is not None)
    # A literal that stands in for a source field (the condition sets that field to SRC_LITERAL) is
    # optional: inline constants take the plain encoding. Otherwise the encoding always carries it.
    form.literal_optional = any(s.literal and s.table is not None and s.table.literal is not None
                                and s.table.literal in form.fixed.values() for s in slots)
    # An encoding that always carries a literal (VOP2_MK_LITERAL, VOP2_AK_LITERAL: fmamk's K) may also name it
    # from a 32-bit source field (SRC0 = SRC_LITERAL): LLVM prints the literal there too and llvm-mc-22 takes
    # `v_fmamk_f32 v1, 0x11223344, 0x11223344, v3` (one unique literal). 16-bit sources print the literal's low
    # half, which the encoder cannot yet tie to the K dword: they keep the old reading.
    form.shared_literal = any(s.literal for s in slots) and not form.literal_optional and any(
        s.kind == "reg" and s.src is not None and s.table is not None and s.table.literal is not None
        and s.container == 32 for s in slots)
    form.slots = tuple(slots)
    form.label_slot = next((s for s in slots if s.kind == "label"), None)
    form.nsrc = sum(1 for s in slots if s.src is not None)
    form.two_sources = any(s.src == 1 for s in slots)
    form.opsel_dst = "OP_SEL" in fields and not form.vop3p and fields["OP_SEL"].width > form.nsrc \
        and form.name not in syn.OPSEL_PER_BIT


def _source_modifiers(spec: Spec, form: Form, slots: list[Slot], fields) -> dict[str, int]:
    """Where each source's neg/abs/sext bits are (form.srcmods, slot.mod_spots); returns the NEG/ABS bits of
    integer sources, which LLVM's syntax does not write (kept, see _hidden_bits)."""
    form.srcmods = {}
    if form.mix:   # mixed-precision VOP3P: NEG is `-x`, NEG_HI is `|x|` per source (LLVM's syntax)
        for s in slots:
            if s.src is not None:
                for flag, fname in (("neg", "NEG"), ("abs", "NEG_HI")):
                    if fname in fields and fields[fname].width > s.src:
                        form.srcmods[(flag, s.src)] = (fname, s.src)
    unwritten: dict[str, int] = {}   # NEG/ABS bits of integer sources: LLVM has no `-x`/`|x|` for them
    if not form.mix and not form.vop3p and form.name not in syn.BITOP3_MNEMONICS:
        # LLVM's VOPProfile gives float modifiers to sources of float type (f16/f32/f64: isFloatType) and sext to
        # integer ones; in VOP3 only when the first source is float (HasModifiers), then to every source
        # (SIInstrInfo.td VOPProfile HasSrc0Mods/HasSrc1Mods). Untyped bits (B32) and fp8/bf8 are integers there.
        # syn.LLVM_FLOAT_MODS: instructions whose profile gives float modifiers to untyped sources.
        sources = [s for s in slots if s.src is not None]
        every = form.name in syn.LLVM_FLOAT_MODS
        vop3_mods = form.family != "e64" or every or not sources or _float_source(spec, sources[0].data_format)
        if form.name in syn.LLVM_NO_SOURCE_MODS:
            vop3_mods = False
        elif form.name in syn.LLVM_FORCED_MODS:
            vop3_mods = True
        for s in sources:
            is_float = (every and s.src < 2) or _float_source(spec, s.data_format)
            for flag, fname in (("neg", "NEG"), ("abs", "ABS")):
                if fname in fields and fields[fname].width > s.src:
                    if is_float and vop3_mods:
                        form.srcmods[(flag, s.src)] = (fname, s.src)
                    else:
                        unwritten[fname] = unwritten.get(fname, 0) | 1 << s.src
            for flag, fname in (("neg", f"SRC{s.src}_NEG"), ("abs", f"SRC{s.src}_ABS"),
                                ("sext", f"SRC{s.src}_SEXT")):
                if fname in fields:
                    if flag == "sext":
                        if not is_float:   # a float source's SEXT is no syntax: unused, must be zero
                            form.srcmods[(flag, s.src)] = (fname, 0)
                    elif is_float:
                        form.srcmods[(flag, s.src)] = (fname, 0)
                    else:
                        unwritten[fname] = 1
    if form.name in syn.BITOP3_MNEMONICS:  # NEG/ABS/OMOD hold the truth table here, not source modifiers
        form.srcmods = {}
    for s in slots:
        spots = tuple(form.srcmods.get((flag, s.src)) for flag in ("neg", "abs", "sext")) if s.src is not None \
            else (None, None, None)
        s.mod_spots = spots if any(spot is not None for spot in spots) else None
    return unwritten


def _constant_bus(spec: Spec, form: Form, slots: list[Slot]) -> None:
    """The VALU sources that may read the constant bus, and the target's limit (checked by the encoder)."""
    enc = form.enc
    form.bus = None
    if "VOP" in enc.name.upper():
        spots = tuple((s.fname, None if s.kind == "literal" else s.table.scalar_values, s.sdwa_s) for s in slots
                      if not s.output and s.fname and s.table is not None
                      and (s.kind == "literal" or (s.src is not None and s.table.scalar_values)))
        implicit = any(s.fname is None and not s.output for s in slots)
        if len(spots) + implicit > 1:
            form.bus = (syn.constant_bus_limit(spec.architecture.name), spots)


def _defaults(form: Form, fields) -> None:
    """Field values an unwritten modifier stands for (SDWA selects, DPP masks, VOP3P op_sel_hi, buffer format)."""
    defaults = {}
    written_by = {"DST_SEL": "dst_sel", "DST_UNUSED": "dst_unused", "SRC0_SEL": "src0_sel", "SRC1_SEL": "src1_sel",
                  "ROW_MASK": "row_mask", "BANK_MASK": "bank_mask"}
    for fname, value in syn.FIELD_DEFAULTS.items():
        if fname in fields and written_by.get(fname, "") in form.mods:
            defaults[fname] = value
    if "DST_SEL" in fields and form.name in syn.SDWA_NO_DST_SEL:
        defaults["DST_SEL"] = syn.SDWA_SEL["DWORD"]
    if form.vop3p and "OP_SEL_HI" in fields and not form.mix and not form.scale_mfma:
        defaults["OP_SEL_HI"] = (1 << fields["OP_SEL_HI"].width) - 1
    if "format" in form.mods:
        defaults["DFMT"], defaults["NFMT"] = syn.BUF_FORMAT_DEFAULT
    form.defaults = defaults
    form.default_bits = tuple((name, form.codecs[name].pack(value)) for name, value in defaults.items())
    form.packers = {name: (c.offset, c.width) for name, c in form.codecs.items() if c.simple}


def _read_fields(form: Form, slots: list[Slot], fields) -> set[str]:
    """The fields this form's operands and modifiers read (the decoder unpacks them, with the kept ones)."""
    needed = set()
    for s in slots:
        if s.fname:
            needed.add(s.fname)
        if s.acc:
            needed.add(s.acc[0])
        if s.sdwa_s:
            needed.add(s.sdwa_s)
    # a cache control reads none of its address fields; an SMEM instruction without an address (s_dcache_*,
    # s_memtime) none of its offset fields; LDS only where LLVM has the lds variant (modifier_kinds)
    addressless_smem = form.smem and not any(s.fname == "SBASE" for s in slots)
    for name in ("OFFEN", "IDXEN", "SVE", "SD", "IMM", "SOFFSET_EN", "OFFSET", "LDS", "SOFFSET"):
        if name in fields and not cache_control(form) and not (name == "LDS" and "lds" not in form.mods) \
                and not (addressless_smem and name in ("IMM", "SOFFSET_EN", "OFFSET", "SOFFSET")):
            needed.add(name)
    for fname, _bit in form.srcmods.values():
        needed.add(fname)
    for name in form.mods:
        for table in (syn.FLAG_FIELDS, syn.INT_FIELDS, syn.LIST_FIELDS, syn.SEL_FIELDS):
            if name in table and table[name] in fields:
                needed.add(table[name])
    if "neg" in form.mods:   # an f64 MFMA's neg:[a,b,c] is its BLGP field
        needed.add("BLGP")
    if "bitop3" in form.mods:
        needed.update(f for f, _first, _width in syn.BITOP3_FIELDS if f in fields)
    for name in ("DST_UNUSED", "DPP_CTRL", "BOUND_CTRL", "LITERAL", "DFMT", "NFMT"):
        if name in fields:
            needed.add(name)
    if "OFFSET0" in fields and ({"offset", "offset0"} & set(form.mods)):
        needed.update(f for f in ("OFFSET0", "OFFSET1") if f in fields)
    if "OMOD" in fields and ("mul" in form.mods or "bitop3" in form.mods):
        needed.add("OMOD")
    return needed


def _float_source(spec: Spec, data_format: str | None) -> bool:
    """Floats of 16 bits or more (LLVM's isFloatType: f16, f32, f64 and their packed forms)."""
    df = spec.data_formats.get(data_format) if data_format else None
    return df is not None and df.data_type == "float" and df.bit_count // max(1, df.component_count) >= 16


def _integer_data(spec: Spec, data_format: str | None) -> bool:
    """The operand holds integers (FMT_NUM_I*/U*, packed or not): LLVM gives such a source no float input
    modifiers (AMDGPUAsmParser: `-v1`/`|v1|` are invalid there, llvm-objdump prints none)."""
    df = spec.data_formats.get(data_format) if data_format else None
    return df is not None and df.data_type == "integer"


def _hidden_bits(form: Form, fields, unwritten: dict[str, int], read: set[str]) -> tuple[tuple[str, int], ...]:
    """(field, bits) of the encoding that LLVM decodes into no syntax for this instruction. The decoder keeps
    them in the unprinted `keep_bits` modifier, so a decoded instruction re-encodes to its bytes while its text
    is LLVM's (and the assembler, as llvm-mc, offers no syntax for them). A field nothing of the form reads
    (SIMM16 of s_endpgm, which AMD's spec gives no operand) is kept whole."""
    hidden = dict(unwritten)
    ident = form.enc.identifier_mask
    for name, f in fields.items():
        if name not in read and name not in form.fixed and field_mask(f) & ~ident:
            hidden[name] = (1 << f.width) - 1
    if form.scale_mfma:
        for fname, bits in syn.SCALE_MFMA_HIDDEN:
            if fname in fields:
                hidden[fname] = hidden.get(fname, 0) | bits
    if "OP_SEL" in fields and not form.vop3p and "op_sel" not in form.mods:
        flags = sum(1 << bit for name, bit in syn.OPSEL_DPP_FLAGS.get(form.name, {}).items() if name in form.mods)
        hidden["OP_SEL"] = (1 << fields["OP_SEL"].width) - 1 & ~flags
    if form.smem and "GLC" in fields and "glc" not in form.mods:
        hidden["GLC"] = 1
    if form.smem_sgpr_mask != -1:   # OFFSET above the SGPR number it names when IMM = 0
        hidden["OFFSET"] = (1 << fields["OFFSET"].width) - 1 & ~form.smem_sgpr_mask
    return tuple(sorted(hidden.items()))


def _required_zero(spec: Spec, form: Form, fields, hidden: tuple[tuple[str, int], ...], read: set[str],
                   unwritten: dict[str, int]) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int, str], ...]]:
    """Split the bits the form gives no syntax into those LLVM decodes and ignores (kept, `hidden`) and those
    it requires to be zero (`zero`: a word with one of them set is no instruction, printed `.long` with the
    reason). The rule, from the spec's fields and operands, checked bit by bit against llvm-objdump-22 on every
    form (tests/isa/test_disasm_zero_fields.py): a field the form's operands and modifiers do not use must be
    zero, and so must the source-modifier bits (NEG/ABS/NEG_HI/OP_SEL, SRCn_NEG/ABS/SEXT/SEL) of a source the
    instruction does not have — LLVM's encoding classes write `!if(P.HasSrcN, ..., 0)` for them
    (llvm/lib/Target/AMDGPU/VOPInstructions.td: VOP3a, VOP3Pe, VOP_SDWAe; DSInstructions.td DS_Real: data0/data1/
    vdst/addr `!if(has_..., ..., 0)`; FLATInstructions.td FLAT_Real: saddr `!if(has_saddr, ..., 0)`), so the
    generated decoder tables check them. Exceptions, where LLVM's classes leave the bits unchecked (`?`) or decode
    them into nothing: syn.LLVM_IGNORED_FIELDS per encoding, and the integer-source NEG/ABS of an instruction
    whose first source takes float modifiers (v_ldexp_f32: LLVM's profile gives every source modifiers then)."""
    zero: dict[str, int] = {}
    kept: dict[str, int] = {}
    ignored = syn.LLVM_IGNORED_FIELDS.get(form.enc.name, ())
    float_mods = any(flag in ("neg", "abs") for flag, _src in form.srcmods)
    vop3 = form.family == "e64" and not form.vop3p
    why: dict[str, str] = {}
    # the sources of syn.LLVM_HIDDEN_INT_MODS LLVM decodes with their NEG/ABS bits unprinted
    hidden_int = syn.LLVM_HIDDEN_INT_MODS.get(form.name)
    if form.name in syn.BITOP3_MNEMONICS and "op_sel" not in form.mods:
        ignored = ignored - {"OP_SEL"}   # v_bitop3: LLVM checks OP_SEL (no op_sel operand, bits 0)
    for name, bits in hidden:
        if name in ignored or form.scale_mfma and any(name == f for f, _b in syn.SCALE_MFMA_HIDDEN):
            kept[name] = bits
        elif name in unwritten:
            if hidden_int is not None and name in ("NEG", "ABS"):
                if bits & hidden_int:
                    kept[name] = bits & hidden_int
                if bits & ~hidden_int:
                    zero[name] = bits & ~hidden_int
            elif hidden_int is not None or (vop3 and float_mods and form.name not in syn.LLVM_SRC0_MODS_ONLY
                                            and form.name not in syn.LLVM_FLOAT_MODS):
                kept[name] = bits
            else:   # neg/abs of an integer source: LLVM's DPP/SDWA/VOP3 profile has none there
                zero[name] = bits
                why[name] = "is set on an integer source, which has no neg/abs"
        elif name not in read:   # a field nothing of the form uses
            zero[name] = bits
        else:
            kept[name] = bits
    # the list-modifier and source-modifier bits of sources the instruction does not have
    if form.name not in syn.BITOP3_MNEMONICS and not form.scale_mfma and form.name not in syn.OPSEL_PER_BIT \
            and (vop3 or form.vop3p):
        nsrc = form.nsrc
        for fname in ("NEG", "ABS", "NEG_HI", "OP_SEL"):
            f = fields.get(fname)
            if f is None or fname in ignored or fname not in read or (fname == "OP_SEL" and "op_sel" not in form.mods):
                continue
            if form.vop3p and {"NEG": "neg_lo", "NEG_HI": "neg_hi"}.get(fname, "op_sel") not in form.mods:
                continue   # a VOP3P field with no syntax here (v_mfma_ld_scale_b32's NEG): LLVM ignores it
            extra = ((1 << f.width) - 1) & ~((1 << nsrc) - 1)
            if fname == "OP_SEL" and form.opsel_dst:
                extra &= ~(1 << (f.width - 1))
            extra &= ~kept.get(fname, 0)
            if extra:
                zero[fname] = zero.get(fname, 0) | extra
    if not form.scratch and "SVE" in fields and not form.fixed_by_identifier("SVE"):
        zero["SVE"] = 1   # FLAT and global forms: SVE is scratch's (FLATInstructions.td: sve = 0 elsewhere)
    return tuple(sorted(kept.items())), tuple(sorted((f, bits, why.get(f, "")) for f, bits in zero.items()))


def _packed_integer(spec: Spec, data_format: str | None) -> bool:
    df = spec.data_formats.get(data_format) if data_format else None
    return df is not None and df.data_type == "integer" and df.component_count > 1


def _zero_word(form: Form) -> tuple[int, int] | None:
    """The required bits as (mask, value) over the word, when all their fields are contiguous; else None. The value
    is 0 except for a field with a default (DST_SEL of an SDWA form without dst_sel: DWORD, as llvm-mc encodes it)."""
    mask = value = 0
    for name, bits, _why in form.zero:
        codec = form.codecs[name]
        if not codec.simple:
            return None
        mask |= bits << codec.offset
        value |= (form.defaults.get(name, 0) & bits) << codec.offset
    return mask, value


def _fast_values(slot: Slot) -> dict | None:
    """Encoded values of a plain register slot for the encoder's fast path: registers starting a legal
    range of the slot's width, keyed (kind, first index), and inline constants keyed like Imm._key(),
    whenever the value fits the field as is (no ACC/SDWA bits to place)."""
    if slot.kind != "reg" or slot.acc is not None or slot.acc_implied or slot.sdwa_s is not None \
            or slot.codec is None:
        return None
    width = slot.codec.width
    n = slot.nregs
    memo = slot.table.fast_values  # slots of one type, width, register count and element size share one
    fast = memo.get((width, n, slot.elem_bits))
    if fast is not None:
        return fast
    by_key = slot.table.by_key
    fast = memo[(width, n, slot.elem_bits)] = {}
    for key, value in by_key.items():
        if key[0] in ("s", "v", "a", "ttmp") and not value >> width:
            kind, first = key
            if n > 1:
                align = 2 if kind in ("v", "a") else min(4, n)
                if first % align or (kind, first + n - 1) not in by_key:
                    continue
            fast[key] = value
    for number, value in slot.table.ints.items():
        if not value >> width:
            fast[Imm(number)._key()] = value
    for number, value in slot.table.floats.items():
        if number and not value >> width:
            fast[Imm(syn.inline_float_value(float(number), slot.elem_bits))._key()] = value
    return fast


def _acc_field_for(fields, field_name: str | None, src: int | None) -> tuple[str, int] | None:
    """Where the AGPR bit of an operand goes: ACC_CD for the C/D matrices (VDST, SRC2) when the
    encoding has it, else bit `src` of a multi-bit ACC field (A/B sources), else the single ACC bit."""
    if field_name is None:
        return None
    if "ACC_CD" in fields and field_name in ("VDST", "SRC2"):
        return ("ACC_CD", 0)
    acc = fields.get("ACC")
    if acc is None:
        return None
    if acc.width == 1:
        return ("ACC", 0)
    if src is not None and src < acc.width:
        return ("ACC", src)
    return None


def _suffix(name: str, family: str, families: set[str]) -> str:
    """LLVM's mnemonic suffix of a form: _dpp/_sdwa always, _e32/_e64 when the instruction has both."""
    if name in syn.NO_SUFFIX:
        return ""
    if family in ("dpp", "sdwa"):
        return "_" + family
    if family in ("e32", "e64") and {"e32", "e64"} <= families:
        return "_" + family
    return ""


def _mnemonic_keys(spec_name: str, aliases: tuple[str, ...], family: str, families: set[str]) -> list[str]:
    """Every spelling the assembler accepts for one form: LLVM's name, the spec's name and aliases, with and
    without the encoding suffix where LLVM allows both."""
    name = syn.llvm_name(spec_name, aliases)
    suffix = _suffix(name, family, families)
    keys = []
    for n in {name, spec_name.lower(), *(a.lower() for a in aliases)}:
        if family in ("dpp", "sdwa"):
            keys.append(f"{n}_{family}")
            if suffix:
                continue
        keys.append(n)
        if family in ("e32", "e64"):
            keys.append(f"{n}_{family}")
    return keys


class _TypeTables(dict):
    """Operand-type tables made on first use (the official spec has thousands of predefined values)."""

    def __init__(self, spec: Spec) -> None:
        super().__init__()
        self._spec = spec

    def get(self, name, default=None):
        if name in self:
            return self[name]
        ot = self._spec.operand_types.get(name)
        if ot is None:
            return default
        table = TypeTable(ot, self._spec.operand_types)
        self[name] = table
        return table


class _LazyForms(dict):
    """One mask's identifier table: identifier value -> candidate forms, in decode order. Built from cached
    (instruction, encoding) coordinates, a form is made the first time a word needs it."""

    def __init__(self, owner: SpecForms, pairs: dict[int, list[tuple[int, int]]]) -> None:
        super().__init__()
        self._owner = owner
        self._pairs = pairs

    def get(self, key, default=None):
        found = dict.get(self, key)
        if found is None:
            pairs = self._pairs.get(key)
            if pairs is None:
                return default
            found = [f for f in (self._owner._form(i, j) for i, j in pairs) if f is not None]
            self[key] = found
        return found

    def __contains__(self, key) -> bool:
        return key in self._pairs

    def __iter__(self):
        return iter(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __getitem__(self, key):
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found


class SpecForms:
    """The forms of a spec, indexed for the assembler (by mnemonic) and the decoder (by identifier).

    Forms are built on demand: assembling a kernel builds only the forms of the mnemonics it uses (a code
    generator touches a few dozen of the official spec's 1,150 instructions); the first decode builds them
    all, for the identifier index."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.tables = _TypeTables(spec)
        self._id_by_op: dict[str, dict[int, int]] = {}
        for enc in spec.encodings.values():
            op = enc.fields.get("OP")
            table: dict[int, int] = {}
            if op is not None:
                for ident in enc.identifiers:
                    table.setdefault(op.extract(ident), ident)
            self._id_by_op[enc.name] = table
        # from the instructions' heads (name, aliases, encodings): no instruction is built until a form needs it
        self._families = [{syn.encoding_family(enc) for enc, _opcode in pairs}
                          for _name, _aliases, pairs in spec.instructions.heads]
        self._built: dict[tuple[int, int], Form | None] = {}
        self._problem_of: dict[tuple[int, int], str] = {}
        self._by_mnemonic: dict[str, list[Form]] = {}
        self._complete = False
        self._decode_ready = False
        self.encode_cache: dict = {}
        self.encoded_by: dict = {}      # instruction (no label operand) -> the form encode_items chose for it
        self.decode_cache: dict = {}
        self.knows_every_opcode: bool | None = None   # release.knows_every_opcode, set by the decoder on first use

    def _mnemonic_plan(self) -> dict[str, list[tuple[int, int]]]:
        """Every spelling the assembler accepts -> the (instruction, encoding) forms it names; made on first use
        (a disassembler never spells a mnemonic)."""
        plan: dict[str, list[tuple[int, int]]] = {}
        for i, (name, aliases, pairs) in enumerate(self.spec.instructions.heads):
            for j, (enc, _opcode) in enumerate(pairs):
                for key in _mnemonic_keys(name, aliases, syn.encoding_family(enc), self._families[i]):
                    plan.setdefault(key, []).append((i, j))
        return plan

    def _form(self, i: int, j: int) -> Form | None:
        key = (i, j)
        if key in self._built:
            return self._built[key]
        inst = self.spec.instructions[i]
        ie = inst.encodings[j]
        enc = self.spec.encodings.get(ie.encoding_name)
        form = None
        if enc is None:
            self._problem_of[key] = f"{inst.name}: encoding {ie.encoding_name} is not in the spec"
        else:
            try:
                form = _build_form(self.spec, self.tables, inst, ie, enc, self._families[i],
                                   self._id_by_op[enc.name])
                if form is None:
                    self._problem_of[key] = f"{inst.name} in {enc.name}: encoding has no OP field"
            except (Mismatch, KeyError, ValueError) as exc:
                self._problem_of[key] = f"{inst.name} in {enc.name}: {exc}"
        self._built[key] = form
        return form

    def forms_for(self, mnemonic: str) -> list[Form] | None:
        """The forms spelled `mnemonic` (exact, else lower case), shortest first; None for an unknown name."""
        for key in (mnemonic, mnemonic.lower()):
            found = self._by_mnemonic.get(key)
            if found is not None:
                return found
            pairs = self._plan.get(key)
            if pairs is not None:
                forms = [f for f in (self._form(i, j) for i, j in pairs) if f is not None]
                if not forms:
                    return None
                forms.sort(key=lambda f: (f.size, f.rank, f.order))
                self._by_mnemonic[key] = forms
                return forms
        return None

    def iter_forms(self, mnemonic: str) -> Iterator[Form] | None:
        """The forms `forms_for` gives, in its order, each built only when the caller reaches it (the encoder
        and the emitter's hazard facts stop at the first that fits: a new process then builds about one form per
        mnemonic instead of all of its e32/e64/DPP/SDWA forms, issue 31); None for an unknown name."""
        for key in (mnemonic, mnemonic.lower()):
            found = self._by_mnemonic.get(key)
            if found is not None:
                return iter(found)
            pairs = self._plan.get(key)
            if pairs is not None:
                return self._lazy(key, pairs)
        return None

    def _lazy(self, key: str, pairs: list[tuple[int, int]]) -> Iterator[Form]:
        heads = self.spec.instructions.heads
        ranked = sorted(pairs, key=lambda p: self._rank_key(heads[p[0]][2][p[1]][0]))
        for i, j in ranked:
            form = self._form(i, j)
            if form is not None:
                yield form
        self.forms_for(key)          # all built now: keep the list as forms_for would

    def _rank_key(self, encoding_name: str) -> tuple:
        """forms_for's order of a form, from its encoding alone (an encoding the spec lacks makes no form)."""
        enc = self.spec.encodings.get(encoding_name)
        if enc is None:
            return (0, 0, 0)
        return (enc.byte_count, _FAMILY_RANK.get(syn.encoding_family(enc.name), 0), enc.order)

    def _build_all(self) -> None:
        if self._complete:
            return
        for key in self._plan:
            self.forms_for(key)
        self._complete = True

    @property
    def by_mnemonic(self) -> dict[str, list[Form]]:
        self._build_all()
        return self._by_mnemonic

    @property
    def forms(self) -> list[Form]:
        """Every form, in spec order."""
        self._build_all()
        return [self._built[k] for k in sorted(self._built) if self._built[k] is not None]

    @property
    def problems(self) -> list[str]:
        self._build_all()
        return [self._problem_of[k] for k in sorted(self._problem_of)]

    def __getattr__(self, name: str):
        # the decoder's indexes are made on first use (from the disk cache, else from every form)
        if name in ("decode_index", "decode_by_top", "max_size") and not self.__dict__.get("_decode_ready"):
            self._build_decode_index()
            self._decode_ready = True
            return getattr(self, name)
        if name == "probes":
            self.probes = self._build_probes()
            return self.probes
        if name in ("_plan", "mnemonics"):
            self._plan = self._mnemonic_plan()
            self.mnemonics = tuple(sorted(self._plan))
            return getattr(self, name)
        raise AttributeError(name)

    def _decode_index_data(self) -> dict:
        """The identifier index as plain data (see `decode_index`): built from every form of the spec."""
        all_forms = self.forms
        where = {id(form): key for key, form in self._built.items() if form is not None}
        by_mask: dict[int, dict[int, list[Form]]] = {}
        for form in all_forms:
            mask = form.enc.identifier_mask
            key = form.base_word & mask
            by_mask.setdefault(mask, {}).setdefault(key, []).append(form)
        for table in by_mask.values():
            for forms in table.values():
                forms.sort(key=lambda f: (f.order, f.size))
        ordered = sorted(by_mask.items(), key=lambda kv: -bin(kv[0]).count("1"))
        # First-level dispatch on the top 9 bits of the first word: which masks can match at all.
        by_top: dict[int, list[int]] = {}
        for index, (mask, table) in enumerate(ordered):
            tops = set()
            for key in table:
                low = key & 0xFFFFFFFF
                free = ~mask & 0xFF800000
                base = low & 0xFF800000
                if not free & 0xFF800000:
                    tops.add(base >> 23)
                else:
                    tops.update(top for top in range(512) if (top << 23) & ~free & 0xFF800000 == base & ~free)
            for top in tops:
                by_top.setdefault(top, []).append(index)
        return {
            "masks": [[format(mask, "x"), [[format(key, "x"), [list(where[id(f)]) for f in forms]]
                                           for key, forms in table.items()]] for mask, table in ordered],
            "by_top": [[top, idxs] for top, idxs in sorted(by_top.items())],
            "max_size": max((f.size for f in all_forms), default=4),
        }

    def _build_decode_index(self) -> None:
        from jitgemm.isa.disasm import decode_index

        sha = self.spec.sha256
        data = decode_index.load(sha) if sha else None
        if data is None:
            data = self._decode_index_data()
            if sha:
                decode_index.store(sha, data)
        tables = tuple((int(mask, 16), _LazyForms(self, {int(key, 16): [tuple(p) for p in pairs]
                                                         for key, pairs in rows}))
                       for mask, rows in data["masks"])
        self.decode_index = tables
        self.decode_by_top = {top: tuple(tables[i] for i in idxs) for top, idxs in data["by_top"]}
        self.max_size = data["max_size"]

    def _build_probes(self) -> tuple:
        """For words whose opcode the spec does not define: which encoding (hence size) they are in, from the
        identifier bits outside the OP field and the encoding's conditions."""
        probes = []
        for enc in self.spec.encodings.values():
            op = enc.fields.get("OP")
            if op is None or not enc.identifiers:
                continue
            enc_mask = enc.identifier_mask & ~field_mask(op)
            key = enc.identifiers[0] & enc_mask
            conds = [(compile_condition(c.expression),
                      tuple(FieldCodec(enc.fields[n], enc.name) for n in _expr.referenced_fields(c.expression)
                            if n in enc.fields))
                     for c in enc.conditions if c.expression is not None]
            probes.append((bin(enc_mask).count("1"), enc_mask, key, enc.byte_count, enc.name, conds))
        probes.sort(key=lambda p: (-p[0], p[3]))
        return tuple(probes)

    def encoding_of_unknown(self, word: int, avail: int) -> tuple[str, int] | None:
        """(encoding name, size) for a word in a known encoding with an opcode the spec lacks."""
        for _bits, mask, key, size, name, conds in self.probes:
            if word & mask != key or size > avail:
                continue
            if conds and not any(c({cd.name: cd.unpack(word) for cd in codecs}) for c, codecs in conds):
                continue
            return name, size
        return None

    def closest(self, mnemonic: str, n: int = 5) -> tuple[str, ...]:
        import difflib

        return tuple(difflib.get_close_matches(mnemonic.lower(), self.mnemonics, n=n, cutoff=0.6))


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def forms_of(spec: Spec) -> SpecForms:
    """The compiled forms of a spec (built on first use, then cached for the spec's lifetime)."""
    forms = _CACHE.get(spec)
    if forms is None:
        forms = SpecForms(spec)
        _CACHE[spec] = forms
    return forms
