"""The gfx9 constant-bus limit (one SGPR, special register or literal per VALU instruction): our assembler
accepts exactly what llvm-mc accepts, and refuses the rest with a message that says why."""

from __future__ import annotations

import subprocess

import pytest
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.asm_errors import AsmError

from jitgemm import isa
from tests.fixtures.oracles import require_tool

LINES = [
    "v_cndmask_b32 v3, 0x80000000, v3, vcc",      # literal + implicit VCC
    "v_cndmask_b32 v3, s1, v3, vcc",
    "v_cndmask_b32 v3, v1, v3, vcc",
    "v_cndmask_b32_e64 v38, s78, v40, s[76:77]",
    "v_cndmask_b32_e64 v38, v7, v40, s[76:77]",
    "v_add3_u32 v34, v34, s33, s35",
    "v_add3_u32 v34, s33, s33, v1",               # the same SGPR twice is one value
    "v_fma_f32 v1, s2, s2, s2",
    "v_fma_f32 v1, s2, v3, 1.0",                  # inline constants are free
    "v_fmaak_f32 v1, s2, v3, 0x41200000",
    "v_fmamk_f32 v1, v2, 0x41200000, v3",
    "v_addc_co_u32 v1, vcc, s2, v3, vcc",
    "v_writelane_b32 v1, s2, s3",
    "v_writelane_b32 v4, s8, m0",
    "v_readlane_b32 s1, v2, s3",
    "v_pk_fma_f32 v[0:1], s[2:3], s[4:5], v[6:7]",
    "v_mov_b32 v1, 0x1234",
]


def _llvm_accepts(llvm_mc: str, line: str) -> bool:
    out = subprocess.run([llvm_mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], input=line + "\n",
                         capture_output=True, text=True)
    return "error" not in out.stderr


@pytest.mark.parametrize("line", LINES)
def test_same_verdict_as_llvm(line):
    llvm_mc = require_tool("llvm-mc")
    spec = isa.load_spec("gfx942")
    llvm_ok = _llvm_accepts(llvm_mc, line)
    try:
        assemble(line + "\n", spec)
        ours_ok = True
    except AsmError as exc:
        ours_ok = False
        assert "constant bus" in str(exc) and ":1:" in str(exc)
    assert ours_ok == llvm_ok, line
