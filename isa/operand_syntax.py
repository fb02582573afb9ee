"""How LLVM's AMDGPU assembly spells things: registers, constants, modifiers, mnemonic suffixes.

This module holds syntax knowledge only. What an instruction *is* (its encodings, fields, opcodes,
operand types and their values) comes from the loaded spec; here is only how a person writes it, as
accepted by `llvm-mc -mcpu=gfx942` and printed by `llvm-objdump` (checked by the tests against both).
Modifiers name the spec's encoding fields they write (`offset:` -> OFFSET, `sc0` -> SC0), so a form
offers exactly the modifiers its encoding has fields for.
"""

from __future__ import annotations

import functools
import math
import re
import struct

# --- registers --------------------------------------------------------------------------------------

# LLVM names of 64-bit register pairs whose spec names are <NAME>_LO / <NAME>_HI.
PAIR_NAMES = frozenset({"vcc", "exec", "flat_scratch", "xnack_mask"})

# Named registers the parser recognises without a spec (the encoder also accepts any other name the
# operand type predefines, so this list only decides whether a bare word is a register or a label).
NAMED_REGISTERS = frozenset({
    "vcc", "vcc_lo", "vcc_hi", "exec", "exec_lo", "exec_hi", "m0", "scc", "flat_scratch",
    "flat_scratch_lo", "flat_scratch_hi", "xnack_mask", "xnack_mask_lo", "xnack_mask_hi",
    "vccz", "execz", "src_vccz", "src_execz", "src_scc", "shared_base", "shared_limit",
    "private_base", "private_limit", "pops_exiting_wave_id", "src_shared_base", "src_shared_limit",
    "src_private_base", "src_private_limit", "src_pops_exiting_wave_id", "lds_direct", "src_lds_direct",
})

# Read-only sources that are as wide as the operand reading them: llvm-mc accepts them in 32- and 64-bit
# operands alike (`s_mov_b64 s[0:1], src_shared_base`), where every other named register has one width
# (`m0`, `vcc_lo` are 32-bit, `exec`, `vcc` 64-bit). LLVM: SIRegisterInfo.td, the SRC_* registers are in
# both the SReg_32 and SReg_64 source classes; checked against llvm-mc-22 in tests/isa/test_asm_llvm_verdicts.py.
ANY_WIDTH_REGISTERS = frozenset({
    "src_shared_base", "src_shared_limit", "src_private_base", "src_private_limit", "src_pops_exiting_wave_id",
    "src_vccz", "src_execz", "src_scc", "shared_base", "shared_limit", "private_base", "private_limit",
    "pops_exiting_wave_id", "vccz", "execz", "scc", "null", "src_flat_scratch_base_lo", "src_flat_scratch_base_hi",
    "src_lds_direct",
})

# Register names LLVM 22's disassembler gives to field values AMD's CDNA 3 spec leaves undefined on gfx942
# (AMDGPUDisassembler::decodeSpecialReg32/64 name them without a target check: `null` is GFX10+, the flat
# scratch base sources GFX12.5, `src_lds_direct` pre-gfx90a), with what llvm-mc-22 -mcpu=gfx942 says when
# one is written. name -> (field value, which operand types LLVM decodes it in, the widest operand in
# registers LLVM decodes it as (llvm-objdump prints a wider one as .long), LLVM's error). The decoder
# prints them, as llvm-objdump does, and keeps the value, so the instruction re-encodes to its bytes; the
# parser refuses the spelling, as llvm-mc does. Kinds of type: "sreg" = any type with SGPRs, "src" = a type
# with the special source values (src_shared_base ...), "vsrc" = such a type that also takes VGPRs (VALU).
DECODE_ONLY_REGISTERS = {
    "null": (125, "sreg", 2, "'null' operand is not supported on this GPU"),
    # LLVM reads every 7-bit scalar register field as the whole SReg_32 file, so M0 and EXEC also decode where
    # the spec's type allows only SGPRs (scratch SADDR, SMEM SBASE/SDATA/offset); llvm-mc takes or refuses
    # these spellings by its own register classes, the assembler here by the spec's type (no message of its own)
    "m0": (124, "sreg", 1, None),
    "exec_lo": (126, "sreg", 2, None),      # two registers wide: `exec`
    "exec_hi": (127, "sreg", 1, None),
    "src_flat_scratch_base_lo": (230, "src", 2, "src_flat_scratch_base_lo register not available on this GPU"),
    "src_flat_scratch_base_hi": (231, "src", 2, "src_flat_scratch_base_hi register not available on this GPU"),
    "src_lds_direct": (254, "vsrc", 1, "lds_direct is not supported on this GPU"),
}
# every spelling llvm-mc reads for them -> its error
DECODE_ONLY_SPELLINGS = {**{name: why for name, (_v, _k, _n, why) in DECODE_ONLY_REGISTERS.items() if why},
                         "lds_direct": DECODE_ONLY_REGISTERS["src_lds_direct"][3]}


def decode_only_error(spelling: str) -> str:
    """The parser's message for a register only LLVM's disassembler names (see DECODE_ONLY_REGISTERS)."""
    return (f"{spelling}: {DECODE_ONLY_SPELLINGS[spelling.lower()]} (llvm-mc-22 rejects it for gfx942; the "
            f"disassembler prints it only where llvm-objdump-22 does)")


# Spec register-name prefix for each numbered kind (LLVM writes AGPRs as `a5`, the spec as `acc5`).
SPEC_PREFIX = {"s": "s", "v": "v", "a": "acc", "ttmp": "ttmp"}

NUMBERED_REGISTER = re.compile(r"(ttmp|s|v|a)([0-9]{1,6})\Z")  # ASCII digits only, as llvm-mc


# The longest integer literal accepted: llvm-mc reads integers into 64 bits ("literal value out of range").
INTEGER_BITS = 64


def integer_value(text: str) -> int:
    """An integer literal as llvm-mc's lexer reads it (llvm/lib/MC/MCParser/AsmLexer.cpp): `0x`/`0X` hex,
    `0b`/`0B` binary, a leading `0` octal, else decimal; ASCII digits only. ValueError saying what is
    accepted for anything else, or for a value wider than 64 bits."""
    low = text.lower()
    if low.startswith("0x"):
        digits, base, what = low[2:], 16, "a hex"
    elif low.startswith("0b"):
        digits, base, what = low[2:], 2, "a binary"
    elif len(low) > 1 and low[0] == "0":
        digits, base, what = low[1:], 8, "an octal (leading 0)"
    else:
        digits, base, what = low, 10, "a decimal"
    allowed = "0123456789abcdef"[:base]
    if not digits or any(c not in allowed for c in digits):
        raise ValueError(f"{text!r} is not {what} integer (digits {allowed[0]}-{allowed[-1]})")
    if len(digits) > INTEGER_BITS:  # before int(): Python refuses very long decimal strings
        raise ValueError(f"integer {text[:20]}... ({len(text)} characters) does not fit in {INTEGER_BITS} bits")
    value = int(digits, base)
    if value >> INTEGER_BITS:
        raise ValueError(f"integer {text} does not fit in {INTEGER_BITS} bits")
    return value


@functools.cache   # pure, and asked three times for each of the thousands of predefined values of each type
def spec_register_keys(spec_name: str) -> tuple:
    """Keys under which a predefined operand-type value is found in LLVM terms.

    ('s', 7) for s7, ('a', 3) for acc3, ('ttmp', 2) for TTMP2, ('int', 5) for "5",
    ('float', 0.5) for "0.5", ('name', 'vcc_lo') for VCC_LO (and ('name', 'scc') for SRC_SCC), or
    ('literal',) for SRC_LITERAL.
    """
    low = spec_name.lower()
    m = re.fullmatch(r"(acc|ttmp|s|v)(\d+)", low)
    if m:
        kind = {"acc": "a"}.get(m.group(1), m.group(1))
        return ((kind, int(m.group(2))),)
    if re.fullmatch(r"-?\d+", low):
        return (("int", int(low)),)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", low):
        return (("float", float(low)),)
    if low == "src_literal":
        return (("literal",),)
    keys = [("name", low)]
    if low.startswith("src_"):
        keys.append(("name", low[4:]))
    return tuple(keys)


def named_register_display(spec_name: str) -> str:
    """LLVM's spelling of a named register from its spec name (`SRC_SCC` -> `src_scc`)."""
    return spec_name.lower()


# --- constants --------------------------------------------------------------------------------------

# LLVM spells the inline constant 1/(2*pi) as 0.15915494; the hardware value is 1/(2*pi) rounded to the
# operand's precision (not the decimal as written).
INV_2PI_TEXT = "0.15915494"
INV_2PI = 1.0 / (2.0 * math.pi)


def float_bits(value: float, bits: int) -> int:
    """IEEE bit pattern of `value` in a `bits`-wide float (16, 32 or 64); OverflowError when it does
    not fit."""
    if bits == 16:
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if bits == 32:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<Q", struct.pack("<d", value))[0]


# In operands with 64-bit elements the hardware's 1/(2*pi) is the double 0x3fc45f306dc9c882, which LLVM
# prints and accepts as 0.15915494309189532; there the short decimal is an ordinary (non-inline) value.
INV_2PI_F64_BITS = 0x3FC45F306DC9C882
INV_2PI_F64 = struct.unpack("<d", struct.pack("<Q", INV_2PI_F64_BITS))[0]


def inline_float_bits(value: float, bits: int) -> int:
    """Bit pattern of an inline float constant at a precision (1/(2*pi) is exact, not the decimal)."""
    if value == float(INV_2PI_TEXT) or value == INV_2PI_F64:
        if bits == 64:
            return INV_2PI_F64_BITS
        value = INV_2PI
    return float_bits(value, bits)


def inline_float_key(value: float, elem_bits: int) -> float | None:
    """The spec's spelling of the inline float an operand with `elem_bits`-wide elements reads as `value`
    (LLVM writes 1/(2*pi) differently at 64 bits), or None when `value` is not an inline spelling there."""
    if elem_bits == 64:
        if value == INV_2PI_F64:
            return float(INV_2PI_TEXT)
        if value == float(INV_2PI_TEXT):
            return None
    return value


def inline_float_value(spec_value: float, elem_bits: int) -> float:
    """How LLVM writes the spec's inline float `spec_value` in an operand with `elem_bits`-wide elements."""
    if elem_bits == 64 and spec_value == float(INV_2PI_TEXT):
        return INV_2PI_F64
    return spec_value


def float_text(value: float) -> str:
    """How LLVM prints an inline float constant."""
    if value == float(INV_2PI_TEXT):
        return INV_2PI_TEXT
    return repr(float(value))


# --- mnemonics --------------------------------------------------------------------------------------

# Encoding-variant suffixes of VOP instructions, and which spec encodings each selects (by the
# encoding's name, which the MR-ISA files spell ENC_VOP1, VOP1_INST_LITERAL, VOP2_VOP_DPP,
# VOPC_VOP_SDWA_SDST_ENC, ENC_VOP3, ...).
SUFFIXES = ("_e32", "_e64", "_dpp", "_sdwa")


@functools.cache   # a spec has a few dozen encodings; every form of every instruction asks (the first decode's index)
def encoding_family(encoding_name: str) -> str:
    """'dpp', 'sdwa', 'e32' (VOP1/VOP2/VOPC and their literal forms), 'e64' (VOP3) or '' (the rest)."""
    name = encoding_name.upper()
    if "DPP" in name:
        return "dpp"
    if "SDWA" in name:
        return "sdwa"
    if re.search(r"VOP[12C](?![0-9A-Z])", name):
        return "e32"
    if re.search(r"VOP3(?!P)", name):
        return "e64"
    return ""


# VOP1 instructions that LLVM spells without an _e32/_e64 suffix although the spec also gives them a
# VOP3 encoding (LLVM defines no separate VOP3 spelling for them). Checked against llvm-mc by the tests.
NO_SUFFIX = frozenset({"v_nop", "v_clrexcp", "v_readfirstlane_b32", "v_accvgpr_mov_b32", "v_swap_b32"})

# (instruction, source index) of 16-bit integer sources that LLVM types as 32-bit (the i32 exponent of
# ldexp, VOP_F16_F16_I32 in LLVM's VOP profiles): constants there are 32-bit ones, printed as floats.
INT16_AS_INT32 = frozenset({("v_ldexp_f16", 1)})

# VOP3 instructions whose op_sel LLVM writes with one element per OP_SEL bit (not one per source plus the
# destination): the stochastic-rounding fp8 conversions, where LLVM counts the kept destination as a third
# source and op_sel[2:3] pick the result byte; on gfx950 also the two-source scaled fp4 packs from f16/bf16,
# whose op_sel[2:3] pick the result byte the same way (llvm-mc-22 -mcpu=gfx950).
OPSEL_PER_BIT = frozenset({"v_cvt_sr_fp8_f32", "v_cvt_sr_bf8_f32", "v_cvt_scalef32_pk_fp4_f16",
                           "v_cvt_scalef32_pk_fp4_bf16"})

# gfx950's lane-swap instructions take DPP's bound_ctrl and fi in their VOP3 form, held in OP_SEL bits (modifier ->
# bit): llvm-mc-22 -mcpu=gfx950 -show-encoding encodes `v_permlane16_swap_b32_e64 v0, v1 bound_ctrl:1 fi:1` as
# 00 18 99 d1 ... (word bit 12 = OP_SEL[1] for bound_ctrl, bit 11 = OP_SEL[0] for fi; LLVM's VOP3_PERMLANE_SWAP
# profile); fi:0 leaves its bit clear, bound_ctrl:0 sets it as bound_ctrl:1 does (as in DPP).
OPSEL_DPP_FLAGS = {name: {"fi": 0, "bound_ctrl": 1} for name in ("v_permlane16_swap_b32", "v_permlane32_swap_b32")}

# gfx950 VOP3 instructions whose LLVM profiles have no clamp and no output modifier, though ENC_VOP3 has CLAMP and
# OMOD: llvm-mc-22 -mcpu=gfx950 refuses `clamp`, `mul:2`, `mul:4`, `div:2` on each ("invalid operand for
# instruction" / "not a valid operand", tests/fixtures/gfx950_modifiers.py); their bits are kept unprinted.
NO_CLAMP_OMOD = frozenset({
    "v_ashr_pk_i8_i32", "v_ashr_pk_u8_i32", "v_bitop3_b16", "v_bitop3_b32", "v_cvt_scalef32_2xpk16_bf6_f32",
    "v_cvt_scalef32_2xpk16_fp6_f32", "v_cvt_scalef32_f16_bf8", "v_cvt_scalef32_f16_fp8",
    "v_cvt_scalef32_f32_bf8", "v_cvt_scalef32_f32_fp8", "v_cvt_scalef32_pk32_bf16_bf6",
    "v_cvt_scalef32_pk32_bf16_fp6", "v_cvt_scalef32_pk32_bf6_bf16", "v_cvt_scalef32_pk32_bf6_f16",
    "v_cvt_scalef32_pk32_f16_bf6", "v_cvt_scalef32_pk32_f16_fp6", "v_cvt_scalef32_pk32_f32_bf6",
    "v_cvt_scalef32_pk32_f32_fp6", "v_cvt_scalef32_pk32_fp6_bf16", "v_cvt_scalef32_pk32_fp6_f16",
    "v_cvt_scalef32_pk_bf16_bf8", "v_cvt_scalef32_pk_bf16_fp4", "v_cvt_scalef32_pk_bf16_fp8",
    "v_cvt_scalef32_pk_bf8_bf16", "v_cvt_scalef32_pk_bf8_f16", "v_cvt_scalef32_pk_bf8_f32",
    "v_cvt_scalef32_pk_f16_bf8", "v_cvt_scalef32_pk_f16_fp4", "v_cvt_scalef32_pk_f16_fp8",
    "v_cvt_scalef32_pk_f32_bf8", "v_cvt_scalef32_pk_f32_fp4", "v_cvt_scalef32_pk_f32_fp8",
    "v_cvt_scalef32_pk_fp4_bf16", "v_cvt_scalef32_pk_fp4_f16", "v_cvt_scalef32_pk_fp4_f32",
    "v_cvt_scalef32_pk_fp8_bf16", "v_cvt_scalef32_pk_fp8_f16", "v_cvt_scalef32_pk_fp8_f32",
    "v_cvt_scalef32_sr_bf8_bf16", "v_cvt_scalef32_sr_bf8_f16", "v_cvt_scalef32_sr_bf8_f32",
    "v_cvt_scalef32_sr_fp8_bf16", "v_cvt_scalef32_sr_fp8_f16", "v_cvt_scalef32_sr_fp8_f32",
    "v_cvt_scalef32_sr_pk32_bf6_bf16", "v_cvt_scalef32_sr_pk32_bf6_f16", "v_cvt_scalef32_sr_pk32_bf6_f32",
    "v_cvt_scalef32_sr_pk32_fp6_bf16", "v_cvt_scalef32_sr_pk32_fp6_f16", "v_cvt_scalef32_sr_pk32_fp6_f32",
    "v_cvt_scalef32_sr_pk_fp4_bf16", "v_cvt_scalef32_sr_pk_fp4_f16", "v_cvt_scalef32_sr_pk_fp4_f32",
    "v_cvt_sr_bf16_f32", "v_cvt_sr_f16_f32", "v_mfma_ld_scale_b32", "v_permlane16_swap_b32",
    "v_permlane32_swap_b32", "v_prng_b32"
})

# gfx950 MFMAs on f8f6f4 operands: their CBSZ/BLGP pick the formats, and LLVM has no abid for them (llvm-mc-22
# -mcpu=gfx950 "not a valid operand").
NO_ABID = frozenset({"v_mfma_f32_16x16x128_f8f6f4", "v_mfma_f32_32x32x64_f8f6f4"})
# gfx950 v_dot2_f32_bf16 (VOP3P): llvm-mc-22 refuses any op_sel or a non-default op_sel_hi ("invalid op_sel
# operand"); the bits are kept unprinted.
NO_OPSEL_VOP3P = frozenset({"v_dot2_f32_bf16"})
# gfx950 v_mfma_ld_scale_b32 (VOP3P, two scale sources): LLVM has no neg_lo/neg_hi for it and its op_sel and
# op_sel_hi reach the two sources only (llvm-mc-22: `op_sel:[0,0,1]` encodes as op_sel:[0,0], OP_SEL_HI[2] stays 1).
SOURCES_ONLY_VOP3P = frozenset({"v_mfma_ld_scale_b32"})

# VOP3 instructions with 16-bit parts whose LLVM profile has no op_sel operand (VOP3Instructions.td: the GFX8
# opcodes kept as *_legacy_* on GFX9, v_sad_u16 and the packing conversions from 32-bit sources): llvm-objdump-22
# prints no op_sel for them and llvm-mc-22 rejects one ("not a valid operand"); their OP_SEL bits are kept
# unprinted (keep_bits). Checked against both by tests/isa/test_disasm_llvm_random.py::test_op_sel_where_llvm_has_it.
NO_OPSEL = frozenset({"v_sad_u16", "v_mad_legacy_f16", "v_mad_legacy_u16", "v_mad_legacy_i16", "v_fma_legacy_f16",
                      "v_div_fixup_legacy_f16", "v_cvt_pknorm_i16_f32", "v_cvt_pknorm_u16_f32", "v_cvt_pkrtz_f16_f32",
                      "v_cvt_pk_u16_u32", "v_cvt_pk_i16_i32",
                      # gfx950: llvm-mc-22 -mcpu=gfx950 has no op_sel for these ("not a valid operand")
                      "v_cvt_scalef32_2xpk16_fp6_f32", "v_cvt_scalef32_2xpk16_bf6_f32",
                      "v_cvt_scalef32_sr_pk32_fp6_f32", "v_cvt_scalef32_sr_pk32_bf6_f32",
                      "v_cvt_scalef32_pk32_f32_fp6", "v_cvt_scalef32_pk32_f32_bf6",
                      "v_cvt_scalef32_pk32_fp6_f16", "v_cvt_scalef32_pk32_fp6_bf16",
                      "v_cvt_scalef32_pk32_bf6_f16", "v_cvt_scalef32_pk32_bf6_bf16",
                      "v_cvt_scalef32_sr_pk32_fp6_f16", "v_cvt_scalef32_sr_pk32_fp6_bf16",
                      "v_cvt_scalef32_sr_pk32_bf6_f16", "v_cvt_scalef32_sr_pk32_bf6_bf16",
                      "v_cvt_scalef32_pk32_f16_fp6", "v_cvt_scalef32_pk32_bf16_fp6",
                      "v_cvt_scalef32_pk32_f16_bf6", "v_cvt_scalef32_pk32_bf16_bf6", "v_cvt_pk_f16_f32",
                      "v_cvt_pk_bf16_f32"})

# An immediate LLVM's syntax has where AMD's spec gives the instruction no operand: mnemonic -> the field it is.
# S_ENDPGM takes an optional imm16 in LLVM (SOPInstructions.td, EndpgmImm; AMDGPUInstPrinter::printEndpgm prints
# it in decimal when it is not 0); llvm-mc-22 encodes `s_endpgm 5` into SIMM16.
OPTIONAL_IMMEDIATES = {"s_endpgm": "SIMM16"}

# 32-bit VOP3 instructions whose LLVM profile has op_sel all the same (VOP3Instructions.td: V_ALIGNBIT_B32 and
# V_ALIGNBYTE_B32 take the OpSel profile on GFX9.4; llvm-mc-22 -mcpu=gfx942 encodes `op_sel:[1,0,0,0]` in OP_SEL).
OPSEL_32BIT = frozenset({"v_alignbit_b32", "v_alignbyte_b32"})

# SDWA forms LLVM writes without dst_sel/dst_unused (their result is always a whole dword).
SDWA_NO_DST_SEL = frozenset({"v_cvt_f32_fp8", "v_cvt_f32_bf8", "v_cvt_pk_f32_fp8", "v_cvt_pk_f32_bf8"})

_TYPE_SUFFIX = re.compile(r"_(b|f|i|u|bf|fp|bf)\d+\Z", re.IGNORECASE)


def llvm_name(name: str, aliases: tuple[str, ...]) -> str:
    """LLVM's mnemonic for a spec instruction: its name, unless that lacks the data-type suffix LLVM
    always writes and an alias is exactly the name plus such a suffix (V_ACCVGPR_READ ->
    v_accvgpr_read_b32)."""
    if not _TYPE_SUFFIX.search(name):
        for alias in aliases:
            if alias.upper().startswith(name.upper() + "_") and _TYPE_SUFFIX.search(alias) \
                    and alias.count("_") == name.count("_") + 1:
                return alias.lower()
    return name.lower()


def split_suffix(mnemonic: str) -> tuple[str, str]:
    """('v_add_f32', '_e64') from 'v_add_f32_e64'; ('s_nop', '') when there is no suffix."""
    low = mnemonic.lower()
    for suffix in SUFFIXES:
        if low.endswith(suffix):
            return low[: -len(suffix)], suffix
    return low, ""


_DS_TWO_OFFSETS = re.compile(r"ds_(read|write|wrxchg)2")


def ds_two_offsets(mnemonic: str) -> bool:
    """DS instructions with two addresses take offset0:/offset1:, the others one 16-bit offset:."""
    return bool(_DS_TWO_OFFSETS.match(mnemonic))


# --- modifiers --------------------------------------------------------------------------------------

SDWA_SEL = {"BYTE_0": 0, "BYTE_1": 1, "BYTE_2": 2, "BYTE_3": 3, "WORD_0": 4, "WORD_1": 5, "DWORD": 6}
SDWA_SEL_NAMES = {v: k for k, v in SDWA_SEL.items()}
SDWA_UNUSED = {"UNUSED_PAD": 0, "UNUSED_SEXT": 1, "UNUSED_PRESERVE": 2}
SDWA_UNUSED_NAMES = {v: k for k, v in SDWA_UNUSED.items()}

OMOD = {("mul", 2): 1, ("mul", 4): 2, ("div", 2): 3}
OMOD_NAMES = {v: k for k, v in OMOD.items()}

# DPP control: LLVM modifier -> (base value, allowed arguments). quad_perm takes a 4-list of 0..3.
DPP_CTRL = {
    "row_shl": (0x100, range(1, 16)),
    "row_shr": (0x110, range(1, 16)),
    "row_ror": (0x120, range(1, 16)),
    "wave_shl": (0x130, (1,)),
    "wave_rol": (0x134, (1,)),
    "wave_shr": (0x138, (1,)),
    "wave_ror": (0x13C, (1,)),
    "row_mirror": (0x140, None),
    "row_half_mirror": (0x141, None),
    "row_bcast": (0x142, (15, 31)),
    "row_newbcast": (0x150, range(0, 16)),
}


def dpp_ctrl_value(name: str, value) -> int | None:
    """DPP_CTRL field value for one DPP control modifier, or None when the value is not valid."""
    if name == "quad_perm":
        if not (isinstance(value, tuple) and len(value) == 4 and all(isinstance(x, int) and 0 <= x <= 3
                                                                     for x in value)):
            return None
        return value[0] | value[1] << 2 | value[2] << 4 | value[3] << 6
    base, allowed = DPP_CTRL[name]
    if allowed is None:
        return base if value is True else None
    if not isinstance(value, int) or isinstance(value, bool) or value not in allowed:
        return None
    if name == "row_bcast":
        return base + (0 if value == 15 else 1)
    return base + (value if name.startswith("row_") else 0)


def dpp_ctrl_modifier(ctrl: int) -> tuple[str, object] | None:
    """The LLVM modifier for a DPP_CTRL value, or None for reserved values."""
    if ctrl <= 0xFF:
        return ("quad_perm", (ctrl & 3, ctrl >> 2 & 3, ctrl >> 4 & 3, ctrl >> 6 & 3))
    for name, (base, allowed) in DPP_CTRL.items():
        if allowed is None:
            if ctrl == base:
                return (name, True)
        elif name == "row_bcast":
            if ctrl in (base, base + 1):
                return (name, 15 if ctrl == base else 31)
        elif name.startswith("row_"):
            if ctrl - base in allowed:
                return (name, ctrl - base)
        elif ctrl == base:
            return (name, 1)
    return None


DPP_CTRL_NAMES = frozenset(DPP_CTRL) | {"quad_perm"}

# The values llvm-mc's parser takes for an immediate field, by the spec's operand type and data format (LLVM
# AMDGPUAsmParser.cpp: isU16Imm/isS16Imm for SOPK's u16imm/s16imm, parseHwreg/parseSendMsg "invalid immediate: only
# 16-bit values are legal" (isUInt<16>), parseGPRIdxMode "only 4-bit values are legal"; an untyped 16-bit SOPP
# immediate (i16imm: s_nop, s_sleep, s_setkill, s_waitcnt) takes any 64-bit value, a float token as its double's
# bits, and keeps the low 16 bits; checked against llvm-mc-22 in tests/isa/test_asm_mutations.py).
# (lo, hi) inclusive, or ANY_BITS; None: the encoder's own width check.
ANY_BITS = (None, None)


def immediate_bounds(type_name: str, data_format: str | None, hwreg: bool) -> tuple | None:
    if hwreg or type_name == "OPR_SENDMSG":
        return (0, 0xFFFF)
    if type_name == "OPR_SIMM4":
        return (0, 15)
    if data_format == "FMT_NUM_U16":
        return (0, 0xFFFF)
    if data_format == "FMT_NUM_I16":
        return (-0x8000, 0xFFFF)
    if data_format == "FMT_NUM_B16" and type_name in ("OPR_SIMM16", "OPR_WAITCNT"):
        return ANY_BITS
    return None


# "DP ALU" DPP: a DPP instruction with a 64-bit VGPR operand (vdst, src0, src1) takes only row_newbcast controls on
# gfx90a and later CDNA targets (LLVM AMDGPUBaseInfo.cpp isDPALU_DPP / hasAny64BitVGPROperands and
# isLegalDPALU_DPPControl; AMDGPUAsmParser::validateDPP says "DP ALU dpp only supports row_newbcast";
# llvm/test/MC/AMDGPU/gfx90a_err.s: `v_ceil_f64_dpp v[0:1], v[2:3] quad_perm:[1,1,1,1]` is refused)
DPALU_DPP_CTRL = range(DPP_CTRL["row_newbcast"][0], DPP_CTRL["row_newbcast"][0] + 16)

# Partitioned operand parts: LLVM writes the spec's VM/EXP/LGKM sub-fields of OPR_WAITCNT as
# vmcnt(N)/expcnt(N)/lgkmcnt(N) and prints them in this order.
COUNTER_ORDER = ("VM", "EXP", "LGKM")


def counter_field(part: str) -> str:
    """Spec sub-field for an LLVM counter name (`vmcnt` -> `VM`)."""
    low = part.lower()
    return (low[:-3] if low.endswith("cnt") else low).upper()


def counter_name(field: str) -> str:
    return field.lower() + "cnt"


# Print order of modifiers, as llvm-objdump writes them (an MTBUF `format:` comes right after the operands).
MODIFIER_ORDER = (
    "format", "idxen", "offen", "offset", "offset0", "offset1", "sc0", "nt", "sc1", "glc", "slc", "lds", "gds", "nv",
    "bitop3", "op_sel", "op_sel_hi", "neg_lo", "neg_hi", "clamp", "mul", "div", "cbsz", "abid", "blgp", "neg",
    "quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_rol", "wave_shr", "wave_ror",
    "row_mirror", "row_half_mirror", "row_bcast", "row_newbcast", "row_mask", "bank_mask", "bound_ctrl", "fi",
    "dst_sel", "dst_unused", "src0_sel", "src1_sel",
)
MODIFIER_RANK = {name: i for i, name in enumerate(MODIFIER_ORDER)}

# Flags: LLVM name -> encoding field (a 1-bit field set to 1).
FLAG_FIELDS = {
    "offen": "OFFEN", "idxen": "IDXEN", "lds": "LDS", "sc0": "SC0", "sc1": "SC1", "nt": "NT", "glc": "GLC",
    "slc": "SLC", "gds": "GDS", "clamp": "CLAMP", "nv": "NV", "tfe": "TFE",
}
FIELD_FLAGS = {v: k for k, v in FLAG_FIELDS.items()}
# Every modifier written as a bare word (flags and the argument-less DPP controls).
FLAG_MODIFIERS = frozenset(FLAG_FIELDS) | frozenset(n for n, (_b, allowed) in DPP_CTRL.items() if allowed is None)

# Integer modifiers: LLVM name -> field. Printed in decimal unless listed in HEX_MODIFIERS.
INT_FIELDS = {
    "offset": "OFFSET", "offset0": "OFFSET0", "offset1": "OFFSET1", "cbsz": "CBSZ", "abid": "ABID",
    "blgp": "BLGP", "row_mask": "ROW_MASK", "bank_mask": "BANK_MASK",
}
HEX_MODIFIERS = frozenset({"row_mask", "bank_mask"})

# List modifiers (one bit per source): LLVM name -> field. neg_lo/neg_hi only in encodings that have a
# NEG_HI field (packed math), where NEG holds neg_lo; elsewhere NEG is written per operand (`-v1`).
LIST_FIELDS = {"op_sel": "OP_SEL", "op_sel_hi": "OP_SEL_HI", "neg_lo": "NEG", "neg_hi": "NEG_HI"}

SEL_FIELDS = {"dst_sel": "DST_SEL", "src0_sel": "SRC0_SEL", "src1_sel": "SRC1_SEL"}

# Field values LLVM assumes when a modifier is not written.
FIELD_DEFAULTS = {
    "ROW_MASK": 0xF, "BANK_MASK": 0xF, "DST_SEL": 6, "DST_UNUSED": 2, "SRC0_SEL": 6, "SRC1_SEL": 6,
}

# The value of an address field that is turned off with `off` (SADDR = all ones).
OFF_ALL_ONES_FIELDS = frozenset({"SADDR"})

# Typed-buffer formats (MTBUF DFMT/NFMT fields): LLVM writes format:[BUF_DATA_FORMAT_x,BUF_NUM_FORMAT_y]
# (or a number dfmt | nfmt << 4) and leaves out the parts at their defaults (DFMT 1, NFMT 0).
BUF_DATA_FORMATS = ("INVALID", "8", "16", "8_8", "32", "16_16", "10_11_11", "11_11_10", "10_10_10_2",
                    "2_10_10_10", "8_8_8_8", "32_32", "16_16_16_16", "32_32_32", "32_32_32_32", "RESERVED_15")
BUF_NUM_FORMATS = ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "RESERVED_6", "FLOAT")
BUF_FORMAT_DEFAULT = (1, 0)

# ds_swizzle_b32 offsets: LLVM prints (and accepts) offset:swizzle(MODE,...) for them.
SWIZZLE_MNEMONICS = frozenset({"ds_swizzle_b32"})


def swizzle_text(offset: int) -> str | None:
    """LLVM's swizzle(...) spelling of a ds_swizzle offset, or None when it prints the number."""
    if offset >> 15:
        mode = offset & 0xE000
        if mode == 0xE000:
            return f"swizzle(FFT,{offset & 0x1F})"
        if mode == 0xC000:
            return f"swizzle(ROTATE,{offset >> 10 & 1},{offset >> 5 & 0x1F})"
        if offset & 0xFF00 == 0x8000:
            lanes = ",".join(str(offset >> (2 * i) & 3) for i in range(4))
            return f"swizzle(QUAD_PERM,{lanes})"
        return None
    and_mask, or_mask, xor_mask = offset & 0x1F, offset >> 5 & 0x1F, offset >> 10 & 0x1F
    if and_mask == 0x1F and or_mask == 0 and xor_mask and xor_mask & (xor_mask - 1) == 0:
        return f"swizzle(SWAP,{xor_mask})"
    if and_mask == 0x1F and or_mask == 0 and xor_mask > 1 and (xor_mask + 1) & xor_mask == 0:
        return f"swizzle(REVERSE,{xor_mask + 1})"
    if xor_mask == 0:
        for group in (2, 4, 8, 16, 32):
            if and_mask == 0x1F & ~(group - 1) and or_mask < group:
                return f"swizzle(BROADCAST,{group},{or_mask})"
    chars = []
    for bit in range(4, -1, -1):
        a, o, x = and_mask >> bit & 1, or_mask >> bit & 1, xor_mask >> bit & 1
        if a and not o:
            chars.append("i" if x else "p")
        else:
            chars.append(str(o ^ x))
    return 'swizzle(BITMASK_PERM,"' + "".join(chars) + '")'


def swizzle_value(mode: str, args: tuple) -> int | None:
    """The ds_swizzle offset for swizzle(MODE, args...), or None when the arguments are not valid."""
    mode = mode.upper()
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if mode == "QUAD_PERM" and len(ints) == len(args) == 4 and all(0 <= a <= 3 for a in ints):
        return 0x8000 | sum(a << (2 * i) for i, a in enumerate(ints))
    if mode == "SWAP" and len(ints) == len(args) == 1 and ints[0] in (1, 2, 4, 8, 16):
        return 0x1F | ints[0] << 10
    if mode == "REVERSE" and len(ints) == len(args) == 1 and ints[0] in (2, 4, 8, 16, 32):
        return 0x1F | (ints[0] - 1) << 10
    if mode == "BROADCAST" and len(ints) == len(args) == 2 and ints[0] in (2, 4, 8, 16, 32) \
            and 0 <= ints[1] < ints[0]:
        return (0x1F & ~(ints[0] - 1)) | ints[1] << 5
    if mode == "FFT" and len(ints) == len(args) == 1 and 0 <= ints[0] <= 31:
        return 0xE000 | ints[0]
    if mode == "ROTATE" and len(ints) == len(args) == 2 and ints[0] in (0, 1) and 0 <= ints[1] <= 31:
        return 0xC000 | ints[0] << 10 | ints[1] << 5
    if mode == "BITMASK_PERM" and len(args) == 1 and isinstance(args[0], str):
        text = args[0].strip('"')
        if len(text) != 5:
            return None
        and_mask = or_mask = xor_mask = 0
        for i, ch in enumerate(text):
            bit = 4 - i
            if ch == "p":
                and_mask |= 1 << bit
            elif ch == "i":
                and_mask |= 1 << bit
                xor_mask |= 1 << bit
            elif ch == "1":
                or_mask |= 1 << bit
            elif ch != "0":
                return None
        return and_mask | or_mask << 5 | xor_mask << 10
    return None

# s_getreg/s_setreg take their SIMM16 as hwreg(REG, offset, size): REG in bits [5:0], the bit offset in
# [10:6], size - 1 in [15:11]. LLVM names the registers it knows for gfx942 and prints offset/size only
# when they are not the whole register (0, 32).
HWREG_MNEMONICS = frozenset({"s_getreg_b32", "s_setreg_b32", "s_setreg_imm32_b32"})
HWREG_NAMES = {1: "MODE", 2: "STATUS", 3: "TRAPSTS", 4: "HW_ID", 5: "GPR_ALLOC", 6: "LDS_ALLOC", 7: "IB_STS",
               15: "SH_MEM_BASES", 16: "TBA_LO", 17: "TBA_HI", 18: "TMA_LO", 19: "TMA_HI", 20: "XCC_ID",
               21: "SQ_PERF_SNAPSHOT_DATA", 22: "SQ_PERF_SNAPSHOT_DATA1", 23: "SQ_PERF_SNAPSHOT_PC_LO",
               24: "SQ_PERF_SNAPSHOT_PC_HI"}
HWREG_IDS = {"HW_REG_" + name: reg for reg, name in HWREG_NAMES.items()}


def hwreg_text(value: int) -> str:
    reg, offset, size = value & 0x3F, value >> 6 & 0x1F, (value >> 11 & 0x1F) + 1
    name = "HW_REG_" + HWREG_NAMES[reg] if reg in HWREG_NAMES else str(reg)
    if offset == 0 and size == 32:
        return f"hwreg({name})"
    return f"hwreg({name}, {offset}, {size})"


def hwreg_value(args: tuple) -> int | None:
    """The SIMM16 for hwreg(REG[, offset, size]), or None when the arguments are not valid."""
    if len(args) not in (1, 3):
        return None
    reg = args[0]
    if isinstance(reg, str):
        reg = HWREG_IDS.get(reg.upper())
    offset, size = (args[1], args[2]) if len(args) == 3 else (0, 32)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (reg, offset, size)):
        return None
    if not (0 <= reg < 64 and 0 <= offset < 32 and 1 <= size <= 32):
        return None
    return reg | offset << 6 | (size - 1) << 11


# s_sendmsg/s_sendmsghalt take their SIMM16 as sendmsg(MSG[, OP[, STREAM]]). The field positions are the spec's
# OPR_SENDMSG partition (MSG [3:0], GSOP [5:4], STREAMID [9:8]; a system message's operation is 3 bits at [6:4] in
# LLVM's SIDefines.h); the names and which a GFX9 target accepts are LLVM's (AMDGPUAsmUtils.cpp), each checked
# against llvm-mc -mcpu=gfx942 in tests/isa/test_asm_file.py.
SENDMSG_IDS = {"MSG_INTERRUPT": 1, "MSG_GS": 2, "MSG_GS_DONE": 3, "MSG_SAVEWAVE": 4, "MSG_STALL_WAVE_GEN": 5,
               "MSG_HALT_WAVES": 6, "MSG_ORDERED_PS_DONE": 7, "MSG_EARLY_PRIM_DEALLOC": 8, "MSG_GS_ALLOC_REQ": 9,
               "MSG_GET_DOORBELL": 10, "MSG_SYSMSG": 15}
SENDMSG_GS_OPS = {"GS_OP_NOP": 0, "GS_OP_CUT": 1, "GS_OP_EMIT": 2, "GS_OP_EMIT_CUT": 3}
SENDMSG_SYS_OPS = {"SYSMSG_OP_ECC_ERR_INTERRUPT": 1, "SYSMSG_OP_REG_RD": 2, "SYSMSG_OP_TTRACE_PC": 4}
SENDMSG_OP_SHIFT, SENDMSG_STREAM_SHIFT = 4, 8


def sendmsg_value(args: tuple) -> int | str:
    """The SIMM16 for sendmsg(MSG[, OP[, STREAM]]), or the reason it is not valid (llvm-mc's wording)."""
    if not 1 <= len(args) <= 3:
        return "sendmsg(...) takes a message and optionally an operation and a stream"
    msg = args[0]
    if isinstance(msg, str):
        if msg.upper() not in SENDMSG_IDS:
            return (f"unknown message {msg!r} (accepted: {', '.join(SENDMSG_IDS)} or 0..15)")
        msg = SENDMSG_IDS[msg.upper()]
    if not isinstance(msg, int) or not 0 <= msg < 16:
        return "message id must be 0..15"
    named = isinstance(args[0], str)
    ops = SENDMSG_GS_OPS if msg in (2, 3) else SENDMSG_SYS_OPS if msg == 15 else {}
    op = args[1] if len(args) > 1 else None
    if isinstance(op, str):
        if op.upper() not in ops:
            return f"invalid operation id {op!r}" + (f" (accepted: {', '.join(ops)})" if ops else "")
        op = ops[op.upper()]
    if named:
        if not ops and op is not None:
            return "message does not support operations"
        if ops and op is None:
            return "missing message operation"
        if msg == 2 and op == 0:
            return "invalid operation id GS_OP_NOP for MSG_GS (accepted: GS_OP_CUT, GS_OP_EMIT, GS_OP_EMIT_CUT)"
        if ops and op not in ops.values():
            return f"invalid operation id {op}"
    op = op or 0
    if not isinstance(op, int) or not 0 <= op < 8:
        return "operation id must be 0..7"
    stream = args[2] if len(args) > 2 else 0
    if len(args) > 2:
        if not isinstance(stream, int) or not 0 <= stream < 4:
            return "invalid message stream id (0..3)"
        if named and (msg not in (2, 3) or op == 0):
            return "message operation does not support streams"
    return msg | op << SENDMSG_OP_SHIFT | stream << SENDMSG_STREAM_SHIFT


def sendmsg_text(value: int) -> str:
    """sendmsg(...) as llvm-objdump prints the SIMM16 of s_sendmsg (AMDGPUInstPrinter::printSendMsg): names when
    the message, operation and stream are valid for the target (bits outside them ignored, as LLVM 22 does), else
    `sendmsg(M, O, S)` in numbers when only those fields are set, else the plain number (checked against
    llvm-objdump-22 on every 16-bit value in tests/isa/test_disasm_llvm_random.py)."""
    msg, op, stream = value & 0xF, value >> SENDMSG_OP_SHIFT & 0x7, value >> SENDMSG_STREAM_SHIFT & 0x3
    named = _sendmsg_names(msg, op, stream)
    if named is not None:
        return named
    return str(value) if value & ~0x37F else f"sendmsg({msg}, {op}, {stream})"


def _sendmsg_names(msg: int, op: int, stream: int) -> str | None:
    names = {v: k for k, v in SENDMSG_IDS.items()}
    if msg not in names:
        return None
    if msg in (2, 3):
        opname = {v: k for k, v in SENDMSG_GS_OPS.items()}.get(op)
        if opname is None or (msg == 2 and op == 0) or (op == 0 and stream):
            return None
        return f"sendmsg({names[msg]}, {opname}" + (f", {stream})" if op else ")")
    if msg == 15:
        opname = {v: k for k, v in SENDMSG_SYS_OPS.items()}.get(op)
        return f"sendmsg({names[msg]}, {opname})" if opname and not stream else None
    return f"sendmsg({names[msg]})" if not op and not stream else None


# s_set_gpr_idx_on/_mode take their 4-bit mode as gpr_idx(...): one name per set bit, in this order.
GPR_IDX_MNEMONICS = frozenset({"s_set_gpr_idx_on", "s_set_gpr_idx_mode"})
GPR_IDX_BITS = ("SRC0", "SRC1", "SRC2", "DST")


def gpr_idx_text(value: int) -> str | None:
    """LLVM's gpr_idx(...) spelling of a GPR-index mode, or None when the value has bits beyond the four modes."""
    if value >> len(GPR_IDX_BITS):
        return None
    return "gpr_idx(" + ",".join(n for i, n in enumerate(GPR_IDX_BITS) if value >> i & 1) + ")"


def gpr_idx_value(args: tuple) -> int | None:
    """The mode for gpr_idx(SRC0, ..., DST), or None when an argument is not one of the four names (or repeats)."""
    value = 0
    for arg in args:
        name = arg.upper() if isinstance(arg, str) else None
        if name not in GPR_IDX_BITS or value >> GPR_IDX_BITS.index(name) & 1:
            return None
        value |= 1 << GPR_IDX_BITS.index(name)
    return value


def imm32_text(value: int) -> str | None:
    """How LLVM prints a 32-bit immediate operand that is always a literal (s_setreg_imm32_b32): inline
    integers in decimal, inline float bit patterns as the float; None for the rest (printed in hex)."""
    signed = value - (1 << 32) if value >> 31 else value
    if -16 <= signed <= 64:
        return str(signed)
    for f in (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0):
        if float_bits(f, 32) == value:
            return float_text(f)
    if inline_float_bits(float(INV_2PI_TEXT), 32) == value:
        return INV_2PI_TEXT
    return None


def is_vop3p_mix(mnemonic: str) -> bool:
    """LLVM writes the mixed-precision VOP3P instructions (v_fma_mix*, v_mad_mix*) with per-source `-x`/`|x|`
    (the NEG and NEG_HI fields) and an op_sel_hi default of 0, unlike packed math."""
    return mnemonic.lower().startswith(("v_fma_mix", "v_mad_mix"))


M0_VALUE = 124   # the operand value of M0 in every GCN/CDNA source operand type (OPR_SRC "M0")


def constant_bus_limit(architecture_name: str) -> int:
    """How many SGPR/literal values one VALU instruction may read (LLVM: one on GCN and CDNA, two from GFX10
    (RDNA) on)."""
    return 2 if "RDNA" in architecture_name.upper() else 1



# CDNA 4 f8f6f4 MFMAs (A/B typed FMT_NUM_PK8_B32): CBSZ (A) and BLGP (B) select the element format, and the
# operand's register count follows: 0 fp8, 1 bf8 -> 8 dwords; 2 fp6, 3 bf6 -> 6; 4 fp4 -> 4 (CDNA 4 ISA guide,
# matrix-core chapter; llvm-mc-22 -mcpu=gfx950 "wrong register tuple size for cbsz value 2" otherwise, and
# llvm-objdump-22 prints a[0:3] for cbsz:4).
F8F6F4_OPERAND_FORMAT = "FMT_NUM_PK8_B32"
F8F6F4_WIDTH_FIELDS = {"SRC0": "CBSZ", "SRC1": "BLGP"}
F8F6F4_REGISTERS = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}


def f8f6f4_registers(code: int, default: int) -> int:
    """Register count of an f8f6f4 MFMA A/B operand for a CBSZ/BLGP value (codes 5-7: the full width)."""
    return F8F6F4_REGISTERS.get(code, default)


# gfx950 v_bitop3_*: the 8-bit truth table `bitop3:N` lives in the source-modifier fields, which these
# instructions do not use as modifiers: bits 2:0 in NEG, 5:3 in ABS, 7:6 in OMOD (llvm-mc-22 -mcpu=gfx950,
# one bit at a time). LLVM prints it in decimal up to 10, in hex from 11 on.
BITOP3_MNEMONICS = frozenset({"v_bitop3_b16", "v_bitop3_b32"})
BITOP3_FIELDS = (("NEG", 0, 3), ("ABS", 3, 3), ("OMOD", 6, 2))   # (field, first truth-table bit, width)


def bitop3_fields(value: int) -> dict[str, int]:
    """Field values for a bitop3 truth table."""
    return {fname: (value >> first) & ((1 << width) - 1) for fname, first, width in BITOP3_FIELDS}


def bitop3_value(fields: dict[str, int]) -> int:
    """The truth table the fields hold."""
    return sum((fields.get(fname, 0) & ((1 << width) - 1)) << first for fname, first, width in BITOP3_FIELDS)


# Modifiers the decoder attaches so that re-encoding an instruction object reproduces its bytes, for bits
# LLVM's syntax cannot write (llvm-objdump prints nothing for them, and neither does the printer):
# `keep_bits` = ((FIELD, value), ...) of the form's `hidden` bits: CDNA 4 scaled-MFMA fields LLVM ignores (bits
# 13-14 of the prefix word, op_sel[2]/op_sel_hi[2], which AMD's hand-assembled kernels set; NEG/NEG_HI of the
# load-scale half), OP_SEL where LLVM has no op_sel (NO_OPSEL, f32-only VOP3), NEG/ABS of integer sources, GLC of
# SMEM instructions that move no data (forms.py `_hidden_bits`).
UNPRINTED_MODIFIERS = frozenset({"keep_bits"})
# (field, bits of its value LLVM's syntax does not reach) of the scaled MFMA (ENC_VOP3PX2)
SCALE_MFMA_HIDDEN = (("OP_SEL", 0b100), ("OP_SEL_HI", 0b100), ("NEG", 0b111), ("NEG_HI", 0b111))


# Fields LLVM's decoder does not check when the instruction does not use them (its encoding classes leave the bits
# `?` or decode them into no operand), per encoding of the spec; every other field a form does not use must be zero
# for llvm-objdump-22 to decode the word (forms._required_zero). Measured bit by bit on every gfx942 form with
# llvm-objdump-22 (tests/isa/test_disasm_zero_fields.py) and read in LLVM's classes: VOP3 source fields of absent
# sources and OP_SEL outside the op_sel profiles (VOPInstructions.td VOP3a_vi / VOP3e_vi set no Inst{14-11});
# VOP3P OP_SEL_HI (VOP3Pe: `!if(P.IsDOT, 1, ?)`); FLAT data/vdst of loads/stores; the address, data and offset
# fields of buffer cache controls (BUFInstructions.td MUBUF_Invalidate) and of SMEM cache controls and timers;
# the unused SDST/SSRC0 of SOP1/SOP2/SOPK instructions with fewer operands.
LLVM_IGNORED_FIELDS = {
    "ENC_VOP3": frozenset({"SRC0", "SRC1", "SRC2", "OP_SEL"}),
    "VOP3_SDST_ENC": frozenset({"SRC0", "SRC1", "SRC2"}),
    "ENC_VOP3P": frozenset({"SRC1", "SRC2", "OP_SEL_HI"}),
    "ENC_VOP1": frozenset({"SRC0"}),
    "VOP1_VOP_DPP": frozenset({"VSRC0"}),
    "VOP1_VOP_SDWA": frozenset({"VSRC0"}),
    "ENC_FLAT": frozenset({"DATA", "VDST"}),
    "ENC_FLAT_GLBL": frozenset({"DATA", "VDST"}),
    "ENC_FLAT_SCRATCH": frozenset({"DATA", "VDST"}),
    "ENC_MUBUF": frozenset({"OFFSET", "SOFFSET", "SRSRC", "VADDR", "VDATA", "NT"}),
    "ENC_SMEM": frozenset({"GLC", "SBASE", "SDATA", "OFFSET", "SOFFSET", "SOFFSET_EN"}),
    "ENC_SOP1": frozenset({"SDST", "SSRC0"}),
    "ENC_SOP2": frozenset({"SDST"}),
    "SOPK_INST_LITERAL": frozenset({"SDST"}),
    "ENC_SOPK": frozenset({"SDST"}),
}

# Single 32-bit registers with no 64-bit form in LLVM's decoder (AMDGPUDisassembler::decodeSpecialReg64 has no case
# for them): a 64-bit or wider operand naming one is no instruction to llvm-objdump-22.
NO_WIDE_NAMES = frozenset({"m0"})

# VOP3 clamp and omod where LLVM's VOP profile overrides what the data formats say (modifiers._vop3_output_modifiers;
# each list measured with llvm-objdump-22 on every gfx942 VOP3 form, tests/isa/test_disasm_zero_fields.py):
# integer instructions whose profile enables clamp (SIInstrInfo.td VOP_I32_I32_I32_ARITH / VOP_I16_I16_I16_ARITH
# `EnableClamp = 1`, VOP3 integer mad/sad/med3/min3/max3 on 16 bits, VOP3b carry ops, the dot*c accumulators);
# float instructions without clamp (VOPC class compares, VOPC_Class_Profile; the fp8/bf8 packing conversions,
# VOP3_CVT_PK_F8_F32_Profile / VOP3_CVT_SR_F8_F32_Profile); float-to-integer conversions with omod
# (VOP_I32_F32_SPECIAL_OMOD and its f16/f64 kin); and v_pack_b32_f16 without omod (VOP3_Profile with OpSel only).
LLVM_INTEGER_CLAMP = frozenset({
    "v_add_co_u32", "v_add_i16", "v_add_i32", "v_add_u16", "v_add_u32", "v_addc_co_u32", "v_alignbit_b32",
    "v_alignbyte_b32", "v_dot2c_i32_i16", "v_dot4c_i32_i8", "v_dot8c_i32_i4", "v_mad_i16", "v_mad_i32_i16",
    "v_mad_i32_i24", "v_mad_i64_i32", "v_mad_legacy_i16", "v_mad_legacy_u16", "v_mad_u16", "v_mad_u32_u16",
    "v_mad_u32_u24", "v_mad_u64_u32", "v_max3_i16", "v_max3_u16", "v_med3_i16", "v_med3_u16", "v_min3_i16",
    "v_min3_u16", "v_mqsad_pk_u16_u8", "v_mqsad_u32_u8", "v_msad_u8", "v_mul_i32_i24", "v_mul_u32_u24",
    "v_qsad_pk_u16_u8", "v_sad_hi_u8", "v_sad_u16", "v_sad_u32", "v_sad_u8", "v_sub_co_u32", "v_sub_i16",
    "v_sub_i32", "v_sub_u16", "v_sub_u32", "v_subb_co_u32", "v_subbrev_co_u32", "v_subrev_co_u32", "v_subrev_u16",
    "v_subrev_u32",
})
LLVM_NO_CLAMP = frozenset({
    "v_cmp_class_f16", "v_cmp_class_f32", "v_cmp_class_f64", "v_cmpx_class_f16", "v_cmpx_class_f32",
    "v_cmpx_class_f64", "v_cvt_pk_bf8_f32", "v_cvt_pk_fp8_f32", "v_cvt_sr_bf8_f32", "v_cvt_sr_fp8_f32",
})
LLVM_INTEGER_OMOD = frozenset({
    "v_cvt_i16_f16", "v_cvt_i32_f32", "v_cvt_i32_f64", "v_cvt_norm_i16_f16", "v_cvt_norm_u16_f16", "v_cvt_u16_f16",
    "v_cvt_u32_f32", "v_cvt_u32_f64", "v_frexp_exp_i16_f16", "v_frexp_exp_i32_f64",
})
LLVM_NO_OMOD = frozenset({"v_pack_b32_f16"})

# Buffer loads that have LLVM's `lds` variant (BUFInstructions.td: MUBUF_Pseudo_Loads_Lds for ubyte, sbyte, ushort,
# sshort and dword, MUBUF_Pseudo_Loads_LDSOpc for format_x; dwordx3/dwordx4 with HasGFX950Insts): the spec's LDS bit on
# any other MUBUF instruction is a word llvm-objdump-22 prints as .long (measured on every gfx942/gfx950 MUBUF form).
_LDS_LOADS = frozenset({"buffer_load_ubyte", "buffer_load_sbyte", "buffer_load_ushort", "buffer_load_sshort",
                        "buffer_load_dword", "buffer_load_format_x"})
_LDS_LOADS_CDNA4 = _LDS_LOADS | {"buffer_load_dwordx3", "buffer_load_dwordx4"}


def llvm_lds_loads(spec) -> frozenset:
    """The MUBUF loads with an lds variant on the spec's architecture (all of them when the spec is unknown)."""
    if spec is None:
        return _LDS_LOADS_CDNA4
    return _LDS_LOADS_CDNA4 if "CDNA 4" in spec.architecture.name else _LDS_LOADS

# Instructions whose untyped (B32) sources take float modifiers in LLVM (VOP2Instructions.td: v_cndmask_b32's
# VOP2e_I32_I32_I32_I1 profile is built with EnableF32SrcMods; llvm-mc-22 takes
# `v_cndmask_b32_e64 v0, -v1, |v2|, s[0:1]`).
LLVM_FLOAT_MODS = frozenset({"v_cndmask_b32"})

# Instructions whose integer sources LLVM gives modifier operands it never prints: llvm-objdump-22 decodes NEG/ABS
# (and DPP SRCn_NEG/ABS) there without a trace, so their bits are kept unprinted; name -> the sources (bit mask) this
# holds for: the accumulating dot products (VOP2 v_dot*c, VOP_DOT_ACC profile) and gfx950's v_ashr_pk_*_i32.
# Measured on every gfx942 and gfx950 form (tests/isa/test_disasm_zero_fields.py).
LLVM_HIDDEN_INT_MODS = {
    "v_dot2c_i32_i16": 0b11, "v_dot4c_i32_i8": 0b11, "v_dot8c_i32_i4": 0b11,
    "v_ashr_pk_i8_i32": 0b111, "v_ashr_pk_u8_i32": 0b111,
}

# gfx950's scaled conversions from fp8/bf8/fp4: the first source is packed 8/4-bit data (an integer to LLVM) yet the
# profile has modifiers (VOP3_CVT_SCALE_* with HasModifiers), so the f32 scale prints `-x`/`|x|` and the first
# source's NEG/ABS bits are decoded unprinted (llvm-objdump-22 --mcpu=gfx950).
LLVM_FORCED_MODS = frozenset({
    "v_cvt_scalef32_f16_bf8", "v_cvt_scalef32_f16_fp8", "v_cvt_scalef32_f32_bf8", "v_cvt_scalef32_f32_fp8",
    "v_cvt_scalef32_pk_bf16_bf8", "v_cvt_scalef32_pk_bf16_fp4", "v_cvt_scalef32_pk_bf16_fp8",
    "v_cvt_scalef32_pk_f16_bf8", "v_cvt_scalef32_pk_f16_fp4", "v_cvt_scalef32_pk_f16_fp8",
    "v_cvt_scalef32_pk_f32_bf8", "v_cvt_scalef32_pk_f32_fp4", "v_cvt_scalef32_pk_f32_fp8",
})

# gfx950 scaled conversions to fp6/bf6 whose float sources have no modifiers in LLVM's profile (llvm-objdump-22
# --mcpu=gfx950 prints a word with NEG or ABS set as .long): their NEG/ABS must be zero.
LLVM_NO_SOURCE_MODS = frozenset({
    "v_cvt_scalef32_2xpk16_bf6_f32", "v_cvt_scalef32_2xpk16_fp6_f32", "v_cvt_scalef32_pk32_bf6_bf16",
    "v_cvt_scalef32_pk32_bf6_f16", "v_cvt_scalef32_pk32_fp6_bf16", "v_cvt_scalef32_pk32_fp6_f16",
    "v_cvt_scalef32_sr_pk32_bf6_bf16", "v_cvt_scalef32_sr_pk32_bf6_f16", "v_cvt_scalef32_sr_pk32_bf6_f32",
    "v_cvt_scalef32_sr_pk32_fp6_bf16", "v_cvt_scalef32_sr_pk32_fp6_f16", "v_cvt_scalef32_sr_pk32_fp6_f32",
})

# Float compares whose second source is an integer class mask with no modifiers at all (VOPCInstructions.td
# VOPC_Class_Profile: Src1Mod absent): NEG/ABS of that source must be zero, unlike v_ldexp_f32's integer source.
LLVM_SRC0_MODS_ONLY = frozenset({"v_cmp_class_f16", "v_cmp_class_f32", "v_cmp_class_f64", "v_cmpx_class_f16",
                                 "v_cmpx_class_f32", "v_cmpx_class_f64"})

# LDS instructions without LLVM's gds operand (DSInstructions.td: has_gds = 0 for ds_nop, DS_1A1D_PERMUTE): GDS must be
# zero there (llvm-objdump-22 prints `ds_permute_b32 ...` with GDS set as .long), where other DS instructions decode it
# unprinted (the target's unprinted_modifiers).
LLVM_NO_GDS = frozenset({"ds_nop", "ds_permute_b32", "ds_bpermute_b32"})
