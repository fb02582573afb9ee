"""Operand types in LLVM's terms: which registers, named registers and constants a type accepts, their
encoded values, and how a number becomes an inline constant or a 32-bit literal for an operand.

Everything here comes from the spec's predefined values (`s7` = 7, `acc3` = 515, `0.5` = 240,
SRC_LITERAL = 255); only the spelling is LLVM's (see operand_syntax).
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

from jitgemm.isa.spec.field_codec import Mismatch
from jitgemm.isa.spec.model import OperandType

from . import operand_syntax as syn
from .instruction import Imm, Reg

if TYPE_CHECKING:  # forms imports this module
    from jitgemm.isa.spec.forms import Slot

ACC_BIT = 9  # operand values: bit 9 set means an AGPR (acc0 = 512, SRC acc0 = 768)


# --- operand types ------------------------------------------------------------------------------------

class TypeTable:
    """One operand type in LLVM terms: which registers/constants it accepts and their encoded values."""

    __slots__ = ("name", "by_key", "by_value", "literal", "floats", "ints", "acc", "acc_only", "partitioned",
                 "parts", "spec_type", "_describe", "float_bits", "scalar_values", "fast_values", "decode_only")

    def __init__(self, ot: OperandType, all_types) -> None:
        self.name = ot.name
        self.spec_type = ot
        self.partitioned = ot.partitioned
        self.parts = {f.name: f for f in ot.fields}
        self.by_key: dict = {}
        self.by_value: dict[int, tuple] = {}
        self.literal: int | None = None
        self.floats: dict[float, int] = {}
        self.ints: dict[int, int] = {}
        names_lower: dict[str, int] = {}
        regs: list[int] = []
        by_key, by_value, floats, ints = self.by_key, self.by_value, self.floats, self.ints
        for name, value, _text in ot.raw_values:  # one pass over the type's (often hundreds of) values
            names_lower[name.lower()] = value  # the last spelling wins, as before
            keys = syn.spec_register_keys(name)
            first = keys[0]
            if first == ("literal",):
                self.literal = value
                continue
            for key in keys:
                by_key.setdefault(key, value)
                if key[0] == "float":
                    floats.setdefault(key[1], value)
                elif key[0] == "int":
                    ints.setdefault(key[1], value)
            by_value.setdefault(value, first)
            if first[0] in ("s", "v", "a", "ttmp"):
                regs.append(value)
        # Values LLVM's disassembler names although the type leaves them undefined (decode-only: the parser
        # refuses their spelling, see operand_syntax.DECODE_ONLY_REGISTERS; only an instruction object, such as
        # the decoder's, encodes them). Not in by_key, so nothing offers them as values of the type.
        self.decode_only: dict[str, int] = {}
        kinds = {key[0] for key in by_key}
        special = ("name", "src_shared_base") in by_key
        for name, (value, where, _widest, _why) in syn.DECODE_ONLY_REGISTERS.items():
            if value in by_value or not (where == "sreg" and "s" in kinds or where == "src" and special
                                         or where == "vsrc" and special and "v" in kinds):
                continue
            by_value[value] = ("name", name)
            self.decode_only[name] = value
            if name.endswith("_lo") and name[:-3] in syn.PAIR_NAMES:   # `exec` as a 64-bit operand
                self.decode_only[name[:-3]] = value
        # 64-bit named pairs: `vcc` is VCC_LO taken two registers wide.
        for pair in syn.PAIR_NAMES:
            lo = names_lower.get(pair + "_lo")
            if lo is not None:
                by_key.setdefault(("pair", pair), lo)
        self.float_bits = {bits: {syn.inline_float_bits(f, bits): enc for f, enc in self.floats.items()}
                           for bits in (16, 32, 64)}
        self.acc = any(v >> ACC_BIT & 1 for v in regs)
        self.acc_only = bool(regs) and all(v >> ACC_BIT & 1 for v in regs)
        # values that occupy the constant bus when read: SGPRs, special registers and the literal
        scalar = {v for v, key in self.by_value.items() if key[0] not in ("v", "a", "int", "float")
                  and v not in self.decode_only.values()}
        if self.literal is not None:
            scalar.add(self.literal)
        self.scalar_values = frozenset(scalar)
        self._describe: str | None = None
        self.fast_values: dict = {}  # the encoder's fast-path tables per (width, registers, element bits)

    def describe(self) -> str:
        """What this type accepts, for error messages (register classes and constants, compressed)."""
        if self._describe is not None:
            return self._describe
        ot = self.spec_type
        if ot.partitioned:
            parts = ", ".join(f"{f.name} {f.layout_text}" for f in ot.fields)
            text = f"{ot.name} (an immediate with parts {parts})" if parts else ot.name
            self._describe = text
            return text
        groups: dict[str, list[int]] = {}
        named: list[str] = []
        ints: list[int] = []
        floats: list[str] = []
        for pv in ot.values:
            key = syn.spec_register_keys(pv.name)[0]
            if key[0] in ("s", "v", "a", "ttmp"):
                groups.setdefault(key[0], []).append(key[1])
            elif key[0] == "int":
                ints.append(key[1])
            elif key[0] == "float":
                floats.append(syn.float_text(key[1]))
            elif key[0] == "name":
                named.append(key[1])
        pieces = []
        for kind in ("s", "v", "a", "ttmp"):
            if kind in groups:
                idx = sorted(groups[kind])
                pieces.append(f"{kind}{idx[0]}..{kind}{idx[-1]}" if len(idx) > 1 else f"{kind}{idx[0]}")
        pieces.extend(named)
        if ints:
            pieces.append(f"integers {min(ints)}..{max(ints)}")
        if floats:
            pieces.append("floats " + ", ".join(floats))
        if self.literal is not None:
            pieces.append("32-bit literals")
        text = f"{ot.name}: " + (", ".join(pieces) if pieces else "no values")
        self._describe = text
        return text

    def operand_for(self, value: int, nregs: int, elem_bits: int = 32, int16: bool = False):
        """The operand an encoded value stands for (Reg or Imm), or None when the type has no such value."""
        key = self.by_value.get(value)
        if key is None:
            return None
        k = key[0]
        if k in ("s", "v", "a", "ttmp"):
            index = key[1]
            if k == "ttmp" and ("ttmp", (index & ~(1 if nregs == 2 else 3)) + nregs - 1) not in self.by_key:
                return None   # a trap-temporary tuple past the last ttmp (ttmp[4:19]): no such register tuple
            if nregs > 1 and k in ("s", "ttmp"):
                # A scalar tuple starts at a multiple of 2 (64-bit) or 4 (wider); the hardware ignores the low
                # bits of the field, and LLVM prints the aligned tuple (AMDGPUDisassembler::createSRegOperand
                # shifts the value right by 1 or 2; ISA guide 3.3.1 "SGPR alignment").
                index &= ~(1 if nregs == 2 else 3)
            return Reg(k, index, nregs)
        if k == "int":
            return Imm(key[1])
        if k == "float":
            if int16:
                # A VALU 16-bit integer operand (not packed, not scalar) reads a float inline constant as its
                # f16 bit pattern, which LLVM prints in hex (AMDGPUDisassembler::decodeIntImmed for
                # OPERAND_REG_*_INT16; 1.0 -> 0x3c00); SALU and packed operands print the float.
                return Imm(syn.float_bits(syn.inline_float_value(key[1], 16), 16), hex=True)
            return Imm(syn.inline_float_value(key[1], elem_bits))
        name = key[1]
        if nregs > 1 and name in self.decode_only and nregs > syn.DECODE_ONLY_REGISTERS[name][2]:
            return None  # wider than LLVM decodes it (m0 as a 128-bit resource is `.long` to llvm-objdump)
        if nregs == 2 and name.endswith("_lo") and name[:-3] in syn.PAIR_NAMES:
            return Reg(name[:-3], 0, 2)
        if nregs > 2 or nregs > 1 and (name.endswith("_hi") or name in syn.NO_WIDE_NAMES):
            # the high half of a pair (or M0) does not start a 64-bit register, and no named register is wider
            # than 64 bits: LLVM's decoder has no such operand (AMDGPUDisassembler::decodeSpecialReg64 lists
            # flat_scratch, xnack_mask, vcc, tba, tma, exec and the 64-bit sources; llvm-objdump-22 prints
            # `s_xor_b64 flat_scratch_hi, ...` as .long)
            return None
        return Reg(name, 0, 1)

# --- constants ----------------------------------------------------------------------------------------

# Smallest normal magnitude per float width (IEEE 754 binary16/32/64).
_MIN_NORMAL = {16: 2.0 ** -14, 32: 2.0 ** -126, 64: 2.0 ** -1022}


def _check_underflow(value: float, lit: int, bits: int) -> None:
    """Refuse a float literal that becomes a denormal or zero and is not exactly representable: llvm-mc
    rejects such a literal ("invalid operand for instruction": APFloat reports underflow), where a silent
    rounding would put a different value (often 0) into the kernel."""
    if value == 0.0 or math.isinf(value) or math.isnan(value) or abs(value) >= _MIN_NORMAL[bits]:
        return
    width = 16 if bits == 16 else 32
    back = struct.unpack("<e" if width == 16 else "<f", lit.to_bytes(width // 8, "little"))[0] if bits != 64 \
        else struct.unpack("<d", (lit << 32).to_bytes(8, "little"))[0]
    if back != value:
        raise Mismatch(f"{value!r} is below the smallest normal {bits}-bit float ({_MIN_NORMAL[bits]:.3g}) and would "
                       f"round to {back!r}; write a representable value or its bit pattern in hex")


def int16_inline_pattern(slot: Slot, value) -> int | None:
    """Where a 16-bit integer operand cannot take a literal (SDWA, VOP3 on GFX9), the f16 pattern of an inline
    float is that inline constant: it is how LLVM prints one there (`0x3800` for 0.5), so it reassembles."""
    if slot.container != 16 or slot.is_float or not isinstance(value, int) or isinstance(value, bool):
        return None
    return slot.table.float_bits[16].get(value & 0xFFFF) if slot.table is not None else None


def constant_encoding(slot: Slot, value) -> tuple[int | None, int | None]:
    """(inline value, None) when `value` is an inline constant of the slot's type, else (None, literal
    bits) as the 32-bit literal LLVM would emit; Mismatch when the value cannot be written at all."""
    table = slot.table
    bits = slot.elem_bits
    if isinstance(value, bool):
        raise Mismatch(f"{value} is not a number")
    if isinstance(value, float):
        key = syn.inline_float_key(value, bits)
        if value != 0.0 and key in table.floats:
            return table.floats[key], None
        if value == 0.0 and math.copysign(1.0, value) > 0 and 0 in table.ints:
            return table.ints[0], None
        try:
            if bits == 16 and slot.is_float:
                lit = _half_bits(slot, value)
            elif bits == 64 and not slot.is_float:
                # LLVM AMDGPUOperand::isLiteralImm: "We don't allow fp literals in 64-bit integer instructions"
                raise Mismatch(f"{value!r} is not an inline constant, and a 64-bit integer operand takes no float "
                               "literal")
            elif bits == 64:
                b = syn.float_bits(value, 64)
                if b & 0xFFFFFFFF:
                    raise Mismatch(f"{value!r} needs 64 bits; a literal holds only the high 32 bits of a double")
                lit = b >> 32
            else:
                lit = syn.float_bits(value, 32)
        except (OverflowError, struct.error):
            raise Mismatch(f"{value!r} does not fit a {bits}-bit float") from None
        _check_underflow(value, lit, 16 if (bits == 16 and slot.is_float) else 32 if bits != 64 else 64)
        return None, lit
    if not isinstance(value, int):
        raise Mismatch(f"{value!r} is not a number")
    container = slot.container
    if container == 16:
        # 16-bit operands take -32768..65535. For f16 ones the value is a 16-bit pattern (0xffff is the
        # inline -1, 0x3c00 the inline 1.0, literals hold 16 bits); integer ones compare and store the
        # number itself (sign-extended to 32 bits), as LLVM does.
        if not -(1 << 15) <= value < (1 << 16):
            raise Mismatch(f"{const_text(value)} does not fit in 16 bits")
        if not slot.is_float:
            inline = table.ints.get(value)
            if inline is not None:
                return inline, None
            return None, value & 0xFFFFFFFF
        v16 = value & 0xFFFF
        sv = v16 - (1 << 16) if v16 >> 15 else v16
        inline = table.ints.get(sv)
        if inline is not None:
            return inline, None
        enc = table.float_bits[16].get(v16)
        if enc is not None:
            return enc, None
        return None, v16
    if container <= 32:
        if not -(1 << 31) <= value < (1 << 32):
            raise Mismatch(f"{const_text(value)} does not fit in 32 bits")
        v32 = value & 0xFFFFFFFF
        sv = v32 - (1 << 32) if v32 >> 31 else v32
        inline = table.ints.get(sv)
        if inline is not None:
            return inline, None
        # packed 16-bit operands match the f16 patterns of the inline floats, others the f32 ones
        enc = table.float_bits[16 if bits == 16 else 32].get(v32)
        if enc is not None:
            return enc, None
        return None, v32
    # 64-bit operands: inline integers, inline doubles by bit pattern; literals are 32 bits.
    inline = table.ints.get(value)
    if inline is not None:
        return inline, None
    if slot.is_float:
        enc = table.float_bits[64].get(value & 0xFFFFFFFFFFFFFFFF)
        if enc is not None:
            return enc, None
    if not -(1 << 31) <= value < (1 << 32):
        raise Mismatch(f"{const_text(value)} does not fit a 32-bit literal")
    return None, value & 0xFFFFFFFF


def _half_bits(slot: Slot, value: float) -> int:
    """A 16-bit float literal: bf16 (the f32 pattern's high half, rounded to nearest even) for a bf16 operand
    (llvm-mc-22 -mcpu=gfx950: `v_cvt_f32_bf16 v4, 1.5` carries 0x3fc0), else f16."""
    if "BF16" in (slot.data_format or ""):
        b = syn.float_bits(value, 32)
        if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
            return (b >> 16) | 0x40
        return ((b + 0x7FFF + (b >> 16 & 1)) >> 16) & 0xFFFF
    return syn.float_bits(value, 16)


def literal_bits(slot: Slot, value) -> int:
    """The literal dword for a value even when it has an inline spelling (for mandatory literals)."""
    if isinstance(value, float):
        bits = slot.elem_bits
        if bits == 16 and slot.is_float:
            return _half_bits(slot, value)
        if bits == 64:
            return syn.float_bits(value, 64) >> 32
        return syn.float_bits(value, 32)
    return value & 0xFFFFFFFF


def const_text(value) -> str:
    if isinstance(value, float):
        return repr(value)
    return hex(value) if abs(value) > 64 else str(value)
