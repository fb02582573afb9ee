"""`jitgemm spec card` and `jitgemm agent-eval` on the command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.fixtures.agents.cheats import CORRECT, cheats
from tests.fixtures.oracles import REPO


def _jitgemm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jitgemm", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_spec_card_markdown_json_and_typo():
    md = _jitgemm("spec", "card", "v_mfma_f32_32x32x8_bf16", "global_load_dword")
    assert md.returncode == 0, md.stderr
    assert "### v_mfma_f32_32x32x8_bf16" in md.stdout and "MFMA, 8 passes (32 cycles)" in md.stdout
    assert "returns on vmcnt" in md.stdout
    js = _jitgemm("spec", "card", "--all", "--format", "json", "--arch", "gfx950")
    cards = json.loads(js.stdout)
    scale = next(c for c in cards if c["name"] == "v_mfma_scale_f32_16x16x128_f8f6f4")
    assert scale["passes"] and scale["hazards"] and scale["target"] == "gfx950"
    assert all(c["description"] for c in cards)
    bad = _jitgemm("spec", "card", "v_mfma_f32_32x32x8_bf61")
    assert bad.returncode == 2 and "closest" in bad.stderr and "Traceback" not in bad.stderr
    none = _jitgemm("spec", "card")
    assert none.returncode == 2 and "--all" in none.stderr


def test_agent_eval_scores_a_folder(tmp_path):
    """Three correct solutions and one cheat: the cheat scores 0 with its finding, missing tasks are listed."""
    for name in ("vector_add", "gemm_f16_tile", "gemm_i8_tile"):
        shutil.copy(CORRECT / f"{name}.s", tmp_path / f"{name}.s")
    cheat = next(c for c in cheats() if c.name == "missing_wait")
    (tmp_path / "saxpy.s").write_text(cheat.source.replace("0x10", "0x18"))
    out = _jitgemm("agent-eval", str(tmp_path), "--json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    by = {r["task"]: r for r in report["results"]}
    for name in ("vector_add", "gemm_f16_tile", "gemm_i8_tile"):
        assert by[name]["ok"] and 0 < by[name]["points"] <= by[name]["level"], by[name]
    assert not by["saxpy"]["ok"] and by["saxpy"]["points"] == 0
    assert by["gemm_mxfp4_tile"]["findings"][0]["check"] == "missing"
    assert report["max_points"] == sum(range(1, 13))
    listing = _jitgemm("agent-eval", "--list")
    assert listing.returncode == 0 and len(listing.stdout.splitlines()) == 12
    missing = _jitgemm("agent-eval", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a folder" in missing.stderr


def test_emulate_poison_shows_what_a_kernel_never_wrote(tmp_path):
    """`jitgemm emulate --poison`: a store of a register nothing wrote gives zeros plainly, the poison with it."""
    from jitgemm import agent_tools, battery

    source = ("  s_load_dwordx2 s[12:13], s[0:1], 0x0\n  v_lshlrev_b32 v1, 2, v0\n  s_waitcnt lgkmcnt(0)\n"
              "  global_store_dword v1, v5, s[12:13]\n")
    case = battery.Case.from_json({"args": [{"name": "c", "dtype": "u32", "shape": 64, "output": True}]})
    blob, _ = agent_tools.assemble_text(source, "gfx942", case.args)
    (tmp_path / "k.co").write_bytes(blob)
    plain = _jitgemm("emulate", str(tmp_path / "k.co"), "--arg", "u32:64:zeros")
    poisoned = _jitgemm("emulate", str(tmp_path / "k.co"), "--arg", "u32:64:zeros", "--poison")
    assert plain.returncode == poisoned.returncode == 0, (plain.stderr, poisoned.stderr)
    assert "abs-max=0" in plain.stdout and "abs-max=2.14" in poisoned.stdout   # 0x7FBADBAD = 2142952365
