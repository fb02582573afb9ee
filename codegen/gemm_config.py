"""Checking a tiling config against a problem, the target's limits and the spec's MFMAs, and choosing a
sensible default. The resource model here is the direct generator's: accumulators live in AGPRs, A/B
fragments and global-load staging in VGPRs, A and B tiles in LDS with K contiguous (+ padding)."""

from __future__ import annotations

from dataclasses import dataclass

from isa.model import Spec
from isa.targets import TargetProfile

from .gemm_ir import GemmConfig, GemmProblem, IRError
from .mfma_catalog import Mfma, mfma_catalog, mfmas_for

# VGPRs the generator keeps for addresses, loop counters, masks and epilogue temporaries
# (counted from codegen/gemm_asm.py's allocation; refined when it changes).
FIXED_VGPRS = 40


@dataclass(frozen=True)
class Resources:
    lds_bytes: int
    agprs: int
    vgprs: int
    workgroup_size: int
    mfma: Mfma


def _mfma_named(spec: Spec, name: str) -> Mfma:
    for x in mfma_catalog(spec):
        inst = spec.find_instruction(name)
        if inst is not None and x.name == inst.name:
            return x
    raise IRError(f"mfma={name}: not an MFMA of this spec that the generator can use; available: "
                  + ", ".join(x.name for x in mfma_catalog(spec)))


def resources(problem: GemmProblem, config: GemmConfig, spec: Spec) -> Resources:
    mfma = _mfma_named(spec, config.mfma)
    wave_m, wave_n = config.wave_tile
    blocks = (wave_m // mfma.m) * (wave_n // mfma.n) if wave_m >= mfma.m and wave_n >= mfma.n else 0
    row = config.depth_k + config.lds_pad
    lds = (config.tile_m * row * problem.a.bytes + config.tile_n * row * problem.b.bytes) * config.prefetch
    threads = config.workgroup_size
    staging = -(-(config.tile_m * config.depth_k * problem.a.bytes
                  + config.tile_n * config.depth_k * problem.b.bytes) // (threads * 4))
    fragments = (wave_m // mfma.m) * mfma.a_regs + (wave_n // mfma.n) * mfma.b_regs
    vgprs = FIXED_VGPRS + staging * (2 if config.prefetch > 1 else 1) + fragments + mfma.acc_regs
    return Resources(lds, blocks * mfma.acc_regs, vgprs, threads, mfma)


def validate_config(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> Resources:
    """Resources of a legal config; IRError saying which limit is exceeded otherwise."""
    res = resources(problem, config, spec)
    mfma = res.mfma
    if (mfma.a, mfma.b) != (problem.a, problem.b):
        raise IRError(f"mfma={mfma.name} multiplies {mfma.a.name}x{mfma.b.name}, the problem is "
                      f"{problem.a.name}x{problem.b.name}; use one of: "
                      + ", ".join(x.name for x in mfmas_for(spec, problem.a, problem.b)))
    for name, value in (("tile_m", config.tile_m), ("tile_n", config.tile_n), ("depth_k", config.depth_k),
                        ("waves_m", config.waves_m), ("waves_n", config.waves_n)):
        if value < 1:
            raise IRError(f"{name}={value} must be positive")
    wave_m, wave_n = config.wave_tile
    if config.tile_m % config.waves_m or config.tile_n % config.waves_n:
        raise IRError(f"tile {config.tile_m}x{config.tile_n} does not split into {config.waves_m}x{config.waves_n} "
                      f"waves")
    if wave_m % mfma.m or wave_n % mfma.n:
        raise IRError(f"wave tile {wave_m}x{wave_n} is not a multiple of the MFMA shape {mfma.m}x{mfma.n}")
    if config.depth_k % mfma.k:
        raise IRError(f"depth_k={config.depth_k} is not a multiple of the MFMA's K={mfma.k}")
    if config.prefetch not in (1, 2):
        raise IRError(f"prefetch={config.prefetch}; accepted: 1 (no prefetch) or 2 (next tile in flight)")
    if config.unroll < 1 or config.lds_pad < 0:
        raise IRError("unroll must be >= 1 and lds_pad >= 0")
    max_wg = int(target.get("max_workgroup_size", 1024))
    if res.workgroup_size > max_wg:
        raise IRError(f"{config.waves_m}x{config.waves_n} waves = {res.workgroup_size} work-items; "
                      f"{target.target} allows {max_wg}")
    lds_limit = int(target.get("lds_bytes_per_workgroup", 65536))
    if res.lds_bytes > lds_limit:
        raise IRError(f"config needs {res.lds_bytes} bytes of LDS; {target.target} has {lds_limit} per workgroup")
    agpr_limit = int(target.get("agprs", 0) or 0)
    if res.agprs > agpr_limit:
        raise IRError(f"wave tile {wave_m}x{wave_n} needs {res.agprs} accumulator registers; {target.target} has "
                      f"{agpr_limit} AGPRs")
    vgpr_limit = int(target.get("arch_vgprs", 256) or 256)
    if res.vgprs > vgpr_limit:
        raise IRError(f"config needs about {res.vgprs} VGPRs (staging, fragments, addresses); {target.target} has "
                      f"{vgpr_limit}")
    return res


def default_config(problem: GemmProblem, spec: Spec, target: TargetProfile) -> GemmConfig:
    """A config that fits the target: the largest MFMA for the dtypes, tiles sized to the problem."""
    options = mfmas_for(spec, problem.a, problem.b)
    if not options:
        raise IRError(f"the spec ({spec.architecture.name}) has no MFMA for {problem.a.name}x{problem.b.name}")
    small = problem.m <= 32 and problem.n <= 32
    for mfma in sorted(options, key=lambda x: (x.m * x.n, x.k) if small else (-x.m * x.n, -x.k)):
        depth = max(mfma.k, 32 // problem.a.bytes * 2)
        depth -= depth % mfma.k
        big = problem.m >= 4 * mfma.m and problem.n >= 4 * mfma.n
        shapes = [((mfma.m, mfma.n), (1, 1))]
        if not small:
            shapes.insert(0, ((mfma.m * 2, mfma.n * 2), (2, 2)))
        if big:
            shapes.insert(0, ((mfma.m * 4, mfma.n * 4), (2, 2)))
        for tile, waves in shapes:
            cfg = GemmConfig(tile[0], tile[1], depth, waves[0], waves[1], mfma.name, lds_pad=0, prefetch=1)
            try:
                validate_config(problem, cfg, spec, target)
                return cfg
            except IRError:
                continue
    raise IRError(f"no default config fits {target.target} for {problem.a.name}x{problem.b.name}")
