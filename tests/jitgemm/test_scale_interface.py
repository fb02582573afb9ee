"""The scale modes' interface (issue 26): the problem fields and their errors, the IR text, the contract's
fields and legality clauses, and the float64 reference checked against an independent formula (dequantize
each operand by its expanded scales, then multiply)."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_contract import gemm_contract
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_text import format_ir, parse
from jitgemm.codegen.kernel_abi import LoweredKernel, kernargs, mode_scale_extent

from jitgemm.contract import Contract
from jitgemm.reference import Mismatch, check, operands, reference, scale_operands


def _contract(p: GemmProblem) -> Contract:
    cfg = GemmConfig(64, 64, 128, 2, 2, "V_MFMA_F32_32X32X16_FP8_FP8")
    low = LoweredKernel("k", (), 0, 10, 10, 16, 256, ("ceil(n/64)", "ceil(m/64)", "batch"))
    return Contract.load(gemm_contract(p.kernel_class(), cfg, low, "gfx942", None, "jitgemm-asm", "0"))


@pytest.mark.parametrize("kwargs, words", [
    ({"a": "bf16", "scale_mode": "tensor"}, "accepted: 8-bit operands"),
    ({"a": "fp8", "scale_mode": "perrow"}, "none, tensor, rowcol, block"),
    ({"a": "fp8", "scale_mode": "rowcol", "a_scale_order": "col"}, "describes block scales"),
    ({"a": "fp8", "scale_mode": "block", "b_scale_order": "diag"}, "row, col"),
    ({"a": "int8", "d": "int32", "scale_mode": "tensor"}, "accepted: fp32, fp16, bf16"),
    ({"a": "fp8_e4m3", "a_scale": "plain", "scale_mode": "tensor"}, "MX block scales"),
    ({"a": "int8", "b": "fp8", "scale_mode": "rowcol"}, "no GEMM for A=int8"),
])
def test_problem_refuses_with_what_is_accepted(kwargs, words):
    a = kwargs.pop("a")
    with pytest.raises(IRError, match=words):
        GemmProblem.make(64, 64, 256, a, **kwargs)


def test_defaults_and_shapes():
    p = GemmProblem.make(100, 300, 257, "int8", scale_mode="block", activation="gelu", alpha=0.5)
    assert p.d.name == "fp32" and p.acc.name == "int32" and p.epilogue_float and p.scale_args and not p.scaled
    assert p.mode_scale_shape("a") == (100, 3) and p.mode_scale_shape("b") == (3, 3)
    r = GemmProblem.make(5, 7, 9, "fp8", "bf8", "bf16", scale_mode="rowcol")
    assert r.mode_scale_shape("a") == (5, 1) and r.mode_scale_shape("b") == (1, 7)
    assert [x[0] for x in kernargs(r)][-6:] == ["a_scale", "b_scale", "ld_a_scale", "ld_b_scale",
                                                 "stride_a_scale", "stride_b_scale"]
    assert mode_scale_extent(GemmProblem.make(5, 7, 9, "fp8", scale_mode="block", a_scale_order="col"), "a") == \
        ("kb", "m", "ld_a_scale")
    plain = GemmProblem.make(5, 7, 9, "fp8")
    assert "scale_mode" not in format_ir(plain) and len(kernargs(plain)) == 19   # unscaled kernels unchanged


@pytest.mark.parametrize("mode", ["tensor", "rowcol", "block"])
def test_text_round_trip(mode):
    p = GemmProblem.make(33, 65, 300, "fp8", d="bf16", layout="NT", scale_mode=mode,
                         **({"a_scale_order": "col"} if mode == "block" else {}))
    text = format_ir(p)
    assert f"scale_mode={mode}" in text and parse(text)[0] == p


def test_contract_fields_and_clauses():
    block = GemmProblem.make(64, 64, 256, "fp8", d="bf16", layout="NT", scale_mode="block", b_scale_order="col")
    c = _contract(block)
    op = c.data["operation"]
    assert (op["scale_mode"], op["a_scale_order"], op["b_scale_order"]) == ("block", "row", "col")
    assert c.data["legality"]["align_bytes"] == {"a_scale": 4, "b_scale": 4}
    roles = [a["role"] for a in c.args]
    assert {"a_scale", "b_scale", "ld_a_scale", "ld_b_scale"} <= set(roles)
    assert c.admits(GemmProblem.make(300, 17, 1000, "fp8", d="bf16", layout="NT", scale_mode="block",
                                     b_scale_order="col"))[0]
    ok, why = c.admits(GemmProblem.make(64, 64, 256, "fp8", d="bf16", layout="NT", scale_mode="block"))
    assert not ok and why.startswith("operation.b_scale_order")
    ok, why = c.admits(GemmProblem.make(64, 64, 256, "fp8", d="bf16", layout="NT", scale_mode="rowcol"))
    assert not ok and why.startswith("operation.scale_mode") and "rowcol" in why
    # an unscaled kernel refuses a scaled problem, and a scaled kernel an unscaled one
    ok, why = _contract(GemmProblem.make(64, 64, 256, "fp8", d="bf16", layout="NT")).admits(block)
    assert not ok and why.startswith("operation.scale_mode")
    ok, why = c.admits(GemmProblem.make(64, 64, 256, "fp8", d="bf16", layout="NT"))
    assert not ok and "operation.scale_mode" in why
    int8 = _contract(GemmProblem.make(64, 64, 256, "int8", d="fp16", scale_mode="tensor", alpha=0.5))
    assert {a["name"]: a.get("type") for a in int8.args}["alpha"] == "f32"   # a scaled int8 epilogue is fp32


def _dequantized(p, a, b, sa, sb):
    """Independent formula: every element of A and B times its own expanded scale, then one product."""
    sa, sb = np.asarray(sa, np.float64), np.asarray(sb, np.float64)
    if p.scale_mode == "tensor":
        ea, eb = np.full((p.m, p.k), sa.item()), np.full((p.k, p.n), sb.item())
    elif p.scale_mode == "rowcol":
        ea, eb = np.repeat(sa.reshape(-1, 1), p.k, 1), np.repeat(sb.reshape(1, -1), p.k, 0)
    else:
        ea = np.repeat(sa, 128, 1)[:, :p.k]
        eb = np.repeat(np.repeat(sb, 128, 0)[:p.n], 128, 1)[:, :p.k].T
    return (a.astype(np.float64) * ea) @ (b.astype(np.float64) * eb)


@pytest.mark.parametrize("mode", ["tensor", "rowcol", "block"])
@pytest.mark.parametrize("dt", ["fp8", "int8"])
def test_reference_against_dequantized_product(mode, dt):
    p = GemmProblem.make(37, 260, 300, dt, d="fp32", scale_mode=mode, bias="n", alpha=0.75)
    a, b, c, bias = operands(p, seed=3)
    sa, sb = scale_operands(p, seed=3)
    want = 0.75 * _dequantized(p, a, b, sa, sb) + bias.astype(np.float64)[None, :]
    got = reference(p, a, b, c, bias, sa, sb)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    unscaled = reference(GemmProblem.make(37, 260, 300, dt, d="fp32", bias="n", alpha=0.75) if dt == "fp8" else
                         GemmProblem.make(37, 260, 300, dt, bias="n", alpha=1.0), a, b, c, bias)
    assert not np.allclose(got, unscaled)          # the scales are really applied


def test_check_accepts_only_matching_specials():
    p = GemmProblem.make(4, 4, 256, "fp8", d="fp32", scale_mode="rowcol")
    a, b, c, bias = operands(p)
    sa, sb = scale_operands(p)
    sa[1, 0], sb[0, 2], sb[0, 3] = np.nan, np.inf, 0.0
    ref = reference(p, a, b, c, bias, sa, sb)
    assert np.isnan(ref[1]).all() and np.isinf(ref[[0, 2, 3], 2]).all() and (ref[[0, 2, 3], 3] == 0).all()
    check(p, ref.astype(np.float32), ref)
    bad = ref.astype(np.float32)
    bad[0, 2] = 1.0
    with pytest.raises(Mismatch, match="infinite scale"):
        check(p, bad, ref)
    bad = ref.astype(np.float32)
    bad[0, 0] = np.nan
    with pytest.raises(Mismatch):
        check(p, bad, ref)
