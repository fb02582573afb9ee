"""The assembler beside llvm-mc-22 on mutated corpus lines (tests/fixtures/asm_mutation_fuzz.py): accept what llvm-mc
accepts, with its bytes. Before: 1,327 of 3,000 mutated lines differed (a trailing comma, `v[0x4]`, `~x`, `!x`,
`-(x)`, `_e32` on scalar instructions, `0x1p3`, undefined names, a VOPC without vcc, expressions in modifier lists
and counters); after: 79, and no traceback (`012345678` raised ValueError). A seeded sample runs here; the full run
is bench/fuzz_hostile.py."""

from __future__ import annotations

import pytest

from tests.fixtures.asm_mutation_fuzz import base_lines, differences, mutated_lines
from tests.fixtures.oracles import require_tool

KNOWN = [   # one line of each fixed class, with llvm-mc-22 -mcpu=gfx942's verdict
    "ds_or_rtn_b32 v4, v7, v10,",
    "v_mov_b32 v[0x10], 0",
    "v_mov_b64 v[0x10:0x11], 0",
    "v_mov_b32 v[0x10:0x11], 0",            # refused by both: two registers for one
    "s_ashr_i32 s8, ~0x12345678, s11",
    "v_sat_pk_u8_i16_e32 v4, !0x1234",
    "v_mul_f16_e32 v4, -(0x1234), v7",
    "s_mov_b32 s0, 1<<64",
    "s_mov_b32 s0, 1<<-1",                  # refused by both: INT64_MIN does not fit
    "s_add_u32_e32 s0, s1, s2",
    "v_cmp_lg_f32_e32 vcc, 0x1p3, v4",
    "v_fmac_f64_e32 v[4:5], 0x1p3, v[8:9]",
    "v_cmpx_neq_f64_e32 v[4:5], v[8:9]",
    "v_cmp_t_u32_e32 0x12345678, v4",
    "s_mov_b32 s0, undefined_sym",
    "v_frexp_mant_f64_e32 v[4:5], undefined_sym",   # refused by both: no 64-bit relocatable literal
    "s_waitcnt expcnt(!1) lgkmcnt(1) vmcnt(1+1)",
    "v_add_f32_dpp v4, v7, v10 quad_perm:[3,2,1+(1<<64),0]",
    "s_add_i32 s8, 012345678, 0x12345678",  # refused by both (was a ValueError traceback)
    "s_endpgm expcnt(8)",
]


def test_known_lines_match_llvm_mc():
    bad = differences(KNOWN, require_tool("llvm-mc"))
    assert not bad, bad


@pytest.mark.parametrize("seed", [27])
def test_mutated_sample_stays_close_to_llvm_mc(seed):
    pairs = mutated_lines(base_lines(), 400, seed)
    bad = differences([line for _, line in pairs], require_tool("llvm-mc"))
    assert not [b for b in bad if b[2].startswith("TRACEBACK")], bad
    # 79 of 3,000 (2.6 %) still differ (missing commas llvm-mc tolerates, two literals one of them a relocation,
    # 64-bit DPP controls); a new defect class pushes a 400-line sample past this bound
    assert len(bad) <= 24, f"{len(bad)} of {len(pairs)} differ from llvm-mc-22: {bad[:8]}"
