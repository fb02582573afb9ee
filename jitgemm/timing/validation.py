"""How far the timing model is from hardware: aiter's tuned tables hold measured microseconds of aiter's assembly
kernels, whose code objects are in the same wheel. Every row whose winner is such a kernel (with a contract, a
device and a problem jitgemm's IR expresses) is predicted on its row's device at its row's split-K.

The rows are split in two declared halves by their line in the table: even lines are the fitting half (the four
fitted parameters of the profiles' `timing` sections were chosen on them, `fit`), odd lines the report half. The
accuracy test (tests/jitgemm/test_timing_accuracy.py) and bench/bench_model.py read the report half.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .model import Params, _time, kernel_facts, params
from .trace import trace

FITTED = ("clock_efficiency", "launch_us", "vmem_latency_passes", "hbm_efficiency", "mall_efficiency")
GRID = {"clock_efficiency": (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 1.0),
        "launch_us": (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0),
        "vmem_latency_passes": (80, 150, 200, 250, 400, 600, 900),
        "hbm_efficiency": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        "mall_efficiency": (0.3, 0.5, 0.7, 1.0)}


@dataclass(frozen=True)
class Case:
    """One measured row and the kernel that ran it."""

    row: object                # jitgemm.aiter TunedRow
    kernel: object             # jitgemm.aiter AiterKernel
    half: str                  # "fit" (even line) or "report" (odd line)

    @property
    def key(self) -> tuple[str, str]:
        return (self.row.arch, self.row.family)


@dataclass(frozen=True)
class Accuracy:
    """|predicted - measured| / measured over rows: count, median, 90th percentile; Spearman rank correlation of
    predicted and measured times; the median of predicted / measured (above 1: the model predicts too slow)."""

    rows: int
    median: float
    p90: float
    spearman: float
    median_ratio: float = float("nan")


def cases(inv, skipped: dict[str, int] | None = None) -> list[Case]:
    """The rows of an inventory the model can be checked on; `skipped` counts the others by reason."""
    kernels = {k.label: k for k in inv.kernels}
    out = []
    for row in inv.tuned_rows:
        if not row.asm:
            continue
        kernel = kernels.get(row.kernel_label or "")
        why = ("no kernel of the wheel" if kernel is None else "no contract" if kernel.contract is None
               else "no device (the table has no cu_num)" if row.device is None
               else "no problem: " + row.unexpressed if row.problem is None else None)
        if why:
            if skipped is not None:
                skipped[why] = skipped.get(why, 0) + 1
            continue
        out.append(Case(row, kernel, "fit" if row.line % 2 == 0 else "report"))
    return out


def predict_cases(items: Sequence[Case], overrides: dict[str, Params] | None = None) -> list[float]:
    """Predicted us of each case (the profile's parameters, or `overrides` per target)."""
    from jitgemm import isa

    out = []
    for c in items:
        facts = kernel_facts(c.kernel)
        profile = isa.target_profile(facts.target)
        p = (overrides or {}).get(facts.target) or params(profile)
        tr = trace(facts.code, facts.target, {"vmem": p.vmem_latency_passes})
        split = max(1, int(c.row.split_k or 1))
        out.append(_time(facts, tr, c.row.problem, profile.device(c.row.device), profile, p, split).us)
    return out


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for value in np.unique(x):          # ties share their mean rank
        tied = x == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(a: Iterable[float], b: Iterable[float]) -> float:
    x, y = np.asarray(list(a), float), np.asarray(list(b), float)
    if len(x) < 3:
        return float("nan")
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def accuracy(measured: Sequence[float], predicted: Sequence[float]) -> Accuracy:
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    err = np.abs(p - m) / m
    return Accuracy(len(m), float(np.median(err)), float(np.percentile(err, 90)), spearman(m, p),
                    float(np.median(p / m)))


def table(items: Sequence[Case], predicted: Sequence[float], half: str = "report") -> dict[tuple[str, str], Accuracy]:
    """Accuracy per (target, family) over one half."""
    groups: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for c, p in zip(items, predicted, strict=True):
        if c.half == half:
            meas, pred = groups.setdefault(c.key, ([], []))
            meas.append(c.row.us)
            pred.append(p)
    return {key: accuracy(m, p) for key, (m, p) in sorted(groups.items())}


def fit(items: Sequence[Case], target: str, rounds: int = 2) -> tuple[Params, float]:
    """Coordinate descent over `GRID` on the fitting half of one target's cases, minimising median + p90/2 of
    |log(predicted / measured)|; returns the parameters and their score."""
    from jitgemm import isa

    chosen = [c for c in items if c.half == "fit" and c.row.arch == target]
    best_p = params(isa.target_profile(target))

    def score(p: Params) -> float:
        pred = predict_cases(chosen, {target: p})
        err = np.abs(np.log(np.asarray(pred) / np.asarray([c.row.us for c in chosen])))
        return float(np.median(err) + 0.5 * np.percentile(err, 90))

    best = score(best_p)
    for _ in range(rounds):
        for key in FITTED:
            for value in GRID[key]:
                trial = dataclasses.replace(best_p, **{key: value})
                s = score(trial)
                if s < best - 1e-12:
                    best, best_p = s, trial
    return best_p, best if math.isfinite(best) else float("nan")
