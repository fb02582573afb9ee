"""Issue 28, item by item (each failed before its fix): output paths checked before the work, a sweep that
fits only what --limit takes and shows its bar from the start, honest --no-emulate rows, exit codes that say
what happened, finite alpha/beta, empty products, suppliers that say why, errors that name the file, labelled
output, MX options on run and compile, and a package whose dir() and help() show its API."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm import selector as selector_module
from jitgemm.cli import main

SMALL = ["--m", "64", "--n", "64", "--k", "64", "--dtype", "fp16"]


def _no_sweep(monkeypatch):
    import jitgemm.sweep

    def refuse(*args, **kwargs):
        raise AssertionError("the sweep started before its options were checked")

    monkeypatch.setattr(jitgemm.sweep, "sweep", refuse)
    monkeypatch.setattr(jitgemm.sweep, "variants", refuse)


@pytest.mark.parametrize("extra, words", [
    (["--plot", "/nonexistent/p.png"], ["--plot /nonexistent/p.png", "does not exist"]),
    (["--json", "/nonexistent/x.json"], ["--json /nonexistent/x.json", "does not exist"]),
    (["--plot", "{tmp}"], ["is a folder", ".png"]),
    (["--plot", "{tmp}/p"], ["--plot", "ending in .png"]),
    (["--db", "/nonexistent/d/x.db"], ["--db", "does not exist"]),
    (["--db", "{tmp}/fifo.db"], ["--db", "not a regular file"]),
    (["--ray", "local"], ["--ray needs Ray", "pip install"]),
])
def test_sweep_options_are_checked_before_any_work(tmp_path, monkeypatch, capsys, extra, words):
    import os

    _no_sweep(monkeypatch)
    os.mkfifo(tmp_path / "fifo.db")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    argv = ["sweep", *SMALL, "--db", str(tmp_path / "t.db"), *[x.format(tmp=tmp_path) for x in extra]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("jitgemm sweep: error:") and err.count("\n") == 1 and all(w in err for w in words), err
    assert not (tmp_path / "p.png").exists()


def test_compile_output_path_is_checked_before_compiling(monkeypatch, capsys):
    from jitgemm import api

    monkeypatch.setattr(api, "compile", lambda *a, **k: pytest.fail("compiled before checking -o"))
    assert main(["compile", *SMALL, "-o", "/nonexistent/k.co"]) == 2
    assert "-o /nonexistent/k.co: the folder /nonexistent does not exist" in capsys.readouterr().err


def test_sweep_limit_fits_only_the_points_it_takes(monkeypatch):
    """--limit N fits (vector widths, LDS padding: the costly part, `best_lds_pad`) N grid points, not the whole
    grid (55 s for --limit 1 at 64^3 under load before)."""
    from jitgemm.codegen import gemm_config

    from jitgemm import sweep

    calls = []
    real = gemm_config.best_lds_pad
    monkeypatch.setattr(gemm_config, "best_lds_pad", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(sweep, "_SPACES", {})
    problem = GemmProblem.make(80, 48, 96, "fp16", layout="TN")
    for search in ("grid", "random"):
        chosen = sweep.variants([problem], search=search, limit=3, seed=2)
        assert len(chosen) == 3 and len({v.config for v in chosen}) == 3
    assert len(calls) <= 2 * 2 * 3 + 4, len(calls)       # two vector widths per point, a few refused points
    full = sweep.config_space(problem, tiles=(32, 64), waves=((1, 1), (2, 2)))
    grid = sweep.variants([problem], limit=len(full), tiles=(32, 64), waves=((1, 1), (2, 2)))
    assert [v.config for v in grid] == full          # a limit as large as the grid: every config, in order


def test_sweep_progress_starts_before_the_variants_are_chosen(monkeypatch):
    from jitgemm import sweep

    events = []
    real_enter = sweep._progress.__enter__
    monkeypatch.setattr(sweep._progress, "__enter__", lambda self: events.append("bar") or real_enter(self))

    def chosen(*args, **kwargs):
        events.append("variants")
        raise sweep.SweepError("stop here")

    monkeypatch.setattr(sweep, "variants", chosen)
    with pytest.raises(sweep.SweepError, match="stop here"):
        sweep.sweep(GemmProblem.make(64, 64, 64, "fp16"), db=False, progress=False)
    assert events == ["bar", "variants"]


def test_no_emulate_rows_say_not_run(capsys):
    from rich.console import Console

    from jitgemm.sweep import sweep

    report = sweep(GemmProblem.make(64, 64, 64, "fp16"), limit=2, db=False, emulate=False, tiles=(32,),
                   waves=((1, 1),))
    console = Console(width=250, force_terminal=False, record=True)
    console.print(report.table())
    text = console.export_text()
    assert "FAIL" not in text and text.count("not run") == 2 and report.best is None
    assert all(f"{r.predicted_tflops:.3g}" in text for r in report.results)     # 0.0x TFLOP/s is not "0"


def test_qualify_exits_nonzero_when_everything_is_refused(tmp_path, capsys):
    (tmp_path / "text.co").write_text("not a code object")
    assert main(["qualify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "refused:" in out and "nothing qualified" in out


def test_run_exits_nonzero_on_a_wrong_result(monkeypatch, capsys):
    from jitgemm import api

    real = api.matmul

    def wrong(*args, **kwargs):
        d = real(*args, **kwargs)
        d[3, 5] += 1.0
        return d

    monkeypatch.setattr(api, "matmul", wrong)
    assert main(["run", *SMALL]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.err and "(3, 5)" in captured.err


@pytest.mark.parametrize("option, value", [("--alpha", "nan"), ("--beta", "inf"), ("--alpha", "-inf")])
def test_alpha_and_beta_must_be_finite(capsys, option, value):
    with pytest.raises(SystemExit) as exit_:
        main(["run", *SMALL, f"{option}={value}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "usage: jitgemm run" in err
    assert f"argument {option}: {value!r} is not finite" in err


def test_empty_products_are_valid_gemms():
    rng = np.random.default_rng(0)
    a, b = np.zeros((0, 7), np.float32), rng.standard_normal((7, 5)).astype(np.float32)
    assert jitgemm.matmul(a, b).shape == (0, 5)
    assert jitgemm.matmul(b.T.copy(), np.zeros((7, 0), np.float32)).shape == (5, 0)
    assert jitgemm.matmul(np.zeros((2, 0, 3), np.float16), np.zeros((2, 3, 4), np.float16)).shape == (2, 0, 4)
    c = rng.standard_normal((4, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    d = jitgemm.matmul(np.zeros((4, 0), np.float32), np.zeros((0, 6), np.float32), c, beta=0.5, bias=bias,
                       activation="relu")
    assert d.dtype == np.float32 and np.array_equal(d, np.maximum(0.5 * c.astype(np.float64) + bias, 0)
                                                    .astype(np.float32))
    with pytest.raises(jitgemm.MatmulError, match="inner dimensions 0 and 3 differ"):
        jitgemm.matmul(np.zeros((4, 0), np.float32), np.zeros((3, 6), np.float32))


def test_use_prebuilt_and_use_triton_say_why(tmp_path, monkeypatch):
    monkeypatch.setattr(selector_module, "_suppliers", None)
    monkeypatch.setattr(selector_module, "_selectors", {})
    with pytest.raises(selector_module.SelectionError, match=r"use_prebuilt\('missing'\): no such folder"):
        jitgemm.use_prebuilt("missing")
    assert jitgemm.use_prebuilt(str(tmp_path)) == [f"{tmp_path}: no code objects (*.co, *.hsaco) or assembly "
                                                   f"files (*.s); nothing was offered"]
    from jitgemm.suppliers import TritonSupplier

    if TritonSupplier.available():
        assert "kernels are offered to matmul for every problem" in jitgemm.use_triton()
    monkeypatch.setattr(TritonSupplier, "available", staticmethod(lambda: False))
    with pytest.raises(selector_module.SelectionError, match=r"Triton is not installed \(pip install triton\)"):
        jitgemm.use_triton()


@pytest.mark.parametrize("command", [["emulate", "{path}", "--check"], ["inspect", "{path}"]])
@pytest.mark.parametrize("content", ["text", "truncated"])
def test_errors_name_the_file(tmp_path, capsys, command, content):
    path = tmp_path / f"{content}.co"
    if content == "text":
        path.write_text("hello\n")
    else:
        co = jitgemm.compile(GemmProblem.make(64, 64, 64, "fp16"), jitgemm.GemmConfig(32, 32, 16, 1, 1,
                             "V_MFMA_F32_32X32X8_F16")).code_object
        path.write_bytes(co[: len(co) // 2])
    assert main([x.format(path=path) for x in command]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jitgemm {command[0]}: error: {path}: ") and err.count("\n") == 1, err


def test_compile_and_run_label_what_they_print(tmp_path, capsys):
    assert main(["compile", "--m", "4096", "--n", "4096", "--k", "4096", "-o", str(tmp_path / "k.co")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# size-generic kernel:") and "gemm m=4096 n=4096 k=4096" in out
    assert "gemm m=1 n=1 k=1" not in out
    assert " arch VGPRs + " in out and " AGPRs = " in out
    assert "in the unified register file (metadata .vgpr_count)" in out
    assert main(["run", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "emulation wall time (the ISA emulator on this CPU, not kernel time): " in out
    assert re.search(r"^predicted kernel time on \S+: [0-9.]+ us \([0-9.]+ TFLOP/s, \w+-bound; jitgemm.timing model\)$",
                     out, re.M), out
    assert "; time " not in out


def test_run_and_compile_take_the_mx_options(tmp_path, capsys):
    mx = ["--m", "32", "--n", "32", "--k", "64", "--dtype", "fp4", "--arch", "gfx950", "--a-scale", "plain",
          "--b-scale", "shuffled"]
    assert main(["run", *mx]) == 0
    assert "fp4xfp4->fp32 NT" in capsys.readouterr().out
    assert main(["compile", *mx, "-o", str(tmp_path / "mx.co")]) == 0
    assert "a_scale=plain b_scale=shuffled" in capsys.readouterr().out
    for command in ("run", "compile"):
        with pytest.raises(SystemExit) as exit_:
            main([command, *mx, "--b-preshuffle", "32x32", "-o", str(tmp_path / "x.co")])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"usage: jitgemm {command}" in err and "--b-preshuffle: invalid choice" in err


def test_dir_and_help_show_the_public_api():
    import pydoc

    names = dir(jitgemm)
    assert {"matmul", "compile", "explain", "GemmProblem", "use_prebuilt", "quantize_mx"} <= set(names)
    text = pydoc.render_doc(jitgemm, renderer=pydoc.plaintext)
    contents = text.split("PACKAGE CONTENTS", 1)[1].split("\n\n", 1)[0].split()
    assert "api" in contents and not {"tests", "setup", "bench", "tools", "notebooks"} & set(contents), contents
