"""The LLVM generator's block-scaled (MX) GEMMs on gfx950, run in the emulator, equal numpy float64 on the
dequantized values.

Inputs are random element codes (every code of fp4/fp6, normal-distributed fp8 values) and random E8M0 scales in
[117, 137], plus the extremes and NaN: one K block carries 2^127 (code 254) on some rows of A against 2^-127
(code 0, a register byte 0: not "no scale") on every column of B, another the reverse, so the products stay in
range while both extremes go through the MFMA's scale operands; one row of A and one column of B get a NaN scale
(0xFF) in a real block. Outputs are poisoned with NaN before the launch.

Tolerance (stated per output dtype): products of MX elements times powers of two are exact, so the only error is
fp32 accumulation (one rounding per MFMA and per accumulate): |got - ref| <= 1e-5 * (|A| @ |B|^T) for fp32 out;
plus the output's own rounding for bf16 (2^-8 |ref|) and fp16 (2^-11 |ref|). NaN exactly where numpy has NaN.
Sizes are not multiples of the tile (64x64) nor of the K step (128/256), so M/N tails and the masked K tail run.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import MX_PAIRS, GemmConfig, GemmProblem, IRError

from jitgemm import mx
from tests.fixtures.oracles import require_module, require_tool

OUT_RTOL = {"fp32": 0.0, "bf16": 2.0**-8, "fp16": 2.0**-11}
ACC_RTOL = 1e-5
MFMA16, MFMA32 = "V_MFMA_SCALE_F32_16X16X128_F8F6F4", "V_MFMA_SCALE_F32_32X32X64_F8F6F4"


@pytest.fixture(autouse=True, scope="module")
def _llvmlite():
    require_module("llvmlite")


def _lead(fmt: str, k: int) -> int:
    """Leading dimension (elements) of a packed row: rows start on a byte (fp6: 4 codes per 3 bytes)."""
    bits = mx.FORMATS[fmt].bits if fmt in mx.FORMATS else 16
    unit = {4: 2, 6: 4}.get(bits, 1)
    return -(-k // unit) * unit


def _codes(rng, fmt: str, rows: int, k: int) -> np.ndarray:
    f = mx.FORMATS[fmt]
    if f.bits < 8:
        return rng.integers(0, 1 << f.bits, (rows, k), dtype=np.uint8)
    vals = rng.standard_normal((rows, k)) * 2.0
    return vals.astype(f.dtype).view(np.uint8)


def _pack(codes: np.ndarray, fmt: str, lead: int) -> np.ndarray:
    padded = np.zeros((codes.shape[0], lead), np.uint8)
    padded[:, :codes.shape[1]] = codes
    bits = mx.FORMATS[fmt].bits
    return mx.pack_fp4(padded) if bits == 4 else mx.pack_fp6(padded) if bits == 6 else padded


def _scales(rng, rows: int, k: int, lo: int = 117, hi: int = 138) -> np.ndarray:
    return rng.integers(lo, hi, (rows, -(-k // 32)), dtype=np.uint8)


def _extremes(sa: np.ndarray, sb: np.ndarray, rng) -> tuple[int, int]:
    """2^127 x 2^-127 in one block, 2^-127 x 2^127 in another; a NaN scale in one real block of a row of A and
    of a column of B. Returns (NaN row, NaN column)."""
    blocks = sa.shape[1]
    hi, lo = 0, blocks - 1
    rows = rng.choice(sa.shape[0], size=max(1, sa.shape[0] // 3), replace=False)
    sa[rows, hi] = 254          # these rows x every column: 2^127 * 2^-127; the other rows' products are tiny
    sb[:, hi] = 0
    if blocks > 1:
        cols = rng.choice(sb.shape[0], size=max(1, sb.shape[0] // 3), replace=False)
        sa[:, lo] = 0
        sb[cols, lo] = 254
    nan_row, nan_col = int(rng.integers(sa.shape[0])), int(rng.integers(sb.shape[0]))
    sa[nan_row, int(rng.integers(blocks))] = 0xFF
    sb[nan_col, int(rng.integers(blocks))] = 0xFF
    return nan_row, nan_col


def _dequant(codes: np.ndarray, fmt: str, scales: np.ndarray | None) -> np.ndarray:
    vals = mx.codes_to_float(codes, fmt)
    if scales is None:
        return vals
    return vals * np.repeat(mx.e8m0_to_float(scales), 32, axis=1)[:, :codes.shape[1]]


def expect(problem: GemmProblem, got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """got == a @ b.T (float64 inputs, NaN allowed) within the module docstring's tolerance."""
    with np.errstate(invalid="ignore"):
        ref = np.nan_to_num(a, nan=0.0) @ np.nan_to_num(b, nan=0.0).T
        bound = np.abs(np.nan_to_num(a, nan=0.0)) @ np.abs(np.nan_to_num(b, nan=0.0)).T
    nan = np.isnan(a).any(axis=1)[:, None] | np.isnan(b).any(axis=1)[None, :]
    ref = np.where(nan, np.nan, ref)
    g = got.astype(np.float64)
    assert (np.isnan(g) == nan).all(), (f"NaN at {np.argwhere(np.isnan(g) != nan)[:5].tolist()} differs from numpy "
                                        f"({int(nan.sum())} NaN expected, {int(np.isnan(g).sum())} got)")
    assert np.isfinite(g[~nan]).all(), "an element numpy has finite is not"
    tol = ACC_RTOL * bound + OUT_RTOL[problem.d.name] * np.abs(ref)
    err = np.where(nan, 0.0, np.abs(g - ref))
    bad = err > np.where(nan, 1.0, tol)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}: got "
                           f"{g[tuple(np.argwhere(bad)[0])]}, numpy {ref[tuple(np.argwhere(bad)[0])]}")


def run_mx(problem: GemmProblem, kernel, a_bytes, b_bytes, a_scales, b_scales, *, strict: bool = False,
           batch_strides: tuple[int, int, int, int] = (0, 0, 0, 0), c: np.ndarray | None = None,
           bias: np.ndarray | None = None) -> np.ndarray:
    """Launch an MX kernel in the emulator with the kernel ABI's values (kernel_abi.kernargs roles)."""
    from jitgemm.api import GemmCall, launch
    from jitgemm.contract import Contract

    p = problem
    out = np.full((p.batch, p.m, p.n) if p.batch > 1 else (p.m, p.n), np.nan, p.d.numpy)
    sa, sb, ssa, ssb = batch_strides
    values = {"a": a_bytes.reshape(-1), "b": b_bytes.reshape(-1), "c": None if c is None else c.reshape(-1),
              "d": out.reshape(-1), "bias": bias, "m": p.m, "n": p.n, "k": p.k, "batch": p.batch,
              "lda": p.lead["a"], "ldb": p.lead["b"], "ldc": p.n, "ldd": p.n, "stride_a": sa, "stride_b": sb,
              "stride_c": 0, "stride_d": p.m * p.n, "alpha": p.alpha, "beta": p.beta,
              "a_scale": None if a_scales is None else a_scales.reshape(-1),
              "b_scale": None if b_scales is None else b_scales.reshape(-1),
              "ld_a_scale": 0 if a_scales is None else a_scales.shape[-1],
              "ld_b_scale": 0 if b_scales is None else b_scales.shape[-1],
              "stride_a_scale": ssa, "stride_b_scale": ssb}
    call = GemmCall(p, values, out, {"a": 16, "b": 16, "c": 16, "bias": 16})
    return launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu",
                  strict=strict)


def mx_case(fa: str, fb: str, m: int, n: int, k: int, *, a_scale: str = "plain", b_scale: str = "plain",
            pre: str = "none", d: str = "fp32", config: GemmConfig | None = None, seed: int = 0,
            extremes: bool = True, strict: bool = False):
    from jitgemm.codegen.llvm import compile_gemm_llvm

    rng = np.random.default_rng(seed)
    problem = GemmProblem.make(m, n, k, fa, fb, d, a_scale=a_scale, b_scale=b_scale, b_preshuffle=pre,
                               lda=_lead(fa, k), ldb=_lead(fb, k))
    kernel = compile_gemm_llvm(problem, config, target="gfx950")
    assert kernel.lowered.scratch_bytes == 0, f"{kernel.name} spills ({kernel.lowered.scratch_bytes} bytes)"
    ca, cb = _codes(rng, fa, m, k), _codes(rng, fb, n, k)
    lo, hi = (124, 131) if d == "fp16" else (117, 138)
    sa = _scales(rng, m, k, lo, hi) if a_scale != "none" else None
    sb = _scales(rng, n, k, lo, hi) if b_scale != "none" else None
    if extremes and sa is not None and sb is not None:
        _extremes(sa, sb, rng)
    a_bytes, b_bytes = _pack(ca, fa, problem.lead["a"]), _pack(cb, fb, problem.lead["b"])
    if pre == "16x16":
        b_bytes = mx.shuffle_weight(b_bytes)
    stored = [None if s is None else (mx.shuffle_scales(s) if layout == "shuffled" else s)
              for s, layout in ((sa, a_scale), (sb, b_scale))]
    got = run_mx(problem, kernel, a_bytes, b_bytes, *stored, strict=strict)
    expect(problem, got, _dequant(ca, fa, sa), _dequant(cb, fb, sb))
    return kernel


# Every format pair once; the five layout combinations rotate as (ia + 2 ib) mod 5 over the pairs (ia, ib index the
# formats of A and B), so every format meets every layout on each side; both MFMA shapes and the three output
# dtypes rotate too.
LAYOUTS = [("plain", "plain", "none"), ("shuffled", "shuffled", "none"), ("plain", "plain", "16x16"),
           ("shuffled", "plain", "16x16"), ("plain", "shuffled", "16x16")]
FORMATS = list(mx.FORMATS)
CASES = []
for fa, fb in MX_PAIRS:
    ia, ib = FORMATS.index(fa), FORMATS.index(fb)
    sa, sb, pre = LAYOUTS[(ia + 2 * ib) % len(LAYOUTS)]
    big = (ia + ib) % 2 == 1
    config = GemmConfig(64, 64, 256 if "shuffled" in (sa, sb) else 128, 2, 1 if big else 2, MFMA32 if big else MFMA16,
                        prefetch=2 if (ia + ib) % 3 else 1)
    d = ("fp32", "bf16", "fp32", "fp16")[(3 * ia + ib) % 4]
    k = 200 + 9 * ia if pre == "none" else (384 if mx.FORMATS[fb].bits == 6 else 320)
    CASES.append(pytest.param(fa, fb, sa, sb, pre, d, config, k, id=f"{fa}x{fb}-{sa}-{sb}-B{pre}-{d}-"
                                                                   f"{config.mfma.split('_')[4]}"))


@pytest.mark.parametrize("fa, fb, a_scale, b_scale, pre, d, config, k", CASES)
def test_every_pair_equals_numpy(fa, fb, a_scale, b_scale, pre, d, config, k):
    mx_case(fa, fb, 40, 48 if pre == "16x16" else 45, k, a_scale=a_scale, b_scale=b_scale, pre=pre, d=d,
            config=config, seed=sum(map(ord, fa + fb + a_scale + pre)))


def test_short_k_tail_only_and_unscaled_side():
    """K < one step (only the masked step runs), K not a multiple of 32 (a partial last block), A without scales
    (its scale operand is 2^0 in a register)."""
    mx_case("fp8_e4m3", "fp4", 33, 17, 45, a_scale="none", seed=5)
    mx_case("fp6_e3m2", "fp8_e5m2", 20, 70, 37, seed=6)


@pytest.mark.parametrize("fa, fb, layout, k, prefetch", [
    ("fp4", "fp4", "plain", 1000, 2),          # 7 whole steps: 3 ping-pong iterations, the odd step, the tail
    ("fp8_e5m2", "fp4", "shuffled", 1100, 2),  # 4 whole steps of 256: 2 iterations, no odd step, the tail
    ("fp6_e2m3", "fp8_e4m3", "plain", 530, 1), # no prefetch: 4 iterations and the tail
])
def test_long_k(fa, fb, layout, k, prefetch):
    step = 256 if layout == "shuffled" else 128
    mx_case(fa, fb, 20, 40, k, a_scale=layout, b_scale=layout, config=GemmConfig(32, 64, step, 1, 2, MFMA16,
                                                                                  prefetch=prefetch), seed=k)


@pytest.mark.parametrize("fa, fb, pre", [("fp4", "fp6_e3m2", "none"), ("fp8_e5m2", "fp4", "16x16")])
def test_unscaled_sub_byte_takes_the_plans_unscaled_mfma(fa, fb, pre):
    """Sub-byte operands without scales: the shared plan picks the unscaled f8f6f4 MFMA (catalog), and the LLVM
    builder gets LLVM to select exactly it (constant-0 scale operands, llc-22 -mcpu=gfx950), not a scaled MFMA with
    2^0 in registers; = numpy."""
    kernel = mx_case(fa, fb, 40, 48, 320 if pre == "16x16" else 300, a_scale="none", b_scale="none", pre=pre,
                     seed=len(fa + fb))
    assert kernel.plan.mfma.name == "V_MFMA_F32_16X16X128_F8F6F4" and not kernel.plan.mfma.scaled
    asm = kernel.stages["amdgcn"]
    assert "v_mfma_f32_16x16x128_f8f6f4" in asm and "v_mfma_scale" not in asm


@pytest.mark.parametrize("shuffled", [False, True], ids=["plain", "shuffled-preshuffled"])
def test_strict_emulation(shuffled):
    """Waits, barriers and hazards checked as hardware needs them (jitgemm/emu/strict.py)."""
    if shuffled:
        mx_case("fp4", "fp4", 40, 32, 320, a_scale="shuffled", b_scale="shuffled", pre="16x16", strict=True, seed=8)
    else:
        mx_case("fp8_e4m3", "fp6_e2m3", 40, 33, 150, strict=True, seed=9)


def test_batched():
    from jitgemm.codegen.llvm import compile_gemm_llvm

    rng = np.random.default_rng(3)
    m, n, k = 20, 24, 100
    p = GemmProblem.make(m, n, k, "fp4", "fp8_e5m2", "fp32", a_scale="plain", b_scale="shuffled", batch=2)
    kernel = compile_gemm_llvm(p, target="gfx950")
    ca, cb = [_codes(rng, "fp4", m, k) for _ in range(2)], [_codes(rng, "fp8_e5m2", n, k) for _ in range(2)]
    sa, sb = [_scales(rng, m, k) for _ in range(2)], [_scales(rng, n, k) for _ in range(2)]
    a_bytes = np.stack([_pack(c, "fp4", k) for c in ca])
    b_bytes = np.stack(cb)
    b_sh = np.stack([mx.shuffle_scales(s) for s in sb])
    got = run_mx(p, kernel, a_bytes, b_bytes, np.stack(sa), b_sh,
                 batch_strides=(m * k, n * k, sa[0].size, b_sh[0].size))
    for z in range(2):
        expect(p, got[z], _dequant(ca[z], "fp4", sa[z]), _dequant(cb[z], "fp8_e5m2", sb[z]))


def test_epilogue_alpha_beta_bias_activation():
    """The LLVM generator's epilogue after the scaled MFMAs: D = relu(alpha * A @ B^T + beta * C + bias[n]), bf16
    out (tolerance: fp32 accumulation as above plus bf16 rounding of |D|)."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    rng = np.random.default_rng(17)
    m, n, k = 40, 45, 100
    p = GemmProblem.make(m, n, k, "fp4", "fp8_e5m2", "bf16", c="fp32", alpha=0.75, beta=-1.5, bias="n",
                         activation="relu", a_scale="plain", b_scale="shuffled")
    kernel = compile_gemm_llvm(p, target="gfx950")
    ca, cb = _codes(rng, "fp4", m, k), _codes(rng, "fp8_e5m2", n, k)
    sa, sb = _scales(rng, m, k, 122, 132), _scales(rng, n, k, 122, 132)
    c = rng.standard_normal((m, n)).astype(np.float32) * 64
    bias = rng.standard_normal(n).astype(np.float32) * 64
    got = run_mx(p, kernel, _pack(ca, "fp4", k), cb, sa, mx.shuffle_scales(sb), c=c, bias=bias).astype(np.float64)
    va, vb = _dequant(ca, "fp4", sa), _dequant(cb, "fp8_e5m2", sb)
    pre = 0.75 * (va @ vb.T) - 1.5 * c + bias
    want = np.maximum(pre, 0.0)
    tol = 0.75 * ACC_RTOL * (np.abs(va) @ np.abs(vb).T) + 2.0**-8 * np.abs(want) + 1e-6 * np.abs(c)
    assert (np.abs(got - want) <= tol).all(), float(np.max(np.abs(got - want) - tol))
    assert (got == 0).any() and (got > 0).any()    # relu cut some, kept others


@pytest.mark.parametrize("layout, pre", [("plain", "none"), ("shuffled", "16x16")])
def test_leading_dimensions_and_poisoned_padding(layout, pre):
    """lda/ldb beyond K and scale rows beyond ceil(K/32) entries (ld_x_scale): the padding holds NaN codes (fp8
    0xFF, E8M0 0xFF), so a kernel reading past a row's K or its blocks gives NaN where numpy has none."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    rng = np.random.default_rng(21)
    m, n, k = 40, 32, 160 if pre == "none" else 192
    lda, ldb = k + 16, (k + 10 if pre == "none" else k)   # pre-shuffled weights are packed (ldb = K)
    p = GemmProblem.make(m, n, k, "fp8_e4m3", "fp4", a_scale=layout, b_scale=layout, b_preshuffle=pre, lda=lda,
                         ldb=ldb)
    kernel = compile_gemm_llvm(p, target="gfx950")
    ca, cb = _codes(rng, "fp8_e4m3", m, k), _codes(rng, "fp4", n, k)
    a_bytes = np.full((m, lda), 0xFF, np.uint8)
    a_bytes[:, :k] = ca
    b_codes = np.full((n, ldb), 0xF, np.uint8)
    b_codes[:, :k] = cb
    b_bytes = mx.pack_fp4(b_codes)
    if pre == "16x16":
        b_bytes = mx.shuffle_weight(b_bytes)
    sa, sb = _scales(rng, m, k), _scales(rng, n, k)
    if layout == "plain":
        stored = []
        for s in (sa, sb):
            wide = np.full((s.shape[0], s.shape[1] + 3), 0xFF, np.uint8)
            wide[:, :s.shape[1]] = s
            stored.append(wide)
    else:
        stored = [mx.shuffle_scales(sa), mx.shuffle_scales(sb)]
    got = run_mx(p, kernel, a_bytes, b_bytes, *stored)
    expect(p, got, _dequant(ca, "fp8_e4m3", sa), _dequant(cb, "fp4", sb))


def test_contract_carries_llvm_figures_and_no_scratch():
    """The contract's registers are LLVM's own (the code object's AMDGPU metadata), no spills, the kernel ABI
    is kernel_abi.kernargs(problem) (compile.py checked LLVM's argument layout against it)."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.kernel_abi import kernarg_size, kernargs
    from jitgemm.codegen.llvm import compile_gemm_llvm

    p = GemmProblem.make(64, 64, 256, "fp8_e4m3", "fp4", a_scale="shuffled", b_scale="shuffled",
                         b_preshuffle="16x16")
    kernel = compile_gemm_llvm(p, target="gfx950")
    meta = codeobj.read(kernel.code_object).kernel(kernel.name).metadata
    tile = kernel.contract["tile"]
    assert tile["agprs"] == int(meta[".agpr_count"]) and tile["agprs"] > 0
    assert tile["vgprs"] + tile["agprs"] == int(meta[".vgpr_count"])
    assert tile["sgprs"] == int(meta[".sgpr_count"])
    assert tile["scratch"] == int(meta.get(".private_segment_fixed_size", 0)) == 0
    assert kernel.contract["abi"]["kernarg_size"] == kernarg_size(p) == 128
    assert [(a["name"], a["offset"]) for a in kernel.contract["abi"]["args"]] == [(x[0], x[1]) for x in kernargs(p)]
    assert kernel.contract["operation"]["a_scale"] == "shuffled"
    asm = kernel.stages["amdgcn"]
    mfmas = [line for line in asm.splitlines() if "v_mfma_scale_f32_16x16x128_f8f6f4" in line]
    assert mfmas and all("blgp:4" in line and "cbsz" not in line for line in mfmas)   # fp8 (cbsz 0) x fp4
    # one shuffled dword serves two row blocks (op_sel) and two K steps (op_sel_hi): all four byte choices occur
    assert {"op_sel:[1,1,0]" in line or "op_sel:[1,0,0]" in line for line in mfmas} == {True, False}
    assert any("op_sel_hi:[1,1,0]" in line for line in mfmas)


def test_refusals_name_the_problem():
    from jitgemm.codegen.llvm import compile_gemm_llvm

    p = GemmProblem.make(64, 64, 128, "fp4", "fp4", a_scale="plain", b_scale="plain")
    with pytest.raises(IRError, match="gfx950"):
        compile_gemm_llvm(p, target="gfx942")
    with pytest.raises(IRError, match="depth_k=128"):
        compile_gemm_llvm(GemmProblem.make(64, 64, 128, "fp4", "fp4", a_scale="shuffled", b_scale="plain"),
                          GemmConfig(64, 64, 128, 2, 2, MFMA16), target="gfx950")
    with pytest.raises(IRError, match="multiple of 32"):
        compile_gemm_llvm(GemmProblem.make(64, 64, 256, "fp4", "fp4", a_scale="shuffled", b_scale="plain"),
                          GemmConfig(64, 64, 256, 4, 1, MFMA16), target="gfx950")


@pytest.mark.parametrize("config, match", [
    (GemmConfig(64, 64, 128, 2, 2, MFMA16, unroll=2), "unroll=2"),
    (GemmConfig(64, 64, 128, 2, 2, MFMA16, vec_a=2), "vec_a/vec_b"),
    (GemmConfig(64, 64, 64, 2, 2, MFMA32), "depth_k=64: the LLVM MX path steps K by a multiple of 128"),
])
def test_llvm_limits_on_the_shared_plan(config, match):
    """The shared plan (validate_config) takes these configs (the direct generator compiles them); the LLVM MX
    lowering's own `accept` refuses them, naming the field."""
    from jitgemm.codegen.gemm_plan import validate_config
    from jitgemm.codegen.generator import generator

    from jitgemm import isa

    spec, profile = isa.load_spec("gfx950"), isa.target_profile("gfx950")
    p = GemmProblem.make(64, 64, 256, "fp8_e4m3", "fp4", a_scale="plain", b_scale="plain")
    assert validate_config(p, config, spec, profile).mx is not None
    with pytest.raises(IRError, match=match):
        generator("llvm").plan(p, config, spec, profile)


@pytest.mark.parametrize("fmt", list(mx.FORMATS))
def test_format_codes_and_register_counts_match_llvm_mc(fmt):
    """cbsz code and operand tuple size of each format as llvm-mc-22 -mcpu=gfx950 accepts them, and one register
    fewer refused (CDNA 4 ISA guide: 32 elements of `bits` bits per lane). Code and count are the ones the LLVM
    generator's plan carries (the shared plan's catalog MFMA)."""
    from jitgemm.codegen.generator import generator

    from jitgemm import isa

    tool = require_tool("llvm-mc-22")
    spec, profile, gen = isa.load_spec("gfx950"), isa.target_profile("gfx950"), generator("llvm")
    p = GemmProblem.make(64, 64, 128, fmt, "fp8_e4m3", a_scale="plain", b_scale="plain")
    plan = gen.plan(p, gen.choose_config(p, spec, profile), spec, profile)
    assert plan.mfma.name == MFMA16
    code, regs = plan.mfma.cbsz, plan.mfma.a_regs

    def assemble(count: int) -> subprocess.CompletedProcess:
        line = (f"v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:{3 + count}], v[20:27], v[0:3], v40, v41 "
                f"cbsz:{code}\n")
        return subprocess.run([tool, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-show-encoding"], input=line,
                              capture_output=True, text=True)

    ok = assemble(regs)
    assert ok.returncode == 0 and "v_mfma_scale_f32_16x16x128_f8f6f4" in ok.stdout, ok.stderr
    if code:
        assert f"cbsz:{code}" in ok.stdout
    bad = assemble(regs - 1)
    assert bad.returncode != 0 and "cbsz" in bad.stderr, bad.stdout


# --- weight-only: bf16/fp16 A x MX B ------------------------------------------------------------------------------
def wo_case(fa: str, fb: str, m: int, n: int, k: int, *, b_scale: str = "plain", d: str = "fp32", seed: int = 0,
            extremes: bool = True, strict: bool = False):
    """A's first 32-K block is scaled down (2^-100 in bf16, 2^-20 in fp16) where some columns of B carry 2^127,
    so the products stay in fp32's range; other columns get 2^-127 in the last block and one a NaN scale."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    rng = np.random.default_rng(seed)
    problem = GemmProblem.make(m, n, k, fa, fb, d, b_scale=b_scale, ldb=_lead(fb, k))
    kernel = compile_gemm_llvm(problem, target="gfx950")
    assert kernel.lowered.scratch_bytes == 0, f"{kernel.name} spills ({kernel.lowered.scratch_bytes} bytes)"
    a = rng.standard_normal((m, k))
    cb = _codes(rng, fb, n, k)
    sb = _scales(rng, n, k, 124, 131) if d == "fp16" else _scales(rng, n, k)
    if extremes:
        a[:, :32] *= 2.0 ** (-100 if fa == "bf16" else -20)
        cols = rng.choice(n, size=max(1, n // 3), replace=False)
        sb[cols, 0] = 254
        sb[rng.choice(n, size=max(1, n // 3), replace=False), -1] = 0
        sb[int(rng.integers(n)), int(rng.integers(sb.shape[1]))] = 0xFF
    a = a.astype(problem.a.numpy)
    b_bytes = _pack(cb, fb, problem.lead["b"])
    stored = mx.shuffle_scales(sb) if b_scale == "shuffled" else sb
    got = run_mx(problem, kernel, a, b_bytes, None, stored, strict=strict)
    expect(problem, got, a.astype(np.float64), _dequant(cb, fb, sb))
    return kernel


WO_CASES = [pytest.param(fa, fb, ("plain", "shuffled")[i % 2], ("fp32", "bf16")[i // 2 % 2], id=f"{fa}x{fb}")
            for i, (fa, fb) in enumerate((fa, fb) for fa in ("bf16", "fp16") for fb in mx.FORMATS)]


@pytest.mark.parametrize("fa, fb, b_scale, d", WO_CASES)
def test_weight_only_equals_numpy(fa, fb, b_scale, d):
    kernel = wo_case(fa, fb, 40, 45, 200 + 7 * len(fb), b_scale=b_scale, d=d, seed=len(fa + fb))
    asm = kernel.stages["amdgcn"]
    assert f"v_mfma_f32_16x16x32_{fa.replace('fp', 'f')}" in asm and "v_cvt_scalef32_pk" in asm


def test_weight_only_fp16_out_and_strict():
    wo_case("fp16", "fp4", 40, 33, 70, d="fp16", extremes=False, seed=4)
    wo_case("bf16", "fp8_e4m3", 33, 20, 150, b_scale="shuffled", strict=True, seed=2)


@pytest.mark.parametrize("fb", ["fp6_e2m3", "fp4"])
def test_weight_only_vgpr_count_keeps_llvm_out_of_scratch(fb):
    """The LLVM weight-only loop's own VGPR count (codegen/llvm/mx_plan.py, accumulators in VGPRs): shuffled scales
    need depth_k 256, where two fp6 register sets do not fit (LLVM 22 spilled 28 bytes to scratch), so the default
    takes one; fp4's two sets fit and stay. Every default compiles without scratch, and the refusal names the way
    out."""
    from jitgemm.codegen.generator import generator
    from jitgemm.codegen.llvm.mx_plan import WEIGHT_ONLY_RESERVE, weight_only_vgprs

    from jitgemm import isa

    spec, profile, gen = isa.load_spec("gfx950"), isa.target_profile("gfx950"), generator("llvm")
    p = GemmProblem.make(52, 48, 256, "bf16", fb, b_scale="shuffled", ldb=_lead(fb, 256))
    two_sets = GemmConfig(64, 64, 256, 2, 2, "V_MFMA_F32_16X16X32_BF16", prefetch=2)
    need = weight_only_vgprs(gen.plan(p, two_sets, spec, isa.target_profile("gfx950"))) if fb == "fp4" else None
    if fb == "fp6_e2m3":
        with pytest.raises(IRError, match="prefetch=1"):
            gen.plan(p, two_sets, spec, profile)
    else:
        assert need + WEIGHT_ONLY_RESERVE <= profile.arch_vgprs
    kernel = wo_case("bf16", fb, 52, 48, 256, b_scale="shuffled", seed=11)
    assert kernel.config.prefetch == (2 if fb == "fp4" else 1) and kernel.config.depth_k == 256
    assert kernel.lowered.scratch_bytes == 0


def test_weight_only_refuses_preshuffled_weights():
    from jitgemm.codegen.llvm import compile_gemm_llvm

    p = GemmProblem.make(64, 64, 128, "bf16", "fp4", b_scale="plain", b_preshuffle="16x16")
    with pytest.raises(IRError, match="b_preshuffle=16x16"):
        compile_gemm_llvm(p, target="gfx950")


def test_scale_layouts_are_part_of_the_kernel_text():
    """Kernel names and cache keys come from the IR text: plain and shuffled kernels must not share one, and the
    text reads back to the same problem."""
    from jitgemm.codegen.gemm_text import format_ir, parse
    from jitgemm.codegen.kernel_abi import kernel_name

    config = GemmConfig(64, 64, 256, 2, 2, MFMA16)
    texts, names = set(), set()
    for sa, sb, pre in (("plain", "plain", "none"), ("shuffled", "plain", "none"), ("plain", "shuffled", "16x16")):
        p = GemmProblem.make(64, 64, 256, "fp4", "fp4", a_scale=sa, b_scale=sb, b_preshuffle=pre)
        text = format_ir(p, config)
        assert parse(text)[0] == p and format_ir(*parse(text)) == text
        texts.add(text)
        names.add(kernel_name(p, config))
    assert len(texts) == len(names) == 3


@pytest.mark.parametrize("a, d, mfma", [("bf16", "bf16", "V_MFMA_F32_16X16X32_BF16"),
                                        ("fp16", "fp32", "V_MFMA_F32_32X32X16_F16"),
                                        ("int8", "int32", "V_MFMA_I32_16X16X64_I8"),
                                        ("fp8_e4m3", "fp32", "V_MFMA_F32_16X16X32_FP8_FP8")])
def test_gfx950_mfma_shapes_through_llvm(a, d, mfma):
    """The LLVM generator's unscaled path on gfx950's doubled-K MFMAs (8-element bf16/f16, 16-byte int8) and OCP
    fp8 = numpy (jitgemm.reference tolerances: fp32 2^-20, bf16 2^-7 relative plus fp32 summation; int32 exact)."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    from jitgemm.api import launch, prepare
    from jitgemm.contract import Contract
    from jitgemm.reference import check, operands, reference

    p = GemmProblem.make(70, 45, 100, a, d=d, layout="NT")
    kernel = compile_gemm_llvm(p, GemmConfig(64, 64, 64, 2, 2, mfma, prefetch=2), target="gfx950")
    assert mfma.lower() in kernel.stages["amdgcn"]
    x, y, c, bias = operands(p, 3)
    call = prepare(x, y, c, out_dtype=p.d.numpy)
    got = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu")
    check(p, got, reference(p, x, y, c, bias))
