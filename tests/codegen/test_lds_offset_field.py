"""LDS write offsets past the DS offset field (16 bits, ENC_DS OFFSET1:OFFSET0): gfx950's 160 KiB of LDS lets a
double-buffered tile's second buffer start past 64 KiB. The planner accepted such configs and the encoder refused
them (offset:65536..81920), so a gfx950 sweep compiled none of them; the second buffer now gets a write base of its
own. Tolerances: jitgemm.reference.check per output dtype."""

from __future__ import annotations

from dataclasses import replace

import pytest
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.field_limits import ds_offset_limit
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_plan import validate_config

from jitgemm import isa
from jitgemm.reference import check, operands, reference

SPEC, GFX950 = isa.load_spec("gfx950"), isa.target_profile("gfx950")
# A 256x128 bf16 tile, 64 deep: one buffer is 48 KiB, so the second buffer's A rows sit at 48..80 KiB.
HIGH = GemmConfig(256, 128, 64, 2, 4, "V_MFMA_F32_16X16X16_BF16", prefetch=1, lds_buffers=2, vec_a=8, vec_b=8)


def _high_stages(problem: GemmProblem, config: GemmConfig) -> list[str]:
    plan = validate_config(problem, config, SPEC, GFX950)
    limit = ds_offset_limit(SPEC)
    return [st.name for st in (plan.a, plan.b) if st.needs_high_base(plan.buffer_bytes, 2, limit)]


def test_limit_comes_from_the_spec():
    assert ds_offset_limit(SPEC) == 65535 == ds_offset_limit(isa.load_spec("gfx942"))


@pytest.mark.parametrize("layout, config, stage", [
    ("NT", HIGH, "a"),                                                          # K-contiguous vector writes
    ("TT", replace(HIGH, tile_m=128, tile_n=256, waves_m=4, waves_n=2), "b"),  # K-row packs (v_perm_b32)
], ids=["vectors", "packs"])
def test_second_buffer_past_64k_runs_in_strict_emulation(layout, config, stage):
    """Three K tiles (both buffers, then the guarded tail) with M and N ending inside the tile: strict emulation
    (hazards, waits, LDS races) = numpy float64."""
    from jitgemm.api import launch, prepare
    from jitgemm.contract import Contract

    problem = GemmProblem.make(200, 100, 176, "bf16", layout=layout)
    assert _high_stages(problem, config) == [stage], "the config must need the second write base"
    compiled = compile_gemm(problem, config, target="gfx950")
    a, b, c, bias = operands(problem, 7 + len(layout))
    call = prepare(a, b, c, out_dtype=problem.d.numpy)
    d = launch(call, compiled.code_object, compiled.name, Contract.load(compiled.contract), backend="emu",
               strict=True)
    check(problem, d, reference(problem, a, b, c, bias))


def test_planned_configs_encode():
    """The gfx950 sweep configs the planner accepts with a second buffer past the field compile (a sample of the
    grid's double-buffered big-tile points for the kernel-hash problem, fitted as the sweep fits them)."""
    from jitgemm.sweep import grid_points, point_configs

    problem = GemmProblem.make(512, 512, 256, "bf16")
    points = [p for p in grid_points(problem, "gfx950", "asm", tiles=(128, 256))
              if p.lds_buffers == 2 and p.tile_m * p.tile_n >= 256 * 128]
    high = 0
    for point in points[:: max(1, len(points) // 8)]:
        for config in point_configs(problem, point, "gfx950", "asm"):
            if _high_stages(problem, config):
                high += 1
                compile_gemm(problem, config, target="gfx950")
    assert high >= 4


def test_a_tile_wider_than_the_field_is_refused_by_the_direct_generator_only():
    """A single buffer whose own writes pass the field cannot be fixed by a second base: the direct generator
    refuses it when planning; the LLVM generator (its backend adds base registers) plans it."""
    from jitgemm.codegen.generator import generator

    problem = GemmProblem.make(512, 512, 512, "bf16", layout="NT")
    config = replace(HIGH, tile_m=512, tile_n=64, depth_k=128, waves_m=4, waves_n=2, lds_buffers=1)
    with pytest.raises(IRError, match="DS instruction offsets reach 65535"):
        generator("asm").plan(problem, config, SPEC, GFX950)
    assert validate_config(problem, config, SPEC, GFX950).a.max_write_offset > ds_offset_limit(SPEC)
    generator("llvm").plan(problem, config, SPEC, GFX950)
