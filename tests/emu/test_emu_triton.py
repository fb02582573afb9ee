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

import numpy as np
import pytest

from tests.fixtures.oracles import require_module
from tests.fixtures.triton_kernels import assert_close, run_gemm

require_module("triton")   # without Triton the module skips (fails under JITGEMM_REQUIRE_ORACLES=1)


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
