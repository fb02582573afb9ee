"""PyTorch TunableOp files and hipBLASLt override files into the tuning database (facts about hipBLASLt's and
rocBLAS's solutions) and back out: the round trip gives the same file, a validator that does not match this
environment refuses the import unless asked, the CLI reports it in one line with exit status 2."""

from __future__ import annotations

import random

import pytest

from jitgemm import tuning_files
from jitgemm.cli import main
from jitgemm.tuning_db import TuningDB
from jitgemm.tuning_files import TuningFileError


def _running_pt() -> str:
    return tuning_files.running_versions()["PT_VERSION"] or "2.13.0"


def _tunableop_text(rng: random.Random, pt_version: str) -> str:
    n, m, k = (rng.choice([64, 128, 4096, 25088]) for _ in range(3))
    b = rng.randint(2, 8)
    return (f"Validator,PT_VERSION,{pt_version}\n"
            "Validator,ROCM_VERSION,6.3.0.0-12969-1544e39\n"
            "Validator,HIPBLASLT_VERSION,0.12.0-a9c5cc7\n"
            "Validator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-\n"
            f"GemmTunableOp_float_NT,nt_{n}_{m}_{k}_ld_{n}_{m}_{n},Gemm_Hipblaslt_1219,1.262\n"
            f"GemmTunableOp_BFloat16_NN,nn_{n}_{m}_{k}_ld_{n}_{k}_{n},Gemm_Rocblas_1216,0.033\n"
            f"GemmStridedBatchedTunableOp_Half_TN,tn_{n}_{m}_{k}_B_{b}_ld_{k}_{k}_{n},Gemm_Hipblaslt_77,0.5\n"
            f"ScaledGemmTunableOp_Float8_e4m3fnuz_Float8_e4m3fnuz_BFloat16_TN,tn_{n}_{m}_{k}_ld_{k}_{k}_{n}_rw_1"
            f"_bias_BFloat16,Gemm_Hipblaslt_4242,0.0125\n"
            f"GemmTunableOp_double_NN,nn_{n}_{m}_{k}_ld_{n}_{k}_{n},Default,2.5\n")


def test_tunableop_round_trip(tmp_path):
    rng = random.Random(1234)
    text = _tunableop_text(rng, _running_pt())
    src, out = tmp_path / "tunableop_results0.csv", tmp_path / "exported.csv"
    src.write_text(text)
    db = TuningDB(tmp_path / "t.db")
    report = tuning_files.import_tunableop(src, db)
    assert report.rows == 4 and not report.mismatches
    assert len(report.skipped) == 1 and "GemmTunableOp_double_NN" in report.skipped[0]   # reported, not stored
    assert {c.key: c.status for c in report.checks}["PT_VERSION"] == "match"
    assert {c.key: c.status for c in report.checks}["HIPBLASLT_VERSION"] == "unknown"   # reported, not checked
    rows = db.rows(target="gfx942")
    assert [r.generator for r in rows] == ["hipblaslt", "rocblas", "hipblaslt", "hipblaslt"]
    assert all(r.problem.startswith("gemm ") for r in rows)
    assert rows[0].value == pytest.approx(1.262e-3) and rows[0].kernel == "Gemm_Hipblaslt_1219"
    assert tuning_files.export_tunableop(db, out) == 4
    assert out.read_text() == "".join(x for x in text.splitlines(True) if "double" not in x)


def test_tunableop_keys_become_jitgemm_problems(tmp_path):
    """BLAS column-major keys: params n first, layout letters (transB, transA) -> M, N and the A/B layout."""
    src = tmp_path / "t.csv"
    src.write_text(f"Validator,PT_VERSION,{_running_pt()}\n"
                   "GemmTunableOp_float_NT,nt_25088_4096_64_ld_25088_4096_25088,Gemm_Hipblaslt_1219,1.262\n"
                   "GemmStridedBatchedTunableOp_Half_NN,nn_32_48_16_B_3_ld_32_16_32,Gemm_Rocblas_1,0.5\n"
                   "ScaledGemmTunableOp_Float8_e4m3fnuz_Float8_e4m3fnuz_BFloat16_TN,tn_256_128_512_ld_512_512_256"
                   "_rw_0_bias_None,Gemm_Hipblaslt_9,0.01\n")
    db = TuningDB(tmp_path / "t.db")
    tuning_files.import_tunableop(src, db, target="gfx942")
    keys = [r.problem for r in db.rows()]
    assert all(key.startswith("gemm ") for key in keys)
    assert keys[0].startswith("gemm m=4096 n=25088 k=64 a=fp32") and "layout=TN" in keys[0]
    assert keys[1].startswith("gemm m=48 n=32 k=16 batch=3 a=fp16") and "layout=NN" in keys[1]
    assert "a=fp8 b=fp8 d=bf16" in keys[2] and "layout=NT" in keys[2] and "scale_mode=tensor" in keys[2]


def test_mismatched_validator_is_reported_not_applied(tmp_path, capsys):
    src = tmp_path / "old.csv"
    src.write_text(_tunableop_text(random.Random(7), "1.9.0"))
    db_path = tmp_path / "t.db"
    with pytest.raises(TuningFileError, match=r"PT_VERSION: file '1.9.0', running .*mismatch.*--accept-validator"):
        tuning_files.import_tunableop(src, TuningDB(db_path))
    assert TuningDB(db_path).rows() == []                      # nothing applied
    assert main(["tuning", "import-tunableop", str(src), "--db", str(db_path)]) == 2
    assert "PT_VERSION" in capsys.readouterr().err
    assert main(["tuning", "import-tunableop", str(src), "--db", str(db_path), "--accept-validator-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "mismatch" in out and "4 rows imported" in out and "accepted" in out and "skipped" in out
    assert main(["tuning", "export-tunableop", str(tmp_path / "back.csv"), "--db", str(db_path)]) == 0
    assert (tmp_path / "back.csv").read_text() == "".join(x for x in src.read_text().splitlines(True)
                                                          if "double" not in x)


def test_bad_tunableop_lines(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text(f"Validator,PT_VERSION,{_running_pt()}\nGemmTunableOp_float_NT,nt_1_2_3_ld_1_3_1,X,fast\n")
    with pytest.raises(TuningFileError, match=r"bad.csv:2: time 'fast' is not a number"):
        tuning_files.import_tunableop(src, TuningDB(tmp_path / "t.db"), target="gfx942")
    src.write_text("hello,world\n")
    with pytest.raises(TuningFileError, match=r"bad.csv:1: not a TunableOp line"):
        tuning_files.import_tunableop(src, TuningDB(tmp_path / "t.db"), target="gfx942")
    src.write_text(f"Validator,PT_VERSION,{_running_pt()}\n")
    with pytest.raises(TuningFileError, match=r"no GCN_ARCH_NAME validator"):
        tuning_files.import_tunableop(src, TuningDB(tmp_path / "t.db"))


def test_hipblaslt_override_file(tmp_path, capsys):
    rng = random.Random(99)
    m, n, k = rng.choice([512, 1024]), rng.choice([64, 256]), rng.choice([128, 1024])
    src = tmp_path / "tuning.txt"
    src.write_text("Git Version: 0.12.0-a9c5cc7\n"
                   f"N,N,1,{m},{n},{k},f16_r,f16_r,f16_r,f32_r,56073\n"
                   f"T,N,1,{m},{n},{k},bf16_r,bf16_r,bf16_r,f32_r,1234,Cijk_Alik_Bljk_BBS_BH_MT64x64\n"
                   "N,N,1,8,8,8,f64_r,f64_r,f64_r,f64_r,7\n")
    db = TuningDB(tmp_path / "t.db")
    report = tuning_files.import_hipblaslt(src, db, target="gfx942")
    assert report.rows == 2 and [c.status for c in report.checks] == ["unknown"]
    assert len(report.skipped) == 1 and "f64_r" in report.skipped[0]
    rows = db.rows(target="gfx942", metric="chosen")
    assert rows[0].problem.startswith(f"gemm m={n} n={m} k={k} a=fp16") and "layout=NN" in rows[0].problem
    assert "layout=NT" in rows[1].problem and rows[1].kernel == "Cijk_Alik_Bljk_BBS_BH_MT64x64"
    assert rows[0].kernel == "solution 56073" and {r.generator for r in rows} == {"hipblaslt"}
    with pytest.raises(TuningFileError, match=r"HIPBLASLT_VERSION: file '0.12.0-a9c5cc7', running '0.13.0'"):
        tuning_files.import_hipblaslt(src, db, target="gfx942", hipblaslt_version="0.13.0")
    assert main(["tuning", "import-hipblaslt", str(src), "--db", str(tmp_path / "u.db")]) == 2
    assert "--target" in capsys.readouterr().err
