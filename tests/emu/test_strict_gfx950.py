"""Strict emulation on gfx950: the profile's hazard table (specs/targets/gfx950.yaml, GCNHazardRecognizer's
gfx950 terms) and MFMA passes against what LLVM does. Kernels clang-22 -mcpu=gfx950 compiled pass strict mode
with the s_nop LLVM's hazard recognizer put in, and removing any of those s_nop is flagged by the row the table
cites for it; each s_nop count is also the table's number (XDL MFMA of 4 / 8 / 16 passes -> VALU read: 8 / 12 / 20
wait states, one more than gfx942's passes + 3 beyond 2 passes; the 16-pass 16x16 DGEMM -> VALU: 19; an 8-pass
SMFMA -> store: 10; VALU -> v_permlane32_swap: 2; a conversion into byte 1 or 2 of a VGPR -> the next VALU
touching it: 1). Outputs are poisoned and checked against numpy where the
kernel's arithmetic is simple enough to state (the bf16 16x16x32 MFMA, doubled to bf16 x 8 per lane on gfx950:
lane l row l % 16, k = 8 (l // 16) + j, CDNA 4 ISA guide 7.1.5 "A[m][k]/B[k][n] Layout BF16"; the f64 16x16x4
DGEMM and its group-height-1 result layout, guide 7.1.3.4), else for being written and finite.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from jitgemm.emu import emulate
from jitgemm.emu.strict import StrictViolation
from tests.fixtures.clang_kernels import clang_object, mutants

SOURCE = r"""
typedef float float4v __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));
typedef double double4v __attribute__((ext_vector_type(4)));
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef __bf16 bf16v16 __attribute__((ext_vector_type(16)));
typedef int int8v __attribute__((ext_vector_type(8)));
typedef unsigned int uint2v __attribute__((ext_vector_type(2)));
__kernel void bf16x32(__global const bf16x8 *A, __global const bf16x8 *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* 4-pass XDL -> VALU: s_nop 7 */
    float4v d = __builtin_amdgcn_mfma_f32_16x16x32_bf16(A[x], B[x], (float4v)(0.0f), 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[x * 4 + i] = d[i] * 2.0f;
}
__kernel void bf16x16(__global const bf16x8 *A, __global const bf16x8 *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* 8-pass XDL -> VALU: s_nop 11 */
    float16v d = __builtin_amdgcn_mfma_f32_32x32x16_bf16(A[x], B[x], (float16v)(0.0f), 0, 0, 0);
    for (int i = 0; i < 16; ++i) D[x * 16 + i] = d[i] * 2.0f;
}
__kernel void fp8scale(__global const int8v *A, __global const int8v *B, __global const int *S, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* fp8 x fp8 32x32x64: 16 passes -> VALU: 20 */
    float16v d = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A[x], B[x], (float16v)(0.0f), 0, 0, 0, S[x], 0,
                                                                 S[x]);
    for (int i = 0; i < 16; ++i) D[x * 16 + i] = d[i] * 2.0f;
}
__kernel void fp4scale(__global const int8v *A, __global const int8v *B, __global const int *S, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* fp4 x fp4 16x16x128: 4 passes -> VALU: 8 */
    float4v d = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A[x], B[x], (float4v)(0.0f), 4, 4, 0, S[x], 0,
                                                                 S[x]);
    for (int i = 0; i < 4; ++i) D[x * 4 + i] = d[i] * 2.0f;
}
__kernel void f64(__global const double *A, __global const double *B, __global double *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* 16-pass DGEMM on gfx950 -> VALU: 19 */
    double4v d = __builtin_amdgcn_mfma_f64_16x16x4f64(A[x], B[x], (double4v)(0.0), 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[x * 4 + i] = d[i] * 2.0;
}
__kernel void f32(__global const float *A, __global const float *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* 8-pass SMFMA -> store: s_nop 9 */
    float4v d = __builtin_amdgcn_mfma_f32_16x16x4f32(A[x], B[x], (float4v)(0.0f), 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[x * 4 + i] = d[i];
}
__kernel void sparse(__global const bf16x8 *A, __global const bf16v16 *B, __global const float4v *C,
                     __global const int *I, __global float4v *D) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* VALU write of C -> v_smfmac reading it (as VDST): 2 */
    float4v c = C[x] * 2.0f;
    float4v d = __builtin_amdgcn_smfmac_f32_16x16x64_bf16(A[x], B[x], c, I[x] + 1, 0, 1);
    D[x] = d * 3.0f;                               /* 4-pass XDL -> VALU: 8 */
}
__kernel void bytes(__global const float4v *X, __global uint *O) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* conversions into bytes 0, 1, 2 and the high half of one VGPR */
    float4v v = X[x];
    uint r = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(0u, v.x, v.y, 1.0f, 0);
    r = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(r, v.z, v.w, 1.0f, 1);     /* byte 1: s_nop 0 after it */
    r = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(r, v.x, v.w, 1.0f, 2);     /* byte 2: s_nop 0 after it */
    O[x] = r;
}
__kernel void swap(__global uint *X, __global uint *Y) {
    uint x = __builtin_amdgcn_workitem_id_x();     /* VALU write -> v_permlane32_swap read: s_nop 1 */
    uint2v r = __builtin_amdgcn_permlane32_swap(X[x] + 1u, Y[x] * 3u, false, false);
    X[x] = r.x; Y[x] = r.y;
}
"""


def _args(kernel: str):
    """Random inputs, poisoned outputs, and the numpy expectation of the last argument (None: written, finite)."""
    rng = np.random.default_rng(950)
    if kernel in ("bf16x32", "bf16x16"):
        a = rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16)
        regs = 4 if kernel == "bf16x32" else 16
        out = np.full(64 * regs, np.nan, np.float32)
        if kernel == "bf16x16":
            return [a.view(np.uint16), b.view(np.uint16), out], None
        A, B = np.zeros((16, 32)), np.zeros((32, 16))
        for ln in range(64):
            k = 8 * (ln // 16) + np.arange(8)
            A[ln % 16, k] = a[ln].astype(np.float64)
            B[k, ln % 16] = b[ln].astype(np.float64)
        ref = A @ B
        want = np.array([[ref[4 * (ln // 16) + r, ln % 16] for r in range(4)] for ln in range(64)]) * 2
        return [a.view(np.uint16), b.view(np.uint16), out], want.astype(np.float32).ravel()
    if kernel in ("fp8scale", "fp4scale"):
        words = 8   # clang's builtin takes 8 dwords; for fp4 (cbsz/blgp 4) LLVM passes the first 4
        codes = (rng.standard_normal((2, 64, 4 * words)) * 2).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        if kernel == "fp4scale":
            codes = rng.integers(0, 256, (2, 64, 4 * words)).astype(np.uint8) & 0x77   # finite fp4 pairs
        ab = [np.ascontiguousarray(codes[i]).view(np.int32) for i in range(2)]
        scales = rng.integers(120, 134, 64).astype(np.int32)
        regs = 16 if kernel == "fp8scale" else 4
        return [ab[0], ab[1], scales, np.full(64 * regs, np.nan, np.float32)], None
    if kernel == "f64":
        # V_MFMA_F64_16X16X4_F64 (ISA guide 7.1.3.4): lane l holds A[l % 16, l // 16] and B[l // 16, l % 16];
        # D item p (a register pair) of lane l is D[4p + l // 16, l % 16] (group height 1)
        a, b = rng.standard_normal(64), rng.standard_normal(64)
        A, B = np.zeros((16, 4)), np.zeros((4, 16))
        A[np.arange(64) % 16, np.arange(64) // 16] = a
        B[np.arange(64) // 16, np.arange(64) % 16] = b
        ref = A @ B
        want = np.array([[ref[4 * p + ln // 16, ln % 16] for p in range(4)] for ln in range(64)]) * 2
        return [a, b, np.full(256, np.nan)], want.ravel()
    if kernel == "sparse":
        a = rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16).view(np.uint16)
        b = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16).view(np.uint16)
        c = rng.standard_normal((64, 4)).astype(np.float32)
        idx = rng.integers(0, 1 << 31, 64).astype(np.int32)
        return [a, b, c, idx, np.full((64, 4), np.nan, np.float32)], None
    if kernel == "bytes":
        xs = (rng.standard_normal((64, 4)) * 3).astype(np.float32)
        fp4 = xs.astype(np.float64).clip(-6, 6).astype(np.float32).astype(ml_dtypes.float4_e2m1fn)
        codes = fp4.view(np.uint8).astype(np.uint32) & 0xF
        byte = [codes[:, 0] | codes[:, 1] << 4, codes[:, 2] | codes[:, 3] << 4, codes[:, 0] | codes[:, 3] << 4]
        want = byte[0] | byte[1] << 8 | byte[2] << 16          # round to nearest even, saturated, byte 3 zero
        return [xs, np.full(64, 0xDEADBEEF, np.uint32)], want.astype(np.uint32)
    if kernel == "f32":
        a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
        return [a, b, np.full(256, np.nan, np.float32)], None
    x = rng.integers(0, 1 << 31, 64).astype(np.uint32)
    y = rng.integers(0, 1 << 31, 64).astype(np.uint32)
    xs, ys = x + 1, y * 3
    # LLVM IntrinsicsAMDGPU.td, permlane32.swap: lanes 32-63 of the first operand trade with lanes 0-31 of the second
    return [x, y], (np.concatenate([xs[:32], ys[:32]]), np.concatenate([xs[32:], ys[32:]]))


@pytest.mark.parametrize("kernel, rule", [
    ("bf16x32", "mfma -> valu read needs 8"),
    ("bf16x16", "mfma -> valu read needs 12"),
    ("fp8scale", "mfma -> valu read needs 20"),
    ("fp4scale", "mfma -> valu read needs 8"),
    ("f64", "mfma -> valu read needs 19"),
    ("f32", "mfma -> memory read needs 10"),
    ("sparse", "valu -> mfma read needs 2|mfma -> valu read needs 8"),
    ("bytes", "dst_sel -> valu (read|write) needs 1"),
    ("swap", "valu -> permlane read needs 2"),
])
def test_llvm_gfx950_nops_are_exactly_the_table(tmp_path, kernel, rule):
    co = clang_object(tmp_path, SOURCE, mcpu="gfx950")
    args, expect = _args(kernel)
    stats = emulate(co, kernel, grid=1, block=64, args=args, strict=True)
    assert "passed" in stats.strict and "NOT checked" not in stats.strict
    if kernel == "swap":
        np.testing.assert_array_equal(args[0], expect[0])
        np.testing.assert_array_equal(args[1], expect[1])
    elif kernel == "bytes":
        np.testing.assert_array_equal(args[1], expect)
    else:
        out = args[-1]
        assert np.isfinite(out).all()
        if expect is not None:
            rtol = 1e-15 if out.dtype == np.float64 else 2.0 ** -22   # f64: 4-term sums; f32: one rounding
            np.testing.assert_allclose(out, expect, rtol=rtol, atol=1e-300)
    removed = [m for what, m in mutants(co, kernel, "gfx950") if what.startswith("remove") and "s_nop" in what]
    assert removed, f"LLVM inserted no s_nop in {kernel}"
    for m in removed:
        with pytest.raises(StrictViolation, match=rule):
            emulate(m, kernel, grid=1, block=64, args=_args(kernel)[0], strict=True)
