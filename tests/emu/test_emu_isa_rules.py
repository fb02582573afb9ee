"""The emulator follows the ISA's rules, not LLVM's habits: hand-written gfx942 kernels (assembled by llvm-mc-22,
linked by ld.lld-22) for each rule, with the expected values computed in numpy from the rule as the ISA states it.

Sources of the rules:
- CDNA3 ISA Reference Guide, "Vector Memory Buffer Instructions": "Buffer Resource" (V# fields: base [47:0],
  stride [61:48], swizzle enable [63], num_records [95:64], num/data format [110:108]/[114:111], element size
  [116:115], index stride [118:117], add tid enable [119]; LLVM's SIInstrInfo.h RSRC_ELEMENT_SIZE_SHIFT = 32+19,
  RSRC_INDEX_STRIDE_SHIFT = 32+21, RSRC_TID_ENABLE = 1 << (32+23) agree), "Buffer Addressing" (address =
  base + SOFFSET + offset + stride * index; IDXEN / ADD_TID_ENABLE make a structured buffer), "Range Checking"
  (raw: SOFFSET + offset + size <= num_records per dword, typed accesses and atomics all or nothing; structured:
  index < num_records; out of range reads 0, writes are dropped).
- CDNA3 ISA, data and numeric formats of typed buffers (BUF_DATA_FORMAT_*, BUF_NUM_FORMAT_*: the numbers
  llvm-mc encodes for the format: modifier).
- CDNA3 ISA, SMEM (S_STORE_DWORD, S_ATOMIC_*: SBASE + offset, GLC returns the old value), SOPC S_SETVSKIP
  (VSKIP = S0[S1[4:0]]: vector instructions are not issued), S_SET_GPR_IDX_ON/OFF (M0[7:0] index, M0[15:12]
  mode: SRC0, SRC1, SRC2, DST), VOP3 V_PACK_B32_F16 (D = {S1.f16, S0.f16}), SOP1 S_GETPC_B64 (the address of
  the next instruction).
- AMDGPUUsage "Initial Kernel Execution State": private segment buffer in s[0:3], private segment wave byte
  offset after the workgroup ids; gfx942 has architected flat scratch (scratch_* address the wave's own private
  memory).
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from jitgemm.emu import EmulatorError, StepLimitExceeded, check, emulate
from jitgemm.emu.memory import CODE_BASE
from tests.fixtures.hand_kernel import assemble
from tests.fixtures.oracles import require_module, require_tool

IN, OUT = (0, 8, "global_buffer"), (8, 8, "global_buffer")
RAW_WORD3 = 0x27000  # DATA_FORMAT 32, NUM_FORMAT FLOAT: LLVM's raw-buffer word 3 on gfx9

PROLOGUE = """
  s_load_dwordx4 s[8:11], s[0:1], 0x0     // s[8:9] = in, s[10:11] = out
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0                 // lane * 4
"""


def vsharp(stride: int = 0, num_records: int = 0, word3: int = RAW_WORD3, swizzle: bool = False,
           regs: str = "s[4:7]", base: str = "s[8:9]") -> str:
    """Assembly that builds a V# over `base` in `regs` (CDNA3 ISA "Buffer Resource" fields)."""
    r = int(re.match(r"s\[(\d+):", regs).group(1))
    b = int(re.match(r"s\[(\d+):", base).group(1))
    word1_high = (stride << 16) | (int(swizzle) << 31)
    return f"""
  s_mov_b32 s{r}, s{b}
  s_and_b32 s{r + 1}, s{b + 1}, 0xffff
  s_or_b32 s{r + 1}, s{r + 1}, 0x{word1_high:x}
  s_mov_b32 s{r + 2}, 0x{num_records:x}
  s_mov_b32 s{r + 3}, 0x{word3:x}
"""


def run(tmp_path, body: str, inp: np.ndarray, out: np.ndarray, **kw) -> np.ndarray:
    co = assemble(tmp_path, PROLOGUE + body, [IN, OUT])
    assert not check(co)["k"], check(co)["k"]
    emulate(co, "k", grid=1, block=64, args=[inp, out], **kw)
    return out


def poisoned(n: int, dtype=np.uint32) -> np.ndarray:
    return np.full(n, 0xDEADBEEF if np.dtype(dtype).kind == "u" else np.nan, dtype)


RNG = np.random.default_rng(11)
LANE = np.arange(64)


# --- buffer kinds, range checks ------------------------------------------------------------------------------

def test_raw_buffer_with_nonzero_stride_reads_zero_past_num_records(tmp_path):
    # A raw access (no IDXEN, no ADD_TID) through a V# whose stride field is 16: the byte range check applies
    # (offset + 4 <= num_records = 40), the stride is not a reason to treat it as structured.
    data = RNG.integers(1, 1 << 31, 64, dtype=np.uint32)
    body = vsharp(stride=16, num_records=40) + """
  buffer_load_dword v2, v1, s[4:7], 0 offen
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[10:11]
  buffer_store_dword v0, v1, s[4:7], 0 offen offset:4      // dropped past byte 40
"""
    inp = data.copy()
    out = run(tmp_path, body, inp, poisoned(64))
    np.testing.assert_array_equal(out, np.where(4 * LANE + 4 <= 40, data, 0))
    stored = 4 * LANE + 4 + 4 <= 40
    expect = data.copy()
    expect[1:][stored[:63]] = LANE[:63][stored[:63]]
    np.testing.assert_array_equal(inp, expect)


def test_structured_buffer_checks_the_index(tmp_path):
    # IDXEN: v[2:3] = (index, offset); records of 8 bytes, num_records = 5 records
    data = RNG.integers(1, 1 << 31, 2 * 64, dtype=np.uint32)
    body = vsharp(stride=8, num_records=5) + """
  v_mov_b32 v2, v0                         // index = lane
  v_mov_b32 v3, 4                          // offset 4 inside the record
  buffer_load_dword v4, v[2:3], s[4:7], 0 idxen offen
  s_waitcnt vmcnt(0)
  global_store_dword v1, v4, s[10:11]
"""
    out = run(tmp_path, body, data, poisoned(64))
    np.testing.assert_array_equal(out, np.where(LANE < 5, data[2 * LANE + 1], 0))


def test_add_tid_makes_a_structured_buffer(tmp_path):
    # ADD_TID_ENABLE without IDXEN: index = lane id, checked against num_records (20 records of 4 bytes); the
    # same instruction through a raw V# with num_records = 20 checks bytes (5 dwords) instead
    data = RNG.integers(1, 1 << 31, 64, dtype=np.uint32)
    body = vsharp(stride=4, num_records=20, word3=RAW_WORD3 | 1 << 23) + vsharp(
        stride=4, num_records=20, regs="s[12:15]") + """
  buffer_load_dword v2, off, s[4:7], 0
  buffer_load_dword v3, v1, s[12:15], 0 offen
  s_waitcnt vmcnt(0)
  v_lshlrev_b32 v4, 3, v0
  global_store_dwordx2 v4, v[2:3], s[10:11]
"""
    out = run(tmp_path, body, data, poisoned(128)).reshape(64, 2)
    np.testing.assert_array_equal(out[:, 0], np.where(LANE < 20, data, 0))
    np.testing.assert_array_equal(out[:, 1], np.where(4 * LANE + 4 <= 20, data, 0))


def test_soffset_counts_in_the_raw_range_check(tmp_path):
    # address = base + SOFFSET + offset; in range when SOFFSET + offset + 4 <= num_records (64 bytes)
    data = RNG.integers(1, 1 << 31, 64, dtype=np.uint32)
    body = vsharp(num_records=64) + """
  s_mov_b32 s12, 16
  buffer_load_dword v2, v1, s[4:7], s12 offen offset:8
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[10:11]
"""
    out = run(tmp_path, body, data, poisoned(64))
    byte = 16 + 8 + 4 * LANE
    np.testing.assert_array_equal(out, np.where(byte + 4 <= 64, data[np.minimum(byte // 4, 63)], 0))


def test_multi_dword_loads_are_checked_per_dword(tmp_path):
    data = RNG.integers(1, 1 << 31, 256, dtype=np.uint32)
    body = vsharp(num_records=10 * 4 + 8) + """
  v_lshlrev_b32 v1, 4, v0
  buffer_load_dwordx4 v[4:7], v1, s[4:7], 0 offen
  s_waitcnt vmcnt(0)
  global_store_dwordx4 v1, v[4:7], s[10:11]
"""
    out = run(tmp_path, body, data, poisoned(256)).reshape(64, 4)
    byte = 16 * LANE[:, None] + 4 * np.arange(4)
    np.testing.assert_array_equal(out, np.where(byte + 4 <= 48, data.reshape(64, 4), 0))


# --- typed buffers ---------------------------------------------------------------------------------------------

FORMATS = [
    # (format modifier, components, bytes per element, numpy decoder of the raw element bytes)
    ("[BUF_DATA_FORMAT_8_8_8_8,BUF_NUM_FORMAT_UNORM]", 4, 4, lambda r: r.view(np.uint8).reshape(-1, 4) / 255.0),
    ("[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_SNORM]", 2, 4,
     lambda r: np.maximum(r.view(np.int16).reshape(-1, 2) / 32767.0, -1.0)),
    ("[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_FLOAT]", 2, 4, lambda r: r.view(np.float16).reshape(-1, 2)),
    ("[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_FLOAT]", 1, 4, lambda r: r.view(np.float32).reshape(-1, 1)),
    ("[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_USCALED]", 2, 4, lambda r: r.view(np.uint16).reshape(-1, 2)),
    ("[BUF_DATA_FORMAT_8_8,BUF_NUM_FORMAT_SSCALED]", 2, 2, lambda r: r.view(np.int8).reshape(-1, 2)),
]


@pytest.mark.parametrize("fmt,comps,elem,decode", FORMATS, ids=[f[0] for f in FORMATS])
def test_tbuffer_load_formats(tmp_path, fmt, comps, elem, decode):
    raw = RNG.integers(0, 256, 64 * elem, dtype=np.uint8)
    if "FLOAT" in fmt:  # finite floats
        raw = (RNG.standard_normal(64 * elem // (2 if "16" in fmt else 4))
               .astype(np.float16 if "16" in fmt else np.float32).view(np.uint8))
    suffix = {1: "x", 2: "xy", 4: "xyzw"}[comps]
    regs = f"v[4:{3 + comps}]" if comps > 1 else "v4"
    body = vsharp(num_records=60 * elem) + f"""
  v_mul_u32_u24 v2, {elem}, v0
  tbuffer_load_format_{suffix} {regs}, v2, s[4:7], 0 format:{fmt} offen
  s_waitcnt vmcnt(0)
  v_lshlrev_b32 v1, 4, v0
  global_store_dwordx4 v1, v[4:7], s[10:11]
"""
    out = run(tmp_path, body, raw.view(np.uint32) if elem == 4 else raw, poisoned(256, np.float32)).reshape(64, 4)
    want = np.asarray(decode(raw), np.float64)
    got = out[:, :comps].astype(np.float64)
    in_range = LANE < 60  # all or nothing per element
    np.testing.assert_allclose(got[in_range], want[in_range], rtol=1e-6, atol=1e-7)  # f32 rounding of the scale
    assert (got[~in_range] == 0).all()


def test_tbuffer_missing_components_read_zero_and_one_and_sint_sign_extends(tmp_path):
    raw = RNG.integers(0, 256, 64, dtype=np.uint8)
    body = vsharp(num_records=64) + """
  tbuffer_load_format_xyzw v[4:7], v0, s[4:7], 0 format:[BUF_DATA_FORMAT_8,BUF_NUM_FORMAT_SINT] offen
  s_waitcnt vmcnt(0)
  v_lshlrev_b32 v1, 4, v0
  global_store_dwordx4 v1, v[4:7], s[10:11]
"""
    out = run(tmp_path, body, raw, poisoned(256, np.uint32)).reshape(64, 4)
    np.testing.assert_array_equal(out[:, 0].view(np.int32), raw.view(np.int8).astype(np.int32))
    np.testing.assert_array_equal(out[:, 1:], np.tile([0, 0, 1], (64, 1)))


def test_tbuffer_store_unorm_and_buffer_load_format_from_the_vsharp(tmp_path):
    # store f32 pairs as 16_16 UNORM (round to nearest of clamp(x) * 65535), then read them back through
    # buffer_load_format_xy, whose format comes from the V# (data format 16_16 = 5, num format UNORM = 0)
    vals = RNG.uniform(-0.2, 1.2, (64, 2)).astype(np.float32)
    word3 = (5 << 15) | (0 << 12)
    body = vsharp(num_records=256) + vsharp(num_records=256, word3=word3, regs="s[12:15]", base="s[10:11]") + """
  v_lshlrev_b32 v2, 3, v0
  global_load_dwordx2 v[4:5], v2, s[8:9]
  s_waitcnt vmcnt(0)
  tbuffer_store_format_xy v[4:5], v1, s[12:15], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_UNORM] offen
  s_waitcnt vmcnt(0)
  buffer_load_format_xy v[6:7], v1, s[12:15], 0 offen offset:0
  s_waitcnt vmcnt(0)
  v_add_u32 v3, 0x100, v2
  global_store_dwordx2 v3, v[6:7], s[10:11]
"""
    out = np.zeros(64 + 128, np.uint32)
    run(tmp_path, body, vals.reshape(-1).copy(), out)
    q = np.rint(np.clip(vals.astype(np.float64), 0, 1) * 65535).astype(np.uint16)
    np.testing.assert_array_equal(out[:64].view(np.uint16).reshape(64, 2), q)
    np.testing.assert_allclose(out[64:].view(np.float32).reshape(64, 2), q / 65535.0, rtol=1e-6)


# --- atomics ---------------------------------------------------------------------------------------------------

def test_buffer_atomic_add_f32_and_returning_cmpswap(tmp_path):
    # every lane adds its value into element lane % 8 (lanes in order); sc0 returns the old value
    acc = RNG.standard_normal(16).astype(np.float32)
    body = vsharp(num_records=32) + """
  v_and_b32 v2, 7, v0
  v_lshlrev_b32 v2, 2, v2
  v_cvt_f32_u32 v3, v0
  v_mul_f32 v3, 0.5, v3
  buffer_atomic_add_f32 v3, v2, s[4:7], 0 offen
  v_mov_b32 v4, v0                          // cmpswap data: new value = lane, compare value = lane
  v_mov_b32 v5, v0
  v_add_u32 v6, 32, v1
  buffer_atomic_cmpswap v[4:5], v6, s[4:7], 0 offen sc0    // elements 8.. : past num_records, returns 0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v4, s[10:11]
"""
    inp = acc.copy()
    out = run(tmp_path, body, inp, poisoned(64))
    want = acc.astype(np.float64)
    for lane in range(64):
        want[lane % 8] = np.float32(want[lane % 8] + np.float32(0.5 * lane))
    np.testing.assert_allclose(inp[:8], want[:8], rtol=1e-6)
    np.testing.assert_array_equal(inp[8:], acc[8:])  # out of range: not written
    np.testing.assert_array_equal(out, 0)


def test_buffer_atomic_pk_add_f16_and_integer_atomics(tmp_path):
    halves = RNG.standard_normal(64).astype(np.float16)
    ints = RNG.integers(0, 1000, 16, dtype=np.uint32)
    inp = np.concatenate([halves.view(np.uint32), ints])  # 32 dwords of f16 pairs, then 16 integers
    body = vsharp(num_records=4 * 48) + """
  v_and_b32 v2, 31, v0
  v_lshlrev_b32 v2, 2, v2                   // f16 pair lane % 32
  v_cvt_f32_u32 v3, v0
  v_cvt_f16_f32 v3, v3
  v_pack_b32_f16 v3, v3, v3 op_sel:[0,0]
  buffer_atomic_pk_add_f16 v3, v2, s[4:7], 0 offen
  v_and_b32 v2, 15, v0
  v_lshlrev_b32 v2, 2, v2
  v_add_u32 v2, 0x80, v2                    // integer lane % 16
  v_mov_b32 v4, v0
  buffer_atomic_umax v4, v2, s[4:7], 0 offen sc0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v4, s[10:11]
"""
    out = run(tmp_path, body, inp, poisoned(64))
    pairs = halves.reshape(32, 2).copy()
    for lane in range(64):
        pairs[lane % 32] = (pairs[lane % 32].astype(np.float32) + np.float16(lane).astype(np.float32)).astype(
            np.float16)
    np.testing.assert_array_equal(inp[:32].view(np.float16).reshape(32, 2), pairs)
    cur = ints.copy()
    returned = np.zeros(64, np.uint32)
    for lane in range(64):
        returned[lane] = cur[lane % 16]
        cur[lane % 16] = max(cur[lane % 16], lane)
    np.testing.assert_array_equal(inp[32:], cur)
    np.testing.assert_array_equal(out, returned)


def test_scalar_store_and_atomic_inc(tmp_path):
    # s_store_dword writes an SGPR to memory; s_atomic_inc wraps at its operand (old >= data ? 0 : old + 1) and
    # returns the old value with glc; four waves increment one counter in wave order
    start = int(RNG.integers(1, 5))
    body = """
  s_mov_b32 s12, 6
  s_atomic_inc s12, s[8:9], 0x0 glc        // counter (wraps after 6)
  s_waitcnt lgkmcnt(0)
  s_lshl_b32 s13, s2, 2
  s_add_u32 s14, s10, s13
  s_addc_u32 s15, s11, 0
  s_store_dword s12, s[14:15], 0x0         // out[wave] = old counter
  s_dcache_wb
"""
    co = assemble(tmp_path, PROLOGUE + body, [IN, OUT])
    assert not check(co)["k"]
    counter = np.array([start, 0], np.uint32)
    out = poisoned(4)
    emulate(co, "k", grid=4, block=64, args=[counter, out])
    olds, cur = [], start
    for _ in range(4):
        olds.append(cur)
        cur = 0 if cur >= 6 else cur + 1
    np.testing.assert_array_equal(out, olds)
    assert counter[0] == cur


# --- modes -----------------------------------------------------------------------------------------------------

def test_setvskip_skips_vector_instructions(tmp_path):
    # VSKIP = S0[S1]: between s_setvskip 1, 0 and s_setvskip 0, 0 the VALU add and the store are not issued;
    # scalar instructions still run
    body = """
  v_mov_b32 v2, 7
  s_mov_b32 s12, 5
  s_setvskip s12, 0                        // bit 0 of 5: on
  s_nop 0
  v_add_u32 v2, 100, v2
  global_store_dword v1, v2, s[10:11]
  s_add_u32 s13, s12, 1
  s_setvskip s12, 1                        // bit 1 of 5: off
  v_add_u32 v2, s13, v2
  global_store_dword v1, v2, s[10:11]
"""
    out = run(tmp_path, body, np.zeros(1, np.uint32), poisoned(64))
    np.testing.assert_array_equal(out, 7 + 6)


def test_gpr_indexing_mode(tmp_path):
    # s_set_gpr_idx_on s12, gpr_idx(SRC0): v_mov_b32 v2, v4 reads v[4 + s12]; with DST: writes v[3 + s12]
    vals = RNG.integers(1, 1 << 30, (64, 4), dtype=np.uint32)
    body = """
  v_lshlrev_b32 v3, 4, v0
  global_load_dwordx4 v[4:7], v3, s[8:9]
  s_waitcnt vmcnt(0)
  s_mov_b32 s12, 2
  s_set_gpr_idx_on s12, gpr_idx(SRC0)
  v_mov_b32 v2, v4                         // v2 = v6
  s_set_gpr_idx_off
  s_mov_b32 s12, 1
  s_set_gpr_idx_on s12, gpr_idx(DST)
  v_mov_b32 v4, v2                         // v5 = v2
  s_set_gpr_idx_off
  v_mov_b32 v8, v4
  v_mov_b32 v9, v2                         // not indexed any more
  v_mov_b32 v10, v5
  v_mov_b32 v11, v7
  v_accvgpr_write_b32 a0, v11              // AGPRs in use: the VGPR file ends at the accum offset
  v_accvgpr_read_b32 v11, a0
  global_store_dwordx4 v3, v[8:11], s[10:11]
"""
    out = run(tmp_path, body, vals.reshape(-1).copy(), poisoned(256)).reshape(64, 4)
    np.testing.assert_array_equal(out, np.stack([vals[:, 0], vals[:, 2], vals[:, 2], vals[:, 3]], axis=1))


def test_v_pack_b32_f16(tmp_path):
    a = RNG.standard_normal(64).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    body = """
  v_lshlrev_b32 v3, 3, v0
  global_load_dwordx2 v[4:5], v3, s[8:9]
  s_waitcnt vmcnt(0)
  v_cvt_f16_f32 v4, v4
  v_cvt_f16_f32 v5, v5
  v_lshlrev_b32 v6, 16, v5                 // put b's half in the high bits of v6
  v_pack_b32_f16 v2, v4, v6 op_sel:[0,1]   // {hi: v6.hi = b, lo: v4.lo = a}
  global_store_dword v1, v2, s[10:11]
"""
    out = run(tmp_path, body, np.stack([a, b], 1).reshape(-1).copy(), poisoned(64))
    np.testing.assert_array_equal(out.view(np.float16).reshape(64, 2), np.stack([a, b], 1).astype(np.float16))


# --- scratch ---------------------------------------------------------------------------------------------------

def test_flat_scratch_and_buffer_scratch_see_the_same_private_memory(tmp_path):
    # each lane stores 4 values to its private memory with scratch_store (flat scratch), reads two back with
    # scratch_load and two through the private segment V# s[0:3] + the wave byte offset (buffer scratch);
    # lanes of different waves must not see each other's values
    body = """
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v4, s6                         // workgroup id (one wave per workgroup)
  v_lshlrev_b32 v4, 8, v4
  v_add_u32 v4, v4, v0                     // value = wg * 256 + lane
  v_add_u32 v5, 1000, v4
  v_add_u32 v6, 2000, v4
  v_add_u32 v7, 3000, v4
  s_mov_b32 s14, 0
  scratch_store_dwordx4 off, v[4:7], s14 offset:16
  s_mov_b32 s13, 8
  scratch_store_dword off, v7, s13 offset:40   // private byte 48: v7 again
  s_waitcnt vmcnt(0)
  scratch_load_dwordx2 v[10:11], off, s14 offset:20   // v5, v6
  buffer_load_dword v12, off, s[0:3], s7 offset:16    // v4 (s7: the wave byte offset)
  buffer_load_dword v13, off, s[0:3], s7 offset:48    // v7
  s_waitcnt vmcnt(0)
  v_lshlrev_b32 v1, 4, v0
  s_lshl_b32 s12, s6, 10
  v_add_u32 v1, s12, v1
  global_store_dwordx4 v1, v[10:13], s[10:11]
"""
    # gfx942 has architected flat scratch and no private segment buffer SGPRs (llvm-mc refuses the directive),
    # so this kernel is assembled for gfx90a, whose ABI passes the V# in s[0:3] and the wave offset after the
    # workgroup id; the emulator runs its scratch_* as gfx942 does (FLAT_SCRATCH = the wave's private base).
    # Only the SADDR forms are used: their encoding is the same on both targets (gfx940 added the SVE bit)
    co = assemble(tmp_path, PROLOGUE.replace("s[0:1]", "s[4:5]") + body, [IN, OUT], target="gfx90a", private=64,
                  descriptor=(".amdhsa_user_sgpr_private_segment_buffer 1",
                              ".amdhsa_system_sgpr_private_segment_wavefront_offset 1"))
    from jitgemm import isa

    gfx942 = isa.load_spec("gfx942")   # the object says gfx90a (no spec is bundled for it): run gfx942's rules
    assert not check(co, spec=gfx942)["k"]
    out = poisoned(3 * 256)
    emulate(co, "k", grid=3, block=64, args=[np.zeros(4, np.uint32), out], spec=gfx942)
    out = out.reshape(3, 64, 4)
    value = 256 * np.arange(3)[:, None] + LANE
    np.testing.assert_array_equal(out, np.stack([value + 1000, value + 2000, value, value + 3000], axis=-1))


def test_scratch_outside_the_private_size_faults(tmp_path):
    co = assemble(tmp_path, """
  v_mov_b32 v1, 60
  scratch_store_dword v1, v0, off offset:8     // bytes 68..71 of 64
""", [IN, OUT], private=64, descriptor=(".amdhsa_enable_private_segment 1",))
    with pytest.raises(EmulatorError, match=r"private \(scratch\) access outside the 64 bytes per work-item"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(4, np.uint32), np.zeros(4, np.uint32)])


# --- program counters ------------------------------------------------------------------------------------------

def test_s_getpc_returns_the_loaded_address_llvm_objdump_prints(tmp_path):
    body = """
  s_getpc_b64 s[12:13]
  v_mov_b32 v2, s12
  v_mov_b32 v3, s13
  v_lshlrev_b32 v1, 3, v0
  global_store_dwordx2 v1, v[2:3], s[10:11]
"""
    co = assemble(tmp_path, PROLOGUE + body, [IN, OUT])
    out = np.zeros(128, np.uint32)
    emulate(co, "k", grid=1, block=64, args=[np.zeros(1, np.uint32), out])
    listing = subprocess.run([require_tool("llvm-objdump"), "-d", str(tmp_path / "k.co")], capture_output=True,
                             text=True, check=True).stdout
    lines = [ln for ln in listing.splitlines() if "//" in ln and re.search(r"//\s*[0-9A-F]{12}:", ln)]
    after = next(i for i, ln in enumerate(lines) if "s_getpc_b64" in ln) + 1
    next_address = int(re.search(r"//\s*([0-9A-F]{12}):", lines[after]).group(1), 16)
    got = out.view(np.uint64)
    assert (got == CODE_BASE + next_address).all(), (hex(int(got[0])), hex(CODE_BASE + next_address))


def test_setpc_outside_the_code_faults_at_once(tmp_path):
    body = """
  s_mov_b64 s[12:13], 0
  s_setpc_b64 s[12:13]
"""
    co = assemble(tmp_path, PROLOGUE + body, [IN, OUT])
    with pytest.raises(EmulatorError, match=r"s_setpc_b64 s\[12:13\] at PC 0x[0-9a-f]+ .*jump to address 0x0, "
                                            r"outside the kernel's code"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(1, np.uint32), np.zeros(1, np.uint32)])


def test_swappc_returns_to_the_next_instruction(tmp_path):
    # a call through s_getpc + s_swappc into a local "function" that returns with s_setpc
    body = """
  s_getpc_b64 s[12:13]                     // the address of the next instruction
.Lafter_getpc:
  s_add_u32 s12, s12, func-.Lafter_getpc
  s_addc_u32 s13, s13, 0
  v_mov_b32 v2, 1
  s_swappc_b64 s[14:15], s[12:13]
  v_add_u32 v2, 10, v2
  global_store_dword v1, v2, s[10:11]
  s_endpgm
func:
  v_lshlrev_b32 v2, 2, v2
  s_setpc_b64 s[14:15]
"""
    co = assemble(tmp_path, PROLOGUE + body, [IN, OUT])
    out = poisoned(64)
    emulate(co, "k", grid=1, block=64, args=[np.zeros(1, np.uint32), out])
    np.testing.assert_array_equal(out, 4 + 10)


def test_default_step_limit_names_the_loop(tmp_path):
    from jitgemm.emu.engine import DEFAULT_MAX_STEPS

    co = assemble(tmp_path, "loop:\n  s_add_u32 s5, s5, 1\n  s_nop 0\n  s_branch loop\n", [])
    with pytest.raises(StepLimitExceeded, match=r"its last 1024 steps stayed in PC 0x0-0xb \(s_branch"):
        emulate(co, "k", grid=1, block=64, args=[])
    assert DEFAULT_MAX_STEPS <= 1_000_000


# --- the same rules on LLVM-compiled kernels -----------------------------------------------------------------

BUFFER_IR = r"""
target triple = "amdgcn-amd-amdhsa"

declare float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32>, i32, i32, i32)
declare float @llvm.amdgcn.struct.buffer.load.f32(<4 x i32>, i32, i32, i32, i32)
declare <2 x float> @llvm.amdgcn.raw.tbuffer.load.v2f32(<4 x i32>, i32, i32, i32, i32)
declare float @llvm.amdgcn.raw.buffer.atomic.fadd.f32(float, <4 x i32>, i32, i32, i32)
declare <2 x half> @llvm.amdgcn.raw.buffer.atomic.fadd.v2f16(<2 x half>, <4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.workitem.id.x()

define internal <4 x i32> @rsrc(ptr addrspace(1) %p, i32 %stride_bits, i32 %nrec) alwaysinline {
  %i = ptrtoint ptr addrspace(1) %p to i64
  %lo = trunc i64 %i to i32
  %hi64 = lshr i64 %i, 32
  %hi = trunc i64 %hi64 to i32
  %hi16 = and i32 %hi, 65535
  %w1 = or i32 %hi16, %stride_bits
  %v0 = insertelement <4 x i32> undef, i32 %lo, i32 0
  %v1 = insertelement <4 x i32> %v0, i32 %w1, i32 1
  %v2 = insertelement <4 x i32> %v1, i32 %nrec, i32 2
  %v3 = insertelement <4 x i32> %v2, i32 159744, i32 3
  ret <4 x i32> %v3
}

define amdgpu_kernel void @buf(ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %acc, i32 %nrec) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %off = shl i32 %t, 2
  %r = call <4 x i32> @rsrc(ptr addrspace(1) %in, i32 1048576, i32 %nrec)          ; raw, stride field 16
  %a = call float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32> %r, i32 %off, i32 0, i32 0)
  %recs = lshr i32 %nrec, 3
  %rs = call <4 x i32> @rsrc(ptr addrspace(1) %in, i32 524288, i32 %recs)          ; records of 8 bytes
  %b = call float @llvm.amdgcn.struct.buffer.load.f32(<4 x i32> %rs, i32 %t, i32 4, i32 0, i32 0)
  %c = call float @llvm.amdgcn.raw.buffer.load.f32(<4 x i32> %r, i32 %off, i32 16, i32 0)  ; soffset 16
  %dv = call <2 x float> @llvm.amdgcn.raw.tbuffer.load.v2f32(<4 x i32> %r, i32 %off, i32 0, i32 21, i32 0)
  %d = extractelement <2 x float> %dv, i32 0                                          ; 16_16 SNORM (5 | 1 << 4)
  %base = shl i32 %t, 4
  %o0 = getelementptr inbounds i8, ptr addrspace(1) %out, i32 %base
  store float %a, ptr addrspace(1) %o0
  %o1 = getelementptr inbounds i8, ptr addrspace(1) %o0, i32 4
  store float %b, ptr addrspace(1) %o1
  %o2 = getelementptr inbounds i8, ptr addrspace(1) %o0, i32 8
  store float %c, ptr addrspace(1) %o2
  %o3 = getelementptr inbounds i8, ptr addrspace(1) %o0, i32 12
  store float %d, ptr addrspace(1) %o3
  %ra = call <4 x i32> @rsrc(ptr addrspace(1) %acc, i32 0, i32 64)
  %slot = and i32 %t, 7
  %aoff = shl i32 %slot, 2
  %tf = uitofp i32 %t to float
  %old = call float @llvm.amdgcn.raw.buffer.atomic.fadd.f32(float %tf, <4 x i32> %ra, i32 %aoff, i32 0, i32 0)
  %th = uitofp i32 %t to half
  %hv0 = insertelement <2 x half> undef, half %th, i32 0
  %hv = insertelement <2 x half> %hv0, half 0xH3C00, i32 1
  %old2 = call <2 x half> @llvm.amdgcn.raw.buffer.atomic.fadd.v2f16(<2 x half> %hv, <4 x i32> %ra, i32 %aoff,
                                                                     i32 32, i32 0)
  ret void
}
"""


def _clang(tmp_path, source: str, suffix: str, lang: list[str]) -> bytes:
    clang = require_tool("clang")
    src = tmp_path / f"k.{suffix}"
    src.write_text(source)
    p = subprocess.run([clang, *lang, "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx942", "-nogpulib", "-O2",
                        "-Wno-everything", str(src), "-o", str(tmp_path / "k.co")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return (tmp_path / "k.co").read_bytes()


def test_llvm_buffer_intrinsics_follow_the_same_rules(tmp_path):
    co = _clang(tmp_path, BUFFER_IR, "ll", ["-x", "ir"])
    listing = subprocess.run([require_tool("llvm-objdump"), "-d", str(tmp_path / "k.co")], capture_output=True,
                             text=True, check=True).stdout
    for mnemonic in ("buffer_load_dword", "idxen", "tbuffer_load_format_x", "buffer_atomic_add_f32",
                     "buffer_atomic_pk_add_f16"):
        assert mnemonic in listing  # LLVM emitted the instruction the rule is about
    assert not check(co)["buf"]
    nrec = 160
    inp = RNG.standard_normal(64).astype(np.float32)
    out = np.full(256, np.nan, np.float32)
    acc = np.concatenate([RNG.standard_normal(8).astype(np.float32),
                          RNG.standard_normal(16).astype(np.float16).view(np.float32)])
    acc0 = acc.copy()
    emulate(co, "buf", grid=1, block=64, args=[inp, out, acc, np.int32(nrec)])
    out = out.reshape(64, 4)
    np.testing.assert_array_equal(out[:, 0], np.where(4 * LANE + 4 <= nrec, inp, 0))
    np.testing.assert_array_equal(out[:, 1], np.where(LANE < nrec // 8, inp[np.minimum(2 * LANE + 1, 63)], 0))
    np.testing.assert_array_equal(out[:, 2], np.where(16 + 4 * LANE + 4 <= nrec, inp[np.minimum(LANE + 4, 63)], 0))
    snorm = np.maximum(inp.view(np.int16).reshape(64, 2)[:, 0] / 32767.0, -1.0)
    np.testing.assert_allclose(out[:, 3], np.where(4 * LANE + 4 <= nrec, snorm, 0), rtol=1e-6, atol=1e-7)
    f32 = acc0[:8].copy()
    pairs = acc0[8:].view(np.float16).reshape(8, 2).copy()
    for lane in range(64):
        f32[lane % 8] = np.float32(f32[lane % 8] + np.float32(lane))
        pairs[lane % 8] = (pairs[lane % 8].astype(np.float32) + np.array([lane, 1], np.float32)).astype(np.float16)
    np.testing.assert_array_equal(acc[:8], f32)
    np.testing.assert_array_equal(acc[8:].view(np.float16).reshape(8, 2), pairs)


PRIVATE_CL = r"""
typedef unsigned int uint;
__kernel void priv(__global float *out, __global const float *in, __global const int *idx) {
  uint t = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  float a[48];                                  // a private array indexed at run time: scratch memory
  for (int i = 0; i < 48; i++) a[i] = in[t * 48 + i];
  float s = 0;
  for (int i = 0; i < 48; i++) s += a[idx[t * 48 + i]] * (float)(i + 1);
  out[t] = s;
}
"""


def test_clang_private_array_in_scratch(tmp_path):
    co = _clang(tmp_path, PRIVATE_CL, "cl", ["-x", "cl", "-cl-std=CL1.2"])
    from jitgemm.codegen.codeobj import read

    assert read(co).kernels[0].descriptor.private_segment_fixed_size > 48 * 4
    n = 128
    x = RNG.standard_normal(n * 48).astype(np.float32)
    idx = RNG.integers(0, 48, n * 48).astype(np.int32)
    out = np.full(n, np.nan, np.float32)
    emulate(co, "priv", grid=2, block=64, args=[out, x, idx])
    ref = (x.reshape(n, 48).astype(np.float64)[np.arange(n)[:, None], idx.reshape(n, 48)] * np.arange(1, 49)).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())  # fp32 sum of 48 terms


def test_llvm_generator_256x256_kernel_spills_and_runs(tmp_path):
    # LLVM's register allocator spills this tile (private_segment_fixed_size > 0): the spill stores and reloads
    # go through scratch_* and must give numpy's answer (bf16 output: 2^-7 relative, jitgemm.reference)
    require_module("llvmlite")
    from jitgemm.codegen.codeobj import read
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem
    from jitgemm.codegen.llvm import compile_gemm_llvm

    from jitgemm.api import launch, prepare
    from jitgemm.contract import Contract
    from jitgemm.reference import check as check_result
    from jitgemm.reference import operands, reference

    problem = GemmProblem.make(256, 256, 32, "bf16")
    built = compile_gemm_llvm(problem, GemmConfig(256, 256, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2,
                                                  vec_a=8, vec_b=8))
    k = read(built.code_object).kernels[0]
    assert k.descriptor.private_segment_fixed_size > 0, "the kernel no longer spills; pick a config that does"
    listing = subprocess.run([require_tool("llvm-objdump"), "-d", "-"], input=built.code_object,
                             capture_output=True, check=True).stdout.decode()
    assert "scratch_store" in listing and "scratch_load" in listing
    a, b, c, bias = operands(problem, 3)
    call = prepare(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                   activation=problem.activation)
    d = launch(call, built.code_object, built.name, Contract.load(built.contract), backend="emu")
    check_result(problem, d, reference(problem, a, b, c, bias))
