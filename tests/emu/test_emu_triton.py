"""Triton-compiled gfx942 GEMMs run in the emulator and match numpy.

These kernels were written by nobody here and compiled by Triton's AMD backend on the CPU; matching a float64
numpy reference on random data is what proves the decoder, the memory model and the MFMA lane layouts (A, B,
C/D for 32x32 and 16x16 shapes; a wrong layout gives errors of the order of the values themselves, far above
every tolerance below). Sizes are deliberately not multiples of the block so masked loads and stores run.

Tolerances, each bounding |C - C_ref| elementwise by tol * (|A| @ |B|) (+ the output format's rounding):
- fp32 inputs, ieee: 1e-5 (fp32 accumulation over K <= 100: K * 2^-24 ~ 6e-6);
- fp32 inputs, tf32 (xf32 MFMA): 4e-3 (inputs rounded to 10 mantissa bits: 2 * 2^-11 per product);
- fp16 / bf16 / fp8 inputs: 1e-5 (products are exact in fp32; fp32 accumulation);
- fp16 / bf16 output: plus one rounding of the output, 2^-11 / 2^-8 of |C_ref|;
- int8: exact.
"""

from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.oracles import require_module

triton = require_module("triton")
tl = require_module("triton.language")

from jitgemm.emu import emulate  # noqa: E402


def _target():
    from triton.backends.compiler import GPUTarget

    return GPUTarget("hip", "gfx942", 64)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr, INT: tl.constexpr):
    pid = tl.program_id(0)
    npn = tl.cdiv(N, BN)
    pm = pid // npn
    pn = pid % npn
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    if INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        am = (rm[:, None] < M) & (rk[None, :] + k * BK < K)
        bm = (rk[:, None] + k * BK < K) & (rn[None, :] < N)
        if INT:
            x = tl.load(a, mask=am, other=0)
            y = tl.load(b, mask=bm, other=0)
        else:
            x = tl.load(a, mask=am, other=0.0)
            y = tl.load(b, mask=bm, other=0.0)
        if IEEE:
            acc += tl.dot(x, y, input_precision="ieee")
        else:
            acc += tl.dot(x, y)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@functools.cache
def compile_kernel(fn, signature: tuple, constexprs: tuple, options: tuple = ()):
    """(code object bytes, LDS bytes, warps) of a Triton kernel compiled for gfx942 on the CPU."""
    src = triton.compiler.ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = triton.compile(src, target=_target(), options=dict(options))
    return k.asm["hsaco"], int(k.metadata.shared), int(k.metadata.num_warps), k.asm["amdgcn"]


def launch(compiled, grid, args, **kwargs):
    """Run a Triton kernel in the emulator the way Triton's HIP launcher does: `block` = 64 * num_warps,
    the compile metadata's shared bytes as dynamic LDS, and null pointers for the scratch buffers Triton
    appends to every kernel's arguments."""
    from jitgemm.codegen.codeobj.reader import read

    hsaco, shared, warps, _ = compiled
    kernel = read(hsaco).kernels[0]
    explicit = [a for a in kernel.args if not str(a.get(".value_kind")).startswith("hidden_")]
    extra = len(explicit) - len(args)
    kwargs.setdefault("strict", True)   # every Triton kernel must also pass strict mode (emu/strict.py)
    return emulate(hsaco, kernel.name, grid=grid, block=64 * warps, args=list(args) + [None] * extra,
                   lds_bytes=shared, **kwargs)


DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp8e4b8": ml_dtypes.float8_e4m3fnuz,
          "fp8e5b16": ml_dtypes.float8_e5m2fnuz, "i8": np.int8, "i32": np.int32}


def run_gemm(a_t: str, c_t: str, block: tuple[int, int, int], shape: tuple[int, int, int], *, ieee: bool = False,
             nonkdim: int = 0, seed: int = 0):
    M, N, K = shape
    bm, bn, bk = block
    integer = a_t == "i8"
    sig = (("a_ptr", f"*{a_t}"), ("b_ptr", f"*{a_t}"), ("c_ptr", f"*{c_t}"), *((n, "i32") for n in
           ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    consts = (("BM", bm), ("BN", bn), ("BK", bk), ("IEEE", ieee), ("INT", integer))
    options = (("matrix_instr_nonkdim", nonkdim),) if nonkdim else ()
    compiled = compile_kernel(matmul_kernel, sig, consts, options)
    rng = np.random.default_rng(seed)
    if integer:
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    else:
        a = rng.standard_normal((M, K)).astype(DTYPES[a_t])
        b = rng.standard_normal((K, N)).astype(DTYPES[a_t])
    c = np.full((M, N), 7, DTYPES[c_t])  # every element must be written
    grid = -(-M // bm) * -(-N // bn)
    launch(compiled, grid, [a, b, c, M, N, K, K, 1, N, 1, N, 1])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return c.astype(np.float64), a64 @ b64, np.abs(a64) @ np.abs(b64), compiled


def assert_close(c, ref, scale, tol, out_rounding=0.0):
    bound = tol * scale + out_rounding * np.abs(ref) + 1e-30
    worst = np.unravel_index(np.argmax(np.abs(c - ref) - bound), c.shape)
    assert np.all(np.abs(c - ref) <= bound), (f"C{list(worst)} = {c[worst]}, reference {ref[worst]} "
                                              f"(allowed error {bound[worst]})")


@pytest.mark.parametrize("a_t,c_t,block,shape,out_rounding", [
    ("bf16", "fp32", (64, 64, 32), (100, 90, 70), 0.0),
    ("bf16", "bf16", (128, 128, 64), (130, 140, 80), 2.0 ** -8),
    ("bf16", "fp32", (32, 32, 16), (50, 40, 36), 0.0),
    ("fp16", "fp32", (64, 64, 32), (70, 100, 50), 0.0),
    ("fp16", "fp16", (32, 32, 16), (40, 33, 20), 2.0 ** -11),
    ("fp8e4b8", "fp32", (64, 64, 32), (90, 70, 100), 0.0),
    ("fp8e5b16", "fp32", (32, 32, 32), (50, 60, 70), 0.0),
])
def test_gemm_32x32_mfma(a_t, c_t, block, shape, out_rounding):
    c, ref, scale, compiled = run_gemm(a_t, c_t, block, shape)
    assert "v_mfma_f32_32x32" in compiled[3]  # the layout under test is the one Triton chose
    assert_close(c, ref, scale, 1e-5, out_rounding)


@pytest.mark.parametrize("a_t,block,shape", [
    ("bf16", (64, 64, 32), (70, 60, 50)),
    ("fp16", (32, 32, 32), (40, 50, 60)),
    ("fp8e4b8", (64, 64, 64), (66, 70, 90)),
])
def test_gemm_16x16_mfma(a_t, block, shape):
    c, ref, scale, compiled = run_gemm(a_t, "fp32", block, shape, nonkdim=16)
    assert "v_mfma_f32_16x16" in compiled[3]
    assert_close(c, ref, scale, 1e-5)


@pytest.mark.parametrize("nonkdim", [0, 16])
def test_gemm_fp32_ieee(nonkdim):
    c, ref, scale, compiled = run_gemm("fp32", "fp32", (32, 32, 16), (45, 37, 30), ieee=True, nonkdim=nonkdim)
    assert "_f32 " in compiled[3] and "xf32" not in compiled[3]
    assert_close(c, ref, scale, 1e-5)


def test_gemm_fp32_tf32():
    c, ref, scale, compiled = run_gemm("fp32", "fp32", (64, 64, 32), (70, 65, 40))
    assert "xf32" in compiled[3]
    assert_close(c, ref, scale, 4e-3)


@pytest.mark.parametrize("nonkdim", [0, 16])
def test_gemm_int8(nonkdim):
    c, ref, _, compiled = run_gemm("i8", "i32", (64, 64, 64), (70, 50, 100), nonkdim=nonkdim)
    assert "v_mfma_i32" in compiled[3]
    np.testing.assert_array_equal(c, ref)
