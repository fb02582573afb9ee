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
