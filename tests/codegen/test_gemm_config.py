"""The direct generator's config layer: the resource model is an upper bound of what the lowering really
allocates (VGPRs, AGPRs, LDS) for a sweep of configs; new config fields round-trip through the text form
(older texts without them still parse) and are validated with reasons; the LDS bank model counts what its
sources say (phases of 128 bytes, 32 banks of 4 bytes on gfx942); defaults are sensible for large problems."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from jitgemm.codegen.gemm_asm import lower_gemm
from jitgemm.codegen.gemm_config import bank_cycles, best_lds_pad, default_config, lds_cycles
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_plan import resources, validate_config
from jitgemm.codegen.gemm_text import format_config, format_ir, parse
from jitgemm.codegen.mfma_catalog import mfmas_for

from jitgemm import isa

SPEC = isa.load_spec("gfx942")
GFX942 = isa.target_profile("gfx942")
DTYPES = ["fp32", "fp16", "bf16", "fp8", "int8"]


def _random_configs(rng: random.Random, count: int):
    """Legal (problem class, config) pairs over every dtype, layout, MFMA and the staging options."""
    found = 0
    while found < count:
        p = GemmProblem.make(64, 64, 64, rng.choice(DTYPES), layout=rng.choice(["NN", "NT", "TN", "TT"]))
        mfma = rng.choice(mfmas_for(SPEC, p.a, p.b))
        wm, wn = rng.choice([(1, 1), (2, 1), (1, 2), (2, 2)])
        bm, bn = rng.choice([1, 2, 4]), rng.choice([1, 2, 4])
        cfg = GemmConfig(mfma.m * wm * bm, mfma.n * wn * bn, mfma.k * rng.choice([1, 2, 4, 8]), wm, wn, mfma.name,
                         lds_pad=rng.choice([0, 2, 4, 8, 16]), prefetch=rng.choice([1, 2]),
                         lds_buffers=rng.choice([1, 2]), vec_a=rng.choice([1, 2, 4, 8, 16]),
                         vec_b=rng.choice([1, 2, 4, 8, 16]))
        try:
            res = validate_config(p, cfg, SPEC, GFX942)
            lowered = lower_gemm(p.kernel_class(), cfg, SPEC, GFX942)
        except IRError:
            continue
        found += 1
        yield p, cfg, res, lowered


def test_resource_model_bounds_the_lowering():
    """resources() is what validation, the selector's planned contracts and default_config trust: it must never
    promise fewer registers or less LDS than the kernel then uses."""
    tight = 0
    for p, cfg, res, lowered in _random_configs(random.Random(42), 120):
        where = f"{p.a.name} {p.layout} {format_config(cfg)}"
        assert res.vgprs >= lowered.next_free_vgpr, where
        assert res.agprs >= lowered.next_free_agpr, where
        assert res.lds_bytes >= lowered.lds_bytes, where
        tight += res.vgprs - lowered.next_free_vgpr <= 16
    assert tight > 60, "the VGPR model should stay close to the lowering, not only above it"


@pytest.mark.parametrize("a", DTYPES)
def test_default_config_model_bounds_the_lowering(a):
    for layout in ("NT", "TN"):
        p = GemmProblem.make(4096, 4096, 4096, a, layout=layout)
        cfg = default_config(p, SPEC, GFX942)
        res = resources(p, cfg, SPEC)
        lowered = lower_gemm(p.kernel_class(), cfg, SPEC, GFX942)
        assert res.vgprs >= lowered.next_free_vgpr and res.lds_bytes >= lowered.lds_bytes


def test_text_round_trip_with_lds_buffers():
    rng = random.Random(7)
    for _ in range(100):
        cfg = GemmConfig(rng.choice([32, 64, 256]), rng.choice([32, 128]), rng.choice([16, 64]), rng.choice([1, 2]),
                         rng.choice([1, 2]), "V_MFMA_F32_32X32X8_BF16", rng.randint(0, 8), rng.choice([1, 2]), 1,
                         rng.choice([1, 8]), rng.choice([1, 4]), lds_buffers=rng.choice([1, 2]))
        p = GemmProblem.make(100, 200, 300, "bf16", layout="NT")
        text = format_ir(p, cfg)
        assert "lds_buffers=" in text
        assert parse(text) == (p, cfg)
        assert format_ir(*parse(text)) == text


def test_older_text_without_new_keys_parses_with_defaults():
    _, cfg = parse("gemm m=1 n=2 k=3 a=bf16\ntile 64x64x32 waves=2x2 mfma=V_MFMA_F32_32X32X8_BF16 lds_pad=4 "
                   "prefetch=2 unroll=1 vec=8x8")
    assert cfg.lds_buffers == 1 and cfg.prefetch == 2 and cfg.lds_pad == 4


@pytest.mark.parametrize("text, message", [
    ("tile 64x64x32 mfma=V_MFMA_F32_32X32X8_BF16 lds_buffers=x", r"<gemm>:2:\d+: lds_buffers must be an integer"),
    ("tile 64x64x32 mfma=V_MFMA_F32_32X32X8_BF16 lds_buffer=2", r"unknown key 'lds_buffer'.*lds_buffers"),
])
def test_lds_buffers_text_errors(text, message):
    with pytest.raises(IRError, match=message):
        parse("gemm m=1 n=2 k=3 a=bf16\n" + text)


@pytest.mark.parametrize("cfg, message", [
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_buffers=3), "lds_buffers=3; accepted: 1"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_buffers=0), "lds_buffers=0; accepted: 1"),
    (GemmConfig(256, 256, 64, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_buffers=2), "131072 bytes of LDS"),
    (GemmConfig(256, 256, 64, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_pad=4), "69632 bytes of LDS"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_pad=1), "LDS row of A is 66 bytes"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=3), "prefetch=3; accepted"),
])
def test_config_errors(cfg, message):
    p = GemmProblem.make(256, 256, 256, "bf16", layout="NT")
    with pytest.raises(IRError, match=message):
        validate_config(p, cfg, SPEC, GFX942)


# --- the LDS bank model (32 banks x 4 bytes, 128 bytes per clock: AMD's CK-Tile bank-conflict blog and docs) ---
def test_bank_model_phases_and_conflicts():
    lanes = range(64)
    assert bank_cycles([4 * t for t in lanes], 4) == 2            # 32 lanes per phase, one dword each
    assert bank_cycles([16 * t for t in lanes], 16) == 8          # ds_*_b128: 8 phases of 8 lanes
    assert bank_cycles([8 * t for t in lanes], 8) == 4            # ds_*_b64: 4 phases of 16 lanes
    assert bank_cycles([128 * t for t in lanes], 4) == 2 * 32     # every lane of a phase in bank 0
    assert bank_cycles([0 for _ in lanes], 4) == 2                # one address: a broadcast, no conflict
    assert bank_cycles([64 * (t % 16) for t in lanes], 8) == 4 * 8  # 16 rows of 64 bytes: 8 rows per bank pair


def test_padding_removes_fragment_read_conflicts():
    """bf16 32x32x8 fragments (16 lanes of a phase read 8 bytes from 16 rows): 64-byte rows put 8 lanes on
    each bank pair. Rows that keep 16-byte vectors whole (a multiple of 16 bytes) leave 2 lanes per bank
    pair at best; 72-byte rows (8 mod 16) spread them over all 32 banks, the tile then written in 8-byte
    halves."""
    p = GemmProblem.make(4096, 4096, 4096, "bf16", layout="NT")
    base = GemmConfig(128, 128, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2, vec_a=8, vec_b=8)
    mfma = resources(p, base, SPEC).mfma
    unpadded, _ = lds_cycles(p, base, mfma)
    pad = best_lds_pad(p, base, SPEC, GFX942)
    padded, _ = lds_cycles(p, replace(base, lds_pad=pad), mfma)
    assert pad > 0 and (32 + pad) * 2 % 16 == 0 and padded * 2 <= unpadded
    split = best_lds_pad(p, base, SPEC, GFX942, whole_vectors=False)
    halves, _ = lds_cycles(p, replace(base, lds_pad=split), mfma)
    assert (32 + split) * 2 % 16 == 8 and halves < padded
    reads = [(lane % 32) * (32 + split) * 2 + (lane // 32) * 8 for lane in range(64)]
    assert bank_cycles(reads, 8) == 4                              # conflict-free: 4 phases of 16 lanes


# --- defaults ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", ["bf16", "fp16", "fp8", "int8"])
def test_large_problem_default_uses_big_tiles_and_prefetch(a):
    p = GemmProblem.make(8192, 8192, 8192, a, layout="NT")
    cfg = default_config(p, SPEC, GFX942)
    res = validate_config(p, cfg, SPEC, GFX942)
    assert (cfg.tile_m, cfg.tile_n, cfg.workgroup_size) == (256, 256, 256), cfg
    assert cfg.prefetch == 2 and cfg.vec_a * p.a.bytes == 16 and res.agprs <= 256


def test_default_tile_follows_the_parallelism():
    """A 256x256 tile only when about every compute unit (3/4 of MI300X's 304) still gets a workgroup; a
    problem wide in N gets the 128x256 tile instead, a small one 128x128."""
    wide = default_config(GemmProblem.make(1024, 8192, 1024, "bf16", layout="NT"), SPEC, GFX942)
    assert (wide.tile_m, wide.tile_n) == (128, 256)          # 4 x 32 = 128 tiles of 256x256; 8 x 32 of 128x256
    small = default_config(GemmProblem.make(1024, 1024, 4096, "bf16", layout="NT"), SPEC, GFX942)
    assert (small.tile_m, small.tile_n) == (128, 128)
