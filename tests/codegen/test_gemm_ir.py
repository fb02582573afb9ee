"""The tiled GEMM IR: problems and configs validate with reasons, the text form round-trips, MFMAs are
found from the spec's data formats (checked against AMD's excerpt), defaults fit the target."""

from __future__ import annotations

import random

import pytest
from jitgemm.codegen.dtypes import dtype, element_of, of_numpy
from jitgemm.codegen.gemm_config import default_config, validate_config
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_text import format_ir, parse
from jitgemm.codegen.mfma_catalog import mfma_catalog, mfmas_for

from jitgemm import isa

GFX942 = isa.target_profile("gfx942")


def test_dtype_lookup():
    assert dtype("BF16").name == "bf16" and dtype("e4m3").name == "fp8"
    with pytest.raises(ValueError, match="accepted: fp32"):
        dtype("fp3")
    assert dtype("mxfp4").name == "fp4" and dtype("e4m3fn").flavour == "ocp" and dtype("e4m3").flavour == "fnuz"
    import ml_dtypes
    import numpy as np

    assert of_numpy(ml_dtypes.bfloat16).name == "bf16" and of_numpy(np.int8).name == "int8"
    with pytest.raises(ValueError, match="not supported"):
        of_numpy(np.complex64)


def test_element_types_from_spec_formats(excerpt_spec):
    fmt = excerpt_spec.data_format
    assert element_of(fmt("FMT_NUM_PK4_BF16")).name == "bf16"
    assert element_of(fmt("FMT_NUM_PK4_F16")).name == "fp16"
    assert element_of(fmt("FMT_NUM_PK8_FP8")).name == "fp8"
    assert element_of(fmt("FMT_NUM_PK8_BF8")).name == "bf8"
    assert element_of(fmt("FMT_NUM_PK8_I8")).name == "int8"
    assert element_of(fmt("FMT_NUM_PK16_F32")).name == "fp32"


def test_mfma_catalog_from_excerpt(excerpt_spec):
    by_name = {x.name: x for x in mfma_catalog(excerpt_spec)}
    x = by_name["V_MFMA_F32_32X32X8_BF16"]
    assert (x.m, x.n, x.k, x.a.name, x.acc.name, x.a_regs, x.acc_regs) == (32, 32, 8, "bf16", "fp32", 2, 16)
    mixed = by_name["V_MFMA_F32_16X16X32_BF8_FP8"]
    assert (mixed.a.name, mixed.b.name, mixed.k) == ("bf8", "fp8", 32)
    assert by_name["V_MFMA_I32_32X32X16_I8"].acc.name == "int32"
    assert [m.name for m in mfmas_for(excerpt_spec, dtype("bf16"), dtype("bf16"))] == [
        "V_MFMA_F32_32X32X8_BF16", "V_MFMA_F32_16X16X16_BF16"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(m=0, n=1, k=1), "m must be a positive"),
    (dict(m=1, n=1, k=1, a="fp16", b="bf16"), "no GEMM for A=fp16, B=bf16"),
    (dict(m=1, n=1, k=1, a="bf16", d="int32"), "output dtype int32"),
    (dict(m=1, n=1, k=1, beta=1.0), "no C input"),
    (dict(m=1, n=1, k=1, layout="NX"), "layout 'NX'"),
    (dict(m=4, n=4, k=8, lda=4), "lda=4 is smaller than the stored row length 8"),
    (dict(m=1, n=1, k=1, a="int8", activation="gelu"), "no gelu"),
])
def test_problem_errors(kwargs, message):
    with pytest.raises(IRError, match=message):
        GemmProblem.make(**kwargs)


def _random_problem(rng: random.Random) -> GemmProblem:
    a = rng.choice(["fp32", "fp16", "bf16", "fp8", "int8"])
    floaty = a != "int8"
    c = rng.choice([None, "fp32"]) if floaty else rng.choice([None, "int32"])
    return GemmProblem.make(
        rng.randint(1, 4000), rng.randint(1, 4000), rng.randint(1, 4000), a, c=c,
        layout=rng.choice(["NN", "NT", "TN", "TT"]), batch=rng.randint(1, 3),
        alpha=rng.choice([1.0, 0.5, -2.0]) if floaty else 2.0,
        beta=(rng.choice([0.0, 0.25] if floaty else [0.0, 3.0]) if c else 0.0),
        bias=rng.choice(["none", "m", "n"]), activation=rng.choice(["none", "relu"]))


def test_text_round_trip_random():
    rng = random.Random(1234)
    for _ in range(200):
        p = _random_problem(rng)
        cfg = GemmConfig(rng.choice([32, 64, 128]), rng.choice([32, 64, 128]), rng.choice([16, 32, 64]),
                         rng.choice([1, 2]), rng.choice([1, 2]), "V_MFMA_F32_32X32X8_BF16", rng.randint(0, 8),
                         rng.choice([1, 2]), rng.randint(1, 4))
        text = format_ir(p, cfg)
        p2, cfg2 = parse(text)
        assert (p2, cfg2) == (p, cfg)
        assert format_ir(p2, cfg2) == text


def test_parse_comments_and_problem_only():
    p, cfg = parse("# a comment\ngemm m=3 n=4 k=5 a=fp16   # trailing\n")
    assert cfg is None and (p.m, p.n, p.k, p.a.name, p.d.name, p.acc.name) == (3, 4, 5, "fp16", "fp16", "fp32")


@pytest.mark.parametrize("text, message", [
    ("gemm m=1 n=2 k=3 a=bf16 foo=3", r"<gemm>:1:25: unknown key 'foo'.*accepted: m, n"),
    ("gemm m=1 n=x k=3 a=bf16", r"<gemm>:1:12: n must be an integer"),
    ("gemm m=1 n=2 k=3 a=bf16\ntile 1x2 waves=1x1", r"<gemm>:2:6: cannot parse"),
    ("gemm m=1 n=2 k=3 a=bf17", r"unknown dtype 'bf17'"),
    ("gemm m=1 m=2 n=2 k=3 a=bf16", r"<gemm>:1:10: key 'm' given twice"),
    ("gemm n=2 k=3 a=bf16", r"gemm needs m="),
])
def test_parse_errors_name_the_place(text, message):
    with pytest.raises(IRError, match=message):
        parse(text)


@pytest.mark.parametrize("a", ["fp32", "fp16", "bf16", "fp8", "int8"])
@pytest.mark.parametrize("size", [1, 17, 256, 4096])
def test_default_config_fits(excerpt_spec, a, size):
    p = GemmProblem.make(size, size, size, a)
    cfg = default_config(p, excerpt_spec, GFX942)
    res = validate_config(p, cfg, excerpt_spec, GFX942)
    assert res.mfma.a == p.a and res.lds_bytes <= 65536 and res.agprs <= 256 and res.workgroup_size <= 1024


@pytest.mark.parametrize("cfg, message", [
    (GemmConfig(256, 256, 64, 1, 1, "V_MFMA_F32_32X32X8_BF16"), "1024 accumulator registers"),
    (GemmConfig(128, 128, 32, 2, 2, "V_MFMA_F32_16X16X4_F32"), "multiplies fp32xfp32"),
    (GemmConfig(128, 128, 30, 2, 2, "V_MFMA_F32_32X32X8_BF16"), "not a multiple of the MFMA's K=8"),
    (GemmConfig(512, 512, 64, 4, 4, "V_MFMA_F32_32X32X8_BF16"), "bytes of LDS"),
    (GemmConfig(256, 256, 32, 8, 8, "V_MFMA_F32_32X32X8_BF16"), "4096 work-items"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_99X99X99_BF16"), "not an MFMA of this spec"),
])
def test_config_limits(excerpt_spec, cfg, message):
    p = GemmProblem.make(256, 256, 256, "bf16")
    with pytest.raises(IRError, match=message):
        validate_config(p, cfg, excerpt_spec, GFX942)


def test_mx_problems_validate_formats_scales_and_layouts():
    p = GemmProblem.make(100, 70, 200, "fp4", "fp8_e4m3", a_scale="plain", b_scale="shuffled")
    assert p.layout == "NT" and p.acc.name == "fp32" and p.d.name == "fp32" and p.scaled and not p.weight_only
    assert p.scale_shape("a") == (100, 7) and p.scale_shape("b") == (70, 7)
    assert p.kernel_class().b_scale == "shuffled"           # the scale layout shapes the binary
    for scaled in (p, GemmProblem.make(64, 48, 128, "fp6_e2m3", "fp4", a_scale="shuffled", b_scale="plain",
                                       b_preshuffle="16x16")):
        text = format_ir(scaled.kernel_class())                 # a kernel class's IR text parses back to it
        assert parse(text)[0] == scaled.kernel_class()
    w = GemmProblem.make(64, 64, 256, "bf16", "fp4", b_scale="plain", b_preshuffle="16x16")
    assert w.weight_only and w.scaled and w.scale_shape("a") is None
    assert not GemmProblem.make(64, 64, 64, "fp8_e4m3").scaled     # unscaled OCP fp8: an ordinary GEMM
    bad = [
        (dict(a="bf16", b="fp4"), "needs B's scales"),
        (dict(a="bf16", b="fp8_e4m3"), "needs B's scales"),
        (dict(a="fp4", b="fp4", layout="NN"), "accepted: NT"),
        (dict(a="bf16", b="bf16", a_scale="plain"), "only MX element types"),
        (dict(a="fp4", b="fp4", lda=201), "multiple of 2"),
        (dict(a="fp6_e2m3", b="fp4", lda=202), "multiple of 4"),
        (dict(a="fp4", b="fp4", a_scale="rowwise"), "not one of none, plain, shuffled"),
        (dict(a="fp4", b="fp4", scale_block=16), "accepted: 32"),
        (dict(a="fp8_e4m3", b="fp4", b_scale="plain", b_preshuffle="16x16", n=24), "multiple of 16"),
        (dict(a="bf16", b="bf16", b_preshuffle="16x16"), "MX weights"),
        (dict(a="fp4", b="int8"), "no GEMM for A=fp4, B=int8"),
    ]
    for kw, message in bad:
        n = kw.pop("n", 64)
        with pytest.raises(IRError, match=message):
            GemmProblem.make(64, n, 200, **kw)


def test_fp8_flavour_follows_the_target_profile():
    """gfx942's fp8 MFMAs read FNUZ codes, gfx950's OCP ones (profiles' fp8_flavour): each catalog offers only its
    own flavour, so an FNUZ problem on gfx950 is refused instead of computing with misread bytes."""
    cat942 = {(m.a.name, m.b.name) for m in mfma_catalog(isa.load_spec("gfx942"))}
    cat950 = {(m.a.name, m.b.name) for m in mfma_catalog(isa.load_spec("gfx950"))}
    assert ("fp8", "bf8") in cat942 and ("fp8_e4m3", "fp8_e5m2") not in cat942
    assert ("fp8_e4m3", "fp8_e5m2") in cat950 and ("fp8", "fp8") not in cat950
    fnuz = GemmProblem.make(64, 64, 64, "fp8")
    config = default_config(fnuz, isa.load_spec("gfx942"), GFX942)
    with pytest.raises(IRError, match="multiplies fp8_e4m3xfp8_e4m3, the problem is fp8xfp8"):
        validate_config(fnuz, config, isa.load_spec("gfx950"), isa.target_profile("gfx950"))


def test_packed_leading_dimensions_have_one_spelling():
    """matmul states lda/ldb/ldc, the CLI and tuning rows leave them out: the same problem, one key."""
    from jitgemm.tuning_db import problem_key

    rng = random.Random(7)
    for _ in range(20):
        m, n, k = (rng.randint(1, 300) for _ in range(3))
        layout = rng.choice(["NN", "NT", "TN", "TT"])
        bare = GemmProblem.make(m, n, k, "fp16", c="fp16", beta=1.0, layout=layout)
        stated = GemmProblem.make(m, n, k, "fp16", c="fp16", beta=1.0, layout=layout, lda=bare.lead["a"],
                                  ldb=bare.lead["b"], ldc=n, ldd=n)
        assert stated != bare and stated.without_packed_lds() == bare
        assert problem_key(stated) == problem_key(bare)
        padded = GemmProblem.make(m, n, k, "fp16", c="fp16", beta=1.0, layout=layout, lda=bare.lead["a"] + 8)
        assert padded.without_packed_lds() == padded and problem_key(padded) != problem_key(bare)
