"""MX GEMMs through the API: MXTensor layouts, `matmul` with MXTensors on gfx950 (the Triton tl.dot_scaled path,
run in the emulator), the contract's MX clauses, byte strides of packed operands and scale roles, the selector's
explanation and the errors.

Authorities: numpy float64 on the values the tensors hold (`MXTensor.dequantize()`, whose element tables are
ml_dtypes' and whose shuffles tests/jitgemm/test_mx.py checks against aiter's permutations); Triton 3.9 chose every
instruction of the kernels (tl.dot_scaled on gfx950: v_mfma_scale_f32_*_f8f6f4, or a bf16/fp16 MFMA after
v_cvt_scalef32_* for weight-only); the code objects' own metadata for the argument layout.

Tolerances, |D - D_ref| <= tol * (|A| @ |B|) elementwise, D_ref in float64 on the dequantized operands:
- fp32 out: 1e-5 (every product of MX elements, and of a bf16/fp16 value with an fp4/fp8 one, is exact in f32
  with in-range scales; the error is f32 accumulation over K <= 256);
- bf16 / fp16 out: plus one rounding of the output, 2^-8 / 2^-11 times |D_ref|;
- extreme scales: where D_ref overflows f32 (2^127 scales) D is +-inf with D_ref's sign; NaN exactly where D_ref
  is NaN (a 0xFF scale reaches that row or column).
"""

from __future__ import annotations

import dataclasses
import zlib

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm import mx
from jitgemm.api import MatmulError, launch, prepare
from jitgemm.selector import Quarantine, Selector
from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier, TritonSupplier
from tests.fixtures.oracles import require_module

RNG = np.random.default_rng(15)
TRITON_MX = ("fp4", "fp8_e4m3", "fp8_e5m2")


def _random_scales(t: mx.MXTensor, rng, extremes: bool, top: int = 6, big: int = 254) -> mx.MXTensor:
    """The tensor with random E8M0 scales 2^-7..2^top (a scale applied to the wrong block is visible), and with
    `extremes` a 2^-127, a 2^(big-127) (default 2^127) and a NaN scale in distinct rows."""
    s = rng.integers(120, 128 + top, t.scales.shape).astype(np.uint8)
    if extremes:
        if t.axis == 1:
            s[0, 0], s[3, -1], s[5, 1 % s.shape[1]] = 0, big, 255
        else:
            s[0, 0], s[-1, 2], s[1 % s.shape[0], 6] = 0, big, 255
    return dataclasses.replace(t, scales=s)


def _operand(fmt: str, shape: tuple[int, int], axis: int, rng) -> mx.MXTensor | np.ndarray:
    x = rng.standard_normal(shape)
    if fmt in ("bf16", "fp16"):
        return x.astype(ml_dtypes.bfloat16 if fmt == "bf16" else np.float16)
    return mx.quantize_mx(x, fmt, axis=axis)


def _values(x) -> np.ndarray:
    return x.dequantize() if isinstance(x, mx.MXTensor) else x.astype(np.float64)


def assert_mx_close(d: np.ndarray, a, b, out_rounding: float = 0.0) -> None:
    av, bv = _values(a), _values(b)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = av @ bv
        bound = 1e-5 * (np.abs(av) @ np.abs(bv)) + out_rounding * np.abs(ref)
    d = d.astype(np.float64)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(d), nan), "NaN exactly where a NaN scale reaches"
    big = ~nan & (np.abs(ref) > float(np.finfo(np.float32).max))
    assert np.array_equal(d[big], np.sign(ref[big]) * np.inf), "f32 overflow gives inf with the reference's sign"
    ok = ~nan & ~big
    err = np.abs(d[ok] - ref[ok])
    assert np.all(err <= bound[ok]), f"max error {err.max()} (bound {bound[ok][np.argmax(err - bound[ok])]})"


@pytest.fixture
def selector(tmp_path):
    """Triton's tl.dot_scaled kernels alone: the path these tests prove end to end (the generators' MX kernels
    have their own tests; `test_explain_*` sees all three suppliers)."""
    return Selector([TritonSupplier(mx_variants=("generic",))], target="gfx950",
                    quarantine=Quarantine(tmp_path / "q.json"))


@pytest.fixture
def every_supplier(tmp_path):
    return Selector([DirectAsmSupplier(), LlvmSupplier(), TritonSupplier()], target="gfx950",
                    quarantine=Quarantine(tmp_path / "q.json"))


def _run(selector, a, b, strict=False, **kwargs):
    call = prepare(a, b, **kwargs)
    blob, name, contract, source = selector.choose(call.problem, call.align)
    return launch(call, blob, name, contract, source=source, strict=strict), call, source


# --- MXTensor layouts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(mx.FORMATS))
@pytest.mark.parametrize("shape,axis", [((48, 256), 1), ((256, 32), 0)])
def test_every_layout_dequantizes_to_the_same_values(fmt, shape, axis):
    t = _random_scales(mx.quantize_mx(RNG.standard_normal(shape), fmt, axis=axis), RNG, extremes=False)
    ref = t.dequantize()
    rows = shape[1 - axis]
    for scales, weight in ((True, False), (False, True), (True, True)):
        u = t.shuffle(scales=scales, weight=weight)
        assert (u.scale_layout, u.data_layout) == ("shuffled" if scales else "plain", "16x16" if weight else "plain")
        if scales:   # stored as the kernel reads them: [rows padded to 256, blocks padded to 8]
            assert u.scales.shape == (-(-rows // 256) * 256, -(-(shape[axis] // 32) // 8) * 8)
            assert np.array_equal(u.scales, mx.shuffle_scales(t.scale_rows()))
        if weight:
            assert np.array_equal(mx.unshuffle_weight(u.data), t.kernel_bytes())
        assert np.array_equal(u.dequantize(), ref)
        assert np.array_equal(u.T.dequantize(), ref.T)
        back = u.unshuffle()
        assert np.array_equal(back.data, t.data) and np.array_equal(back.scales, t.scales)


def test_kernel_bytes_pack_along_k():
    t = mx.quantize_mx(RNG.standard_normal((32, 64)), "fp6_e3m2", axis=0)       # (K=32, N=64): rows are N
    assert np.array_equal(t.kernel_bytes(), mx.pack_fp6(t.codes().T))
    f4 = mx.quantize_mx(RNG.standard_normal((64, 40)), "fp4", axis=0)
    assert np.array_equal(mx.unpack_fp4(f4.kernel_bytes(), 64), f4.codes().T)


def test_weights_is_a_view_of_n_by_k_rows():
    w = RNG.standard_normal((48, 96))
    t = mx.weights(w, "fp4")
    assert t.shape == (96, 48) and t.axis == 0
    assert t.data.T.flags.c_contiguous          # the bytes stay [N, K/2] row-major: nothing to copy for a kernel
    assert np.array_equal(t.dequantize(), mx.quantize_mx(w, "fp4").dequantize().T)


@pytest.mark.parametrize("change,match", [
    (dict(scale_layout="swizzled"), "scale_layout"),
    (dict(data_layout="shuffled16x16"), "data_layout"),
    (dict(scales=np.zeros((8, 3), np.uint8)), r"scales: shape \(8, 3\), expected \(8, 4\)"),
    (dict(data=np.zeros((8, 128), np.uint8)), r"data: shape \(8, 128\), expected \(8, 64\)"),
    (dict(scales=np.zeros((8, 4), np.float32)), "uint8"),
])
def test_inconsistent_mxtensor_is_refused_by_name(change, match):
    t = mx.quantize_mx(RNG.standard_normal((8, 128)), "fp4")
    with pytest.raises(mx.MXError, match=match):
        dataclasses.replace(t, **change)


def test_shuffled_layouts_need_2d_and_16x16_needs_whole_tiles():
    t3 = mx.quantize_mx(RNG.standard_normal((2, 4, 64)), "fp8_e4m3")
    with pytest.raises(mx.MXError, match="2-D"):
        t3.shuffle()
    with pytest.raises(mx.MXError, match="multiple of 16"):
        mx.quantize_mx(RNG.standard_normal((20, 64)), "fp8_e4m3").shuffle(scales=False, weight=True)


# --- matmul with MXTensors, Triton's tl.dot_scaled kernels in the emulator ----------------------------------
PAIRS = [(x, y) for x in TRITON_MX for y in TRITON_MX]


@pytest.mark.parametrize("scales", ["plain", "shuffled"])
@pytest.mark.parametrize("fa,fb", PAIRS)
def test_matmul_mx_pairs_equal_numpy(selector, fa, fb, scales):
    require_module("triton")
    rng = np.random.default_rng(zlib.crc32(f"{fa}{fb}{scales}".encode()))
    m, n, k = int(rng.integers(33, 80)), int(rng.integers(33, 80)), int(rng.choice([96, 160, 200]))
    a = _random_scales(_operand(fa, (m, k), 1, rng), rng, extremes=scales == "plain")
    b = _random_scales(_operand(fb, (k, n), 0, rng), rng, extremes=scales == "shuffled")
    if scales == "shuffled":
        a, b = a.shuffle(), b.shuffle()
    d, call, source = _run(selector, a, b)
    assert call.problem.a_scale == call.problem.b_scale == scales and source.startswith("triton:")
    assert_mx_close(d, a, b)


@pytest.mark.parametrize("fa,fb,out,scales", [("bf16", "fp4", np.float32, "plain"),
                                              ("fp16", "fp8_e4m3", np.float16, "shuffled"),
                                              ("bf16", "fp8_e5m2", ml_dtypes.bfloat16, "plain")])
def test_weight_only_equals_numpy(selector, fa, fb, out, scales):
    require_module("triton")
    rng = np.random.default_rng(4)
    a = _operand(fa, (50, 130), 1, rng)
    # scales up to 2^0 keep |D| inside fp16's range (65504) for fp8 weights up to 448; 2^-127 and NaN scales, but
    # no 2^127: with it single products overflow f32, and whether a lowering sums them (inf - inf = NaN, Triton's
    # upcast to bf16) or scales each block's sum (inf) is beyond what a float64 reference can decide
    b = _random_scales(mx.weights(rng.standard_normal((70, 130)), fb), rng, extremes=True, top=0, big=127)
    if scales == "shuffled":
        b = b.shuffle()
    d, call, _ = _run(selector, a, b, out_dtype=out)
    assert call.problem.weight_only and call.problem.d.numpy == out
    assert_mx_close(d, a, b, {np.float32: 0.0, np.float16: 2.0 ** -11}.get(out, 2.0 ** -8))


@pytest.mark.parametrize("fa,fb,k,scales", [("fp4", "fp4", 192, False), ("fp8_e4m3", "fp8_e5m2", 96, True)])
def test_preshuffled_weights_equal_numpy(selector, fa, fb, k, scales):
    require_module("triton")
    rng = np.random.default_rng(9)
    a = _random_scales(mx.quantize_mx(rng.standard_normal((45, k)), fa), rng, extremes=True)
    b = _random_scales(mx.weights(rng.standard_normal((48, k)), fb), rng, extremes=False)
    b = b.shuffle(scales=scales, weight=True)
    d, call, _ = _run(selector, a, b)
    assert (call.problem.b_preshuffle, call.problem.b_scale) == ("16x16", "shuffled" if scales else "plain")
    assert_mx_close(d, a, b)


@pytest.mark.parametrize("fa,fb,k", [("fp4", "fp4", 75), ("fp8_e5m2", "fp4", 33), ("fp4", "fp8_e4m3", 1)])
def test_odd_k_pads_the_last_nibble_and_block(selector, fa, fb, k):
    """K odd: fp4 rows end in a half-used byte (ld = K + 1 elements) and the last scale block is short."""
    require_module("triton")
    rng = np.random.default_rng(k)
    a = _random_scales(mx.quantize_mx(rng.standard_normal((37, k)), fa), rng, extremes=False)
    b = _random_scales(mx.weights(rng.standard_normal((29, k)), fb), rng, extremes=False)
    d, call, _ = _run(selector, a, b)
    assert call.problem.k == k and call.problem.lead["a"] == (k + 1 if fa == "fp4" else k)
    assert_mx_close(d, a, b)


def test_one_side_scaled_and_ocp_fp8_array_beside_mx(selector):
    """An OCP fp8 numpy array (no scales: every scale 1) beside an MX tensor, and unscaled fp4 x fp8."""
    require_module("triton")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((40, 128)).astype(ml_dtypes.float8_e4m3fn)
    b = _random_scales(mx.weights(rng.standard_normal((56, 128)), "fp4"), rng, extremes=False)
    d, call, _ = _run(selector, a, b)
    assert (call.problem.a_scale, call.problem.b_scale) == ("none", "plain")
    assert_mx_close(d, a, b)


@pytest.mark.filterwarnings("ignore:.*hazards NOT checked")     # gfx950's profile has no MFMA pass counts yet
def test_triton_mx_kernel_passes_strict_emulation(selector):
    require_module("triton")
    rng = np.random.default_rng(3)
    a = _random_scales(mx.quantize_mx(rng.standard_normal((64, 256)), "fp4"), rng, extremes=False).shuffle()
    b = _random_scales(mx.weights(rng.standard_normal((64, 256)), "fp8_e4m3"), rng, extremes=False)
    d, _, _ = _run(selector, a, b, strict=True)
    assert_mx_close(d, a, b)


def test_default_matmul_runs_mx_on_gfx950_without_use_triton():
    require_module("triton")
    rng = np.random.default_rng(5)
    a = _random_scales(mx.quantize_mx(rng.standard_normal((33, 64)), "fp8_e5m2"), rng, extremes=False)
    b = _random_scales(mx.weights(rng.standard_normal((17, 64)), "fp4"), rng, extremes=False)
    d = jitgemm.matmul(a, b, arch="gfx950", backend="emu")
    assert jitgemm.last_launch().kernel_source.split(":")[0] in ("triton", "jitgemm-asm", "jitgemm-llvm")
    assert_mx_close(d, a, b)


# --- contract, packing, explain --------------------------------------------------------------------------
def _triton_candidate(problem):
    require_module("triton")
    return TritonSupplier(mx_variants=("generic",)).candidates(problem, "gfx950")[0]


def test_contract_names_the_scale_and_weight_layout_clauses():
    plain = GemmProblem.make(64, 64, 256, "fp4", "fp4", a_scale="plain", b_scale="plain")
    cand = _triton_candidate(plain)
    op = cand.contract.data["operation"]
    assert (op["a"], op["b"], op["a_scale"], op["b_scale"], op["scale_block"], op["b_preshuffle"]) == \
        ("fp4", "fp4", "plain", "plain", 32, "none")
    assert cand.contract.admits(plain) == (True, "")
    cases = [(dict(b_scale="shuffled"), "operation.b_scale: kernel takes plain, problem has shuffled"),
             (dict(a_scale="none"), "operation.a_scale: kernel takes plain, problem has none"),
             (dict(b_preshuffle="16x16"), "operation.b_preshuffle: kernel takes none, problem has 16x16"),
             (dict(b="fp8_e4m3"), "operation.a/b: kernel takes fp4xfp4, problem is fp4xfp8_e4m3")]
    for change, why in cases:
        fields = {"a": "fp4", "b": "fp4", "a_scale": "plain", "b_scale": "plain", **change}
        other = GemmProblem.make(64, 64, 256, **fields)
        assert cand.contract.admits(other) == (False, why)


def test_mx_arguments_pack_by_role_in_bytes_as_the_metadata_lays_them_out():
    """Triton's own argument order, mapped by roles: the packed segment equals the metadata's layout of the same
    values, and the strides are bytes (fp4 lda = K/2, scale ld = blocks per row)."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.codeobj.launch import LaunchDescription, pack_kernargs

    from jitgemm.packing import ordered_args, pack_segment

    rng = np.random.default_rng(6)
    a = mx.quantize_mx(rng.standard_normal((40, 192)), "fp4")
    b = mx.weights(rng.standard_normal((24, 192)), "fp8_e5m2").shuffle()
    call = prepare(a, b, out_dtype=ml_dtypes.bfloat16)
    cand = _triton_candidate(call.problem)
    contract = cand.contract
    assert contract.data["abi"]["strides_in"] == "bytes"
    blob, name = cand.load()
    kernel = codeobj.read(blob).kernel(name)
    address = {}

    def pointer_of(value, index):
        return address.setdefault(id(value), 0x10000 * (len(address) + 1))

    args = ordered_args(contract, call.values)
    by_name = {arg["name"]: value for arg, value in zip(sorted(contract.args, key=lambda x: x["offset"]), args,
                                                        strict=True)}
    assert (by_name["lda"], by_name["ldb"], by_name["ldd"]) == (96, 192, 24 * 2)
    assert (by_name["ld_a_scale"], by_name["ld_b_scale"]) == (6, 8)   # plain 192/32; shuffled: padded to 8
    assert by_name["a_scale_ptr"] is call.values["a_scale"] and by_name["b_scale_ptr"] is call.values["b_scale"]
    desc = LaunchDescription.make(name, (1, 1, 1), (256, 1, 1), args)
    meta = pack_kernargs(kernel.args, desc, segment_size=kernel.metadata[".kernarg_segment_size"],
                         pointer_of=pointer_of)
    packed = pack_segment(contract, call.values, pointer_of)
    assert bytes(meta[:len(packed)]) == packed


def test_explain_lists_every_generator_and_names_refusals(every_supplier):
    require_module("triton")
    selector = every_supplier
    p = GemmProblem.make(100, 90, 256, "fp4", "fp8_e4m3", a_scale="plain", b_scale="shuffled")
    text = selector.explain(p)
    assert "a_scale=plain b_scale=shuffled scale_block=32 b_preshuffle=none" in text.splitlines()[0]
    rows = {line.split()[1]: line for line in text.splitlines()[2:]}
    assert set(rows) == {"triton", "jitgemm-asm", "jitgemm-llvm"}
    assert "selected" in text
    for gen in ("jitgemm-asm", "jitgemm-llvm"):      # until their MX lowerings land: refused with the reason
        assert "kept" in rows[gen] or "refused:" in rows[gen]
    # a generator that plans a scaled OCP fp8 problem as an unscaled GEMM (its kernel would drop the scales) is
    # refused, never selected
    fp8 = GemmProblem.make(64, 64, 128, "fp8_e4m3", "fp8_e4m3", a_scale="plain", b_scale="plain")
    for v in selector.evaluate(fp8):
        assert v.legal == ("refused" not in v.reason)
        if "unscaled GEMM" in v.reason:
            assert v.candidate.supplier in ("jitgemm-asm", "jitgemm-llvm")
    fp6 = GemmProblem.make(64, 64, 128, "fp6_e2m3", "fp4", a_scale="plain", b_scale="plain")
    triton_row = next(line for line in selector.explain(fp6).splitlines() if line.split()[1:2] == ["triton"])
    assert "refused" in triton_row and "tl.dot_scaled does not take fp6_e2m3 x fp4" in triton_row


@pytest.mark.parametrize("fa,fb,scales,preshuffle", [("fp4", "fp4", "plain", False),
                                                      ("fp8_e4m3", "fp4", "shuffled", False),
                                                      ("fp6_e2m3", "fp8_e5m2", "plain", True),
                                                      ("bf16", "fp4", "shuffled", False)])
def test_every_supplier_that_keeps_a_kernel_agrees_with_numpy(every_supplier, fa, fb, scales, preshuffle):
    """Direct, LLVM and Triton side by side: each supplier either refuses the problem with its reason or its best
    legal kernel equals numpy float64 (so our kernels agree with Triton's dot_scaled ones where both run). Triton
    must run every format it takes; fp6 is refused by Triton 3.9 and runs on the generators that lower it."""
    require_module("triton")
    rng = np.random.default_rng(zlib.crc32(f"{fa}{fb}{scales}".encode()))
    m, n, k = 52, 48, 256
    weight_only = fa == "bf16"
    a = _operand(fa, (m, k), 1, rng)
    if not weight_only:
        a = _random_scales(a, rng, extremes=True)
    b = _random_scales(_operand(fb, (k, n), 0, rng), rng, extremes=True, top=0 if weight_only else 6,
                       big=127 if weight_only else 254)
    if scales == "shuffled":
        a = a if weight_only else a.shuffle()
        b = b.shuffle()
    if preshuffle:
        b = b.shuffle(scales=scales == "shuffled", weight=True)
    problem = prepare(a, b).problem
    ran, refused = set(), set()
    for v in every_supplier.evaluate(problem):
        supplier = v.candidate.supplier
        if not v.legal:
            if v.reason.startswith("refused"):
                refused.add(supplier)
            continue
        if supplier in ran:
            continue
        call = prepare(a, b)                        # a fresh, NaN-poisoned output for each kernel
        blob, name = v.candidate.load()
        assert_mx_close(launch(call, blob, name, v.candidate.contract), a, b,
                        2.0 ** -8 if call.problem.d.name == "bf16" else 0.0)
        ran.add(supplier)
    assert ran | refused == {"jitgemm-asm", "jitgemm-llvm", "triton"} and not ran & refused
    assert ("triton" in ran) == (fa in TritonSupplier.MX_FORMATS and fb in TRITON_MX)


def test_triton_div16_variant_is_legal_only_for_16_multiples_and_ranks_first(tmp_path):
    """Triton's launch specialization as a second candidate: its contract says what tt.divisibility 16 promises
    (sizes, 16-byte leading dimensions and pointers), the selector prefers it where legal, and it computes the
    same product."""
    require_module("triton")
    sel = Selector([TritonSupplier()], target="gfx950", quarantine=Quarantine(tmp_path / "q.json"))
    rng = np.random.default_rng(12)
    a = _random_scales(mx.quantize_mx(rng.standard_normal((64, 256)), "fp4"), rng, extremes=True)
    b = _random_scales(mx.weights(rng.standard_normal((48, 256)), "fp8_e4m3"), rng, extremes=False).shuffle()
    d, call, source = _run(sel, a, b)
    assert source == "triton:64x64x128/div16"
    assert_mx_close(d, a, b)
    odd = GemmProblem.make(70, 48, 256, "fp4", "fp8_e4m3", a_scale="plain", b_scale="shuffled")
    verdicts = {v.candidate.label: v for v in sel.evaluate(odd, call.align)}
    assert verdicts["64x64x128"].legal
    assert verdicts["64x64x128/div16"].reason == "legality.divisible.m: m=70 is not a multiple of 16"
    def div16(problem, align):
        return next(v for v in sel.evaluate(problem, align) if v.candidate.label.endswith("/div16"))

    k240 = GemmProblem.make(64, 48, 240, "fp4", "fp8_e4m3", a_scale="plain", b_scale="shuffled")
    assert div16(k240, call.align).reason == "legality.ld_multiple.a: lda=240 is not a multiple of 32"  # 120 B
    assert div16(call.problem, {**call.align, "a_scale": 8}).reason == \
        "legality.align_bytes.a_scale: pointer a_scale is 8-byte aligned, kernel needs 16"


def test_epilogue_the_triton_kernel_lacks_is_refused_by_clause(selector):
    require_module("triton")
    from jitgemm.selector import SelectionError

    a = mx.quantize_mx(RNG.standard_normal((16, 64)), "fp4")
    b = mx.weights(RNG.standard_normal((24, 64)), "fp4")
    call = prepare(a, b, bias=np.ones(24, np.float32), activation="relu")
    with pytest.raises(SelectionError, match=r"triton:64x64x128: features.bias: bias n not in \['none'\]"):
        selector.select(call.problem, call.align)


def test_cli_select_explain_mx(capsys):
    require_module("triton")
    from jitgemm.cli import main

    assert main(["select", "--m", "70", "--n", "64", "--k", "128", "--dtype", "fp4", "--a-scale", "plain",
                 "--b-scale", "plain", "--arch", "gfx950", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "layout=NT" in out and "a_scale=plain" in out
    assert any(line.split()[1:2] == ["triton"] and "kept" in line for line in out.splitlines())


def test_scale_and_weight_layouts_are_part_of_the_kernel_class_text():
    """The IR text (cache keys, kernel names) names the layouts: kernels for plain and shuffled scales, or plain
    and pre-shuffled B, never share a cache entry; the text parses back to the same problem."""
    from jitgemm.codegen.gemm_ir import GemmConfig
    from jitgemm.codegen.gemm_text import format_ir, parse
    from jitgemm.codegen.kernel_abi import kernel_name

    config = GemmConfig(64, 64, 128, 2, 2, "V_MFMA_SCALE_F32_16X16X128_F8F6F4")
    variants = [dict(a_scale="plain", b_scale="plain"), dict(a_scale="shuffled", b_scale="plain"),
                dict(a_scale="plain", b_scale="shuffled"), dict(a_scale="plain", b_scale="plain", b_preshuffle="16x16"),
                dict(a_scale="none", b_scale="plain")]
    texts, names = set(), set()
    for fields in variants:
        p = GemmProblem.make(64, 64, 256, "fp8_e4m3", "fp4", **fields)
        assert parse(format_ir(p, config)) == (p, config)
        texts.add(format_ir(p.kernel_class(), config))
        names.add(kernel_name(p, config))
    assert len(texts) == len(names) == len(variants)
    plain = GemmProblem.make(64, 64, 64, "bf16")
    assert "scale" not in format_ir(plain)        # unscaled problems keep their text (and cached kernels)


# --- errors ---------------------------------------------------------------------------------------------
def test_errors_name_the_argument_and_what_is_accepted():
    rng = np.random.default_rng(8)
    a = mx.quantize_mx(rng.standard_normal((16, 64)), "fp4")
    b = mx.weights(rng.standard_normal((8, 64)), "fp4")
    cases = [
        (lambda: prepare(a, mx.weights(rng.standard_normal((8, 96)), "fp4")), "inner dimensions 64 and 96"),
        (lambda: prepare(a, mx.quantize_mx(rng.standard_normal((64, 8)), "fp4", axis=1)),
         r"b: .*must be quantized along K \(axis 0\).*jitgemm.mx.weights"),
        (lambda: prepare(mx.quantize_mx(rng.standard_normal((16, 64)), "fp4", axis=0), b), "a: .*axis 1"),
        (lambda: prepare(mx.quantize_mx(rng.standard_normal((16, 64)), "fp4", block=16), b),
         "a: block 16.*block=32"),
        (lambda: prepare(a.shuffle(scales=False, weight=True), b), "a: data_layout 16x16.*B only"),
        (lambda: prepare(a, rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16)),
         r"b: a bf16 array beside an MX a.*\(b.T @ a.T\).T"),
        (lambda: prepare(mx.quantize_mx(rng.standard_normal((2, 16, 64)), "fp4"), b), "a: MX operands are 2-D"),
        (lambda: jitgemm.matmul(a, b, arch="gfx942", backend="emu"), "gfx950"),
    ]
    for run, match in cases:
        with pytest.raises(MatmulError, match=match):
            run()


def test_cli_select_refuses_mx_in_a_layout_other_than_nt(capsys):
    from jitgemm.cli import main

    assert main(["select", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp4", "--a-scale", "plain",
                 "--b-scale", "plain", "--layout", "TN", "--arch", "gfx950"]) == 2
    err = capsys.readouterr().err
    assert "accepted: NT" in err and "Traceback" not in err
    # an explicit NN is the user's word too (it was read as "not given" and silently replaced by NT)
    assert main(["select", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp4", "--a-scale", "plain",
                 "--b-scale", "plain", "--layout", "NN", "--arch", "gfx950"]) == 2
    assert "accepted: NT" in capsys.readouterr().err
