"""`jitgemm asm`: --show-encoding prints what llvm-mc -show-encoding prints, --raw -o writes the bytes llvm-mc
puts in .text, and mistakes exit 2 with llvm-mc's layout: file:line:col: error: ..., the line and a caret."""

from __future__ import annotations

import subprocess

from jitgemm.cli import main
from tests.fixtures.asm_support import SUBSET, text_section
from tests.fixtures.oracles import require_tool

SOURCE = """\
  s_load_dwordx2 s[4:5], s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v1, 0x12345678
  v_add_f32 v1, v2, s3
  v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]
  global_store_dword v[2:3], v1, off offset:64 sc0 sc1
  v_cmp_gt_u32 s[4:5], v1, 7
  s_endpgm
"""


def _norm(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.lstrip().startswith(".")]


def test_show_encoding_equals_llvm_mc(tmp_path, capsys):
    mc = require_tool("llvm-mc")
    src = tmp_path / "k.s"
    src.write_text(SOURCE)
    assert main(["asm", str(src), "--spec", str(SUBSET), "--show-encoding"]) == 0
    ours = capsys.readouterr().out
    theirs = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding", str(src)], check=True,
                            capture_output=True, text=True).stdout
    assert _norm(ours) == _norm(theirs)


def test_output_file_equals_llvm_mc_text(tmp_path, capsys):
    mc = require_tool("llvm-mc")
    src = tmp_path / "k.s"
    src.write_text(SOURCE)
    out = tmp_path / "k.bin"
    assert main(["asm", str(src), "--spec", str(SUBSET), "--raw", "-o", str(out)]) == 0
    obj = tmp_path / "k.o"
    subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)], check=True)
    assert out.read_bytes() == text_section(obj)[0]


def test_errors_exit_2_with_position(tmp_path, capsys):
    src = tmp_path / "bad.s"
    src.write_text("s_nop 0\n  v_add_f32 v1, v2, a3\n")
    assert main(["asm", str(src), "--spec", str(SUBSET)]) == 2
    err = capsys.readouterr().err.strip()
    first, line, caret = err.split("\n")
    assert first.startswith(f"{src}:2:21: error:") and "a3" in first
    assert line == "  v_add_f32 v1, v2, a3" and caret == " " * 20 + "^"
    assert main(["asm", str(tmp_path / "missing.s")]) == 2
    assert "cannot read" in capsys.readouterr().err
