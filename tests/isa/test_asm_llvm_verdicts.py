"""The assembler takes what llvm-mc-22 takes and refuses what it refuses: each line below goes through
`llvm-mc-22 -mcpu=gfx942 -show-encoding` and through ours; where LLVM encodes it we must give the same
bytes, where LLVM reports an error we must raise a clean AsmError/EncodeError (an IsaError with the line
and column), never another exception. The verdicts are LLVM's, asked in the test, not written here.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.spec.forms import forms_of

from jitgemm import isa
from tests.fixtures.oracles import require_tool

CASES = [
    # FLAT / GLOBAL / SCRATCH in every addressing form (AMDGPUUsage, "Memory model"; ISA guide ch. 9)
    "global_load_dword v1, v[2:3], off", "global_load_dword v1, v2, s[4:5] offset:-16",
    "global_store_dwordx2 v[2:3], v[4:5], off offset:8", "global_store_dword v2, v3, s[6:7] offset:4095",
    "global_atomic_add v1, v2, s[4:5] offset:16", "global_atomic_add v0, v1, v2, s[4:5] sc0",
    "global_atomic_add v[2:3], v1, off", "global_atomic_add v0, v[2:3], v1, off sc0",
    "global_atomic_add_f32 v4, v28, s[16:17]", "global_atomic_pk_add_bf16 v6, v7, s[8:9] offset:32",
    "global_atomic_cmpswap v1, v[2:3], s[4:5]", "global_atomic_cmpswap v0, v1, v[2:3], s[4:5] sc0",
    "global_atomic_cmpswap_x2 v1, v[2:5], s[4:5]", "global_atomic_add_x2 v[0:1], v2, v[4:5], s[6:7] sc0",
    "flat_atomic_add v0, v[2:3], v1 sc0", "flat_atomic_add v[2:3], v1", "flat_load_dword v1, v[2:3] offset:16",
    "scratch_load_dword v1, off, s2 offset:8", "scratch_load_dword v1, v2, off", "scratch_store_dword v2, v3, s4",
    "scratch_store_dword off, v3, s4 offset:12",
    "global_atomic_add v1, v[2:3], s[4:5]", "global_atomic_add v1, v2, off",  # wrong address widths
    # labels and modifiers on one line
    "L1: ds_read_b32 v1, v2 offset:16", "L1: L2: s_nop 0", "loop_end: global_load_dword v1, v[2:3], off sc0 nt",
    # numbers as llvm-mc's lexer reads them
    "s_mov_b32 s0, 017", "s_mov_b32 s0, 0x17", "s_mov_b32 s0, 0b101", "s_mov_b32 s0, 08", "s_mov_b32 s0, 0b102",
    "s_movk_i32 s0, 0777", "v_mov_b32 v0, 0x1ffffffff", "s_mov_b32 s0, " + "9" * 5000, "s_mov_b32 s0, 1" + "0" * 25,
    "v_mov_b32 v0, 1" + "0" * 5000 + ".0", "s_mov_b32 s" + "1" * 5000 + ", 0", "s_waitcnt vmcnt(" + "7" * 3000 + ")",
    "v_mov_b32 v" + "1" * 5000 + ", 0", "v_add_f32 v0, v[" + "1" * 5000 + "], v1",
    # non-ASCII digits in register numbers
    "v_mov_b32 v\u0661, v2", "s_mov_b32 s\u0661, 1", "v_mov_b32 v[\u0661:\u0662], v2", "v_mov_b32 v1, v\uff12",
    # a modifier given twice
    "ds_read_b32 v1, v2 offset:16 offset:32", "global_load_dword v1, v[2:3], off sc0 sc0",
    "buffer_load_dword v1, v2, s[4:7], 0 offen offen", "v_add_f32_e64 v0, v1, v2 clamp clamp",
    # register widths: 64-bit registers in 32-bit operands, and the width-free SRC_* sources
    "s_mov_b32 s0, exec", "s_mov_b32 s0, vcc", "v_mov_b32 v0, exec", "s_add_u32 s0, s1, flat_scratch",
    "s_mov_b64 s[0:1], m0", "s_mov_b64 s[0:1], vcc_lo", "s_mov_b64 s[0:1], exec",
    "s_mov_b64 s[0:1], src_shared_base", "s_mov_b64 s[0:1], src_private_limit", "s_mov_b32 s0, src_shared_base",
    "s_mov_b64 s[0:1], src_vccz", "s_mov_b64 s[0:1], src_scc", "s_mov_b64 s[0:1], src_lds_direct",
    # float literals: denormals that would round (to 0), exact ones, overflow
    "v_mov_b32 v0, 1e-40", "v_mov_b32 v0, 1.0e-45", "v_mov_b32 v0, 1e-39", "v_add_f16 v0, 1e-8, v1",
    "v_add_f16 v0, 1e-5, v1", "v_mov_b32 v0, 1.5e-38", "v_add_f32 v0, 2.5e-30, v1", "v_add_f16 v0, 0.0001, v1",
    "v_add_f64 v[0:1], 1e-300, v[2:3]",
    # buffer cache controls take only sc0/sc1 (LLVM's MUBUF_Invalidate); packed sub-word integer dots have no
    # op_sel/op_sel_hi but do have neg_lo/neg_hi (modifiers.py CACHE_CONTROL_UNWRITTEN, _packs_sub_word_integers)
    "buffer_wbl2 sc0 sc1", "buffer_inv sc1", "buffer_wbl2 offset:16", "buffer_inv offen", "buffer_wbl2 idxen",
    "buffer_inv lds", "v_dot4_i32_i8 v1, v2, v3, v4 op_sel:[1,0,0]", "v_dot8_u32_u4 v1, v2, v3, v4 op_sel_hi:[0,0,0]",
    "v_dot4_u32_u8 v1, v2, v3, v4 op_sel_hi:[1,1,1]", "v_dot8_i32_i4 v1, v2, v3, v4 neg_lo:[1,0,1] neg_hi:[0,1,0]",
    # s_sendmsg (OPR_SENDMSG) as a number, by name and numerically
    "s_sendmsg 54633", "s_sendmsg sendmsg(MSG_INTERRUPT)", "s_sendmsghalt sendmsg(MSG_GS, GS_OP_EMIT, 1)",
    "s_sendmsg sendmsg(0, 0, 0)", "s_sendmsg sendmsg(MSG_GS, GS_OP_NOP)",
    # f64 MFMA: BLGP is neg:[a,b,c] (modifiers._f64_matrix); other MFMAs keep blgp:
    "v_mfma_f64_16x16x4_f64 v[112:119], a[50:51], v[168:169], -1 cbsz:6 abid:10 neg:[0,0,1]",
    "v_mfma_f64_16x16x4_f64 v[0:7], v[2:3], v[4:5], v[0:7] blgp:4",
    "v_mfma_f64_4x4x4_4b_f64 v[0:1], v[2:3], v[4:5], v[0:1] neg:[1,1]",
    "v_mfma_f64_4x4x4_4b_f64 v[0:1], v[2:3], v[4:5], v[0:1] neg:[1,1,0,1]",
    "v_mfma_f32_32x32x8_f16 v[0:15], v[2:3], v[4:5], v[0:15] blgp:3",
    "v_mfma_f32_32x32x8_f16 v[0:15], v[2:3], v[4:5], v[0:15] neg:[1,0,0]",
    # fmamk/fmaak: a 32-bit source may name the literal the encoding carries, if it is the same value
    "v_fmamk_f32 v68, 0xbc4f7e72, 0xbc4f7e72, v6", "v_fmamk_f32 v68, 0xbc4f7e71, 0xbc4f7e72, v6",
    "v_fmaak_f32 v1, 0x11223344, v3, 0x11223344", "v_fmaak_f32 v1, 1.0, v3, 0x11223344",
]


def _llvm(mc: str, line: str) -> bytes | None:
    proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], input=line + "\n",
                          capture_output=True, text=True)
    if proc.returncode != 0 or "error:" in proc.stderr:
        return None
    found = re.findall(r"encoding: \[([^\]]*)\]", proc.stdout)
    return b"".join(bytes(int(x, 16) for x in f.split(",")) for f in found)


@pytest.fixture(scope="module")
def forms():
    return forms_of(isa.load_spec("gfx942"))


@pytest.mark.parametrize("line", CASES, ids=[c[:40] for c in CASES])
def test_same_verdict_as_llvm_mc(line, forms):
    mc = require_tool("llvm-mc")
    theirs = _llvm(mc, line)
    try:
        ours = assemble(line + "\n", forms).code
    except isa.IsaError as exc:
        assert theirs is None, f"llvm-mc encodes {line!r} as {theirs.hex()}, we refuse it: {exc}"
        assert re.match(r"<input>:1:\d+: ", str(exc)), f"error without a line:column: {exc}"
        return
    assert theirs is not None, f"llvm-mc refuses {line[:80]!r}, we encode it as {ours.hex()}"
    assert ours == theirs, f"{line!r}: llvm-mc {theirs.hex()}, ours {ours.hex()}"
