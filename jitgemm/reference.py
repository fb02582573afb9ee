"""Random operands for a GEMM problem, the float64 numpy reference, and the tolerance per output dtype:
what `jitgemm run`, `jitgemm qualify` and the tests use to judge a kernel.

Scale modes (codegen/gemm_ir.py, `GemmProblem.scale_mode`) take their fp32 scale arrays in their logical shapes
(`GemmProblem.mode_scale_shape`): tensor (1, 1) or a scalar; rowcol A (M, 1) and B (1, N) (or (N,), or a
single value for per-tensor on that side); block A (M, ceil(K/128)) and B (ceil(N/128), ceil(K/128)) whatever
their storage order. The reference applies them in float64 before alpha, beta*C, the bias and the activation."""

from __future__ import annotations

import numpy as np

from jitgemm.codegen.gemm_ir import BLOCK_SCALE_K, BLOCK_SCALE_N, GemmProblem

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
        bias = (rng.integers(-50, 50, size=size).astype(np.int32) if not p.epilogue_float
                else rng.standard_normal(size).astype(np.float32))
    return a, b, c, bias


def scale_operands(problem: GemmProblem, seed: int = 0) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """(scale_a, scale_b): random fp32 scales in the logical shapes of the problem's scale mode, (None, None)
    for an unscaled problem. Powers of two times 1..2, from 1/64 to 4, as quantizers make them (amax / 448)."""
    p = problem
    if p.scale_mode == "none":
        return None, None
    rng = np.random.default_rng(seed + 7919)
    out = []
    for op in ("a", "b"):
        shape = p.mode_scale_shape(op)
        out.append((rng.uniform(1.0, 2.0, shape) * 2.0 ** rng.integers(-6, 2, shape)).astype(np.float32))
    return out[0], out[1]


def stored_scales(problem: GemmProblem, seed: int = 0) -> tuple:
    """`scale_operands` stored as the problem's block-scale orders say (a column-major array is the transpose's
    view), as a caller hands them to `scaled_matmul`."""
    scales = scale_operands(problem, seed)
    if problem.scale_mode != "block":
        return scales
    return tuple(x if getattr(problem, f"{op}_scale_order") == "row" else np.ascontiguousarray(x.T).T
                 for op, x in zip("ab", scales, strict=True))


def _scaled_product(problem: GemmProblem, a: np.ndarray, b: np.ndarray, scale_a, scale_b) -> np.ndarray:
    """sa * sb * (A @ B) in float64 for the problem's scale mode (see the module docstring for the shapes)."""
    p = problem
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    sa, sb = np.asarray(scale_a, np.float64), np.asarray(scale_b, np.float64)
    if p.scale_mode == "tensor":
        return np.matmul(a64, b64) * sa.reshape(-1)[0] * sb.reshape(-1)[0]
    if p.scale_mode == "rowcol":
        col_a = sa.reshape(-1, 1) if sa.size > 1 else sa.reshape(1, 1)
        row_b = sb.reshape(1, -1) if sb.size > 1 else sb.reshape(1, 1)
        return np.matmul(a64, b64) * col_a * row_b
    out = np.zeros(a64.shape[:-1] + b64.shape[-1:])
    nb = np.arange(p.n) // BLOCK_SCALE_N
    for kb in range(-(-p.k // BLOCK_SCALE_K)):
        ks = slice(kb * BLOCK_SCALE_K, (kb + 1) * BLOCK_SCALE_K)
        partial = np.matmul(a64[..., :, ks], b64[..., ks, :])
        out = out + partial * sa[:, kb][:, None] * sb[nb, kb][None, :]
    return out


def reference(problem: GemmProblem, a, b, c, bias, scale_a=None, scale_b=None) -> np.ndarray:
    """alpha * op(A) @ op(B) (scaled as the problem's scale mode says) + beta * C + bias, then the activation,
    in float64."""
    p = problem
    if p.scale_mode != "none":
        if scale_a is None or scale_b is None:
            raise ValueError(f"scale_mode={p.scale_mode} needs scale_a and scale_b")
        with np.errstate(invalid="ignore", over="ignore"):     # NaN / inf scales give NaN / inf, as they should
            product = _scaled_product(p, a, b, scale_a, scale_b)
        out = p.alpha * product
    else:
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
    special = ~np.isfinite(ref)      # NaN / inf scales: the kernel must give the same NaN or infinity there
    if special.any():
        same = np.where(np.isnan(ref), np.isnan(g), g == ref)
        if not same[special].all():
            idx = tuple(int(i) for i in np.argwhere(special & ~same)[0])
            raise Mismatch(f"got {g[idx]} at {idx}, want {ref[idx]} (a NaN or infinite scale reaches it)")
        g = np.where(special, 0.0, g)
        ref = np.where(special, 0.0, ref)
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
