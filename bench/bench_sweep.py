"""Sweep throughput and the static model's agreement with llvm-mca.

1. `jitgemm.sweep` of N variants (default 200) of one problem (default bf16 4096^3 NT on gfx942): compile,
   resources, static model, emulator check on one tile, predicted TFLOP/s, written to a fresh tuning
   database — with 1 worker, then with 2 local worker processes (and `--ray`: a local Ray with 2 workers).
   Rows: wall seconds, variants/s, and whether the results equal the 1-worker run's (compile time aside).
2. The static pipeline model (jitgemm/timing/pipeline.py) beside `llvm-mca-22 -mcpu=gfx942` on every variant's
   main loop: passes per iteration (one pass = 4 clocks; llvm-mca's gfx942 model counts in the same unit,
   e.g. 8 for v_mfma_f32_32x32x8_bf16), their ratio, and how many agree within 10%.
3. The selector over the swept database: its choice against the sweep's best.

    python bench/bench_sweep.py [--limit 200] [--m 4096 --n 4096 --k 4096 --dtype bf16] [--ray] [--no-mca]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jitgemm.codegen.gemm_ir import GemmProblem  # noqa: E402

from jitgemm.kernel import clear_memory_cache  # noqa: E402
from jitgemm.selector import Quarantine, Selector  # noqa: E402
from jitgemm.suppliers import DirectAsmSupplier  # noqa: E402
from jitgemm.sweep import config_space, sweep  # noqa: E402
from jitgemm.timing.pipeline import PipelineModelError, llvm_mca  # noqa: E402
from jitgemm.tuned_supplier import TunedSupplier  # noqa: E402
from jitgemm.tuning_db import TuningDB  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--layout", default="NT")
    parser.add_argument("--ray", action="store_true", help="also run on a local Ray with 2 workers")
    parser.add_argument("--no-mca", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jitgemm-bench-sweep-"))
    os.environ["JITGEMM_CACHE_DIR"] = str(tmp / "cache")
    problem = GemmProblem.make(args.m, args.n, args.k, args.dtype, layout=args.layout)
    t0 = time.perf_counter()
    space = config_space(problem)
    grid_seconds = time.perf_counter() - t0
    print(f"grid: {len(space)} legal configs for {args.dtype} {args.m}x{args.n}x{args.k} {args.layout} on gfx942 "
          f"({grid_seconds:.1f} s to enumerate, once per process); sweeping {args.limit}, spread over the grid")
    print(f"machine: {os.cpu_count()} cores, shared with other jobs while this ran (throughput is a floor)\n")
    runs = [("local", 1, None), ("processes", 2, None)] + ([("ray local", 2, "local")] if args.ray else [])
    header = f"{'engine':<11}{'workers':>8}{'variants':>9}{'seconds':>9}{'variants/s':>11}{'emulator ok':>12}" \
             f"{'same as 1 worker':>17}"
    print(header)
    print("-" * len(header))
    first = None
    db = None
    for label, workers, ray in runs:
        run_db = TuningDB(tmp / f"{label.replace(' ', '_')}.db")
        clear_memory_cache()   # every run compiles its kernels (forked workers would inherit the last run's)
        start = time.perf_counter()
        report = sweep(problem, limit=args.limit, workers=workers, ray=ray, db=run_db, progress=True)
        seconds = time.perf_counter() - start
        same = "-" if first is None else str([r.comparable() for r in report.results] ==
                                             [r.comparable() for r in first.results])
        first = first or report
        db = db or run_db
        print(f"{label:<11}{workers:>8}{len(report.results):>9}{seconds:>9.1f}{len(report.results) / seconds:>11.2f}"
              f"{len(report.ok):>12}{same:>17}")
    assert first is not None and db is not None
    best = first.best
    print(f"\nsweep's best: #{best.index} {best.kernel} {best.predicted_tflops:.0f} TFLOP/s predicted, "
          f"{best.cycles_per_mfma:.1f} clocks/MFMA, {best.waves_per_simd} waves/SIMD, config {best.config}")
    sel = Selector([DirectAsmSupplier(), TunedSupplier(db)], tuning=db, quarantine=Quarantine(tmp / "q.json"))
    top = sel.evaluate(problem)[0]
    print(f"selector's choice: {top.candidate.supplier}:{top.candidate.contract.kernel} ({top.basis}; "
          f"{top.row.describe() if top.row else 'no db row'}) -> equals the sweep's best: "
          f"{top.candidate.contract.kernel == best.kernel}")
    if args.no_mca:
        return
    mca = shutil.which("llvm-mca-22") or shutil.which("llvm-mca")
    if mca is None:
        print("llvm-mca-22 not found: the agreement table is left out")
        return
    ratios, skipped, failed = [], 0, 0
    worst = []
    for r in first.results:
        if not r.loop_text:
            continue
        try:
            ref = llvm_mca(r.loop_text, mca)
        except PipelineModelError:
            failed += 1
            continue
        skipped += ref.skipped > 0
        ratio = r.passes_per_iteration / ref.cycles_per_iteration
        ratios.append(ratio)
        worst.append((abs(ratio - 1), r.index, r.tile, r.passes_per_iteration, ref.cycles_per_iteration))
    close = sum(abs(x - 1) <= 0.10 for x in ratios)
    print(f"\nstatic model vs llvm-mca-22 -mcpu=gfx942 (passes per main-loop iteration), {len(ratios)} variants:")
    print(f"  within 10%: {close}/{len(ratios)} ({100 * close / max(1, len(ratios)):.1f}%; goal >= 90%)   "
          f"within 5%: {sum(abs(x - 1) <= 0.05 for x in ratios)}   median ratio {statistics.median(ratios):.3f}   "
          f"min {min(ratios):.3f}  max {max(ratios):.3f}   llvm-mca failed: {failed}, "
          f"variants with lines llvm-mca's assembler refused: {skipped}")
    for gap, index, tile, model, ref in sorted(worst, reverse=True)[:5]:
        print(f"  largest gaps: #{index} {tile}: model {model:.1f}, llvm-mca {ref:.1f} ({100 * gap:.1f}%)")


if __name__ == "__main__":
    main()
