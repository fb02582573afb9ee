"""Semantics of scalar and vector ALU instructions, held as data: one short statement list per instruction.

The MR-ISA XML describes what an instruction does only in prose, so these expressions are the project's
own. They are written over operands already typed by the spec's data formats (see values.py): `S0 + S1`
is a float add for V_ADD_F32 and a wrapping 32-bit add for V_ADD_U32, and a result is rounded or wrapped
to the destination's format when stored. Names:

- S0, S1, S2: the source operands in spec order; D0, D1: destinations (D0 on the right-hand side is the
  destination's old value, for accumulating forms such as V_FMAC_F32).
- SCC, VCC, EXEC: the scalar condition code, VCC and EXEC (VCC/EXEC as 64-bit masks in SALU, per-lane bools
  in VALU); LANE: the lane index; a lane-mask operand (VCC or an SGPR pair in a VALU instruction) is a
  per-lane bool.
- Helpers below (u64, i64, fma, ...) do what numpy spells differently.

Statements are `TARGET = expression` separated by `;`; a single expression is D0's value. When an
instruction writes SCC (the spec lists SCC as an output) and its statements do not say how, SCC = D0 != 0.
Compares are generated from their names (V_CMP_<op>_<type>, S_CMP_<op>_<type>): the operation is the
name's part, the operand types come from the spec.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import numpy as np

# --- helpers available to the expressions ----------------------------------------------------------


def u64(x):
    return np.asarray(x).astype(np.uint64)


def i64(x):
    return np.asarray(x).astype(np.int64)


def u32(x):
    return np.asarray(x).astype(np.uint32)


def i32(x):
    return np.asarray(x).astype(np.int32)


def fma(a, b, c):
    """Fused multiply-add with one rounding (exact product in float64 for f32/f16 inputs)."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    if a.dtype == np.float64 or b.dtype == np.float64:
        return a.astype(np.float64) * b + c  # f64 FMA: not exactly fused, good to 1 ulp
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.result_type(a, b, c))


def i24(x):
    """The low 24 bits, sign-extended (the 24-bit multiplies ignore the upper 8 bits of their sources)."""
    x = np.asarray(x).astype(np.int64) & 0xFFFFFF
    return np.where(x >= 1 << 23, x - (1 << 24), x)


def u24(x):
    return np.asarray(x).astype(np.int64) & 0xFFFFFF


def mask_bits(n):
    """(1 << n) - 1 for n in 0..32, as uint32."""
    n = np.asarray(n).astype(np.uint64)
    return ((np.uint64(1) << n) - np.uint64(1)).astype(np.uint32)


def bfe_u(x, offset, width):
    """Bit field of `width` (0..32) bits at `offset` (0..31)."""
    return ((u64(x) & np.uint64(0xFFFFFFFF)) >> u64(offset)) & u64(mask_bits(width))


def bfe_i(x, offset, width):
    """Sign-extended bit field of `width` (0..32) bits at `offset` (0..31)."""
    width = i64(width)
    field = bfe_u(x, offset, width).astype(np.int64)
    sign = np.where(width > 0, np.int64(1) << (width - 1).clip(0), 0)
    return np.where(width > 0, (field ^ sign) - sign, 0)


def popcount(x):
    x = np.asarray(x)
    if x.dtype.itemsize == 8:
        b = x.astype(np.uint64).view(np.uint8).reshape(x.shape + (8,))
    else:
        b = x.astype(np.uint32).view(np.uint8).reshape(x.shape + (4,))
    return np.unpackbits(b, axis=-1).sum(axis=-1).astype(np.uint32)


def brev32(x):
    b = np.asarray(x).astype(np.uint32)
    bits = np.unpackbits(b.view(np.uint8).reshape(b.shape + (4,)), axis=-1, bitorder="little")
    return np.packbits(bits[..., ::-1], axis=-1, bitorder="little").view(np.uint32).reshape(b.shape)


def ff1(x):
    """Index of the lowest set bit, -1 (0xffffffff) when none."""
    x = np.asarray(x).astype(np.uint64)
    low = x & (~x + np.uint64(1))
    idx = np.where(x == 0, -1, np.log2(np.maximum(low, 1).astype(np.float64)).astype(np.int64))
    return idx


def ffbh_u(x):
    """Count of leading zeros of a 32-bit value, -1 when zero."""
    x = np.asarray(x).astype(np.uint32)
    idx = np.where(x == 0, -1, 31 - np.floor(np.log2(np.maximum(x, 1).astype(np.float64))).astype(np.int64))
    return idx


def ffbh_i(x):
    """Leading bits equal to the sign bit, the sign bit included (0x40000000 -> 1, 1 -> 31), -1 when all bits
    are equal (AMD's V_FFBH_I32/S_FLBIT_I32: the search starts at bit 30 and stops at the first bit that differs
    from bit 31; LLVM subtracts 1 from it to count redundant sign bits)."""
    x = np.asarray(x).astype(np.int32)
    y = np.where(x < 0, ~x, x).astype(np.uint32)
    return np.where(y == 0, -1, ffbh_u(y))


def ffbh_u64(x):
    """Count of leading zeros of a 64-bit value, -1 when zero."""
    x = np.asarray(x).astype(np.uint64)
    hi = (x >> np.uint64(32)).astype(np.uint32)
    lo = (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return np.where(hi != 0, ffbh_u(hi), np.where(lo != 0, 32 + ffbh_u(lo), -1))


def ffbh_i64(x):
    """As ffbh_i for a 64-bit value (S_FLBIT_I32_I64)."""
    x = np.asarray(x).astype(np.int64)
    y = np.where(x < 0, ~x, x).astype(np.uint64)
    return np.where(y == 0, -1, ffbh_u64(y))


def brev64(x):
    x = np.asarray(x).astype(np.uint64)
    lo = brev32((x & np.uint64(0xFFFFFFFF)).astype(np.uint32)).astype(np.uint64)
    hi = brev32((x >> np.uint64(32)).astype(np.uint32)).astype(np.uint64)
    return (lo << np.uint64(32)) | hi


def quadmask(x, groups):
    """Bit i of the result = any bit of nibble i of x is set (S_QUADMASK_B32/B64: 8 or 16 nibbles)."""
    x = np.asarray(x).astype(np.uint64)
    out = np.zeros(x.shape, np.uint64)
    for i in range(groups):
        out |= (((x >> np.uint64(4 * i)) & np.uint64(0xF)) != 0).astype(np.uint64) << np.uint64(i)
    return out


def wqm(x):
    """Whole-quad mask: every nibble with a set bit becomes 0xF (S_WQM_B32/B64)."""
    x = np.asarray(x)
    wide = x.astype(np.uint64)
    out = np.zeros(wide.shape, np.uint64)
    for i in range(x.dtype.itemsize * 2):
        nib = (wide >> np.uint64(4 * i)) & np.uint64(0xF)
        out |= np.where(nib != 0, np.uint64(0xF), np.uint64(0)) << np.uint64(4 * i)
    return out


def bitreplicate(x):
    """Each bit i of a 32-bit value into bits 2i and 2i+1 of the 64-bit result (S_BITREPLICATE_B64_B32)."""
    x = np.asarray(x).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    out = np.zeros(x.shape, np.uint64)
    for i in range(32):
        bit = (x >> np.uint64(i)) & np.uint64(1)
        out |= (bit << np.uint64(2 * i)) | (bit << np.uint64(2 * i + 1))
    return out


def mask_bits64(n):
    """(1 << n) - 1 for n in 0..63, as uint64."""
    n = np.asarray(n).astype(np.uint64)
    return (np.uint64(1) << n) - np.uint64(1)


def _fields(x, bits, count, signed):
    """The `count` packed `bits`-wide fields of raw register bits, as int64 (..., count)."""
    x = np.asarray(x).astype(np.uint64)
    parts = [((x >> np.uint64(bits * i)) & np.uint64((1 << bits) - 1)).astype(np.int64) for i in range(count)]
    f = np.stack(parts, axis=-1)
    if signed:
        f = np.where(f >= (1 << (bits - 1)), f - (1 << bits), f)
    return f


def dot_packed(a, b, bits, signed):
    """Dot product of the packed integer fields of two dwords (V_DOT2C/4C/8C, V_DOT4/V_DOT8), as int64."""
    count = 32 // bits
    return (_fields(a, bits, count, signed) * _fields(b, bits, count, signed)).sum(axis=-1)


def sad_u8(a, b, masked=False):
    """Sum of |a.byte - b.byte| over the four bytes (V_SAD_U8); masked (V_MSAD_U8) skips bytes where b is 0."""
    fa, fb = _fields(a, 8, 4, False), _fields(b, 8, 4, False)
    d = np.abs(fa - fb)
    if masked:
        d = np.where(fb == 0, 0, d)
    return d.sum(axis=-1)


def sad_u16(a, b):
    return np.abs(_fields(a, 16, 2, False) - _fields(b, 16, 2, False)).sum(axis=-1)


def lerp_u8(a, b, c):
    """V_LERP_U8: per byte (a + b + bit 0 of c's byte) >> 1."""
    fa, fb, fc = _fields(a, 8, 4, False), _fields(b, 8, 4, False), _fields(c, 8, 4, False)
    avg = (fa + fb + (fc & 1)) >> 1
    return sum(avg[..., i] << (8 * i) for i in range(4))


def sat_pk_u8(x):
    """V_SAT_PK_U8_I16: two signed 16-bit halves saturated to unsigned bytes, packed into the low 16 bits."""
    f = np.clip(_fields(x, 16, 2, True), 0, 255)
    return f[..., 0] | (f[..., 1] << 8)


def perm(s0, s1, sel):
    """V_PERM_B32: each result byte picks a byte of {S0, S1} (selector 0-7), the sign of one of their 16-bit
    halves (8-11: bits 15, 31, 47, 63 of S0:S1 replicated), 0 (12) or 0xFF (13-255)."""
    s0, s1, sel = np.broadcast_arrays(np.asarray(s0).astype(np.uint64), np.asarray(s1).astype(np.uint64),
                                      np.asarray(sel).astype(np.uint32))
    shape = s0.shape
    combined = ((s0 << np.uint64(32)) | s1).reshape(-1)
    data = combined.view(np.uint8).reshape(-1, 8)   # little-endian bytes 0-7 of S0:S1
    sel = np.ascontiguousarray(sel).reshape(-1)
    out = np.empty((combined.size, 4), np.uint8)
    if sel.size and (sel == sel[0]).all():   # one selector for every lane (a constant or an SGPR): byte copies
        for i in range(4):
            pick = (int(sel[0]) >> 8 * i) & 0xFF
            if pick < 8:
                out[:, i] = data[:, pick]
            elif pick < 12:
                out[:, i] = np.where(data[:, 2 * (pick - 8) + 1] >= 0x80, np.uint8(0xFF), np.uint8(0))
            else:
                out[:, i] = 0 if pick == 12 else 0xFF
    else:   # a table of the 14 possible bytes per lane, looked up per result byte
        table = np.empty((combined.size, 14), np.uint8)
        table[:, :8] = data
        table[:, 8:12] = np.where(data[:, 1:8:2] >= 0x80, np.uint8(0xFF), np.uint8(0))
        table[:, 12] = 0
        table[:, 13] = 0xFF
        out = np.take_along_axis(table, np.minimum(sel.view(np.uint8).reshape(-1, 4), 13), axis=-1)
    return np.ascontiguousarray(out).view(np.uint32).reshape(shape)


def med3(a, b, c):
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))


def fmed3(a, b, c):
    return np.fmax(np.fmin(a, b), np.fmin(np.fmax(a, b), c))


def div_fixup(quotient, den, num):
    """V_DIV_FIXUP: the division sequence's result is the correctly rounded num / den, including the
    special cases (zero, infinity, NaN) the fixup step handles."""
    with np.errstate(all="ignore"):
        return (np.asarray(num) / np.asarray(den)).astype(np.result_type(quotient, den, num))


def ldexp(x, e):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        return np.ldexp(x, np.clip(np.asarray(e).astype(np.int64), -1000, 1000).astype(np.int32)).astype(x.dtype)


def frexp_mant(x):
    m, _ = np.frexp(np.asarray(x))
    return np.where(np.isfinite(x), m, x)


def frexp_exp(x):
    _, e = np.frexp(np.asarray(x))
    return np.where(np.isfinite(x), e, 0)


def cls_f(x, mask, bits=None):
    """V_CMP_CLASS: bit 0 signaling NaN, 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal,
    8 +normal, 9 +inf. `bits` is the source format's width when the value arrives widened (f16 as float32): the
    normal/denormal boundary is that format's. A NaN is quiet when its mantissa's top bit is set (kept when f16
    widens to float32)."""
    x = np.asarray(x)
    mask = np.asarray(mask).astype(np.uint32)
    tiny = 2.0 ** -14 if bits == 16 else np.finfo(x.dtype).tiny if x.dtype.kind == "f" else np.finfo(np.float32).tiny
    neg = np.signbit(x)
    ax = np.abs(x)
    if x.dtype == np.float64:
        quiet = (np.ascontiguousarray(x).view(np.uint64) >> np.uint64(51)) & np.uint64(1) != 0
    elif x.dtype == np.float32:
        quiet = (np.ascontiguousarray(x).view(np.uint32) >> np.uint32(22)) & np.uint32(1) != 0
    else:
        quiet = np.ones(x.shape, bool)
    nan = np.isnan(x)
    classes = [nan & ~quiet, nan & quiet, np.isinf(x) & neg, neg & np.isfinite(x) & (ax >= tiny),
               neg & (ax < tiny) & (ax > 0), neg & (x == 0), ~neg & (x == 0), ~neg & (ax < tiny) & (ax > 0),
               ~neg & np.isfinite(x) & (ax >= tiny), np.isinf(x) & ~neg]
    out = np.zeros(np.broadcast(x, mask).shape, bool)
    for bit, c in enumerate(classes):
        out |= c & ((mask >> bit) & 1).astype(bool)
    return out


def f16_bits(x):
    """An f16 value's 16 bits (zero-extended to uint32); exact for values that came from an f16 operand."""
    return np.asarray(x).astype(np.float16).view(np.uint16).astype(np.uint32)


def cvt_pkrtz(a, b):
    """Two f32 -> packed f16, rounding toward zero."""
    def rtz(v):
        v = np.asarray(v, np.float32)
        h = v.astype(np.float16)
        too_big = np.abs(h.astype(np.float32)) > np.abs(v)
        h = np.where(too_big & np.isfinite(v), np.nextafter(h, np.float16(0)), h)
        return h.view(np.uint16).astype(np.uint32)
    return rtz(a) | (rtz(b) << 16)


def cvt_pk(a, b, dtype):
    """Two f32 -> a packed pair of 16-bit floats (`dtype`), rounding to nearest even (gfx950
    v_cvt_pk_bf16_f32 / v_cvt_pk_f16_f32); a name is an ml_dtypes type, imported on first use (issue 31)."""
    if isinstance(dtype, str):
        import ml_dtypes

        dtype = getattr(ml_dtypes, dtype)

    def rne(v):
        return np.asarray(v, np.float32).astype(dtype).view(np.uint16).astype(np.uint32)
    return rne(a) | (rne(b) << 16)


def sat_cvt(x, lo, hi):
    with np.errstate(invalid="ignore"):
        x = np.asarray(x, np.float64)
        return np.where(np.isnan(x), 0, np.clip(np.trunc(x), lo, hi)).astype(np.int64)


HELPERS = {name: obj for name, obj in globals().items() if callable(obj) and not name.startswith("_")}
HELPERS.update({
    "np": np, "where": np.where, "minimum": np.minimum, "maximum": np.maximum, "fmin": np.fmin, "fmax": np.fmax,
    "sqrt": np.sqrt, "exp2": np.exp2, "log2": np.log2, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "rint": np.rint, "abs": np.abs, "sin": np.sin, "cos": np.cos, "pi": np.pi, "isnan": np.isnan,
    "bfloat16": "bfloat16", "float16": np.float16,
})

# --- the table -------------------------------------------------------------------------------------

SCALAR_SHIFT = "(S1 & 31)"
SEMANTICS: dict[str, str] = {
    # scalar moves, bit operations
    "S_MOV_B32": "S0", "S_MOV_B64": "S0", "S_MOVK_I32": "S0", "S_CMOV_B32": "where(SCC, S0, D0)",
    "S_CMOV_B64": "where(SCC, S0, D0)", "S_CMOVK_I32": "where(SCC, S0, D0)",
    "S_NOT_B32": "~S0", "S_NOT_B64": "~S0", "S_BREV_B32": "brev32(S0)",
    "S_BCNT1_I32_B32": "popcount(S0)", "S_BCNT1_I32_B64": "popcount(S0)",
    "S_FF1_I32_B32": "ff1(S0)", "S_FF1_I32_B64": "ff1(S0)", "S_FLBIT_I32_B32": "ffbh_u(S0)",
    "S_FLBIT_I32": "ffbh_i(S0)", "S_SEXT_I32_I8": "S0", "S_SEXT_I32_I16": "S0", "S_ABS_I32": "abs(i64(S0))",
    "S_AND_B32": "S0 & S1", "S_AND_B64": "S0 & S1", "S_OR_B32": "S0 | S1", "S_OR_B64": "S0 | S1",
    "S_XOR_B32": "S0 ^ S1", "S_XOR_B64": "S0 ^ S1", "S_ANDN2_B32": "S0 & ~S1", "S_ANDN2_B64": "S0 & ~S1",
    "S_ORN2_B32": "S0 | ~S1", "S_ORN2_B64": "S0 | ~S1", "S_NAND_B32": "~(S0 & S1)", "S_NAND_B64": "~(S0 & S1)",
    "S_NOR_B32": "~(S0 | S1)", "S_NOR_B64": "~(S0 | S1)", "S_XNOR_B32": "~(S0 ^ S1)", "S_XNOR_B64": "~(S0 ^ S1)",
    "S_LSHL_B32": "S0 << (S1 & 31)", "S_LSHL_B64": "S0 << u64(S1 & 63)", "S_LSHR_B32": "S0 >> (S1 & 31)",
    "S_LSHR_B64": "S0 >> u64(S1 & 63)", "S_ASHR_I32": "S0 >> (S1 & 31)", "S_ASHR_I64": "S0 >> i64(S1 & 63)",
    "S_BFM_B32": "mask_bits(S0 & 31) << (S1 & 31)", "S_BFM_B64": "mask_bits64(S0 & 63) << u64(S1 & 63)",
    "S_BREV_B64": "brev64(S0)", "S_BCNT0_I32_B32": "32 - popcount(S0)", "S_BCNT0_I32_B64": "64 - popcount(S0)",
    "S_FF0_I32_B32": "ff1(~u32(S0))", "S_FF0_I32_B64": "ff1(~u64(S0))", "S_FLBIT_I32_B64": "ffbh_u64(S0)",
    "S_FLBIT_I32_I64": "ffbh_i64(S0)", "S_QUADMASK_B32": "quadmask(S0, 8)", "S_QUADMASK_B64": "quadmask(S0, 16)",
    "S_WQM_B32": "wqm(S0)", "S_WQM_B64": "wqm(S0)", "S_BITREPLICATE_B64_B32": "bitreplicate(S0)",
    "S_BITSET0_B64": "D0 & ~(u64(1) << u64(S0 & 63))", "S_BITSET1_B64": "D0 | (u64(1) << u64(S0 & 63))",
    "S_BFE_U32": "bfe_u(S0, S1 & 31, minimum((u32(S1) >> 16) & 127, 32))",
    "S_BFE_I32": "bfe_i(S0, S1 & 31, minimum((u32(S1) >> 16) & 127, 32))",
    "S_BITSET0_B32": "D0 & ~(u32(1) << (S0 & 31))", "S_BITSET1_B32": "D0 | (u32(1) << (S0 & 31))",
    "S_PACK_LL_B32_B16": "(u32(S0) & 0xFFFF) | (u32(S1) << 16)",
    "S_PACK_LH_B32_B16": "(u32(S0) & 0xFFFF) | (u32(S1) & 0xFFFF0000)",
    "S_PACK_HH_B32_B16": "(u32(S0) >> 16) | (u32(S1) & 0xFFFF0000)",
    # scalar arithmetic
    "S_ADD_U32": "D0 = S0 + S1; SCC = (u64(S0) + u64(S1)) >> 32",
    "S_SUB_U32": "D0 = S0 - S1; SCC = u32(S1) > u32(S0)",
    "S_ADDC_U32": "D0 = u64(S0) + u64(S1) + u64(SCC); SCC = (u64(S0) + u64(S1) + u64(SCC)) >> 32",
    "S_SUBB_U32": "D0 = i64(S0) - i64(S1) - i64(SCC); SCC = u64(S1) + u64(SCC) > u64(S0)",
    "S_ADD_I32": "D0 = i64(S0) + i64(S1); SCC = (D0 > 2147483647) | (D0 < -2147483648)",
    "S_SUB_I32": "D0 = i64(S0) - i64(S1); SCC = (D0 > 2147483647) | (D0 < -2147483648)",
    "S_ADDK_I32": "D0 = i64(D0) + i64(S0); SCC = (D0 > 2147483647) | (D0 < -2147483648)",
    "S_MULK_I32": "D0 = i64(D0) * i64(S0)",
    "S_MUL_I32": "i64(S0) * i64(S1)", "S_MUL_HI_U32": "(u64(S0) * u64(S1)) >> 32",
    "S_MUL_HI_I32": "(i64(S0) * i64(S1)) >> 32",
    "S_MIN_I32": "D0 = minimum(S0, S1); SCC = S0 < S1", "S_MIN_U32": "D0 = minimum(S0, S1); SCC = S0 < S1",
    "S_MAX_I32": "D0 = maximum(S0, S1); SCC = S0 > S1", "S_MAX_U32": "D0 = maximum(S0, S1); SCC = S0 > S1",
    "S_ABSDIFF_I32": "abs(i64(S0) - i64(S1))",
    "S_CSELECT_B32": "where(SCC, S0, S1)", "S_CSELECT_B64": "where(SCC, S0, S1)",
    "S_LSHL1_ADD_U32": "D0 = (u64(S0) << 1) + u64(S1); SCC = D0 >> 32",
    "S_LSHL2_ADD_U32": "D0 = (u64(S0) << 2) + u64(S1); SCC = D0 >> 32",
    "S_LSHL3_ADD_U32": "D0 = (u64(S0) << 3) + u64(S1); SCC = D0 >> 32",
    "S_LSHL4_ADD_U32": "D0 = (u64(S0) << 4) + u64(S1); SCC = D0 >> 32",
    "S_BITCMP0_B32": "SCC = ((u32(S0) >> (u32(S1) & 31)) & 1) == 0",
    "S_BITCMP1_B32": "SCC = ((u32(S0) >> (u32(S1) & 31)) & 1) == 1",
    "S_BITCMP0_B64": "SCC = ((u64(S0) >> u64(S1 & 63)) & 1) == 0",
    "S_BITCMP1_B64": "SCC = ((u64(S0) >> u64(S1 & 63)) & 1) == 1",
    # EXEC manipulation
    "S_AND_SAVEEXEC_B64": "D0 = EXEC; EXEC = S0 & EXEC; SCC = EXEC != 0",
    "S_OR_SAVEEXEC_B64": "D0 = EXEC; EXEC = S0 | EXEC; SCC = EXEC != 0",
    "S_XOR_SAVEEXEC_B64": "D0 = EXEC; EXEC = S0 ^ EXEC; SCC = EXEC != 0",
    "S_ANDN2_SAVEEXEC_B64": "D0 = EXEC; EXEC = S0 & ~EXEC; SCC = EXEC != 0",
    "S_ORN2_SAVEEXEC_B64": "D0 = EXEC; EXEC = S0 | ~EXEC; SCC = EXEC != 0",
    "S_ANDN1_SAVEEXEC_B64": "D0 = EXEC; EXEC = ~S0 & EXEC; SCC = EXEC != 0",
    "S_ORN1_SAVEEXEC_B64": "D0 = EXEC; EXEC = ~S0 | EXEC; SCC = EXEC != 0",
    "S_NAND_SAVEEXEC_B64": "D0 = EXEC; EXEC = ~(S0 & EXEC); SCC = EXEC != 0",
    "S_NOR_SAVEEXEC_B64": "D0 = EXEC; EXEC = ~(S0 | EXEC); SCC = EXEC != 0",
    "S_XNOR_SAVEEXEC_B64": "D0 = EXEC; EXEC = ~(S0 ^ EXEC); SCC = EXEC != 0",
    "S_ANDN1_WREXEC_B64": "EXEC = ~S0 & EXEC; D0 = EXEC; SCC = EXEC != 0",
    "S_ANDN2_WREXEC_B64": "EXEC = S0 & ~EXEC; D0 = EXEC; SCC = EXEC != 0",
    "S_GETPC_B64": "PC + 4",
    # vector moves and bit operations
    "V_MOV_B32": "S0", "V_MOV_B64": "S0", "V_ACCVGPR_READ": "S0", "V_ACCVGPR_WRITE": "S0",
    "V_ACCVGPR_MOV_B32": "S0", "V_NOT_B32": "~S0", "V_BFREV_B32": "brev32(S0)",
    "V_FFBH_U32": "ffbh_u(S0)", "V_FFBL_B32": "ff1(S0)", "V_FFBH_I32": "ffbh_i(S0)",
    "V_AND_B32": "S0 & S1", "V_OR_B32": "S0 | S1", "V_XOR_B32": "S0 ^ S1", "V_XNOR_B32": "~(S0 ^ S1)",
    "V_LSHLREV_B32": "S1 << (S0 & 31)", "V_LSHRREV_B32": "S1 >> (S0 & 31)", "V_ASHRREV_I32": "S1 >> (S0 & 31)",
    "V_LSHLREV_B16": "u32(S1) << (u32(S0) & 15)", "V_LSHRREV_B16": "(u32(S1) & 0xFFFF) >> (u32(S0) & 15)",
    "V_ASHRREV_I16": "S1 >> (S0 & 15)",
    "V_LSHLREV_B64": "S1 << u64(S0 & 63)", "V_LSHRREV_B64": "S1 >> u64(S0 & 63)",
    "V_ASHRREV_I64": "S1 >> i64(S0 & 63)",
    "V_BFE_U32": "bfe_u(S0, S1 & 31, S2 & 31)", "V_BFE_I32": "bfe_i(S0, S1 & 31, S2 & 31)",
    "V_BFI_B32": "(S0 & S1) | (~S0 & S2)",
    "V_BFM_B32": "mask_bits(S0 & 31) << (S1 & 31)",
    "V_ALIGNBIT_B32": "((u64(S0) << 32) | u64(S1)) >> u64(S2 & 31)",
    "V_ALIGNBYTE_B32": "((u64(S0) << 32) | u64(S1)) >> u64(8 * (S2 & 3))",
    "V_PERM_B32": "perm(S0, S1, S2)", "V_CNDMASK_B32": "where(S2, S1, S0)",
    "V_LSHL_ADD_U32": "(S0 << (S1 & 31)) + S2", "V_ADD_LSHL_U32": "(S0 + S1) << (S2 & 31)",
    "V_LSHL_OR_B32": "(S0 << (S1 & 31)) | S2", "V_AND_OR_B32": "(S0 & S1) | S2", "V_OR3_B32": "S0 | S1 | S2",
    "V_XAD_U32": "(S0 ^ S1) + S2", "V_ADD3_U32": "S0 + S1 + S2",
    "V_LSHL_ADD_U64": "(S0 << u64(S1 & 7)) + S2",
    "V_BCNT_U32_B32": "popcount(S0) + S1",
    "V_MBCNT_LO_U32_B32": "popcount(u32(S0) & mask_bits(minimum(LANE, 32))) + S1",
    "V_MBCNT_HI_U32_B32": "popcount(u32(S0) & mask_bits(maximum(i64(LANE) - 32, 0))) + S1",
    # vector integer arithmetic
    "V_ADD_U32": "S0 + S1", "V_SUB_U32": "S0 - S1", "V_SUBREV_U32": "S1 - S0",
    "V_ADD_I32": "S0 + S1", "V_SUB_I32": "S0 - S1",
    "V_ADD_U16": "S0 + S1", "V_SUB_U16": "S0 - S1", "V_SUBREV_U16": "S1 - S0", "V_MUL_LO_U16": "S0 * S1",
    "V_ADD_I16": "S0 + S1", "V_SUB_I16": "S0 - S1",
    "V_MAX_U16": "maximum(S0, S1)", "V_MAX_I16": "maximum(S0, S1)", "V_MIN_U16": "minimum(S0, S1)",
    "V_MIN_I16": "minimum(S0, S1)", "V_MIN3_I16": "minimum(minimum(S0, S1), S2)",
    "V_MIN3_U16": "minimum(minimum(S0, S1), S2)", "V_MAX3_I16": "maximum(maximum(S0, S1), S2)",
    "V_MAX3_U16": "maximum(maximum(S0, S1), S2)", "V_MED3_I16": "med3(S0, S1, S2)", "V_MED3_U16": "med3(S0, S1, S2)",
    "V_MAD_U16": "S0 * S1 + S2", "V_MAD_I16": "S0 * S1 + S2", "V_MAD_LEGACY_U16": "S0 * S1 + S2",
    "V_MAD_LEGACY_I16": "S0 * S1 + S2", "V_MAD_U32_U16": "u64(S0) * u64(S1) + u64(S2)",
    "V_MAD_I32_I16": "i64(S0) * i64(S1) + i64(S2)",
    "V_SAD_U8": "sad_u8(S0, S1) + u64(S2)", "V_SAD_HI_U8": "(sad_u8(S0, S1) << 16) + u64(S2)",
    "V_SAD_U16": "sad_u16(S0, S1) + u64(S2)", "V_SAD_U32": "abs(i64(S0) - i64(S1)) + u64(S2)",
    "V_MSAD_U8": "sad_u8(S0, S1, masked=True) + u64(S2)", "V_LERP_U8": "lerp_u8(S0, S1, S2)",
    "V_SAT_PK_U8_I16": "sat_pk_u8(S0)",
    "V_ADD_CO_U32": "D0 = u64(S0) + u64(S1); D1 = (D0 >> 32) != 0",
    "V_SUB_CO_U32": "D0 = S0 - S1; D1 = u32(S1) > u32(S0)",
    "V_SUBREV_CO_U32": "D0 = S1 - S0; D1 = u32(S0) > u32(S1)",
    "V_ADDC_CO_U32": "D0 = u64(S0) + u64(S1) + u64(S2); D1 = (D0 >> 32) != 0",
    "V_SUBB_CO_U32": "D0 = i64(S0) - i64(S1) - i64(S2); D1 = u64(S1) + u64(S2) > u64(S0)",
    "V_SUBBREV_CO_U32": "D0 = i64(S1) - i64(S0) - i64(S2); D1 = u64(S0) + u64(S2) > u64(S1)",
    "V_MUL_LO_U32": "S0 * S1", "V_MUL_HI_U32": "(u64(S0) * u64(S1)) >> 32", "V_MUL_LO_I32": "S0 * S1",
    "V_MUL_HI_I32": "(i64(S0) * i64(S1)) >> 32",
    "V_MUL_U32_U24": "u24(S0) * u24(S1)", "V_MUL_I32_I24": "i24(S0) * i24(S1)",
    "V_MUL_HI_U32_U24": "(u24(S0) * u24(S1)) >> 32", "V_MUL_HI_I32_I24": "(i24(S0) * i24(S1)) >> 32",
    "V_MAD_U32_U24": "u24(S0) * u24(S1) + S2", "V_MAD_I32_I24": "i24(S0) * i24(S1) + S2",
    "V_MAD_U64_U32": "D0 = u64(S0) * u64(S1) + u64(S2); D1 = (u64(S0) * u64(S1)) > ~u64(S2)",
    "V_MAD_I64_I32": "i64(S0) * i64(S1) + i64(S2)",
    "V_MIN_U32": "minimum(S0, S1)", "V_MAX_U32": "maximum(S0, S1)", "V_MIN_I32": "minimum(S0, S1)",
    "V_MAX_I32": "maximum(S0, S1)", "V_MIN3_U32": "minimum(minimum(S0, S1), S2)",
    "V_MAX3_U32": "maximum(maximum(S0, S1), S2)", "V_MIN3_I32": "minimum(minimum(S0, S1), S2)",
    "V_MAX3_I32": "maximum(maximum(S0, S1), S2)", "V_MED3_I32": "med3(S0, S1, S2)", "V_MED3_U32": "med3(S0, S1, S2)",
    # conversions: the destination's format does the rounding; float -> int saturates and truncates
    "V_CVT_F32_U32": "S0", "V_CVT_F32_I32": "S0", "V_CVT_U32_F32": "sat_cvt(S0, 0, 4294967295)",
    "V_CVT_I32_F32": "sat_cvt(S0, -2147483648, 2147483647)", "V_CVT_F16_F32": "S0", "V_CVT_F32_F16": "S0",
    "V_CVT_F64_F32": "S0", "V_CVT_F32_F64": "S0", "V_CVT_F64_I32": "S0", "V_CVT_F64_U32": "S0",
    "V_CVT_I32_F64": "sat_cvt(S0, -2147483648, 2147483647)", "V_CVT_U32_F64": "sat_cvt(S0, 0, 4294967295)",
    "V_CVT_F16_U16": "S0", "V_CVT_F16_I16": "S0", "V_CVT_U16_F16": "sat_cvt(S0, 0, 65535)",
    "V_CVT_I16_F16": "sat_cvt(S0, -32768, 32767)",
    "V_CVT_RPI_I32_F32": "sat_cvt(floor(S0 + 0.5), -2147483648, 2147483647)",
    "V_CVT_FLR_I32_F32": "sat_cvt(floor(S0), -2147483648, 2147483647)",
    "V_CVT_F32_UBYTE0": "u32(S0) & 255", "V_CVT_F32_UBYTE1": "(u32(S0) >> 8) & 255",
    "V_CVT_F32_UBYTE2": "(u32(S0) >> 16) & 255", "V_CVT_F32_UBYTE3": "u32(S0) >> 24",
    "V_CVT_PKRTZ_F16_F32": "cvt_pkrtz(S0, S1)",
    "V_PACK_B32_F16": "f16_bits(S0) | (f16_bits(S1) << 16)",
    "V_CVT_OFF_F32_I4": "((i32(S0) << 28) >> 28) / 16.0",
    "V_CVT_F32_FP8": "S0", "V_CVT_F32_BF8": "S0",
    # gfx950 conversions and IEEE minimum/maximum (NaN in, NaN out: numpy's minimum/maximum)
    "V_CVT_PK_BF16_F32": "cvt_pk(S0, S1, bfloat16)", "V_CVT_PK_F16_F32": "cvt_pk(S0, S1, float16)",
    "V_CVT_F32_BF16": "S0",
    "V_MINIMUM3_F32": "minimum(minimum(S0, S1), S2)", "V_MAXIMUM3_F32": "maximum(maximum(S0, S1), S2)",
    "V_PK_MINIMUM3_F16": "minimum(minimum(S0, S1), S2)", "V_PK_MAXIMUM3_F16": "maximum(maximum(S0, S1), S2)",
    # float arithmetic
    "V_ADD_F32": "S0 + S1", "V_SUB_F32": "S0 - S1", "V_SUBREV_F32": "S1 - S0", "V_MUL_F32": "S0 * S1",
    "V_ADD_F16": "S0 + S1", "V_SUB_F16": "S0 - S1", "V_SUBREV_F16": "S1 - S0", "V_MUL_F16": "S0 * S1",
    "V_ADD_F64": "S0 + S1", "V_MUL_F64": "S0 * S1",
    "V_MUL_LEGACY_F32": "where((S0 == 0) | (S1 == 0), 0.0, S0 * S1)",
    "V_MIN_F32": "fmin(S0, S1)", "V_MAX_F32": "fmax(S0, S1)", "V_MIN_F16": "fmin(S0, S1)",
    "V_MAX_F16": "fmax(S0, S1)", "V_MIN_F64": "fmin(S0, S1)", "V_MAX_F64": "fmax(S0, S1)",
    "V_MIN3_F32": "fmin(fmin(S0, S1), S2)", "V_MAX3_F32": "fmax(fmax(S0, S1), S2)",
    "V_MED3_F32": "fmed3(S0, S1, S2)",
    "V_FMA_F32": "fma(S0, S1, S2)", "V_FMA_F16": "fma(S0, S1, S2)", "V_FMA_F64": "fma(S0, S1, S2)",
    "V_FMAC_F32": "fma(S0, S1, D0)", "V_FMAC_F16": "fma(S0, S1, D0)", "V_FMAC_F64": "fma(S0, S1, D0)",
    "V_MAC_F32": "S0 * S1 + D0", "V_MAD_F32": "S0 * S1 + S2", "V_MAC_F16": "S0 * S1 + D0",
    "V_MAD_F16": "S0 * S1 + S2", "V_MAD_LEGACY_F32": "S0 * S1 + S2",
    "V_FMAMK_F32": "fma(S0, S1, S2)", "V_FMAAK_F32": "fma(S0, S1, S2)",
    "V_MADMK_F32": "S0 * S1 + S2", "V_MADAK_F32": "S0 * S1 + S2",
    "V_RCP_F32": "1 / S0", "V_RCP_IFLAG_F32": "1 / S0", "V_RCP_F16": "1 / S0", "V_RCP_F64": "1 / S0",
    "V_RSQ_F32": "1 / sqrt(S0)", "V_RSQ_F16": "1 / sqrt(S0)", "V_RSQ_F64": "1 / sqrt(S0)",
    "V_SQRT_F32": "sqrt(S0)", "V_SQRT_F16": "sqrt(S0)", "V_SQRT_F64": "sqrt(S0)",
    "V_EXP_F32": "exp2(S0)", "V_LOG_F32": "log2(S0)", "V_EXP_F16": "exp2(S0)", "V_LOG_F16": "log2(S0)",
    "V_EXP_LEGACY_F32": "exp2(S0)", "V_LOG_LEGACY_F32": "log2(S0)",
    "V_SIN_F32": "sin(S0 * 2 * pi)", "V_COS_F32": "cos(S0 * 2 * pi)",
    "V_SIN_F16": "sin(S0 * 2 * pi)", "V_COS_F16": "cos(S0 * 2 * pi)",
    "V_LDEXP_F32": "ldexp(S0, S1)", "V_LDEXP_F16": "ldexp(S0, S1)", "V_LDEXP_F64": "ldexp(S0, S1)",
    "V_FREXP_MANT_F32": "frexp_mant(S0)", "V_FREXP_EXP_I32_F32": "frexp_exp(S0)",
    "V_FREXP_MANT_F64": "frexp_mant(S0)", "V_FREXP_EXP_I32_F64": "frexp_exp(S0)",
    "V_FLOOR_F16": "floor(S0)", "V_CEIL_F16": "ceil(S0)", "V_TRUNC_F16": "trunc(S0)", "V_RNDNE_F16": "rint(S0)",
    "V_FREXP_MANT_F16": "frexp_mant(S0)", "V_FREXP_EXP_I16_F16": "frexp_exp(S0)",
    "V_MIN3_F16": "fmin(fmin(S0, S1), S2)", "V_MAX3_F16": "fmax(fmax(S0, S1), S2)", "V_MED3_F16": "fmed3(S0, S1, S2)",
    "V_FMA_LEGACY_F16": "fma(S0, S1, S2)", "V_PK_FMAC_F16": "fma(S0, S1, D0)",
    "V_FRACT_F32": "S0 - floor(S0)", "V_TRUNC_F32": "trunc(S0)", "V_CEIL_F32": "ceil(S0)",
    "V_RNDNE_F32": "rint(S0)", "V_FLOOR_F32": "floor(S0)", "V_FRACT_F64": "S0 - floor(S0)",
    "V_TRUNC_F64": "trunc(S0)", "V_CEIL_F64": "ceil(S0)", "V_RNDNE_F64": "rint(S0)", "V_FLOOR_F64": "floor(S0)",
    "V_DIV_SCALE_F32": "D0 = S0; D1 = S0 != S0", "V_DIV_SCALE_F64": "D0 = S0; D1 = S0 != S0",
    "V_DIV_FMAS_F32": "fma(S0, S1, S2)", "V_DIV_FMAS_F64": "fma(S0, S1, S2)",
    "V_DIV_FIXUP_F32": "div_fixup(S0, S1, S2)", "V_DIV_FIXUP_F64": "div_fixup(S0, S1, S2)",
    "V_CMP_CLASS_F32": "cls_f(S0, S1)", "V_CMPX_CLASS_F32": "cls_f(S0, S1)",
    "V_CMP_CLASS_F64": "cls_f(S0, S1)", "V_CMP_CLASS_F16": "cls_f(S0, S1, 16)",
    "V_CMPX_CLASS_F64": "cls_f(S0, S1)", "V_CMPX_CLASS_F16": "cls_f(S0, S1, 16)",
    # dot products and packed math (packed operands are (..., components) arrays)
    "V_DOT2C_F32_F16": "D0 + (S0 * S1).sum(axis=-1)", "V_DOT2_F32_F16": "S2 + (S0 * S1).sum(axis=-1)",
    "V_DOT2C_F32_BF16": "D0 + (S0 * S1).sum(axis=-1)", "V_DOT2_F32_BF16": "S2 + (S0 * S1).sum(axis=-1)",
    # integer dot products read their packed sources as whole dwords (VALU statements see packed integers as
    # raw bits, and the packed-math handler passes packs of more than two components whole)
    "V_DOT4C_I32_I8": "D0 + dot_packed(S0, S1, 8, True)", "V_DOT4_I32_I8": "S2 + dot_packed(S0, S1, 8, True)",
    "V_DOT4_U32_U8": "S2 + dot_packed(S0, S1, 8, False)", "V_DOT8_I32_I4": "S2 + dot_packed(S0, S1, 4, True)",
    "V_DOT8_U32_U4": "S2 + dot_packed(S0, S1, 4, False)", "V_DOT8C_I32_I4": "D0 + dot_packed(S0, S1, 4, True)",
    "V_DOT2C_I32_I16": "D0 + dot_packed(S0, S1, 16, True)",
    "V_DOT2_I32_I16": "S2 + (i64(S0) * S1).sum(axis=-1)", "V_DOT2_U32_U16": "S2 + (u64(S0) * S1).sum(axis=-1)",
    "V_PK_FMA_F32": "fma(S0, S1, S2)", "V_PK_MUL_F32": "S0 * S1", "V_PK_ADD_F32": "S0 + S1", "V_PK_MOV_B32": "S0",
    "V_PK_FMA_F16": "fma(S0, S1, S2)", "V_PK_MUL_F16": "S0 * S1", "V_PK_ADD_F16": "S0 + S1",
    "V_PK_MAX_F16": "fmax(S0, S1)", "V_PK_MIN_F16": "fmin(S0, S1)", "V_PK_ADD_U16": "S0 + S1",
    "V_PK_SUB_U16": "S0 - S1", "V_PK_ADD_I16": "S0 + S1", "V_PK_SUB_I16": "S0 - S1", "V_PK_MUL_LO_U16": "S0 * S1",
    "V_PK_LSHLREV_B16": "S1 << (S0 & 15)", "V_PK_LSHRREV_B16": "S1 >> (S0 & 15)",
    "V_PK_ASHRREV_I16": "S1 >> (S0 & 15)", "V_PK_MAX_I16": "maximum(S0, S1)", "V_PK_MIN_I16": "minimum(S0, S1)",
    "V_PK_MAX_U16": "maximum(S0, S1)", "V_PK_MIN_U16": "minimum(S0, S1)",
    "V_PK_MAD_U16": "S0 * S1 + S2", "V_PK_MAD_I16": "S0 * S1 + S2",
}

# Compare operations by the name part AMD and LLVM use (V_CMP_<op>_<type>, S_CMP_<op>_<type>).
_FLOAT_CMP = {
    "LT": "S0 < S1", "EQ": "S0 == S1", "LE": "S0 <= S1", "GT": "S0 > S1", "LG": "(S0 < S1) | (S0 > S1)",
    "GE": "S0 >= S1", "O": "~(isnan(S0) | isnan(S1))", "U": "isnan(S0) | isnan(S1)", "NGE": "~(S0 >= S1)",
    "NLG": "~((S0 < S1) | (S0 > S1))", "NGT": "~(S0 > S1)", "NLE": "~(S0 <= S1)", "NEQ": "~(S0 == S1)",
    "NLT": "~(S0 < S1)",
}
_INT_CMP = {"LT": "S0 < S1", "EQ": "S0 == S1", "LE": "S0 <= S1", "GT": "S0 > S1",
            "NE": "S0 != S1", "LG": "S0 != S1", "GE": "S0 >= S1"}
_CMP_NAME = re.compile(r"^(V_CMPX?|S_CMPK?)_([A-Z]+)_([FIUB])(16|32|64)$")
_FLOAT_CMP["F"] = "(S0 != S0) & (S0 == S0)"
_FLOAT_CMP["TRU"] = "(S0 == S0) | (S0 != S0)"
_INT_CMP["F"] = "(S0 != S0) & (S0 == S0)"
_INT_CMP["T"] = _INT_CMP["TRU"] = "(S0 == S0) | (S0 != S0)"


def semantics_of(name: str) -> str | None:
    """The statement list of an instruction (spec name, upper case), or None."""
    found = SEMANTICS.get(name)
    if found is not None:
        return found
    m = _CMP_NAME.match(name)
    if m:
        prefix, op, kind, _ = m.groups()
        table = _FLOAT_CMP if kind == "F" else _INT_CMP
        expr = table.get(op)
        if expr is None:
            return None
        if prefix.startswith("S_"):
            return f"SCC = {expr}"
        return f"D0 = {expr}"
    return None


class Statements:
    """A compiled statement list: `run(env)` evaluates each `TARGET = expr` in order into `env`."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        parts = [p.strip() for p in text.split(";") if p.strip()]
        self.steps: list[tuple[str, object]] = []
        for i, part in enumerate(parts):
            m = re.match(r"^([A-Z][A-Z0-9]*)\s*=(?!=)\s*(.+)$", part)
            if m:
                target, expr = m.group(1), m.group(2)
            elif i == 0 and len(parts) == 1:
                target, expr = "D0", part
            else:
                raise ValueError(f"{name}: semantic statement {part!r} has no target")
            self.steps.append((target, compile(expr, f"<semantics of {name}>", "eval")))
        self.targets = {t for t, _ in self.steps}

    def run(self, env: dict) -> dict:
        with np.errstate(all="ignore"):
            for target, code in self.steps:
                env[target] = eval(code, HELPERS, env)  # noqa: S307 - project-defined expressions only
        return env


@functools.cache
def _table_lines() -> dict[tuple[str, str], int]:
    """(table, key) -> line of that entry in this file, for SEMANTICS, _FLOAT_CMP and _INT_CMP (dict literals and
    `TABLE["KEY"] = ...` statements), read from the source with `ast`."""
    tree = ast.parse(Path(__file__).read_text())
    lines: dict[tuple[str, str], int] = {}
    tables = ("SEMANTICS", "_FLOAT_CMP", "_INT_CMP")
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets \
            if isinstance(node, ast.Assign) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id in tables and isinstance(value, ast.Dict):
                for key in value.keys:
                    if isinstance(key, ast.Constant):
                        lines[(target.id, key.value)] = key.lineno
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                    target.value.id in tables and isinstance(target.slice, ast.Constant):
                lines[(target.value.id, target.slice.value)] = node.lineno
    return lines


def statement_source(name: str) -> tuple[str, int, str] | None:
    """(this file, line, statement text) of the entry that gives an instruction its statement, or None: the
    SEMANTICS entry, or for a generated compare the _FLOAT_CMP/_INT_CMP entry of its operation."""
    text = semantics_of(name)
    if text is None:
        return None
    lines = _table_lines()
    if name in SEMANTICS:
        return __file__, lines[("SEMANTICS", name)], text
    prefix, op, kind, _ = _CMP_NAME.match(name).groups()
    table = "_FLOAT_CMP" if kind == "F" else "_INT_CMP"
    return __file__, lines[(table, op)], text
