"""The direct generator's MX GEMMs on gfx950 (codegen/gemm_plan_mx.py, codegen/gemm_asm_mx.py) in the emulator =
numpy float64 on the dequantized values (tests/fixtures/mx_cases.py: random codes and E8M0 scales with 2^-127, 2^127
and NaN, garbage in every byte past K; tolerance there: rtol 1e-5 of sum |products| for fp32 out, + the output's
rounding).

Every format pair runs once, each with one of five variants (scale layouts, pre-shuffled B, MFMA shape, output type,
prefetch), assigned as a Latin square so that every A format and every B format meets every variant; sizes are not
tile multiples and K not a multiple of the tile (nor of 32 where the layout allows)."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.dtypes import MX_ELEMENTS
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError

from jitgemm import isa, mx
from tests.fixtures.mx_cases import check_mx, make_operands, run_mx

S16 = "V_MFMA_SCALE_F32_16X16X128_F8F6F4"
S32 = "V_MFMA_SCALE_F32_32X32X64_F8F6F4"
U32 = "V_MFMA_F32_32X32X64_F8F6F4"
# (a_scale, b_scale, b_preshuffle, d, config or None = the default, lda/ldb padding)
VARIANTS = (
    ("plain", "plain", "none", "fp32", None, (0, 0)),
    ("shuffled", "shuffled", "none", "bf16", None, (4, 0)),                   # 16x16: dword scales with op_sel
    ("plain", "shuffled", "16x16", "fp32", GemmConfig(64, 64, 256, 1, 2, S32), (0, 0)),
    ("shuffled", "plain", "16x16", "fp16", GemmConfig(32, 64, 256, 1, 2, S16, prefetch=1), (8, 0)),
    ("plain", "none", "none", "fp32", GemmConfig(64, 32, 128, 2, 1, S32), (0, 6)),
)
PAIRS = [(x, y) for x in MX_ELEMENTS for y in MX_ELEMENTS]


def _k(a: str, b: str, preshuffle: str) -> int:
    """K past a tile boundary and, without pre-shuffled B, not a multiple of 32 (pre-shuffled rows must be whole
    32-byte runs: K a multiple of 128 serves fp4, fp6 and fp8)."""
    return 384 if preshuffle != "none" else 300


@pytest.mark.parametrize("a, b", PAIRS, ids=[f"{a}x{b}" for a, b in PAIRS])
def test_every_format_pair(a, b):
    i = PAIRS.index((a, b))
    a_scale, b_scale, pre, d, config, (pa, pb) = VARIANTS[(i + i // 5) % 5]
    k = _k(a, b, pre)
    p = GemmProblem.make(40, 48, k, a, b, d=d, a_scale=a_scale, b_scale=b_scale, b_preshuffle=pre)
    run_mx(p, config, seed=i, lda_pad=_byte_rows(a, k, pa), ldb_pad=0 if pre != "none" else _byte_rows(b, k, pb))


def _byte_rows(fmt: str, k: int, pad: int) -> int:
    """`pad` elements of row padding, rounded so that packed rows of k + pad elements start on a byte."""
    bits = {"fp4": 4, "fp6_e2m3": 6, "fp6_e3m2": 6}.get(fmt, 8)
    while pad and ((k + pad) * bits) % 8:
        pad += 1
    return pad


WO_PAIRS = [(x, y) for x in ("bf16", "fp16") for y in MX_ELEMENTS]
# (b_scale, b_preshuffle, d)
WO_VARIANTS = (("plain", "none", "fp32"), ("shuffled", "none", "fp32"), ("shuffled", "16x16", "bf16"),
               ("plain", "16x16", "fp16"), ("plain", "none", "bf16"))


@pytest.mark.parametrize("a, b", WO_PAIRS, ids=[f"{a}x{b}" for a, b in WO_PAIRS])
def test_weight_only(a, b):
    """16-bit A x MX B: B dequantized in registers (v_cvt_scalef32_pk*) for the 16x16x32 bf16/f16 MFMA."""
    i = WO_PAIRS.index((a, b))
    b_scale, pre, d = WO_VARIANTS[(i + i // 5) % 5]
    k = 384 if pre != "none" else 300
    kernel = run_mx(GemmProblem.make(40, 48, k, a, b, d=d, b_scale=b_scale, b_preshuffle=pre), seed=i,
                    lda_pad=2 * (i % 2))
    assert "v_cvt_scalef32_pk" in kernel.stages["asm"] and not kernel.spills and kernel.lds_bytes == 0


@pytest.mark.parametrize("m, n, k", [(1, 1, 32), (17, 5, 10), (33, 65, 130)])
def test_sizes(m, n, k):
    """One row or column, a row of 5 bytes (fp4: its second dword partial), K blocks cut short."""
    run_mx(GemmProblem.make(m, n, k, "fp4", "fp8_e5m2", a_scale="plain", b_scale="shuffled"), seed=m + n + k)


def test_k_shorter_than_a_dword_is_refused_not_misread():
    """A one-row fp4 matrix of K < 8 is under 4 bytes: the contract says K >= 8 (legality.min.k)."""
    from jitgemm.api import GemmCall, MatmulError, launch
    from jitgemm.contract import Contract

    p = GemmProblem.make(1, 1, 6, "fp4", "fp4", a_scale="plain", b_scale="plain")
    kernel = compile_gemm(p, target="gfx950")
    ops = make_operands(p)
    with pytest.raises(MatmulError, match="k"):
        launch(GemmCall(p, ops.values, ops.d, {"a": 16, "b": 16, "c": 16, "bias": 16}), kernel.code_object,
               kernel.name, Contract.load(kernel.contract), backend="emu")


@pytest.mark.parametrize("a, b, kw", [
    ("fp6_e2m3", "fp4", dict(a_scale="plain", b_scale="shuffled")),
    ("bf16", "fp6_e3m2", dict(b_scale="plain", b_preshuffle="16x16")),
])
def test_batched(a, b, kw):
    """Batch strides of packed (fp6: 3/4 byte per element) and 16-bit operands and of the scale arrays."""
    run_mx(GemmProblem.make(24, 32, 256, a, b, d="fp32", batch=3, **kw), seed=5)


@pytest.mark.parametrize("kw", [dict(c="fp32", beta=-0.5, alpha=2.0, bias="n", activation="relu"),
                                dict(d="bf16", c="fp32", beta=1.0, bias="m")])
def test_epilogues(kw):
    """alpha, beta * C, bias and relu after MX accumulation (the shared epilogue; no NaN scales here: relu(NaN)
    is 0 on the hardware's v_max_f32, NaN in numpy)."""
    run_mx(GemmProblem.make(40, 48, 300, "fp4", "fp8_e4m3", a_scale="plain", b_scale="plain", **kw), nans=False)


def test_unscaled_fp4_and_fp6_use_the_unscaled_mfma():
    p = GemmProblem.make(40, 24, 200, "fp4", "fp6_e3m2")
    kernel = run_mx(p, GemmConfig(64, 32, 128, 2, 1, U32), strict=True)
    assert "v_mfma_f32_32x32x64_f8f6f4" in kernel.stages["asm"] and "cbsz:4 blgp:3" in kernel.stages["asm"]


@pytest.mark.parametrize("name, problem, config", [
    ("dword scales, prefetch", GemmProblem.make(40, 48, 300, "fp8_e4m3", "fp4", a_scale="shuffled",
                                                b_scale="shuffled"), None),
    ("byte scales, 32x32, pre-shuffled fp6", GemmProblem.make(40, 32, 384, "fp4", "fp6_e2m3", a_scale="plain",
                                                               b_scale="plain", b_preshuffle="16x16"),
     GemmConfig(32, 32, 128, 1, 1, S32, prefetch=1)),
    ("weight-only", GemmProblem.make(40, 32, 300, "bf16", "fp4", d="fp32", b_scale="shuffled"), None),
])
def test_strict_emulation(name, problem, config):
    """Waits, barriers and hazards as hardware needs them (jitgemm/emu/strict.py), one kernel per path."""
    run_mx(problem, config, seed=7, strict=True)


def test_the_check_sees_a_misread_scale_layout():
    """The checker fails a kernel given scales in the other layout (plain bytes to a shuffled kernel)."""
    from jitgemm.api import GemmCall, launch
    from jitgemm.contract import Contract

    p = GemmProblem.make(40, 32, 256, "fp8_e4m3", "fp8_e4m3", a_scale="shuffled", b_scale="plain")
    kernel = compile_gemm(p, target="gfx950")
    ops = make_operands(p, seed=3)
    stored = ops.values["a_scale"].reshape(-1, ops.values["ld_a_scale"])
    plain = mx.unshuffle_scales(stored, p.m, -(-p.k // 32))
    ops.values["a_scale"] = mx.shuffle_scales(np.roll(plain, 1, axis=0)).reshape(-1)   # rows off by one
    got = launch(GemmCall(p, ops.values, ops.d, {"a": 16, "b": 16, "c": 16, "bias": 16}), kernel.code_object,
                 kernel.name, Contract.load(kernel.contract), backend="emu")
    with pytest.raises(AssertionError):
        check_mx(p, got, ops)


def test_plan_resources_and_shuffled_scale_path():
    """The plan's VGPR figure bounds the lowering's; no LDS, no scratch; 16x16 with shuffled scales reads one
    dword per lane and 32 rows x 2 K steps (op_sel / op_sel_hi select the byte)."""
    p = GemmProblem.make(256, 256, 1024, "fp4", "fp4", a_scale="shuffled", b_scale="shuffled")
    kernel = compile_gemm(p, target="gfx950")
    plan = kernel.plan
    assert plan.mx.a.scale_mode == plan.mx.b.scale_mode == "dword"
    assert kernel.vgprs <= plan.vgprs <= 256 and kernel.lds_bytes == 0 and not kernel.spills
    asm = kernel.stages["asm"]
    assert "op_sel:[1,1,0] op_sel_hi:[1,1,0]" in asm and "buffer_load_ubyte" not in asm.split("mx_tail")[0]
    for a in (*MX_ELEMENTS, "bf16"):           # the bound holds for every format (fp6's 6-register fragments)
        for b, layout in (("fp6_e3m2", "plain"), ("fp8_e4m3", "shuffled")):
            scales = dict(b_scale=layout) if a == "bf16" else dict(a_scale=layout, b_scale=layout)
            k = compile_gemm(GemmProblem.make(4096, 4096, 4096, a, b, c="fp32", beta=1.0, **scales), target="gfx950")
            assert k.vgprs <= k.plan.vgprs <= 256 and not k.spills, (a, b, k.vgprs, k.plan.vgprs)


@pytest.mark.parametrize("kw, match", [
    (dict(a="bf16", b="fp4", b_scale="plain", config=GemmConfig(32, 32, 128, 1, 1, "V_MFMA_F32_32X32X16_BF16")),
     "weight-only bf16xfp4 needs one of: V_MFMA_F32_16X16X32_BF16"),
    (dict(a="fp4", b="fp4", a_scale="shuffled", config=GemmConfig(32, 32, 128, 1, 1, S16)), "multiple of 256"),
    (dict(a="fp4", b="fp4", a_scale="plain", config=GemmConfig(32, 32, 128, 1, 1, "V_MFMA_F32_16X16X128_F8F6F4")),
     "with block scales needs one of"),
])
def test_refusals_name_the_reason(kw, match):
    config = kw.pop("config", None)
    a, b = kw.pop("a"), kw.pop("b")
    with pytest.raises(IRError, match=match):
        compile_gemm(GemmProblem.make(64, 64, 256, a, b, **kw), config, target="gfx950")


def test_gfx942_has_no_mx_kernel():
    with pytest.raises(IRError, match="no f8f6f4 MFMA"):
        compile_gemm(GemmProblem.make(64, 64, 256, "fp4", "fp4", a_scale="plain", b_scale="plain"), target="gfx942")


@pytest.mark.parametrize("dt", ["bf16", "fp16", "int8"])
@pytest.mark.parametrize("m, n, k", [(20, 24, 70), (70, 65, 100)])
def test_gfx950_doubled_k_mfmas_by_default(dt, m, n, k):
    """bf16/f16/i8 on gfx950 take the doubled-K MFMAs (16x16x32, 32x32x16, 16x16x64, 32x32x32: the same cycles
    as the ones they double, llvm-mca-22 -mcpu=gfx950) and = numpy."""
    import ml_dtypes
    from jitgemm.codegen.gemm_config import default_config
    from jitgemm.isa.spec.mfma import parse_mfma_name

    import jitgemm

    spec, profile = isa.load_spec("gfx950"), isa.target_profile("gfx950")
    p = GemmProblem.make(m, n, k, dt, layout="NT")
    shape = parse_mfma_name(default_config(p, spec, profile).mfma)
    assert shape.k * shape.m == {"bf16": 512, "fp16": 512, "int8": 1024}[dt], shape
    rng = np.random.default_rng(m)
    np_t = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "int8": np.int8}[dt]
    if dt == "int8":
        a, b = rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (n, k)).astype(np.int8).T
    else:
        a, b = rng.standard_normal((m, k)).astype(np_t), rng.standard_normal((n, k)).astype(np_t).T
    kernel = jitgemm.compile(p, arch="gfx950")
    assert kernel.config.mfma == default_config(p, spec, profile).mfma
    d = jitgemm.matmul(a, b, arch="gfx950", out_dtype=np.int32 if dt == "int8" else np.float32, backend="emu")
    want = a.astype(np.float64) @ b.astype(np.float64)
    if dt == "int8":
        assert (d == want).all()
    else:   # fp32 accumulation of exact 16-bit products
        np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_scale_and_weight_layouts_name_distinct_kernels():
    """The IR text (cache keys, kernel names, contracts' source) carries the scale and weight layouts, and reads
    back: a plain-scale kernel is never served for a shuffled-scale problem."""
    from jitgemm.codegen.gemm_text import format_ir, parse
    from jitgemm.codegen.kernel_abi import kernel_name

    config = GemmConfig(64, 64, 256, 2, 2, S16)
    names = set()
    for kw in (dict(a_scale="plain", b_scale="plain"), dict(a_scale="shuffled", b_scale="plain"),
               dict(a_scale="plain", b_scale="shuffled"), dict(a_scale="plain", b_scale="plain", b_preshuffle="16x16"),
               dict(b_scale="plain")):
        p = GemmProblem.make(64, 64, 256, "fp4", "fp4", **kw)
        assert parse(format_ir(p, config)) == (p, config)
        names.add(kernel_name(p, config))
    assert len(names) == 5
