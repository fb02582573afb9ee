"""MFMA lane layouts of the multi-block and modifier forms, checked against AMD's own published examples.

Triton's GEMMs (tests/emu/test_emu_triton.py) prove the single-block layouts Triton uses. The kernels here follow
AMD's lab notes "AMD matrix cores" (amd/amd-lab-notes, matrix-cores/README.md): example 1
(`__builtin_amdgcn_mfma_f32_16x16x4f32` with block (16, 4): lane (x, y) loads A[x][y] and B[y][x] and stores
D[x + i*N + y*4*N] from register i) and example 2 (`__builtin_amdgcn_mfma_f32_16x16x1f32`: four 16x16x1
products, lane (x, y) holds block y, register l*4+i holds D block l at row i + 4y, column x). The same notes
define CBSZ/ABID (block `abid` of each group of 2**cbsz blocks feeds A of the whole group) and BLGP (0: as is;
1/2: lanes 0-31 / 32-63 broadcast; 3: rotated down by 16 lanes; 4-7: one group of 16 lanes broadcast). The
kernels are compiled by clang-22 and the expected results computed with numpy from those definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

from jitgemm.emu import emulate
from tests.fixtures.clang_kernels import clang_object

SOURCE = r"""
typedef float float16v __attribute__((ext_vector_type(16)));
typedef float float4v __attribute__((ext_vector_type(4)));

__kernel void mfma_16x16x4(__global const float *A, __global const float *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x(), y = __builtin_amdgcn_workitem_id_y();
    float4v d = {0, 0, 0, 0};
    d = __builtin_amdgcn_mfma_f32_16x16x4f32(A[y + 4 * x], B[x + 16 * y], d, 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[x + i * 16 + y * 4 * 16] = d[i];
}

#define MFMA_16X16X1(NAME, CBSZ, ABID, BLGP)                                                              \
__kernel void NAME(__global const float *A, __global const float *B, __global const float *C,            \
                   __global float *D) {                                                                  \
    uint x = __builtin_amdgcn_workitem_id_x(), y = __builtin_amdgcn_workitem_id_y();                     \
    float16v c;                                                                                          \
    for (int l = 0; l < 4; ++l)                                                                          \
        for (int i = 0; i < 4; ++i) c[l * 4 + i] = C[x + i * 16 + y * 4 * 16 + l * 256];                 \
    float16v d = __builtin_amdgcn_mfma_f32_16x16x1f32(A[x + 16 * y], B[x + 16 * y], c, CBSZ, ABID, BLGP); \
    for (int l = 0; l < 4; ++l)                                                                          \
        for (int i = 0; i < 4; ++i) D[x + i * 16 + y * 4 * 16 + l * 256] = d[l * 4 + i];                 \
}
MFMA_16X16X1(mfma_16x16x1, 0, 0, 0)
MFMA_16X16X1(mfma_16x16x1_cbsz1_abid1, 1, 1, 0)
MFMA_16X16X1(mfma_16x16x1_cbsz2_abid2, 2, 2, 0)
MFMA_16X16X1(mfma_16x16x1_blgp3, 0, 0, 3)
MFMA_16X16X1(mfma_16x16x1_blgp1, 0, 0, 1)
MFMA_16X16X1(mfma_16x16x1_blgp6, 0, 0, 6)
"""


@pytest.fixture(scope="module")
def code_object(tmp_path_factory):
    return clang_object(tmp_path_factory.mktemp("mfma_kernels"), SOURCE)


def test_16x16x4_single_block(code_object):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 4)).astype(np.float32)  # A[row][k], stored row-major as in the notes
    b = rng.standard_normal((4, 16)).astype(np.float32)
    d = np.zeros((16, 16), np.float32)
    emulate(code_object, "mfma_16x16x4", grid=1, block=(16, 4), args=[a, b, d], strict=True)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6, atol=1e-6)


def _blocks(name: str, cbsz: int, abid: int, blgp: int, code_object):
    rng = np.random.default_rng(1)
    lanes = rng.standard_normal(64).astype(np.float32)  # A value of lane x + 16y (block y, row x)
    blanes = rng.standard_normal(64).astype(np.float32)  # B value of lane x + 16y (block y, column x)
    c = rng.standard_normal((4, 16, 16)).astype(np.float32)  # C block l, row, column
    d = np.zeros((4, 16, 16), np.float32)
    emulate(code_object, name, grid=1, block=(16, 4), args=[lanes, blanes, c, d], strict=True)
    lane = np.arange(64)
    src_lane = {0: lane, 1: lane % 32, 2: 32 + lane % 32, 3: (lane + 16) % 64, 4: lane % 16, 5: 16 + lane % 16,
                6: 32 + lane % 16, 7: 48 + lane % 16}[blgp]
    b_seen = blanes[src_lane].reshape(4, 16)  # block, column
    a_blocks = lanes.reshape(4, 16)  # block, row
    if cbsz:
        group = 1 << cbsz
        a_blocks = a_blocks[[(blk // group) * group + abid for blk in range(4)]]
    expect = a_blocks[:, :, None].astype(np.float64) * b_seen[:, None, :] + c
    np.testing.assert_allclose(d, expect, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,cbsz,abid,blgp", [
    ("mfma_16x16x1", 0, 0, 0),
    ("mfma_16x16x1_cbsz1_abid1", 1, 1, 0),
    ("mfma_16x16x1_cbsz2_abid2", 2, 2, 0),
    ("mfma_16x16x1_blgp3", 0, 0, 3),
    ("mfma_16x16x1_blgp1", 0, 0, 1),
    ("mfma_16x16x1_blgp6", 0, 0, 6),
])
def test_16x16x1_four_blocks_and_modifiers(code_object, name, cbsz, abid, blgp):
    _blocks(name, cbsz, abid, blgp, code_object)


F64_SOURCE = r"""
typedef double double4v __attribute__((ext_vector_type(4)));
#define MFMA_F64(NAME, NEG)                                                                                \
__kernel void NAME(__global const double *A, __global const double *B, __global const double4v *C,        \
                   __global double4v *D) {                                                                \
    uint x = __builtin_amdgcn_workitem_id_x();                                                            \
    D[x] = __builtin_amdgcn_mfma_f64_16x16x4f64(A[x], B[x], C[x], 0, 0, NEG);                             \
}
MFMA_F64(f64_neg0, 0)
MFMA_F64(f64_neg_a, 1)
MFMA_F64(f64_neg_bc, 6)
MFMA_F64(f64_neg_ac, 5)
"""


@pytest.mark.parametrize("name,neg", [("f64_neg0", 0), ("f64_neg_a", 1), ("f64_neg_bc", 6), ("f64_neg_ac", 5)])
def test_f64_mfma_neg(tmp_path, name, neg):
    """V_MFMA_F64_16X16X4_F64 with its BLGP bits as NEG[2:0] of A, B, C (CDNA3 ISA guide, "Matrix Arithmetic
    Instructions"; clang-22's last builtin argument, which LLVM prints neg:[a,b,c]): the disassembler reads neg:,
    the emulator negates. Lane l holds A[l % 16, l // 16] and B[l // 16, l % 16]; D/C item p of lane l is
    [4p + l // 16, l % 16]; numpy in float64, exact up to the four-term sums (rtol 1e-15)."""
    co = clang_object(tmp_path, F64_SOURCE)
    rng = np.random.default_rng(7 + neg)
    a, b, c = rng.standard_normal(64), rng.standard_normal(64), rng.standard_normal((64, 4))
    lane = np.arange(64)
    A, B, C = np.zeros((16, 4)), np.zeros((4, 16)), np.zeros((16, 16))
    A[lane % 16, lane // 16] = a
    B[lane // 16, lane % 16] = b
    for p in range(4):
        C[4 * p + lane // 16, lane % 16] = c[:, p]
    sa, sb, sc = (-1.0 if neg >> i & 1 else 1.0 for i in range(3))
    ref = (sa * A) @ (sb * B) + sc * C
    want = np.array([[ref[4 * p + ln // 16, ln % 16] for p in range(4)] for ln in range(64)])
    d = np.full((64, 4), np.nan)
    emulate(co, name, grid=1, block=64, args=[a, b, c, d], strict=True)
    np.testing.assert_allclose(d, want, rtol=1e-15, atol=1e-15)
