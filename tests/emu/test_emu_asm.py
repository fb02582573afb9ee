"""Hand-written gfx942 assembly, assembled by llvm-mc-22 and linked by ld.lld-22, run in the emulator: the initial
wave state the kernel descriptor asks for, buffer-descriptor bounds, and the errors (unsupported instruction,
memory faults, step limit) with everything they must name.

Expected values come from AMDGPUUsage ("Initial Kernel Execution State": user SGPRs, then workgroup ids; work-item
ids packed in v0 as X | Y << 10 | Z << 20 on gfx90a/gfx942) and the buffer range rule (a raw buffer's dword at
offset o is in range when o + 4 <= num_records; out-of-range loads read 0 and stores are dropped).
"""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.codeobj.launch import LaunchDescription, LaunchError, pack_kernargs

from jitgemm.cli import main as cli_main
from jitgemm.emu import MemoryFault, StepLimitExceeded, UnsupportedInstruction, check, emulate
from tests.fixtures.hand_kernel import BUF, assemble

# out[wg linear id][work-item] = (wg_x, wg_y, wg_z, v0); SGPRs: kernarg pointer s[0:1], then the workgroup ids
INITIAL_STATE = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  s_mul_i32 s7, s3, 3           // wg_y (s3) * gx (gx = 3)
  s_add_u32 s7, s7, s2          //   + wg_x (s2)
  s_mul_i32 s10, s4, 6          // wg_z (s4) * gx * gy
  s_add_u32 s7, s7, s10
  s_lshl_b32 s7, s7, 6          // * 64 work-items per workgroup
  v_and_b32 v1, 0x3ff, v0       // x
  v_bfe_u32 v2, v0, 10, 10      // y
  v_bfe_u32 v3, v0, 20, 10      // z
  v_lshlrev_b32 v4, 2, v2       // y * 4 (block x = 4)
  v_add_u32 v4, v4, v1
  v_lshlrev_b32 v5, 4, v3       // z * 16
  v_add_u32 v4, v4, v5
  v_add_u32 v4, s7, v4          // global linear id
  v_lshlrev_b32 v4, 4, v4       // * 16 bytes
  v_mov_b32 v6, s2
  v_mov_b32 v7, s3
  v_mov_b32 v8, s4
  v_mov_b32 v9, v0
  s_waitcnt lgkmcnt(0)
  global_store_dwordx4 v4, v[6:9], s[8:9]
"""


def test_initial_state_workgroup_and_workitem_ids(tmp_path):
    co = assemble(tmp_path, INITIAL_STATE, [BUF], wg_y=1, wg_z=1, vid=2)
    grid, block = (3, 2, 2), (4, 4, 4)
    out = np.zeros((12, 64, 4), np.uint32)
    emulate(co, "k", grid=grid, block=block, args=[out])
    for wz in range(2):
        for wy in range(2):
            for wx in range(3):
                g = (wz * 2 + wy) * 3 + wx
                for t in range(64):
                    x, y, z = t % 4, (t // 4) % 4, t // 16
                    assert list(out[g, t]) == [wx, wy, wz, x | y << 10 | z << 20], (g, t)


def test_buffer_descriptor_bounds(tmp_path):
    # s[4:7]: V# over the buffer with stride 0 and num_records = 40 bytes; s[8:11]: the same over 512 bytes.
    # Each lane loads dword `lane` through the first, adds 1, and stores it at dword 64 + lane through
    # `STORE` (the first descriptor: every store is out of range; the second: all in range).
    body = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  s_and_b32 s5, s5, 0xffff
  s_mov_b32 s6, 40
  s_mov_b32 s7, 0x27000
  s_mov_b64 s[8:9], s[4:5]
  s_movk_i32 s10, 0x200
  s_mov_b32 s11, 0x27000
  v_lshlrev_b32 v1, 2, v0
  buffer_load_dword v2, v1, s[4:7], 0 offen
  s_waitcnt vmcnt(0)
  v_add_u32 v2, 1, v2
  v_add_u32 v3, 0x100, v1
  buffer_store_dword v2, v3, STORE, 0 offen
"""
    data = np.arange(1000, 1064, dtype=np.uint32)
    lane = np.arange(64)
    loaded = np.where(4 * lane + 4 <= 40, data, 0)  # lanes past num_records read 0
    co = assemble(tmp_path, body.replace("STORE", "s[4:7]"), [BUF])
    out = np.concatenate([data, np.full(64, 7, np.uint32)])
    emulate(co, "k", grid=1, block=64, args=[out])
    np.testing.assert_array_equal(out, np.concatenate([data, np.full(64, 7, np.uint32)]))  # stores dropped
    co = assemble(tmp_path, body.replace("STORE", "s[8:11]"), [BUF])
    out = np.concatenate([data, np.full(64, 7, np.uint32)])
    emulate(co, "k", grid=1, block=64, args=[out])
    np.testing.assert_array_equal(out[64:], loaded + 1)


def _pc_of(co: bytes, mnemonic: str) -> int:
    from jitgemm.emu.engine import _default_spec, _load_code_object, program_for

    k = _load_code_object(co).kernels[0]
    return next(d.pc for d in program_for(k, _default_spec()).decoded if d.inst is not None
                and d.inst.name.startswith(mnemonic))


def test_out_of_bounds_load_names_address_pc_wave_lane(tmp_path):
    # lane 37 of the second wave (workgroup 1) reads 4 KiB past its element
    body = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  s_cmp_eq_u32 s2, 1
  s_cselect_b32 s6, 0x1000, 0
  v_mov_b32 v3, s6
  v_cmp_eq_u32 vcc, 37, v0
  s_nop 1                       // gfx942: a VALU write of VCC needs 2 wait states before a VALU reads it
  v_cndmask_b32 v2, 0, v3, vcc
  v_add_u32 v1, v1, v2
  global_load_dword v3, v1, s[4:5]
"""
    co = assemble(tmp_path, body, [BUF])
    buf = np.zeros(128, np.float32)
    with pytest.raises(MemoryFault) as info:
        emulate(co, "k", grid=2, block=64, args=[buf], strict=True)
    fault = info.value
    assert fault.wave == 1 and fault.lane == 37 and fault.kernel == "k"
    assert fault.pc == _pc_of(co, "global_load_dword")
    msg = str(fault)
    # the PC printed is the loaded address (CODE_BASE + the kernel symbol's ELF address, as ld.lld placed it) and
    # the kernel offset beside it, as s_getpc_b64 would read it
    from jitgemm.codegen.codeobj.elf_reader import ElfFile

    from jitgemm.emu.memory import CODE_BASE

    symbol = next(s for s in ElfFile(co).symbol_table if s.name == "k")
    assert fault.loaded_pc == CODE_BASE + symbol.value + fault.pc
    assert f"PC 0x{fault.loaded_pc:x} (kernel offset 0x{fault.pc:x})" in msg
    assert f"0x{fault.address:x}" in msg and "wave 1, lane 37" in msg
    assert "past the end" in msg
    # 37*4 + 0x1000 bytes from the start of the 512-byte buffer
    assert f"{37 * 4 + 0x1000 - 512} bytes past the end" in msg


def test_null_pointer_store_faults(tmp_path):
    body = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  global_store_dword v1, v0, s[4:5]
"""
    co = assemble(tmp_path, body, [BUF])
    with pytest.raises(MemoryFault, match=r"store .* at address 0x0, PC 0x[0-9a-f]+ \(kernel offset 0x[0-9a-f]+\), "
                                         r"wave 0, lane 0 \(null"):
        emulate(co, "k", grid=1, block=64, args=[None])


def test_lds_access_outside_allocation_faults(tmp_path):
    body = """
  v_lshlrev_b32 v1, 2, v0
  ds_write_b32 v1, v0 offset:192
"""
    co = assemble(tmp_path, body, [], lds=256)
    with pytest.raises(MemoryFault, match=r"LDS access outside the workgroup's 256 bytes .* lane 16"):
        emulate(co, "k", grid=1, block=64, args=[])
    emulate(co, "k", grid=1, block=16, args=[])  # lanes 0-15 stay inside


def test_unsupported_instruction_is_named_and_listed_up_front(tmp_path, capsys):
    body = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  s_mov_b32 m0, 0
  ds_append v1
"""
    co = assemble(tmp_path, body, [(0, 16, "by_value")], name="needs_append")
    missing = check(co)
    assert [op.text.split()[0] for op in missing["needs_append"]] == ["ds_append"]
    pc = missing["needs_append"][0].pc
    with pytest.raises(UnsupportedInstruction) as info:
        emulate(co, "needs_append", grid=1, block=64, args=[np.zeros(4, np.uint32).tobytes()])
    err = info.value
    assert err.pc == pc and err.kernel == "needs_append" and "ds_append" in str(err)
    assert f"PC 0x{pc:x}" in str(err)
    path = tmp_path / "k.co"
    assert cli_main(["emulate", str(path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "kernel needs_append: 1 instruction(s) without emulator semantics" in out and f"0x{pc:04x}" in out


def test_step_limit(tmp_path):
    co = assemble(tmp_path, "loop:\n  s_branch loop\n", [])
    with pytest.raises(StepLimitExceeded, match=r"step limit of 1000 .*s_branch"):
        emulate(co, "k", grid=1, block=64, args=[], max_steps=1000)


def test_wrong_arguments_are_launch_errors(tmp_path):
    co = assemble(tmp_path, "  s_nop 0\n", [BUF, (8, 4, "by_value")])
    with pytest.raises(LaunchError, match=r"takes 2 arguments, 1 given"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(4)])
    with pytest.raises(LaunchError, match=r"does not fit a 4-byte integer"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(4), 1 << 40])
    with pytest.raises(LaunchError, match=r"None is only accepted for a buffer"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(4), None])
    with pytest.raises(LaunchError, match=r"block \(2048, 1, 1\) has 2048 work-items"):
        emulate(co, "k", grid=1, block=2048, args=[np.zeros(4), 1])


def test_cli_run_mode(tmp_path, capsys):
    body = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_load_dword s6, s[0:1], 0x8
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v2, s6
  global_store_dword v1, v2, s[4:5]
"""
    assemble(tmp_path, body, [BUF, (8, 4, "by_value")])
    path = str(tmp_path / "k.co")
    assert cli_main(["emulate", path, "--block", "64", "--arg", "u32:64:zeros", "--arg", "u32:5"]) == 0
    out = capsys.readouterr().out
    assert "kernel k: 1 waves" in out and "sum=320" in out
    assert cli_main(["emulate", path, "--arg", "q32:5"]) == 2
    assert "TYPE one of" in capsys.readouterr().err


# --- kernarg packing (shared with the hip runtime) -------------------------------------------------------

V5_ARGS = [
    {".offset": 0, ".size": 8, ".value_kind": "global_buffer"},
    {".offset": 8, ".size": 4, ".value_kind": "by_value"},
    {".offset": 12, ".size": 4, ".value_kind": "by_value"},
    {".offset": 16, ".size": 8, ".value_kind": "by_value"},
    {".offset": 24, ".size": 4, ".value_kind": "hidden_block_count_x"},
    {".offset": 28, ".size": 4, ".value_kind": "hidden_block_count_y"},
    {".offset": 32, ".size": 4, ".value_kind": "hidden_block_count_z"},
    {".offset": 36, ".size": 2, ".value_kind": "hidden_group_size_x"},
    {".offset": 38, ".size": 2, ".value_kind": "hidden_group_size_y"},
    {".offset": 40, ".size": 2, ".value_kind": "hidden_group_size_z"},
    {".offset": 42, ".size": 2, ".value_kind": "hidden_remainder_x"},
    {".offset": 88, ".size": 2, ".value_kind": "hidden_grid_dims"},
    {".offset": 144, ".size": 4, ".value_kind": "hidden_dynamic_lds_size"},
]


def test_pack_kernargs_explicit_and_hidden():
    launch = LaunchDescription.make("k", (5, 3), (64, 2), [np.zeros(3), -2, 1.5, np.int64(-7)], lds_bytes=4096)
    seg = pack_kernargs(V5_ARGS, launch, segment_size=256, pointer_of=lambda value, index: 0x1234_5678_9ABC)
    assert len(seg) == 256
    assert int.from_bytes(seg[0:8], "little") == 0x1234_5678_9ABC
    assert int.from_bytes(seg[8:12], "little", signed=True) == -2
    assert np.frombuffer(bytes(seg[12:16]), np.float32)[0] == 1.5
    assert int.from_bytes(seg[16:24], "little", signed=True) == -7
    assert [int.from_bytes(seg[o:o + 4], "little") for o in (24, 28, 32)] == [5, 3, 1]
    assert [int.from_bytes(seg[o:o + 2], "little") for o in (36, 38, 40, 42)] == [64, 2, 1, 0]
    assert int.from_bytes(seg[88:90], "little") == 2
    assert int.from_bytes(seg[144:148], "little") == 4096


def test_pack_kernargs_errors_name_the_argument():
    launch = LaunchDescription.make("k", 1, 64, [np.zeros(3), 1.5, 1, 1])
    with pytest.raises(LaunchError, match=r"argument 1 \(by_value at offset 8\)"):
        pack_kernargs(V5_ARGS, LaunchDescription.make("k", 1, 64, [np.zeros(3), "x", 1, 1]), segment_size=0,
                      pointer_of=lambda v, i: 0)
    with pytest.raises(LaunchError, match=r"numpy int64 is 8 bytes, the argument is 4 bytes"):
        pack_kernargs(V5_ARGS, LaunchDescription.make("k", 1, 64, [np.zeros(3), np.int64(1), 1, 1]),
                      segment_size=0, pointer_of=lambda v, i: 0)
    with pytest.raises(LaunchError, match=r"grid must be 1 to 3 positive integers"):
        LaunchDescription.make("k", (0,), 64)
    seg = pack_kernargs(V5_ARGS, launch, segment_size=0, pointer_of=lambda v, i: 0)
    assert len(seg) == 148 and seg[12:16] == (1).to_bytes(4, "little") and seg[16:24] == (1).to_bytes(8, "little")


# --- ALU semantics against numpy, on random operands --------------------------------------------------------

ALU_BODY = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0     // in: a[64], b[64], c[64] (u32)
  s_load_dwordx2 s[6:7], s[0:1], 0x8     // out: 16 dwords per lane
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  global_load_dword v2, v1, s[4:5]
  global_load_dword v3, v1, s[4:5] offset:256
  global_load_dword v4, v1, s[4:5] offset:512
  v_lshlrev_b32 v15, 6, v0               // out offset: lane * 64
  s_waitcnt vmcnt(0)
  v_bfe_u32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7]
  v_bfe_i32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7] offset:4
  v_alignbit_b32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7] offset:8
  v_mov_b32 v5, 0
  v_mad_u64_u32 v[6:7], s[8:9], v2, v3, v[4:5]
  global_store_dwordx2 v15, v[6:7], s[6:7] offset:12
  v_add_co_u32 v6, vcc, v2, v3
  s_nop 1                       // gfx942: VALU write of VCC -> VALU read, 2 wait states (strict mode)
  v_addc_co_u32 v7, vcc, v4, v2, vcc
  global_store_dwordx2 v15, v[6:7], s[6:7] offset:20
  v_mul_hi_i32 v5, v2, v3
  global_store_dword v15, v5, s[6:7] offset:28
  v_cvt_i32_f32 v5, v2
  global_store_dword v15, v5, s[6:7] offset:32
  v_med3_i32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7] offset:36
  v_readfirstlane_b32 s10, v2
  s_bfe_u32 s11, s10, 0x80004          // 8 bits at offset 4
  s_bfe_i32 s12, s10, 0x200000         // all 32 bits
  v_mov_b32 v5, s11
  global_store_dword v15, v5, s[6:7] offset:40
  v_mov_b32 v5, s12
  global_store_dword v15, v5, s[6:7] offset:44
  v_perm_b32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7] offset:48
  v_lshlrev_b64 v[6:7], v4, v[2:3]
  global_store_dwordx2 v15, v[6:7], s[6:7] offset:52
  v_xad_u32 v5, v2, v3, v4
  global_store_dword v15, v5, s[6:7] offset:60
"""


def test_integer_alu_against_numpy(tmp_path):
    co = assemble(tmp_path, ALU_BODY, [BUF, (8, 8, "global_buffer")])
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 1 << 32, (2, 64), dtype=np.uint64)
    c = rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    c[:8] = [0, 31, 32, 1, 0x05040100, 0x0C0A0908, 7, 63]  # edge widths/shifts and byte selectors
    a[:4] = [np.float32(3.7).view(np.uint32), np.float32(-2.5e9).view(np.uint32), 0x7FC00000, 0xFF800000]
    ins = np.concatenate([a, b, c]).astype(np.uint32)
    out = np.zeros((64, 16), np.uint32)
    emulate(co, "k", grid=1, block=64, args=[ins, out], strict=True)
    u = np.uint64
    M32 = u(0xFFFFFFFF)

    def sext(v, bits):
        v = v.astype(np.int64) & ((1 << bits) - 1)
        return np.where(v >> (bits - 1) & 1, v - (1 << bits), v)

    off, width = b & u(31), c & u(31)
    np.testing.assert_array_equal(out[:, 0], (a >> off) & ((u(1) << width) - u(1)))
    bfe_i = [0 if w == 0 else sext(np.array([x >> o]), int(w))[0] for x, o, w in zip(a, off, width, strict=True)]
    np.testing.assert_array_equal(out[:, 1], np.array(bfe_i, np.int64).astype(np.uint32))
    np.testing.assert_array_equal(out[:, 2], (((a << u(32)) | b) >> (c & u(31))) & M32)
    prod = a * b + c  # the addend v[4:5] is (c, 0)
    got = out[:, 3].astype(np.uint64) | (out[:, 4].astype(np.uint64) << u(32))
    np.testing.assert_array_equal(got, prod)
    lo = (a + b) & M32
    carry = (a + b) >> u(32)
    hi = (c + a + carry) & M32
    np.testing.assert_array_equal(out[:, 5], lo)
    np.testing.assert_array_equal(out[:, 6], hi)
    np.testing.assert_array_equal(out[:, 7], ((sext(a, 32) * sext(b, 32)) >> 32).astype(np.uint32))
    f = a.astype(np.uint32).view(np.float32).astype(np.float64)
    cvt = np.where(np.isnan(f), 0, np.clip(np.trunc(np.nan_to_num(f)), -2**31, 2**31 - 1)).astype(np.int64)
    np.testing.assert_array_equal(out[:, 8], cvt.astype(np.uint32))
    sa, sb, sc = sext(a, 32), sext(b, 32), sext(c, 32)
    med = np.maximum(np.minimum(sa, sb), np.minimum(np.maximum(sa, sb), sc))
    np.testing.assert_array_equal(out[:, 9], med.astype(np.uint32))
    assert np.all(out[:, 10] == (a[0] >> u(4)) & u(0xFF)) and np.all(out[:, 11] == a[0])
    comb = (a << u(32)) | b  # bytes 0-3 from b (the second source), 4-7 from a
    sel = c
    expect_perm = np.zeros(64, np.uint64)
    for i in range(4):
        s = (sel >> u(8 * i)) & u(0xFF)
        byte = (comb >> (u(8) * np.minimum(s, u(7)))) & u(0xFF)
        sign = lambda bit: np.where((comb >> u(bit)) & u(1), u(0xFF), u(0))  # noqa: E731
        byte = np.where(s == 8, sign(15), np.where(s == 9, sign(31), np.where(s == 10, sign(47),
                        np.where(s == 11, sign(63), np.where(s == 12, u(0), np.where(s > 12, u(0xFF), byte))))))
        expect_perm |= byte << u(8 * i)
    np.testing.assert_array_equal(out[:, 12], expect_perm)
    pair = a | (b << u(32))
    shifted = (pair << (c & u(63))) & u(0xFFFFFFFFFFFFFFFF)
    np.testing.assert_array_equal(out[:, 13].astype(np.uint64) | (out[:, 14].astype(np.uint64) << u(32)), shifted)
    np.testing.assert_array_equal(out[:, 15], ((a ^ b) + c) & M32)
