"""The spec compiled for assembling and disassembling: one `Form` per (instruction, encoding) pair.

A form knows, from the spec alone, the identifier word of its opcode, the field values its encoding
condition pins down (SRC0 = 255 for a literal variant, 250 for DPP), the operand slots in syntax
order with the operand type, register count and data format of each, and which modifiers its
encoding has fields for. The encoder tries the forms of a mnemonic from the shortest; the decoder
finds forms through identifier masks and conditions. Forms are built once per spec and cached.
"""

from __future__ import annotations

import re
import weakref

from . import expr as _expr
from . import operand_syntax as syn
from .asm_errors import EncodeError
from .field_codec import (
    FieldCodec,
    Mismatch,
    compile_condition,
    condition_equalities,
    field_mask,
    signed_to_field,
)
from .instruction import OFF, AsmInstruction, Counters, Imm, Label, Off, Reg, SrcMods
from .model import Encoding, InstructionEncoding, Spec
from .model import Instruction as SpecInstruction
from .modifiers import MODIFIER_ENCODERS, decode_modifiers, modifier_kinds
from .operand_values import ACC_BIT, TypeTable, const_text, constant_encoding, int16_inline_pattern, literal_bits

__all__ = ["Form", "Mismatch", "Slot", "SpecForms", "TypeTable", "encode_error", "forms_of"]


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
                 "literal_optional", "mix", "bus")

    def __repr__(self) -> str:
        return f"<Form {self.mnemonic} {self.enc.name}/{self.cond_name}>"

    # ---------------------------------------------------------------- encoding
    def fixed_by_identifier(self, fname: str) -> bool:
        """The field's bits all belong to the encoding's identifier (e.g. ABID of CDNA 4's scaled MFMA): no
        syntax may set it."""
        f = self.enc.fields.get(fname)
        return f is not None and not field_mask(f) & ~self.enc.identifier_mask

    def _check_constant_bus(self, fields: dict, slots, ops) -> None:
        """gfx9 VALU instructions read at most `limit` distinct SGPR/special/literal values (the constant bus);
        LLVM refuses more, and the hardware result would be undefined."""
        limit, spots = self.bus
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
        if self.name == "v_writelane_b32":
            uses.discard(("f", syn.M0_VALUE))     # LLVM: M0 as the lane select does not take the bus
        if len(uses) > limit:
            raise Mismatch(f"{self.mnemonic} reads {len(uses)} scalar values (SGPRs, special registers or "
                           f"literals); {self.spec_inst.name} may read {limit} (constant bus): move one into a "
                           f"VGPR", rank=5)

    def encode(self, inst: AsmInstruction, pc: int = 0, symbols=None) -> int:
        """The instruction word (an int of `size` bytes, little-endian) or Mismatch."""
        ops = inst.operands
        slots = self.slots
        fields: dict[str, int] = {}
        mods = inst.modifiers
        if mods:
            mod_names = {m[0] for m in mods}
            self._encode_modifiers(mods, fields)
            if self.lds_vdata is not None and "lds" in mod_names:
                slots = tuple(s for s in slots if s is not self.lds_vdata)
        else:
            mod_names = ()
        if self.return_vdst is not None and self.return_flag not in mod_names:
            slots = tuple(s for s in slots if s is not self.return_vdst)
        if self.width_slots:
            slots = tuple(_SlotView(s, syn.f8f6f4_registers(fields.get(s.width_field, 0), s.nregs))
                          if s.width_field is not None else s for s in slots)
        if len(ops) != len(slots):
            raise Mismatch(f"{inst.name} takes {len(slots)} operand(s) in {self.enc.name}, got {len(ops)}",
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
            self._encode_operand(slot, op, fields, state, ops, mod_names, pc, symbols)
        if state is not None and state.literal is not None:
            fields["LITERAL"] = state.literal
        word = self.base_word
        packers = self.packers
        for name, value in fields.items():
            packer = packers.get(name)
            if packer is not None and 0 <= value and not value >> packer[1]:
                word |= value << packer[0]
            else:
                codec = self.codecs.get(name)
                if codec is None:
                    raise Mismatch(f"{self.enc.name} has no field {name}")
                word |= codec.pack(value)
        for name, bits in self.default_bits:
            if name not in fields:
                word |= bits
        if self.bus is not None:
            self._check_constant_bus(fields, slots, ops)
        if self.cond is not None and not self.cond(fields):
            raise Mismatch(f"{self.enc.name} condition {self.cond_name} does not hold", rank=len(slots))
        return word

    def _encode_modifiers(self, mods, fields: dict) -> None:
        for name, value in mods:
            if type(value) is Imm:
                value = value.value
            kind = self.mods.get(name)
            if kind is None:
                available = ", ".join(sorted(self.mods)) or "none"
                raise Mismatch(f"modifier {name} is not available in {self.enc.name} (available: {available})",
                               modifier=name)
            try:
                MODIFIER_ENCODERS[kind](self, name, value, fields)
            except Mismatch as exc:
                exc.modifier = name
                raise

    def _encode_operand(self, slot: Slot, op, fields: dict, state, ops, mod_names, pc, symbols) -> None:
        kind = slot.kind
        idx = slot.index
        try:
            if type(op) is SrcMods:
                inner = op.operand
                if (op.neg and not op.abs and not op.sext and type(inner) is Imm and isinstance(inner.value, float)
                        and (slot.src is None or ("neg", slot.src) not in self.srcmods)):
                    op = Imm(-inner.value)  # neg(1.0) where no NEG bit exists is the constant -1.0 (as LLVM)
                else:
                    self._encode_srcmods(slot, op, fields)
                    op = inner
            if kind == "reg":
                value = self._operand_value(slot, op, state)
                if value is None:
                    return
                self._store(slot, value, fields, state)
            elif kind == "fixed":
                self._check_fixed(slot, op)
            elif kind == "literal":
                self._encode_literal(slot, op, state)
            elif kind == "label":
                fields[slot.fname] = self._label_value(slot, op, pc, symbols)
            elif kind == "parts":
                fields[slot.fname] = self._parts_value(slot, op)
            elif kind == "vaddr":
                self._encode_vaddr(slot, op, fields, state, mod_names)
            elif kind == "flat_addr":
                self._encode_flat_addr(slot, op, fields, state, ops)
            elif kind == "saddr":
                if type(op) is Off:
                    fields[slot.fname] = (1 << slot.codec.width) - 1
                else:
                    self._store(slot, self._operand_value(slot, op, state), fields, state)
            elif kind == "smem_offset":
                self._encode_smem_offset(slot, op, fields, state, mod_names)
            elif kind == "sdwa_sdst":
                if type(op) is Reg and op.kind == "vcc":
                    fields["SD"] = 0
                else:
                    fields["SD"] = 1
                    self._store(slot, self._operand_value(slot, op, state), fields, state)
            else:  # pragma: no cover - every slot kind is handled above
                raise Mismatch(f"operand kind {kind} is not supported")
        except Mismatch as exc:
            if exc.operand is None and exc.modifier is None:
                exc.operand = idx
                exc.rank = idx + 1
            raise

    def _encode_srcmods(self, slot: Slot, op: SrcMods, fields: dict) -> None:
        if slot.src is None:
            raise Mismatch("input modifiers (neg/abs/sext) apply only to source operands")
        names = self.srcmods
        for flag, wanted in (("neg", op.neg), ("abs", op.abs), ("sext", op.sext)):
            if not wanted:
                continue
            spot = names.get((flag, slot.src))
            if spot is None:
                raise Mismatch(f"{flag} modifier is not available for this operand in {self.enc.name}")
            fname, bit = spot
            fields[fname] = fields.get(fname, 0) | (1 << bit)

    def _operand_value(self, slot: Slot, op, state) -> int | None:
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
            else:
                value = table.by_key.get(("name", kind))
                if value is None and not kind.startswith("src_"):
                    value = table.by_key.get(("name", "src_" + kind))
            if value is None:
                raise Mismatch(f"{op} is not allowed here; {table.describe()}")
            if op.count == 1 and slot.nregs > 1 and kind not in syn.ANY_WIDTH_REGISTERS:
                raise Mismatch(f"{op} is one register but the operand takes {slot.nregs} ({slot.size} bits)")
            if op.count == 2 and slot.nregs == 1:
                raise Mismatch(f"{op} is a 64-bit register pair but the operand takes one register (32 bits)")
            return value
        if t is Imm:
            return self._constant_value(slot, op.value, state)
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

    def _constant_value(self, slot: Slot, value, state) -> int:
        inline, _literal = constant_encoding(slot, value)
        if inline is not None:
            return inline
        if self.family != "e32":  # no literal form to fall back to (SDWA, VOP3 on GFX9)
            inline = int16_inline_pattern(slot, value)
            if inline is not None:
                return inline
        table = slot.table
        if table.literal is None:
            raise Mismatch(f"{const_text(value)} is not an inline constant and {table.name} takes no "
                           f"literal; {table.describe()}")
        raise Mismatch(f"{const_text(value)} needs a literal, which {self.enc.name} cannot hold here")

    def _encode_literal(self, slot: Slot, op, state) -> None:
        if type(op) is not Imm:
            raise Mismatch(f"{self.enc.name} holds a 32-bit literal here, not {op}")
        inline, literal = constant_encoding(slot, op.value)
        if inline is not None:
            if self.literal_optional:
                raise Mismatch(f"{const_text(op.value)} is an inline constant (no literal needed)")
            literal = literal_bits(slot, op.value)  # a literal the encoding always carries (fmamk's K)
        if state.literal is not None and state.literal != literal:
            raise Mismatch("only one distinct literal fits in an instruction")
        state.literal = literal

    def _store(self, slot: Slot, value: int, fields: dict, state) -> None:
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

    def _check_fixed(self, slot: Slot, op) -> None:
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

    def _label_value(self, slot: Slot, op, pc: int, symbols) -> int:
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

    def _parts_value(self, slot: Slot, op) -> int:
        codec = slot.codec
        w = codec.width
        if type(op) is Imm and isinstance(op.value, int):
            v = op.value
            if not -(1 << (w - 1)) <= v < (1 << w):
                raise Mismatch(f"immediate {v} is out of range of {codec.desc}: "
                               f"{-(1 << (w - 1))}..{(1 << w) - 1}")
            return v & ((1 << w) - 1)
        if type(op) is Counters:
            table = slot.table
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

    def _encode_vaddr(self, slot, op, fields, state, mod_names) -> None:
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
        self._store(slot, self._operand_value(view, op, state), fields, state)

    def _encode_flat_addr(self, slot, op, fields, state, ops) -> None:
        saddr_off = True
        if self.flat_saddr is not None:
            # a no-return atomic has no VDST operand: the SADDR operand sits one place earlier
            at = self.flat_saddr - (len(self.slots) - len(ops))
            saddr_op = ops[at] if 0 <= at < len(ops) else OFF
            if isinstance(saddr_op, SrcMods):
                saddr_op = saddr_op.operand
            saddr_off = type(saddr_op) is Off
        if type(op) is Off:
            if not self.scratch:
                raise Mismatch("off is not allowed for this address")
            fields["SVE"] = 0
            return
        want = 2 if (saddr_off and not self.scratch) else 1
        view = _SlotView(slot, want)
        self._store(slot, self._operand_value(view, op, state), fields, state)
        if self.scratch:
            fields["SVE"] = 1

    def _encode_smem_offset(self, slot, op, fields, state, mod_names) -> None:
        if type(op) is Imm:
            if not isinstance(op.value, int):
                raise Mismatch(f"offset {op} must be an integer")
            if "offset" in mod_names:
                raise Mismatch("offset: is only valid with an SGPR offset operand")
            fields["IMM"] = 1
            fields["OFFSET"] = signed_to_field(self.codecs["OFFSET"], op.value, "offset")
            return
        value = self._operand_value(slot, op, state)
        if "offset" in mod_names or "SOFFSET_EN" not in self.codecs:
            if "SOFFSET_EN" in self.codecs:
                fields["SOFFSET_EN"] = 1
            fields[slot.fname] = value
        else:
            fields["IMM"] = 0
            fields["OFFSET"] = value

    # ---------------------------------------------------------------- decoding
    def decode(self, word: int) -> AsmInstruction:
        fv = {}
        for name, simple, offset, mask, codec in self.unpackers:
            fv[name] = (word >> offset) & mask if simple else codec.unpack(word)
        ops = []
        slots = self.slots
        if self.lds_vdata is not None and fv.get("LDS"):
            slots = tuple(s for s in slots if s is not self.lds_vdata)
        if self.return_vdst is not None and not fv.get(syn.FLAG_FIELDS[self.return_flag]):
            slots = tuple(s for s in slots if s is not self.return_vdst)
        for slot in slots:
            cache = slot.decoded
            if cache is not None:  # plain register/constant slot: value -> operand, memoized
                value = fv[slot.fname]
                op = cache.get(value)
                if op is None:
                    op = _value_operand(slot, value, slot.nregs)
                    cache[value] = op
            else:
                op = self._decode_operand(slot, fv, word)
            spots = slot.mod_spots
            if spots is not None:
                neg, ab, sx = (spot is not None and bool(fv[spot[0]] >> spot[1] & 1) for spot in spots)
                if neg or ab or sx:
                    op = SrcMods(op, neg, ab, sx)
            ops.append(op)
        mods = decode_modifiers(self, fv, word) if self.mods else ()
        return _instruction(self.mnemonic, tuple(ops), mods)

    def _mod_bit(self, fv, flag, src) -> bool:
        spot = self.srcmods.get((flag, src))
        if spot is None:
            return False
        return bool(fv.get(spot[0], 0) >> spot[1] & 1)

    def _decode_operand(self, slot: Slot, fv: dict, word: int):
        kind = slot.kind
        if kind == "fixed":
            return _fixed_operand(slot)
        if kind == "literal":
            lit = fv["LITERAL"]
            if slot.container == 16 and self.literal_optional:  # a 16-bit source prints the 16 bits it uses;
                lit &= 0xFFFF  # a K constant (v_madak_f16) prints its whole dword, as LLVM does
            if slot.table is not None and slot.table.partitioned:  # an always-literal imm32 (s_setreg_imm32)
                return Imm(lit, hex=True, text=syn.imm32_text(lit))
            return Imm(lit, hex=True)
        if kind == "label":  # llvm-objdump prints the raw (unsigned) dword offset
            return Imm(fv[slot.fname])
        if kind == "parts":
            return _decode_parts(slot, fv[slot.fname], self)
        if kind == "vaddr":
            n = fv.get("OFFEN", 0) + fv.get("IDXEN", 0)
            if n == 0:
                return OFF
            return self._reg_from_fields(slot, fv, n)
        if slot.width_field is not None:
            return self._reg_from_fields(slot, fv, syn.f8f6f4_registers(fv[slot.width_field], slot.nregs))
        if kind == "flat_addr":
            if self.scratch:
                if not fv.get("SVE", 0):
                    return OFF
                return self._reg_from_fields(slot, fv, 1)
            n = 2
            if self.flat_saddr is not None:
                saddr = self.slots[self.flat_saddr]
                if fv[saddr.fname] != (1 << saddr.codec.width) - 1:
                    n = 1
            return self._reg_from_fields(slot, fv, n)
        if kind == "saddr":
            if fv[slot.fname] == (1 << slot.codec.width) - 1:
                return OFF
            return self._reg_from_fields(slot, fv, slot.nregs)
        if kind == "smem_offset":
            if fv.get("SOFFSET_EN", 0):
                return self._reg_from_fields(slot, fv, slot.nregs)
            if fv.get("IMM", 0):
                return Imm(self.codecs["OFFSET"].unpack_int(word), hex=True)
            return _value_operand(slot, fv["OFFSET"], slot.nregs)
        if kind == "sdwa_sdst":
            if not fv.get("SD", 0):
                return Reg("vcc", 0, 2)
            return self._reg_from_fields(slot, fv, slot.nregs)
        return self._reg_from_fields(slot, fv, slot.nregs)

    def _reg_from_fields(self, slot: Slot, fv: dict, nregs: int):
        value = fv[slot.fname]
        if slot.sdwa_s is not None and not fv.get(slot.sdwa_s, 0):
            value |= 1 << slot.codec.width
        if slot.acc is not None:
            fname, pos = slot.acc
            if fv.get(fname, 0) >> pos & 1:
                with_acc = value | (1 << ACC_BIT)
                if with_acc in slot.table.by_value:
                    value = with_acc
        elif slot.acc_implied and value not in slot.table.by_value:
            value |= 1 << ACC_BIT
        return _value_operand(slot, value, nregs)


def _instruction(name: str, operands: tuple, modifiers: tuple) -> AsmInstruction:
    """An AsmInstruction from parts already in normal form (skips the constructor's normalization)."""
    inst = object.__new__(AsmInstruction)
    object.__setattr__(inst, "name", name)
    object.__setattr__(inst, "operands", operands)
    object.__setattr__(inst, "modifiers", modifiers)
    return inst


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


def _value_operand(slot: Slot, value: int, nregs: int):
    table = slot.table
    if table is None:
        return Imm(value)
    op = table.operand_for(value, nregs, slot.elem_bits, slot.container == 16 and not slot.is_float)
    if op is None:
        if table.literal is not None and value == table.literal:
            return Imm(0, hex=True)
        raise Mismatch(f"value {value} is not defined by operand type {table.name}")
    return op


def _fixed_operand(slot: Slot):
    table = slot.table
    for key in table.by_key:
        if key[0] == "name":
            name = key[1]
            return Reg(name, 0, 2 if name in syn.PAIR_NAMES else 1)
        if key[0] == "pair":
            return Reg(key[1], 0, 2)
    return Label(table.name)


def _fixed_text(table: TypeTable) -> str:
    return str(_fixed_operand_from_table(table))


def _fixed_operand_from_table(table: TypeTable):
    for key in table.by_key:
        if key[0] in ("name", "pair"):
            return key[1]
    return table.name


def _decode_parts(slot: Slot, value: int, form: Form):
    table = slot.table
    parts = table.parts
    if parts and set(parts) & set(syn.COUNTER_ORDER):
        # LLVM prints the counters that wait (below their maximum), or all of them when none does.
        order = [n for n in syn.COUNTER_ORDER if n in parts] + [n for n in parts if n not in syn.COUNTER_ORDER]
        written = []
        for n in order:
            f = parts[n]
            pv = f.extract(value)
            if pv != (1 << f.width) - 1:
                written.append((syn.counter_name(n), pv))
        if not written:
            written = [(syn.counter_name(n), parts[n].extract(value)) for n in order]
        return Counters(tuple(written))
    if form.name in syn.HWREG_MNEMONICS:
        return Imm(value, text=syn.hwreg_text(value))
    if table.name == "OPR_SENDMSG":  # the spec's message operand: printed as sendmsg(...), as llvm-objdump does
        return Imm(value, text=syn.sendmsg_text(value))
    if form.name in syn.GPR_IDX_MNEMONICS:
        text = syn.gpr_idx_text(value)
        return Imm(value, text=text) if text else Imm(value, hex=True)
    if form.imm_hex:
        return Imm(value, hex=True)
    if slot.signed_imm and value >> (slot.codec.width - 1):
        return Imm(value - (1 << slot.codec.width))
    return Imm(value, hex=value > 64)  # LLVM prints immediates beyond the inline range in hex


# --- building forms from the spec ---------------------------------------------------------------------

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
    form.rank = {"e64": 1, "dpp": 2, "sdwa": 2}.get(form.family, 0)
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
    form.mubuf = "OFFEN" in fields and "IDXEN" in fields and "VADDR" in fields
    form.scratch = "SVE" in fields and "SCRATCH" in enc.name.upper()
    form.sdwa_sd = "SD" in fields and "SDST" in fields
    form.vop3p = "NEG_HI" in fields
    # CDNA 4 block-scaled MFMA (ENC_VOP3PX2): op_sel/op_sel_hi pick the scale bytes; LLVM's syntax for them
    # differs from other VOP3P forms (see modifiers.py)
    form.scale_mfma = "SCALE_SRC0" in fields and "SCALE_SRC1" in fields
    form.mix = form.vop3p and syn.is_vop3p_mix(form.name)
    form.imm_hex = "SDST" in fields and "SIMM16" in fields

    # Slots in syntax order: the operands the syntax writes (not implicit ones).
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
    # Syntax adapters keyed on the encoding's fields.
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
    form.slots = tuple(slots)
    form.label_slot = next((s for s in slots if s.kind == "label"), None)
    form.nsrc = sum(1 for s in slots if s.src is not None)
    form.two_sources = any(s.src == 1 for s in slots)
    form.opsel_dst = "OP_SEL" in fields and not form.vop3p and fields["OP_SEL"].width > form.nsrc \
        and form.name not in syn.OPSEL_PER_BIT
    form.srcmods = {}
    if form.mix:   # mixed-precision VOP3P: NEG is `-x`, NEG_HI is `|x|` per source (LLVM's syntax)
        for s in slots:
            if s.src is not None:
                for flag, fname in (("neg", "NEG"), ("abs", "NEG_HI")):
                    if fname in fields and fields[fname].width > s.src:
                        form.srcmods[(flag, s.src)] = (fname, s.src)
    elif not form.vop3p:
        for s in slots:
            if s.src is None:
                continue
            for flag, fname in (("neg", "NEG"), ("abs", "ABS")):
                if fname in fields and fields[fname].width > s.src:
                    form.srcmods[(flag, s.src)] = (fname, s.src)
            for flag, fname in (("neg", f"SRC{s.src}_NEG"), ("abs", f"SRC{s.src}_ABS"),
                                ("sext", f"SRC{s.src}_SEXT")):
                if fname in fields:
                    form.srcmods[(flag, s.src)] = (fname, 0)
    form.bus = None
    if "VOP" in enc.name.upper():
        spots = tuple((s.fname, None if s.kind == "literal" else s.table.scalar_values, s.sdwa_s) for s in slots
                      if not s.output and s.fname and s.table is not None
                      and (s.kind == "literal" or (s.src is not None and s.table.scalar_values)))
        implicit = any(s.fname is None and not s.output for s in slots)
        if len(spots) + implicit > 1:
            form.bus = (syn.constant_bus_limit(spec.architecture.name), spots)
    if form.name in syn.BITOP3_MNEMONICS:  # NEG/ABS/OMOD hold the truth table here, not source modifiers
        form.srcmods = {}
    for s in slots:
        spots = tuple(form.srcmods.get((flag, s.src)) for flag in ("neg", "abs", "sext")) if s.src is not None \
            else (None, None, None)
        s.mod_spots = spots if any(spot is not None for spot in spots) else None
    form.mods = modifier_kinds(form, fields, spec)
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
    needed = set()
    for s in slots:
        if s.fname:
            needed.add(s.fname)
        if s.acc:
            needed.add(s.acc[0])
        if s.sdwa_s:
            needed.add(s.sdwa_s)
    for name in ("OFFEN", "IDXEN", "SVE", "SD", "IMM", "SOFFSET_EN", "OFFSET", "LDS", "SOFFSET"):
        if name in fields:
            needed.add(name)
    for fname, _bit in form.srcmods.values():
        needed.add(fname)
    for name in form.mods:
        for table in (syn.FLAG_FIELDS, syn.INT_FIELDS, syn.LIST_FIELDS, syn.SEL_FIELDS):
            if name in table and table[name] in fields:
                needed.add(table[name])
    if "bitop3" in form.mods:
        needed.update(f for f, _first, _width in syn.BITOP3_FIELDS if f in fields)
    if "keep_bits" in form.mods:
        needed.update(f for f, _bits in syn.SCALE_MFMA_HIDDEN if f in fields)
    for name in ("OMOD", "DST_UNUSED", "DPP_CTRL", "BOUND_CTRL", "OFFSET0", "OFFSET1", "LITERAL", "DFMT", "NFMT"):
        if name in fields:
            needed.add(name)
    form.decode_fields = tuple(sorted(needed))
    form.unpackers = tuple((n, form.codecs[n].simple, form.codecs[n].offset, form.codecs[n].mask, form.codecs[n])
                           for n in form.decode_fields)
    return form


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
        self.decode_cache: dict = {}

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
        from . import decode_index

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
