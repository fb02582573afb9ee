"""Two strict-mode rules met in AMD's hand-written aiter GEMMs (issue 24), each shown on a kernel assembled by
llvm-mc-22 both ways:

- a buffer store of more than 64 bits whose SOFFSET is a register has no VALU write hazard on its data VGPRs
  (LLVM GCNHazardRecognizer::createsVALUHazard: "this hazard only exists if the instruction is not using a
  register in the soffset field"); with an inline-constant SOFFSET the 2 wait states are required;
- an atomic without SC0 returns nothing: its data VGPRs may be rewritten right after issue, while a returning
  atomic (SC0) leaves them pending until s_waitcnt vmcnt.
"""

from __future__ import annotations

import numpy as np
import pytest

from jitgemm.emu import emulate
from jitgemm.emu.strict import StrictViolation
from tests.fixtures.hand_kernel import BUF, assemble

RSRC = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  s_mov_b32 s10, 0x10000
  s_mov_b32 s11, 0x27000
  s_mov_b32 s12, 0
"""

STORE = RSRC + """
  v_lshlrev_b32 v1, 4, v0
  v_mov_b32 v2, v0
  v_add_u32 v3, 1, v0
  v_add_u32 v4, 2, v0
  v_add_u32 v5, 3, v0
  buffer_store_dwordx4 v[2:5], v1, s[8:11], SOFF offen
  v_mov_b32 v3, 0
"""


def test_a_register_soffset_store_has_no_data_hazard(tmp_path):
    out = np.zeros((64, 4), np.uint32)
    emulate(assemble(tmp_path, STORE.replace("SOFF", "s12"), [BUF]), "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, np.arange(64)[:, None] + np.arange(4))
    co = assemble(tmp_path, STORE.replace("SOFF", "0"), [BUF])
    with pytest.raises(StrictViolation, match="more than 64 bits of data"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros((64, 4), np.uint32)], strict=True)


ATOMIC = RSRC + """
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v2, 1.0
  buffer_atomic_add_f32 v2, v1, s[8:11], s12 offen RET
  v_mov_b32 v2, 0
  s_waitcnt vmcnt(0)
"""


def test_a_non_returning_atomic_leaves_its_data_registers_free(tmp_path):
    out = np.full(64, 2.0, np.float32)
    emulate(assemble(tmp_path, ATOMIC.replace(" RET", ""), [BUF]), "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, np.full(64, 3.0, np.float32))
    co = assemble(tmp_path, ATOMIC.replace(" RET", " sc0"), [BUF])
    with pytest.raises(StrictViolation, match="missing s_waitcnt on v2"):
        emulate(co, "k", grid=1, block=64, args=[np.full(64, 2.0, np.float32)], strict=True)


# Two waves: after a barrier each reads the other wave's LDS bytes into v4 (a speculative read, as aiter's GEMM
# loops do), then overwrites its own bytes with no barrier between: the reads race with the other wave's write.
# DEAD: v4 is overwritten unused, so the race cannot change anything; USED: v4 is stored (a real race).
RACE = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_add_u32 v3, 7, v0
  ds_write_b32 v1, v3
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_xor_b32 v2, 256, v1
  ds_read_b32 v4, v2
  v_add_u32 v5, 100, v0
  ds_write_b32 v1, v5
  s_waitcnt lgkmcnt(0)
TAIL"""
DEAD = """  v_mov_b32 v4, 0
  s_barrier
  ds_read_b32 v6, v2
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v6, s[8:9]
"""
USED = """  global_store_dword v1, v4, s[8:9]
"""


@pytest.mark.parametrize("schedule", ["lockstep", "random"])
def test_an_lds_race_on_a_value_never_used_is_not_a_violation(tmp_path, schedule):
    """The race changes the result only through the registers the read filled; a value overwritten unread is dead
    (strict.Strict._write_after_read and _use_of_raced_value). The same race with the value stored is refused."""
    out = np.zeros(128, np.uint32)
    co = assemble(tmp_path, RACE.replace("TAIL", DEAD), [BUF], lds=512)
    emulate(co, "k", grid=1, block=128, args=[out], strict=True, schedule=schedule, seed=5)
    np.testing.assert_array_equal(out, (np.arange(128) ^ 64) + 100)
    co = assemble(tmp_path, RACE.replace("TAIL", USED), [BUF], lds=512)
    with pytest.raises(StrictViolation, match="LDS race"):
        emulate(co, "k", grid=1, block=128, args=[np.zeros(128, np.uint32)], strict=True, schedule=schedule, seed=5)


# A buffer load straight to LDS (M0 + 4 x lane), then a DS write over the same bytes with no s_waitcnt vmcnt.
DMA = RSRC + """
  s_mov_b32 m0, 0
  v_lshlrev_b32 v1, 2, v0
  s_nop 0
  buffer_load_dword v1, s[8:11], 0 offen lds
BETWEEN
  v_add_u32 v3, 7, v0
  ds_write_b32 v1, v3
  s_waitcnt lgkmcnt(0)
  ds_read_b32 v4, v1
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v4, s[8:9]
  s_waitcnt vmcnt(0)
"""


def test_a_load_to_lds_overwritten_after_a_barrier_is_a_warning_in_the_same_epoch_a_violation(tmp_path):
    """AMD's aiter gemm_a8w8/I8gemm epilogues overwrite their K loop's last (unread) LDS prefetch with no vmcnt
    wait, one or more s_barriers after issuing it: accepted with a StrictWarning naming the timing assumption.
    The same overwrite with no barrier between, and a read of the bytes before vmcnt whose value is used, are
    refused; a second
    load-to-LDS over the first needs no wait (vmcnt returns in order; LLVM SIInsertWaitcnts)."""
    from jitgemm.emu.strict import StrictWarning

    out = np.arange(64, dtype=np.uint32) * 3
    co = assemble(tmp_path, DMA.replace("BETWEEN", "  s_barrier"), [BUF], lds=256)
    with pytest.warns(StrictWarning, match="timing assumption"):
        emulate(co, "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, np.arange(64) + 7)
    co = assemble(tmp_path, DMA.replace("BETWEEN", ""), [BUF], lds=256)
    # (the pattern of aiter's gfx950 f8_block_scale_mi350 epilogue: the message names the load and the barrier)
    with pytest.raises(StrictViolation, match=r"load-to-LDS of wave 0 has not written yet \(no s_waitcnt vmcnt covers "
                                              r"it, no s_barrier between.*\n  first:  PC 0x2c  buffer_load_dword"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(64, np.uint32)], strict=True)
    # a read before vmcnt gets the load's bytes or older ones: refused when the value is used, not when it is dead
    read_early = DMA.replace("BETWEEN", "  s_barrier\n  ds_read_b32 v5, v1\n  s_waitcnt lgkmcnt(0)\nUSE")
    co = assemble(tmp_path, read_early.replace("USE", "  v_mov_b32 v6, v5"), [BUF], lds=256)
    with pytest.raises(StrictViolation, match="load-to-LDS of wave 0 has not written yet"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(64, np.uint32)], strict=True)
    co = assemble(tmp_path, read_early.replace("USE", "  v_mov_b32 v5, 0"), [BUF], lds=256)
    with pytest.warns(StrictWarning, match="timing assumption"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(64, np.uint32)], strict=True)
    twice = DMA.replace("BETWEEN", "  buffer_load_dword v1, s[8:11], 0 offen lds\n  s_waitcnt vmcnt(0)")
    out = np.arange(64, dtype=np.uint32) * 3
    emulate(assemble(tmp_path, twice, [BUF], lds=256), "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, np.arange(64) + 7)
