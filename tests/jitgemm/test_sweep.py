"""`jitgemm.sweep` and `jitgemm sweep`/`tune`: the grid holds only legal configs of every kind of knob; one
variant's numbers come from its code object and agree with the emulator against numpy; 1 worker, 2 worker
processes and a local Ray with 2 workers give identical results; the selector then chooses the sweep's best
(and explain names the database row); `tune --backend hip` times candidates with hip events through the
stand-in hip module and the selector follows the measurement."""

from __future__ import annotations

import enum

import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.gemm_config import validate_config
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import hip_runtime, isa
from jitgemm.cli import main
from jitgemm.selector import Quarantine, Selector
from jitgemm.suppliers import DirectAsmSupplier
from jitgemm.sweep import SweepError, config_space, evaluate, pareto_front, sweep, variants
from jitgemm.tuned_supplier import TunedSupplier
from jitgemm.tuning_db import TuningDB
from tests.fixtures.fake_hip import FakeHip
from tests.fixtures.oracles import require_module

SPEC = isa.load_spec("gfx942")
PROFILE = isa.target_profile("gfx942")
P = GemmProblem.make(512, 512, 512, "bf16", layout="NT")
SMALL = dict(tiles=(32, 64), waves=((1, 1), (2, 1)))


def test_config_space_is_legal_and_varied():
    space = config_space(P, **SMALL)
    assert len(space) > 50 and len(set(space)) == len(space)
    for cfg in space[::7]:
        validate_config(P, cfg, SPEC, PROFILE)
    for knob in ("mfma", "tile_m", "tile_n", "depth_k", "waves_m", "prefetch", "lds_buffers", "lds_pad", "vec_a"):
        assert len({getattr(c, knob) for c in space}) >= 2, knob
    llvm = config_space(P, generator="llvm", **SMALL)
    assert llvm and all(c.lds_buffers == 1 for c in llvm)
    a = [v.config for v in variants([P], search="random", limit=9, seed=3, **SMALL)]
    assert a == [v.config for v in variants([P], search="random", limit=9, seed=3, **SMALL)] and len(a) == 9
    assert a != [v.config for v in variants([P], search="random", limit=9, seed=4, **SMALL)]
    with pytest.raises(SweepError, match="search='best'; accepted: grid, random"):
        variants([P], search="best")
    with pytest.raises(SweepError, match="generator='triton'"):
        variants([P], generators=("triton",))


def test_one_variant_measured_from_its_code_object():
    v = variants([P], limit=5, **SMALL)[3]
    r = evaluate(v)
    assert not r.error and r.emulator_ok, r.error
    import jitgemm

    k = jitgemm.compile(P, v.config, use_disk_cache=False)
    meta = codeobj.read(k.code_object).kernel(k.name).metadata
    assert (r.vgprs + r.agprs, r.agprs, r.sgprs) == (meta[".vgpr_count"], meta[".agpr_count"], meta[".sgpr_count"])
    assert r.lds_bytes == meta[".group_segment_fixed_size"] + k.contract["launch"]["lds_bytes"] > 0
    assert r.kernel == k.name and r.loop_mfmas > 0 and r.passes_per_iteration >= r.loop_mfmas
    assert 1 <= r.waves_per_simd <= 8 and 0 < r.predicted_tflops < 1307.4   # below the bf16 peak (profile)
    assert r.emulator_problem.startswith(f"gemm m={v.config.tile_m} n={v.config.tile_n} k={2 * v.config.depth_k}")


def test_emulator_check_can_fail(monkeypatch):
    """A wrong reference (numpy result + 1) is caught: the check compares, it does not just run."""
    from jitgemm import reference

    real = reference.reference
    monkeypatch.setattr(reference, "reference", lambda *a: real(*a) + 1.0)
    r = evaluate(variants([P], limit=2, **SMALL)[1])
    assert not r.emulator_ok and r.error.startswith("emulator:") and "elements off" in r.error


def _compare(report):
    return [r.comparable() for r in report.results]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    db = TuningDB(tmp_path_factory.mktemp("sweep") / "t.db")
    report = sweep(P, limit=8, db=db, workers=1, **SMALL)
    return db, report


def test_two_workers_agree_with_one_and_the_selector_follows(swept, tmp_path):
    db, one = swept
    two = sweep(P, limit=8, db=False, workers=2, **SMALL)
    assert two.engine == "process" and _compare(two) == _compare(one)
    assert len(one.results) == 8 and all(r.emulator_ok for r in one.results), [r.error for r in one.results]
    best = one.best
    assert best.predicted_tflops == max(r.predicted_tflops for r in one.results)
    sel = Selector([DirectAsmSupplier(), TunedSupplier(db)], tuning=db, quarantine=Quarantine(tmp_path / "q.json"))
    top = sel.evaluate(P)[0]
    assert top.candidate.contract.kernel == best.kernel and top.basis == "sweep"
    assert f"sweep variant {best.index}" in sel.explain(P).splitlines()[2]
    blob, name = top.candidate.load()
    assert name == best.kernel and codeobj.read(blob).kernel(name).contract["identity"]["code_sha256"] == \
        best.code_sha256
    rows = db.rows("gfx942", P)
    assert {r.metric for r in rows} == {"tflops", "cycles_per_mfma", "occupancy", "compile_seconds", "emulator_ok"}
    assert {r.source for r in rows} == {"model", "host", "emulator"}


def test_ray_local_two_workers_identical(swept):
    require_module("ray")
    _, one = swept
    report = sweep(P, limit=8, db=False, workers=2, ray="local", **SMALL)
    assert report.engine == "ray" and _compare(report) == _compare(one)


def test_table_plot_and_pareto(swept, tmp_path):
    require_module("matplotlib")
    from rich.console import Console

    _, report = swept
    console = Console(record=True, width=220)
    console.print(report.table(5))
    text = console.export_text()
    assert f"{report.best.predicted_tflops:.3g}" in text and "8 variants" in text
    out = tmp_path / "p.png"
    report.plot(str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10000
    front = pareto_front(report.results)
    for r in report.results:   # nothing beats a front member on both axes
        for f in front:
            assert not (r.cycles_per_mfma < f.cycles_per_mfma and r.waves_per_simd > f.waves_per_simd)


def test_cli_sweep_and_errors(tmp_path, capsys):
    db = tmp_path / "c.db"
    png = tmp_path / "c.png"
    code = main(["sweep", "--m", "256", "--n", "256", "--k", "128", "--limit", "3", "--db", str(db), "--plot",
                 str(png), "--quiet", "--no-emulate", "--tiles", "32,64", "--waves", "1x1,2x2"])
    out = capsys.readouterr().out
    assert code == 0 and "3 variants" in out and png.exists() and "no variant is verified" in out
    # a target without a spec here (or, with one, without a pipeline model): one line, before any variant (gfx950
    # has a timing model now, and without --limit its whole grid would be swept)
    assert main(["sweep", "--m", "64", "--n", "64", "--k", "64", "--arch", "gfx1100", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jitgemm sweep: error:") and "gfx1100" in err and err.count("\n") == 1
    assert {r.metric for r in TuningDB(db).rows()} == {"tflops", "cycles_per_mfma", "occupancy", "compile_seconds"}
    with pytest.raises(SystemExit) as exit_:    # the shared problem options: argparse's error, under sweep's usage
        main(["sweep", "--m", "256", "--n", "x", "--k", "128", "--db", str(db)])
    assert exit_.value.code == 2 and "argument --n: 'x' is not an integer" in capsys.readouterr().err
    assert main(["sweep", "--m", "64", "--n", "64", "--k", "64", "--workers", "0", "--db", str(db)]) == 2
    assert "workers=0" in capsys.readouterr().err
    assert main(["sweep", "--m", "64", "--n", "64", "--k", "64", "--waves", "2", "--db", str(db)]) == 2
    assert "--waves '2': expected WMxWN pairs" in capsys.readouterr().err
    assert main(["tune", "--m", "64", "--n", "64", "--k", "64", "--db", str(db)]) == 2
    assert "--backend hip:" in capsys.readouterr().err          # no GPU here: said, not a traceback
    assert main(["tuning", "import", str(tmp_path / "none.csv"), "--db", str(db)]) == 2
    assert "none.csv: cannot read" in capsys.readouterr().err
    rows = len(TuningDB(db).rows())
    assert main(["tuning", "export", str(tmp_path / "all.csv"), "--db", str(db)]) == 0
    assert main(["tuning", "import", str(tmp_path / "all.csv"), "--db", str(tmp_path / "copy.db")]) == 0
    assert main(["tuning", "show", "--db", str(tmp_path / "copy.db"), "--last", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{rows} rows written" in out and f"{rows} rows imported" in out and f"copy.db: {rows} rows" in out


class TimedHip(FakeHip):
    """The stand-in hip module with events: each kernel "runs" for the time `speeds` gives its name."""

    class hipError_t(enum.IntEnum):  # noqa: N801 (hip-python's spelling)
        hipSuccess = 0
        hipErrorInvalidValue = 1

    def __init__(self, speeds):
        super().__init__()
        self.speeds, self.clock, self.marks, self.function = speeds, 0.0, {}, None

    def hipModuleGetFunction(self, module, name):
        self.function = name.decode()
        return self._ret("hipModuleGetFunction", ("function", name))

    def hipModuleLaunchKernel(self, *args, **kw):
        self.clock += self.speeds[self.function]
        return super().hipModuleLaunchKernel(*args, **kw)

    def hipEventCreate(self):
        return self._ret("hipEventCreate", object())

    def hipEventRecord(self, event, stream):
        self.marks[id(event)] = self.clock
        return self._ret("hipEventRecord")

    def hipEventSynchronize(self, event):
        return self._ret("hipEventSynchronize")

    def hipEventElapsedTime(self, start, stop):
        return self._ret("hipEventElapsedTime", self.marks[id(stop)] - self.marks[id(start)])

    def hipEventDestroy(self, event):
        return self._ret("hipEventDestroy")


def test_tune_times_with_hip_events_and_the_selector_follows(monkeypatch, tmp_path):
    from jitgemm.tuning import tune

    problem = GemmProblem.make(64, 64, 64, "fp16", layout="NT")
    db = TuningDB(tmp_path / "t.db")
    sel = Selector([DirectAsmSupplier()], tuning=db, quarantine=Quarantine(tmp_path / "q.json"))
    legal = [v.candidate for v in sel.evaluate(problem) if v.legal]
    names = [c.load()[1] for c in legal]
    # the last-ranked kernel is made the fastest (ms per launch)
    speeds = {n: 0.5 + i for i, n in enumerate(reversed(names))}
    fake = TimedHip(speeds)
    monkeypatch.setattr(hip_runtime, "_hip", lambda: fake)
    hip_runtime._modules.clear()
    timings = tune(sel, problem, top=len(legal), iterations=4)
    assert [t.error for t in timings] == [None] * len(legal)
    for t in timings:
        assert t.seconds == pytest.approx(speeds[t.candidate.load()[1]] * 1e-3)
    names_called = [c[0] for c in fake.calls]
    assert names_called.count("hipEventRecord") == 2 * len(legal)
    assert names_called.count("hipModuleLaunchKernel") == 5 * len(legal)   # warm-up + 4 timed
    verdicts = [v for v in sel.evaluate(problem) if v.legal]
    for v in verdicts:     # every candidate is ranked by its own measurement, none by another's
        name = v.candidate.load()[1]
        assert v.basis == "tuning" and v.row.kernel == name
        assert v.row.value == pytest.approx(speeds[name] * 1e-3)
    best = verdicts[0]
    assert best.candidate.load()[1] == names[-1]
    assert best.row.source == "hardware" and "jitgemm tune" in best.row.origin
    assert "hipEventElapsedTime" in best.row.tools


def test_tune_times_the_split_k_launches_the_split_decision_weighs(monkeypatch, tmp_path):
    """A decode shape (matmul's split_k="auto" weighs the split-K pair there): tune times, beside the best candidate,
    every (mode, count) split_k.split_candidates lists -- K ranges and stream-K grids -- each as its partial
    kernel's time plus its reduction's, and records it with the split it ran (the tuning row's split_k)."""
    import collections

    from jitgemm.split_k import REDUCE_NAME, split_candidates
    from jitgemm.tuning import tune

    problem = GemmProblem.make(16, 64, 1024, "fp16", layout="NT")
    wanted = split_candidates(problem, "gfx942")
    assert ("partial", 2) in wanted and any(mode == "streamk" for mode, _ in wanted)
    db = TuningDB(tmp_path / "t.db")
    sel = Selector([DirectAsmSupplier()], tuning=db, quarantine=Quarantine(tmp_path / "q.json"))
    speeds = collections.defaultdict(lambda: 1.0, {REDUCE_NAME: 0.25})      # ms per launch
    monkeypatch.setattr(hip_runtime, "_hip", lambda: TimedHip(speeds))
    hip_runtime._modules.clear()
    timings = tune(sel, problem, top=1, iterations=2)
    assert timings[0].candidate is not None and timings[0].split is None
    assert [t.split for t in timings[1:]] == wanted and [t.error for t in timings] == [None] * len(timings)
    assert all(t.seconds == pytest.approx(1.25e-3) for t in timings[1:])     # partial kernel + reduction
    rows = [r for r in db.rows(problem=problem) if r.split_k is not None]
    assert sorted((r.split_k, r.origin) for r in rows) == sorted((n, f"jitgemm tune split-K {m} x{n}")
                                                                  for m, n in wanted)
    assert not tune(sel, GemmProblem.make(128, 64, 1024, "fp16", layout="NT"), top=1, iterations=1)[1:]
    # what matmul(split_k="auto") runs then: the measured rows, not the model -- the chosen kernel while it was the
    # fastest, then (chosen kernel slower, stream-K kernel faster) the fastest stream-K grid
    from jitgemm import selector as selector_module
    from jitgemm.api import measured_split
    from jitgemm.split_k import partial_kernel

    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "t.db"))
    monkeypatch.setattr(selector_module, "_selectors", {})
    chosen = timings[0].candidate
    source = f"{chosen.supplier}:{chosen.label}"
    assert measured_split(problem, "gfx942", chosen.contract, source) == (1, "partial")
    speeds.update({chosen.load()[1]: 2.0, partial_kernel(problem, "gfx942", mode="streamk").name: 0.5})
    tune(sel, problem, top=1, iterations=2)
    first_streamk = next(n for m, n in wanted if m == "streamk")
    assert measured_split(problem, "gfx942", chosen.contract, source) == (first_streamk, "streamk")


def test_qualify_on_ray_matches_local(tmp_path, capsys):
    """`jitgemm qualify DIR --ray local` (2 workers) prints what the local run prints, kernel by kernel."""
    require_module("ray")
    import jitgemm

    for tile in ((32, 32, 1, 1), (64, 64, 2, 2)):
        cfg = variants([GemmProblem.make(128, 128, 64, "fp16", layout="NT")], limit=1, tiles=tile[:1],
                       waves=(tile[2:],))[0].config
        k = jitgemm.compile(GemmProblem.make(128, 128, 64, "fp16", layout="NT"), cfg, use_disk_cache=False)
        (tmp_path / f"{k.name}.co").write_bytes(k.code_object)
    assert main(["qualify", str(tmp_path), "--cases", "2"]) == 0
    local = capsys.readouterr().out
    assert main(["qualify", str(tmp_path), "--cases", "2", "--ray", "local", "--workers", "2"]) == 0
    assert capsys.readouterr().out == local and local.count("ok ") == 2


def test_sweep_weighs_split_k_against_its_best_variant(tmp_path, capsys):
    """A decode shape (M <= 64, K >= 1024): the sweep's best verified variant is weighed against the split-K /
    stream-K candidates by the timing model (jitgemm.split_k.choose_split); a square problem is not."""
    db = str(tmp_path / "t.db")
    assert main(["sweep", "--m", "8", "--n", "64", "--k", "1024", "--dtype", "bf16", "--limit", "1", "--db", db,
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "split-K against it: split_k=" in out and "reduction" in out
    report = sweep(GemmProblem.make(64, 64, 64, "fp16"), limit=1, db=False)
    assert report.best is not None and report.split_choice() is None
