"""The emulator is the qualification tool: every access outside the buffers a launch mapped faults, naming the
kernel, PC, lane and address, whatever the distance from the buffer it started in — no layout may put one
argument where another's overrun reaches (a store 0x10400 bytes past a 1 KiB buffer used to land in the next
array). And a launch too large for the machine is refused before anything is allocated.
"""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.codeobj.launch import LaunchError

from jitgemm.emu import MemoryFault, emulate
from tests.fixtures.hand_kernel import assemble

# out-of-bounds store through a 64-bit VGPR address: A + distance + 4 * lane (A, B: two 1 KiB buffers; the
# distance is a 64-bit kernel argument)
VADDR_STORE = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_load_dwordx2 s[8:9], s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
  s_add_u32 s4, s4, s8
  s_addc_u32 s5, s5, s9
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v3, s5
  v_add_co_u32 v2, vcc, s4, v1
  v_addc_co_u32 v3, vcc, 0, v3, vcc
  global_store_dword v[2:3], v0, off
"""

# the same through a buffer descriptor over A with a large stride and num_records: the index is the argument
BUFFER_STORE = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_load_dword s8, s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
  s_and_b32 s5, s5, 0xffff
  s_or_b32 s5, s5, 0x3fff0000
  s_mov_b32 s6, -1
  s_mov_b32 s7, 0x27000
  v_mov_b32 v1, s8
  buffer_store_dword v0, v1, s[4:7], 0 idxen
"""

ARGS = [(0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 8, "by_value")]


@pytest.mark.parametrize("distance", [0x10400, 0x400 + (1 << 16), 1 << 20, (1 << 32) - 4, 1 << 36, (1 << 40) - 4096])
def test_store_past_a_buffer_faults_whatever_the_distance(tmp_path, distance):
    co = assemble(tmp_path, VADDR_STORE, ARGS)
    a = np.zeros(256, np.uint32)
    b = np.full(1 << 18, 7, np.uint32)   # 1 MiB: big enough for any short overrun of A to reach it if adjacent
    with pytest.raises(MemoryFault) as info:
        emulate(co, "k", grid=1, block=64, args=[a, b, np.uint64(distance)])
    fault = info.value
    assert fault.kernel == "k" and fault.lane == 0 and fault.wave == 0
    assert f"0x{fault.address:x}" in str(fault) and "lane 0" in str(fault)
    assert (b == 7).all() and (a == 0).all()


def test_buffer_descriptor_reaching_another_buffer_faults(tmp_path):
    co = assemble(tmp_path, BUFFER_STORE, ARGS)
    a = np.zeros(256, np.uint32)
    b = np.full(1 << 10, 7, np.uint32)
    probe = assemble(tmp_path, """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v1, 0
  v_mov_b32 v2, s4
  v_mov_b32 v3, s5
  v_mov_b32 v4, s6
  v_mov_b32 v5, s7
  global_store_dwordx4 v1, v[2:5], s[4:5]
""", ARGS[:2])
    emulate(probe, "k", grid=1, block=1, args=[a, b])
    distance = (int(a[2]) | int(a[3]) << 32) - (int(a[0]) | int(a[1]) << 32)
    a[:] = 0
    stride = 0x3fff  # the descriptor's stride: index * stride reaches 2**46 bytes, past any gap between buffers
    index = -(-distance // stride)  # the first record that starts inside B
    assert index < 1 << 32
    with pytest.raises(MemoryFault) as info:
        emulate(co, "k", grid=1, block=1, args=[a, b, np.uint64(index)])
    assert "descriptor" in str(info.value)
    assert (b == 7).all()


def test_in_bounds_accesses_still_work(tmp_path):
    co = assemble(tmp_path, VADDR_STORE, ARGS)
    a = np.zeros(256, np.uint32)
    b = np.full(16, 7, np.uint32)
    emulate(co, "k", grid=1, block=64, args=[a, b, np.uint64(512)])
    assert list(a[128:192]) == list(range(64)) and (b == 7).all()


@pytest.mark.parametrize("grid", [2 ** 31, 2 ** 32 + 5, 2 ** 25, (2 ** 20, 2 ** 20, 1)])
def test_huge_grid_is_refused_before_allocating(tmp_path, grid):
    co = assemble(tmp_path, "  s_nop 0\n", [])
    with pytest.raises((LaunchError, MemoryError)) as info:
        emulate(co, "k", grid=grid, block=64, args=[])
    assert "grid" in str(info.value) or "memory" in str(info.value)


# Pointer provenance (jitgemm/emu/provenance.py): A + (B - A) is exactly B's address, computed from A's pointer.
# Before, the store landed in B with no fault; now every access is checked against the buffer its base registers
# were derived from. s[4:5] = A, s[6:7] = B, s[8:9] a by-value offset added after the arithmetic.
_CROSS_SETUP = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_load_dwordx2 s[8:9], s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
  s_sub_u32 s12, s6, s4
  s_subb_u32 s13, s7, s5
  s_add_u32 s10, s4, s12
  s_addc_u32 s11, s5, s13
  s_add_u32 s10, s10, s8
  s_addc_u32 s11, s11, s9
  v_lshlrev_b32 v1, 2, v0
"""
CROSS = {
    "vaddr": _CROSS_SETUP + """
  v_mov_b32 v3, s11
  v_add_co_u32 v2, vcc, s10, v1
  v_addc_co_u32 v3, vcc, 0, v3, vcc
  global_store_dword v[2:3], v0, off
""",
    "saddr": _CROSS_SETUP + "  global_store_dword v1, v0, s[10:11]\n",
    "valu": """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_load_dwordx2 s[8:9], s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v4, s6
  v_mov_b32 v5, s7
  v_mov_b32 v7, s5
  v_sub_co_u32 v4, vcc, v4, s4
  v_subb_co_u32 v5, vcc, v5, v7, vcc
  v_lshlrev_b32 v1, 2, v0
  v_add_co_u32 v1, vcc, s8, v1
  v_add_co_u32 v2, vcc, s4, v4
  v_mov_b32 v6, s5
  v_addc_co_u32 v3, vcc, v6, v5, vcc
  v_add_co_u32 v2, vcc, v2, v1
  v_addc_co_u32 v3, vcc, 0, v3, vcc
  global_store_dword v[2:3], v0, off
""",
    "buffer": _CROSS_SETUP + """
  s_and_b32 s11, s11, 0xffff
  s_mov_b32 s14, -1
  s_mov_b32 s15, 0x27000
  s_mov_b32 s12, s10
  s_mov_b32 s13, s11
  buffer_store_dword v0, v1, s[12:15], 0 offen
""",
    "scalar": _CROSS_SETUP + "  s_store_dword s5, s[10:11], 0x0\n  s_dcache_wb\n",
}


@pytest.mark.parametrize("how", sorted(CROSS))
def test_address_computed_into_another_buffer_faults(tmp_path, how):
    co = assemble(tmp_path, CROSS[how], ARGS)
    a = np.zeros(256, np.uint32)
    b = np.full(256, 7, np.uint32)
    with pytest.raises(MemoryFault) as info:
        emulate(co, "k", grid=1, block=64, args=[a, b, np.uint64(64)])
    fault, text = info.value, str(info.value)
    assert fault.kernel == "k" and fault.lane == 0 and fault.wave == 0 and fault.pc > 0
    assert "provenance" in text and "inside" in text and f"0x{fault.address:x}" in text, text
    assert (b == 7).all() and (a == 0).all()


@pytest.mark.parametrize("how", sorted(CROSS))
def test_the_same_arithmetic_inside_one_buffer_runs(tmp_path, how):
    """B - A with B = A (one array passed twice maps once, as on the device): the same code stays inside A."""
    co = assemble(tmp_path, CROSS[how], ARGS)
    a = np.zeros(256, np.uint32)
    emulate(co, "k", grid=1, block=64, args=[a, a, np.uint64(64)])
    if how == "scalar":
        assert a[16] != 0
    else:
        assert list(a[16:80]) == list(range(64))
