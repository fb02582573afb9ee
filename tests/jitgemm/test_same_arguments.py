"""Issue 28: one set of defaults and one tie-break for every command and the API. Each command (run, compile,
select, sweep, tune) and the API (matmul, compile, explain) is given the same arguments; every one must solve
the same problem and choose the same kernel -- before a sweep (the selector's model decides) and after it (the
sweep's best, from the tuning database, decides)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.gemm_text import format_problem

import jitgemm
from jitgemm import selector as selector_module
from jitgemm.cli import main

# a problem whose compile-default (128x128) and selector choice (64x64) used to differ; NN is every default
M, N, K = 300, 500, 200
ARGS = ["--m", str(M), "--n", str(N), "--k", str(K)]


@pytest.fixture
def fresh_db(tmp_path, monkeypatch):
    """A tuning database of the test's own, for the CLI (--db) and the API's default selector alike."""
    db = tmp_path / "tuning.db"
    monkeypatch.setenv("JITGEMM_TUNING_DB", str(db))
    monkeypatch.setattr(selector_module, "_suppliers", None)
    monkeypatch.setattr(selector_module, "_selectors", {})
    return db


def _cli(capsys, *argv: str) -> str:
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _choices(capsys, db) -> dict[str, tuple[str, str]]:
    """command -> (problem it solved, as format_problem writes it; kernel it chose)."""
    got: dict[str, tuple[str, str]] = {}
    out = _cli(capsys, "select", *ARGS, "--db", str(db), "--explain")
    problem = re.search(r"^problem: (.*?)  target:", out, re.M).group(1)
    label = re.search(r"^1 +(\S+) +(\S+) +kept .*selected", out, re.M)
    out = _cli(capsys, "select", *ARGS, "--db", str(db))
    supplier_label, kernel = re.fullmatch(r"(\S+) kernel (\S+)\n", out).groups()
    assert supplier_label == f"{label.group(1)}:{label.group(2)}"        # explain's first row is select's choice
    got["select"] = (problem, kernel)
    out = _cli(capsys, "compile", *ARGS, "-o", str(db.with_name("k.co")))
    got["compile"] = (re.search(r"^(gemm m=.*)$", out, re.M).group(1), re.search(r"^kernel (\S+) ", out, re.M).group(1))
    out = _cli(capsys, "run", *ARGS)
    rec = jitgemm.last_launch()
    assert rec.backend == "emu" and f"kernel {rec.kernel} " in out            # --backend auto: emu on this machine
    got["run"] = (rec.problem, rec.kernel)

    problem = GemmProblem.make(M, N, K, "bf16")
    got["api compile"] = (format_problem(problem), jitgemm.compile(problem).name)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    d = jitgemm.matmul(a, b)
    assert np.allclose(d.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=2**-7, atol=0.1)
    got["matmul"] = (jitgemm.last_launch().problem, jitgemm.last_launch().kernel)
    explained = jitgemm.explain(problem)
    row = re.search(r"^1 +(\S+) +(\S+) +kept .*selected", explained, re.M)
    assert f"{row.group(1)}:{row.group(2)}" == supplier_label
    got["api explain"] = (re.search(r"^problem: (.*?)  target:", explained, re.M).group(1), kernel)
    return got


def _same(got: dict[str, tuple[str, str]]) -> str:
    text = {k: v[0] for k, v in got.items()}
    full = {k: v for k, v in text.items() if v.startswith("gemm")}
    assert len(set(full.values())) == 1, full                              # one problem, one spelling
    for name in ("run", "matmul"):                                          # the launch record's own spelling
        assert text[name] == f"m={M} n={N} k={K} batch=1 bf16xbf16->bf16 NN", (name, text[name])
    kernels = {k: v[1] for k, v in got.items()}
    assert len(set(kernels.values())) == 1, kernels
    return next(iter(kernels.values()))


def test_every_command_and_the_api_solve_one_problem_with_one_kernel(fresh_db, capsys, monkeypatch):
    before = _same(_choices(capsys, fresh_db))
    assert "64x64" in before           # the selector's choice (the compile default alone would be 128x128)

    # tune ranks with the same selector over the same problem (no GPU here: its timing is stood in for)
    from jitgemm import tuning

    seen = []
    monkeypatch.setattr(tuning, "tune", lambda sel, problem, top, iterations: seen.append(
        (format_problem(problem), sel.evaluate(problem)[0].candidate.contract.kernel)) or [])
    _cli(capsys, "tune", *ARGS, "--db", str(fresh_db))
    assert seen == [(format_problem(GemmProblem.make(M, N, K, "bf16")), before)]

    # a sweep with the same arguments (its default layout is everyone's: NN) records a best that all choose
    out = _cli(capsys, "sweep", *ARGS, "--db", str(fresh_db), "--limit", "3", "--tiles", "64,128", "--waves",
               "2x2", "--quiet")
    best = re.search(r"^best: #\d+ \S+ (\S+) ", out, re.M).group(1)
    from jitgemm.tuning_db import TuningDB

    assert {r.problem for r in TuningDB(fresh_db).rows()} == {format_problem(GemmProblem.make(M, N, K, "bf16"))}
    after = _same(_choices(capsys, fresh_db))
    assert after == best


def test_sweep_best_and_select_break_ties_alike(fresh_db):
    """Two verified variants the model scores equally: the sweep's best and the selector's choice are the one
    kernel `selector.tie_key` prefers."""
    from jitgemm.selector import Selector, tie_key
    from jitgemm.suppliers import DirectAsmSupplier
    from jitgemm.sweep import SweepReport, record, sweep
    from jitgemm.tuned_supplier import TunedSupplier
    from jitgemm.tuning_db import TuningDB

    problem = GemmProblem.make(128, 128, 64, "fp16")
    report = sweep(problem, limit=4, db=False, tiles=(32, 64), waves=((1, 1), (2, 2)))
    assert len(report.ok) >= 2
    for r in report.ok:
        r.predicted_tflops = 7.0                 # the model ties them all
    # the old tie-break (smallest kernel name first) and the selector's (wider sure loads first) disagree here
    widths = {tie_key(r.contract)[0] for r in report.ok}
    tied = SweepReport(problem, "gfx942", report.results, 1.0, 1, "local")
    db = TuningDB(fresh_db)
    record(db, tied)
    chosen = Selector([DirectAsmSupplier(), TunedSupplier(db)], tuning=db).select(problem)
    assert chosen.contract.kernel == tied.best.kernel
    assert tied.best.kernel == min(report.ok, key=lambda r: tie_key(r.contract)).kernel
    assert len(widths) >= 2


# fp32 scale modes: the same --scale-mode / --a-scale-order / --b-scale-order on every command, and the scale arrays'
# shapes and storage order in the API, name one problem (block mode, B's scales column-major as aiter stores them)
SCALED = ["--m", "40", "--n", "150", "--k", "300", "--dtype", "fp8", "--out-dtype", "bf16", "--layout", "NT",
          "--scale-mode", "block", "--b-scale-order", "col"]


def test_scale_options_name_one_problem_in_every_command_and_the_api(fresh_db, capsys, monkeypatch):
    from jitgemm import tuning
    from jitgemm.reference import operands, stored_scales

    problem = GemmProblem.make(40, 150, 300, "fp8", d="bf16", layout="NT", scale_mode="block", b_scale_order="col")
    text = format_problem(problem)
    assert "scale_mode=block" in text and "b_scale_order=col" in text
    out = _cli(capsys, "select", *SCALED, "--db", str(fresh_db), "--explain")
    assert re.search(r"^problem: (.*?)  target:", out, re.M).group(1) == text
    out = _cli(capsys, "select", *SCALED, "--db", str(fresh_db))
    chosen = re.fullmatch(r"(\S+) kernel (\S+)\n", out).group(2)
    out = _cli(capsys, "compile", *SCALED, "-o", str(fresh_db.with_name("k.co")))
    assert re.search(r"^(gemm m=.*)$", out, re.M).group(1) == text
    assert re.search(r"^kernel (\S+) ", out, re.M).group(1) == chosen
    _cli(capsys, "run", *SCALED)
    run = jitgemm.last_launch()
    assert run.kernel == chosen
    x, y, _, _ = operands(problem, seed=3)
    sa, sb = stored_scales(problem, seed=3)
    assert not sb.flags.c_contiguous                          # column-major, as --b-scale-order col says
    jitgemm.scaled_matmul(x, y, sa, sb, out_dtype=ml_dtypes.bfloat16, arch="gfx942", backend="emu")
    api = jitgemm.last_launch()
    assert (api.problem, api.kernel) == (run.problem, run.kernel)
    seen = []
    monkeypatch.setattr(tuning, "tune", lambda sel, p, top, iterations: seen.append(format_problem(p)) or [])
    _cli(capsys, "tune", *SCALED, "--db", str(fresh_db))
    assert seen == [text]
    out = _cli(capsys, "sweep", *SCALED, "--db", str(fresh_db), "--limit", "2", "--tiles", "32", "--waves", "1x1",
               "--quiet")
    best = re.search(r"^best: #\d+ \S+ (\S+) ", out, re.M).group(1)
    from jitgemm.tuning_db import TuningDB

    rows = TuningDB(fresh_db).rows()
    assert rows and {r.problem for r in rows} == {text}
    assert all(r.value > 0 for r in rows)                     # every variant passed the emulator check, scaled
    out = _cli(capsys, "select", *SCALED, "--db", str(fresh_db))
    assert re.fullmatch(r"(\S+) kernel (\S+)\n", out).group(2) == best     # the sweep's best decides, for all


def test_tune_times_a_scaled_candidate_with_its_scales(monkeypatch):
    """`jitgemm tune`'s timing (tuning.time_candidate) launches a scale-mode candidate with the mode's scale arrays
    (no GPU here: hip's launcher is stood in for and shown the arguments)."""
    from jitgemm import hip_runtime, tuning
    from jitgemm.selector import Selector
    from jitgemm.suppliers import DirectAsmSupplier

    problem = GemmProblem.make(40, 150, 300, "fp8", d="bf16", layout="NT", scale_mode="block", b_scale_order="col")
    cand = Selector([DirectAsmSupplier()]).select(problem)
    seen = {}

    def fake_run_hip(blob, name, *, grid, block, args, lds_bytes, timed):
        seen["args"] = args
        return 1e-5

    monkeypatch.setattr(hip_runtime, "run_hip", fake_run_hip)
    seconds, name, _ = tuning.time_candidate(cand, problem, iterations=1)
    assert seconds == 1e-5 and name == cand.contract.kernel
    arrays = [x for x in seen["args"] if isinstance(x, np.ndarray) and x.dtype == np.float32]
    assert len(arrays) >= 2          # the A and B block scales reach the kernel
