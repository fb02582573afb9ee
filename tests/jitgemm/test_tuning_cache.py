"""Issue 27 (the tuning database is a cache) and issue 28 (caches degrade, never block): a damaged, foreign or
unusable tuning database never stops `select`, `tuning show` or `matmul`; a damaged file is set aside and
rebuilt, an unusable place is run without, each said once; rows are validated on the way in."""

from __future__ import annotations

import os
import sqlite3
import threading

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.gemm_text import format_problem

import jitgemm
from jitgemm import selector as selector_module
from jitgemm.cli import main
from jitgemm.tuning_db import CSV_COLUMNS, TuningDB, TuningDBError

P = GemmProblem.make(64, 64, 64, "fp16")
KEY = format_problem(P)
SELECT = ["select", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp16", "--explain"]


def _valid_db(path) -> None:
    db = TuningDB(path)
    db.add([{"target": "gfx942", "problem": KEY, "kernel": f"k{i}", "metric": "seconds", "value": 1e-3,
             "source": "hardware"} for i in range(3000)])
    db.close()
    for extra in ("-wal", "-shm"):
        if os.path.exists(f"{path}{extra}"):
            os.remove(f"{path}{extra}")


def _damage(kind: str, path) -> None:
    if kind == "truncated":
        _valid_db(path)
        raw = path.read_bytes()
        path.write_bytes(raw[: len(raw) // 3])
    elif kind == "garbage":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, 9000, dtype=np.uint8).tobytes())
    elif kind == "sparse 300 MiB":
        with open(path, "wb") as f:
            f.truncate(300 << 20)
    elif kind == "header only":
        path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    elif kind == "directory":
        path.mkdir()
        (path / "tuning.db").mkdir()           # even the folder form's file is a folder
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "FIFO":
        os.mkfifo(path)


SET_ASIDE = ("truncated", "garbage", "sparse 300 MiB", "header only")


def _in_thread(fn, timeout: float = 60.0):
    """fn() in a thread: a FIFO must not block the caller (the test fails instead of hanging)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:          # reported by the test below
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked on the tuning database"
    if "error" in out:
        raise out["error"]
    return out.get("value")


@pytest.mark.parametrize("kind", [*SET_ASIDE, "directory", "/dev/zero", "FIFO"])
def test_damaged_database_never_stops_select(tmp_path, capsys, kind):
    path = tmp_path / "tuning.db"
    _damage(kind, path)
    assert _in_thread(lambda: main([*SELECT, "--db", str(path)])) == 0
    out, err = capsys.readouterr()
    assert "selected" in out and "Traceback" not in err
    if kind in SET_ASIDE:             # a cache: the damaged file is kept aside, a new database is made and works
        aside = [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
        assert len(aside) == 1 and aside[0].startswith("tuning.db.corrupt-") and "set aside" in err or \
            "moved to" in err, (aside, err)
        db = TuningDB(path)
        db.record("gfx942", P, "key", 2e-3, kernel="k")
        assert [r.value for r in TuningDB(path).rows()] == [2e-3]
    elif kind != "directory":        # an unusable place: run without it, said once
        assert err.count("jitgemm: warning: tuning database") == 1 and "running without it" in err
    assert main(["tuning", "show", "--db", str(path)]) == 0


def test_unusable_cache_folder_runs_without_caching_and_says_so_once(tmp_path, monkeypatch, capsys):
    """JITGEMM_CACHE_DIR where nothing can be written (a path under a file: what a read-only file system gives
    every writer): run, select and matmul work, each cache says so once."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "file" / "cache"))
    monkeypatch.delenv("JITGEMM_TUNING_DB", raising=False)
    monkeypatch.setattr(selector_module, "_suppliers", None)
    monkeypatch.setattr(selector_module, "_selectors", {})
    from jitgemm.util import cache_notice

    from jitgemm import kernel

    monkeypatch.setattr(cache_notice, "_said", set())
    kernel.clear_memory_cache()
    a = np.random.default_rng(0).standard_normal((48, 40)).astype(np.float16)
    for _ in range(2):
        d = jitgemm.matmul(a, a.T)
        assert np.allclose(d, a.astype(np.float64) @ a.T.astype(np.float64), rtol=2**-9, atol=0.05)
    assert main(["select", "--m", "48", "--n", "48", "--k", "40", "--dtype", "fp16"]) == 0
    assert main(["run", "--m", "32", "--n", "32", "--k", "32", "--dtype", "fp16"]) == 0
    err = capsys.readouterr().err
    assert err.count("jitgemm: warning: tuning database") == 1, err
    assert err.count("jitgemm: warning: kernel cache") == 1, err
    assert "Traceback" not in err


def test_read_only_database_is_read_and_nothing_is_recorded(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tuning.db"
    TuningDB(path).record("gfx942", P, "key", 2e-3, kernel="k")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK and str(p).startswith(
        str(tmp_path)) else real(p, mode, **kw))      # what a read-only file system answers (root ignores modes)
    db = TuningDB(path)
    assert [r.value for r in db.rows()] == [2e-3]
    db.record("gfx942", P, "key", 5e-3, kernel="k")      # not kept, as it said
    assert "read-only" in capsys.readouterr().err
    with pytest.raises(TuningDBError, match="read-only"):
        TuningDB(path).check_writable()
    assert main(["sweep", "--m", "64", "--n", "64", "--k", "64", "--db", str(path), "--limit", "1"]) == 2
    assert "--db: " in capsys.readouterr().err


def _foreign_table(path, extra_column: bool = True) -> None:
    """A results table as another writer may leave it: no constraints, an extra column (a newer jitgemm), and
    text, NULL, BLOB, non-numeric and huge values."""
    conn = sqlite3.connect(path)
    cols = ", ".join(CSV_COLUMNS) + (", extra" if extra_column else "")
    conn.execute(f"CREATE TABLE results (id INTEGER PRIMARY KEY, {cols})")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    good = ["gfx942", KEY, "k", "", "", "", "seconds", 1e-3, "hardware", "{}", 1.7e9, "", "", ""]
    rows = [good, [None] * 14, [b"\xff\x00blob"] * 14,
            good[:7] + ["fast"] + good[8:], good[:7] + [float("inf")] + good[8:],
            good[:10] + [1e300] + good[11:], good[:10] + ["yesterday"] + good[11:],
            good[:2] + [None, None, b"\x01", 7] + good[6:]]
    marks = ", ".join("?" * (14 + extra_column))
    for r in rows:
        conn.execute(f"INSERT INTO results ({cols}) VALUES ({marks})", r + (["newer"] if extra_column else []))
    conn.commit()
    conn.close()


def test_foreign_results_table_is_read_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "t.db"
    _foreign_table(path)
    rows = TuningDB(path).rows()
    assert [r.value for r in rows if r.metric == "seconds"] == [1e-3, 1e-3, 1e-3]   # the numeric ones
    assert main(["tuning", "show", "--db", str(path)]) == 0
    assert main([*SELECT, "--db", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "selected" in out and "Traceback" not in err


@pytest.mark.parametrize("field, value, words", [
    ("value", "inf", ["value='inf'", "finite"]),
    ("value", "nan", ["value='nan'", "finite"]),
    ("value", "-1", ["value='-1'"]),
    ("target", "gfx9999", ["target='gfx9999'", "gfx942"]),
    ("target", "'; DROP TABLE results; --", ["target=", "accepted"]),
    ("problem", KEY.replace("m=64", "m=1000000000000000000000000000000"), ["sizes up to"]),
    ("problem", "gemm m=1e30 n=1", ["problem"]),
    ("time", "1e300", ["time='1e300'"]),
    ("time", "yesterday", ["time='yesterday'", "not a number"]),
])
def test_imports_validate_rows(tmp_path, capsys, field, value, words):
    import csv

    good = {"target": "gfx942", "problem": KEY, "kernel": "k", "metric": "seconds", "value": "0.001",
            "source": "hardware", "time": "1700000000"}
    path = tmp_path / "in.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, CSV_COLUMNS)
        w.writeheader()
        w.writerow(good)
        w.writerow({**good, field: value})
    db = tmp_path / "t.db"
    assert main(["tuning", "import", str(path), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "row 1" in err and all(w in err for w in words), err
    assert TuningDB(db).rows() == []                    # one transaction: nothing of a bad file is kept
