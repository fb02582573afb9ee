"""The LLVM generator's plan for block-scaled (MX) and weight-only GEMMs on gfx950: which matrix instruction,
how many MFMA blocks per wave, how far K advances per loop iteration, and the checks that make a config legal.

Why a module of its own: the shared plan (codegen/gemm_plan.py) stages K-contiguous tiles of whole-byte elements
through LDS; the MX kernels of the LLVM generator load each lane's MFMA operand straight from global memory into
its registers instead (for the f8f6f4 MFMAs a lane's operand is one or two runs of 16/32 consecutive K elements
of one row, so a K-contiguous row-major matrix gives every lane contiguous bytes: 16-byte loads, no LDS, no
transposition; the 16x16-preshuffled weight layout makes the same loads coalesce across lanes). The plan carries
the fields of `GemmPlan` that the generator, the contract and the selector read (config, mfma, workgroup_size,
grid, agprs, lds_bytes, blocks), so it stands in for one.

Facts (each checked by tests/test_llvm_mx.py against an outside authority):
- CBSZ (A) / BLGP (B) format codes of the f8f6f4 MFMAs: 0 fp8 E4M3, 1 bf8 E5M2, 2 fp6 E2M3, 3 bf6 E3M2, 4 fp4
  E2M1, and each operand is 32 elements per lane in bits-per-element dwords (8, 8, 6, 6, 4): CDNA 4 ISA guide,
  matrix-core chapter "V_MFMA_*_F8F6F4"; LLVM 22 IntrinsicsAMDGPU.td (llvm.amdgcn.mfma.scale.f32.*.f8f6f4, cbsz/blgp
  operands); llvm-mc-22 -mcpu=gfx950 refuses another tuple size ("wrong register tuple size for cbsz value").
- Shapes: V_MFMA_SCALE_F32_16X16X128_F8F6F4 and V_MFMA_SCALE_F32_32X32X64_F8F6F4 (names and operands from the
  gfx950 spec; one E8M0 scale per 32 K elements, so a 16x16x128 step spans 4 scale blocks, a 32x32x64 step 2).
- Weight-only: the gfx950 bf16/f16 MFMAs with K = 32 per block (V_MFMA_F32_16X16X32_BF16 / _F16), one scale block
  per MFMA.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.mfma import WAVE64
from jitgemm.isa.model import Spec
from jitgemm.isa.targets import TargetProfile

from ..dtypes import DType
from ..gemm_ir import SCALE_BLOCK, GemmConfig, GemmProblem, IRError
from ..gemm_plan import log2_exact
from ..kernel_abi import grid_formula
from ..mfma_catalog import Mfma, mfma_catalog

# f8f6f4 element formats: CBSZ/BLGP code (CDNA 4 ISA guide, matrix-core chapter; LLVM IntrinsicsAMDGPU.td)
F8F6F4_CODES = {"fp8_e4m3": 0, "fp8_e5m2": 1, "fp6_e2m3": 2, "fp6_e3m2": 3, "fp4": 4}
ELEMENTS_PER_LANE = 32          # every f8f6f4 operand holds 32 elements per lane
SCALED_MFMAS = {16: "V_MFMA_SCALE_F32_16X16X128_F8F6F4", 32: "V_MFMA_SCALE_F32_32X32X64_F8F6F4"}
SHUFFLED_STEP = 256             # K per iteration with a shuffled scale layout: one dword = 2 K steps x 2 row blocks
PLAIN_STEP = 128


@dataclass(frozen=True)
class ScaledMfma:
    """A block-scaled f8f6f4 MFMA as the lowering uses it: shape, per-side format code and register count."""

    name: str
    m: int
    n: int
    k: int
    a: DType
    b: DType
    acc_regs: int

    @property
    def a_regs(self) -> int:
        return f8f6f4_registers(self.a)

    @property
    def b_regs(self) -> int:
        return f8f6f4_registers(self.b)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


def f8f6f4_code(dt: DType) -> int:
    """The CBSZ/BLGP code selecting `dt` in an f8f6f4 MFMA; IRError naming the accepted types otherwise."""
    if dt.name not in F8F6F4_CODES:
        raise IRError(f"{dt.name} is not an f8f6f4 MFMA format; accepted: {', '.join(F8F6F4_CODES)}")
    return F8F6F4_CODES[dt.name]


def f8f6f4_registers(dt: DType) -> int:
    """Dwords per lane of an f8f6f4 operand of `dt`: 32 packed elements."""
    f8f6f4_code(dt)
    return ELEMENTS_PER_LANE * dt.bits // 32


@dataclass(frozen=True)
class MxPlan:
    """The plan of one MX (or weight-only) kernel of the LLVM generator; field names follow `GemmPlan`."""

    problem: GemmProblem
    config: GemmConfig
    mfma: ScaledMfma | Mfma
    blocks_m: int
    blocks_n: int
    workgroup_size: int
    agprs: int
    grid: tuple[str, str, str]
    step_k: int                   # K per loop iteration (depth_k)
    lds_bytes: int = 0            # operands go global -> registers
    buffer_bytes: int = 0

    @property
    def weight_only(self) -> bool:
        return self.problem.weight_only

    @property
    def substeps(self) -> int:
        return self.step_k // self.mfma.k


def _shape_of(name: str) -> int:
    for m, n in SCALED_MFMAS.items():
        if n == name:
            return m
    raise IRError(f"mfma={name}: the MX path of the LLVM generator uses {', '.join(SCALED_MFMAS.values())}")


def weight_only_mfma(spec: Spec, a: DType) -> Mfma:
    """The gfx950 MFMA of the weight-only path: 16x16 with K = 32 (one scale block per MFMA) for A's dtype."""
    for x in mfma_catalog(spec):
        if (x.m, x.n, x.k) == (16, 16, SCALE_BLOCK) and x.a == a and x.b == a:
            return x
    raise IRError(f"the spec has no 16x16x{SCALE_BLOCK} {a.name} MFMA for the weight-only path (gfx950 has them)")


def default_mx_config(problem: GemmProblem, spec: Spec) -> GemmConfig:
    """Four waves of 32x32 (2x2 blocks of 16x16x128), K 128 per iteration (256 with shuffled scales), the next
    iteration's operands in flight. Weight-only: the same tile on the 16x16x32 bf16/f16 MFMA."""
    p = problem
    if p.weight_only:
        return GemmConfig(64, 64, PLAIN_STEP, 2, 2, weight_only_mfma(spec, p.a).name, prefetch=2)
    shuffled = "shuffled" in (p.a_scale, p.b_scale)
    return GemmConfig(64, 64, SHUFFLED_STEP if shuffled else PLAIN_STEP, 2, 2, SCALED_MFMAS[16], prefetch=2)


def plan_mx(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> MxPlan:
    """Check `config` for an MX / weight-only problem and plan it; IRError naming the field that does not fit."""
    p, c = problem, config
    if not target.target.startswith("gfx95"):
        raise IRError(f"block-scaled and sub-byte GEMMs need gfx950's f8f6f4 MFMAs; target is {target.target}")
    if spec.find_instruction(c.mfma) is None:
        raise IRError(f"mfma={c.mfma}: not an instruction of the {target.target} spec")
    for what, value in (("tile_m", c.tile_m), ("tile_n", c.tile_n), ("depth_k", c.depth_k),
                        ("waves_m", c.waves_m), ("waves_n", c.waves_n)):
        log2_exact(value, what)
    if c.prefetch not in (1, 2) or c.lds_buffers != 1 or c.unroll != 1 or c.lds_pad:
        raise IRError("the LLVM MX path loads operands straight into registers: prefetch 1 or 2, lds_buffers=1, "
                      "unroll=1, lds_pad=0")
    if c.vec_a != 1 or c.vec_b != 1:
        raise IRError("vec_a/vec_b: the LLVM MX path loads each lane's whole MFMA operand; leave them at 1")
    if p.weight_only:
        mfma: ScaledMfma | Mfma = weight_only_mfma(spec, p.a)
        if mfma.name != c.mfma:
            raise IRError(f"mfma={c.mfma}: the weight-only path uses {mfma.name}")
        if p.b_preshuffle != "none":
            raise IRError("b_preshuffle=16x16: the 16x16 shuffle matches the f8f6f4 MFMA's lanes, not the weight-only "
                          "16x16x32 MFMA's; the LLVM weight-only path takes plain weights (b_preshuffle=none)")
    else:
        size = _shape_of(c.mfma)
        k = 128 if size == 16 else 64
        for op in ("a", "b"):
            f8f6f4_code(getattr(p, op))
        mfma = ScaledMfma(c.mfma, size, size, k, p.a, p.b, size * size // WAVE64)
    wave_m, wave_n = c.wave_tile
    if c.tile_m % c.waves_m or c.tile_n % c.waves_n or wave_m % mfma.m or wave_n % mfma.n:
        raise IRError(f"wave tile {wave_m}x{wave_n} is not a multiple of the MFMA shape {mfma.m}x{mfma.n}")
    if c.depth_k % mfma.k:
        raise IRError(f"depth_k={c.depth_k} is not a multiple of the MFMA's K={mfma.k}")
    if not p.weight_only:
        need = SHUFFLED_STEP if "shuffled" in (p.a_scale, p.b_scale) else PLAIN_STEP
        if c.depth_k % need:
            raise IRError(f"depth_k={c.depth_k}: with {p.a_scale}/{p.b_scale} scales the K step must be a multiple "
                          f"of {need} (a shuffled scale dword holds two 128-K steps; 128 keeps pre-shuffled "
                          "weights' 32-byte groups whole)")
        for op, wave, scale in (("a", wave_m, p.a_scale), ("b", wave_n, p.b_scale)):
            if scale == "shuffled" and wave % 32:
                raise IRError(f"{op}_scale=shuffled: a wave's {'rows' if op == 'a' else 'columns'} ({wave}) must be "
                              "a multiple of 32 (one shuffled scale dword holds two 16-row blocks)")
    elif c.depth_k % 128:
        raise IRError(f"depth_k={c.depth_k}: the weight-only path steps K by a multiple of 128")
    threads = c.workgroup_size
    if threads > target.max_workgroup_size:
        raise IRError(f"{c.waves_m}x{c.waves_n} waves = {threads} work-items; {target.target} allows "
                      f"{target.max_workgroup_size}")
    blocks_m, blocks_n = wave_m // mfma.m, wave_n // mfma.n
    agprs = blocks_m * blocks_n * mfma.acc_regs
    if agprs > target.agprs:
        raise IRError(f"wave tile {wave_m}x{wave_n} needs {agprs} accumulator registers; {target.target} has "
                      f"{target.agprs} AGPRs")
    return MxPlan(p.kernel_class(), c, mfma, blocks_m, blocks_n, threads, agprs, grid_formula(c), c.depth_k)
