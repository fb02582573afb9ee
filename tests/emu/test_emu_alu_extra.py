"""Emulator semantics of ALU instructions the broadened CDNA 3 subset added, each against a numpy model written here.

Every case is hand-written gfx942 assembly, assembled by the project's assembler (isa.asm.assembler) from the bundled
subset, wrapped into a code object by codegen.codeobj and run by jitgemm.emu on random inputs. The models follow
AMD's pseudo-code for each instruction in the CDNA ISA reference guide (sections "SOP1/SOP2/SOPC/SOPK", "VOP1",
"VOP2", "VOP3A & VOP3B", "VOP3P", "VOPC"): for example V_FFBH_I32 counts the leading bits equal to the sign bit
("for i in 1 : 31 ... if S0.i32[31 - i] != S0.i32[31] then D0.i32 = i"), V_MSAD_U8 skips bytes whose
reference (S1) byte is 0, V_LERP_U8 adds bit 0 of each S2 byte before halving, V_SAT_PK_U8_I16 clamps each signed
half to 0..255, S_QUADMASK sets bit i when nibble i is nonzero, S_WQM fills every nonzero nibble, S_BITREPLICATE
doubles every bit, the saveexec/wrexec forms combine S0 with EXEC as named, V_CMP_CLASS tests the ten classes of
its mask (bit 0 signaling NaN ... bit 9 +infinity), V_CVT_OFF_F32_I4 maps the signed nibble n to n/16 and the
dot products sum the products of their packed fields plus S2. IEEE operations (add, mul, ldexp, rounding to
integers, conversions) are modelled by numpy's own IEEE arithmetic with round-to-nearest-even; compares follow
IEEE ordered/unordered rules (N* forms are true for NaN). Inputs avoid what the emulator documents as not
modelled (clamp on integer results, NaN operands of min/max, rounding subtleties of non-fused f16 MADs).

Seeds are fixed per case (`JITGEMM_TEST_SEED` shifts them) and printed on failure.
"""

from __future__ import annotations

import functools
import os
import re

import numpy as np
import pytest
from jitgemm.codegen.codeobj import KernelArg, KernelDescription, write
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.spec.forms import forms_of

from jitgemm import isa
from jitgemm.emu import emulate
from tests.fixtures.oracles import REPO

SUBSET = REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"
SEED = int(os.environ.get("JITGEMM_TEST_SEED", "0"))
GROUPS = 4          # VALU kernels: 4 waves of 64 lanes
SGROUPS = 48        # SALU kernels: one sample per wave


@functools.cache
def _forms():
    return forms_of(isa.load_spec(SUBSET, use_cache=False))


def _run(body: str, inputs: np.ndarray, out_words: int, groups: int, vgprs: int = 64) -> np.ndarray:
    """Assemble `body` with the project's assembler, run it on `groups` workgroups of 64 lanes, return `out`."""
    code = assemble(body + "\n  s_endpgm\n", _forms()).code
    desc = KernelDescription("k", code, args=(KernelArg.buffer("in"), KernelArg.buffer("out")),
                             next_free_vgpr=vgprs, next_free_sgpr=40)
    out = np.zeros((inputs.shape[0], out_words), np.uint32)
    emulate(write(desc), "k", grid=groups, block=64, args=[inputs, out], strict=True)
    return out


# ---------------------------------------------------------------------------------------------------------
# VALU: per lane x = v[2:3], y = v[4:5], z = v[6:7], old destination = v[8:9]; results v[10:11], the mask in
# s[20:21] as 0/1 in v12 and (after a v_cmpx) EXEC's bit in v13.

VALU = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_lshl_b32 s3, s2, 6
  v_add_u32 v0, s3, v0
  v_lshlrev_b32 v1, 5, v0
  s_waitcnt lgkmcnt(0)
  global_load_dwordx4 v[2:5], v1, s[4:5]
  global_load_dwordx4 v[6:9], v1, s[4:5] offset:16
  v_lshlrev_b32 v1, 4, v0
  s_waitcnt vmcnt(0)
  v_mov_b32 v10, v8
  v_mov_b32 v11, v9
  s_mov_b64 s[20:21], 0
  s_mov_b64 s[24:25], exec
{op}
  s_mov_b64 s[26:27], exec
  s_mov_b64 exec, s[24:25]
  v_cndmask_b32 v12, 0, 1, s[20:21]
  v_cndmask_b32 v13, 0, 1, s[26:27]
  global_store_dwordx4 v1, v[10:13], s[6:7]
"""


def run_valu(op: str, x, y=0, z=0, d=0) -> dict:
    """Run one VALU instruction (text with the register names above) on per-lane 64-bit input patterns."""
    n = GROUPS * 64
    cols = [np.broadcast_to(np.asarray(a, np.uint64), (n,)) for a in (x, y, z, d)]
    inputs = np.zeros((n, 8), np.uint32)
    for i, c in enumerate(cols):
        inputs[:, 2 * i] = (c & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        inputs[:, 2 * i + 1] = (c >> np.uint64(32)).astype(np.uint32)
    out = _run(VALU.format(op=op), inputs, 4, GROUPS)
    return {"d32": out[:, 0], "d64": out[:, 0].astype(np.uint64) | (out[:, 1].astype(np.uint64) << np.uint64(32)),
            "mask": out[:, 2].astype(bool), "exec": out[:, 3].astype(bool)}


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, *name.encode()])


def bits(a, dtype) -> np.ndarray:
    """Bit patterns (uint64) of values of a float/int dtype."""
    a = np.asarray(a, dtype)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return a.view(width).astype(np.uint64)


def from_bits(b, dtype) -> np.ndarray:
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    return np.asarray(b).astype(width).view(dtype)


def floats(rng, n, dtype, specials=False) -> np.ndarray:
    """Random floats over many magnitudes, both signs; with `specials` also zeros, infinities and NaNs."""
    exp_range = {np.float16: 12, np.float32: 60, np.float64: 200}[np.dtype(dtype).type]
    v = rng.standard_normal(n) * 2.0 ** rng.integers(-exp_range, exp_range, n)
    v = v.astype(dtype)
    if specials:
        pick = rng.integers(0, 10, n)
        v = np.where(pick == 0, 0.0, v).astype(dtype)
        v = np.where(pick == 1, -0.0, v).astype(dtype)
        v = np.where(pick == 2, np.inf, v).astype(dtype)
        v = np.where(pick == 3, -np.inf, v).astype(dtype)
        v = np.where(pick == 4, np.nan, v).astype(dtype)
    return v


def same_float(got_bits, want, dtype) -> None:
    """Exact equality of float results, any NaN matching any NaN."""
    got = from_bits(got_bits, dtype)
    want = np.asarray(want, dtype)
    both_nan = np.isnan(got) & np.isnan(want)
    bad = ~both_nan & (bits(got, dtype) != bits(want, dtype))
    assert not bad.any(), (f"{bad.sum()} lanes differ, e.g. got {got[bad][:4]} want {want[bad][:4]} "
                           f"(seed {SEED})")


def same_int(got, want, width=32) -> None:
    """Equality of the low `width` bits (negative expectations as two's complement)."""
    mask = np.uint64((1 << width) - 1)
    got = np.asarray(got).astype(np.uint64) & mask
    want = np.asarray(want).astype(np.uint64) & mask
    bad = got != want
    assert not bad.any(), f"{bad.sum()} lanes differ, e.g. got {got[bad][:4]} want {want[bad][:4]} (seed {SEED})"


N = GROUPS * 64


# --- f64 arithmetic, rounding and conversions -----------------------------------------------------------

F64_BINARY = {
    "v_add_f64": lambda a, b: a + b,
    "v_mul_f64": lambda a, b: a * b,
    "v_min_f64": np.minimum,
    "v_max_f64": np.maximum,
}


@pytest.mark.parametrize("name", sorted(F64_BINARY))
def test_f64_binary(name):
    rng = rng_for(name)
    a, b = floats(rng, N, np.float64), floats(rng, N, np.float64)
    r = run_valu(f"  {name} v[10:11], v[2:3], v[4:5]", bits(a, np.float64), bits(b, np.float64))
    with np.errstate(all="ignore"):
        same_float(r["d64"], F64_BINARY[name](a, b), np.float64)


def test_ldexp_f64():
    rng = rng_for("ldexp")
    a, e = floats(rng, N, np.float64), rng.integers(-80, 80, N)
    r = run_valu("  v_ldexp_f64 v[10:11], v[2:3], v4", bits(a, np.float64), e.astype(np.int32).view(np.uint32))
    same_float(r["d64"], np.ldexp(a, e), np.float64)


F64_UNARY = {
    "v_trunc_f64": np.trunc, "v_ceil_f64": np.ceil, "v_floor_f64": np.floor, "v_rndne_f64": np.rint,
    "v_fract_f64": lambda a: a - np.floor(a),
    "v_frexp_mant_f64": lambda a: np.frexp(a)[0],
}


@pytest.mark.parametrize("name", sorted(F64_UNARY))
def test_f64_unary(name):
    rng = rng_for(name)
    a = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 12, N)).astype(np.float64)
    r = run_valu(f"  {name} v[10:11], v[2:3]", bits(a, np.float64))
    same_float(r["d64"], F64_UNARY[name](a), np.float64)


def test_frexp_exp_i32_f64():
    a = floats(rng_for("frexp_exp"), N, np.float64)
    r = run_valu("  v_frexp_exp_i32_f64 v10, v[2:3]", bits(a, np.float64))
    same_int(r["d32"], np.frexp(a)[1])


def test_conversions_with_f64():
    rng = rng_for("cvt64")
    i = rng.integers(-(1 << 31), 1 << 31, N)
    u = rng.integers(0, 1 << 32, N)
    r = run_valu("  v_cvt_f64_i32 v[10:11], v2", i.astype(np.int32).view(np.uint32))
    same_float(r["d64"], i.astype(np.float64), np.float64)
    r = run_valu("  v_cvt_f64_u32 v[10:11], v2", u.astype(np.uint32))
    same_float(r["d64"], u.astype(np.float64), np.float64)
    f = floats(rng, N, np.float32, specials=True)
    r = run_valu("  v_cvt_f64_f32 v[10:11], v2", bits(f, np.float32))
    same_float(r["d64"], f.astype(np.float64), np.float64)
    d = floats(rng, N, np.float64)
    r = run_valu("  v_cvt_f32_f64 v10, v[2:3]", bits(d, np.float64))
    with np.errstate(over="ignore"):
        same_float(r["d32"], d.astype(np.float32), np.float32)
    # f64 -> integers: truncate, saturate, NaN -> 0 (AMD: "out-of-range floating point values saturate")
    d = np.concatenate([rng.standard_normal(N - 6) * 2.0 ** 33, [np.nan, np.inf, -np.inf, 2.0 ** 40, -0.75, 0.99]])
    with np.errstate(invalid="ignore"):
        want_i = np.where(np.isnan(d), 0, np.clip(np.trunc(d), -2.0 ** 31, 2.0 ** 31 - 1)).astype(np.int64)
        want_u = np.where(np.isnan(d), 0, np.clip(np.trunc(d), 0, 2.0 ** 32 - 1)).astype(np.int64)
    same_int(run_valu("  v_cvt_i32_f64 v10, v[2:3]", bits(d, np.float64))["d32"], want_i)
    same_int(run_valu("  v_cvt_u32_f64 v10, v[2:3]", bits(d, np.float64))["d32"], want_u)


@pytest.mark.parametrize("byte", [1, 2, 3])
def test_cvt_f32_ubyte(byte):
    u = rng_for(f"ubyte{byte}").integers(0, 1 << 32, N).astype(np.uint32)
    r = run_valu(f"  v_cvt_f32_ubyte{byte} v10, v2", u)
    same_float(r["d32"], ((u >> (8 * byte)) & 0xFF).astype(np.float32), np.float32)


def test_cvt_off_f32_i4():
    u = rng_for("off_i4").integers(0, 1 << 32, N).astype(np.uint32)
    r = run_valu("  v_cvt_off_f32_i4 v10, v2", u)
    nib = (u & 0xF).astype(np.int64)
    same_float(r["d32"], (np.where(nib >= 8, nib - 16, nib) / 16.0).astype(np.float32), np.float32)


# --- 32-bit integer and bit operations --------------------------------------------------------------------

def _u32(rng, n=N):
    v = rng.integers(0, 1 << 32, n).astype(np.uint32)
    special = rng.integers(0, 8, n)
    v = np.where(special == 0, 0, v)
    v = np.where(special == 1, 0xFFFFFFFF, v)
    v = np.where(special == 2, v >> rng.integers(1, 32, n), v)          # many leading zeros
    return np.where(special == 3, ~(v >> rng.integers(1, 32, n)), v).astype(np.uint32)  # many leading ones


def _ffbh_i(x: np.ndarray) -> np.ndarray:
    """AMD's loop, per lane: the first i in 1..31 whose bit 31-i differs from bit 31, else -1."""
    out = np.full(x.shape, -1, np.int64)
    sign = (x >> 31) & 1
    for i in range(31, 0, -1):
        out = np.where(((x >> (31 - i)) & 1) != sign, i, out)
    return out


def test_ffbh_i32():
    x = _u32(rng_for("ffbh_i32")).astype(np.int64)
    r = run_valu("  v_ffbh_i32 v10, v2", x.astype(np.uint32))
    same_int(r["d32"], _ffbh_i(x))
    # AMD's functional examples
    r = run_valu("  v_ffbh_i32 v10, v2", np.resize(np.array([0, 0x40000000, 0x80000000, 0x0FFFFFFF], np.uint32), N))
    same_int(r["d32"][:4], [-1, 1, 1, 4])


VALU_INT = {
    # name: (operand text, model on (a, b, c) as int64 with the types the instruction reads)
    "v_xnor_b32": ("v10, v2, v4", lambda a, b, c: ~(a ^ b)),
    # the 24-bit multiplies read only the low 24 bits of their sources (AMD: S0.i24 * S1.i24)
    "v_mul_hi_i32_i24": ("v10, v2, v4", lambda a, b, c: (_sext(a, 24) * _sext(b, 24)) >> 32),
    "v_mul_i32_i24": ("v10, v2, v4", lambda a, b, c: _sext(a, 24) * _sext(b, 24)),
    "v_mul_u32_u24": ("v10, v2, v4", lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF)),
    "v_mul_hi_u32_u24": ("v10, v2, v4", lambda a, b, c: ((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 32),
    "v_mad_i32_i24": ("v10, v2, v4, v6", lambda a, b, c: _sext(a, 24) * _sext(b, 24) + c),
    "v_mad_u32_u24": ("v10, v2, v4, v6", lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF) + c),
    "v_med3_u32": ("v10, v2, v4, v6", lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "v_bfm_b32": ("v10, v2, v4", lambda a, b, c: ((1 << (a & 31)) - 1) << (b & 31)),
    "v_add_i32": ("v10, v2, v4", lambda a, b, c: _sext(a, 32) + _sext(b, 32)),
    "v_sub_i32": ("v10, v2, v4", lambda a, b, c: _sext(a, 32) - _sext(b, 32)),
    "v_sad_u32": ("v10, v2, v4, v6", lambda a, b, c: np.abs(a - b) + c),
    "v_sad_u8": ("v10, v2, v4, v6", lambda a, b, c: _sad(a, b, 8, 4) + c),
    "v_sad_hi_u8": ("v10, v2, v4, v6", lambda a, b, c: (_sad(a, b, 8, 4) << 16) + c),
    "v_sad_u16": ("v10, v2, v4, v6", lambda a, b, c: _sad(a, b, 16, 2) + c),
    "v_msad_u8": ("v10, v2, v4, v6", lambda a, b, c: _sad(a, b, 8, 4, masked=True) + c),
    "v_lerp_u8": ("v10, v2, v4, v6", lambda a, b, c: sum(
        ((_field(a, 8, i) + _field(b, 8, i) + (_field(c, 8, i) & 1)) >> 1) << (8 * i) for i in range(4))),
    "v_sat_pk_u8_i16": ("v10, v2", lambda a, b, c: np.clip(_sfield(a, 16, 0), 0, 255)
                        | (np.clip(_sfield(a, 16, 1), 0, 255) << 8)),
}


def _sext(x, width):
    x = np.asarray(x).astype(np.int64) & ((1 << width) - 1)
    return np.where(x >= 1 << (width - 1), x - (1 << width), x)


def _field(x, width, i):
    return (np.asarray(x).astype(np.int64) >> (width * i)) & ((1 << width) - 1)


def _sfield(x, width, i):
    return _sext(_field(x, width, i), width)


def _sad(a, b, width, count, masked=False):
    total = 0
    for i in range(count):
        diff = np.abs(_field(a, width, i) - _field(b, width, i))
        total = total + (np.where(_field(b, width, i) == 0, 0, diff) if masked else diff)
    return total


@pytest.mark.parametrize("name", sorted(VALU_INT))
def test_valu_integer(name):
    rng = rng_for(name)
    a, b, c = _u32(rng), _u32(rng), _u32(rng)
    if name == "v_msad_u8":     # reference bytes that are zero must occur
        b = b & np.where(rng.integers(0, 2, N) == 1, 0xFF00FF00, 0xFFFFFFFF).astype(np.uint32)
    ops, model = VALU_INT[name]
    r = run_valu(f"  {name} {ops}", a, b, c)
    width = 16 if name == "v_sat_pk_u8_i16" else 32      # a 16-bit result (AMD: D0.b16)
    same_int(r["d32"], model(a.astype(np.int64), b.astype(np.int64), c.astype(np.int64)), width=width)


# --- dot products ----------------------------------------------------------------------------------------

DOTS = {
    # name: (field width, signed, accumulating VOP2 form)
    "v_dot2c_i32_i16": (16, True, True), "v_dot4c_i32_i8": (8, True, True), "v_dot8c_i32_i4": (4, True, True),
    "v_dot2_i32_i16": (16, True, False), "v_dot2_u32_u16": (16, False, False),
    "v_dot4_i32_i8": (8, True, False), "v_dot4_u32_u8": (8, False, False),
    "v_dot8_i32_i4": (4, True, False), "v_dot8_u32_u4": (4, False, False),
}


@pytest.mark.parametrize("name", sorted(DOTS))
def test_integer_dot_products(name):
    width, signed, accumulating = DOTS[name]
    rng = rng_for(name)
    a, b, c = (rng.integers(0, 1 << 32, N).astype(np.uint32) for _ in range(3))
    field = _sfield if signed else _field
    want = sum(field(a, width, i) * field(b, width, i) for i in range(32 // width))
    if accumulating:
        r = run_valu(f"  {name} v10, v2, v4", a, b, 0, c)      # v10 starts as the old destination
    else:
        r = run_valu(f"  {name} v10, v2, v4, v6", a, b, c)
    same_int(r["d32"], want + (_sext(c, 32) if signed else c.astype(np.int64)))


def test_dot2_f32_f16_exact():
    """Small integer-valued halves keep every product and sum exact, so the formula is tested, not rounding."""
    rng = rng_for("dot2_f32_f16")
    h = rng.integers(-40, 40, (N, 4)).astype(np.float16)
    acc = rng.integers(-1000, 1000, N).astype(np.float32)
    a = bits(h[:, 0], np.float16) | (bits(h[:, 1], np.float16) << np.uint64(16))
    b = bits(h[:, 2], np.float16) | (bits(h[:, 3], np.float16) << np.uint64(16))
    r = run_valu("  v_dot2_f32_f16 v10, v2, v4, v6", a, b, bits(acc, np.float32))
    want = acc + h[:, 0].astype(np.float32) * h[:, 2] + h[:, 1].astype(np.float32) * h[:, 3]
    same_float(r["d32"], want, np.float32)


# --- 16-bit operations (results compared in the low 16 bits) ----------------------------------------------

def _u16(rng):
    return rng.integers(0, 1 << 16, N).astype(np.uint32) | (rng.integers(0, 1 << 16, N).astype(np.uint32) << 16)


VALU16 = {
    "v_subrev_u16": ("v10, v2, v4", lambda a, b, c: b - a),
    "v_max_u16": ("v10, v2, v4", lambda a, b, c: np.maximum(a, b)),
    "v_min_u16": ("v10, v2, v4", lambda a, b, c: np.minimum(a, b)),
    "v_max_i16": ("v10, v2, v4", lambda a, b, c: np.maximum(_sext(a, 16), _sext(b, 16))),
    "v_min_i16": ("v10, v2, v4", lambda a, b, c: np.minimum(_sext(a, 16), _sext(b, 16))),
    "v_add_i16": ("v10, v2, v4", lambda a, b, c: _sext(a, 16) + _sext(b, 16)),
    "v_sub_i16": ("v10, v2, v4", lambda a, b, c: _sext(a, 16) - _sext(b, 16)),
    "v_min3_u16": ("v10, v2, v4, v6", lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_u16": ("v10, v2, v4, v6", lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_med3_u16": ("v10, v2, v4, v6", lambda a, b, c: np.sort(np.stack([a, b, c]), axis=0)[1]),
    "v_min3_i16": ("v10, v2, v4, v6", lambda a, b, c: np.minimum(np.minimum(_sext(a, 16), _sext(b, 16)),
                                                                 _sext(c, 16))),
    "v_max3_i16": ("v10, v2, v4, v6", lambda a, b, c: np.maximum(np.maximum(_sext(a, 16), _sext(b, 16)),
                                                                 _sext(c, 16))),
    "v_med3_i16": ("v10, v2, v4, v6", lambda a, b, c: np.sort(np.stack([_sext(a, 16), _sext(b, 16), _sext(c, 16)]),
                                                              axis=0)[1]),
    "v_mad_u16": ("v10, v2, v4, v6", lambda a, b, c: a * b + c),
    "v_mad_i16": ("v10, v2, v4, v6", lambda a, b, c: _sext(a, 16) * _sext(b, 16) + _sext(c, 16)),
    "v_mad_legacy_u16": ("v10, v2, v4, v6", lambda a, b, c: a * b + c),
    "v_mad_legacy_i16": ("v10, v2, v4, v6", lambda a, b, c: _sext(a, 16) * _sext(b, 16) + _sext(c, 16)),
}


@pytest.mark.parametrize("name", sorted(VALU16))
def test_valu_16bit(name):
    rng = rng_for(name)
    a, b, c = _u16(rng), _u16(rng), _u16(rng)
    ops, model = VALU16[name]
    r = run_valu(f"  {name} {ops}", a, b, c)
    lo = [(x & 0xFFFF).astype(np.int64) for x in (a, b, c)]
    same_int(r["d32"], model(*lo), width=16)


def test_mad_32_from_16():
    rng = rng_for("mad32_16")
    a, b, c = _u16(rng), _u16(rng), _u32(rng)
    lo_a, lo_b = (a & 0xFFFF).astype(np.int64), (b & 0xFFFF).astype(np.int64)
    r = run_valu("  v_mad_u32_u16 v10, v2, v4, v6", a, b, c)
    same_int(r["d32"], lo_a * lo_b + c.astype(np.int64))
    r = run_valu("  v_mad_i32_i16 v10, v2, v4, v6", a, b, c)
    same_int(r["d32"], _sext(lo_a, 16) * _sext(lo_b, 16) + _sext(c, 32))


def _f16_pairs(rng, lo, hi):
    """Random f16 values as (values, dword patterns with the value in the low half and noise in the high half)."""
    v = rng.uniform(lo, hi, N).astype(np.float16)
    return v, bits(v, np.float16) | (rng.integers(0, 1 << 16, N).astype(np.uint64) << np.uint64(16))


F16_UNARY = {"v_floor_f16": np.floor, "v_ceil_f16": np.ceil, "v_trunc_f16": np.trunc, "v_rndne_f16": np.rint,
             "v_frexp_mant_f16": lambda a: np.frexp(a.astype(np.float32))[0]}


@pytest.mark.parametrize("name", sorted(F16_UNARY))
def test_f16_unary(name):
    v, pat = _f16_pairs(rng_for(name), -3000, 3000)
    v = np.where(rng_for(name + "s").integers(0, 4, N) == 0, (v / 2048).astype(np.float16), v)   # small values
    pat = bits(v, np.float16)
    r = run_valu(f"  {name} v10, v2", pat)
    same_float((r["d32"] & 0xFFFF).astype(np.uint16), F16_UNARY[name](v).astype(np.float16), np.float16)


def test_frexp_exp_i16_f16():
    v, pat = _f16_pairs(rng_for("frexp_exp16"), -60000, 60000)
    r = run_valu("  v_frexp_exp_i16_f16 v10, v2", pat)
    same_int(r["d32"], np.frexp(v.astype(np.float32))[1], width=16)


def test_ldexp_f16():
    rng = rng_for("ldexp_f16")
    v, pat = _f16_pairs(rng, -4, 4)
    e = rng.integers(-12, 12, N)
    r = run_valu("  v_ldexp_f16 v10, v2, v4", pat, e.astype(np.int32).view(np.uint32))
    same_float((r["d32"] & 0xFFFF).astype(np.uint16), np.ldexp(v.astype(np.float32), e).astype(np.float16),
               np.float16)


@pytest.mark.parametrize("name", ["v_min3_f16", "v_max3_f16", "v_med3_f16"])
def test_f16_three_way(name):
    rng = rng_for(name)
    (a, pa), (b, pb), (c, pc) = (_f16_pairs(rng, -100, 100) for _ in range(3))
    r = run_valu(f"  {name} v10, v2, v4, v6", pa, pb, pc)
    stack = np.sort(np.stack([a, b, c]), axis=0)
    want = {"v_min3_f16": stack[0], "v_max3_f16": stack[2], "v_med3_f16": stack[1]}[name]
    same_float((r["d32"] & 0xFFFF).astype(np.uint16), want, np.float16)


def test_fma_f16_forms_exact():
    """Integer-valued halves with exact products and sums: FMA's formula without rounding questions."""
    rng = rng_for("fma16")
    a, b, c = (rng.integers(-30, 30, (N, 2)).astype(np.float16) for _ in range(3))
    want = a.astype(np.float32) * b + c
    r = run_valu("  v_fma_legacy_f16 v10, v2, v4, v6", bits(a[:, 0], np.float16), bits(b[:, 0], np.float16),
                 bits(c[:, 0], np.float16))
    same_float((r["d32"] & 0xFFFF).astype(np.uint16), want[:, 0].astype(np.float16), np.float16)
    pk = [bits(x[:, 0], np.float16) | (bits(x[:, 1], np.float16) << np.uint64(16)) for x in (a, b, c)]
    r = run_valu("  v_pk_fmac_f16 v10, v2, v4", pk[0], pk[1], 0, pk[2])
    got = np.stack([(r["d32"] & 0xFFFF), r["d32"] >> 16], axis=-1).astype(np.uint16)
    same_float(got.reshape(-1), want.astype(np.float16).reshape(-1), np.float16)


def test_mul_legacy_f32():
    """0 times anything, infinity and NaN included, is +0; otherwise an IEEE product."""
    rng = rng_for("mul_legacy")
    a, b = floats(rng, N, np.float32, specials=True), floats(rng, N, np.float32, specials=True)
    r = run_valu("  v_mul_legacy_f32 v10, v2, v4", bits(a, np.float32), bits(b, np.float32))
    with np.errstate(all="ignore"):
        want = np.where((a == 0) | (b == 0), np.float32(0.0), a * b)
    same_float(r["d32"], want, np.float32)


# --- packed 16-bit math ------------------------------------------------------------------------------------

PK16 = {
    "v_pk_add_u16": lambda a, b, c, s: a + b, "v_pk_sub_u16": lambda a, b, c, s: a - b,
    "v_pk_add_i16": lambda a, b, c, s: s(a) + s(b), "v_pk_sub_i16": lambda a, b, c, s: s(a) - s(b),
    "v_pk_mul_lo_u16": lambda a, b, c, s: a * b,
    "v_pk_mad_u16": lambda a, b, c, s: a * b + c, "v_pk_mad_i16": lambda a, b, c, s: s(a) * s(b) + s(c),
    "v_pk_lshlrev_b16": lambda a, b, c, s: b << (a & 15), "v_pk_lshrrev_b16": lambda a, b, c, s: b >> (a & 15),
    "v_pk_ashrrev_i16": lambda a, b, c, s: s(b) >> (a & 15),
    "v_pk_max_u16": lambda a, b, c, s: np.maximum(a, b), "v_pk_min_u16": lambda a, b, c, s: np.minimum(a, b),
    "v_pk_max_i16": lambda a, b, c, s: np.maximum(s(a), s(b)),
    "v_pk_min_i16": lambda a, b, c, s: np.minimum(s(a), s(b)),
}


@pytest.mark.parametrize("name", sorted(PK16))
def test_packed_16bit(name):
    rng = rng_for(name)
    a, b, c = _u16(rng), _u16(rng), _u16(rng)
    three = "mad" in name
    r = run_valu(f"  {name} v10, v2, v4" + (", v6" if three else ""), a, b, c)
    for half in range(2):
        parts = [_field(x, 16, half) for x in (a, b, c)]
        want = PK16[name](*parts, lambda x: _sext(x, 16))
        same_int(_field(r["d32"], 16, half), want, width=16)


# --- compares -----------------------------------------------------------------------------------------------

CMP_FLOAT = {
    "f": lambda a, b: np.zeros(a.shape, bool), "lt": np.less, "eq": np.equal, "le": np.less_equal,
    "gt": np.greater, "lg": lambda a, b: (a < b) | (a > b), "ge": np.greater_equal,
    "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)), "u": lambda a, b: np.isnan(a) | np.isnan(b),
    "nge": lambda a, b: ~(a >= b), "nlg": lambda a, b: ~((a < b) | (a > b)), "ngt": lambda a, b: ~(a > b),
    "nle": lambda a, b: ~(a <= b), "neq": lambda a, b: ~(a == b), "nlt": lambda a, b: ~(a < b),
    "tru": lambda a, b: np.ones(a.shape, bool),
}
CMP_INT = {"f": CMP_FLOAT["f"], "lt": np.less, "eq": np.equal, "le": np.less_equal, "gt": np.greater,
           "ne": np.not_equal, "ge": np.greater_equal, "t": CMP_FLOAT["tru"]}
CMP_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i16": np.int16, "u16": np.uint16,
             "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


def _cmp_values(rng, dtype):
    """Random values of a compare's type: floats with zeros, infinities and NaNs; integers over the whole range
    with many small (near-equal) values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return floats(rng, N, dtype, specials=True)
    ub = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    v = rng.integers(0, 1 << 64, N, dtype=np.uint64).astype(ub).view(dtype)
    small = rng.integers(-3, 4, N).astype(np.int64).astype(ub).view(dtype)
    return np.where(rng.integers(0, 4, N) == 0, small, v).astype(dtype)


@pytest.mark.parametrize("kind", sorted(CMP_TYPES))
@pytest.mark.parametrize("cmpx", [False, True], ids=["cmp", "cmpx"])
def test_compares(kind, cmpx):
    """Every compare of a type, as v_cmp_*_e64 into an SGPR pair (and EXEC for v_cmpx_*)."""
    dtype = CMP_TYPES[kind]
    table = CMP_FLOAT if kind[0] == "f" else CMP_INT
    rng = rng_for(f"cmp{kind}")
    a = _cmp_values(rng, dtype)
    b = np.where(rng.integers(0, 4, N) == 0, a, _cmp_values(rng, dtype)).astype(dtype)   # equal pairs too
    pa, pb = bits(a, dtype), bits(b, dtype)
    regs = "v[2:3], v[4:5]" if kind.endswith("64") else "v2, v4"
    prefix = "v_cmpx" if cmpx else "v_cmp"
    for op, model in table.items():
        name = f"{prefix}_{op}_{kind}"
        r = run_valu(f"  {name}_e64 s[20:21], {regs}", pa, pb)
        with np.errstate(invalid="ignore"):
            want = model(a, b)
        assert np.array_equal(r["mask"], want), f"{name}: {np.sum(r['mask'] != want)} lanes differ (seed {SEED})"
        if cmpx:
            assert np.array_equal(r["exec"], want), f"{name}: EXEC differs from the result"
        else:
            assert r["exec"].all(), f"{name} changed EXEC"


def _class_inputs(rng, dtype):
    """Values of every class (signaling and quiet NaNs, +-inf, +-normal, +-denormal, +-0) and random masks."""
    dtype = np.dtype(dtype)
    mant = {2: 10, 4: 23, 8: 52}[dtype.itemsize]
    ub = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    exp_all = ((1 << (dtype.itemsize * 8 - 1 - mant)) - 1) << mant
    tiny = np.finfo(dtype).tiny
    plain = np.array([-np.inf, -1.5, -tiny / 4, -0.0, 0.0, tiny / 4, 3.0, np.inf, -tiny, tiny], dtype)
    pool = np.concatenate([np.array([exp_all | 1, exp_all | (1 << (mant - 1))], ub),   # signaling, quiet NaN
                           plain.view(ub)]).view(dtype)
    v = pool[rng.integers(0, len(pool), N)]
    return v, rng.integers(0, 1 << 10, N).astype(np.uint32)


def _classes(v, dtype) -> np.ndarray:
    """(N, 10) bool: the class bits of AMD's V_CMP_CLASS mask that each value belongs to."""
    dtype = np.dtype(dtype)
    mant = {2: 10, 4: 23, 8: 52}[dtype.itemsize]
    raw = bits(v, dtype)
    quiet = (raw >> np.uint64(mant - 1)) & np.uint64(1) == 1
    nan, neg, a = np.isnan(v), np.signbit(v), np.abs(v)
    normal = np.isfinite(v) & (a >= np.finfo(dtype).tiny)
    sub = (a > 0) & (a < np.finfo(dtype).tiny)
    zero = v == 0
    return np.stack([nan & ~quiet, nan & quiet, np.isinf(v) & neg, normal & neg, sub & neg, zero & neg, zero & ~neg,
                     sub & ~neg, normal & ~neg, np.isinf(v) & ~neg], axis=-1)


@pytest.mark.parametrize("name", ["v_cmp_class_f16", "v_cmp_class_f64", "v_cmpx_class_f32", "v_cmpx_class_f64",
                                  "v_cmpx_class_f16"])
def test_compare_class(name):
    kind = name[-3:]
    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[kind]
    v, mask = _class_inputs(rng_for(name), dtype)
    src = "v[2:3]" if kind == "f64" else "v2"
    r = run_valu(f"  {name}_e64 s[20:21], {src}, v4", bits(v, dtype), mask)
    member = _classes(v, dtype)
    want = (member & ((mask[:, None] >> np.arange(10)) & 1).astype(bool)).any(axis=-1)
    assert np.array_equal(r["mask"], want), f"{name}: {np.sum(r['mask'] != want)} lanes differ (seed {SEED})"
    if "cmpx" in name:
        assert np.array_equal(r["exec"], want)


# ---------------------------------------------------------------------------------------------------------
# SALU: per wave a = s[8:9], b = s[10:11], old destination = s[12:13] (copied to the destination s[24:25]),
# SCC = s14 != 0 and EXEC = s[16:17] before the instruction; out = destination, SCC, EXEC after it.

SALU = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_lshl_b32 s3, s2, 6
  s_waitcnt lgkmcnt(0)
  s_add_u32 s4, s4, s3
  s_addc_u32 s5, s5, 0
  s_load_dwordx16 s[8:23], s[4:5], 0x0
  s_lshl_b32 s3, s2, 5
  s_add_u32 s6, s6, s3
  s_addc_u32 s7, s7, 0
  s_waitcnt lgkmcnt(0)
  s_mov_b64 s[24:25], s[12:13]
  s_mov_b64 s[30:31], exec
  s_mov_b64 exec, s[16:17]
  s_cmp_lg_u32 s14, 0
{op}
  s_cselect_b32 s28, 1, 0
  s_mov_b64 s[26:27], exec
  s_mov_b64 exec, s[30:31]
  v_mov_b32 v1, 0
  v_mov_b32 v2, s24
  v_mov_b32 v3, s25
  v_mov_b32 v4, s28
  v_mov_b32 v5, s26
  v_mov_b32 v6, s27
  v_mov_b32 v7, 0
  global_store_dwordx4 v1, v[2:5], s[6:7]
  global_store_dwordx2 v1, v[6:7], s[6:7] offset:16
"""


def run_salu(op: str, a, b=0, d=0, scc=0, exec_mask=None) -> dict:
    n = SGROUPS
    inputs = np.zeros((n, 16), np.uint32)
    exec_mask = np.full(n, (1 << 64) - 1, np.uint64) if exec_mask is None else exec_mask
    for i, v in enumerate((a, b, d)):
        v = np.broadcast_to(np.asarray(v, np.uint64), (n,))
        inputs[:, 2 * i] = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        inputs[:, 2 * i + 1] = (v >> np.uint64(32)).astype(np.uint32)
    inputs[:, 6] = np.broadcast_to(np.asarray(scc, np.uint32), (n,))
    e = np.broadcast_to(np.asarray(exec_mask, np.uint64), (n,))
    inputs[:, 8] = (e & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    inputs[:, 9] = (e >> np.uint64(32)).astype(np.uint32)
    out = _run(SALU.format(op=op), inputs, 8, n, vgprs=16)
    return {"d32": out[:, 0].astype(np.uint64),
            "d64": out[:, 0].astype(np.uint64) | (out[:, 1].astype(np.uint64) << np.uint64(32)),
            "scc": out[:, 2].astype(bool),
            "exec": out[:, 3].astype(np.uint64) | (out[:, 4].astype(np.uint64) << np.uint64(32))}


def _s64(rng, n=SGROUPS):
    v = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    pick = rng.integers(0, 6, n)
    v = np.where(pick == 0, np.uint64(0), v)
    v = np.where(pick == 1, np.uint64((1 << 64) - 1), v)
    v = np.where(pick == 2, v >> rng.integers(1, 64, n).astype(np.uint64), v)
    return np.where(pick == 3, ~(v >> rng.integers(1, 64, n).astype(np.uint64)), v).astype(np.uint64)


def _ints(x, width, signed=False):
    """uint64 patterns as Python-int-exact int64 values of `width` bits."""
    x = np.asarray(x).astype(np.uint64) & np.uint64((1 << width) - 1)
    if width == 64:
        return x.view(np.int64) if signed else x
    x = x.astype(np.int64)
    return np.where(x >= 1 << (width - 1), x - (1 << width), x) if signed else x


def _lowest(x, width, value):
    """Index of the lowest bit equal to `value`, -1 when none (S_FF0/S_FF1)."""
    out = np.full(np.shape(x), -1, np.int64)
    for i in range(width - 1, -1, -1):
        out = np.where(((np.asarray(x, np.uint64) >> np.uint64(i)) & np.uint64(1)) == value, i, out)
    return out


def _leading_zeros(x, width):
    out = np.full(np.shape(x), -1, np.int64)
    for i in range(width):                      # last assignment wins: the highest set bit
        out = np.where(((np.asarray(x, np.uint64) >> np.uint64(i)) & np.uint64(1)) == 1, width - 1 - i, out)
    return out


def _brev(x, width):
    x = np.asarray(x, np.uint64)
    out = np.zeros(x.shape, np.uint64)
    for i in range(width):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(width - 1 - i)
    return out


def _popcount(x, width):
    x = np.asarray(x, np.uint64)
    return sum(((x >> np.uint64(i)) & np.uint64(1)).astype(np.int64) for i in range(width))


def _nibbles(x, count):
    return [(np.asarray(x, np.uint64) >> np.uint64(4 * i)) & np.uint64(0xF) for i in range(count)]


M32, M64 = np.uint64(0xFFFFFFFF), np.uint64((1 << 64) - 1)

# name: (operands, result width, writes SCC as result != 0, model(a, b, d, scc) -> destination)
SALU_CASES = {
    "s_cmov_b32": ("s24, s8", 32, False, lambda a, b, d, c: np.where(c, a, d)),
    "s_cmov_b64": ("s[24:25], s[8:9]", 64, False, lambda a, b, d, c: np.where(c, a, d)),
    "s_brev_b64": ("s[24:25], s[8:9]", 64, False, lambda a, b, d, c: _brev(a, 64)),
    "s_bcnt0_i32_b32": ("s24, s8", 32, True, lambda a, b, d, c: 32 - _popcount(a & M32, 32)),
    "s_bcnt0_i32_b64": ("s24, s[8:9]", 32, True, lambda a, b, d, c: 64 - _popcount(a, 64)),
    "s_ff0_i32_b32": ("s24, s8", 32, False, lambda a, b, d, c: _lowest(a & M32, 32, 0)),
    "s_ff0_i32_b64": ("s24, s[8:9]", 32, False, lambda a, b, d, c: _lowest(a, 64, 0)),
    "s_ff1_i32_b64": ("s24, s[8:9]", 32, False, lambda a, b, d, c: _lowest(a, 64, 1)),
    "s_flbit_i32_b64": ("s24, s[8:9]", 32, False, lambda a, b, d, c: _leading_zeros(a, 64)),
    "s_flbit_i32": ("s24, s8", 32, False, lambda a, b, d, c: _ffbh_i(_ints(a, 32))),
    "s_flbit_i32_i64": ("s24, s[8:9]", 32, False, lambda a, b, d, c: np.where(
        (a == 0) | (a == M64), -1,
        np.where(_ints(a, 64, True) < 0, _leading_zeros(~a & M64, 64), _leading_zeros(a, 64)))),
    "s_sext_i32_i8": ("s24, s8", 32, False, lambda a, b, d, c: _ints(a, 8, True)),
    "s_bitset0_b32": ("s24, s8", 32, False, lambda a, b, d, c: d & ~(np.uint64(1) << (a & np.uint64(31)))),
    "s_bitset1_b32": ("s24, s8", 32, False, lambda a, b, d, c: d | (np.uint64(1) << (a & np.uint64(31)))),
    "s_bitset0_b64": ("s[24:25], s8", 64, False, lambda a, b, d, c: d & ~(np.uint64(1) << (a & np.uint64(63)))),
    "s_bitset1_b64": ("s[24:25], s8", 64, False, lambda a, b, d, c: d | (np.uint64(1) << (a & np.uint64(63)))),
    "s_quadmask_b32": ("s24, s8", 32, True, lambda a, b, d, c: sum(
        (n != 0).astype(np.uint64) << np.uint64(i) for i, n in enumerate(_nibbles(a & M32, 8)))),
    "s_quadmask_b64": ("s[24:25], s[8:9]", 64, True, lambda a, b, d, c: sum(
        (n != 0).astype(np.uint64) << np.uint64(i) for i, n in enumerate(_nibbles(a, 16)))),
    "s_wqm_b32": ("s24, s8", 32, True, lambda a, b, d, c: sum(
        np.where(n != 0, np.uint64(0xF), np.uint64(0)) << np.uint64(4 * i)
        for i, n in enumerate(_nibbles(a & M32, 8)))),
    "s_wqm_b64": ("s[24:25], s[8:9]", 64, True, lambda a, b, d, c: sum(
        np.where(n != 0, np.uint64(0xF), np.uint64(0)) << np.uint64(4 * i) for i, n in enumerate(_nibbles(a, 16)))),
    "s_bitreplicate_b64_b32": ("s[24:25], s8", 64, False, lambda a, b, d, c: sum(
        (((a >> np.uint64(i)) & np.uint64(1)) * np.uint64(3)) << np.uint64(2 * i) for i in range(32))),
    "s_bfm_b32": ("s24, s8, s10", 32, False, lambda a, b, d, c: (
        ((np.uint64(1) << (a & np.uint64(31))) - np.uint64(1)) << (b & np.uint64(31))) & M32),
    "s_bfm_b64": ("s[24:25], s8, s10", 64, False, lambda a, b, d, c: (
        ((np.uint64(1) << (a & np.uint64(63))) - np.uint64(1)) << (b & np.uint64(63)))),
    "s_nand_b32": ("s24, s8, s10", 32, True, lambda a, b, d, c: ~(a & b) & M32),
    "s_nor_b32": ("s24, s8, s10", 32, True, lambda a, b, d, c: ~(a | b) & M32),
    "s_xnor_b32": ("s24, s8, s10", 32, True, lambda a, b, d, c: ~(a ^ b) & M32),
    "s_nand_b64": ("s[24:25], s[8:9], s[10:11]", 64, True, lambda a, b, d, c: ~(a & b)),
    "s_nor_b64": ("s[24:25], s[8:9], s[10:11]", 64, True, lambda a, b, d, c: ~(a | b)),
    "s_xnor_b64": ("s[24:25], s[8:9], s[10:11]", 64, True, lambda a, b, d, c: ~(a ^ b)),
    "s_absdiff_i32": ("s24, s8, s10", 32, True, lambda a, b, d, c: np.abs(_ints(a, 32, True) - _ints(b, 32, True))),
    "s_pack_ll_b32_b16": ("s24, s8, s10", 32, False, lambda a, b, d, c: (a & np.uint64(0xFFFF))
                          | ((b & np.uint64(0xFFFF)) << np.uint64(16))),
    "s_pack_lh_b32_b16": ("s24, s8, s10", 32, False, lambda a, b, d, c: (a & np.uint64(0xFFFF))
                          | (b & np.uint64(0xFFFF0000))),
    "s_pack_hh_b32_b16": ("s24, s8, s10", 32, False, lambda a, b, d, c: ((a >> np.uint64(16)) & np.uint64(0xFFFF))
                          | (b & np.uint64(0xFFFF0000))),
}


@pytest.mark.parametrize("name", sorted(SALU_CASES))
def test_salu(name):
    ops, width, scc_is_nonzero, model = SALU_CASES[name]
    rng = rng_for(name)
    a, b, d = _s64(rng), _s64(rng), _s64(rng)
    if re.search(r"bfm|bitset", name):
        a = a & np.uint64(0x3F)
        b = b & np.uint64(0x3F)
    scc = rng.integers(0, 2, SGROUPS).astype(np.uint32)
    r = run_salu(f"  {name} {ops}", a, b, d, scc)
    want = np.asarray(model(a, b, d, scc.astype(bool)))
    got = r["d64"] if width == 64 else r["d32"]
    same_int(got, want, width=width)
    if width == 32:
        same_int(r["d64"] >> np.uint64(32), d >> np.uint64(32))            # the upper SGPR is not written
    wmask = np.uint64((1 << width) - 1)
    if scc_is_nonzero:
        assert np.array_equal(r["scc"], (want.astype(np.uint64) & wmask) != 0), f"{name}: SCC"
    else:
        assert np.array_equal(r["scc"], scc.astype(bool)), f"{name}: SCC changed"


def test_cmovk_and_bitcmp64():
    rng = rng_for("cmovk")
    d = _s64(rng)
    scc = rng.integers(0, 2, SGROUPS).astype(np.uint32)
    r = run_salu("  s_cmovk_i32 s24, 0x8123", 0, 0, d, scc)
    same_int(r["d32"], np.where(scc != 0, -0x7EDD, _ints(d, 32, True)))       # 0x8123 sign-extended
    a, b = _s64(rng), rng.integers(0, 64, SGROUPS).astype(np.uint64)
    for op, want_bit in (("s_bitcmp0_b64", 0), ("s_bitcmp1_b64", 1)):
        r = run_salu(f"  {op} s[8:9], s10", a, b)
        assert np.array_equal(r["scc"], ((a >> b) & np.uint64(1)) == want_bit), op


EXEC_OPS = {
    # name: new EXEC from (source, old EXEC); saveexec forms return the old EXEC, wrexec forms the new one
    "s_orn2_saveexec_b64": lambda s, e: s | ~e, "s_orn1_saveexec_b64": lambda s, e: ~s | e,
    "s_andn1_saveexec_b64": lambda s, e: ~s & e, "s_nand_saveexec_b64": lambda s, e: ~(s & e),
    "s_nor_saveexec_b64": lambda s, e: ~(s | e), "s_xnor_saveexec_b64": lambda s, e: ~(s ^ e),
    "s_andn1_wrexec_b64": lambda s, e: ~s & e, "s_andn2_wrexec_b64": lambda s, e: s & ~e,
}


@pytest.mark.parametrize("name", sorted(EXEC_OPS))
def test_exec_manipulation(name):
    rng = rng_for(name)
    s, e = _s64(rng), _s64(rng)
    r = run_salu(f"  {name} s[24:25], s[8:9]", s, 0, 0, 0, exec_mask=e)
    new = EXEC_OPS[name](s, e) & M64
    same_int(r["exec"], new, width=64)
    same_int(r["d64"], new if "wrexec" in name else e, width=64)
    assert np.array_equal(r["scc"], new != 0), f"{name}: SCC"
