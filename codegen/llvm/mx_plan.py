"""The LLVM generator's own limits on the shared plan of a block-scaled (MX) or weight-only GEMM on gfx950.

The plan itself is the one both generators follow: `validate_config` (codegen/gemm_plan.py) returns a `GemmPlan`
whose `mx` part (codegen/gemm_plan_mx.py) holds the MFMA from the spec-derived f8f6f4 catalog (per-operand
CBSZ/BLGP codes and register counts: codegen/mfma_catalog.py), the MFMA blocks per wave, the fragment sets and the
scale layouts; its default config is gemm_config.mx_default_config with this generator's `accept`. What stays here
is only what this lowering (mx_builder.py, mx_weight_only.py) needs beyond that plan.

Why the LLVM lowering has limits of its own: every lane loads its MFMA operands straight from global memory into
registers as whole runs (for the f8f6f4 MFMAs one or two runs of 16/32 consecutive K elements of one row: 16-byte
loads, no LDS, no transposition), one K step per loop iteration of `depth_k` elements, unrolled twice over two
register sets with prefetch=2, and LLVM schedules and allocates the rest. So:
- vec_a/vec_b stay 1 and unroll 1 (a lane's whole operand is one load run; the loop is unrolled by prefetch);
- depth_k is a multiple of 128 (`STEP_K`): 128 keeps the pre-shuffled weights' 32-byte groups whole for every
  format and is the weight-only path's 4 MFMAs of one scale block each;
- shuffled scales are read one dword per lane and MFMA block pair: a wave's rows (A) / columns (B) are a multiple
  of 32, the two 16-row blocks of one shuffled dword (the direct lowering falls back to byte reads instead);
- weight-only B is in the plain layout: the 16x16 weight shuffle matches the f8f6f4 MFMA's lanes, not the
  16x16x32 16-bit MFMA's;
- the weight-only loop fits the VGPRs by this lowering's own count (`weight_only_vgprs`): it keeps the fp32
  accumulators in VGPRs (each MFMA's partial product is scaled into them by one fma per register), which the shared
  plan's bound (the direct lowering's, accumulators in AGPRs) does not count. Above the budget LLVM 22 moves values
  to AGPRs inside the loop or spills to scratch (measured on gfx950 for every format and scale layout; the default
  configs that stay inside it compile without scratch: tests/codegen/test_llvm_mx.py).
"""

from __future__ import annotations

from ..gemm_ir import IRError
from ..gemm_plan import GemmPlan
from ..gemm_plan_mx import SHUFFLE_ROWS

STEP_K = 128      # depth_k is a multiple of this (see the module docstring)
WEIGHT_ONLY_RESERVE = 32   # VGPRs of the weight-only loop outside `weight_only_vgprs`: lane addresses, the converted
                           # 16-bit B operands, the f32 scales, loop and tail temporaries
CODES_PER_MFMA = 8         # B codes per lane of one 16x16x32 MFMA (8 consecutive K)


def weight_only_vgprs(plan: GemmPlan) -> int:
    """The weight-only loop's VGPRs beyond `WEIGHT_ONLY_RESERVE`: the accumulators, and per register set
    (prefetch) and 32-K MFMA step each A block's operand and each B block's raw codes and scale byte."""
    c, m = plan.config, plan.mfma
    b_words = -(-CODES_PER_MFMA * plan.problem.b.bits // 32)
    per_step = plan.blocks_m * m.a_regs + plan.blocks_n * (b_words + 1)
    return plan.blocks_m * plan.blocks_n * m.acc_regs + c.prefetch * (c.depth_k // m.k) * per_step


def accept_mx(plan: GemmPlan) -> None:
    """IRError naming the config or problem field the LLVM MX lowering cannot take on top of the shared plan."""
    p, c = plan.problem, plan.config
    if c.unroll != 1:
        raise IRError(f"unroll={c.unroll}: the LLVM MX path unrolls its K loop by prefetch (two register sets); "
                      "use unroll=1")
    if c.vec_a != 1 or c.vec_b != 1:
        raise IRError("vec_a/vec_b: the LLVM MX path loads each lane's whole MFMA operand; leave them at 1")
    if c.depth_k % STEP_K:
        raise IRError(f"depth_k={c.depth_k}: the LLVM MX path steps K by a multiple of {STEP_K} (pre-shuffled "
                      "weights' 32-byte groups whole; four 16x16x32 MFMAs of one scale block in weight-only)")
    if p.weight_only:
        if p.b_preshuffle != "none":
            raise IRError("b_preshuffle=16x16: the 16x16 shuffle matches the f8f6f4 MFMA's lanes, not the weight-only "
                          "16x16x32 MFMA's; the LLVM weight-only path takes plain weights (b_preshuffle=none)")
        need, budget = weight_only_vgprs(plan), plan.arch_vgprs - WEIGHT_ONLY_RESERVE
        if need > budget:
            raise IRError(f"config needs about {need + WEIGHT_ONLY_RESERVE} VGPRs in the LLVM weight-only loop "
                          f"({c.prefetch} register set(s) of {c.depth_k // plan.mfma.k} MFMA steps, accumulators in "
                          f"VGPRs); the target has {plan.arch_vgprs}: use prefetch=1, a smaller wave tile or depth_k")
        return
    wave_m, wave_n = c.wave_tile
    for op, wave, scale in (("a", wave_m, p.a_scale), ("b", wave_n, p.b_scale)):
        if scale == "shuffled" and wave % SHUFFLE_ROWS:
            raise IRError(f"{op}_scale=shuffled: a wave's {'rows' if op == 'a' else 'columns'} ({wave}) must be "
                          f"a multiple of {SHUFFLE_ROWS} (one shuffled scale dword holds two 16-row blocks)")
