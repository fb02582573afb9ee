"""Qualification: run every kernel of a supplier in the emulator on random problems drawn from the region its
contract declares legal, compare with numpy; a kernel that fails is quarantined with the failing case and is
never selected."""

from __future__ import annotations

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
            dims[dim] = _round_up(rng.randint(lo, hi), div)
        ldm = leg.get("ld_multiple", {})
        transposed = {"a": op["layout"][0] == "T", "b": op["layout"][1] == "T"}
        rows = {"a": dims["m"] if transposed["a"] else dims["k"], "b": dims["k"] if transposed["b"] else dims["n"]}
        lds = {f"ld{x}": _round_up(rows[x] + rng.choice([0, 0, 3]), ldm.get(x, 1)) for x in ("a", "b")}
        c = op.get("c") if feat.get("c_input") and not (feat.get("c_alias_d") and rng.random() < 0.5) else None
        mx = {key: op[key] for key in ("a_scale", "b_scale", "b_preshuffle") if key in op}
        if mx:
            lds = {}    # block-scaled operands are quantized packed (jitgemm.abi_proof.problem_call)
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
    from .abi_proof import problem_call
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
