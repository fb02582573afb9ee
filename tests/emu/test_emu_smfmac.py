"""Sparse MFMAs (V_SMFMAC_*) in the emulator = numpy float64 of the ISA guide's layout, on code LLVM 22 selects
for the llvm.amdgcn.smfmac.* intrinsics: the doubled-K CDNA 4 shapes for gfx950 (f16/bf16 16x16x64 and 32x32x32,
i8 16x16x128, fp8/bf8 32x32x64 and 16x16x128) and two CDNA 3 shapes for gfx942.

The reference states the layout itself (CDNA 4 ISA guide 7.5 "Sparse Matrices"; CDNA 3 guide, same section):
B lane l holds column l % N, in chunks of four VGPRs, chunk h of H holding K/(G H) consecutive k from
h K/H + (l // N) K/(G H); A values 2p, 2p+1 are the non-zero pair of the lane's dense group p, at the 2-bit
offsets of the index set CBSZ/ABID select; D as every MFMA (lane l column l % N, register r row
(r // 4) 4G + 4 (l // N) + r % 4). The indices are random legal pairs (idx0 < idx1), the index register's other
sets random too, so a wrong set or a wrong group changes the result. (Which dense K a lane's B chunk holds is
not observable in one instruction: A's positions are defined through the same list, so A and B permute alike;
the chunk order is the guide's, as for the dense MFMAs.)
Tolerance: f32 results are the float64 sum rounded once (order of the K-sum aside, exact: asserted to 1 ulp);
i32 results exact (wrapping).
"""

from __future__ import annotations

import itertools
import zlib

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.oracles import require_module

require_module("llvmlite")

# (intrinsic suffix, M, K, A/B element kind, LLVM types of A, B, C, target, cbsz, abid)
CASES = [
    ("f32.16x16x64.bf16", 16, 64, "bf16", "<8 x bfloat>", "<16 x bfloat>", "<4 x float>", "gfx950", 0, 1),
    ("f32.32x32x32.f16", 32, 32, "f16", "<8 x half>", "<16 x half>", "<16 x float>", "gfx950", 0, 0),
    ("f32.16x16x64.f16", 16, 64, "f16", "<8 x half>", "<16 x half>", "<4 x float>", "gfx950", 1, 1),
    ("i32.16x16x128.i8", 16, 128, "i8", "<4 x i32>", "<8 x i32>", "<4 x i32>", "gfx950", 0, 1),
    ("f32.32x32x64.fp8.bf8", 32, 64, "fp8_bf8", "<4 x i32>", "<8 x i32>", "<16 x float>", "gfx950", 0, 0),
    ("f32.16x16x128.bf8.fp8", 16, 128, "bf8_fp8", "<4 x i32>", "<8 x i32>", "<4 x float>", "gfx950", 0, 0),
    ("f32.16x16x32.f16", 16, 32, "f16", "<4 x half>", "<8 x half>", "<4 x float>", "gfx942", 0, 2),
    ("i32.32x32x32.i8", 32, 32, "i8", "<2 x i32>", "<4 x i32>", "<16 x i32>", "gfx942", 0, 1),
]


def _ir(suffix: str, ta: str, tb: str, tc: str, cbsz: int, abid: int) -> str:
    name = f"llvm.amdgcn.smfmac.{suffix}"
    return f"""
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare {tc} @{name}({ta}, {tb}, {tc}, i32, i32 immarg, i32 immarg)
define amdgpu_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %i,
                             ptr addrspace(1) %d) {{
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr {ta}, ptr addrspace(1) %a, i32 %l
  %va = load {ta}, ptr addrspace(1) %pa
  %pb = getelementptr {tb}, ptr addrspace(1) %b, i32 %l
  %vb = load {tb}, ptr addrspace(1) %pb
  %pc = getelementptr {tc}, ptr addrspace(1) %c, i32 %l
  %vc = load {tc}, ptr addrspace(1) %pc
  %pi = getelementptr i32, ptr addrspace(1) %i, i32 %l
  %vi = load i32, ptr addrspace(1) %pi
  %r = call {tc} @{name}({ta} %va, {tb} %vb, {tc} %vc, i32 %vi, i32 {cbsz}, i32 {abid})
  %pd = getelementptr {tc}, ptr addrspace(1) %d, i32 %l
  store {tc} %r, ptr addrspace(1) %pd
  ret void
}}
"""


_PAIRS = np.array([p for p in itertools.combinations(range(4), 2)])   # legal (idx0 < idx1) index pairs


def _values(kind: str, which: int, target: str, rng, shape):
    """(raw element codes as uint8/uint16, float64 or int64 values) of random elements of A (0) or B (1)."""
    if kind in ("bf16", "f16"):
        dt = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
        v = rng.standard_normal(shape).astype(dt)
        return v.view(np.uint16), v.astype(np.float64)
    if kind == "i8":
        v = rng.integers(-128, 128, shape).astype(np.int8)
        return v.view(np.uint8), v.astype(np.int64)
    fmt = kind.split("_")[which]
    ocp = {"fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2}
    fnuz = {"fp8": ml_dtypes.float8_e4m3fnuz, "bf8": ml_dtypes.float8_e5m2fnuz}
    dt = (ocp if target == "gfx950" else fnuz)[fmt]
    v = (rng.standard_normal(shape) * 4).astype(dt)
    return v.view(np.uint8), v.astype(np.float64)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[7]}" for c in CASES])
def test_llvm_smfmac_equals_the_guide_layout(case):
    from jitgemm.codegen.codeobj.linker import link
    from jitgemm.codegen.llvm.backend import run_backend

    from jitgemm.emu import emulate

    suffix, m, k, kind, ta, tb, tc, target, cbsz, abid = case
    ir = _ir(suffix, ta, tb, tc, cbsz, abid)
    asm = run_backend(ir, cpu=target, output="assembly").data
    assert f"v_smfmac_{suffix.replace('.', '_')}" in asm
    co = link(run_backend(ir, cpu=target).data)
    rng = np.random.default_rng(zlib.crc32((suffix + target).encode()))
    bits = 16 if kind in ("bf16", "f16") else 8
    groups = 64 // m
    b_items = k // groups
    a_items = b_items // 2
    a_codes, a_vals = _values(kind, 0, target, rng, (64, a_items))
    b_codes, b_vals = _values(kind, 1, target, rng, (64, b_items))
    # the index register: every set random legal pairs; which set counts is the instruction's choice
    set_bits = 2 * a_items
    sets = max(1, 32 // set_bits)
    pair_of = rng.integers(0, len(_PAIRS), (64, sets, a_items // 2))
    idx = _PAIRS[pair_of].reshape(64, sets, a_items)                       # (lane, set, value)
    index = np.zeros(64, np.uint64)
    for s in range(sets):
        for j in range(a_items):
            index |= idx[:, s, j].astype(np.uint64) << np.uint64(s * set_bits + 2 * j)
    chosen = (abid & (sets - 1)) if cbsz == 0 else 0
    regs = m * m // 64
    acc_int = kind == "i8"
    c = (rng.integers(-1000, 1000, (64, regs)).astype(np.int32) if acc_int
         else rng.standard_normal((64, regs)).astype(np.float32))
    d = np.full((64, regs), -7 if acc_int else np.nan, np.int32 if acc_int else np.float32)
    a_buf = np.ascontiguousarray(a_codes).view(np.uint32).reshape(64, -1)
    b_buf = np.ascontiguousarray(b_codes).view(np.uint32).reshape(64, -1)
    emulate(co, "k", grid=1, block=64, args=[a_buf, b_buf, c, index.astype(np.uint32), d])

    # numpy of the guide's tables
    chunks = max(1, b_items * bits // 128)
    per = b_items // chunks
    A, B = np.zeros((m, k)), np.zeros((k, m))
    for ln in range(64):
        g = ln // m
        klist = np.array([(e // per) * (k // chunks) + g * per + e % per for e in range(b_items)])
        B[klist, ln % m] = b_vals[ln]
        for j in range(a_items):
            A[ln % m, klist[4 * (j // 2) + idx[ln, chosen, j]]] += a_vals[ln, j]
    ref = A @ B
    want = np.array([[ref[(r // 4) * 4 * groups + 4 * (ln // m) + r % 4, ln % m] for r in range(regs)]
                     for ln in range(64)])
    if acc_int:
        np.testing.assert_array_equal(d, (want.astype(np.int64) + c).astype(np.int32))
    else:
        np.testing.assert_allclose(d, (want + c.astype(np.float64)).astype(np.float32), rtol=2.0 ** -23, atol=0)
