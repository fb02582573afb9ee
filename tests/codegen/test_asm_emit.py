"""The generator's emitter: minimal s_waitcnt from outstanding loads (in-order vector memory and LDS,
out-of-order scalar memory), and s_nop for the target's hazard table, also across a loop's back edge."""

from __future__ import annotations

import pytest
from jitgemm.codegen.asm_emit import Emitter
from jitgemm.isa.hazards import emit_facts
from jitgemm.isa.instruction import Counters, a, s, v

from jitgemm import isa

PROFILE = isa.target_profile("gfx942")


def emitter() -> Emitter:
    return Emitter(emit_facts(isa.load_spec("gfx942"), PROFILE), PROFILE.hazards)


def waits(e: Emitter) -> list[dict]:
    return [dict(i.operands[0].parts) for i in e.code if getattr(i, "name", "") == "s_waitcnt"]


def test_vector_loads_wait_only_as_far_as_needed():
    e = emitter()
    rsrc = s(8, 11)
    for i in range(3):
        e.emit("buffer_load_dword", v(10 + i), v(1), rsrc, 0, offen=True)
    e.emit("buffer_store_dword", v(20), v(1), rsrc, 0, offen=True)
    e.emit("v_add_u32", v(30), v(10), v(10))     # first load: 3 younger ops may stay
    assert waits(e) == [{"vmcnt": 3}]
    e.emit("v_add_u32", v(31), v(12), v(12))     # third load: only the store may stay
    assert waits(e)[-1] == {"vmcnt": 1}
    e.emit("v_add_u32", v(32), v(11), v(11))     # already complete: no new wait
    assert len(waits(e)) == 2


def test_scalar_loads_force_lgkmcnt_zero():
    e = emitter()
    e.emit("ds_read_b32", v(5), v(1))
    e.emit("s_load_dwordx2", s(4, 5), s(0, 1), 0)
    e.emit("ds_read_b32", v(6), v(1))
    e.emit("v_mov_b32", v(7), v(5))
    assert waits(e) == [{"lgkmcnt": 0}]      # an SMEM op is in flight: counts are not ordered


def test_overwriting_a_pending_destination_waits():
    e = emitter()
    e.emit("buffer_load_dwordx2", v(10, 11), v(1), s(8, 11), 0, offen=True)
    e.emit("v_mov_b32", v(11), 0)
    assert waits(e) == [{"vmcnt": 0}]


def test_mfma_result_read_by_valu_gets_nops():
    e = emitter()
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15))
    e.emit("v_add_u32", v(40), v(41), v(42))
    e.emit("v_accvgpr_read_b32", v(43), a(3))
    nops = [i.operands[0].value + 1 for i in e.code if getattr(i, "name", "") == "s_nop"]
    assert sum(nops) == 19 - 1    # one independent instruction already covers one wait state


def test_valu_write_then_mfma_read():
    e = emitter()
    e.emit("v_mov_b32", v(0), 0)
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15))
    assert [i.name for i in e.code] == ["v_mov_b32", "s_nop", "v_mfma_f32_32x32x8_bf16"]
    assert e.code[1].operands[0].value == 1


def test_back_edge_hazard_is_covered_before_the_branch():
    e = emitter()
    e.label("loop")
    e.emit("v_accvgpr_read_b32", v(9), a(0))
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15))
    e.branch("s_cbranch_scc1", "loop")
    names = [getattr(i, "name", "label") for i in e.code]
    assert names[-1] == "s_cbranch_scc1" and "s_nop" in names[names.index("v_mfma_f32_32x32x8_bf16"):]
    nops = sum(i.operands[0].value + 1 for i in e.code[3:] if getattr(i, "name", "") == "s_nop")
    assert nops == 19 - 1   # the branch is one wait state


def test_counters_type():
    e = emitter()
    e.emit("buffer_load_dword", v(10), v(1), s(8, 11), 0, offen=True)
    e.wait(vmcnt=0)
    assert isinstance(e.code[-1].operands[0], Counters)


# --- what the emitter asks the spec ------------------------------------------------------------------------
def test_waitcnt_limits_come_from_the_spec_and_llvm_agrees():
    """OPR_WAITCNT's VM and LGKM fields give the largest counts; llvm-mc-22 takes them and refuses one more."""
    import subprocess

    from tests.fixtures.oracles import require_tool

    facts = emit_facts(isa.load_spec("gfx942"), PROFILE)
    mc = require_tool("llvm-mc-22")
    for counter, field in (("vmcnt", "vmcnt"), ("lgkmcnt", "lgkmcnt")):
        top = facts.max_count[counter]
        for value, ok in ((top, True), (top + 1, False)):
            run = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"],
                                 input=f"s_waitcnt {field}({value})\n", capture_output=True, text=True)
            assert (run.returncode == 0 and "error" not in run.stderr) == ok, (counter, value, run.stderr)


def test_writes_and_classes_come_from_the_spec():
    """Destinations are the encoding's output operands in syntax order (VOPC's vcc, MUBUF's vdata, an MFMA's
    accumulators, v_readfirstlane's SGPR); classes (sets: one classification for the emitter and strict mode)
    from functional groups: MFMA subgroup, VMEM (vmem outside DATA_SHARE), SMEM, a VALU producing a 32-bit SGPR
    value (readlane) or taking an SGPR lane select (lanesel), trans or other VALU, the hardware-register moves,
    the rest."""
    facts = emit_facts(isa.load_spec("gfx942"), PROFILE)
    assert facts.written("v_cmp_gt_i32", 3) == (0,) and facts.written("v_cmp_gt_u32_e64", 3) == (0,)
    assert facts.written("buffer_load_dwordx4", 4) == (0,) and facts.written("buffer_store_dword", 4) == ()
    assert facts.written("ds_write_b64", 2) == () and facts.written("ds_read2_b64", 2) == (0,)
    assert facts.written("v_mfma_f32_32x32x8_bf16", 4) == (0,) and facts.written("s_load_dwordx8", 3) == (0,)
    classes = {n: facts.hazard_classes(n) for n in ("v_mfma_f32_32x32x8_bf16", "v_readfirstlane_b32",
                                                    "v_readlane_b32", "v_cmp_gt_i32", "v_add_u32", "ds_read_b64",
                                                    "buffer_load_dword", "s_load_dwordx8", "s_add_u32",
                                                    "v_writelane_b32", "v_exp_f32", "s_setreg_b32", "s_getreg_b32")}
    vn = {"valu", "valu_nontrans"}
    assert classes == {"v_mfma_f32_32x32x8_bf16": {"mfma"}, "v_readfirstlane_b32": vn | {"readlane"},
                       "v_readlane_b32": vn | {"readlane", "lanesel"}, "v_cmp_gt_i32": vn, "v_add_u32": vn,
                       "ds_read_b64": {"memory"}, "buffer_load_dword": {"memory", "vmem"}, "s_load_dwordx8": {"smem"},
                       "s_add_u32": {"salu"}, "v_writelane_b32": vn | {"lanesel"}, "v_exp_f32": {"valu", "trans"},
                       "s_setreg_b32": {"salu", "setreg"}, "s_getreg_b32": {"salu", "getreg"}}
    assert facts.scalar_memory("s_load_dwordx8") and not facts.scalar_memory("ds_read_b64")
    with pytest.raises(ValueError, match="takes 3 operands, not 2"):
        emitter().emit("v_add_u32", v(1), v(2))


def test_inline_integers_come_from_the_spec_and_llvm_agrees():
    """OPR_SRC's integer-named values are the inline constants: llvm-mc-22 encodes them in 4 bytes and the
    next integer on either side with a 32-bit literal (8 bytes)."""
    import re
    import subprocess

    from tests.fixtures.oracles import require_tool

    ints = emit_facts(isa.load_spec("gfx942"), PROFILE).inline_ints
    lo, hi = min(ints), max(ints)
    assert ints == frozenset(range(lo, hi + 1)) and (lo, hi) == (-16, 64)
    text = "".join(f"v_add_u32_e32 v0, {x}, v1\n" for x in (lo - 1, lo, hi, hi + 1))
    run = subprocess.run([require_tool("llvm-mc-22"), "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"],
                         input=text, capture_output=True, text=True, check=True)
    sizes = [len(m.split(",")) for m in re.findall(r"encoding: \[([^\]]*)\]", run.stdout)]
    assert sizes == [8, 4, 4, 8], run.stdout


PERMLANE_IR = r"""
target triple = "amdgcn-amd-amdhsa"
declare {i32, i32} @llvm.amdgcn.permlane32.swap(i32, i32, i1, i1)
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @swap(ptr addrspace(1) %x) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr i32, ptr addrspace(1) %x, i32 %l
  %vx = load i32, ptr addrspace(1) %px
  %a = xor i32 %vx, 12345
  %b = mul i32 %vx, %l
  %r = call {i32, i32} @llvm.amdgcn.permlane32.swap(i32 %a, i32 %b, i1 false, i1 false)
  %r0 = extractvalue {i32, i32} %r, 0
  %r1 = extractvalue {i32, i32} %r, 1
  %s = add i32 %r0, %r1
  store i32 %s, ptr addrspace(1) %px
  ret void
}
"""


def _nops_before(lines: list[str], mnemonic: str) -> int:
    """Wait states of the s_nops right before the first `mnemonic` in an assembly listing."""
    at = next(i for i, line in enumerate(lines) if line.startswith(mnemonic))
    total = 0
    for line in reversed(lines[:at]):
        if not line.startswith("s_nop"):
            break
        total += int(line.split()[1], 0) + 1
    return total


def test_gfx950_valu_write_then_permlane_swap_read_waits_as_llvm_does():
    """gfx950's profile adds the permlane class (hazard_classes): a VALU-written VGPR read by v_permlane32_swap
    needs 2 wait states and the swap's results need none before a VALU reads them. LLVM 22 compiling
    llvm.amdgcn.permlane32.swap for gfx950 (llvmlite) places the same s_nop (gfx942 has no swap)."""
    from tests.fixtures.oracles import require_module

    require_module("llvmlite")
    from jitgemm.codegen.llvm.backend import run_backend

    asm = run_backend(PERMLANE_IR, cpu="gfx950", output="assembly").data
    asm = asm.decode() if isinstance(asm, bytes) else asm
    lines = [line.strip() for line in asm.splitlines() if line.strip().startswith(("v_", "s_nop", "global_"))]
    llvm_before, llvm_after = _nops_before(lines, "v_permlane32_swap"), _nops_before(lines, "v_add_u32")
    profile = isa.target_profile("gfx950")
    e = Emitter(emit_facts(isa.load_spec("gfx950"), profile), profile.hazards)
    e.emit("v_mul_lo_u32", v(0), v(2), v(0))
    e.emit("v_permlane32_swap_b32", v(3), v(0))
    e.emit("v_add_u32", v(0), v(3), v(0))
    names = [i.name for i in e.code]
    ours = [sum(i.operands[0].value + 1 for i in e.code[names.index(a_) + 1:names.index(b_)] if i.name == "s_nop")
            for a_, b_ in (("v_mul_lo_u32", "v_permlane32_swap_b32"), ("v_permlane32_swap_b32", "v_add_u32"))]
    assert (llvm_before, llvm_after) == (2, 0)
    assert ours == [llvm_before, llvm_after]
    assert not PROFILE.hazard_classes and e.facts.hazard_classes("v_mul_lo_u32") >= {"valu"}
    assert e.facts.hazard_classes("v_permlane32_swap_b32") >= {"valu", "permlane"}
