"""Split-K GEMMs: a partial-sum kernel over K ranges, then a deterministic reduction that applies the epilogue
(codegen/gemm_split.py says why and how). Decode shapes (small M) leave most compute units idle with one
workgroup per output tile; split_k ranges multiply the workgroups by split_k at the price of a workspace of
4 * split_k * M * N bytes written once and read once. Two other modes (SPLIT_MODES): stream-K
(codegen/gemm_streamk.py: a persistent grid, equal shares of tiles x K steps, a slot workspace and a per-tile
reduction) and atomic split-K (the ranges add into a zeroed fp32/int32 D; no workspace, no epilogue, fp32 order
not fixed). Scales: tensor/rowcol once in the reduction, block and MX per K range inside the kernel.

`jitgemm.api.split_launch(call, arch, split_k, mode=...)` runs a prepared call that way with these kernels;
`choose_split(problem, arch)` asks the timing model (jitgemm.timing.predict with split_k, or streamk=g) whether
splitting or stream-K wins and by how much.
"""

from __future__ import annotations

import functools
import math
import struct
import time
from dataclasses import dataclass

import numpy as np

from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_split import MAX_SPLIT, partial_problem, split_refusal

REDUCE_THREADS = 256
REDUCE_NAME = "jitgemm_splitk_reduce"      # the reduction kernel's symbol


@dataclass(frozen=True)
class SplitChoice:
    """The timing model's verdict for one problem: the best split count and the predicted microseconds of the
    plain kernel, of the split partial kernel, of the reduction and of the split total."""

    split_k: int
    us_plain: float
    us_split: float
    us_partial: float
    us_reduce: float
    config: GemmConfig | None
    reason: str
    mode: str = "partial"     # SPLIT_MODES: "partial" (split_k K ranges) or "streamk" (split_k workgroups)


SPLIT_MODES = ("partial", "atomic", "streamk")


def partial_kernel(problem: GemmProblem, arch: str, config: GemmConfig | None = None, mode: str = "partial",
                   generator: str = "asm"):
    """The compiled split-K kernel (jitgemm.kernel.Kernel) of `problem` for `mode` (SPLIT_MODES): the direct
    generator's (or, for "partial", the LLVM generator's, `generator="llvm"`: the same ranges and workspace), its
    default config for that class unless one is given."""
    from .kernel import compile as compile_config

    return compile_config(partial_problem(problem, mode), config, arch=arch, generator=generator)


def atomic_refusal(problem: GemmProblem) -> str | None:
    """Why `problem` cannot run as atomic split-K (None: it can): the ranges add raw sums straight into D."""
    p = problem
    if p.d != p.acc or p.alpha != 1.0 or p.beta != 0.0 or p.c is not None or p.bias != "none" \
            or p.activation != "none":
        return (f"split_mode='atomic' adds raw {p.acc.name} sums into D: out_dtype {p.acc.name}, no alpha, beta, c, "
                f"bias or activation (this problem: {p.d.name} out{', with an epilogue' if p.d == p.acc else ''}); "
                "use split_mode='partial' (a reduction kernel applies the epilogue)")
    return None


@functools.lru_cache(maxsize=64)
def reduce_kernel(problem_class: GemmProblem, arch: str, tiles: tuple[int, int] | None = None
                  ) -> tuple[bytes, str, float]:
    """(code object, symbol, compile seconds) of the reduction kernel for a problem class (epilogue + output);
    `tiles` (tile_m, tile_n): the stream-K variant (per-tile slot counts)."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.llvm.backend import data_layout, run_backend
    from jitgemm.codegen.llvm.split_reduce import reduce_llir

    start = time.perf_counter()
    cpu = codeobj.targets.target(arch).name
    name = REDUCE_NAME
    llir = reduce_llir(problem_class, name, data_layout(cpu, ""), tiles)
    obj = run_backend(llir, cpu=cpu, output="object", kernel=name).data
    blob = codeobj.link(obj, names=[f"{name}.o"])
    return blob, name, time.perf_counter() - start


def workspace(problem: GemmProblem, split_k: int) -> np.ndarray:
    """The partial sums' workspace, poisoned (NaN / INT32_MIN): every element must be written by the partials."""
    p = problem
    shape = (p.batch * split_k, p.m, p.n)         # entry e's ranges are slices e * split_k ...
    if p.acc.kind == "float" or p.scale_mode == "block":      # block: scaled fp32 running sums
        return np.full(shape, np.nan, np.float32)
    return np.full(shape, np.iinfo(np.int32).min, np.int32)


def _reduce_segment(p: GemmProblem, values: dict, ws: np.ndarray, split_k: int, streamk: dict | None = None):
    from jitgemm.codegen.codeobj.launch import PackedSegment
    from jitgemm.codegen.kernel_abi import kernarg_size, kernargs

    integer = not p.epilogue_float
    layout = kernargs(p)

    m, n = ws.shape[1], ws.shape[2]
    vals = {**values, "a": ws.reshape(-1), "b": None, "batch": split_k, "lda": n, "stride_a": m * n}
    if streamk:
        vals.update({"ldb": streamk["share"], "stride_b": streamk["iters"]})
    pointers = [(name, off) for name, off, _s, kind in layout if kind == "ptr"]
    buffers = tuple(vals[x] for x, _ in pointers if vals.get(x) is not None)

    def pack(pointer_of) -> bytes:
        buf = bytearray(kernarg_size(p))
        index = 0
        for name, off, size, kind in layout:
            v = vals.get(name)
            if kind == "ptr":
                if v is not None:
                    buf[off:off + 8] = int(pointer_of(v, index)).to_bytes(8, "little")
                index += 1
            elif kind == "f32" and not integer:
                buf[off:off + 4] = struct.pack("<f", float(v or 0.0))
            else:
                buf[off:off + size] = (int(v or 0) & 0xFFFFFFFF).to_bytes(size, "little")
        return bytes(buf)

    return PackedSegment(buffers, pack)


def run_reduction(call, ws: np.ndarray, split_k: int, arch: str, backend: str = "emu", strict: bool = False,
                  streamk: dict | None = None) -> None:
    """The reduction kernel over the workspace `ws` into call.d: D = epilogue(sum over z of ws[z]); `streamk`
    (codegen/gemm_streamk.plan + tile_m/tile_n): each tile sums its own slot count."""
    p = call.problem
    tiles = (streamk["tile_m"], streamk["tile_n"]) if streamk else None
    blob, name, _ = reduce_kernel(p.kernel_class(), arch, tiles)
    grid = (math.ceil(p.n / REDUCE_THREADS), p.m, p.batch)
    args = [_reduce_segment(p, call.values, ws, split_k, streamk)]
    if backend == "hip":
        from .hip_runtime import run_hip

        run_hip(blob, name, grid=grid, block=(REDUCE_THREADS, 1, 1), args=args)
    else:
        from .emu import emulate

        emulate(blob, name, grid=grid, block=(REDUCE_THREADS, 1, 1), args=args, lds_bytes=0, strict=strict)


def partial_values(call, ws: np.ndarray) -> dict:
    """The partial kernel's argument values: the call's operands, D = the workspace, no epilogue."""
    p = call.problem
    integer = not p.epilogue_float
    return {**call.values, "d": ws.reshape(-1), "c": None, "bias": None, "ldd": p.n, "stride_d": p.m * p.n,
            "stride_c": 0, "alpha": 1 if integer else 1.0, "beta": 0 if integer else 0.0}


def choose_split(problem: GemmProblem, arch: str, *, device=None, max_split: int = MAX_SPLIT, chosen=None,
                 margin: float = 0.9, streamk: bool = True) -> SplitChoice:
    """The timing model's best split count for `problem` with the direct generator's split-K pair, against the
    kernel `chosen` ((contract, code object) or a Kernel; default: the direct generator's default kernel; matmul,
    explain and the bench pass the selector's choice).
    `streamk`: also rank the stream-K pair (`streamk_choice`, one workgroup per compute unit); the faster wins.
    Splitting wins only when predicted below `margin` x the chosen kernel's time (the model's error is ~10-20%
    median; a near tie is not worth a workspace and a second launch). 1: do not split."""
    from .timing import TimingError, predict
    from .timing.pipeline import PipelineModelError

    try:
        if chosen is None:      # the direct generator's default kernel (callers pass the selector's choice)
            from .kernel import compile as compile_config

            chosen = compile_config(problem, None, arch=arch, generator="asm")
        us_plain = predict(chosen, problem, device).us
    except (TimingError, PipelineModelError, IRError) as exc:
        return SplitChoice(1, math.nan, math.nan, math.nan, math.nan, None, f"no prediction: {exc}")
    try:
        part = partial_kernel(problem, arch)
    except IRError as exc:     # batched, scaled: no split-K pair
        return SplitChoice(1, us_plain, us_plain, us_plain, 0.0, None, f"no split-K: {exc}")
    q = partial_problem(problem)
    best = SplitChoice(1, us_plain, us_plain, us_plain, 0.0, None, "one split is fastest")
    for s in split_counts(problem, part.config.depth_k, max_split):
        try:
            us_part = predict(part, q, device, split_k=s).us
        except (TimingError, PipelineModelError):
            break
        us_red = reduce_us(problem, s, arch, device)
        total = us_part + us_red
        if total < best.us_split and total < margin * us_plain:
            best = SplitChoice(s, us_plain, total, us_part, us_red, part.config,
                               f"split_k={s}: partials {us_part:.2f} us + reduction {us_red:.2f} us < "
                               f"{margin:g} x chosen kernel {us_plain:.2f} us")
    if streamk:
        sk = streamk_choice(problem, arch, device, us_plain, margin)
        if sk is not None and sk.us_split < best.us_split:
            best = sk
    return best


def streamk_choice(problem: GemmProblem, arch: str, device, us_plain: float, margin: float = 0.9
                   ) -> SplitChoice | None:
    """The stream-K candidate: a persistent grid of compute units x 1, 2, 4 ... up to the kernel's workgroups per
    CU (the paper's grid is one workgroup per SM at full occupancy, arXiv 2301.03598 section 4; Tensile's StreamK
    grid is CUs x occupancy), the one whose predicted segments kernel + per-tile reduction is fastest; None when it
    does not beat `margin` x the chosen kernel or cannot be predicted."""
    from jitgemm.codegen.gemm_streamk import plan

    from .timing import TimingError, predict
    from .timing.pipeline import PipelineModelError

    try:
        kernel = partial_kernel(problem, arch, mode="streamk")
        counts = streamk_counts(kernel, arch, device)
    except (TimingError, PipelineModelError, IRError):
        return None
    c, p = kernel.config, problem
    q = partial_problem(p, "streamk")
    tiles_n = -(-p.n // c.tile_n)
    best = None
    for g, cus, per in counts:
        try:
            us_part = predict(kernel, q, device, streamk=g).us
        except (TimingError, PipelineModelError):
            return None
        sk = plan(p.m, p.n, p.k, c.tile_m, c.tile_n, c.depth_k, g)
        # mean slots an element sums: each tile's count weighted by its (tail-clipped) area
        slots = sum(cnt * min(c.tile_m, p.m - (t // tiles_n) * c.tile_m)
                    * min(c.tile_n, p.n - (t % tiles_n) * c.tile_n) for t, cnt in enumerate(sk["count"])) / (p.m * p.n)
        us_red = reduce_us(p, slots, arch, device)
        total = us_part + us_red
        if best is None or total < best.us_split:
            best = SplitChoice(g, us_plain, total, us_part, us_red, c,
                               f"stream-K over {g} workgroups ({cus} CUs x {per}; {sk['tiles']} tiles x {sk['iters']} "
                               f"K steps, {sk['share']} each, {sk['slots']} slots): segments {us_part:.2f} us + "
                               f"reduction {us_red:.2f} us < {margin:g} x chosen kernel {us_plain:.2f} us", "streamk")
    return best if best is not None and best.us_split < margin * us_plain else None


def split_counts(problem: GemmProblem, depth_k: int, max_split: int = MAX_SPLIT) -> list[int]:
    """The K-range counts `choose_split` weighs: 2, 4, 8 ... up to `max_split`, while the partial kernel (of K tile
    `depth_k`) takes them (`split_refusal`)."""
    out, s = [], 2
    while s <= max_split and split_refusal(problem, depth_k, s) is None:
        out.append(s)
        s *= 2
    return out


def streamk_counts(kernel, arch: str, device=None) -> list[tuple[int, int, int]]:
    """(workgroups, compute units, workgroups per CU) of the stream-K grids `streamk_choice` weighs for the stream-K
    `kernel`: the device's CUs x 1, 2, 4 and x the kernel's workgroups per CU, none above that occupancy."""
    from jitgemm import isa

    from .timing.model import kernel_facts, occupancy, params, resolve_device

    profile = isa.target_profile(arch)
    per_cu = max(1, int(occupancy(kernel_facts(kernel), profile, params(profile))["workgroups_per_cu"]))
    cus = int(resolve_device(profile, device).cu_num)
    return [(cus * per, cus, per) for per in sorted({1, 2, 4, per_cu}) if per <= per_cu]


def split_candidates(problem: GemmProblem, arch: str, device=None, max_split: int = MAX_SPLIT
                     ) -> list[tuple[str, int]]:
    """(mode, count) of every split-K launch `choose_split` ranks for `problem`: ("partial", K ranges) and
    ("streamk", workgroups); empty where the direct generator has no split-K kernel for it. `jitgemm tune` times
    the same list, so a measured row exists for whatever the model might pick."""
    from .timing import TimingError
    from .timing.pipeline import PipelineModelError

    out: list[tuple[str, int]] = []
    try:
        out += [("partial", s) for s in split_counts(problem, partial_kernel(problem, arch).config.depth_k,
                                                     max_split)]
        out += [("streamk", g) for g, _, _ in streamk_counts(partial_kernel(problem, arch, mode="streamk"), arch,
                                                              device)]
    except (TimingError, PipelineModelError, IRError):
        pass
    return out


def auto_split_applies(problem: GemmProblem, contract) -> bool:
    """Whether `matmul(split_k="auto")` weighs the split-K pair against the chosen kernel (`contract`): decode shapes
    (M <= 64, K >= 1024) whose chosen kernel does not split K itself."""
    return problem.m <= 64 and problem.k >= 1024 and not contract.split_k


def reduce_us(problem: GemmProblem, split_k: float, arch: str, device=None) -> float:
    """The reduction's predicted time: a streaming kernel bound by HBM (read split_k partials of 4 bytes per
    element -- for stream-K the mean slot count --, C if any, write D) plus one launch, with the timing model's
    own device figures and fitted launch time and HBM efficiency (jitgemm.timing.model.params,
    specs/targets/<arch>.yaml)."""
    from jitgemm import isa

    from .timing.model import params, resolve_device

    profile = isa.target_profile(arch)
    dev = resolve_device(profile, device)
    pr = params(profile)
    p = problem
    bytes_moved = p.m * p.n * (4 * split_k + p.d.bytes + (p.c.bytes if p.c is not None else 0))
    return bytes_moved / (float(dev.hbm_gbs) * 1e3 * pr.hbm_efficiency) + pr.launch_us
