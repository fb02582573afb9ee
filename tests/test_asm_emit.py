"""The generator's emitter: minimal s_waitcnt from outstanding loads (in-order vector memory and LDS,
out-of-order scalar memory), and s_nop for the target's hazard table, also across a loop's back edge."""

from __future__ import annotations

from jitgemm.codegen.asm_emit import Emitter, counter_lookup
from jitgemm.isa.instruction import Counters, a, s, v

from jitgemm import isa

PROFILE = isa.target_profile("gfx942")


def emitter() -> Emitter:
    return Emitter(counter_lookup(isa.load_spec("gfx942"), PROFILE), PROFILE.get("hazards"))


def waits(e: Emitter) -> list[dict]:
    return [dict(i.operands[0].parts) for i in e.code if getattr(i, "name", "") == "s_waitcnt"]


def test_vector_loads_wait_only_as_far_as_needed():
    e = emitter()
    rsrc = s(8, 11)
    for i in range(3):
        e.emit("buffer_load_dword", v(10 + i), v(1), rsrc, 0, offen=True, writes=[v(10 + i)])
    e.emit("buffer_store_dword", v(20), v(1), rsrc, 0, offen=True)
    e.emit("v_add_u32", v(30), v(10), v(10), writes=[v(30)])     # first load: 3 younger ops may stay
    assert waits(e) == [{"vmcnt": 3}]
    e.emit("v_add_u32", v(31), v(12), v(12), writes=[v(31)])     # third load: only the store may stay
    assert waits(e)[-1] == {"vmcnt": 1}
    e.emit("v_add_u32", v(32), v(11), v(11), writes=[v(32)])     # already complete: no new wait
    assert len(waits(e)) == 2


def test_scalar_loads_force_lgkmcnt_zero():
    e = emitter()
    e.emit("ds_read_b32", v(5), v(1), writes=[v(5)])
    e.emit("s_load_dwordx2", s(4, 5), s(0, 1), 0, writes=[s(4, 5)])
    e.emit("ds_read_b32", v(6), v(1), writes=[v(6)])
    e.emit("v_mov_b32", v(7), v(5), writes=[v(7)])
    assert waits(e) == [{"lgkmcnt": 0}]      # an SMEM op is in flight: counts are not ordered


def test_overwriting_a_pending_destination_waits():
    e = emitter()
    e.emit("buffer_load_dwordx2", v(10, 11), v(1), s(8, 11), 0, offen=True, writes=[v(10, 11)])
    e.emit("v_mov_b32", v(11), 0, writes=[v(11)])
    assert waits(e) == [{"vmcnt": 0}]


def test_mfma_result_read_by_valu_gets_nops():
    e = emitter()
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15), writes=[a(0, 15)])
    e.emit("v_add_u32", v(40), v(41), v(42), writes=[v(40)])
    e.emit("v_accvgpr_read_b32", v(43), a(3), writes=[v(43)])
    nops = [i.operands[0].value + 1 for i in e.code if getattr(i, "name", "") == "s_nop"]
    assert sum(nops) == 19 - 1    # one independent instruction already covers one wait state


def test_valu_write_then_mfma_read():
    e = emitter()
    e.emit("v_mov_b32", v(0), 0, writes=[v(0)])
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15), writes=[a(0, 15)])
    assert [i.name for i in e.code] == ["v_mov_b32", "s_nop", "v_mfma_f32_32x32x8_bf16"]
    assert e.code[1].operands[0].value == 1


def test_back_edge_hazard_is_covered_before_the_branch():
    e = emitter()
    e.label("loop")
    e.emit("v_accvgpr_read_b32", v(9), a(0), writes=[v(9)])
    e.emit("v_mfma_f32_32x32x8_bf16", a(0, 15), v(0, 1), v(2, 3), a(0, 15), writes=[a(0, 15)])
    e.branch("s_cbranch_scc1", "loop")
    names = [getattr(i, "name", "label") for i in e.code]
    assert names[-1] == "s_cbranch_scc1" and "s_nop" in names[names.index("v_mfma_f32_32x32x8_bf16"):]
    nops = sum(i.operands[0].value + 1 for i in e.code[3:] if getattr(i, "name", "") == "s_nop")
    assert nops == 19 - 1   # the branch is one wait state


def test_counters_type():
    e = emitter()
    e.emit("buffer_load_dword", v(10), v(1), s(8, 11), 0, offen=True, writes=[v(10)])
    e.wait(vmcnt=0)
    assert isinstance(e.code[-1].operands[0], Counters)
