"""One model everywhere: the sweep's predicted TFLOP/s and the selector's ranking come from jitgemm.timing, so the
same kernels for the same problem are ranked in the same order by `sweep` and by `select`."""

from __future__ import annotations

from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.selector import Selector
from jitgemm.sweep import sweep
from jitgemm.tuned_supplier import TunedSupplier
from jitgemm.tuning_db import TuningDB


def test_select_and_sweep_rank_the_same_candidates_in_the_same_order(tmp_path):
    problem = GemmProblem.make(1024, 768, 512, "bf16", layout="NT")
    db = TuningDB(tmp_path / "sweep.db")
    report = sweep(problem, limit=4, seed=3, db=db, tiles=(32, 64, 128), waves=((1, 1), (2, 2)))
    swept = sorted((r for r in report.results if not r.error), key=lambda r: (-r.predicted_tflops, r.kernel))
    assert len(swept) >= 3 and all(r.emulator_ok for r in swept)
    assert len({round(r.predicted_tflops, 6) for r in swept}) >= 3
    # the selector over the same kernels (the database's variants as candidates) with no measured rows: its own model
    selector = Selector([TunedSupplier(db)], tuning=TuningDB(tmp_path / "empty.db"))
    verdicts = [v for v in selector.evaluate(problem) if v.legal]
    assert {v.basis for v in verdicts} == {"model"}
    by_selector = [v.candidate.contract.kernel for v in verdicts]
    assert by_selector == [r.kernel for r in swept]
    for v, r in zip(verdicts, swept, strict=True):
        assert abs(v.score - r.predicted_tflops) <= 1e-9 * r.predicted_tflops
