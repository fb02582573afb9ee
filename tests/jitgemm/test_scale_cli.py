"""The scale modes on the command line: the same options on run, compile and select, a run checked against
numpy in the emulator, and one-line refusals with status 2."""

from __future__ import annotations

import pytest

from jitgemm.cli import main

SIZES = ["--m", "40", "--n", "140", "--k", "200"]


@pytest.mark.parametrize("command, extra", [
    ("run", ["--dtype", "int8", "--out-dtype", "bf16", "--scale-mode", "block", "--a-scale-order", "col",
             "--layout", "NT"]),
    ("compile", ["--dtype", "fp8_e4m3", "--arch", "gfx950", "--scale-mode", "rowcol", "-o", "{tmp}/k.co"]),
    ("select", ["--dtype", "fp8", "--scale-mode", "tensor", "--explain"]),
])
def test_scale_options_on_every_command(command, extra, tmp_path, capsys):
    assert main([command, *SIZES, *(x.replace("{tmp}", str(tmp_path)) for x in extra)]) == 0
    out = capsys.readouterr().out
    if command == "run":
        err = float(out.split("numpy (float64): ")[1].split(";")[0])
        assert err < 2**-7
    if command == "compile":
        assert "scale_mode=rowcol" in out and (tmp_path / "k.co").stat().st_size > 0
    if command == "select":
        assert "scale_mode=tensor" in out and "kept" in out


@pytest.mark.parametrize("extra, words", [
    (["--dtype", "bf16", "--scale-mode", "rowcol"], "accepted: 8-bit operands"),
    (["--dtype", "fp8", "--b-scale-order", "col"], "describes block scales"),
    (["--dtype", "int8", "--scale-mode", "tensor", "--out-dtype", "int32"], "accepted: fp32, fp16, bf16"),
])
def test_refusals_exit_2(extra, words, capsys):
    assert main(["run", *SIZES, *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
