"""Measured selection over aiter's own tuning tables: for every shape of the pinned amd-aiter wheel's tuned tables
whose winner is an assembly object of the wheel (and whose operation jitgemm's IR expresses), which aiter kernel
jitgemm's selector picks

  - with the tables imported (`jitgemm.aiter.tuned.import_rows` into a fresh tuning database): it should be the
    measured winner, and `explain` cites the row;
  - without them (the model alone ranks the same candidates): how often its first choice is the measured winner,
    and where the winner lands in its order -- for the selector's current model (`selector.predicted_tflops`) and
    for jitgemm.timing.predict on the row's device (each kernel at its best allowed split-K), with the mean
    |log2(predicted / measured)| of the winner's time.

The competitor is aiter's own tuner (its tables are hardware timings on MI308X / MI300X / MI355X, and
asm_a8w8_gemm.csv's on a gfx942 GPU it does not name; its copied times are left out); a shape timed on two devices
of one target counts once, with the faster row as its winner. Candidates are the wheel's admitted
aiter kernels of the target (the supplier `jitgemm.use_aiter()` registers), so the two selectors choose among the
same kernels. Nothing is timed here: the numbers are agreement counts.

    python bench/bench_aiter_selection.py [WHEEL]
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


SPLITS = (1, 2, 3, 4, 8, 16)


def _predicted_us(kernel, row) -> float:
    """jitgemm.timing's prediction for the kernel on the row's device at the row's split-K (when allowed)."""
    from jitgemm.timing import predict

    split = row.split_k if kernel.contract.split_refusal(row.k, row.split_k) is None else 1
    return predict(kernel, row.problem, device=row.device, split_k=split).us


def _timing_order(inv, arch: str, row) -> list[str]:
    """The legal aiter kernels of the target, fastest first by jitgemm.timing.predict on the row's device, each
    at its best allowed split-K count."""
    from jitgemm.timing import predict

    scored = []
    for k in inv.admitted(arch):
        if not k.contract.admits(row.problem)[0]:
            continue
        best = min(predict(k, row.problem, device=row.device, split_k=s).us for s in SPLITS
                   if k.contract.split_refusal(row.k, s) is None)
        scored.append((best, k.label))
    return [label for _, label in sorted(scored)]


def main(argv: list[str]) -> int:
    from jitgemm.aiter import inventory
    from jitgemm.aiter.supplier import AiterSupplier
    from jitgemm.aiter.tuned import import_rows
    from jitgemm.selector import Quarantine, Selector
    from jitgemm.tuning_db import TuningDB

    if argv:
        wheel = Path(argv[0])
    else:
        from tests.fixtures.aiter_corpus import aiter_wheel

        wheel = aiter_wheel()
    start = time.perf_counter()
    inv = inventory(wheel)
    admitted = {k.label for k in inv.admitted()}
    winners: dict[tuple, object] = {}
    for r in inv.tuned_rows:
        if not r.asm or r.problem is None or r.kernel_label not in admitted or not r.measured:
            continue        # (not measured: a time the release description marks as copied from another row)
        key = (r.arch, r.problem_text)
        if key not in winners or r.us < winners[key].us:
            winners[key] = r
    with tempfile.TemporaryDirectory() as tmp:
        db = TuningDB(Path(tmp) / "tables.db")
        added = import_rows(inv, db)
        empty = TuningDB(Path(tmp) / "empty.db")
        quarantine = Quarantine(Path(tmp) / "quarantine.json")
        stats: dict = defaultdict(lambda: defaultdict(int))
        example = None
        for (arch, _), row in sorted(winners.items(), key=lambda x: (x[0][0], x[1].table, x[1].line)):
            sup = AiterSupplier(inv)
            tables = Selector([sup], target=arch, tuning=db, quarantine=quarantine)
            model = Selector([sup], target=arch, tuning=empty, quarantine=quarantine)
            fam = (arch, row.family)
            s = stats[fam]
            s["shapes"] += 1
            verdicts = tables.evaluate(row.problem)
            if not row.kernel_label or not inv.kernel(row.kernel_label).contract.admits(row.problem)[0]:
                s["winner illegal"] += 1        # its contract refuses the shape the tuner ran (family file)
            if not verdicts or not verdicts[0].legal:
                continue
            first = verdicts[0]
            s["tables = winner"] += first.candidate.label == row.kernel_label
            s["cites the row"] += first.row is not None and first.row.origin.endswith(f"{row.table}:{row.line}")
            if example is None and first.row is not None:
                example = tables.explain(row.problem)
            timed = _timing_order(inv, arch, row)
            if timed:
                s["timing = winner"] += timed[0] == row.kernel_label
                s["timing top3"] += row.kernel_label in timed[:3]
                if row.kernel_label in timed:
                    err = _predicted_us(inv.kernel(row.kernel_label), row) / row.us
                    s["log2 err sum"] += abs(math.log2(err))
                    s["timed"] += 1
            order = [v.candidate.label for v in model.evaluate(row.problem) if v.legal]
            s["model = winner"] += bool(order) and order[0] == row.kernel_label
            if row.kernel_label in order:
                s["model rank sum"] += order.index(row.kernel_label) + 1
                s["model top3"] += order.index(row.kernel_label) < 3
                s["legal candidates"] += len(order)
    print(f"aiter {inv.version}: {len(winners)} tuned shapes with an asm winner in the wheel "
          f"({added} measured rows imported), {time.perf_counter() - start:.1f} s")
    head = ("target", "family", "shapes", "aiter tuner", "jitgemm+tables", "cites row", "selector model only",
            "selector top3", "winner's mean rank", "timing.predict first", "timing top3",
            "|log2(pred/measured)| of winner", "legal kernels/shape", "winner outside its contract")
    print(" | ".join(head))
    total = defaultdict(int)
    for (arch, fam), s in sorted(stats.items()):
        n = s["shapes"]
        for k, v in s.items():
            total[k] += v
        print(f"{arch} | {fam} | {n} | {n} (measured winner) | "
              f"{s['tables = winner']} ({s['tables = winner'] / n:.0%}) | "
              f"{s['cites the row']} | {s['model = winner']} ({s['model = winner'] / n:.0%}) | "
              f"{s['model top3']} ({s['model top3'] / n:.0%}) | {s['model rank sum'] / n:.1f} | "
              f"{s['timing = winner']} ({s['timing = winner'] / n:.0%}) | "
              f"{s['timing top3']} ({s['timing top3'] / n:.0%}) | "
              f"{s['log2 err sum'] / max(1, s['timed']):.2f} | {s['legal candidates'] / n:.1f} | {s['winner illegal']}")
    n = total["shapes"] or 1
    print(f"all | | {total['shapes']} | {total['shapes']} | "
          f"{total['tables = winner']} ({total['tables = winner'] / n:.0%}) | "
          f"{total['cites the row']} | {total['model = winner']} ({total['model = winner'] / n:.0%}) | "
          f"{total['model top3']} ({total['model top3'] / n:.0%}) | | "
          f"{total['timing = winner']} ({total['timing = winner'] / n:.0%}) | "
          f"{total['timing top3']} ({total['timing top3'] / n:.0%}) | "
          f"{total['log2 err sum'] / max(1, total['timed']):.2f} | | {total['winner illegal']}")
    if example:
        print("\nexplain, with the tables imported (first lines):")
        print("\n".join(example.splitlines()[:4]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
