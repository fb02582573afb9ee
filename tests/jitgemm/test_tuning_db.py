"""The SQLite tuning database: WAL and concurrent writers, the old JSON store migrated, CSV export and import
round trip, another team's published tuning table (aiter's bf16_tuned_gemm.csv, from the pinned wheel) ranking
that team's kernels in the selector, and errors that name the file and line."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import zipfile
from dataclasses import replace

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.contract import Contract
from jitgemm.selector import Quarantine, Selector
from jitgemm.suppliers import Candidate, DirectAsmSupplier, Supplier
from jitgemm.tuning_db import CSV_COLUMNS, TuningDB, TuningDBError, problem_key

P = GemmProblem.make(256, 512, 128, "bf16", layout="NT")


def _rows(n: int, tag: str) -> list[dict]:
    return [{"target": "gfx942", "problem": problem_key(P), "kernel": f"{tag}{i}", "metric": "seconds",
             "value": 1e-6 * (i + 1), "source": "hardware", "tools": {"writer": tag}} for i in range(n)]


def _writer(path: str, tag: str) -> None:
    db = TuningDB(path)
    for i in range(0, 100, 10):
        db.add(_rows(100, tag)[i:i + 10])


def test_wal_and_concurrent_writers(tmp_path):
    path = tmp_path / "t.db"
    db = TuningDB(path)
    db.add(_rows(1, "main"))
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), tag)) for tag in ("a", "b", "c")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = db.rows("gfx942", P, "seconds")
    assert len(rows) == 301
    assert {r.kernel for r in rows if r.kernel.startswith("b")} == {f"b{i}" for i in range(100)}
    assert len({r.id for r in rows}) == 301


def test_default_path_env_and_json_migration(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    legacy = cache / "tuning"
    legacy.mkdir(parents=True)
    other = GemmProblem.make(64, 64, 64, "fp16")
    (legacy / "gfx942.json").write_text(json.dumps({problem_key(P): {"k1": 2e-6, "k2": 3e-6},
                                                    problem_key(other): {"k1": 5e-6}}))
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(cache))
    monkeypatch.delenv("JITGEMM_TUNING_DB", raising=False)
    db = TuningDB()
    assert db.path == cache / "tuning.db"
    assert db.lookup("gfx942", P, "k1") == 2e-6 and db.lookup("gfx942", other, "k1") == 5e-6
    assert db.lookup("gfx942", P, "k3") is None
    assert not (legacy / "gfx942.json").exists() and (legacy / "gfx942.json.migrated").exists()
    assert all(r.origin == "migrated from gfx942.json" for r in db.rows())
    assert len(TuningDB().rows()) == 3            # a second open migrates nothing twice
    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "elsewhere.db"))
    assert TuningDB().path == tmp_path / "elsewhere.db"


def test_csv_round_trip(tmp_path):
    db = TuningDB(tmp_path / "a.db")
    db.add(_rows(5, "x") + [{**_rows(1, "y")[0], "metric": "tflops", "source": "model", "value": 321.5,
                             "config": {"tile_m": 128}, "contract": {"identity": {"kernel": "y0"}}}])
    out = tmp_path / "rows.csv"
    assert db.export_csv(out) == 6
    assert out.read_text().splitlines()[0] == ",".join(CSV_COLUMNS)
    copy = TuningDB(tmp_path / "b.db")
    assert copy.import_csv(out) == 6
    strip = [{k: v for k, v in vars(r).items() if k != "id"} for r in db.rows()]
    assert [{k: v for k, v in vars(r).items() if k != "id"} for r in copy.rows()] == strip


def test_bad_rows_and_files_name_the_place(tmp_path):
    db = TuningDB(tmp_path / "a.db")
    with pytest.raises(TuningDBError, match="row 0: source='guess'; accepted: hardware, model, emulator, host"):
        db.add([{**_rows(1, "x")[0], "source": "guess"}])
    with pytest.raises(TuningDBError, match="row 0: missing kernel"):
        db.add([{**_rows(1, "x")[0], "kernel": ""}])
    bad = tmp_path / "bad.csv"
    bad.write_text("M,N,K,us,kernelName,dtype\n64,64,64,1.5,k,torch.bfloat16\n64,x,64,1.0,k,torch.bfloat16\n")
    with pytest.raises(TuningDBError, match=r"bad.csv:3: invalid literal"):
        db.import_csv(bad, target="gfx942")
    with pytest.raises(TuningDBError, match="needs --target"):
        db.import_csv(bad)
    (tmp_path / "odd.csv").write_text("a,b\n1,2\n")
    with pytest.raises(TuningDBError, match="unknown CSV header a,b"):
        db.import_csv(tmp_path / "odd.csv")
    assert db.rows() == []


def _aiter_table() -> tuple[str, list[dict]]:
    """aiter's own bf16 GEMM tuning table (problem -> kernel name -> measured us), from the pinned wheel."""
    import csv
    import io

    from tests.fixtures.aiter_corpus import _wheel

    with zipfile.ZipFile(_wheel()) as zf:
        text = zf.read("aiter/configs/bf16_tuned_gemm.csv").decode()
    return text, list(csv.DictReader(io.StringIO(text)))


class _Named(Supplier):
    """Candidates that carry the given kernel names (contracts of the direct generator's kernel for the
    problem, renamed): stand-ins for aiter's code objects, whose ABI has no contract in this project."""

    name = "aiter"

    def __init__(self, names):
        self.names = names

    def candidates(self, problem, target):
        base = DirectAsmSupplier().candidates(problem, target)[0]
        out = []
        for name in self.names:
            data = json.loads(json.dumps(base.contract.data))
            data["identity"]["kernel"] = name
            data["identity"].pop("code_sha256", None)
            out.append(replace(base, supplier=self.name, label=name, contract=Contract.load(data)))
        return out


def test_aiter_tuning_table_ranks_aiter_kernels(tmp_path):
    text, rows = _aiter_table()
    path = tmp_path / "bf16_tuned_gemm.csv"
    path.write_text(text)
    db = TuningDB(tmp_path / "t.db")
    assert db.import_csv(path, target="gfx942", layout="NT") == len(rows) > 3
    names = sorted({r["kernelName"] for r in rows})
    assert len(names) >= 3
    sel = Selector([_Named(names), DirectAsmSupplier()], tuning=db, quarantine=Quarantine(tmp_path / "q.json"))
    for i, r in enumerate(rows):
        problem = GemmProblem.make(int(r["M"]), int(r["N"]), int(r["K"]), "bf16", d="fp32", layout="NT")
        best = sel.evaluate(problem)[0]
        assert isinstance(best.candidate, Candidate) and best.candidate.label == r["kernelName"]
        assert best.basis == "tuning" and best.row.value == pytest.approx(float(r["us"]) * 1e-6)
        flops = 2.0 * problem.m * problem.n * problem.k
        assert best.score == pytest.approx(flops / (float(r["us"]) * 1e-6) / 1e12)
        assert f"bf16_tuned_gemm.csv:{i + 2}" in sel.explain(problem)


def test_foreign_table_dtypes_follow_the_release_data(tmp_path):
    """aiter's torch dtype names map as specs/aiter/release.yaml says: torch.float8_e4m3fn is OCP fp8 (gfx950's
    fp8_e4m3), torch.float8_e4m3fnuz is FNUZ fp8 (gfx942's); a second copy of the map once made both FNUZ."""
    import csv
    import io

    rows = {"torch.float8_e4m3fn": ("gfx950", "fp8_e4m3"), "torch.float8_e4m3fnuz": ("gfx942", "fp8")}
    for torch_name, (target, ours) in rows.items():
        out = io.StringIO()
        w = csv.DictWriter(out, ["M", "N", "K", "dtype", "outdtype", "us", "kernelName"])
        w.writeheader()
        w.writerow({"M": 64, "N": 128, "K": 256, "dtype": torch_name, "outdtype": "torch.bfloat16", "us": 3.5,
                    "kernelName": "k"})
        path = tmp_path / f"{target}.csv"
        path.write_text(out.getvalue())
        db = TuningDB(tmp_path / f"{target}.db")
        assert db.import_csv(path, target=target, layout="NT") == 1
        (row,) = db.rows(target)
        assert row.problem == problem_key(GemmProblem.make(64, 128, 256, ours, d="bf16", layout="NT")), row
