"""MX GEMM operands for the generators' tests: random element codes and E8M0 scales (with the extremes 2^-127 and
2^127 and NaN), stored in the problem's layouts (plain or pre-shuffled scales, plain or 16x16 pre-shuffled B), with
garbage (NaN codes, NaN scales) in every byte the kernel must not use (row padding past K, scale columns past
ceil(K/32)); the numpy float64 reference on the dequantized values; and a launch through the contract.

Tolerance: products of MX elements are exact in fp32 (at most 2 x 4 mantissa bits) and the scales are powers of
two, so the only rounding is the fp32 accumulation: |D - ref| <= 1e-5 * (|A| @ |B|) per element (a few fp32 ulps
per MFMA step), plus for bf16 / fp16 output one rounding of the result: 2^-8 / 2^-10 of |ref| (and a denormal
step). Weight-only B is dequantized to A's 16-bit type exactly (every MX value times a power of two the tests keep
in that type's range)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import mx

ACC_RTOL = 1e-5                                          # fp32 accumulation, of sum |products|
OUT_RTOL = {"fp32": 0.0, "bf16": 2.0 ** -8, "fp16": 2.0 ** -10}   # the output's rounding, of |result|
OUT_ATOL = {"fp32": 2.0 ** -149, "bf16": 2.0 ** -133, "fp16": 2.0 ** -24}   # ... and its smallest denormal step


@dataclass
class MxOperands:
    values: dict
    d: np.ndarray
    want: np.ndarray
    bound: np.ndarray       # sum of |products| per element (the accumulation error scale)


def _codes(rng: np.random.Generator, fmt: str, shape: tuple[int, int]) -> np.ndarray:
    bits = mx.FORMATS[fmt].bits
    codes = rng.integers(0, 1 << bits, size=shape, dtype=np.uint16).astype(np.uint8)
    vals = mx.codes_to_float(codes, fmt)
    return np.where(np.isfinite(vals), codes, 0).astype(np.uint8)


def _store_rows(codes: np.ndarray, fmt: str, ld: int) -> np.ndarray:
    """Rows of `ld` elements (codes past the row's K are garbage: NaN codes for fp8, all-ones otherwise), packed."""
    rows, k = codes.shape
    bits = mx.FORMATS[fmt].bits
    full = np.full((rows, ld), (1 << bits) - 1, np.uint8)
    full[:, :k] = codes
    if bits == 4:
        return mx.pack_fp4(full)
    if bits == 6:
        return mx.pack_fp6(full)[:, : ld * 6 // 8]
    return full


def _scales(rng: np.random.Generator, rows: int, blocks: int, narrow: bool) -> np.ndarray:
    """Random E8M0 codes around 2^0 (narrow: 2^-15..2^-3, so fp16 outputs stay finite)."""
    lo, hi = (112, 125) if narrow else (120, 135)
    return rng.integers(lo, hi, size=(rows, blocks)).astype(np.uint8)


def _one(p: GemmProblem, rng: np.random.Generator, extremes: bool, nans: bool):
    """One batch entry: (stored A, stored B, {op: stored scales}, reference A @ B^T, sum |products|)."""
    nb = -(-p.k // p.scale_block)
    wo = p.weight_only
    ca = rng.standard_normal((p.m, p.k)).astype(p.a.numpy) if wo else _codes(rng, p.a.name, (p.m, p.k))
    cb = _codes(rng, p.b.name, (p.n, p.k))
    narrow = p.d.name == "fp16" or p.a.name == "fp16"
    sa, sb = _scales(rng, p.m, nb, narrow), _scales(rng, p.n, nb, narrow)
    if extremes and wo and p.a.name == "bf16" and p.d.name != "fp16":
        # B is dequantized to bf16 (weight-only): 2^-127 and, as large as bf16 holds for every B code, 2^100
        sb[:2, 0] = (227, 0)[: p.n]
    if extremes and p.a_scale != "none" and p.b_scale != "none" and p.d.name != "fp16":
        # (fp16 output: 2^127-scaled rows would overflow it; NaN scales are tested below in every case)
        # block 0: A rows 0/1 at 2^127 / 2^-127, every B column small enough that the products stay in fp32;
        # block 1 the same with the sides swapped; NaN in one A row (last block) and one B column (block 0)
        sa[:2, 0] = (254, 0)[: p.m]
        sb[:, 0] = rng.integers(40, 60, size=p.n)
        if nb > 1:
            sb[:2, 1] = (254, 0)[: p.n]
            sa[:, 1] = rng.integers(40, 60, size=p.m)
    if nans and p.a_scale != "none" and p.m > 2:
        sa[2, nb - 1] = mx.E8M0_NAN
    if nans and p.b_scale != "none" and p.n > 2:
        sb[2, 0] = mx.E8M0_NAN
    deq_a = ca.astype(np.float64) if wo else mx.codes_to_float(ca, p.a.name)
    deq_b = mx.codes_to_float(cb, p.b.name)
    if p.a_scale != "none":
        deq_a = deq_a * np.repeat(mx.e8m0_to_float(sa), p.scale_block, axis=1)[:, : p.k]
    if p.b_scale != "none":
        deq_b = deq_b * np.repeat(mx.e8m0_to_float(sb), p.scale_block, axis=1)[:, : p.k]
    with np.errstate(invalid="ignore", over="ignore"):
        want = deq_a @ deq_b.T
        bound = np.abs(np.nan_to_num(deq_a)) @ np.abs(np.nan_to_num(deq_b)).T
    lda, ldb = p.lead["a"], p.lead["b"]
    if wo:                             # 16-bit rows, NaN past K
        a_store = np.full((p.m, lda), np.nan, p.a.numpy)
        a_store[:, : p.k] = ca
    else:
        a_store = _store_rows(ca, p.a.name, lda)
    b_store = _store_rows(cb, p.b.name, ldb)
    if p.b_preshuffle == "16x16":
        b_store = mx.shuffle_weight(b_store)
    scales = {}
    for op, sc in (("a", sa), ("b", sb)):
        layout = getattr(p, f"{op}_scale")
        if layout == "plain":          # two garbage (NaN) columns past ceil(K/32)
            stored = np.full((sc.shape[0], nb + 2), mx.E8M0_NAN, np.uint8)
            stored[:, :nb] = sc
        elif layout == "shuffled":
            stored = mx.shuffle_scales(sc)
        else:
            continue
        scales[op] = stored
    return a_store, b_store, scales, want, bound


def make_operands(problem: GemmProblem, seed: int = 0, extremes: bool = True, nans: bool = True) -> MxOperands:
    """Operands and reference of an MX problem (every batch entry its own data; C, bias and the activation as
    the problem says: C fp32 when the problem has one, bias float32)."""
    p = problem
    rng = np.random.default_rng(seed)
    parts = [_one(p, rng, extremes, nans) for _ in range(p.batch)]
    flat = lambda xs: np.concatenate([x.reshape(-1) for x in xs])  # noqa: E731
    a_store, b_store = parts[0][0], parts[0][1]
    values = {"a": flat([x[0] for x in parts]), "b": flat([x[1] for x in parts]), "c": None, "bias": None,
              "m": p.m, "n": p.n, "k": p.k, "batch": p.batch, "lda": p.lead["a"], "ldb": p.lead["b"], "ldc": p.n,
              "ldd": p.n, "stride_a": p.m * p.lead["a"], "stride_b": p.n * p.lead["b"], "stride_c": p.m * p.n,
              "stride_d": p.m * p.n, "alpha": p.alpha, "beta": p.beta, "a_scale": None, "b_scale": None,
              "ld_a_scale": 0, "ld_b_scale": 0, "stride_a_scale": 0, "stride_b_scale": 0}
    assert a_store.size * a_store.itemsize * 8 == p.m * p.lead["a"] * p.a.bits
    assert b_store.size * 8 == p.n * p.lead["b"] * p.b.bits
    for op in parts[0][2]:
        stored = parts[0][2][op]
        values[f"{op}_scale"] = flat([x[2][op] for x in parts])
        values[f"ld_{op}_scale"] = stored.shape[1]
        values[f"stride_{op}_scale"] = stored.size
    want = p.alpha * np.stack([x[3] for x in parts])
    bound = abs(p.alpha) * np.stack([x[4] for x in parts])
    if p.c is not None:
        c = rng.standard_normal((p.batch, p.m, p.n)).astype(np.float32) * np.float32(1000)
        values["c"] = c.reshape(-1)
        want = want + p.beta * c
        bound = bound + abs(p.beta) * np.abs(c)
    if p.bias != "none":
        bias = rng.standard_normal(p.m if p.bias == "m" else p.n).astype(np.float32) * np.float32(1000)
        values["bias"] = bias
        want = want + (bias[None, :, None] if p.bias == "m" else bias[None, None, :])
        bound = bound + np.abs(bias[None, :, None] if p.bias == "m" else bias[None, None, :])
    if p.activation == "relu":
        want = np.maximum(want, 0.0)
    shape = (p.batch, p.m, p.n) if p.batch > 1 else (p.m, p.n)
    d = np.full(shape, np.nan, dtype=p.d.numpy)       # poison: every element must be written
    values["d"] = d.reshape(-1)
    return MxOperands(values, d, want.reshape(shape), bound.reshape(shape))


def check_mx(problem: GemmProblem, got: np.ndarray, ops: MxOperands) -> None:
    """NaN exactly where numpy has NaN; elsewhere within the accumulation bound (module docstring)."""
    got64 = np.asarray(got, np.float64)
    want = ops.want
    assert (np.isnan(got64) == np.isnan(want)).all(), \
        f"NaN at {np.argwhere(np.isnan(got64) != np.isnan(want))[:5].tolist()} (got vs numpy)"
    ok = ~np.isnan(want)
    err = np.abs(got64[ok] - want[ok])
    lim = ACC_RTOL * ops.bound[ok] + OUT_RTOL[problem.d.name] * np.abs(want[ok]) + OUT_ATOL[problem.d.name]
    bad = err > lim
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements off; worst at "
                           f"{np.argwhere(ok)[np.argmax(err / lim)].tolist()}: got {got64[ok][np.argmax(err / lim)]}, "
                           f"want {want[ok][np.argmax(err / lim)]}")


def run_mx(problem: GemmProblem, config=None, seed: int = 0, strict: bool = False, lda_pad: int = 0,
           ldb_pad: int = 0, generator: str = "asm", nans: bool = True):
    """Compile (direct generator unless told), launch through the contract in the emulator, check."""
    from dataclasses import replace

    from jitgemm.codegen.generator import generator as gen_of

    from jitgemm.api import GemmCall, launch
    from jitgemm.contract import Contract

    if lda_pad or ldb_pad:
        problem = replace(problem, lda=problem.k + lda_pad if lda_pad else None,
                          ldb=problem.k + ldb_pad if ldb_pad else None)
        problem.validate()
    compiled = gen_of(generator).compile(problem, config, target="gfx950")
    ops = make_operands(problem, seed, nans=nans)
    call = GemmCall(problem, ops.values, ops.d, {"a": 16, "b": 16, "c": 16, "bias": 16})
    got = launch(call, compiled.code_object, compiled.name, Contract.load(compiled.contract), backend="emu",
                 strict=strict)
    check_mx(problem, got, ops)
    return compiled
