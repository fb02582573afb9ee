"""LLVM IR built for gfx950 (llvmlite's binding, LLVM 22's AMDGPU backend), run in the emulator, equal numpy.

A second producer beside Triton (tests/emu/test_emu_gfx950_kernels.py): the IR calls the intrinsics directly, so the
scale byte selection (`OpSelA`/`OpSelB` -> op_sel/op_sel_hi), the format codes (cbsz/blgp) with a 4-register
fp4 B operand, and a register scale byte 0 (2^-127, not "no scale") reach the emulator as LLVM encodes them.
The numpy reference states the CDNA 4 matrix-core layout itself: lane l holds row (column) l % 16, K block
l // 16; fp8 lanes hold K in two halves of 16 (k = 16g + j, 64 + 16g + j - 16), fp4 lanes 32 consecutive.
Tolerance: float64 reference rounded once to f32 (products and 128-term sums of fp8 x fp4 times powers of two
are exact in float64), so the results must be equal after that rounding.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.llvm_objects import gfx950_object, lane_kernel
from tests.fixtures.oracles import require_module

require_module("llvmlite")

IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v4i32(<8 x i32>, <4 x i32>, <4 x float>,
    i32, i32, i32, i32, i32, i32)
declare {i32, i32} @llvm.amdgcn.permlane32.swap(i32, i32, i1, i1)
declare {i32, i32} @llvm.amdgcn.permlane16.swap(i32, i32, i1, i1)
declare i32 @llvm.amdgcn.workitem.id.x()

"""
_MFMA = "call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v4i32(<8 x i32> %va, <4 x i32> %vb,"
_AB_C = [("a", "<8 x i32>"), ("b", "<4 x i32>"), ("c", "<4 x float>")]
_SWAP = """
  %r = call {{i32, i32}} @llvm.amdgcn.permlane{n}.swap(i32 %vx, i32 %vy, i1 false, i1 false)
  %r0 = extractvalue {{i32, i32}} %r, 0
  %r1 = extractvalue {{i32, i32}} %r, 1
"""
IR += "\n".join([
    lane_kernel("scaled", _AB_C + [("s", "<2 x i32>")], f"""
  %sa = extractelement <2 x i32> %vs, i32 0
  %sb = extractelement <2 x i32> %vs, i32 1
  ; A fp8 e4m3 (cbsz 0), B fp4 e2m1 (blgp 4); A's scale is byte 2 of %sa, B's byte 1 of %sb
  %r = {_MFMA}
      <4 x float> %vc, i32 0, i32 4, i32 2, i32 %sa, i32 1, i32 %sb)
""", [("d", "<4 x float>", "%r")], outputs=("d",)),
    lane_kernel("zero_scales", _AB_C, f"""
  ; constant 0 scales: LLVM folds the call into the unscaled v_mfma_f32_16x16x128_f8f6f4
  %r = {_MFMA}
      <4 x float> %vc, i32 0, i32 4, i32 0, i32 0, i32 0, i32 0)
""", [("d", "<4 x float>", "%r")], outputs=("d",)),
    *(lane_kernel(name, [("x", "i32"), ("y", "i32")], _SWAP.format(n=n), [("x", "i32", "%r0"), ("y", "i32", "%r1")])
      for name, n in (("swap", 32), ("swap16", 16)))])


@pytest.fixture(scope="module")
def code_object():
    from jitgemm.codegen.llvm.backend import run_backend

    asm = run_backend(IR, cpu="gfx950", output="assembly").data
    assert "v_mfma_scale_f32_16x16x128_f8f6f4" in asm and "v_permlane32_swap_b32" in asm
    return gfx950_object(IR)


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros((codes.shape[0], codes.shape[1] * bits // 32), np.uint32)
    for j in range(codes.shape[1]):
        bit = j * bits
        out[:, bit // 32] |= codes[:, j].astype(np.uint32) << np.uint32(bit % 32)
    return out


@pytest.mark.parametrize("scale_bytes", ["random", "extremes"])
def test_scaled_mfma_intrinsic(code_object, scale_bytes):
    from jitgemm.emu import emulate

    rng = np.random.default_rng(7)
    a_vals = rng.standard_normal((64, 32)).astype(ml_dtypes.float8_e4m3fn)
    b_vals = rng.standard_normal((64, 32)).astype(ml_dtypes.float4_e2m1fn)
    a_regs = _pack(a_vals.view(np.uint8), 8)                         # (64 lanes, 8)
    b_regs = _pack(b_vals.view(np.uint8) & 0xF, 4)                   # (64 lanes, 4)
    scales = rng.integers(0, 1 << 32, (64, 2), dtype=np.uint64).astype(np.uint32)
    sa_byte = rng.integers(118, 136, 64).astype(np.uint8)
    sb_byte = rng.integers(118, 136, 64).astype(np.uint8)
    if scale_bytes == "extremes":
        sa_byte[3], sb_byte[7] = 0, 0            # E8M0 0 in a register: 2^-127 (LLVM folds only constant 0s)
    scales[:, 0] = (scales[:, 0] & ~np.uint32(0xFF << 16)) | (sa_byte.astype(np.uint32) << 16)
    scales[:, 1] = (scales[:, 1] & ~np.uint32(0xFF << 8)) | (sb_byte.astype(np.uint32) << 8)
    c = rng.standard_normal((64, 4)).astype(np.float32)
    d = np.full((64, 4), np.nan, np.float32)
    emulate(code_object, "scaled", grid=1, block=64, args=[a_regs, b_regs, c, scales, d])

    lane = np.arange(64)
    A, B = np.zeros((16, 128)), np.zeros((128, 16))
    for ln in lane:
        g, j = ln // 16, np.arange(32)
        ka = np.where(j < 16, 16 * g + j, 64 + 16 * g + j - 16)      # fp8: two halves of K
        kb = 32 * g + j                                              # fp4: 32 consecutive
        A[ln % 16, ka] = a_vals[ln].astype(np.float64)
        B[kb, ln % 16] = b_vals[ln].astype(np.float64)
    # the scale in lane (16 * block + row) is that row's (column's) scale for K block `block` (32 elements)
    row_k = np.arange(16)[:, None], np.arange(128)[None, :]
    A *= np.ldexp(1.0, sa_byte[16 * (row_k[1] // 32) + row_k[0]].astype(np.int64) - 127)
    B *= np.ldexp(1.0, sb_byte[16 * (row_k[1] // 32) + row_k[0]].astype(np.int64) - 127).T
    ref = A @ B
    # C/D: lane l holds column l % 16, rows 4 * (l // 16) + r
    want = np.array([[ref[4 * (ln // 16) + r, ln % 16] + c[ln, r] for r in range(4)] for ln in lane])
    np.testing.assert_array_equal(d, want.astype(np.float32))


def test_constant_zero_scales_fold_to_the_unscaled_mfma(code_object):
    """The trap: LLVM folds two constant-0 scale operands into the unscaled MFMA (scale 1), while an E8M0 byte 0
    in a register means 2^-127 (test_scaled_mfma_intrinsic[extremes]). Both are what the emulator runs."""
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(IR, cpu="gfx950", output="assembly").data
    body = asm[asm.index("zero_scales:"):asm.index(".Lfunc_end1")]
    assert "v_mfma_f32_16x16x128_f8f6f4" in body and "v_mfma_scale" not in body
    rng = np.random.default_rng(12)
    a_vals = rng.standard_normal((64, 32)).astype(ml_dtypes.float8_e4m3fn)
    b_vals = rng.standard_normal((64, 32)).astype(ml_dtypes.float4_e2m1fn)
    c = rng.standard_normal((64, 4)).astype(np.float32)
    d = np.full((64, 4), np.nan, np.float32)
    emulate(code_object, "zero_scales", grid=1, block=64,
            args=[_pack(a_vals.view(np.uint8), 8), _pack(b_vals.view(np.uint8) & 0xF, 4), c, d])
    A, B = np.zeros((16, 128)), np.zeros((128, 16))
    for ln in range(64):
        g, j = ln // 16, np.arange(32)
        A[ln % 16, np.where(j < 16, 16 * g + j, 64 + 16 * g + j - 16)] = a_vals[ln].astype(np.float64)
        B[32 * g + j, ln % 16] = b_vals[ln].astype(np.float64)
    ref = A @ B
    want = np.array([[ref[4 * (ln // 16) + r, ln % 16] + c[ln, r] for r in range(4)] for ln in range(64)])
    np.testing.assert_array_equal(d, want.astype(np.float32))


def test_permlane32_swap_intrinsic(code_object):
    from jitgemm.emu import emulate

    rng = np.random.default_rng(8)
    x = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    x2, y2 = x.copy(), y.copy()
    emulate(code_object, "swap", grid=1, block=64, args=[x2, y2])
    # LLVM IntrinsicsAMDGPU.td, permlane32.swap: "rows 2 and 3 of the first operand are swapped with rows 0 and 1
    # of the second operand (one row is 16 lanes)"
    np.testing.assert_array_equal(x2, np.concatenate([x[:32], y[:32]]))
    np.testing.assert_array_equal(y2, np.concatenate([x[32:], y[32:]]))
    # permlane16.swap: "odd rows of the first operand are swapped with even rows of the second operand"
    x3, y3 = x.copy(), y.copy()
    emulate(code_object, "swap16", grid=1, block=64, args=[x3, y3])
    rx, ry = x.reshape(4, 16), y.reshape(4, 16)
    np.testing.assert_array_equal(x3.reshape(4, 16), np.stack([rx[0], ry[0], rx[2], ry[2]]))
    np.testing.assert_array_equal(y3.reshape(4, 16), np.stack([rx[1], ry[1], rx[3], ry[3]]))


CVT_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp4(i32, float, i32 immarg)
declare <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32, float, i1 immarg)
declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @cvt(ptr addrspace(1) %x, ptr addrspace(1) %s, ptr addrspace(1) %o4,
                               ptr addrspace(1) %o8) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr i32, ptr addrspace(1) %x, i32 %l
  %vx = load i32, ptr addrspace(1) %px
  %ps = getelementptr float, ptr addrspace(1) %s, i32 %l
  %vs = load float, ptr addrspace(1) %ps
  ; fp4 pair of byte 3, fp8 pair of the high word, each times the lane's scale
  %r4 = call <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp4(i32 %vx, float %vs, i32 3)
  %r8 = call <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32 %vx, float %vs, i1 true)
  %p4 = getelementptr <2 x float>, ptr addrspace(1) %o4, i32 %l
  store <2 x float> %r4, ptr addrspace(1) %p4
  %p8 = getelementptr <2 x float>, ptr addrspace(1) %o8, i32 %l
  store <2 x float> %r8, ptr addrspace(1) %p8
  ret void
}
"""


def test_cvt_scalef32_intrinsics():
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(CVT_IR, cpu="gfx950", output="assembly").data
    assert "v_cvt_scalef32_pk_f32_fp4" in asm and "v_cvt_scalef32_pk_f32_fp8" in asm
    co = link(run_backend(CVT_IR, cpu="gfx950").data)
    rng = np.random.default_rng(9)
    x = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    scale = np.ldexp(1.0, rng.integers(-20, 20, 64)).astype(np.float32)
    o4, o8 = np.full((64, 2), np.nan, np.float32), np.full((64, 2), np.nan, np.float32)
    emulate(co, "cvt", grid=1, block=64, args=[x, scale, o4, o8])
    byte3 = (x >> 24).astype(np.uint8)
    fp4 = np.stack([byte3 & 0xF, byte3 >> 4], axis=1).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    hi = (x >> 16).astype(np.uint16)
    fp8 = np.stack([hi & 0xFF, hi >> 8], axis=1).astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    s64 = scale.astype(np.float64)[:, None]
    np.testing.assert_array_equal(o4, (fp4 * s64).astype(np.float32))
    np.testing.assert_array_equal(o8, (fp8 * s64).astype(np.float32))   # NaN codes stay NaN


ALU_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.minimum.f32(float, float)
declare float @llvm.maximum.f32(float, float)
define amdgpu_kernel void @alu(ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %z,
                                ptr addrspace(1) %f, ptr addrspace(1) %o) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr i32, ptr addrspace(1) %x, i32 %l
  %py = getelementptr i32, ptr addrspace(1) %y, i32 %l
  %pz = getelementptr i32, ptr addrspace(1) %z, i32 %l
  %a = load i32, ptr addrspace(1) %px
  %b = load i32, ptr addrspace(1) %py
  %c = load i32, ptr addrspace(1) %pz
  %na = xor i32 %a, -1
  %t0 = and i32 %a, %b
  %t1 = and i32 %na, %c
  %sel = or i32 %t0, %t1
  %t2 = xor i32 %a, %b
  %t3 = or i32 %t2, %c
  %maj0 = and i32 %a, %b
  %maj1 = and i32 %b, %c
  %maj2 = and i32 %a, %c
  %maj3 = or i32 %maj0, %maj1
  %maj = or i32 %maj3, %maj2
  %pf = getelementptr <3 x float>, ptr addrspace(1) %f, i32 %l
  %fv = load <3 x float>, ptr addrspace(1) %pf
  %f0 = extractelement <3 x float> %fv, i32 0
  %f1 = extractelement <3 x float> %fv, i32 1
  %f2 = extractelement <3 x float> %fv, i32 2
  %m0 = call float @llvm.minimum.f32(float %f0, float %f1)
  %mn = call float @llvm.minimum.f32(float %m0, float %f2)
  %x0 = call float @llvm.maximum.f32(float %f0, float %f1)
  %mx = call float @llvm.maximum.f32(float %x0, float %f2)
  %pair0 = insertelement <2 x float> poison, float %f0, i32 0
  %pair = insertelement <2 x float> %pair0, float %f1, i32 1
  %bf = fptrunc <2 x float> %pair to <2 x bfloat>
  %bfi = bitcast <2 x bfloat> %bf to i32
  %mni = bitcast float %mn to i32
  %mxi = bitcast float %mx to i32
  %po = getelementptr <8 x i32>, ptr addrspace(1) %o, i32 %l
  %o0 = insertelement <8 x i32> poison, i32 %sel, i32 0
  %o1 = insertelement <8 x i32> %o0, i32 %t3, i32 1
  %o2 = insertelement <8 x i32> %o1, i32 %maj, i32 2
  %o3 = insertelement <8 x i32> %o2, i32 %mni, i32 3
  %o4 = insertelement <8 x i32> %o3, i32 %mxi, i32 4
  %o5 = insertelement <8 x i32> %o4, i32 %bfi, i32 5
  %o6 = insertelement <8 x i32> %o5, i32 0, i32 6
  %o7 = insertelement <8 x i32> %o6, i32 0, i32 7
  store <8 x i32> %o7, ptr addrspace(1) %po
  ret void
}
"""


def test_llvm_selected_bitop3_minimum3_maximum3_and_bf16_pack():
    """LLVM's gfx950 instruction selection turns logic into v_bitop3 (its own truth tables), llvm.minimum/maximum
    chains into v_minimum3/v_maximum3_f32 and a <2 x float> -> <2 x bfloat> truncation into v_cvt_pk_bf16_f32:
    the emulator must give what the IR means (numpy; bf16 by ml_dtypes' round-to-nearest-even)."""
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(ALU_IR, cpu="gfx950", output="assembly").data
    for mnemonic in ("v_bitop3_b32", "v_minimum3_f32", "v_maximum3_f32", "v_cvt_pk_bf16_f32"):
        assert mnemonic in asm
    co = link(run_backend(ALU_IR, cpu="gfx950").data)
    rng = np.random.default_rng(13)
    x, y, z = (rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    f = rng.standard_normal((64, 4)).astype(np.float32)   # <3 x float> elements are 16 bytes apart
    f[5, 1] = np.nan                                   # minimum/maximum propagate NaN
    out = np.zeros((64, 8), np.uint32)
    emulate(co, "alu", grid=1, block=64, args=[x, y, z, f, out])
    np.testing.assert_array_equal(out[:, 0], (x & y) | (~x & z))
    np.testing.assert_array_equal(out[:, 1], (x ^ y) | z)
    np.testing.assert_array_equal(out[:, 2], (x & y) | (y & z) | (x & z))
    np.testing.assert_array_equal(out[:, 3].view(np.float32), np.minimum.reduce(f[:, :3], axis=1))
    np.testing.assert_array_equal(out[:, 4].view(np.float32), np.maximum.reduce(f[:, :3], axis=1))
    pair = f[:, :2].astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(out[:, 5], pair[:, 0] | (pair[:, 1] << 16))


DOWN_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.cvt.scalef32.pk.fp4.f32(i32, float, float, float, i32 immarg)
declare <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16>, float, float, float, i1 immarg)
declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @down(ptr addrspace(1) %x, ptr addrspace(1) %s, ptr addrspace(1) %o) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr <2 x float>, ptr addrspace(1) %x, i32 %l
  %vx = load <2 x float>, ptr addrspace(1) %px
  %a = extractelement <2 x float> %vx, i32 0
  %b = extractelement <2 x float> %vx, i32 1
  %ps = getelementptr float, ptr addrspace(1) %s, i32 %l
  %sc = load float, ptr addrspace(1) %ps
  %po = getelementptr <2 x i32>, ptr addrspace(1) %o, i32 %l
  %old = load <2 x i32>, ptr addrspace(1) %po
  %o4 = extractelement <2 x i32> %old, i32 0
  %o8i = extractelement <2 x i32> %old, i32 1
  %o8 = bitcast i32 %o8i to <2 x i16>
  ; fp4 pair into byte 2 of the old value, fp8 pair into its high word
  %r4 = call i32 @llvm.amdgcn.cvt.scalef32.pk.fp4.f32(i32 %o4, float %a, float %b, float %sc, i32 2)
  %r8 = call <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16> %o8, float %a, float %b, float %sc, i1 true)
  %r8i = bitcast <2 x i16> %r8 to i32
  %w0 = insertelement <2 x i32> poison, i32 %r4, i32 0
  %w1 = insertelement <2 x i32> %w0, i32 %r8i, i32 1
  store <2 x i32> %w1, ptr addrspace(1) %po
  ret void
}
"""


def test_cvt_scalef32_down_conversions():
    """Quantization: the values divided by the scale (2^exponent of the f32 scale operand), rounded to nearest
    even, saturated, and written into the byte / word op_sel names of the old destination. Reference:
    ml_dtypes' casts of x / scale (CK's non-gfx950 path for the same builtins)."""
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(DOWN_IR, cpu="gfx950", output="assembly").data
    assert "v_cvt_scalef32_pk_fp4_f32" in asm and "v_cvt_scalef32_pk_fp8_f32" in asm
    co = link(run_backend(DOWN_IR, cpu="gfx950").data)
    rng = np.random.default_rng(14)
    x = (rng.standard_normal((64, 2)) * 8).astype(np.float32)
    x[3] = [1e6, -1e6]                                     # saturates to the largest finite value
    scale = np.ldexp(1.0, rng.integers(-3, 4, 64)).astype(np.float32)
    old = rng.integers(0, 1 << 32, (64, 2), dtype=np.uint64).astype(np.uint32)
    out = old.copy()
    emulate(co, "down", grid=1, block=64, args=[x, scale, out])
    q = x.astype(np.float64) / scale[:, None]
    fp4 = np.clip(q, -6, 6).astype(np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    fp8 = np.clip(q, -448, 448).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    want4 = (old[:, 0] & ~np.uint32(0xFF << 16)) | ((fp4[:, 0] | fp4[:, 1].astype(np.uint32) << 4) << 16)
    want8 = (old[:, 1] & np.uint32(0xFFFF)) | ((fp8[:, 0] | fp8[:, 1].astype(np.uint32) << 8) << 16)
    np.testing.assert_array_equal(out[:, 0], want4)
    np.testing.assert_array_equal(out[:, 1], want8)


ASHR_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @ashr(ptr addrspace(1) %x, ptr addrspace(1) %o) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr <4 x i32>, ptr addrspace(1) %x, i32 %l
  %v = load <4 x i32>, ptr addrspace(1) %px
  %a = extractelement <4 x i32> %v, i32 0
  %b = extractelement <4 x i32> %v, i32 1
  %s = extractelement <4 x i32> %v, i32 2
  %old = extractelement <4 x i32> %v, i32 3
  ; LLVM has no intrinsic for these: its assembler encodes them (op_sel:[0,0,0,1] = the high half)
  %r0 = call i32 asm "v_ashr_pk_i8_i32 $0, $1, $2, $3", "=v,v,v,v,0"(i32 %a, i32 %b, i32 %s, i32 %old)
  %r1 = call i32 asm "v_ashr_pk_u8_i32 $0, $1, $2, $3 op_sel:[0,0,0,1]", "=v,v,v,v,0"(i32 %a, i32 %b, i32 %s,
      i32 %old)
  %r2 = call i32 asm "v_ashr_pk_u8_i32 $0, $1, $2, $3", "=v,v,v,v,0"(i32 %a, i32 %b, i32 %s, i32 %old)
  %r3 = call i32 asm "v_ashr_pk_i8_i32 $0, $1, $2, $3 op_sel:[0,0,0,1]", "=v,v,v,v,0"(i32 %a, i32 %b, i32 %s,
      i32 %old)
  %po = getelementptr <4 x i32>, ptr addrspace(1) %o, i32 %l
  %w0 = insertelement <4 x i32> poison, i32 %r0, i32 0
  %w1 = insertelement <4 x i32> %w0, i32 %r1, i32 1
  %w2 = insertelement <4 x i32> %w1, i32 %r2, i32 2
  %w3 = insertelement <4 x i32> %w2, i32 %r3, i32 3
  store <4 x i32> %w3, ptr addrspace(1) %po
  ret void
}
"""


def test_ashr_pk_shifts_saturates_and_packs_into_the_half_op_sel_picks():
    """v_ashr_pk_i8_i32 / v_ashr_pk_u8_i32 as LLVM 22 encodes them for gfx950 (inline asm, both op_sel halves),
    in the emulator = numpy of AMD's cdna4 description: (SRC >> SRC2[4:0]) saturated to [-128, 127] or [0, 255],
    SRC0 in byte 0 and SRC1 in byte 1 of the 16-bit result; the other half of the old register is kept."""
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    # llvmlite has no AMDGPU asm parser for objects: LLVM's own assembly goes through llvm-mc-22
    asm = run_backend(ASHR_IR, cpu="gfx950", output="assembly").data
    assert "v_ashr_pk_i8_i32" in asm and "v_ashr_pk_u8_i32" in asm
    co = gfx950_object(ASHR_IR, through_mc=True)
    rng = np.random.default_rng(29)
    x = rng.integers(0, 1 << 32, (64, 4), dtype=np.uint64).astype(np.uint32)
    x[:, 2] = rng.integers(0, 32, 64)                  # shift counts 0..31, so large and small values both occur
    x[:8, 2] = 0                                       # unshifted: most values saturate
    x[8:16, :2] = rng.integers(-300, 300, (8, 2)).astype(np.int32).view(np.uint32)  # in and near the ranges
    x[8:16, 2] = rng.integers(0, 3, 8)
    out = np.full((64, 4), 0xDEADBEEF, np.uint32)
    emulate(co, "ashr", grid=1, block=64, args=[x, out])
    shifted = x[:, :2].view(np.int32).astype(np.int64) >> x[:, 2:3].astype(np.int64)
    old = x[:, 3]
    for col, (lo, hi), half in ((0, (-128, 127), 0), (1, (0, 255), 1), (2, (0, 255), 0), (3, (-128, 127), 1)):
        sat = np.clip(shifted, lo, hi) & 0xFF
        packed = (sat[:, 0] | sat[:, 1] << 8).astype(np.uint32)
        want = (old & ~np.uint32(0xFFFF << 16 * half)) | (packed << np.uint32(16 * half))
        np.testing.assert_array_equal(out[:, col], want, err_msg=f"column {col}")


PK_BF16_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare <2 x bfloat> @llvm.amdgcn.raw.ptr.buffer.atomic.fadd.v2bf16(<2 x bfloat>, ptr addrspace(8), i32, i32, i32)

define amdgpu_kernel void @pk(ptr addrspace(1) %g, ptr addrspace(1) %bufmem, ptr addrspace(1) %x,
                              ptr addrspace(1) %o) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr <2 x bfloat>, ptr addrspace(1) %x, i32 %l
  %v = load <2 x bfloat>, ptr addrspace(1) %px
  %slot = and i32 %l, 31                              ; lanes l and l + 32 add to the same pair
  %pg = getelementptr <2 x bfloat>, ptr addrspace(1) %g, i32 %slot
  %r0 = atomicrmw fadd ptr addrspace(1) %pg, <2 x bfloat> %v syncscope("agent") monotonic
  ; a raw V# over %bufmem: 128 records, word 3 = LLVM's gfx9 raw-buffer format (DATA_FORMAT 32, FLOAT)
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %bufmem, i16 0, i64 128,
      i32 159744)
  %off = shl i32 %slot, 2
  %r1 = call <2 x bfloat> @llvm.amdgcn.raw.ptr.buffer.atomic.fadd.v2bf16(<2 x bfloat> %v, ptr addrspace(8) %rsrc,
      i32 %off, i32 0, i32 0)
  %po = getelementptr [2 x <2 x bfloat>], ptr addrspace(1) %o, i32 %l
  store <2 x bfloat> %r0, ptr addrspace(1) %po
  %po1 = getelementptr <2 x bfloat>, ptr addrspace(1) %po, i32 1
  store <2 x bfloat> %r1, ptr addrspace(1) %po1
  ret void
}
"""


def test_bf16_pair_atomic_adds_round_in_bf16():
    """global_atomic_pk_add_bf16 and buffer_atomic_pk_add_bf16 (LLVM 22's gfx950 selection of an atomicrmw fadd
    on <2 x bfloat> and of llvm.amdgcn.raw.ptr.buffer.atomic.fadd.v2bf16) add each bf16 half and round once to
    bf16 (numpy float64 -> ml_dtypes.bfloat16, round to nearest even); with sc0 the lane gets the old pair. Lanes
    l and l + 32 hit the same pair: the emulator applies them in lane order, so lane l + 32 sees lane l's sum.
    Before, both were run (global) or refused (buffer) as f16 pairs."""
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(PK_BF16_IR, cpu="gfx950", output="assembly").data
    assert "global_atomic_pk_add_bf16" in asm and "buffer_atomic_pk_add_bf16" in asm
    co = link(run_backend(PK_BF16_IR, cpu="gfx950").data)
    rng = np.random.default_rng(31)
    bf = ml_dtypes.bfloat16
    x = (rng.standard_normal((64, 2)) * 2.0 ** rng.integers(-6, 7, (64, 2))).astype(bf)
    init = rng.standard_normal((32, 2)).astype(bf)
    g, bufmem = init.copy(), init.copy()
    out = np.full((64, 2, 2), np.nan, bf)
    emulate(co, "pk", grid=1, block=64, args=[g, bufmem, x, out])
    mem = init.astype(np.float64)
    want_old = np.zeros((64, 2))
    for lane in range(64):                           # one pair per slot, lanes in order
        s = lane % 32
        want_old[lane] = mem[s]
        mem[s] = (mem[s] + x[lane].astype(np.float64)).astype(bf).astype(np.float64)
    for col, final in ((0, g), (1, bufmem)):
        np.testing.assert_array_equal(out[:, col].astype(np.float64), want_old, err_msg=f"old values, column {col}")
        np.testing.assert_array_equal(final.astype(np.float64), mem, err_msg=f"memory, column {col}")


SR_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare <2 x bfloat> @llvm.amdgcn.cvt.sr.bf16.f32(<2 x bfloat>, float, i32, i1 immarg)
define amdgpu_kernel void @sr(ptr addrspace(1) %x, ptr addrspace(1) %o) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr <4 x i32>, ptr addrspace(1) %x, i32 %l
  %v = load <4 x i32>, ptr addrspace(1) %px
  %fi = extractelement <4 x i32> %v, i32 0
  %f = bitcast i32 %fi to float
  %r = extractelement <4 x i32> %v, i32 1
  %oldi = extractelement <4 x i32> %v, i32 2
  %old = bitcast i32 %oldi to <2 x bfloat>
  %a = call <2 x bfloat> @llvm.amdgcn.cvt.sr.bf16.f32(<2 x bfloat> %old, float %f, i32 %r, i1 false)
  %b = call <2 x bfloat> @llvm.amdgcn.cvt.sr.bf16.f32(<2 x bfloat> %old, float %f, i32 %r, i1 true)
  %ai = bitcast <2 x bfloat> %a to i32
  %bi = bitcast <2 x bfloat> %b to i32
  %po = getelementptr <2 x i32>, ptr addrspace(1) %o, i32 %l
  %w0 = insertelement <2 x i32> poison, i32 %ai, i32 0
  %w1 = insertelement <2 x i32> %w0, i32 %bi, i32 1
  store <2 x i32> %w1, ptr addrspace(1) %po
  ret void
}
"""


def test_cvt_sr_bf16_adds_the_random_low_bits_then_truncates():
    """llvm.amdgcn.cvt.sr.bf16.f32 for gfx950 (both destination halves: LLVM writes op_sel:[0,0,1] for the high
    one) in the emulator = numpy of the CDNA 4 ISA guide's stochastic rounding: the f32 bits plus SRC1[15:0],
    truncated to the high 16 bits; NaN stays NaN; the other half of the old register is kept. Random 32-bit seeds
    (their high bits must not matter), finite values over many binades, the largest finite f32, infinities."""
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    asm = run_backend(SR_IR, cpu="gfx950", output="assembly").data
    assert "v_cvt_sr_bf16_f32" in asm and "op_sel:[0,0,1]" in asm
    co = link(run_backend(SR_IR, cpu="gfx950").data)
    rng = np.random.default_rng(37)
    f = (rng.standard_normal(64) * 2.0 ** rng.integers(-100, 100, 64)).astype(np.float32)
    f[:4] = [np.inf, -np.inf, np.finfo(np.float32).max, -np.finfo(np.float32).max]
    f[4] = np.nan
    x = np.zeros((64, 4), np.uint32)
    x[:, 0] = f.view(np.uint32)
    x[:, 1] = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    x[:, 2] = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.full((64, 2), 0xDEADBEEF, np.uint32)
    emulate(co, "sr", grid=1, block=64, args=[x, out])
    down = x[:, 0] >> 16                                                      # truncated toward zero
    frac = (x[:, 0] & 0xFFFF).astype(np.int64)                                # the dropped bits
    up = frac + (x[:, 1] & 0xFFFF) >= 1 << 16                                 # the random bits carry out
    want = np.where(up, down + 1, down).astype(np.uint32)
    got = out[:, 0] & 0xFFFF
    finite = np.isfinite(f)
    np.testing.assert_array_equal(got[finite], want[finite])
    nan_bits = np.array([got[4] << 16], np.uint32).view(np.float32)
    assert np.isnan(nan_bits[0])
    np.testing.assert_array_equal(got[:2], [0x7F80, 0xFF80])               # +-inf stay infinite
    np.testing.assert_array_equal(out[:, 0] >> 16, x[:, 2] >> 16)             # old high half kept
    np.testing.assert_array_equal(out[:, 1] >> 16, out[:, 0] & 0xFFFF)        # op_sel: same value, high half
    np.testing.assert_array_equal(out[:, 1] & 0xFFFF, x[:, 2] & 0xFFFF)       # old low half kept
