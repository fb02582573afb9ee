"""The timing model against hardware, and our kernels against aiter's through it.

1. Accuracy: every row of the pinned amd-aiter wheel's tuned tables whose winner is an assembly kernel of the
   wheel (jitgemm.aiter.inventory: its contract, its row's device from cu_num) is predicted by jitgemm.timing on
   its row's device at its row's split-K, beside the measured us (aiter's tuner on MI308X / MI355X): median and
   90th percentile of |predicted - measured| / measured and the Spearman rank correlation, per target and family,
   on the fitting half (even table lines; the profiles' fitted parameters were chosen there) and on the report
   half (odd lines). `--fit` re-runs the fit on the fitting half and prints the parameters it would choose.
2. Ours vs aiter's: for every tuned shape, our generators' best kernel (the selector's ranking over the direct
   and LLVM generators' candidates, by the same model) against the row's aiter kernel, both predicted on the row's
   device: ratio ours / aiter's (median, worst), and % of the device's peak at 8192^3 for bf16 on gfx942 and MXFP4 on
   gfx950, with the counters of the worst loss.

    python bench/bench_model.py [--fit] [--versus] [--wheel WHEEL]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def accuracy(inv) -> list:
    from jitgemm.timing import validation as v

    skipped: dict[str, int] = {}
    items = v.cases(inv, skipped)
    start = time.perf_counter()
    predicted = v.predict_cases(items)
    took = time.perf_counter() - start
    print(f"aiter {inv.version}: {len(items)} measured rows of asm kernels predicted in {took:.1f} s "
          f"({1e3 * took / max(1, len(items)):.1f} ms a row); skipped: {skipped or 'none'}")
    print("half | target | family | device | rows | median |err| | p90 |err| | Spearman | median pred/meas | "
          "goal (15% / 35% / 0.9)")
    for half in ("fit", "report"):
        for (arch, fam), a in v.table(items, predicted, half).items():
            dev = sorted({c.row.device for c in items if c.key == (arch, fam)})
            ok = a.median <= 0.15 and a.p90 <= 0.35 and a.spearman >= 0.9
            print(f"{half} | {arch} | {fam} | {','.join(dev)} | {a.rows} | {a.median:.1%} | {a.p90:.1%} | "
                  f"{a.spearman:.3f} | {a.median_ratio:.3f} | {'met' if ok else 'MISSED'}")
    every = v.accuracy([c.row.us for c in items], predicted)
    print(f"all rows ({every.rows}): median |err| {every.median:.1%}, p90 {every.p90:.1%}, Spearman "
          f"{every.spearman:.3f}, median pred/meas {every.median_ratio:.3f}")
    worst = sorted(zip(items, predicted, strict=True), key=lambda x: -abs(x[1] / x[0].row.us - 1))[:8]
    print("worst rows (report and fit): table:line m n k split measured_us predicted_us")
    for c, p in worst:
        r = c.row
        print(f"  {r.table}:{r.line} {r.m} {r.n} {r.k} {r.split_k} {r.us:.1f} {p:.1f}")
    return items


def refit(items) -> None:
    from jitgemm.timing import validation as v

    for target in sorted({c.row.arch for c in items}):
        p, score = v.fit(items, target)
        print(f"fit {target}: score {score:.4f} " + " ".join(f"{k}={getattr(p, k)}" for k in v.FITTED))


def versus(items) -> None:
    """Our generators' best kernel against the row's aiter kernel, both through the model on the row's device."""
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm import isa
    from jitgemm.selector import Selector, default_suppliers
    from jitgemm.suppliers import GeneratorSupplier
    from jitgemm.timing import predict
    from jitgemm.tuning_db import TuningDB

    ours = [s for s in default_suppliers() if isinstance(s, GeneratorSupplier)]
    import tempfile

    empty = TuningDB(Path(tempfile.mkdtemp()) / "empty.db")   # no measured rows: the model ranks
    selectors = {arch: Selector(ours, target=arch, tuning=empty) for arch in ("gfx942", "gfx950")}
    ratios: dict = defaultdict(list)
    refused: dict = defaultdict(int)
    start = time.perf_counter()
    for c in items:
        r = c.row
        try:
            legal = [x for x in selectors[r.arch].evaluate(r.problem) if x.legal]
        except Exception as exc:   # a supplier that cannot lower the operation
            refused[(r.arch, r.family, f"selector: {str(exc)[:60]}")] += 1
            continue
        if not legal:
            refused[(r.arch, r.family, "no legal kernel of ours")] += 1
            continue
        best = min((predict(x.candidate, r.problem, r.device) for x in legal[:4]), key=lambda p: p.us)
        theirs = predict(c.kernel, r.problem, r.device, split_k=max(1, r.split_k or 1))
        ratios[(r.arch, r.family)].append((best.us / theirs.us, r, best, theirs))
    print(f"\nours vs aiter's through the model ({time.perf_counter() - start:.0f} s): ratio = our predicted us / "
          "aiter's predicted us (>1: ours slower)")
    print("target | family | shapes | median ratio | worst ratio (shape) | ours faster on | not run by ours")
    for key, vals in sorted(ratios.items()):
        xs = sorted(v[0] for v in vals)
        worst = max(vals, key=lambda v: v[0])
        nr = sum(n for (a, f, _), n in refused.items() if (a, f) == key)
        print(f"{key[0]} | {key[1]} | {len(xs)} | {xs[len(xs) // 2]:.2f} | {worst[0]:.2f} ({worst[1].m}x{worst[1].n}x"
              f"{worst[1].k}) | {sum(x < 1 for x in xs)} | {nr}")
        w = worst
        print(f"   worst: ours {w[2].kernel} {w[2].us:.1f} us bound={w[2].bound} "
              f"occupancy={w[2].counters['occupancy']} mfma_util={w[2].counters['mfma_utilisation']} "
              f"stalls={w[2].stalls_us}")
        print(f"          aiter {w[3].kernel} {w[3].us:.1f} us bound={w[3].bound} "
              f"occupancy={w[3].counters['occupancy']} mfma_util={w[3].counters['mfma_utilisation']} "
              f"stalls={w[3].stalls_us}")
    for (a, f, why), n in sorted(refused.items()):
        print(f"   not run by ours: {a} {f}: {n} shapes ({why})")
    # % of peak at 8192^3
    for arch, dt, kw in (("gfx942", "bf16", {"layout": "NT"}),
                         ("gfx950", "fp4", {"layout": "NT", "a_scale": "plain", "b_scale": "plain"})):
        dev = isa.target_profile(arch).device()
        p = GemmProblem.make(8192, 8192, 8192, dt, dt, "bf16", **kw)
        legal = [x for x in selectors[arch].evaluate(p) if x.legal]
        if not legal:
            print(f"{arch} {dt} 8192^3: no kernel of ours")
            continue
        best = min((predict(x.candidate, p, dev) for x in legal[:4]), key=lambda q: q.us)
        peak = dev.peak_matrix_tflops["fp4" if dt == "fp4" else dt]
        print(f"{arch} {dev.name} {dt} 8192^3: ours {best.kernel} {best.us:.0f} us {best.tflops:.0f} TFLOP/s = "
              f"{best.tflops / peak:.1%} of the {peak:.0f} TFLOP/s data-sheet peak; bound={best.bound} "
              f"occupancy={best.counters['occupancy']} mfma_util={best.counters['mfma_utilisation']} "
              f"stalls={best.stalls_us}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--wheel", help="the amd-aiter wheel (default: the pinned one, tests/fixtures/aiter_corpus.py)")
    ap.add_argument("--fit", action="store_true", help="re-run the fit on the fitting half")
    ap.add_argument("--versus", action="store_true", help="our kernels against aiter's through the model")
    args = ap.parse_args(argv)
    from jitgemm.aiter import inventory

    if args.wheel:
        wheel = Path(args.wheel)
    else:
        from tests.fixtures.aiter_corpus import aiter_wheel

        wheel = aiter_wheel()
    items = accuracy(inventory(wheel))
    if args.fit:
        refit(items)
    if args.versus:
        versus(items)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
