"""`jitgemm spec info/show` on AMD's excerpt and the bundled subset; bad names exit 2 with suggestions."""

from __future__ import annotations

import subprocess
import sys

from jitgemm.cli import main


def test_info_on_excerpt(excerpt_path, capsys):
    assert main(["spec", "info", "--spec", str(excerpt_path)]) == 0
    out = capsys.readouterr().out
    assert str(excerpt_path) in out and "(explicit path)" in out
    assert "AMD CDNA 3" in out and "2026-02-20" in out and "1.1.1" in out
    assert "instructions    114" in out and "encodings       28" in out


def test_info_default_is_bundled(capsys):
    assert main(["spec", "info"]) == 0
    out = capsys.readouterr().out
    assert "bundled subset" in out and "target          gfx942" in out


def test_show_instruction(excerpt_path, capsys):
    assert main(["spec", "show", "v_accvgpr_read_b32", "--spec", str(excerpt_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("V_ACCVGPR_READ  (aliases: V_ACCVGPR_READ_B32)")
    assert "ENC_VOP3P (64 bits)  opcode 88 (0x58)" in out and "OPR_SRC_ACCVGPR" in out and "SRC0" in out


def test_show_multi_range_field(excerpt_path, capsys):
    assert main(["spec", "show", "V_PK_FMA_F32", "--spec", str(excerpt_path)]) == 0
    out = capsys.readouterr().out
    assert "ENC_VOP3P (64 bits)  opcode 48 (0x30)" in out
    assert "[40:32]" in out and "OPR_SRC_NOLIT" in out


def test_show_unknown_name_exit_2(excerpt_path, capsys):
    assert main(["spec", "show", "v_mfma_f32_32x32x8_bf17", "--spec", str(excerpt_path)]) == 2
    err = capsys.readouterr().err
    assert "closest: V_MFMA_F32_32X32X8_BF16" in err and "Traceback" not in err


def test_console_entry_points_agree(excerpt_path):
    for cmd in (["jitgemm"], [sys.executable, "-m", "jitgemm"]):
        out = subprocess.run([*cmd, "spec", "info", "--spec", str(excerpt_path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "AMD CDNA 3" in out.stdout


def test_bad_spec_file_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<Spec><ISA>\n<Encodings>\n</ISA></Spec>")
    out = subprocess.run([sys.executable, "-m", "jitgemm", "spec", "info", "--spec", str(bad)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith(f"jitgemm spec: error: {bad}:3:3: malformed XML")
    assert "Traceback" not in out.stderr
