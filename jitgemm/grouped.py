"""`jitgemm.grouped_matmul`: the MoE grouped GEMM in one launch (codegen/gemm_group.py says how the kernel reads
the group table). The layout is the one MoE routers produce: the tokens sorted by expert, A stacked [sum M_g, K],
one weight per expert B [G, K, N] (or [G, N, K] transposed views), group offsets [G + 1] (offsets[0] = 0,
non-decreasing, offsets[G] = rows of A); empty groups are allowed."""

from __future__ import annotations

import numpy as np

from jitgemm.codegen.dtypes import of_numpy
from jitgemm.codegen.gemm_ir import GemmProblem, IRError

from .api import GemmCall, MatmulError, _backend, launch
from .contract import Contract

GENERATORS = ("auto", "asm", "llvm")


def _bias_kind(bias, rows: int, n: int, groups: int) -> tuple[str, int]:
    """(problem bias, stride_bias): ("n", 0) one bias per column shared by the groups ([N] or [1, N]); ("n", N) a
    column bias per group ([G, N], as MoE experts with biases have); ("m", 0) one per row of the stacked A
    ([sum M, 1], e.g. per token); ("none", 0)."""
    if bias is None:
        return "none", 0
    if isinstance(bias, np.ndarray) and bias.shape == (rows, 1):
        return "m", 0
    if isinstance(bias, np.ndarray) and (bias.shape == (n,) or bias.shape == (1, n)):
        return "n", 0
    if isinstance(bias, np.ndarray) and bias.shape == (groups, n):
        return "n", n
    shape = getattr(bias, "shape", type(bias).__name__)
    raise MatmulError(f"bias: {shape}; accepted: [N] or [1, N] (per column, N={n}), [G, N] (per column of each "
                      f"group, G={groups}) or [sum M, 1] (per row of the stacked A, sum M={rows})")


def group_problem(a: np.ndarray, b: np.ndarray, offsets: np.ndarray, *, out_dtype=None, bias=None,
                  activation: str = "none", alpha: float = 1.0, c: np.ndarray | None = None,
                  beta: float = 0.0) -> tuple[GemmProblem, np.ndarray, str]:
    """The grouped problem (m = the largest group's rows, batch = G), the int32 offsets and B's layout letter."""
    for x, name, nd in ((a, "a", 2), (b, "b", 3), (offsets, "offsets", 1)):
        if not isinstance(x, np.ndarray) or x.ndim != nd:
            raise MatmulError(f"{name}: expected a {nd}-D numpy array (a: [sum M, K], b: [G, K, N], offsets: [G+1])")
    groups, k = b.shape[0], b.shape[1]
    if a.shape[1] != k:
        raise MatmulError(f"a is {a.shape}, b is {b.shape}: K differs ({a.shape[1]} vs {k})")
    if offsets.shape[0] != groups + 1 or not np.issubdtype(offsets.dtype, np.integer):
        raise MatmulError(f"offsets: expected {groups + 1} integers (G + 1 for G = {groups} groups)")
    off = offsets.astype(np.int64)
    if off[0] != 0 or off[-1] != a.shape[0] or np.any(np.diff(off) < 0):
        raise MatmulError(f"offsets: must start at 0, never decrease and end at the rows of a ({a.shape[0]}); "
                          f"got {off.tolist()[:8]}")
    max_m = int(np.diff(off).max()) if groups else 0
    layout = "NN" if b.strides[2] == b.itemsize else "NT" if b.strides[1] == b.itemsize else None
    if layout is None or a.strides[1] != a.itemsize:
        raise MatmulError("a must be row-major and b [G, K, N] row-major or a transposed view of [G, N, K]")
    rows, n = a.shape[0], b.shape[2]
    if c is not None and (not isinstance(c, np.ndarray) or c.shape != (rows, n)):
        raise MatmulError(f"c: expected a [sum M, N] = [{rows}, {n}] array stacked like a's rows, got "
                          f"{getattr(c, 'shape', type(c).__name__)}")
    try:
        p = GemmProblem.make(max(max_m, 1), n, k, of_numpy(a.dtype), of_numpy(b.dtype),
                             None if out_dtype is None else of_numpy(out_dtype), layout=layout, batch=groups,
                             alpha=alpha, beta=beta if c is not None else 0.0,
                             c=None if c is None else of_numpy(c.dtype), bias=_bias_kind(bias, rows, n, groups)[0],
                             activation=activation, grouped=True)
    except (IRError, ValueError) as exc:
        raise MatmulError(str(exc)) from None
    return p, np.ascontiguousarray(off.astype(np.int32)), layout


def grouped_kernel(p: GemmProblem, arch: str, generator: str = "auto") -> tuple[bytes, str, Contract, str]:
    """(code object, kernel name, contract, "supplier:label") of the grouped kernel: the selector's choice among
    the direct and LLVM generators' grouped kernels and Triton's grouped peer (generator="auto"; `explain`
    shows the ranking), or the named generator's default kernel."""
    from .kernel import compile as compile_config

    if generator not in GENERATORS:
        raise MatmulError(f"generator={generator!r}; accepted: {', '.join(GENERATORS)}")
    if generator == "auto":
        from .selector import SelectionError, default_selector

        try:
            return default_selector(arch).choose(p, ALIGN)
        except SelectionError as exc:
            raise MatmulError(str(exc)) from None
    try:
        kernel = compile_config(p, None, arch=arch, generator=generator)
    except IRError as exc:
        raise MatmulError(str(exc)) from None
    return kernel.code_object, kernel.name, Contract.load(kernel.contract), f"{generator}:default"


ALIGN = {"a": 256, "b": 256, "c": 256, "bias": 256, "d": 256}


def grouped_matmul(a, b, offsets, *, c: np.ndarray | None = None, beta: float = 0.0, out_dtype=None,
                   bias: np.ndarray | None = None, activation: str = "none", alpha: float = 1.0,
                   arch: str = "gfx942", backend: str = "auto", strict: bool = False,
                   generator: str = "auto") -> np.ndarray:
    """D[rows of g] = activation(alpha * A[rows of g] @ B[g] + beta * C[rows of g] + bias) for every group g (rows
    of g: offsets[g] .. offsets[g+1]), in one launch. c: [sum M, N] stacked like A; bias: [N] (per column, shared
    by the groups), [G, N] (per column, one per group) or [sum M, 1] (per row, e.g. per token). generator: "auto"
    (the selector ranks the direct and LLVM generators' grouped kernels and Triton's peer), "asm" or "llvm"."""
    where = _backend(backend)
    p, off, layout = group_problem(a, b, offsets, out_dtype=out_dtype, bias=bias, activation=activation,
                                   alpha=alpha, c=c, beta=beta)
    rows, n, k, groups = a.shape[0], p.n, p.k, p.batch
    d = np.full((rows, n), np.nan if p.d.kind == "float" else -1, dtype=p.d.numpy)
    if rows == 0 or groups == 0 or n == 0:
        return d
    blob, name, contract, _source = grouped_kernel(p, arch, generator)
    stored = np.ascontiguousarray(b if layout == "NN" else b.transpose(0, 2, 1))   # [G, K, N] or [G, N, K]
    integer = not p.epilogue_float
    values = {"a": np.ascontiguousarray(a).reshape(-1), "b": stored.reshape(-1),
              "c": None if c is None else np.ascontiguousarray(c).reshape(-1), "d": d.reshape(-1),
              "bias": None if bias is None else np.ascontiguousarray(bias).reshape(-1), "m": p.m, "n": n, "k": k,
              "batch": groups, "lda": k, "ldb": n if layout == "NN" else k, "ldc": n, "ldd": n, "stride_a": 0,
              "stride_b": k * n, "stride_c": 0, "stride_d": 0, "alpha": int(alpha) if integer else float(alpha),
              "beta": (int(beta) if integer else float(beta)) if c is not None else (0 if integer else 0.0),
              "group_offsets": off, "stride_bias": _bias_kind(bias, rows, n, groups)[1]}
    call = GemmCall(p, values, d, dict(ALIGN))
    return launch(call, blob, name, contract, backend=where, strict=strict)


def grouped_reference(a, b, offsets, *, bias=None, activation: str = "none", alpha: float = 1.0, c=None,
                      beta: float = 0.0) -> np.ndarray:
    """numpy float64: each group's rows times its B (empty groups give no rows), + beta * C + bias."""
    out = np.zeros((a.shape[0], b.shape[2]), np.float64)
    for g in range(b.shape[0]):
        lo, hi = int(offsets[g]), int(offsets[g + 1])
        out[lo:hi] = alpha * (a[lo:hi].astype(np.float64) @ b[g].astype(np.float64))
    if c is not None and beta != 0.0:
        out += beta * c.astype(np.float64)
    if bias is not None:
        bias64 = bias.astype(np.float64)
        if bias64.shape == (a.shape[0], 1):
            out += bias64
        elif bias64.ndim == 2 and bias64.shape[0] == b.shape[0] and b.shape[0] > 1:     # [G, N]: per group
            for g in range(b.shape[0]):
                out[int(offsets[g]):int(offsets[g + 1])] += bias64[g]
        else:
            out += bias64.reshape(1, -1)
    if activation == "relu":
        out = np.maximum(out, 0)
    elif activation == "gelu":
        out = 0.5 * out * (1 + np.tanh(np.sqrt(2 / np.pi) * (out + 0.044715 * out**3)))
    return out
