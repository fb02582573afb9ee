"""Strict mode's wait-state clock counts the matrix pipe's back-pressure (issue 24): a wave's next MFMA issues no
earlier than its previous MFMA's passes after it, so an independent MFMA between an MFMA and the VALU that reads
its D counts the stall it takes, not one wait state (the profile's `mfma.next_issue`; the evidence is cited
there: LLVM SISchedule.td's HWXDL, BufferSize 0, held ReleaseAtCycles = passes; GCNHazardRecognizer's
getMFMAPipelineWaitStates). LLVM's hazard recognizer counts that MFMA as 1 and would ask more s_nop.

Hand-written kernels assembled by llvm-mc-22: A and B all 1.0, so D = K everywhere and the VALU doubles it.
gfx942, v_mfma_f32_16x16x32_fp8_fp8 (4 passes; MFMA -> VALU read needs 7): M1 at wait state 0, M2 stalls to 4,
`s_nop N` at 5, the read at 6 + N: N + 5 given. gfx950, v_mfma_f32_16x16x128_f8f6f4 with fp8 A and B (8 passes,
needs 12): M2 at 8, the read at 10 + N: N + 9 given (AMD's f8_block_scale_mi350 has s_nop 5 there: 14).
"""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.isa.errors import SpecError

from jitgemm.emu import emulate
from jitgemm.emu.strict import StrictViolation
from tests.fixtures.hand_kernel import BUF, assemble

ONE = {"gfx942": "0x40404040", "gfx950": "0x38383838"}   # fp8 1.0: FNUZ e4m3 (bias 8) on gfx942, OCP e4m3 on gfx950
MFMA = {"gfx942": ("v_mfma_f32_16x16x32_fp8_fp8 v[{d}:{d3}], v[2:3], v[2:3], 0", 3, 32.0),
        "gfx950": ("v_mfma_f32_16x16x128_f8f6f4 v[{d}:{d3}], v[2:9], v[2:9], 0", 9, 128.0)}


def body(arch: str, between: str, nop: int, tag: int = 0) -> str:
    """M1 writes v[16:19]; `between` is "mfma" (an independent M2 into v[20:23]) or ""; then s_nop `nop` and a
    VALU reading M1's v16, stored per lane. `tag` makes other bytes (a decoded program is cached by its bytes)."""
    text, last, _k = MFMA[arch]
    init = "\n".join(f"  v_mov_b32 v{r}, {ONE[arch]}" for r in range(2, last + 1))
    m2 = ("  " + text.format(d=20, d3=23)) if between == "mfma" else ""
    return f"""
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  s_mov_b32 s10, 0x10000
  s_mov_b32 s11, 0x27000
  s_mov_b32 s12, {tag}
  v_lshlrev_b32 v1, 2, v0
{init}
  s_nop 4
  {text.format(d=16, d3=19)}
{m2}
  s_nop {nop}
  v_add_f32 v24, v16, v16
  buffer_store_dword v24, v1, s[8:11], 0 offen
"""


def run(tmp_path, arch: str, between: str, nop: int, tag: int = 0) -> np.ndarray:
    co = assemble(tmp_path, body(arch, between, nop, tag), [BUF], target=arch, vgprs=32)
    out = np.full(64, -1.0, np.float32)
    emulate(co, "k", grid=1, block=64, args=[out], strict=True)
    return out


@pytest.mark.parametrize("arch, enough", [("gfx942", 2), ("gfx950", 3)])
def test_an_independent_mfma_between_counts_its_pipe_stall(tmp_path, arch, enough):
    need = {"gfx942": 7, "gfx950": 12}[arch]
    out = run(tmp_path, arch, "mfma", enough)           # LLVM's count: 1 + (enough + 1) wait states, short of it
    np.testing.assert_array_equal(out, np.full(64, 2 * MFMA[arch][2], np.float32))
    with pytest.raises(StrictViolation, match=f"mfma -> valu read needs {need} wait states, {need - 1} given "
                                              r"\(an MFMA's matrix-pipe stall counted"):
        run(tmp_path, arch, "mfma", enough - 1)         # one wait state fewer


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_a_planted_short_gap_without_an_mfma_between_is_still_refused(tmp_path, arch):
    need = {"gfx942": 7, "gfx950": 12}[arch]
    out = run(tmp_path, arch, "", need - 1)            # s_nop need-1: need wait states
    np.testing.assert_array_equal(out, np.full(64, 2 * MFMA[arch][2], np.float32))
    with pytest.raises(StrictViolation, match=f"mfma -> valu read needs {need} wait states, {need - 1} given \\("):
        run(tmp_path, arch, "", need - 2)


def test_the_back_pressure_is_the_profiles_data(tmp_path, monkeypatch):
    """Without the profile's mfma.next_issue every instruction is one wait state again (LLVM's count): the same
    kernel is refused; a malformed row is refused when the profile is read."""
    from jitgemm.isa.spec import targets

    monkeypatch.setattr(targets.TargetProfile, "mfma_next_issue", property(lambda self: None))
    with pytest.raises(StrictViolation, match="needs 7 wait states, 4 given \\(CDNA3"):
        run(tmp_path, "gfx942", "mfma", 2, tag=1)
    monkeypatch.undo()
    from importlib import resources

    text = resources.files("jitgemm.specs.targets").joinpath("gfx942.yaml").read_text(encoding="utf-8")
    row = "next_issue: {plus: 0, kinds: [xdl, smfma]}"
    assert row in text
    for bad in ("next_issue: {plus: -1, kinds: [xdl]}", "next_issue: {plus: 0, kinds: [wmma]}"):
        with pytest.raises(SpecError, match="mfma.next_issue"):
            targets.parse_profile(text.replace(row, bad), "test.yaml")


@pytest.mark.parametrize("target, mnemonic, operands", [
    ("gfx942", "v_mfma_f32_16x16x32_fp8_fp8", "v[8:11], v[2:3], v[4:5], 0"),
    ("gfx942", "v_mfma_f32_32x32x16_bf8_fp8", "v[16:31], v[2:3], v[4:5], 0"),
    ("gfx942", "v_mfma_f32_32x32x2_f32", "v[16:31], v2, v4, 0"),              # SMFMA (f32 inputs)
    ("gfx950", "v_mfma_f32_16x16x32_bf16", "v[8:11], v[2:5], v[4:7], 0"),
    ("gfx950", "v_mfma_f32_32x32x16_f16", "v[16:31], v[2:5], v[4:7], 0"),
])
def test_the_pipe_stall_is_llvm_mcas_dispatch_of_the_next_mfma(tmp_path, target, mnemonic, operands):
    """llvm-mca-22 runs LLVM's scheduling model: the second of two independent MFMAs dispatches when the first
    releases HWXDL, at its passes; the profile's back-pressure (mfma_pipe_busy) is that cycle."""
    import re
    import subprocess

    from jitgemm.isa.hazards import mfma_pipe_busy, mfma_timing
    from jitgemm.isa.spec.targets import target_profile

    from jitgemm import isa
    from tests.fixtures.oracles import require_tool

    mca = require_tool("llvm-mca")
    src = tmp_path / "m.s"
    second = re.sub(r"v\[(\d+):(\d+)\]", lambda m: f"v[{int(m[1]) + 32}:{int(m[2]) + 32}]", operands, count=1)
    src.write_text(f"{mnemonic} {operands}\n{mnemonic} {second}\n")
    out = subprocess.run([mca, "-mtriple=amdgcn", f"-mcpu={target}", "-iterations=1", "-timeline", str(src)],
                         capture_output=True, text=True, check=True).stdout
    head = next(line for line in out.splitlines() if line.startswith("Index"))
    row = next(line for line in out.splitlines() if line.startswith("[0,1]"))
    dispatch = row.index("D") - head.index("0")
    profile = target_profile(target)
    passes, kind = mfma_timing(isa.load_spec(target).instruction(mnemonic.upper()), profile)
    assert passes > 1 and mfma_pipe_busy(passes, kind, profile) == dispatch
