"""`jitgemm.scaled_matmul`: the scale mode from the scale arrays' shapes (or explicit), scales stored as their
producers store them (per-token [M, 1], per-channel [1, N] / [N], one value; block scales row- or column-major),
the target from the fp8 flavour, and one-line errors naming what is accepted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm.api import MatmulError, infer_scale_mode, prepare
from jitgemm.reference import check, reference

RNG = np.random.default_rng(26)


def _fp8(shape, dt=ml_dtypes.float8_e4m3fnuz):
    return RNG.standard_normal(shape).astype(np.float32).astype(dt)


def _scales(shape):
    return RNG.uniform(0.25, 2.0, shape).astype(np.float32)


@pytest.mark.parametrize("sa, sb, mode", [
    ((), (), "tensor"), ((1,), (1, 1), "tensor"), ((40, 1), (1, 200), "rowcol"), ((40, 1), (200,), "rowcol"),
    ((1, 1), (1, 200), "rowcol"), ((40, 1), (), "rowcol"), ((40, 3), (2, 3), "block"), ((40, 2), (2, 3), None),
    ((40,), (200,), None),
])
def test_mode_from_shapes(sa, sb, mode):
    assert infer_scale_mode(np.ones(sa, np.float32), np.ones(sb, np.float32), 40, 200, 300) == mode


def test_per_token_times_per_tensor_on_gfx950():
    a, w = _fp8((40, 300), ml_dtypes.float8_e4m3fn), _fp8((200, 300), ml_dtypes.float8_e4m3fn)
    sa, sb = _scales((40, 1)), np.float32(0.5)
    d = jitgemm.scaled_matmul(a, w.T, sa, sb, out_dtype=ml_dtypes.bfloat16, backend="emu")
    assert d.dtype == ml_dtypes.bfloat16 and jitgemm.last_launch().kernel.startswith("jitgemm_fp8_e4m3")
    p = GemmProblem.make(40, 200, 300, "fp8_e4m3", d="bf16", layout="NT", scale_mode="rowcol")
    check(p, d, reference(p, a, w.T, None, None, sa, np.array([[sb]])))


def test_block_scales_column_major_int8_with_bias():
    a = RNG.integers(-100, 100, (40, 300)).astype(np.int8)
    b = RNG.integers(-100, 100, (300, 140)).astype(np.int8)
    sa = np.asfortranarray(_scales((40, 3)))            # aiter's / DeepGEMM's transposed activation scales
    sb = _scales((2, 3))
    bias = RNG.standard_normal(140).astype(np.float32)
    call = prepare(a, b, bias=bias, scales=(sa, sb, None))
    assert (call.problem.scale_mode, call.problem.a_scale_order, call.problem.b_scale_order) == ("block", "col", "row")
    assert call.values["ld_a_scale"] == 40 and call.values["ld_b_scale"] == 3
    d = jitgemm.scaled_matmul(a, b, sa, sb, bias=bias, backend="emu", arch="gfx942")
    check(call.problem, d, reference(call.problem, a, b, None, bias, sa, sb))


def test_explicit_mode_and_errors():
    a, b = _fp8((8, 100)), _fp8((100, 16))
    one = np.ones((1, 1), np.float32)
    # K <= 128 and N <= 128: [M, 1] and [1, 1] also fit block; the explicit mode takes them as block scales
    assert prepare(a, b, scales=(np.ones((8, 1), np.float32), one, "block")).problem.scale_mode == "block"
    for sa, sb, mode, words in [
        (np.ones((8, 2), np.float32), one, None, "fit no scale mode for M=8, N=16, K=100; accepted: tensor"),
        (one, one, "per_token", "accepted: tensor, rowcol, block"),
        (np.ones((8, 1)), one, None, "the scales are fp32"),
        ("2", one, None, "expected a float32 numpy array or a number"),
        (np.ones((8, 1), np.float32), one, "tensor", r"scale_mode='tensor' takes scale_a \[1, 1\]"),
        (np.ones((8, 1), np.float32), np.ones((2, 1), np.float32), "block", r"takes scale_b \[1, 1\]"),
    ]:
        with pytest.raises(MatmulError, match=words):
            prepare(a, b, scales=(sa, sb, mode))
    with pytest.raises(MatmulError, match="accepted: 8-bit operands"):
        prepare(a.astype(np.float32), b.astype(np.float32), scales=(one, one, None))
    with pytest.raises(MatmulError, match="bias: expected a 1-D float32"):
        prepare(a.view(np.int8), b.view(np.int8), bias=np.ones(16, np.int32), scales=(one, one, None))


def test_qualify_draws_scaled_problems():
    """`jitgemm qualify`'s random problems keep the contract's scale mode and orders (a one-row scale array
    reads the same in both orders, so the drawn order is taken)."""
    from jitgemm.qualify import qualify_candidate
    from jitgemm.suppliers import GeneratorSupplier

    p = GemmProblem.make(64, 64, 256, "int8", d="bf16", layout="NT", scale_mode="block", a_scale_order="col",
                         b_scale_order="col")
    (cand,) = GeneratorSupplier("asm").candidates(p, "gfx942")
    result = qualify_candidate(cand, cases=2, seed=1)
    assert result.cases == 2 and result.failure is None
    one_row = np.ones((1, 3), np.float32)
    call = prepare(_fp8((40, 300)), _fp8((300, 100)), scales=(_scales((40, 3)), one_row, "block", {"b": "col"}))
    assert call.problem.b_scale_order == "col" and call.values["ld_b_scale"] == 1
