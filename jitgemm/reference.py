"""Random operands for a GEMM problem, the float64 numpy reference, and the tolerance per output dtype:
what `jitgemm run`, `jitgemm qualify` and the tests use to judge a kernel."""

from __future__ import annotations

import numpy as np

from jitgemm.codegen.gemm_ir import GemmProblem

# Output rounding dominates: the kernels accumulate in fp32 (int32 for int8, exact), so a result may differ
# from the float64 reference by the rounding of D to its dtype plus fp32 summation error (~K ulps of fp32).
OUT_RTOL = {"fp32": 2.0**-20, "fp16": 2.0**-10, "bf16": 2.0**-7, "int32": 0.0}


def operands(problem: GemmProblem, seed: int = 0):
    """(a, b, c, bias) as the arrays `jitgemm.matmul` takes: views with the problem's layout and lds."""
    rng = np.random.default_rng(seed)
    p = problem

    def rand(shape, dt):
        if dt.kind == "int":
            return rng.integers(-9, 10, size=shape).astype(dt.numpy)
        return (rng.standard_normal(shape) * 1.5).astype(np.float32).astype(dt.numpy)

    def stored(rows, cols, ld, dt):
        full = rand(((p.batch,) if p.batch > 1 else ()) + (rows, ld), dt)
        return full[..., :cols]

    lead = p.lead
    a = stored(*p.a_shape, lead["a"], p.a)
    b = stored(*p.b_shape, lead["b"], p.b)
    if p.a_transposed:
        a = np.swapaxes(a, -1, -2)
    if p.b_transposed:
        b = np.swapaxes(b, -1, -2)
    c = stored(p.m, p.n, lead["c"], p.c) if p.c is not None else None
    bias = None
    if p.bias != "none":
        size = p.m if p.bias == "m" else p.n
        bias = (rng.integers(-50, 50, size=size).astype(np.int32) if p.acc.kind == "int"
                else rng.standard_normal(size).astype(np.float32))
    return a, b, c, bias


def reference(problem: GemmProblem, a, b, c, bias) -> np.ndarray:
    p = problem
    out = p.alpha * np.matmul(a.astype(np.float64), b.astype(np.float64))
    if c is not None and p.beta:
        out = out + p.beta * c.astype(np.float64)
    if bias is not None:
        vec = bias.astype(np.float64)
        out = out + (vec[:, None] if p.bias == "m" else vec[None, :])
    if p.activation == "relu":
        out = np.maximum(out, 0)
    elif p.activation == "gelu":
        out = 0.5 * out * (1 + np.tanh(np.sqrt(2 / np.pi) * (out + 0.044715 * out**3)))
    return out


class Mismatch(AssertionError):
    """A kernel's result differs from the reference beyond the tolerance."""


def check(problem: GemmProblem, got: np.ndarray, ref: np.ndarray) -> None:
    """Every element within the output dtype's rounding of the reference (plus fp32 summation error);
    raises Mismatch naming the first bad element."""
    if got.shape != ref.shape:
        raise Mismatch(f"result shape {got.shape}, expected {ref.shape}")
    g = got.astype(np.float64)
    if not np.all(np.isfinite(g)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(g))[0])
        raise Mismatch(f"non-finite output at {idx} (an element the kernel did not write keeps its NaN poison)")
    scale = max(1.0, float(np.max(np.abs(ref))))
    tol = OUT_RTOL[problem.d.name] * np.abs(ref) + 1e-6 * problem.k * scale
    if problem.d.kind == "int":
        tol = np.zeros_like(ref)
    bad = np.abs(g - ref) > tol
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Mismatch(f"{int(bad.sum())} of {bad.size} elements off; first at {idx}: got {g[idx]}, "
                             f"want {ref[idx]} (tolerance {tol[idx]:.3g})")
