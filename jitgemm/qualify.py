"""Qualification: run every kernel of a supplier in the emulator on random problems drawn from the region its
contract declares legal, compare with numpy; a kernel that fails is quarantined with the failing case and is
never selected."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from jitgemm.codegen.gemm_ir import GemmProblem, IRError

from .contract import Contract
from .reference import Mismatch, check
from .selector import Quarantine
from .suppliers import Candidate


@dataclass
class QualifyResult:
    candidate: Candidate
    cases: int
    failure: str | None
    strict: bool = True   # whether the cases ran in strict mode (waits, barriers, hazards checked)


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def draw_problems(contract: Contract, count: int, rng: random.Random, max_size: int = 96) -> list[GemmProblem]:
    """Random problems inside the contract's legal region (small, for the emulator)."""
    op, leg, feat = contract.data["operation"], contract.data.get("legality", {}), contract.data["features"]
    out = []
    attempts = 0
    while len(out) < count and attempts < 50 * count:
        attempts += 1
        dims = {}
        for dim in ("m", "n", "k"):
            lo = leg.get("min", {}).get(dim, 1)
            hi = min(leg.get("max", {}).get(dim, max_size), max(max_size, lo))
            div = leg.get("divisible", {}).get(dim, 1)
            if dim == "k" and any(op.get(key, "none") != "none" for key in ("a_scale", "b_scale", "b_preshuffle")):
                # block-scaled rows: whole 32-element scale blocks, 16x16 pre-shuffled rows of 32 bytes
                div = math.lcm(div, 64)
                hi = max(hi, 256)
            dims[dim] = _round_up(rng.randint(lo, hi), div)
        ldm = leg.get("ld_multiple", {})
        transposed = {"a": op["layout"][0] == "T", "b": op["layout"][1] == "T"}
        rows = {"a": dims["m"] if transposed["a"] else dims["k"], "b": dims["k"] if transposed["b"] else dims["n"]}
        lds = {f"ld{x}": _round_up(rows[x] + rng.choice([0, 0, 3]), ldm.get(x, 1)) for x in ("a", "b")}
        c = op.get("c") if feat.get("c_input") and not (feat.get("c_alias_d") and rng.random() < 0.5) else None
        mx = {key: op[key] for key in ("a_scale", "b_scale", "b_preshuffle") if key in op}
        if mx:
            lds = {}    # block-scaled operands are quantized packed (problem_call)
        for operand, want in leg.get("ld_equal", {}).items():
            if f"ld{operand}" in lds:
                lds[f"ld{operand}"] = want
        try:
            problem = GemmProblem.make(
                dims["m"], dims["n"], dims["k"], op["a"], op["b"], op["d"], c=c, layout=op["layout"], **mx,
                batch=rng.choice([1, 2]) if leg.get("batch") else 1, **lds,
                alpha=rng.choice([1.0, 0.5, -2.0]) if feat.get("alpha") else 1.0,
                beta=rng.choice([0.5, -1.0]) if c else 0.0,
                bias=rng.choice(feat.get("bias", ["none"])), activation=rng.choice(feat.get("activation", ["none"])),
                scale_mode=op.get("scale_mode", "none"), a_scale_order=op.get("a_scale_order", "row"),
                b_scale_order=op.get("b_scale_order", "row"))
        except IRError:
            continue
        if contract.admits(problem)[0]:
            out.append(problem)
    return out


def qualify_candidate(candidate: Candidate, cases: int = 3, seed: int = 0,
                      quarantine: Quarantine | None = None, strict: bool | str = True) -> QualifyResult:
    """Run `cases` random legal problems; on the first mismatch, fault or (strict, the default) missing wait,
    barrier or wait state, quarantine the kernel: a kernel that races on hardware is refused, not passed."""
    from .api import MatmulError, launch
    from .emu import EmulatorError

    rng = random.Random(seed)
    blob, name = candidate.load()
    problems = draw_problems(candidate.contract, cases, rng)
    if not problems:
        failure = "its contract admits no problem that could be drawn"
    else:
        failure = None
    for i, problem in enumerate(problems):
        call, want = problem_call(problem, seed + i)
        try:
            d = launch(call, blob, name, candidate.contract, backend="emu", source=candidate.label, strict=strict)
            check(call.problem, d, want)
        except (Mismatch, EmulatorError, MatmulError) as exc:
            failure = f"{problem_text(problem)}: {exc}"
            break
    if failure and quarantine is not None:
        quarantine.add(candidate.key, failure)
    return QualifyResult(candidate, len(problems), failure, bool(strict))


def problem_text(problem: GemmProblem) -> str:
    from jitgemm.codegen.gemm_text import format_problem

    return format_problem(problem)


def problem_call(problem, seed: int = 0):
    """(prepared call, numpy float64 reference) for random operands of `problem`; a block-scaled problem's
    operands are MXTensors quantized by jitgemm.mx in the scale and weight layouts the problem names."""
    import numpy as np

    from .api import prepare
    from .reference import operands, reference, stored_scales

    if not problem.scaled:
        a, b, c, bias = operands(problem, seed)
        scales = stored_scales(problem, seed)      # fp32 scale modes (None, None without one)
        mode = problem.scale_mode
        call = prepare(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                       activation=problem.activation,
                       scales=None if mode == "none" else
                       (*scales, mode, {"a": problem.a_scale_order, "b": problem.b_scale_order}))
        return call, reference(problem, a, b, c, bias, *scales)
    from . import mx

    rng = np.random.default_rng(seed)
    qa = mx.quantize_mx(rng.standard_normal((problem.m, problem.k)), problem.a.name, axis=1)
    qb = mx.weights(rng.standard_normal((problem.n, problem.k)), problem.b.name)
    if problem.a_scale == "shuffled":
        qa = qa.shuffle(scales=True)
    if problem.b_scale == "shuffled" or problem.b_preshuffle != "none":
        qb = qb.shuffle(scales=problem.b_scale == "shuffled", weight=problem.b_preshuffle != "none")
    want = qa.dequantize() @ qb.dequantize()
    call = prepare(qa, qb, out_dtype=problem.d.numpy)
    return call, want
