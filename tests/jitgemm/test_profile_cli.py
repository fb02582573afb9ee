"""`jitgemm profile`: the timing model's prediction and counters for a kernel on problems, from the command line."""

from __future__ import annotations

import json

import pytest

from jitgemm.cli import main


@pytest.fixture(scope="module")
def code_object(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "k.co"
    assert main(["compile", "--m", "256", "--n", "256", "--k", "256", "--dtype", "bf16", "--layout", "NT",
                 "--tile", "128x128x32", "-o", str(path)]) == 0     # pinned: the selector may rank another tile
    return path


def test_json_has_one_object_per_problem(code_object, tmp_path, capsys):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("M,N,K,split_k\n128,128,65536,8\n4096,4096,4096\n1,8192,8192,1\n")
    capsys.readouterr()
    assert main(["profile", str(code_object), "--shapes", str(shapes), "--device", "MI308X", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["problems"]
    assert [(r["m"], r["n"], r["k"], r["split_k"]) for r in rows] == [(128, 128, 65536, 8), (4096, 4096, 4096, 1),
                                                                    (1, 8192, 8192, 1)]
    for r in rows:
        assert r["device"] == "MI308X" and r["predicted_us"] >= r["roofline_us"] > 0
        assert set(r["counters"]["instructions"]) >= {"mfma", "vmem", "lds"} and r["counters"]["bytes"]["hbm"] > 0
    assert rows[0]["counters"]["workgroups"] == 8 and rows[1]["predicted_us"] > rows[2]["predicted_us"]


def test_text_report_and_kernel_by_name(code_object, capsys):
    capsys.readouterr()
    assert main(["profile", str(code_object), "--m", "8192", "--n", "8192", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "on MI300X" in out and "TFLOP/s" in out and "roofline" in out and "time by cause" in out
    assert main(["profile", "--kernel", "64x64", "--m", "512", "--n", "512", "--k", "512", "--layout", "NT",
                 "--device", "304", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "64x64" in doc["kernel"] and doc["problems"][0]["device"] == "MI300X"


@pytest.mark.parametrize("argv, message", [
    (["--m", "1"], "--n, --k missing; accepted: --m M --n N --k K, or --shapes FILE.csv"),
    (["--m", "1", "--n", "1", "--k", "1", "--device", "MI999"], "no device 'MI999'; accepted: MI300X"),
    (["--m", "1", "--n", "1", "--k", "1", "--kernel", "x"], "name one kernel"),
])
def test_bad_input_is_one_line_and_status_2(code_object, argv, message, capsys):
    assert main(["profile", str(code_object), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_shapes_file_names_the_line(code_object, tmp_path, capsys):
    shapes = tmp_path / "bad.csv"
    shapes.write_text("M,N,K\n64,64,64\n64,x,64\n")
    assert main(["profile", str(code_object), "--shapes", str(shapes)]) == 2
    assert "bad.csv:3: '64,x,64' is not a problem; accepted: M,N,K[,split_k]" in capsys.readouterr().err
