"""Split-K GEMMs: a partial-sum kernel over K ranges, then a deterministic reduction that applies the epilogue
(codegen/gemm_split.py says why and how). Decode shapes (small M) leave most compute units idle with one
workgroup per output tile; split_k ranges multiply the workgroups by split_k at the price of a workspace of
4 * split_k * M * N bytes written once and read once.

`jitgemm.api.split_launch(call, arch, split_k)` runs a prepared call that way with these kernels; `choose_split(problem,
arch)` asks the timing model (jitgemm.timing.predict with split_k) whether splitting wins and by how much.
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
from jitgemm.codegen.kernel_abi import KERNARG_SIZE, KERNARGS

REDUCE_THREADS = 256


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


def partial_kernel(problem: GemmProblem, arch: str, config: GemmConfig | None = None, generator: str = "asm"):
    """The compiled partial-sum kernel (jitgemm.kernel.Kernel) of `problem`: the direct generator's (or the LLVM
    generator's, `generator="llvm"`: the same ranges and workspace), its default config for the partial class
    unless one is given."""
    from .kernel import compile as compile_config

    return compile_config(partial_problem(problem), config, arch=arch, generator=generator)


@functools.lru_cache(maxsize=64)
def reduce_kernel(problem_class: GemmProblem, arch: str) -> tuple[bytes, str, float]:
    """(code object, symbol, compile seconds) of the reduction kernel for a problem class (epilogue + output)."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.llvm.backend import data_layout, run_backend
    from jitgemm.codegen.llvm.split_reduce import reduce_llir

    start = time.perf_counter()
    cpu = codeobj.targets.target(arch).name
    name = "jitgemm_splitk_reduce"
    llir = reduce_llir(problem_class, name, data_layout(cpu, ""))
    obj = run_backend(llir, cpu=cpu, output="object", kernel=name).data
    blob = codeobj.link(obj, names=[f"{name}.o"])
    return blob, name, time.perf_counter() - start


def workspace(problem: GemmProblem, split_k: int) -> np.ndarray:
    """The partial sums' workspace, poisoned (NaN / INT32_MIN): every element must be written by the partials."""
    p = problem
    if p.acc.kind == "float":
        return np.full((split_k, p.m, p.n), np.nan, np.float32)
    return np.full((split_k, p.m, p.n), np.iinfo(np.int32).min, np.int32)


def _reduce_segment(values: dict, ws: np.ndarray, split_k: int, integer: bool):
    from jitgemm.codegen.codeobj.launch import PackedSegment

    m, n = ws.shape[1], ws.shape[2]
    vals = {**values, "a": ws.reshape(-1), "b": None, "batch": split_k, "lda": n, "stride_a": m * n}
    pointers = [(name, off) for name, off, _s, kind in KERNARGS if kind == "ptr"]
    buffers = tuple(vals[x] for x, _ in pointers if vals.get(x) is not None)

    def pack(pointer_of) -> bytes:
        buf = bytearray(KERNARG_SIZE)
        index = 0
        for name, off, size, kind in KERNARGS:
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


def run_reduction(call, ws: np.ndarray, split_k: int, arch: str, backend: str = "emu", strict: bool = False) -> None:
    """The reduction kernel over the workspace `ws` into call.d: D = epilogue(sum over z of ws[z])."""
    p = call.problem
    blob, name, _ = reduce_kernel(p.kernel_class(), arch)
    grid = (math.ceil(p.n / REDUCE_THREADS), p.m, 1)
    args = [_reduce_segment(call.values, ws, split_k, not p.epilogue_float)]
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
            "stride_a": 0, "stride_b": 0, "stride_c": 0, "alpha": 1 if integer else 1.0, "beta": 0 if integer else 0.0}


def choose_split(problem: GemmProblem, arch: str, *, device=None, max_split: int = MAX_SPLIT, chosen=None,
                 margin: float = 0.9) -> SplitChoice:
    """The timing model's best split count for `problem` with the direct generator's split-K pair, against the
    kernel `chosen` ((contract, code object) or a Kernel; default: the direct generator's default kernel; matmul,
    explain and the bench pass the selector's choice).
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
    s = 2
    while s <= max_split and split_refusal(problem, part.config.depth_k, s) is None:
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
        s *= 2
    return best


def reduce_us(problem: GemmProblem, split_k: int, arch: str, device=None) -> float:
    """The reduction's predicted time: a streaming kernel bound by HBM (read split_k partials of 4 bytes, C if
    any, write D) plus one launch, with the timing model's own device figures and fitted launch time and HBM
    efficiency (jitgemm.timing.model.params, specs/targets/<arch>.yaml)."""
    from jitgemm import isa

    from .timing.model import params, resolve_device

    profile = isa.target_profile(arch)
    dev = resolve_device(profile, device)
    pr = params(profile)
    p = problem
    bytes_moved = p.m * p.n * (4 * split_k + p.d.bytes + (p.c.bytes if p.c is not None else 0))
    return bytes_moved / (float(dev.hbm_gbs) * 1e3 * pr.hbm_efficiency) + pr.launch_us
