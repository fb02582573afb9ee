"""The emulator's MFMA fast paths are exact rewrites: the flat `np.take` gather equals indexing with the three
(block, row, col) arrays of the D layout for every shape, and bf16 -> float64 by bit shifting equals ml_dtypes'
cast for every bf16 bit pattern (NaN, inf, subnormals included). End to end, the bf16 GEMM still equals numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from jitgemm.emu.mfma import _d_flat, _d_layout, _elements
from jitgemm.emu.values import Fmt


@pytest.mark.parametrize("m, n, blocks", [(32, 32, 1), (16, 16, 1), (32, 32, 2), (16, 16, 4), (4, 4, 16)])
def test_flat_gather_equals_three_array_indexing(m, n, blocks):
    rng = np.random.default_rng(m * 100 + blocks)
    prod = rng.standard_normal((7, blocks, m, n))
    block, row, col = _d_layout(m, n, blocks)
    expected = prod[:, block, row, col]
    got = np.take(prod.reshape(7, -1), _d_flat(m, n, blocks), axis=1)
    assert got.shape == expected.shape and np.array_equal(got, expected)


def test_bf16_elements_equal_ml_dtypes_cast_for_every_pattern():
    fmt = Fmt("bf16", "f", 16, 1, np.dtype(ml_dtypes.bfloat16))
    patterns = np.arange(1 << 16, dtype=np.uint32)
    regs = (patterns[0::2] | (patterns[1::2] << 16)).astype(np.uint32).reshape(-1, 64, 8)   # (G, 64, regs)
    expected = np.ascontiguousarray(regs).view(ml_dtypes.bfloat16).astype(np.float64)
    got = _elements(regs, fmt, False)
    assert got.dtype == np.float64 and got.shape == expected.shape
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))   # bit for bit


def test_bf16_gemm_in_the_emulator_equals_numpy():
    import jitgemm

    rng = np.random.default_rng(5)
    a = rng.standard_normal((96, 80)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((80, 72)).astype(ml_dtypes.bfloat16)
    d = jitgemm.matmul(a, b, out_dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(d.astype(np.float64) - ref)) <= 1e-5 * np.max(np.abs(ref))   # fp32 accumulation
