"""The emulator's kernarg-read trace and jitgemm.abi_proof on a hand-written kernel whose reads are known: a
pointer read whole, a value read through a copy of the kernarg pointer, the high half of a pointer read alone,
an argument never read, and a wide load across declared and undeclared bytes."""

from __future__ import annotations

import numpy as np

from jitgemm.abi_proof import compare
from jitgemm.contract import Contract
from jitgemm.emu.kernarg_trace import KernargRead, kernarg_reads
from tests.fixtures.hand_kernel import kernel_source

BODY = """
  s_load_dwordx2 s[2:3], s[0:1], 0x0
  s_mov_b64 s[6:7], s[0:1]
  s_load_dword s8, s[6:7], 0x8
  s_load_dword s9, s[0:1], 0x4
  s_load_dwordx4 s[12:15], s[0:1], 0x10
  s_waitcnt lgkmcnt(0)
"""
ARGS = [(0, 8, "global_buffer"), (8, 4, "by_value"), (12, 4, "by_value"), (16, 4, "by_value"),
        (20, 4, "by_value"), (24, 8, "global_buffer"), (32, 8, "global_buffer")]
DECLARED = [{"name": "D", "role": "d", "offset": 0, "size": 8, "type": "ptr"},
            {"name": "M", "role": "m", "offset": 8, "size": 4}, {"name": "N", "role": "n", "offset": 12, "size": 4},
            {"name": "K", "role": "k", "offset": 16, "size": 4},
            {"name": "A", "role": "a", "offset": 24, "size": 8, "type": "ptr"},
            {"name": "B", "role": "b", "offset": 32, "size": 8, "type": "ptr"}]


def contract(args):
    return Contract.load({
        "contract_version": 1,
        "identity": {"generator": "hand", "generator_version": "0", "kernel": "k", "target": "gfx942"},
        "operation": {"kind": "gemm", "a": "fp32", "b": "fp32", "d": "fp32", "acc": "fp32", "layout": "NN"},
        "abi": {"kernarg_size": 40, "strides_in": "elements", "args": args},
        "launch": {"workgroup": [64, 1, 1], "grid": ["1", "1", "1"]}, "legality": {}, "features": {}})


def test_trace_follows_pointer_copies_and_proof_names_argument_and_pc():
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm.emu import emulate

    blob, _ = assemble_source(kernel_source(BODY, ARGS, sgprs=24))
    with kernarg_reads() as reads:
        emulate(blob, "k", grid=1, block=64, args=[np.zeros(4, np.float32), 1, 2, 3, 4, None, None])
    got = sorted((r.pc, r.offset, r.width) for r in reads)
    assert got == [(0, 0, 8), (12, 8, 4), (20, 4, 4), (28, 16, 16)]   # the copy s[6:7] is followed
    pcs = {r.offset: r.pc for r in reads}
    c = contract(DECLARED)
    findings = compare(c, reads, None)
    kinds = sorted((f.kind, f.argument, f.pc) for f in findings)
    # the high dword of D read alone; N and B never read; the x4 load at 0x10 covers K, the undeclared bytes
    # 20..23 and all of A
    assert ("width", "D", pcs[4]) in kinds
    assert ("never_read", "N", None) in kinds
    assert any(f.kind == "undeclared" and f.pc == pcs[16] and f.severity == "warning" and "20..23" in f.message
               for f in findings)
    assert ("never_read", "B", None) in kinds
    assert not any(f.argument in ("M", "K", "A") for f in findings) and len(findings) == 4


def test_reads_past_the_segment_and_lone_undeclared_reads_are_errors():
    c = contract(DECLARED)
    reads = [KernargRead(0x40, 0, 8, "s_load_dwordx2"), KernargRead(0x44, 8, 8, "s_load_dwordx2"),
             KernargRead(0x48, 16, 4, "s_load_dword"), KernargRead(0x4c, 24, 8, "s_load_dwordx2"),
             KernargRead(0x50, 20, 4, "s_load_dword"), KernargRead(0x54, 44, 4, "s_load_dword"),
             KernargRead(0x58, 32, 8, "s_load_dwordx2")]
    findings = compare(c, reads, {".kernarg_segment_size": 40})
    by_pc = {f.pc: f for f in findings}
    assert by_pc[0x50].kind == "undeclared" and by_pc[0x50].severity == "error"
    assert by_pc[0x54].kind == "short_segment" and "40-byte" in by_pc[0x54].message
    assert len(findings) == 2
