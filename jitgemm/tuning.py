"""`jitgemm tune`: time the selector's best-ranked legal candidates for a problem on the GPU with hip events and
record each measurement in the tuning database (source `hardware`), so the selector ranks by it from then
on. The launch is `api.launch`'s (same contract check, grid and argument packing); only the timing differs.
Where `matmul(split_k="auto")` would weigh the direct generator's split-K pair against the chosen kernel, every
split-K launch that decision ranks (K ranges and stream-K grids, `split_k.split_candidates`) is timed too: its
partial kernel and its reduction, as `api.split_launch` runs them."""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.codegen.gemm_ir import GemmProblem, IRError

from .suppliers import Candidate


class TuneError(IRError):
    """Tuning cannot run here (no GPU, no legal candidate); the message says why."""


@dataclass
class Timing:
    candidate: Candidate | None      # None for a split-K launch (`split`)
    seconds: float
    error: str | None = None
    split: tuple[str, int] | None = None     # (mode, count) of a split-K launch of the direct generator's kernels

    @property
    def label(self) -> str:
        if self.split is not None:
            return f"split-K {self.split[0]} x{self.split[1]}"
        return f"{self.candidate.supplier}:{self.candidate.label}"


def time_candidate(candidate: Candidate, problem: GemmProblem, iterations: int = 20,
                   seed: int = 0) -> tuple[float, str, str]:
    """(mean seconds per launch, kernel name, code sha256) of one candidate on random operands of `problem`
    (hip events)."""
    import hashlib

    from jitgemm.codegen import codeobj

    from .hip_runtime import run_hip
    from .packing import ordered_args
    from .qualify import problem_call

    call, _ = problem_call(problem, seed)      # operands and the scales of the problem's scale mode
    contract = candidate.contract
    ok, why = contract.admits(call.problem, call.align)
    if not ok:
        raise TuneError(f"{candidate.label}: cannot take this problem: {why}")
    blob, name = candidate.load()
    p = call.problem
    seconds = run_hip(blob, name, grid=contract.grid(p.m, p.n, p.k, p.batch), block=contract.workgroup,
                      args=ordered_args(contract, call.values), lds_bytes=contract.lds_bytes, timed=iterations)
    sha = hashlib.sha256(codeobj.read(blob).kernel(name).code).hexdigest()
    return float(seconds or 0.0), name, sha


def tune(selector, problem: GemmProblem, top: int = 8, iterations: int = 20, splits: bool = True) -> list[Timing]:
    """Time the `top` best-ranked legal candidates and record each in `selector.tuning`; with `splits`, also the
    split-K launches the split decision weighs against the best of them (`tune_splits`)."""
    from jitgemm import __version__

    from .hip_runtime import HipError, hip_available

    available, why = hip_available()
    if not available:
        raise TuneError(f"--backend hip: {why}")
    if iterations < 1 or top < 1:
        raise TuneError(f"top={top}, iterations={iterations}: both must be at least 1")
    legal = [v for v in selector.evaluate(problem) if v.legal][:top]
    if not legal:
        raise TuneError("no legal candidate for this problem (see jitgemm select --explain)")
    out = []
    for verdict in legal:
        cand = verdict.candidate
        try:
            seconds, name, sha = time_candidate(cand, problem, iterations)
        except (HipError, TuneError) as exc:
            out.append(Timing(cand, 0.0, str(exc)))
            continue
        selector.tuning.record(selector.target, problem, cand.key, seconds, kernel=name, code_sha256=sha,
                               contract=cand.contract.data,
                               tools={"jitgemm": __version__, "timer": "hipEventElapsedTime",
                                      "iterations": iterations}, origin=f"jitgemm tune {cand.supplier}:{cand.label}")
        out.append(Timing(cand, seconds))
    from .split_k import auto_split_applies

    if splits and auto_split_applies(problem, legal[0].candidate.contract):
        out += tune_splits(selector, problem, iterations)
    return out


def tune_splits(selector, problem: GemmProblem, iterations: int = 20, seed: int = 0) -> list[Timing]:
    """Time each split-K launch `split_k.choose_split` ranks for `problem` on the GPU (the partial kernel's and the
    reduction's hip-event means, added) and record it in `selector.tuning` under the partial kernel's key, with
    `tools.split_k` and `tools.split_mode` saying how it ran."""
    from jitgemm import __version__

    from .api import MatmulError, split_launch
    from .contract import Contract
    from .hip_runtime import HipError, timed_launches
    from .qualify import problem_call
    from .split_k import partial_kernel, split_candidates

    out = []
    for mode, count in split_candidates(problem, selector.target):
        try:
            kernel = partial_kernel(problem, selector.target, mode=mode)
            call, _ = problem_call(problem, seed)
            with timed_launches(iterations) as seconds:
                split_launch(call, selector.target, count, backend="hip", mode=mode)
        except (HipError, MatmulError, IRError) as exc:
            out.append(Timing(None, 0.0, str(exc), split=(mode, count)))
            continue
        timing = Timing(None, sum(seconds), split=(mode, count))
        selector.tuning.record(selector.target, problem, f"{mode}-split:{kernel.name}", timing.seconds,
                               kernel=kernel.name, contract=Contract.load(kernel.contract).data,
                               tools={"jitgemm": __version__, "timer": "hipEventElapsedTime", "iterations": iterations,
                                      "launches": len(seconds), "split_k": count, "split_mode": mode},
                               origin=f"jitgemm tune {timing.label}")
        out.append(timing)
    return out
