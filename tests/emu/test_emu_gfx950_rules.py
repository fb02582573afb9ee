"""gfx950 emulator rules that come from the CDNA 4 ISA guide (chapter 7) rather than from a compiler's output,
each run on code LLVM 22 built for gfx950 (llvmlite's AMDGPU backend, inline assembly through llvm-mc-22) and
compared with numpy in float64:

- v_mfma_ld_scale_b32 on its own: the scales it loads "do not carry forward into non-scale MFMA ops" and an
  f8f6f4 MFMA with ABID[0] = 0 runs with scale 1.0 (guide 7.2.1 and 7.1.5), so the lone load-scale changes
  nothing; a scale that is an inline constant is its float exponent (7.2.1).
- Instructions whose rounding rule no authority states (v_prng_b32, v_cvt_sr_f16_f32, the fp8/bf8 and scaled
  stochastic-rounding conversions) are refused with "unsupported: <why>" naming instruction and PC.
- fp6 (e2m3) / bf6 (e3m2) block-scaled MFMAs: lane l holds 32 consecutive K of row l % M from K = 32 (l // M)
  (guide 7.1.5.1, "Dense Matrix Layouts: 8-bit and Smaller", FP6 tables: v0-v2 k = 0-15, v3-v5 k = 16-31 for
  lanes 0-15), which decides which elements a block scale multiplies.

Tolerance: the products of these narrow formats and their sums over K <= 128 are exact in float64, so results
must equal the float64 reference rounded once to f32.
"""

from __future__ import annotations

import subprocess

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.llvm_objects import gfx950_object, lane_kernel
from tests.fixtures.oracles import require_module, require_tool

require_module("llvmlite")

E4M3 = ml_dtypes.float8_e4m3fn


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Element j of each row at bits [bits*j, bits*j + bits) of the row's dwords (guide 7.1.4: packed items)."""
    out = np.zeros((codes.shape[0], codes.shape[1] * bits // 32), np.uint32)
    for j in range(codes.shape[1]):
        bit = j * bits
        word, shift = divmod(bit, 32)
        c = codes[:, j].astype(np.uint64) << np.uint64(shift)
        out[:, word] |= (c & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        if shift + bits > 32:
            out[:, word + 1] |= (c >> np.uint64(32)).astype(np.uint32)
    return out


def _finite_fp8(rng, shape) -> np.ndarray:
    return (rng.standard_normal(shape) * 4).astype(E4M3)


def _mfma_16x16x128(a_vals: np.ndarray, b_vals: np.ndarray, k_of, a_scale=None, b_scale=None) -> np.ndarray:
    """numpy of a 16x16x128 MFMA from per-lane element values (64, 32) and the lane -> K map `k_of(lane)`;
    scales (64,) float64: lane 16 * block + row holds row's scale for K block `block` (guide 7.2.1 layout).
    Returns D (64 lanes, 4 registers): lane l column l % 16, rows 4 * (l // 16) + r."""
    A, B = np.zeros((16, 128)), np.zeros((128, 16))
    for ln in range(64):
        A[ln % 16, k_of(ln)] = a_vals[ln]
        B[k_of(ln), ln % 16] = b_vals[ln]
    rows, ks = np.arange(16)[:, None], np.arange(128)[None, :]
    if a_scale is not None:
        A = A * a_scale[16 * (ks // 32) + rows]
        B = B * b_scale[16 * (ks // 32) + rows].T
    ref = A @ B
    return np.array([[ref[4 * (ln // 16) + r, ln % 16] for r in range(4)] for ln in range(64)])


def _fp8_k(ln: int) -> np.ndarray:
    """Guide 7.1.5.1, FP8 16x16x128: v0-v3 hold k = 16g..16g+15, v4-v7 k = 64 + 16g.., g = lane // 16."""
    g, j = ln // 16, np.arange(32)
    return np.where(j < 16, 16 * g + j, 64 + 16 * g + j - 16)


LONE_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
"""
LONE_IR += lane_kernel("lone", [("a", "<8 x i32>"), ("b", "<8 x i32>"), ("s", "i32")], """
  ; a load-scale half and then the unscaled MFMA (ABID 0): two instructions, as llvm-objdump-22 lists them
  %r = call <4 x float> asm sideeffect "@ASM@", "@CONSTRAINTS@"(i32 %vs, <8 x i32> %va, <8 x i32> %vb)
""", [("d", "<4 x float>", "%r")], outputs=("d",))
LONE_ASM = r"v_mfma_ld_scale_b32 $1, $1 op_sel:[1,0] op_sel_hi:[0,1]\0Av_mfma_f32_16x16x128_f8f6f4 $0, $2, $3, 0"


def test_a_lone_load_scale_leaves_the_next_mfma_unscaled():
    from jitgemm.emu import emulate

    co = gfx950_object(LONE_IR.replace("@ASM@", LONE_ASM).replace("@CONSTRAINTS@", "=&v,v,v,v"), through_mc=True)
    rng = np.random.default_rng(41)
    a_vals, b_vals = _finite_fp8(rng, (64, 32)), _finite_fp8(rng, (64, 32))
    scales = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)   # random bytes: not 127 (= 1.0)
    d = np.full((64, 4), np.nan, np.float32)
    emulate(co, "lone", grid=1, block=64, args=[_pack(a_vals.view(np.uint8), 8), _pack(b_vals.view(np.uint8), 8),
                                                  scales, d])
    want = _mfma_16x16x128(a_vals.astype(np.float64), b_vals.astype(np.float64), _fp8_k)
    np.testing.assert_array_equal(d, want.astype(np.float32))


def _scale_words(src0: str, src1: str) -> tuple[int, int, int, int]:
    """The four dwords llvm-mc-22 gives v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3],
    v20, v21, with SCALE_SRC0 / SCALE_SRC1 (bits 40:32 and 49:41, ENC_VOP3PX2) replaced by inline constants
    (operand codes 240 = 0.5 ... 247 = -4.0, AMDGPUUsage/ISA guide "inline constants"), which LLVM 22 refuses to
    assemble there."""
    mc = require_tool("llvm-mc-22")
    out = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-show-encoding"],
                         input="v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21\n",
                         capture_output=True, text=True, check=True).stdout
    raw = bytes(int(x, 16) for x in out.split("encoding: [")[1].split("]")[0].split(","))
    words = list(np.frombuffer(raw, "<u4").astype(int))
    assert words[1] & 0x3FFFF == 276 | 277 << 9            # v20, v21 where the field layout says
    code = {"0.5": 240, "1.0": 242, "2.0": 244, "4.0": 246}
    words[1] = (words[1] & ~0x3FFFF) | code[src0] | code[src1] << 9
    return tuple(words)


@pytest.mark.parametrize("src0, src1", [("4.0", "0.5"), ("2.0", "1.0")])
def test_an_inline_constant_scale_is_its_float_exponent(src0, src1):
    from jitgemm import isa
    from jitgemm.emu import emulate
    from jitgemm.emu.program import decode_kernel

    words = _scale_words(src0, src1)
    text = decode_kernel(np.array(words, "<u4").tobytes(), isa.load_spec("gfx950"))[0].text
    assert f", {src0}, {src1}" in text, text
    longs = "\\0A".join(f".long 0x{w:08x}" for w in words)
    ir = LONE_IR.replace("@ASM@", longs).replace("@CONSTRAINTS@", "={v[0:3]},{v20},{v[4:11]},{v[12:19]}")
    co = gfx950_object(ir, through_mc=True)
    rng = np.random.default_rng(43)
    a_vals, b_vals = _finite_fp8(rng, (64, 32)), _finite_fp8(rng, (64, 32))
    d = np.full((64, 4), np.nan, np.float32)
    emulate(co, "lone", grid=1, block=64, args=[_pack(a_vals.view(np.uint8), 8), _pack(b_vals.view(np.uint8), 8),
                                                  np.zeros(64, np.uint32), d])
    value = {"0.5": 0.5, "1.0": 1.0, "2.0": 2.0, "4.0": 4.0}
    want = _mfma_16x16x128(a_vals.astype(np.float64), b_vals.astype(np.float64), _fp8_k,
                           np.full(64, value[src0]), np.full(64, value[src1]))
    np.testing.assert_array_equal(d, want.astype(np.float32))


REFUSED_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.prng.b32(i32)
declare <2 x half> @llvm.amdgcn.cvt.sr.f16.f32(<2 x half>, float, i32, i1 immarg)
declare i32 @llvm.amdgcn.cvt.sr.fp8.f32(float, i32, i32, i32 immarg)
declare i32 @llvm.amdgcn.cvt.scalef32.sr.fp8.f32(i32, float, i32, float, i32 immarg)
"""
_F = "%f = bitcast i32 %vx to float\n"
REFUSED_IR += "".join(lane_kernel(name, [("x", "i32")], body, [("x", "i32", value)]) for name, body, value in (
    ("prng", "%r = call i32 @llvm.amdgcn.prng.b32(i32 %vx)", "%r"),
    ("sr16", _F + "%r = call <2 x half> @llvm.amdgcn.cvt.sr.f16.f32(<2 x half> zeroinitializer, float %f, i32 %vx, "
     "i1 false)\n%ri = bitcast <2 x half> %r to i32", "%ri"),
    ("sr8", _F + "%r = call i32 @llvm.amdgcn.cvt.sr.fp8.f32(float %f, i32 %vx, i32 %vx, i32 1)", "%r"),
    ("scaled_sr8", _F + "%r = call i32 @llvm.amdgcn.cvt.scalef32.sr.fp8.f32(i32 %vx, float %f, i32 %vx, float %f, "
     "i32 2)", "%r")))


@pytest.mark.parametrize("kernel, mnemonic", [("prng", "v_prng_b32"), ("sr16", "v_cvt_sr_f16_f32"),
                                              ("sr8", "v_cvt_sr_fp8_f32"),
                                              ("scaled_sr8", "v_cvt_scalef32_sr_fp8_f32")])
def test_rules_no_authority_states_are_refused_by_name_and_pc(kernel, mnemonic):
    """The honest answer where neither AMD's XML, the CDNA 4 ISA guide nor LLVM states the rounding bits: the
    emulator refuses the instruction LLVM selected, naming it, its PC and why, before any wave runs it
    (`check`) and when one does (`emulate`); nothing is written."""
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import EmulatorError, check, emulate

    asm = run_backend(REFUSED_IR, cpu="gfx950", output="assembly").data
    body = asm[asm.index(f"{kernel}:"):]
    assert mnemonic in body[:body.index("s_endpgm")]
    co = gfx950_object(REFUSED_IR)
    bad = check(co, kernel)[kernel]
    assert [op.name.lower() for op in bad] == [mnemonic], bad
    assert bad[0].problem.startswith("unsupported: ")
    x = np.random.default_rng(5).integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    before = x.copy()
    with pytest.raises(EmulatorError, match=rf"{mnemonic.upper()}|{mnemonic}") as err:
        emulate(co, kernel, grid=1, block=64, args=[x])
    assert f"PC 0x{bad[0].pc:x}" in str(err.value) and "unsupported: " in str(err.value)
    np.testing.assert_array_equal(x, before)


def _narrow_k(m: int):
    """Guide 7.1.5.1, FP6 and FP4 tables: lane l holds K = 32 (l // M) .. 32 (l // M) + 31 of row (column) l % M
    (16x16x128 FP6: v0-v2 k = 0-15 and v3-v5 k = 16-31 for lanes 0-15, k = 32-63 for lanes 16-31, ...;
    32x32x64: lanes 0-31 k = 0-31, lanes 32-63 k = 32-63)."""
    def k_of(ln: int) -> np.ndarray:
        return 32 * (ln // m) + np.arange(32)
    return k_of


SIX_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v6i32.v6i32(<6 x i32>, <6 x i32>, <4 x float>,
    i32, i32, i32, i32, i32, i32)
declare <16 x float> @llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v6i32.v4i32(<6 x i32>, <4 x i32>, <16 x float>,
    i32, i32, i32, i32, i32, i32)
"""
_SCALES = """
  %sa = extractelement <2 x i32> %vs, i32 0
  %sb = extractelement <2 x i32> %vs, i32 1
"""
SIX_IR += lane_kernel("six", [("a", "<6 x i32>"), ("b", "<6 x i32>"), ("s", "<2 x i32>")], _SCALES + """
  ; A fp6 e2m3 (cbsz 2), B bf6 e3m2 (blgp 3); A's scale byte 1 of %sa, B's byte 3 of %sb
  %r = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v6i32.v6i32(<6 x i32> %va, <6 x i32> %vb,
      <4 x float> zeroinitializer, i32 2, i32 3, i32 1, i32 %sa, i32 3, i32 %sb)
""", [("d", "<4 x float>", "%r")], outputs=("d",))
SIX_IR += lane_kernel("six32", [("a", "<6 x i32>"), ("b", "<4 x i32>"), ("s", "<2 x i32>")], _SCALES + """
  ; A bf6 e3m2 (cbsz 3), B fp4 e2m1 (blgp 4); scale bytes 0 and 2
  %r = call <16 x float> @llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v6i32.v4i32(<6 x i32> %va, <4 x i32> %vb,
      <16 x float> zeroinitializer, i32 3, i32 4, i32 0, i32 %sa, i32 2, i32 %sb)
""", [("d", "<16 x float>", "%r")], outputs=("d",))


def test_fp6_bf6_scaled_mfma_lanes_hold_32_consecutive_k():
    """fp6 x bf6 (16x16x128) and bf6 x fp4 (32x32x64) block-scaled MFMAs from LLVM 22's
    llvm.amdgcn.mfma.scale.f32.*.f8f6f4 with 6-register operands: every lane's K block gets its own random
    scale, so a wrong K order for the 6-bit elements (e.g. fp8's two halves of 16) multiplies elements by the
    wrong block's scale and fails. numpy: the guide's FP6/FP4 tables (`_narrow_k`), scales as guide 7.2.1."""
    from jitgemm.emu import emulate

    co = gfx950_object(SIX_IR)
    rng = np.random.default_rng(47)
    fp6, bf6, fp4 = ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn, ml_dtypes.float4_e2m1fn
    for kernel, m, (ta, tb) in (("six", 16, (fp6, bf6)), ("six32", 32, (bf6, fp4))):
        a_vals = rng.standard_normal((64, 32)).astype(ta)
        b_vals = rng.standard_normal((64, 32)).astype(tb)
        bits_a, bits_b = (6, 6) if kernel == "six" else (6, 4)
        # a <6 x i32> is 32 bytes apart in memory (LLVM's vector alloc size): two dwords of padding per lane
        a_regs = np.zeros((64, 8), np.uint32)
        a_regs[:, :6] = _pack(a_vals.view(np.uint8) & ((1 << bits_a) - 1), bits_a)
        b_regs = np.zeros((64, 8 if bits_b == 6 else 4), np.uint32)
        b_regs[:, :32 * bits_b // 32] = _pack(b_vals.view(np.uint8) & ((1 << bits_b) - 1), bits_b)
        sel_a, sel_b = (1, 3) if kernel == "six" else (0, 2)
        words = rng.integers(0, 1 << 32, (64, 2), dtype=np.uint64).astype(np.uint32)
        ea, eb = rng.integers(120, 134, 64), rng.integers(120, 134, 64)   # E8M0 bytes: 2^-7 .. 2^6
        for col, sel, e in ((0, sel_a, ea), (1, sel_b, eb)):
            words[:, col] = (words[:, col] & ~np.uint32(0xFF << 8 * sel)) | (e.astype(np.uint32) << 8 * sel)
        regs = m * m // 64
        d = np.full((64, regs), np.nan, np.float32)
        emulate(co, kernel, grid=1, block=64, args=[a_regs, b_regs, words, d])
        k = 128 if m == 16 else 64
        A, B = np.zeros((m, k)), np.zeros((k, m))
        for ln in range(64):
            A[ln % m, _narrow_k(m)(ln)] = a_vals[ln].astype(np.float64)
            B[_narrow_k(m)(ln), ln % m] = b_vals[ln].astype(np.float64)
        rows, ks = np.arange(m)[:, None], np.arange(k)[None, :]
        A *= np.ldexp(1.0, ea[m * (ks // 32) + rows] - 127)           # lane m * block + row holds the scale
        B *= np.ldexp(1.0, eb[m * (ks // 32) + rows] - 127).T
        ref = A @ B
        groups = 64 // m
        # C/D (guide 7.1.4.2): lane l column l % M; register r row (r // 4) * 4 * groups + 4 (l // M) + r % 4
        want = np.array([[ref[(r // 4) * 4 * groups + 4 * (ln // m) + r % 4, ln % m] for r in range(regs)]
                         for ln in range(64)])
        np.testing.assert_array_equal(d, want.astype(np.float32), err_msg=kernel)
