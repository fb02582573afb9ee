"""Triton-compiled gfx942 elementwise, reduction, conversion and split-K kernels run in the emulator and match
numpy (float64 reference).

Tolerances (elementwise, relative to the reference unless stated):
- arithmetic in fp32 with exp2/log2/sqrt/rcp (hardware: ~1 ulp; here: numpy's correctly rounded ones): 1e-5
  relative + 1e-6 absolute;
- reductions over n fp32 values (softmax, row sums, layer norm): 1e-5 relative + 1e-6 absolute;
- conversions to fp16 / bf16 / fp8 (round to nearest even in both): exact;
- integer arithmetic: exact;
- split-K with float atomics: the order of the atomic additions is not fixed, 1e-5 * (|A| @ |B|).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.oracles import require_module

triton = require_module("triton")
tl = require_module("triton.language")

from tests.fixtures.triton_kernels import compile_triton, launch  # noqa: E402


@triton.jit
def elementwise_kernel(x_ptr, y_ptr, o_ptr, h_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    r = x * 2.0 + tl.exp(y) - tl.sqrt(tl.abs(x)) + tl.where(x > 0, x, 0.1 * x) + tl.log(tl.abs(y) + 1.0)
    r = r / (1.0 + tl.abs(y))
    tl.store(o_ptr + offs, r, mask=m)
    tl.store(h_ptr + offs, r.to(tl.float16), mask=m)
    tl.store(b_ptr + offs, r.to(tl.bfloat16), mask=m)


@triton.jit
def integer_kernel(x_ptr, o_ptr, n, d, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = (x * 7 + 3) // d + (x % 13) * 1000 + (x >> 3) - tl.maximum(x, 5) + (x ^ 0x55) * (x < 100)
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def softmax_kernel(x_ptr, o_ptr, ncols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < ncols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(o_ptr + row * stride + cols, e / tl.sum(e, 0), mask=m)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, o_ptr, ncols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < ncols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    mean = tl.sum(x, 0) / ncols
    d = tl.where(m, x - mean, 0.0)
    var = tl.sum(d * d, 0) / ncols
    w = tl.load(w_ptr + cols, mask=m)
    tl.store(o_ptr + row * stride + cols, d * tl.rsqrt(var + eps) * w, mask=m)


@triton.jit
def colsum_kernel(x_ptr, o_ptr, nrows, ncols, BR: tl.constexpr, BC: tl.constexpr):
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    acc = tl.zeros((BC,), dtype=tl.float32)
    for r0 in range(0, nrows, BR):
        rows = r0 + tl.arange(0, BR)
        m = (rows[:, None] < nrows) & (cols[None, :] < ncols)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * ncols + cols[None, :], mask=m, other=0.0), 0)
    tl.store(o_ptr + cols, acc, mask=cols < ncols)


@triton.jit
def to_fp8_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m).to(o_ptr.dtype.element_ty), mask=m)


@triton.jit
def splitk_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    ks = tl.program_id(1)
    npn = tl.cdiv(N, BN)
    rm = (pid // npn) * BM + tl.arange(0, BM)
    rn = (pid % npn) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(ks * BK, K, BK * SPLIT):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _sig(**kinds):
    return tuple(kinds.items())


def close(got, ref, rtol=1e-5, atol=1e-6):
    got = np.asarray(got, np.float64)
    bad = np.abs(got - ref) > rtol * np.abs(ref) + atol
    assert not bad.any(), f"{bad.sum()} elements differ, first at {np.argwhere(bad)[0]}: {got[bad][0]} vs {ref[bad][0]}"


def test_elementwise_float_and_conversions():
    n = 3000
    k = compile_triton(elementwise_kernel, _sig(x_ptr="*fp32", y_ptr="*fp32", o_ptr="*fp32", h_ptr="*fp16",
                                                b_ptr="*bf16", n="i32", BLOCK="constexpr"), (("BLOCK", 1024),))
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    o = np.zeros(n, np.float32)
    h = np.zeros(n, np.float16)
    b = np.zeros(n, ml_dtypes.bfloat16)
    launch(k, -(-n // 1024), [x, y, o, h, b, n])
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    ref = (x64 * 2 + np.exp(y64) - np.sqrt(np.abs(x64)) + np.where(x64 > 0, x64, 0.1 * x64)
           + np.log(np.abs(y64) + 1)) / (1 + np.abs(y64))
    close(o, ref)
    np.testing.assert_array_equal(h, o.astype(np.float16))  # conversion of the same fp32 values: exact
    np.testing.assert_array_equal(b.view(np.uint16), o.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_integer_ops():
    n = 1500
    k = compile_triton(integer_kernel, _sig(x_ptr="*i32", o_ptr="*i32", n="i32", d="i32", BLOCK="constexpr"),
                       (("BLOCK", 512),))
    x = np.random.default_rng(2).integers(-5000, 5000, n).astype(np.int32)
    o = np.zeros(n, np.int32)
    d = 37
    launch(k, -(-n // 512), [x, o, n, d])
    x64 = x.astype(np.int64)
    q = np.trunc((x64 * 7 + 3) / d).astype(np.int64)  # C-style division and remainder (truncating)
    rem = x64 - np.trunc(x64 / 13).astype(np.int64) * 13
    ref = q + rem * 1000 + (x64 >> 3) - np.maximum(x64, 5) + (x64 ^ 0x55) * (x64 < 100)
    np.testing.assert_array_equal(o, ref.astype(np.int32))


@pytest.mark.parametrize("ncols,block", [(200, 256), (1000, 1024)])
def test_softmax(ncols, block):
    k = compile_triton(softmax_kernel, _sig(x_ptr="*fp32", o_ptr="*fp32", ncols="i32", stride="i32",
                                            BLOCK="constexpr"), (("BLOCK", block),))
    rows = 13
    x = (np.random.default_rng(3).standard_normal((rows, block)) * 4).astype(np.float32)
    o = np.full_like(x, 5.0)
    launch(k, rows, [x, o, ncols, block])
    xx = x[:, :ncols].astype(np.float64)
    e = np.exp(xx - xx.max(1, keepdims=True))
    close(o[:, :ncols], e / e.sum(1, keepdims=True))
    assert np.all(o[:, ncols:] == 5.0)  # masked-off columns are not stored


def test_layernorm():
    k = compile_triton(layernorm_kernel, _sig(x_ptr="*fp32", w_ptr="*fp32", o_ptr="*fp32", ncols="i32",
                                              stride="i32", eps="fp32", BLOCK="constexpr"), (("BLOCK", 512),))
    rows, ncols = 9, 300
    rng = np.random.default_rng(4)
    x = rng.standard_normal((rows, 512)).astype(np.float32)
    w = rng.standard_normal(ncols).astype(np.float32)
    o = np.zeros_like(x)
    launch(k, rows, [x, w, o, ncols, 512, 1e-5])
    xx = x[:, :ncols].astype(np.float64)
    d = xx - xx.mean(1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + np.float64(np.float32(1e-5))) * w
    close(o[:, :ncols], ref, rtol=1e-5, atol=1e-5)


def test_column_sums():
    k = compile_triton(colsum_kernel, _sig(x_ptr="*fp32", o_ptr="*fp32", nrows="i32", ncols="i32",
                                           BR="constexpr", BC="constexpr"), (("BR", 32), ("BC", 64)))
    nrows, ncols = 150, 200
    x = np.random.default_rng(5).standard_normal((nrows, ncols)).astype(np.float32)
    o = np.zeros(ncols, np.float32)
    launch(k, -(-ncols // 64), [x, o, nrows, ncols])
    close(o, x.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fp8", ["fp8e4b8", "fp8e5b16"])
def test_fp32_to_fp8_fnuz(fp8):
    dtype = {"fp8e4b8": ml_dtypes.float8_e4m3fnuz, "fp8e5b16": ml_dtypes.float8_e5m2fnuz}[fp8]
    k = compile_triton(to_fp8_kernel, _sig(x_ptr="*fp32", o_ptr=f"*{fp8}", n="i32", BLOCK="constexpr"),
                       (("BLOCK", 256),))
    n = 700
    limit = float(ml_dtypes.finfo(dtype).max)
    x = np.random.default_rng(6).uniform(-limit, limit, n).astype(np.float32)
    x[:8] = [0.0, -0.0, 1e-30, -1e-30, limit, -limit, 0.5, -2.0]
    o = np.zeros(n, dtype)
    launch(k, -(-n // 256), [x, o, n])
    np.testing.assert_array_equal(o.view(np.uint8), x.astype(dtype).view(np.uint8))


def test_splitk_atomic_add():
    M, N, K, split = 40, 50, 96, 3
    k = compile_triton(splitk_kernel, _sig(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp32", M="i32", N="i32", K="i32",
                                           BM="constexpr", BN="constexpr", BK="constexpr", SPLIT="constexpr"),
                       (("BM", 32), ("BN", 32), ("BK", 16), ("SPLIT", split)))
    assert "global_atomic_add_f32" in k[3]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    launch(k, (-(-M // 32) * -(-N // 32), split), [a, b, c, M, N, K])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 1e-5 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(c - a64 @ b64) <= bound)


# -- the same kernels from our assembler: Triton's amdgcn text assembled by jitgemm (checked equal to llvm-mc +
# ld.lld's code object first), then run by the tests above

@pytest.fixture
def reassembled_triton(monkeypatch, tmp_path):
    """Every kernel compile_triton makes is replaced by our assembly of its amdgcn text, after checking that text
    gives llvm-mc + ld.lld's code object."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from tests.fixtures import triton_kernels
    from tests.fixtures.asm_support import assert_same_code_object
    from tests.fixtures.hand_kernel import llvm_link

    seen = []

    def reassemble(compiled):
        hsaco, shared, warps, amdgcn = compiled
        ours, _ = assemble_source(amdgcn, file="triton.amdgcn")
        _rel, theirs = llvm_link(tmp_path, amdgcn)
        assert_same_code_object(ours, theirs, "triton kernel")
        seen.append(codeobj.read(ours).kernels[0].name)
        return ours, shared, warps, amdgcn

    monkeypatch.setattr(triton_kernels, "after_compile", reassemble)
    return seen


def test_triton_kernels_from_our_assembly(reassembled_triton):
    from tests.fixtures.triton_kernels import assert_close, run_gemm

    test_elementwise_float_and_conversions()
    test_integer_ops()
    test_layernorm()
    test_softmax(100, 128)
    c, ref, scale, compiled = run_gemm("fp16", "fp32", (32, 32, 32), (40, 36, 72), nonkdim=16)
    assert "v_mfma_f32_16x16" in compiled[3]
    assert_close(c, ref, scale, 1e-5)
    assert len(reassembled_triton) == 5

