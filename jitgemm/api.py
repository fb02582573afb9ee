"""`jitgemm.matmul(a, b)`: numpy arrays in, numpy array out; the first call for a problem class compiles,
later calls reuse the kernel. Which kernel ran where is kept for `jitgemm.last_launch()`."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from jitgemm.codegen.dtypes import DType, dtype, of_numpy
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.kernel_abi import extent

from .contract import Contract
from .dlpack import accepts_dlpack
from .packing import packed_segment
from .problem_compile import compile  # noqa: F401,A004 (`jitgemm.api.compile` as before; its home is light)

BACKENDS = ("auto", "emu", "hip")


class MatmulError(IRError):
    """Arguments `matmul` cannot run: the message names the argument and what is accepted."""


@dataclass(frozen=True)
class LaunchRecord:
    kernel: str
    generator: str
    backend: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    problem: str
    seconds: float
    kernel_source: str     # supplier:candidate that the selector chose
    scratch_bytes: int = 0  # > 0: the kernel spills registers to scratch memory (its contract's tile.scratch)
    split_k: int = 1        # K ranges the kernel was launched with (its grid's and split_k arguments' count)

    @property
    def spills(self) -> bool:
        return self.scratch_bytes > 0


_last = threading.local()


def _alignment(x: np.ndarray | None) -> int:
    if x is None:
        return 256
    address = x.__array_interface__["data"][0]
    return min(256, address & -address) if address else 256


def _choose(problem: GemmProblem, align: dict[str, int], arch: str) -> tuple[bytes, str, Contract, str]:
    """The target's selector's winner for this exact problem and alignment (memoized there), loaded; a repeated
    choice (in this process or an earlier one) comes from jitgemm/warm.py while nothing it depends on changed."""
    from . import warm

    found = warm.choice(problem, align, arch)
    if found is not None:
        return found
    from .selector import default_selector

    state = warm.before()
    chosen, kernel_key = default_selector(arch).choose_with_key(problem, align)
    warm.remember_choice(problem, align, arch, chosen, kernel_key, state)
    return chosen


def last_launch() -> LaunchRecord | None:
    """The launch made by the latest `matmul` call in this thread."""
    return getattr(_last, "record", None)


def _operand(x, name: str, batch_ok: bool = True) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise MatmulError(f"{name}: expected a numpy array, got {type(x).__name__}")
    if x.ndim not in ((2, 3) if batch_ok else (2,)):
        raise MatmulError(f"{name}: expected a 2-D array (or 3-D batch), got shape {x.shape}")
    return x


def _storage(x: np.ndarray, name: str) -> tuple[str, int, int, np.ndarray]:
    """(layout letter, leading dimension, batch stride in elements, buffer covering the data).

    `N`: the last dimension has unit stride; `T`: the one before it does (a transposed view). Anything else
    (both strides > 1, negative strides) is refused: copy it with np.ascontiguousarray first.

    The buffer spans whole rows, ld x rows elements as BLAS allocates them, so a kernel that reads inside the
    padding of the last row (a hand-written kernel loading full vectors) stays inside its buffer: a view of the
    caller's memory when the allocation holds the padding, else a copy with the padding zero."""
    item = x.itemsize
    if any(s < 0 or s % item for s in x.strides):
        raise MatmulError(f"{name}: strides {x.strides} are negative or not whole elements; pass "
                          f"np.ascontiguousarray({name})")
    st = [s // item for s in x.strides]
    rows, cols = x.shape[-2:]
    if st[-1] == 1 or cols == 1:
        layout, ld = "N", max(st[-2], cols) if rows > 1 else cols
    elif st[-2] == 1 or rows == 1:
        layout, ld = "T", max(st[-1], rows) if cols > 1 else rows
    else:
        raise MatmulError(f"{name}: neither dimension of shape {x.shape[-2:]} has unit stride (strides "
                          f"{x.strides}); the kernels take row-major or transposed storage: pass "
                          f"np.ascontiguousarray({name})")
    batch_stride = st[0] if x.ndim == 3 else 0
    # one flat view over every element the kernel may touch
    if x.ndim == 3:
        nb = x.shape[0]
    else:
        nb = 1
    inner = extent(rows, cols, ld) if layout == "N" else extent(cols, rows, ld)   # the kernel ABI's rule
    span = (nb - 1) * batch_stride + inner
    whole = (nb - 1) * batch_stride + (rows if layout == "N" else cols) * ld
    from numpy.lib.array_utils import byte_bounds

    root = x
    while isinstance(root.base, np.ndarray):
        root = root.base
    start = x.__array_interface__["data"][0]
    # strided views are taken over an unsigned-integer view of the same bytes: numpy's as_strided goes through
    # the array interface, whose type string ml_dtypes' float8_e5m2 shares with another type ('<f1')
    raw = x.view(np.dtype(f"u{item}"))
    if start + whole * item <= byte_bounds(root)[1]:
        flat = np.lib.stride_tricks.as_strided(raw, shape=(whole,), strides=(item,),
                                               writeable=bool(x.flags.writeable)).view(x.dtype)
    else:
        flat = np.zeros(whole, x.dtype)
        flat.view(raw.dtype)[:span] = np.lib.stride_tricks.as_strided(raw, shape=(span,), strides=(item,),
                                                                      writeable=False)
    return layout, ld, batch_stride, flat


def _dt(x: np.ndarray, name: str) -> DType:
    try:
        return of_numpy(x.dtype)
    except ValueError as exc:
        raise MatmulError(f"{name}: {exc}") from None


@dataclass
class GemmCall:
    """A validated call: the problem, the values for each argument role, the output and pointer alignments."""

    problem: GemmProblem
    values: dict
    d: np.ndarray
    align: dict[str, int]


@dataclass(frozen=True)
class _Operands:
    """A and B as the kernel reads them: sizes, dtypes, layout and the problem fields and argument values that
    follow from their storage."""

    m: int
    n: int
    k: int
    batch: int
    a: DType
    b: DType
    layout: str
    lda: int
    ldb: int
    values: dict
    align: dict
    fields: dict          # GemmProblem fields of block-scaled operands (scale layouts, pre-shuffled B)
    batched_out: bool


def _plain_operands(a, b) -> _Operands:
    a, b = _operand(a, "a"), _operand(b, "b")
    if a.shape[-1] != b.shape[-2]:
        raise MatmulError(f"a is {a.shape}, b is {b.shape}: inner dimensions {a.shape[-1]} and {b.shape[-2]} differ")
    batch = a.shape[0] if a.ndim == 3 else b.shape[0] if b.ndim == 3 else 1
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise MatmulError(f"batch sizes differ: a has {a.shape[0]}, b has {b.shape[0]}")
    m, k = a.shape[-2:]
    n = b.shape[-1]
    la, lda, sa, fa = _storage(a, "a")
    lb, ldb, sb, fb = _storage(b, "b")
    return _Operands(m, n, k, batch, _dt(a, "a"), _dt(b, "b"), la + lb, lda, ldb,
                     {"a": fa, "b": fb, "stride_a": sa, "stride_b": sb},
                     {"a": _alignment(a), "b": _alignment(b)}, {}, a.ndim == 3 or b.ndim == 3)


def _mx_operands(a, b) -> _Operands:
    """Block-scaled operands (jitgemm.mx_operands says how MXTensors map to the kernel's NT storage)."""
    from .mx import MXError
    from .mx_operands import mx_operands

    try:
        oa, ob = mx_operands(a, b)
    except (IRError, MXError) as exc:
        raise MatmulError(str(exc)) from None
    values = {"a": oa.storage, "b": ob.storage, "stride_a": 0, "stride_b": 0, "a_scale": oa.scales,
              "b_scale": ob.scales, "ld_a_scale": oa.ld_scale, "ld_b_scale": ob.ld_scale, "stride_a_scale": 0,
              "stride_b_scale": 0}
    align = {"a": _alignment(oa.storage), "b": _alignment(ob.storage), "a_scale": _alignment(oa.scales),
             "b_scale": _alignment(ob.scales)}
    fields = {"a_scale": oa.scale, "b_scale": ob.scale, "b_preshuffle": ob.preshuffle}
    return _Operands(oa.rows, ob.rows, oa.k, 1, oa.dtype, ob.dtype, "NT", oa.ld, ob.ld, values, align, fields, False)


SCALE_MODE_SHAPES = ("tensor: two single values; rowcol: scale_a [M, 1] (or one value) and scale_b [1, N] or [N] "
                     "(or one value); block: scale_a [M, ceil(K/128)] and scale_b [ceil(N/128), ceil(K/128)]")


def _scale_array(x, name: str) -> np.ndarray:
    if isinstance(x, (int, float, np.floating)) and not isinstance(x, bool):
        return np.array([x], np.float32)
    if not isinstance(x, np.ndarray):
        raise MatmulError(f"{name}: expected a float32 numpy array or a number, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise MatmulError(f"{name}: dtype {x.dtype}; the scales are fp32: pass {name}.astype(np.float32)")
    if x.ndim > 3 or x.size == 0:
        raise MatmulError(f"{name}: shape {x.shape}; accepted: {SCALE_MODE_SHAPES}, or any of them with a leading "
                          f"batch dimension")
    return x


def infer_scale_mode(scale_a: np.ndarray, scale_b: np.ndarray, m: int, n: int, k: int) -> str | None:
    """The scale mode the two arrays' shapes say (None: no mode fits): both single values -> tensor; [M, 1] (or
    one value) and [1, N] / [N] (or one value) -> rowcol; [M, KB] and [NB, KB] -> block. A shape that fits both
    rowcol and block (K <= 128, N <= 128) computes the same product either way; rowcol is taken."""
    kb, nb = -(-k // 128), -(-n // 128)
    sa, sb = scale_a.shape, scale_b.shape
    single = scale_a.size == 1, scale_b.size == 1
    if all(single):
        return "tensor"
    col_a = single[0] or sa in ((m, 1), (m,)) and scale_a.ndim == 2
    row_b = single[1] or sb in ((1, n), (n,))
    if col_a and row_b:
        return "rowcol"
    if scale_a.ndim == 2 and scale_b.ndim == 2 and sa == (m, kb) and sb == (nb, kb):
        return "block"
    return None


def _scale_entry(x: np.ndarray, name: str, batch: int) -> np.ndarray:
    """The scales of one batch entry: a 3-D array is [batch, ...] (one set per entry) or [1, ...] (shared)."""
    if x.ndim != 3:
        return x
    if x.shape[0] not in (1, batch):
        raise MatmulError(f"{name} has shape {x.shape}: a 3-D scale array holds one set of scales per batch entry "
                          f"(leading dimension batch={batch}) or one shared set (leading dimension 1)")
    return x[0]


def _mode_scales(mode: str, scale_a: np.ndarray, scale_b: np.ndarray, m: int, n: int, k: int,
                 orders: dict | None = None, batch: int = 1):
    """(problem fields, argument values, pointer alignments) of the fp32 scales of a scale mode, each array
    checked against the mode's shape. Block scales are passed as stored, row- or column-major (the strides say
    which: the problem's a_scale_order / b_scale_order; `orders` decides for an array of one row or column, which
    reads the same either way); per-row and per-column vectors are passed with their element stride (0 for one
    value). A 3-D array [batch, ...] gives each batch entry its own scales: the kernel moves its scale pointer
    by z * stride_{a,b}_scale, as it moves A and B (codegen/gemm_asm.py `_batch_offsets`,
    codegen/llvm/scale_builder.py); [1, ...] and 2-D arrays are shared (stride 0)."""
    kb, nb = -(-k // 128), -(-n // 128)
    fields: dict = {"scale_mode": mode}
    values: dict = {"stride_a_scale": 0, "stride_b_scale": 0}
    align: dict = {}
    for op, whole, want in (("a", scale_a, {"tensor": (1, 1), "rowcol": (m, 1), "block": (m, kb)}[mode]),
                            ("b", scale_b, {"tensor": (1, 1), "rowcol": (1, n), "block": (nb, kb)}[mode])):
        name = f"scale_{op}"
        x = _scale_entry(whole, name, batch)
        if mode == "block":
            if x.shape != want:
                raise MatmulError(f"{name} has shape {x.shape}; scale_mode='block' takes {name} {list(want)} "
                                  f"(ceil(K/128) = {kb}, ceil(N/128) = {nb})")
            if 1 in x.shape:     # one row or column: both orders hold the same bytes; take the one asked for
                order = (orders or {}).get(op, "row")
                flat = np.ascontiguousarray(x if order == "row" else x.T).reshape(-1)
                ld = x.shape[1] if order == "row" else x.shape[0]
            else:
                layout, ld, _, flat = _storage(x, name)
                order = "row" if layout == "N" else "col"
            fields[f"{op}_scale_order"] = order
        else:
            if x.size != 1 and x.size != max(want):
                raise MatmulError(f"{name} has shape {x.shape}; scale_mode={mode!r} takes {name} "
                                  f"{list(want)}{' or one value' if mode == 'rowcol' else ''}")
            flat = np.ascontiguousarray(x.reshape(-1))
            ld = 0 if x.size == 1 else 1
        if whole.ndim == 3 and whole.shape[0] > 1:        # one set per batch entry, each stored as entry 0 is
            order = fields.get(f"{op}_scale_order", "row")
            stack = whole if mode != "block" or order == "row" else whole.transpose(0, 2, 1)
            flat = np.ascontiguousarray(stack).reshape(-1)
            values[f"stride_{op}_scale"] = x.size
            if mode == "block":
                ld = x.shape[1] if order == "row" else x.shape[0]
        values[f"{op}_scale"], values[f"ld_{op}_scale"] = flat, ld
        align[f"{op}_scale"] = _alignment(flat)
    return fields, values, align


def prepare(a, b, c: np.ndarray | None = None, *, alpha: float = 1.0, beta: float = 0.0,
            out_dtype=None, bias: np.ndarray | None = None, activation: str = "none",
            scales: tuple | None = None) -> GemmCall:
    """Check the arrays and turn them into a GEMM problem plus argument values (no kernel involved). Either
    operand may be a `jitgemm.mx.MXTensor` (a block-scaled problem; see jitgemm/mx_operands.py for the layout).
    `scales` = (scale_a, scale_b, scale_mode or None[, {"a": order, "b": order}]) makes a scaled 8-bit problem
    (`scaled_matmul`); the orders ("row"/"col") are taken for block-scale arrays of one row or column."""
    # an MXTensor exists only once jitgemm.mx is loaded: plain arrays do not import it (and ml_dtypes' ~0.5 s)
    mx = sys.modules.get("jitgemm.mx")
    if mx is not None and (isinstance(a, mx.MXTensor) or isinstance(b, mx.MXTensor)):
        if scales is not None:
            raise MatmulError("scale_a/scale_b: MXTensor operands carry their own block scales")
        ops = _mx_operands(a, b)
    else:
        ops = _plain_operands(a, b)
    m, n, k, batch = ops.m, ops.n, ops.k, ops.batch
    scale_fields, scale_values, scale_align = {}, {}, {}
    if scales is not None:
        sa, sb = _scale_array(scales[0], "scale_a"), _scale_array(scales[1], "scale_b")
        mode = scales[2]
        if mode is None:
            mode = infer_scale_mode(_scale_entry(sa, "scale_a", batch), _scale_entry(sb, "scale_b", batch), m, n, k)
            if mode is None:
                raise MatmulError(f"scale_a {sa.shape} and scale_b {sb.shape} fit no scale mode for M={m}, N={n}, "
                                  f"K={k}; accepted: {SCALE_MODE_SHAPES}")
        elif mode not in ("tensor", "rowcol", "block"):
            raise MatmulError(f"scale_mode={mode!r}; accepted: tensor, rowcol, block (or None: from the shapes)")
        scale_fields, scale_values, scale_align = _mode_scales(mode, sa, sb, m, n, k,
                                                               scales[3] if len(scales) > 3 else None, batch)
    if 0 in (m, n, k, batch):
        raise MatmulError(f"empty problem: m={m}, n={n}, k={k}, batch={batch}")
    da, db = ops.a, ops.b
    dd = None
    if out_dtype is not None:
        try:
            dd = of_numpy(out_dtype) if not isinstance(out_dtype, str) else dtype(out_dtype)
        except ValueError as exc:
            raise MatmulError(f"out_dtype: {exc}") from None
    dc = None
    ldc, sc, fc = 0, 0, None
    if c is not None:
        c = _operand(c, "c")
        want = (batch, m, n) if c.ndim == 3 else (m, n)
        if c.shape != want:
            raise MatmulError(f"c has shape {c.shape}; expected {want}")
        lc, ldc, sc, fc = _storage(c, "c")
        if lc != "N":
            raise MatmulError("c must be row-major (unit stride along N); pass np.ascontiguousarray(c)")
        dc = _dt(c, "c")
    if beta != 0 and c is None:
        raise MatmulError("beta is non-zero but no c was given")
    bias_kind, fbias = "none", None
    if bias is not None:
        want = np.int32 if (da.kind, db.kind) == ("int", "int") and scales is None else np.float32
        if not isinstance(bias, np.ndarray) or bias.ndim != 1 or bias.dtype != want:
            raise MatmulError(f"bias: expected a 1-D {np.dtype(want).name} numpy array of length M or N (the "
                              f"accumulator's type)")
        if bias.shape[0] == m:
            bias_kind = "m"
        elif bias.shape[0] == n:
            bias_kind = "n"
        else:
            raise MatmulError(f"bias has length {bias.shape[0]}; expected M={m} or N={n}")
        fbias = np.ascontiguousarray(bias)
    try:
        problem = GemmProblem.make(m, n, k, da, db, dd, c=dc, layout=ops.layout, batch=batch, lda=ops.lda,
                                   ldb=ops.ldb, ldc=ldc or None, ldd=None, alpha=alpha,
                                   beta=beta if c is not None else 0.0, bias=bias_kind, activation=activation,
                                   **ops.fields, **scale_fields)
        # packed storage is the problem without leading dimensions, as GemmProblem.make, the CLI and the tuning
        # database spell it: one problem, one key (`jitgemm select`/`sweep` rows then match matmul's problem)
        problem = problem.without_packed_lds()
    except IRError as exc:
        raise MatmulError(str(exc)) from None
    d = np.empty((batch, m, n) if batch > 1 or ops.batched_out else (m, n), dtype=problem.d.numpy)
    d.fill(np.nan if problem.d.kind == "float" else -1)  # poison: every element must be written
    integer = not problem.epilogue_float
    values = {**ops.values, **scale_values, "c": fc, "d": d.reshape(-1), "bias": fbias, "m": m, "n": n, "k": k,
              "batch": batch, "lda": ops.lda, "ldb": ops.ldb, "ldc": ldc or n, "ldd": n, "stride_c": sc,
              "stride_d": m * n, "alpha": int(alpha) if integer else float(alpha),
              "beta": int(beta) if integer else float(beta)}
    align = {**ops.align, **scale_align, "c": _alignment(c), "bias": _alignment(bias)}
    return GemmCall(problem, values, d, align)


def check_target(problem: GemmProblem, arch: str) -> None:
    """Refuse a block-scaled problem on a target whose spec has no MFMA operand of an MX element format (the
    spec's data formats say so, e.g. FMT_NUM_PK32_FP6 on CDNA 4; CDNA 3 has none), naming what is needed."""
    if not problem.scaled:
        return
    from .mx_operands import target_has_mx

    if not target_has_mx(arch):
        side = "a" if problem.a.microscaling else "b"
        raise MatmulError(f"{side}: MX operands ({problem.a.name} x {problem.b.name}, block-scaled) need a target "
                          f"with block-scaled MFMAs: arch='gfx950' (CDNA 4); arch={arch!r} has none")


def launch(call: GemmCall, blob: bytes, name: str, contract: Contract, *, backend: str = "emu",
           source: str = "", strict: bool | str = False, split_k: int = 1,
           emu_options: dict | None = None) -> np.ndarray:
    """Run one kernel on a prepared call. The contract must admit the problem (checked, never assumed).
    `strict` (emulator only) checks waits, barriers and hazards as hardware needs them (jitgemm/emu/strict.py);
    `emu_options` passes further `jitgemm.emu.emulate` options (schedule, seed, poison: the anti-cheat battery).
    `split_k` > 1 splits K over workgroups for a kernel whose contract says it can (`launch.split_k`); D is
    zeroed first when the contract says the splits add into it."""
    start = time.perf_counter()
    ok, why = contract.admits(call.problem, call.align)
    if not ok:
        raise MatmulError(f"kernel {name} cannot take this problem: {why}")
    p = call.problem
    refusal = contract.split_refusal(p.k, split_k)
    if refusal:
        raise MatmulError(f"kernel {name} cannot take this problem: {refusal}")
    if split_k > 1 and (contract.split_k or {}).get("zero_output"):
        call.d.fill(0)
    grid = contract.grid(p.m, p.n, p.k, p.batch, split_k)
    block = contract.workgroup
    values = {**call.values, "split_k": split_k, "log2_split_k": split_k.bit_length() - 1}
    args = [packed_segment(contract, values)]
    if backend == "hip":
        from .hip_runtime import run_hip

        run_hip(blob, name, grid=grid, block=block, args=args, lds_bytes=contract.lds_bytes)
    else:
        from .emu import emulate

        emulate(blob, name, grid=grid, block=block, args=args, lds_bytes=contract.lds_bytes, strict=strict,
                **(emu_options or {}))
    _last.record = LaunchRecord(name, contract.generator, backend, grid, block,
                                f"m={p.m} n={p.n} k={p.k} batch={p.batch} {p.a.name}x{p.b.name}->"
                                f"{p.d.name} {p.layout}", time.perf_counter() - start, source,
                                int(contract.data.get("tile", {}).get("scratch", 0) or 0), split_k)
    return call.d


def _backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise MatmulError(f"backend={backend!r}; accepted: {', '.join(BACKENDS)}")
    if backend == "emu":
        return "emu"
    from .hip_runtime import hip_available

    available, why = hip_available()
    if backend == "hip" and not available:
        raise MatmulError(f"backend='hip': {why}; use backend='emu' (or 'auto', which falls back to it)")
    return "hip" if available else "emu"


def _empty_product(a, b, c, *, alpha, beta, out_dtype, bias, activation) -> np.ndarray | None:
    """The result of a GEMM with M, N, K or the batch zero, computed here (no kernel launches for nothing): an
    empty D when M, N or the batch is 0; when only K is 0, A @ B is all zeros, so D = activation(beta * C + bias)
    -- what numpy's matmul gives. None when the product is not empty (the kernel's work)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.ndim not in (2, 3) or b.ndim not in (2, 3):
        return None
    if 0 not in a.shape and 0 not in b.shape:
        return None
    if a.shape[-1] != b.shape[-2]:
        raise MatmulError(f"a is {a.shape}, b is {b.shape}: inner dimensions {a.shape[-1]} and {b.shape[-2]} differ")
    batch = a.shape[0] if a.ndim == 3 else b.shape[0] if b.ndim == 3 else None
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise MatmulError(f"batch sizes differ: a has {a.shape[0]}, b has {b.shape[0]}")
    da, db = _dt(a, "a"), _dt(b, "b")
    try:
        probe = GemmProblem.make(1, 1, 1, da, db, None if out_dtype is None else
                                 of_numpy(out_dtype) if not isinstance(out_dtype, str) else dtype(out_dtype))
    except (IRError, ValueError) as exc:
        raise MatmulError(str(exc)) from None
    m, n = a.shape[-2], b.shape[-1]
    shape = ((batch,) if batch is not None else ()) + (m, n)
    if beta != 0 and c is None:
        raise MatmulError("beta is non-zero but no c was given")
    out = np.zeros(shape, np.float64)
    if c is not None:
        c = _operand(c, "c")
        if c.shape != shape[-c.ndim:] or c.ndim > len(shape):
            raise MatmulError(f"c has shape {c.shape}; expected {shape}")
        out = out + beta * c.astype(np.float64)
    if bias is not None:
        if not isinstance(bias, np.ndarray) or bias.ndim != 1 or bias.shape[0] not in (m, n):
            raise MatmulError(f"bias: expected a 1-D array of length M={m} or N={n}")
        vec = bias.astype(np.float64)
        out = out + (vec[:, None] if bias.shape[0] == m else vec[None, :])
    if activation == "relu":
        out = np.maximum(out, 0)
    elif activation == "gelu":
        out = 0.5 * out * (1 + np.tanh(np.sqrt(2 / np.pi) * (out + 0.044715 * out**3)))
    elif activation != "none":
        raise MatmulError(f"activation={activation!r}; accepted: none, relu, gelu")
    return out.astype(probe.d.numpy)


@accepts_dlpack("a", "b", "c", "bias", error=MatmulError)
def matmul(a, b, c: np.ndarray | None = None, *, alpha: float = 1.0, beta: float = 0.0,
           out_dtype=None, bias: np.ndarray | None = None, activation: str = "none", arch: str = "gfx942",
           backend: str = "auto", split_k: int | str = "auto", split_mode: str = "auto") -> np.ndarray:
    """D = activation(alpha * a @ b + beta * c + bias) on an AMD GPU, or in the emulator.

    a: (M, K) or (batch, M, K); b: (K, N) or (batch, K, N); row-major or transposed views; bf16 and fp8 via
    ml_dtypes. On gfx950 either operand may be a `jitgemm.mx.MXTensor` (MX fp4/fp6/fp8 with E8M0 block scales;
    a bf16/fp16 A beside MX weights is the weight-only GEMM), B as the logical (K, N) operand quantized along K
    (`jitgemm.mx.weights(w)` for [N, K] weights); jitgemm/mx_operands.py says how they are stored.
    bias: length M (per row) or N (per column), float32 (int32 for int8). Returns a new (batch,) M x N array.
    The kernel is the selector's choice (`jitgemm.last_launch()` says which ran where). Arrays may be any DLPack
    producer in host memory (torch, CuPy, JAX): taken zero-copy, the result in the caller's type (jitgemm/dlpack.py).
    split_k: "auto" (decode shapes, M <= 64 and K >= 1024: the direct generator's split-K pair when `jitgemm tune`
    measured it faster than the chosen kernel, else when the timing model predicts it at least 10% faster,
    `jitgemm.split_k.choose_split`, which also ranks stream-K), or a count (1: never split; > 1: that many K
    ranges, or stream-K workgroups).
    split_mode: "auto" (what the model picked; "partial" for a forced count), "partial" (K ranges into a
    workspace + a deterministic reduction applying the epilogue), "atomic" (K ranges add into a zeroed fp32/int32
    D with buffer atomics: no epilogue, fp32 sums in any order) or "streamk" (split_k workgroups, equal shares of
    tiles x K steps, deterministic per-tile reduction) -- jitgemm/split_k.py."""
    where = _backend(backend)
    empty = _empty_product(a, b, c, alpha=alpha, beta=beta, out_dtype=out_dtype, bias=bias, activation=activation)
    if empty is not None:
        return empty
    call = prepare(a, b, c, alpha=alpha, beta=beta, out_dtype=out_dtype, bias=bias, activation=activation)
    check_target(call.problem, arch)
    blob, name, contract, source = _choose(call.problem, call.align, arch)
    ours, mode = _our_split(call.problem, arch, contract, blob, split_k, split_mode, source)
    if ours > 1:
        return split_launch(call, arch, ours, backend=where, mode=mode)
    return launch(call, blob, name, contract, backend=where, source=source,
                  split_k=_split_k(contract, blob, call.problem, arch, source))


def split_launch(call: GemmCall, arch: str, split_k: int, *, backend: str = "emu", config: GemmConfig | None = None,
                 strict: bool = False, ws: np.ndarray | None = None, mode: str = "partial",
                 generator: str = "asm") -> np.ndarray:
    """Run a prepared call as a split-K GEMM (jitgemm/split_k.py). `mode`: "partial" (grid z = batch x split_k K
    ranges into a poisoned workspace, then the reduction kernel applies the epilogue once; deterministic;
    `generator` asm: the direct generator's partial kernel, llvm: the LLVM generator's, one GEMM), "atomic" (the
    ranges add into a zeroed fp32/int32 D with buffer atomics, one launch, no epilogue; fp32 sums in any order) or
    "streamk" (split_k workgroups take equal shares of the tiles x K steps, partial sums per tile slot, the
    reduction as for "partial"; `_streamk_launch`). atomic and streamk: the direct generator."""
    from jitgemm.codegen.gemm_split import partial_problem, split_refusal
    from jitgemm.codegen.generator import generator as generator_named

    from .split_k import SPLIT_MODES, atomic_refusal, partial_kernel, partial_values, run_reduction, workspace

    if mode not in SPLIT_MODES:
        raise MatmulError(f"split_mode={mode!r}; accepted: {', '.join(SPLIT_MODES)}")
    p = call.problem
    if mode == "streamk":
        return _streamk_launch(call, arch, split_k, backend=backend, config=config, strict=strict, ws=ws)
    try:
        refusal = atomic_refusal(p) if mode == "atomic" else None
        refusal = refusal or generator_named(generator).split_refusal(p, mode)
        kernel = partial_kernel(p, arch, config, mode=mode, generator=generator)
        refusal = refusal or split_refusal(p, kernel.config.depth_k, split_k)
        q = partial_problem(p, mode)
    except IRError as exc:
        raise MatmulError(str(exc)) from None
    if refusal:
        raise MatmulError(refusal)
    if mode == "atomic":                      # the contract's zero_output: launch() zeroes D first
        launch(GemmCall(q, call.values, call.d, call.align), kernel.code_object, kernel.name,
               Contract.load(kernel.contract), backend=backend, strict=strict, split_k=split_k)
        return call.d
    ws = workspace(p, split_k) if ws is None else ws
    partial = GemmCall(q, partial_values(call, ws), ws, {**call.align, "d": 256})
    launch(partial, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend=backend, strict=strict,
           split_k=split_k)
    run_reduction(call, ws, split_k, arch, backend, strict)
    return call.d


def _streamk_launch(call: GemmCall, arch: str, workgroups: int, *, backend: str = "emu",
                    config: GemmConfig | None = None, strict: bool = False,
                    ws: np.ndarray | None = None) -> np.ndarray:
    """Run a prepared call as a stream-K GEMM (codegen/gemm_streamk.py): `workgroups` workgroups take equal shares
    of the tiles x K steps into a poisoned slot workspace, then the reduction sums each tile's slots in order and
    applies the epilogue (deterministic)."""
    from jitgemm.codegen.gemm_split import partial_problem
    from jitgemm.codegen.gemm_streamk import MAX_WORKGROUPS, plan

    from .split_k import partial_kernel, partial_values, run_reduction, workspace

    p = call.problem
    if not isinstance(workgroups, int) or isinstance(workgroups, bool) or not 1 <= workgroups <= MAX_WORKGROUPS:
        raise MatmulError(f"stream-K workgroups={workgroups!r}; accepted: an integer in 1..{MAX_WORKGROUPS} (the "
                          "compute units of the device, or a multiple)")
    try:
        kernel = partial_kernel(p, arch, config, mode="streamk")
        q = partial_problem(p, "streamk")
    except IRError as exc:
        raise MatmulError(str(exc)) from None
    c = kernel.config
    sk = {**plan(p.m, p.n, p.k, c.tile_m, c.tile_n, c.depth_k, workgroups), "tile_m": c.tile_m, "tile_n": c.tile_n}
    ws = workspace(p, sk["slots"]) if ws is None else ws
    part = GemmCall(q, partial_values(call, ws), ws, {**call.align, "d": 256})
    launch(part, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend=backend, strict=strict,
           split_k=workgroups)
    run_reduction(call, ws, sk["slots"], arch, backend, strict, sk)
    return call.d


def _our_split(problem: GemmProblem, arch: str, contract: Contract, blob: bytes, split_k: int | str,
               split_mode: str = "auto", source: str = "") -> tuple[int, str]:
    """(count, mode) of the direct generator's split-K kernels for matmul (count 1: run the chosen kernel);
    measured rows (`jitgemm tune`, `measured_split`) outrank the model's `choose_split`."""
    from .split_k import SPLIT_MODES

    if split_mode != "auto" and split_mode not in SPLIT_MODES:
        raise MatmulError(f"split_mode={split_mode!r}; accepted: auto, {', '.join(SPLIT_MODES)}")
    if split_k == "auto":
        from .split_k import auto_split_applies, choose_split

        if not auto_split_applies(problem, contract):
            return 1, "partial"
        measured = measured_split(problem, arch, contract, source)
        if measured is not None and split_mode in ("auto", measured[1]):
            return measured
        c = choose_split(problem, arch, chosen=(contract, blob), streamk=split_mode in ("auto", "streamk"))
        if split_mode not in ("auto", c.mode):
            return 1, "partial"
        return c.split_k, c.mode
    if not isinstance(split_k, int) or isinstance(split_k, bool) or split_k < 1:
        raise MatmulError(f"split_k={split_k!r}; accepted: 'auto' or a power of two >= 1 (stream-K: a workgroup "
                          "count)")
    return split_k, "partial" if split_mode == "auto" else split_mode


def _split_k(contract: Contract, blob: bytes, problem: GemmProblem, arch: str = "", source: str = "") -> int:
    """The split-K count for the chosen kernel (`source` = "supplier:label" as the selector names it): the split
    the deciding hardware-measured tuning row ran with, since that time is what made the kernel the winner
    (aiter's tables record each winner's splitK); else the timing model's fastest (`jitgemm.timing.best_split`)
    when the contract lets the kernel split K; else 1."""
    if not contract.split_k:
        return 1
    tuned = tuned_split(contract, problem, arch, source)
    if tuned is not None:
        return tuned
    from jitgemm.timing import TimingError, best_split
    from jitgemm.timing.pipeline import PipelineModelError

    try:
        return best_split((contract, blob), problem).split_k
    except (TimingError, PipelineModelError):
        return 1


def tuned_split(contract: Contract, problem: GemmProblem, arch: str, source: str) -> int | None:
    """The split-K count of the measured tuning row that ranks this kernel for this problem on `arch` (the
    selector's `deciding_row`), when the row records one the contract admits; None otherwise."""
    supplier, sep, label = source.partition(":")
    if not arch or not sep:
        return None
    from .selector import default_selector
    from .suppliers import Candidate

    key = Candidate(supplier, label, contract, lambda: (b"", "")).key
    row = default_selector(arch).tuning.deciding_row(arch, problem, key, contract.data)
    if row is None or row.metric != "seconds" or row.split_k is None:
        return None
    return None if contract.split_refusal(problem.k, row.split_k) else row.split_k


def measured_split(problem: GemmProblem, arch: str, contract, source: str) -> tuple[int, str] | None:
    """(count, mode) by hardware measurements: the fastest split-K launch `jitgemm tune` recorded for `problem` on
    `arch` (`tuning.tune_splits` rows) when it beat the chosen kernel's own measured time, (1, "partial") when
    the chosen kernel was faster; None unless both were measured (then the model decides). `source`: the chosen
    candidate as the selector names it ("supplier:label")."""
    import json

    supplier, sep, label = source.partition(":")
    if not sep:
        return None
    from .selector import default_selector
    from .split_k import SPLIT_MODES
    from .suppliers import Candidate

    db = default_selector(arch).tuning
    key = Candidate(supplier, label, contract, lambda: (b"", "")).key
    plain = db.deciding_row(arch, problem, key, contract.data)
    if plain is None or plain.metric != "seconds" or plain.source != "hardware":
        return None
    best: tuple[float, int, str] | None = None
    for r in db.rows(arch, problem, metric="seconds", source="hardware"):
        try:
            mode = json.loads(r.tools or "{}").get("split_mode")
        except ValueError:
            continue
        if mode in SPLIT_MODES and r.split_k is not None and r.contract_key.startswith(f"{mode}-split:") and \
                (best is None or r.value < best[0]):
            best = (r.value, r.split_k, mode)
    if best is None:
        return None
    return (best[1], best[2]) if best[0] < plain.value else (1, "partial")


def default_arch(problem: GemmProblem) -> str:
    """The target an 8-bit problem's dtypes name: OCP fp8 is gfx950's, FNUZ fp8 gfx942's; anything else gfx942."""
    return "gfx950" if "ocp" in (problem.a.flavour, problem.b.flavour) else "gfx942"


@accepts_dlpack("a", "b", "scale_a", "scale_b", "bias", error=MatmulError)
def scaled_matmul(a, b, scale_a, scale_b, *, out_dtype=None, bias: np.ndarray | None = None, arch: str | None = None,
                  backend: str = "auto", scale_mode: str | None = None, split_k: int | str = "auto",
                  split_mode: str = "auto") -> np.ndarray:
    """D = scaled(a @ b) + bias for 8-bit a and b (fp8/bf8 FNUZ on gfx942, OCP fp8_e4m3/e5m2 on gfx950, int8 on
    both) with fp32 scales, as vLLM's / PyTorch's scaled_mm and aiter's a8w8 GEMMs take them:

    - scale_a and scale_b single values (a number, shape () / (1,) / (1, 1)): per-tensor, D = sa * sb * (a @ b);
    - scale_a [M, 1] (per token) and scale_b [1, N] or [N] (per channel), either may be one value: rowcol;
    - scale_a [M, ceil(K/128)] (1x128 blocks) and scale_b [ceil(N/128), ceil(K/128)] (128x128 blocks of the
      logical (K, N) B): block, each 128-long K block's product scaled before it is summed. Row- or column-major
      arrays both work (a column-major one is read as stored: aiter's and DeepGEMM's transposed scales).

    `scale_mode` ("tensor", "rowcol", "block") overrides what the shapes say. out_dtype: fp32 (default), fp16 or
    bf16; bias: float32, length M or N. `arch` defaults to the target the fp8 flavour names (gfx942 for int8).
    With a 3-D a or b (batch entries), a 2-D scale array is shared by every entry and a 3-D one [batch, ...]
    ([batch, M, 1], [batch, 1, N], [batch, M, ceil(K/128)], [batch, 1, 1], ...) gives each entry its own.
    `split_k` / `split_mode` as in `matmul`: split-K and stream-K apply tensor/rowcol scales once in the
    reduction, block and MX scales per K range (jitgemm/split_k.py)."""
    where = _backend(backend)
    call = prepare(a, b, out_dtype=out_dtype, bias=bias, scales=(scale_a, scale_b, scale_mode))
    target = arch or default_arch(call.problem)
    blob, name, contract, source = _choose(call.problem, call.align, target)
    ours, mode = _our_split(call.problem, target, contract, blob, split_k, split_mode, source)
    if ours > 1:
        return split_launch(call, target, ours, backend=where, mode=mode)
    return launch(call, blob, name, contract, backend=where, source=source,
                  split_k=_split_k(contract, blob, call.problem, target, source))
