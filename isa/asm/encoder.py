"""AsmInstruction objects -> machine code, choosing for each the shortest encoding the spec allows.

Every candidate is a `Form` (one instruction in one encoding of the spec); the first, shortest form
that accepts the operands wins, which reproduces LLVM's choice between e32, literal and e64 variants.
`encode_form` puts one instruction into one form (fields from operands and modifiers, or a Mismatch saying
why the form does not take it); the rest of the module works on instruction lists. Branch targets are
resolved in a second pass once every label has an address; encoded words of label-free instructions are
cached per spec, since generated kernels repeat instructions a lot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.asm_errors import EncodeError
from jitgemm.isa.instruction import OFF, Align, AsmInstruction, Counters, Data, Imm, Label, LabelDef, Off, Reg, SrcMods
from jitgemm.isa.modifiers import MODIFIER_ENCODERS
from jitgemm.isa.operand_values import (
    ACC_BIT,
    TypeTable,
    const_text,
    constant_encoding,
    int16_inline_pattern,
    literal_bits,
)
from jitgemm.isa.spec.field_codec import Mismatch, signed_to_field
from jitgemm.isa.spec.forms import Form, Slot, SpecForms, forms_of
from jitgemm.isa.spec.model import Spec

# --- one instruction in one form ----------------------------------------------------------------------

def _check_constant_bus(form: Form, fields: dict, slots, ops) -> None:
    """gfx9 VALU instructions read at most `limit` distinct SGPR/special/literal values (the constant bus);
    LLVM refuses more, and the hardware result would be undefined."""
    limit, spots = form.bus
    uses = set()
    for fname, scalar, sdwa_s in spots:
        value = fields.get(fname)
        if value is None or (sdwa_s and not fields.get(sdwa_s)):   # SDWA: S0/S1 = 0 means a VGPR
            continue
        if scalar is None:                       # the literal slot of a literal encoding
            uses.add(("literal", value))
        elif value in scalar:
            uses.add(("literal", fields["LITERAL"]) if value == 255 and "LITERAL" in fields else ("f", value))
    for slot, op in zip(slots, ops, strict=False):
        if slot.fname is None and slot.output is False and isinstance(op, Reg) and op.kind not in ("v", "a"):
            uses.add((op.kind, op.index))        # an implicit scalar source written out (`vcc` of v_cndmask)
    if form.name == "v_writelane_b32":
        uses.discard(("f", syn.M0_VALUE))     # LLVM: M0 as the lane select does not take the bus
    if len(uses) > limit:
        raise Mismatch(f"{form.mnemonic} reads {len(uses)} scalar values (SGPRs, special registers or "
                       f"literals); {form.spec_inst.name} may read {limit} (constant bus): move one into a "
                       f"VGPR", rank=5)

def encode_form(form: Form, inst: AsmInstruction, pc: int = 0, symbols=None) -> int:
    """The instruction word of `inst` in `form` (an int of `form.size` bytes, little-endian), or Mismatch
    saying why this form does not take it (the encoder then tries the next form)."""
    ops = inst.operands
    slots = form.slots
    fields: dict[str, int] = {}
    mods = inst.modifiers
    if mods:
        mod_names = {m[0] for m in mods}
        _encode_modifiers(form, mods, fields)
        if form.lds_vdata is not None and "lds" in mod_names:
            slots = tuple(s for s in slots if s is not form.lds_vdata)
    else:
        mod_names = ()
    if form.return_vdst is not None and form.return_flag not in mod_names:
        slots = tuple(s for s in slots if s is not form.return_vdst)
    if form.width_slots:
        slots = tuple(_SlotView(s, syn.f8f6f4_registers(fields.get(s.width_field, 0), s.nregs))
                      if s.width_field is not None else s for s in slots)
    if len(ops) == len(slots) - 1 and form.family == "e32":
        fixed = [s for s in slots if s.kind == "fixed"]
        if len(fixed) == 1:   # `v_cmp_eq_f32_e32 v0, v1`, `v_cndmask_b32_e32 v4, v7, v10`: llvm-mc-22 takes an
            slots = tuple(s for s in slots if s is not fixed[0])   # e32 form without its one implicit vcc
    if form.family == "sdwa" and _has_64bit_operand(form):
        raise Mismatch("sdwa variant of this instruction is not supported (a 64-bit VGPR source; LLVM defines no "
                       "SDWA variant of such instructions)", rank=-1)
    if len(ops) != len(slots) and not (form.optional_imm is not None and len(ops) == len(slots) - 1):
        raise Mismatch(f"{inst.name} takes {len(slots)} operand(s) in {form.enc.name}, got {len(ops)}",
                       rank=-1)
    state = None
    for slot, op in zip(slots, ops, strict=False):
        fast = slot.fast
        if fast is not None:  # plain registers and inline constants that fit their field
            t = type(op)
            if t is Reg:
                if op.count == slot.nregs:
                    value = fast.get((op.kind, op.index))
                    if value is not None:
                        fields[slot.fname] = value
                        continue
            elif t is Imm:
                value = fast.get(op._key())
                if value is not None:
                    fields[slot.fname] = value
                    continue
        if state is None:
            state = _EncodeState()
        _encode_operand(form, slot, op, fields, state, ops, mod_names, pc, symbols)
    if state is not None and state.literal is not None:
        fields["LITERAL"] = state.literal
    word = form.base_word
    packers = form.packers
    for name, value in fields.items():
        packer = packers.get(name)
        if packer is not None and 0 <= value and not value >> packer[1]:
            word |= value << packer[0]
        else:
            codec = form.codecs.get(name)
            if codec is None:
                raise Mismatch(f"{form.enc.name} has no field {name}")
            word |= codec.pack(value)
    for name, bits in form.default_bits:
        if name not in fields:
            word |= bits
    if form.bus is not None:
        _check_constant_bus(form, fields, slots, ops)
    if form.cond is not None and not form.cond(fields):
        raise Mismatch(f"{form.enc.name} condition {form.cond_name} does not hold", rank=len(slots))
    return word

def _encode_modifiers(form: Form, mods, fields: dict) -> None:
    for name, value in mods:
        if type(value) is Imm:
            value = value.value
        kind = form.mods.get(name)
        if kind is None:
            available = ", ".join(sorted(form.mods)) or "none"
            raise Mismatch(f"modifier {name} is not available in {form.enc.name} (available: {available})",
                           modifier=name)
        try:
            MODIFIER_ENCODERS[kind](form, name, value, fields)
        except Mismatch as exc:
            exc.modifier = name
            raise

def _encode_operand(form: Form, slot: Slot, op, fields: dict, state, ops, mod_names, pc, symbols) -> None:
    kind = slot.kind
    idx = slot.index
    try:
        if type(op) is SrcMods:
            inner = op.operand
            if (op.neg and not op.abs and not op.sext and type(inner) is Imm and isinstance(inner.value, float)
                    and (slot.src is None or ("neg", slot.src) not in form.srcmods)):
                op = Imm(-inner.value)  # neg(1.0) where no NEG bit exists is the constant -1.0 (as LLVM)
            else:
                _encode_srcmods(form, slot, op, fields)
                op = inner
        if kind == "reg":
            value = _operand_value(form, slot, op, state)
            if value is None:
                return
            _store(form, slot, value, fields, state)
        elif kind == "fixed":
            _check_fixed(form, slot, op)
        elif kind == "literal":
            _encode_literal(form, slot, op, state)
        elif kind == "label":
            fields[slot.fname] = _label_value(form, slot, op, pc, symbols)
        elif kind == "parts":
            fields[slot.fname] = _parts_value(form, slot, op)
        elif kind == "vaddr":
            _encode_vaddr(form, slot, op, fields, state, mod_names)
        elif kind == "flat_addr":
            _encode_flat_addr(form, slot, op, fields, state, ops)
        elif kind == "saddr":
            if type(op) is Off:
                fields[slot.fname] = (1 << slot.codec.width) - 1
            else:
                _store(form, slot, _operand_value(form, slot, op, state), fields, state)
        elif kind == "smem_offset":
            _encode_smem_offset(form, slot, op, fields, state, mod_names)
        elif kind == "sdwa_sdst":
            if type(op) is Reg and op.kind == "vcc":
                fields["SD"] = 0
            else:
                fields["SD"] = 1
                _store(form, slot, _operand_value(form, slot, op, state), fields, state)
        else:  # pragma: no cover - every slot kind is handled above
            raise Mismatch(f"operand kind {kind} is not supported")
    except Mismatch as exc:
        if exc.operand is None and exc.modifier is None:
            exc.operand = idx
            exc.rank = idx + 1
        raise

def _encode_srcmods(form: Form, slot: Slot, op: SrcMods, fields: dict) -> None:
    if slot.src is None:
        raise Mismatch("input modifiers (neg/abs/sext) apply only to source operands")
    names = form.srcmods
    for flag, wanted in (("neg", op.neg), ("abs", op.abs), ("sext", op.sext)):
        if not wanted:
            continue
        spot = names.get((flag, slot.src))
        if spot is None:
            raise Mismatch(f"{flag} modifier is not available for this operand in {form.enc.name}")
        fname, bit = spot
        fields[fname] = fields.get(fname, 0) | (1 << bit)

def _operand_value(form: Form, slot: Slot, op, state) -> int | None:
    """Encoded value of a register or constant for a slot, or Mismatch saying what it accepts."""
    table = slot.table
    t = type(op)
    if t is Reg:
        kind = op.kind
        if kind in ("s", "v", "a", "ttmp"):
            value = table.by_key.get((kind, op.index))
            if value is None:
                raise Mismatch(f"{op} is not allowed here; {table.describe()}")
            if op.count != slot.nregs:
                raise Mismatch(f"{op} is {op.count} register(s) wide but the operand takes {slot.nregs} "
                               f"({slot.size} bits)")
            if op.count > 1:
                align = 2 if kind in ("v", "a") else min(4, op.count)
                if op.index % align:
                    raise Mismatch(f"{op} must start at a multiple of {align}")
                last = table.by_key.get((kind, op.index + op.count - 1))
                if last is None:
                    raise Mismatch(f"{op} runs past the last register; {table.describe()}")
            return value
        value = None
        if op.count == 2:
            value = table.by_key.get(("pair", kind))
            if value is None:  # a pair only LLVM's disassembler names here (`exec` as an SMEM base)
                value = table.decode_only.get(kind)
        else:
            value = table.by_key.get(("name", kind))
            if value is None and not kind.startswith("src_"):
                value = table.by_key.get(("name", "src_" + kind))
            if value is None:  # a value only LLVM's disassembler names (the parser refuses its spelling)
                value = table.decode_only.get(kind)
        if value is None:
            raise Mismatch(f"{op} is not allowed here; {table.describe()}")
        if op.count == 1 and slot.nregs > 1 and kind not in syn.ANY_WIDTH_REGISTERS:
            raise Mismatch(f"{op} is one register but the operand takes {slot.nregs} ({slot.size} bits)")
        if op.count == 2 and slot.nregs == 1:
            raise Mismatch(f"{op} is a 64-bit register pair but the operand takes one register (32 bits)")
        return value
    if t is Imm:
        return _constant_value(form, slot, op.value, state)
    if t is Label:
        low = op.name.lower()
        value = table.by_key.get(("name", low))
        if value is None:
            value = table.by_key.get(("pair", low))
        if value is None:
            raise Mismatch(f"{op.name} is not allowed here; {table.describe()}")
        return value
    if t is Off:
        raise Mismatch(f"off is not allowed here; {table.describe()}")
    raise Mismatch(f"{op} is not allowed here; {table.describe()}")

def _constant_value(form: Form, slot: Slot, value, state) -> int:
    inline, _literal = constant_encoding(slot, value)
    if inline is not None:
        return inline
    if form.family != "e32":  # no literal form to fall back to (SDWA, VOP3 on GFX9)
        inline = int16_inline_pattern(slot, value)
        if inline is not None:
            return inline
    table = slot.table
    if table.literal is None:
        raise Mismatch(f"{const_text(value)} is not an inline constant and {table.name} takes no "
                       f"literal; {table.describe()}")
    if form.shared_literal and slot.container == 32 and state is not None:   # the literal the encoding carries
        literal = literal_bits(slot, value)
        if state.literal is not None and state.literal != literal:
            raise Mismatch("only one distinct literal fits in an instruction")
        state.literal = literal
        return table.literal
    raise Mismatch(f"{const_text(value)} needs a literal, which {form.enc.name} cannot hold here")

def _encode_literal(form: Form, slot: Slot, op, state) -> None:
    if type(op) is not Imm:
        raise Mismatch(f"{form.enc.name} holds a 32-bit literal here, not {op}")
    table = slot.table
    if table is not None and not table.partitioned and table.literal is None and not table.ints and not table.floats:
        # the operand's type names no literal value (OPR_SRC_ACCVGPR: AGPRs only): a literal form the spec lists
        # for it carries nothing it can read; llvm-mc refuses one (`v_accvgpr_mov_b32 a4, 0x12345678`)
        raise Mismatch(f"{table.describe()}: no literal")
    inline, literal = constant_encoding(slot, op.value)
    if inline is not None:
        if form.literal_optional:
            raise Mismatch(f"{const_text(op.value)} is an inline constant (no literal needed)")
        literal = literal_bits(slot, op.value)  # a literal the encoding always carries (fmamk's K)
    if state.literal is not None and state.literal != literal:
        raise Mismatch("only one distinct literal fits in an instruction")
    state.literal = literal

def _store(form: Form, slot: Slot, value: int, fields: dict, state) -> None:
    """Write a slot value: its low bits to the slot's field, the AGPR bit (bit 9 of the value) to the
    encoding's ACC field or nowhere when the type implies it, and for SDWA sources bit 8 (VGPR)
    inverted to S0/S1."""
    width = slot.codec.width
    low = value & ((1 << width) - 1)
    rest = value >> width
    acc = 0
    if slot.acc is not None or slot.acc_implied:
        acc = value >> ACC_BIT & 1
        rest = (value & ((1 << ACC_BIT) - 1)) >> width
    if slot.sdwa_s is not None:
        if rest > 1:
            raise Mismatch(f"value {value} does not fit {slot.codec.desc}")
        fields[slot.sdwa_s] = 0 if rest else 1
        rest = 0
    if rest:
        raise Mismatch(f"value {value} does not fit {slot.codec.desc}")
    if slot.acc is not None:
        key = slot.table.by_value.get(value)
        if key is not None and key[0] in ("v", "a"):  # constants do not claim the ACC bit
            fname, pos = slot.acc
            owners = state.acc
            if owners is None:
                owners = state.acc = {}
            prev = owners.get(slot.acc)
            if prev is not None and prev != acc:
                raise Mismatch(f"operands that share field {fname} must be all VGPRs or all AGPRs")
            owners[slot.acc] = acc
            fields[fname] = (fields.get(fname, 0) & ~(1 << pos)) | (acc << pos)
    fields[slot.fname] = low

def _check_fixed(form: Form, slot: Slot, op) -> None:
    table = slot.table
    if table is None:
        return
    t = type(op)
    name = None
    if t is Reg:
        name = op.kind if op.kind not in ("s", "v", "a", "ttmp") else None
    elif t is Label:
        name = op.name.lower()
    if name is None or (("name", name) not in table.by_key and ("pair", name) not in table.by_key):
        raise Mismatch(f"{op} is not allowed here; this operand is always {_fixed_text(table)}")

def _label_value(form: Form, slot: Slot, op, pc: int, symbols) -> int:
    codec = slot.codec
    if type(op) is Imm and isinstance(op.value, int):
        v = op.value
    elif type(op) is Label:
        if symbols is None:
            raise Mismatch(f"label {op.name} cannot be resolved here", rank=slot.index + 1)
        target = symbols.get(op.name)
        if target is None:
            raise Mismatch(f"undefined label {op.name}")
        delta = target - (pc + 4)
        if delta % 4:
            raise Mismatch(f"label {op.name} is not 4-byte aligned relative to this branch")
        v = delta // 4
    else:
        raise Mismatch(f"branch target must be a label or an integer, got {op}")
    w = codec.width
    if not -(1 << (w - 1)) <= v < (1 << w):
        raise Mismatch(f"branch offset {v} (dwords) does not fit {codec.desc}")
    return v & ((1 << w) - 1)

def _parts_value(form: Form, slot: Slot, op) -> int:
    codec = slot.codec
    w = codec.width
    if type(op) is Imm and (slot.type_name is not None or slot is form.optional_imm):
        bounds = (0, 0xFFFF) if slot is form.optional_imm else \
            syn.immediate_bounds(slot.type_name, slot.data_format, form.mnemonic in syn.HWREG_MNEMONICS)
        if bounds is not None:
            v = op.value
            if isinstance(v, float):
                if bounds != syn.ANY_BITS:
                    raise Mismatch(f"{slot.type_name} takes an integer, not {v!r}")
                v = syn.float_bits(v, 64)      # llvm-mc keeps a float token's double bits: the low ones fit
            lo, hi = bounds
            if lo is not None and not lo <= v <= hi:
                raise Mismatch(f"immediate {v} is out of range of {slot.type_name} ({slot.data_format}): {lo}..{hi}")
            return v & ((1 << w) - 1)
    if type(op) is Imm and isinstance(op.value, int):
        v = op.value
        if not -(1 << (w - 1)) <= v < (1 << w):
            raise Mismatch(f"immediate {v} is out of range of {codec.desc}: "
                           f"{-(1 << (w - 1))}..{(1 << w) - 1}")
        return v & ((1 << w) - 1)
    if type(op) is Counters:
        table = slot.table
        if table is None:   # `s_endpgm vmcnt(0)`: llvm-mc says "expected absolute expression"
            raise Mismatch(f"expected an absolute expression (an immediate), not the counters {op}")
        parts = table.parts
        if not parts:
            raise Mismatch(f"{table.name} has no named parts")
        value = 0
        for f in parts.values():  # unwritten parts stay at their maximum (no wait)
            value = f.insert(value, (1 << f.width) - 1)
        for pname, pv in op.parts:
            f = parts.get(syn.counter_field(pname))
            if f is None:
                raise Mismatch(f"{pname} is not a part of {table.name} (parts: "
                               + ", ".join(syn.counter_name(n) for n in parts) + ")")
            if not 0 <= pv < (1 << f.width):
                raise Mismatch(f"{pname}({pv}) is out of range of part {f.name} of {table.name} "
                               f"({f.width} bits: 0..{(1 << f.width) - 1})")
            value = f.insert(value, pv)
        return value
    raise Mismatch(f"expected an immediate for {slot.type_name}, got {op}")

def _encode_vaddr(form: Form, slot, op, fields, state, mod_names) -> None:
    want = ("offen" in mod_names) + ("idxen" in mod_names)
    if want == 0:
        if type(op) is not Off:
            raise Mismatch(f"address {op} needs offen or idxen (or write off)")
        return
    if type(op) is Off:
        raise Mismatch("off is only valid without offen/idxen")
    if type(op) is Reg and op.kind == "v" and op.count != want:
        raise Mismatch(f"address {op} must be {want} VGPR(s) with "
                       + " and ".join(m for m in ("idxen", "offen") if m in mod_names))
    view = _SlotView(slot, want)
    _store(form, slot, _operand_value(form, view, op, state), fields, state)

def _encode_flat_addr(form: Form, slot, op, fields, state, ops) -> None:
    saddr_off = True
    if form.flat_saddr is not None:
        # a no-return atomic has no VDST operand: the SADDR operand sits one place earlier
        at = form.flat_saddr - (len(form.slots) - len(ops))
        saddr_op = ops[at] if 0 <= at < len(ops) else OFF
        if isinstance(saddr_op, SrcMods):
            saddr_op = saddr_op.operand
        saddr_off = type(saddr_op) is Off
    if type(op) is Off:
        if not form.scratch:
            raise Mismatch("off is not allowed for this address")
        fields["SVE"] = 0
        return
    want = 2 if (saddr_off and not form.scratch) else 1
    view = _SlotView(slot, want)
    _store(form, slot, _operand_value(form, view, op, state), fields, state)
    if form.scratch:
        fields["SVE"] = 1

def _encode_smem_offset(form: Form, slot, op, fields, state, mod_names) -> None:
    if type(op) is Imm:
        if not isinstance(op.value, int):
            raise Mismatch(f"offset {op} must be an integer")
        if "offset" in mod_names:
            raise Mismatch("offset: is only valid with an SGPR offset operand")
        fields["IMM"] = 1
        fields["OFFSET"] = signed_to_field(form.codecs["OFFSET"], op.value, "offset")
        return
    value = _operand_value(form, slot, op, state)
    if "offset" in mod_names or "SOFFSET_EN" not in form.codecs:
        if "SOFFSET_EN" in form.codecs:
            fields["SOFFSET_EN"] = 1
        fields[slot.fname] = value
    else:
        fields["IMM"] = 0
        fields["OFFSET"] = fields.get("OFFSET", 0) | value  # over any kept high bits (keep_bits)


_WIDE: dict[int, bool] = {}


def _has_64bit_operand(form: Form) -> bool:
    """Whether a form has a 64-bit VGPR source (cached per form): LLVM has no SDWA variant of such instructions
    (llvm-mc-22: "sdwa variant of this instruction is not supported" for v_mov_b64_sdwa, v_add_f64_sdwa; a 64-bit
    destination is fine: v_cvt_pk_f32_fp8_sdwa v[4:5], v8)."""
    wide = _WIDE.get(id(form))
    if wide is None:
        wide = _WIDE[id(form)] = any(s.size == 64 and s.src is not None and s.table is not None
                                     and ("v", 0) in s.table.by_key for s in form.slots)
    return wide


class _SlotView:
    """A slot seen with another register count (MUBUF/FLAT addresses whose width depends on syntax)."""

    __slots__ = ("_slot", "nregs")

    def __init__(self, slot: Slot, nregs: int) -> None:
        self._slot = slot
        self.nregs = nregs

    def __getattr__(self, name):
        return getattr(self._slot, name)


class _EncodeState:
    __slots__ = ("literal", "acc")

    def __init__(self) -> None:
        self.literal = None
        self.acc = None


def _fixed_text(table: TypeTable) -> str:
    """How a fixed operand is written (its register name, else the type's name), for error messages."""
    for key in table.by_key:
        if key[0] in ("name", "pair"):
            return key[1]
    return table.name


def encode_error(inst: AsmInstruction, failures: list[Mismatch]) -> EncodeError:
    """One error from the reasons each candidate form gave: the one that got furthest."""
    best = max(failures, key=lambda m: m.rank) if failures else None
    if best is None:
        return EncodeError(f"{inst.name}: no encoding")
    prefix = f"{inst.name}: "
    if best.operand is not None:
        prefix += f"operand {best.operand + 1}: "
    elif best.modifier is not None:
        prefix += f"modifier {best.modifier}: "
    return EncodeError(prefix + best.message, operand=best.operand, modifier=best.modifier)


# --- instruction lists ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Assembled:
    """Machine code with the address of every label and of every statement given."""

    code: bytes
    symbols: dict[str, int] = field(default_factory=dict)
    offsets: tuple[int, ...] = ()

    def __bytes__(self) -> bytes:
        return self.code


_CACHE_LIMIT = 1 << 18  # cached encodings per spec (generated kernels repeat instructions a lot)


class _Placeholder:
    """Symbols for the sizing pass: every label resolves to the next instruction (offset 0)."""

    __slots__ = ("pc",)

    def __init__(self, pc: int) -> None:
        self.pc = pc

    def get(self, name: str, default=None):
        return self.pc + 4


def unknown_mnemonic(name: str, forms: SpecForms) -> EncodeError:
    close = forms.closest(name)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return EncodeError(f"unknown instruction {name!r} (not in spec {forms.spec.architecture.name}){hint}")


def encode_word(inst: AsmInstruction, forms: SpecForms, pc: int = 0, symbols=None) -> tuple[int, int]:
    """(word, size in bytes) of one instruction; EncodeError says why no form fits."""
    word, form = encode_with_form(inst, forms, pc, symbols)
    return word, form.size


def encode_with_form(inst: AsmInstruction, forms: SpecForms, pc: int = 0, symbols=None) -> tuple[int, Form]:
    """(word, the form that encoded it): the first of the mnemonic's forms that fits, as LLVM's matcher."""
    candidates = forms.iter_forms(inst.name)     # built one at a time: the first that fits is usually the first
    if candidates is None:
        raise unknown_mnemonic(inst.name, forms)
    failures = []
    for form in candidates:
        try:
            return encode_form(form, inst, pc, symbols), form
        except Mismatch as exc:
            failures.append(exc)
    if not failures and forms.forms_for(inst.name) is None:     # a name whose every form failed to build
        raise unknown_mnemonic(inst.name, forms)
    # LLVM's matcher tries every variant of a mnemonic written without a suffix (AMDGPUAsmParser's
    # MatchAndEmitInstruction over the default, VOP3, SDWA and DPP variants), so clang's printed
    # `v_add_f32 v38, v38, v38 row_shr:8 bound_ctrl:0` is the DPP form; the modifiers written say which
    names = {name for name, _v in inst.modifiers}
    for family, marks in (("_dpp", _DPP_MODIFIERS), ("_sdwa", _SDWA_MODIFIERS)):
        if names & marks and not inst.name.lower().endswith(family):
            for form in forms.forms_for(inst.name + family) or ():
                try:
                    return encode_form(form, inst, pc, symbols), form
                except Mismatch as exc:
                    failures.append(exc)
    raise encode_error(inst, failures)


# the modifiers only a DPP (resp. SDWA) form takes (LLVM AMDGPUAsmParser: parseDPPCtrl, parseSDWASel)
_DPP_MODIFIERS = frozenset({"quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_rol", "wave_shr",
                            "wave_ror", "row_mirror", "row_half_mirror", "row_bcast", "row_share", "row_xmask",
                            "row_newbcast", "row_mask", "bank_mask", "bound_ctrl", "fi"})
_SDWA_MODIFIERS = frozenset({"dst_sel", "dst_unused", "src0_sel", "src1_sel"})


def _has_label(inst: AsmInstruction) -> bool:
    for op in inst.operands:
        if type(op) is Label:
            return True
    return False


def encode_instruction(inst: AsmInstruction, spec: Spec | SpecForms, pc: int = 0,
                       symbols: dict[str, int] | None = None) -> bytes:
    """Bytes of one instruction at address `pc` (branch labels looked up in `symbols`)."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    if symbols is None and not _has_label(inst):
        cached = forms.encode_cache.get(inst)
        if cached is not None:
            return cached
        word, form = encode_with_form(inst, forms, pc, None)
        data = word.to_bytes(form.size, "little")
        if len(forms.encode_cache) > _CACHE_LIMIT:
            forms.encode_cache.clear()
            forms.encoded_by.clear()
        forms.encode_cache[inst] = data
        forms.encoded_by[inst] = form
        return data
    word, size = encode_word(inst, forms, pc, symbols)
    return word.to_bytes(size, "little")


class StatementError(Exception):
    """An EncodeError at statement `index` of the list given to `encode_items` (for positions)."""

    def __init__(self, index: int, error: EncodeError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def encode_items(items: Iterable, spec: Spec | SpecForms) -> Assembled:
    """Encode instructions, label definitions and data; raises StatementError naming the item."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    items = list(items)
    cache = forms.encode_cache
    chunks: list[bytes | None] = []
    offsets: list[int] = []
    symbols: dict[str, int] = {}
    pending: list[tuple[int, int, AsmInstruction]] = []
    pc = 0
    for i, item in enumerate(items):
        offsets.append(pc)
        t = type(item)
        if t is AsmInstruction:
            data = cache.get(item)
            if data is None:
                try:
                    if _has_label(item):
                        word, size = encode_word(item, forms, pc, _Placeholder(pc))
                        pending.append((len(chunks), i, item))
                        data = b"\0" * size
                    else:
                        word, form = encode_with_form(item, forms, pc, None)
                        data = word.to_bytes(form.size, "little")
                        if len(cache) > _CACHE_LIMIT:
                            cache.clear()
                            forms.encoded_by.clear()
                        cache[item] = data
                        forms.encoded_by[item] = form     # the timing trace reads it (jitgemm/timing/trace.py)
                except EncodeError as exc:
                    raise StatementError(i, exc) from None
            chunks.append(data)
            pc += len(data)
        elif t is LabelDef:
            if item.name in symbols:
                raise StatementError(i, EncodeError(f"label {item.name!r} is defined twice"))
            symbols[item.name] = pc
        elif t is Data:
            data = b"".join(int(w & ((1 << (8 * item.width)) - 1)).to_bytes(item.width, "little")
                            for w in item.words)
            chunks.append(data)
            pc += len(data)
        elif t is Align:
            data = _padding(item, pc, forms)
            chunks.append(data)
            pc += len(data)
        else:
            raise StatementError(i, EncodeError(f"cannot encode {item!r}: expected AsmInstruction, LabelDef, Data "
                                                "or Align"))
    for chunk_index, item_index, inst in pending:
        try:
            word, size = encode_word(inst, forms, offsets[item_index], symbols)
        except EncodeError as exc:
            raise StatementError(item_index, exc) from None
        chunks[chunk_index] = word.to_bytes(size, "little")
    return Assembled(b"".join(chunks), symbols, tuple(offsets))  # type: ignore[arg-type]


def _padding(item: Align, pc: int, forms: SpecForms) -> bytes:
    boundary = item.boundary
    if boundary <= 0 or boundary & (boundary - 1):
        raise EncodeError(f"alignment {boundary} is not a power of two")
    n = (-pc) % boundary
    if not n or (item.max_skip is not None and n > item.max_skip):
        return b""
    if item.fill is not None:
        width = item.fill_width
        unit = (item.fill & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        return (unit * (n // width + 1))[:n]
    head = b"\0" * (n % 4)
    try:  # code is padded with the spec's s_nop 0, as LLVM does
        nop = encode_instruction(AsmInstruction("s_nop", (Imm(0),)), forms)
    except EncodeError:
        nop = b"\0\0\0\0"
    if len(nop) != 4:
        nop = b"\0\0\0\0"
    return head + nop * (n // 4)


def encode(instructions: Iterable, spec: Spec | SpecForms) -> Assembled:
    """Machine code for a list of `AsmInstruction`, `LabelDef` and `Data` items (the generators' path).

    Raises EncodeError naming the failing item (its index and text) when one cannot be encoded.
    """
    try:
        return encode_items(instructions, spec)
    except StatementError as exc:
        err = exc.error
        raise EncodeError(f"item {exc.index}: {err.reason}", operand=err.operand, modifier=err.modifier) from None
