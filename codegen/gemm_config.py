"""Choosing a config: the default for a problem (tile, waves, MFMA, vectors, LDS padding) within the target's
register, AGPR and LDS budgets, and the scalar-load fallback that fits them; each candidate is checked by the
plan (codegen/gemm_plan.py: `validate_config`), and a generator's own limits by its `accept`.

LDS bank model (used to choose `lds_pad`): gfx942's LDS has 32 banks of 4 bytes and serves 128 bytes per
clock; a wave's access is split into phases of 128 / width lanes (8 lanes for 16-byte accesses, 16 for
8-byte, 32 for 4-byte and narrower), and lanes of one phase that touch different dwords of one bank are
served one after the other. Sources: AMD's ROCm blog "Avoiding LDS Bank Conflicts on AMD GPUs Using CK-Tile
Framework" (MI-series LDS: 32 banks, 4 bytes each) and the Composable Kernel documentation "Understanding AMD
GPU LDS and Bank Conflicts" (32 or 64 banks depending on the architecture; ds_write_b128 in 8 phases of 8
lanes). 64 banks is CDNA 4 (gfx950, MI355X), not gfx942. A target profile may say `lds_banks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from jitgemm.isa.spec.mfma import WAVE64
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .gemm_ir import BLOCK_SCALE_K, GemmConfig, GemmProblem, IRError
from .gemm_plan import GemmPlan, fragment_plan, mfma_named, plan_staging, remembered, validate_config
from .gemm_plan_mx import SHUFFLE_COLS, weight_only_mfmas
from .mfma_catalog import Mfma, f8f6f4_mfmas_for, mfmas_for

LDS_BANKS = 32          # gfx942 (see the module docstring)
LDS_BANK_BYTES = 4


# --- LDS bank conflicts ----------------------------------------------------------------------------------------
def bank_cycles(addresses: list[int], width: int, banks: int = LDS_BANKS) -> int:
    """Clocks one wave's LDS access takes: per phase, the most distinct dwords any bank must serve."""
    per_phase = max(1, banks * LDS_BANK_BYTES // max(width, LDS_BANK_BYTES))
    total = 0
    for start in range(0, len(addresses), per_phase):
        hits: dict[int, set[int]] = {}
        for addr in addresses[start:start + per_phase]:
            for off in range(0, max(width, 1), LDS_BANK_BYTES):
                dword = (addr + off) // LDS_BANK_BYTES
                hits.setdefault(dword % banks, set()).add(dword)
        total += max(len(v) for v in hits.values())
    return total


def lds_cycles(problem: GemmProblem, config: GemmConfig, mfma: Mfma, banks: int = LDS_BANKS) -> tuple[int, int]:
    """(LDS clocks, LDS instructions) of one wave for one K tile: fragment reads and tile writes as the
    lowering issues them. IRError when the config does not plan."""
    a, b, _ = plan_staging(problem, config, mfma)
    bm, bn, groups = fragment_plan(config, mfma)
    substeps = config.depth_k // mfma.k
    cycles = instructions = 0
    for st, dim, regs, blocks in ((a, mfma.m, mfma.a_regs, bm), (b, mfma.n, mfma.b_regs, bn)):
        kpl = mfma.k * dim // WAVE64
        reads = [(lane % dim) * st.lds_row + (lane // dim) * kpl * st.eb for lane in range(WAVE64)]
        cycles += bank_cycles(reads, regs * 4, banks) * substeps * blocks
        instructions += len(groups) * blocks
        vpr = st.vectors_per_row
        if st.k_is_col:
            for part in range(0, st.load_bytes, st.chunk):
                writes = [(t // vpr) * st.lds_row + (t % vpr) * st.load_bytes + part for t in range(WAVE64)]
                cycles += bank_cycles(writes, st.chunk, banks) * st.slots
        else:
            for e in range(st.vec):
                writes = [((t % vpr) * st.vec + e) * st.lds_row + (t // vpr) * st.pack * st.eb for t in range(WAVE64)]
                cycles += bank_cycles(writes, st.write_bytes, banks) * (st.slots // st.pack)
        instructions += st.lds_writes
    return cycles, instructions


def best_lds_pad(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                 max_pad_bytes: int = 64, whole_vectors: bool = True) -> int:
    """The padding (elements per LDS row) with the fewest LDS clocks for fragment reads and tile writes
    (then fewest LDS instructions, then least LDS) among those the target's LDS holds. `whole_vectors`: only
    rows that keep a K-contiguous vector in one LDS write, as the LLVM generator needs (codegen/llvm plans
    whole-vector writes), so a config chosen here compiles with either generator. Without it, the 8-byte-
    aligned rows that make 8-byte fragment reads conflict-free are allowed too (the direct generator then
    writes 16-byte vectors in two halves)."""
    cls = problem.kernel_class()
    key = (cls, config, max_pad_bytes, whole_vectors)
    return remembered("lds_pad", key, spec, target,  # type: ignore[return-value]
                      lambda: _best_lds_pad(cls, config, spec, target, max_pad_bytes, whole_vectors))


def _best_lds_pad(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                  max_pad_bytes: int, whole_vectors: bool) -> int:
    mfma = mfma_named(spec, config.mfma)
    banks = target.lds_banks or LDS_BANKS
    eb = max(problem.a.bytes, problem.b.bytes)
    best = None
    for pad in range(0, max_pad_bytes // eb + 1):
        cfg = replace(config, lds_pad=pad)
        try:
            plan = validate_config(problem, cfg, spec, target)
            stages = (plan.a, plan.b)
            if whole_vectors and any(st.k_is_col and st.chunk != st.load_bytes for st in stages):
                continue
            cycles, instructions = lds_cycles(problem, cfg, mfma, banks)
        except IRError:
            continue
        key = (cycles, instructions, pad)
        if best is None or key < best:
            best = key
    if best is None:
        raise IRError(f"no lds_pad up to {max_pad_bytes} bytes fits {target.target} for this config")
    return best[2]


# --- defaults -------------------------------------------------------------------------------------------------
def widest_vectors(problem: GemmProblem, config: GemmConfig) -> GemmConfig:
    """The widest global loads the problem's shapes and leading dimensions allow (up to 16 bytes)."""
    p = problem
    lead = p.lead
    choices = {}
    for op, eb, transposed in (("a", p.a.bytes, p.a_transposed), ("b", p.b.bytes, p.b_transposed)):
        contiguous = {("a", False): p.k, ("a", True): p.m, ("b", False): p.n, ("b", True): p.k}[(op, transposed)]
        tile_contig = {("a", False): config.depth_k, ("a", True): config.tile_m,
                       ("b", False): config.tile_n, ("b", True): config.depth_k}[(op, transposed)]
        vec = 1
        for cand in (16, 8, 4, 2):
            if cand * eb <= 16 and contiguous % cand == 0 and lead[op] % cand == 0 and tile_contig % cand == 0:
                vec = cand
                break
        choices[op] = vec
    return replace(config, vec_a=choices["a"], vec_b=choices["b"])


Accept = Callable[[GemmPlan], object]
"""A generator's own limits on top of the shared plan: raises IRError for a plan it cannot lower."""


def _accepted(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
              accept: Accept | None) -> GemmPlan:
    plan = validate_config(problem, config, spec, target)
    if accept is not None:
        accept(plan)
    return plan


def fit_vectors(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                accept: Accept | None = None) -> GemmConfig:
    """Halve vector widths until the config plans (the tiles split evenly over the work-items, the registers
    fit) and `accept` takes the plan."""
    cfg = config
    while True:
        try:
            _accepted(problem, cfg, spec, target, accept)
            return cfg
        except IRError:
            if cfg.vec_a == 1 and cfg.vec_b == 1:
                raise
            cfg = replace(cfg, vec_a=max(1, cfg.vec_a // 2), vec_b=max(1, cfg.vec_b // 2))


def _tiles(problem: GemmProblem, mfma: Mfma, small: bool) -> list[tuple[int, int, int, int]]:
    """Candidate (tile_m, tile_n, waves_m, waves_n), largest first."""
    if small:
        return [(mfma.m, mfma.n, 1, 1)]
    out = [(mfma.m * 8, mfma.n * 8, 2, 2), (mfma.m * 8, mfma.n * 4, 2, 2), (mfma.m * 4, mfma.n * 8, 2, 2),
           (mfma.m * 4, mfma.n * 4, 2, 2), (mfma.m * 2, mfma.n * 2, 2, 2), (mfma.m, mfma.n, 1, 1)]
    if problem.n > problem.m:
        out[1], out[2] = out[2], out[1]
    return out


def default_config(problem: GemmProblem, spec: Spec, target: TargetProfile, accept: Accept | None = None) -> GemmConfig:
    """A config that fits the target (and that `accept`, the generator's own check, takes): the largest MFMA
    for the dtypes; the largest macro tile (up to 256x256 with 4 waves) that still gives every compute unit a
    workgroup (about 3/4 of them, as large tiles run faster per CU), else 128x128 for problems of at least four
    MFMA blocks per side and smaller tiles below; 64 bytes of K per step, the next tile's loads in flight
    (prefetch=2; it costs no registers in this lowering), the widest vector loads the problem allows and the
    LDS padding with the fewest bank conflicts. A tile whose staging does not fit the register budget gives way
    to the next smaller one. One LDS buffer: a 256x256 tile has no room for a padded second one, and smaller
    tiles keep LDS for two or three workgroups per CU, which hide each other's barriers (lds_buffers=2 is the
    explicit alternative)."""
    if problem.scaled:
        return mx_default_config(problem, spec, target, accept)
    options = mfmas_for(spec, problem.a, problem.b)
    if not options:
        raise IRError(f"the spec ({spec.architecture.name}) has no MFMA for {problem.a.name}x{problem.b.name}")
    small = problem.m <= 32 and problem.n <= 32
    units = target.compute_units
    reasons = []
    # the largest K per shape first: gfx950's doubled-K bf16/f16/i8 MFMAs (16x16x32, 32x32x16, 16x16x64, 32x32x32)
    # take as many cycles as the ones they double (llvm-mca-22 -mcpu=gfx950: 4 / 8 cycles of throughput each,
    # LLVM's SISchedule.td), so they halve the MFMAs of any K; gfx942 has one MFMA per shape and dtype
    for mfma in sorted(options, key=lambda x: (x.m * x.n, -x.k) if small else (-x.m * x.n, -x.k)):
        big = problem.m >= 4 * mfma.m and problem.n >= 4 * mfma.n
        for tm, tn, wm, wn in _tiles(problem, mfma, small):
            if tm > 4 * mfma.m or tn > 4 * mfma.n:        # beyond 128x128: only with work for every CU
                groups = -(-problem.m // tm) * -(-problem.n // tn) * problem.batch
                if not big or groups * 4 < units * 3:
                    continue
            elif (tm, tn) == (4 * mfma.m, 4 * mfma.n) and not big:
                continue
            elif (tm, tn) == (2 * mfma.m, 2 * mfma.n) and small:
                continue
            depth = max(mfma.k, 64 // problem.a.bytes)
            depth -= depth % mfma.k
            if problem.scale_mode == "block":     # one K tile per 128-element scale block (gemm_plan)
                depth = BLOCK_SCALE_K
            cfg = GemmConfig(tm, tn, depth, wm, wn, mfma.name, lds_pad=0, prefetch=2)
            try:
                cfg = fit_vectors(problem, widest_vectors(problem, cfg), spec, target, accept)
                cfg = replace(cfg, lds_pad=best_lds_pad(problem, cfg, spec, target))
                _accepted(problem, cfg, spec, target, accept)
                return cfg
            except IRError as exc:
                reasons.append(f"{tm}x{tn} {mfma.name}: {exc}")
                continue
    raise IRError(f"no default config fits {target.target} for {problem.a.name}x{problem.b.name}: "
                  + "; ".join(reasons[-3:]))


def scalar_config(problem: GemmProblem, base: GemmConfig, spec: Spec, target: TargetProfile,
                  accept: Accept | None = None) -> GemmConfig:
    """The fallback of `base`: scalar loads (legal for any shape, leading dimension and alignment), in the
    largest of base's tile and the smaller standard tiles whose scalar staging fits the register budget (a
    256x256 fp8 tile needs about 346 VGPRs with one-byte loads; gfx942 has 256)."""
    mfma = mfma_named(spec, base.mfma)
    tiles = [(base.tile_m, base.tile_n, base.waves_m, base.waves_n)]
    tiles += [t for t in _tiles(problem, mfma, False) if t[0] * t[1] < base.tile_m * base.tile_n]
    last: IRError | None = None
    for tm, tn, wm, wn in tiles:
        cfg = replace(base, tile_m=tm, tile_n=tn, waves_m=wm, waves_n=wn, vec_a=1, vec_b=1)
        for pad in dict.fromkeys((cfg.lds_pad, 0)):
            try:
                _accepted(problem, replace(cfg, lds_pad=pad), spec, target, accept)
                return replace(cfg, lds_pad=pad)
            except IRError as exc:
                last = exc
    raise IRError(f"no scalar-load config of {base.mfma} fits {target.target}: {last}")


def mx_default_config(problem: GemmProblem, spec: Spec, target: TargetProfile,
                      accept: Accept | None = None) -> GemmConfig:
    """The default of a block-scaled or sub-byte problem (codegen/gemm_plan_mx.py): the 16x16x128 f8f6f4 MFMA
    first (its scale operand takes the pre-shuffled layout a dword at a time), then 32x32x64; 2x2 waves of the
    largest wave tile (64x64 down to one block) whose two fragment sets fit the VGPRs (one set when two do not),
    with work for about 3/4 of the compute units when the problem has it; depth_k 256 with shuffled scales (one
    column group of their layout per tile), else 128 (fewer fragment registers, a shorter K tail)."""
    p = problem
    scaled = p.a_scale != "none" or p.b_scale != "none"
    if p.weight_only:   # B dequantized in registers for A's 16x16x32 MFMA (codegen/gemm_plan_mx.py)
        options = weight_only_mfmas(spec, p.a)
    else:
        options = f8f6f4_mfmas_for(spec, p.a, p.b, scaled)
    if not options:
        raise IRError(f"the spec ({spec.architecture.name}) has no f8f6f4 MFMA for {p.a.name}x{p.b.name}"
                      f"{' with block scales' if scaled else ''} (gfx950 has them)")
    shuffled = "shuffled" in (p.a_scale, p.b_scale)
    reasons = []
    for mfma in options:
        depth = max(128, SHUFFLE_COLS * p.scale_block if shuffled else 128)
        waves = (2, 2) if p.m > 2 * mfma.m and p.n > 2 * mfma.n else (1, 1)
        for wm, wn in ((4, 4), (4, 2), (2, 4), (2, 2), (2, 1), (1, 2), (1, 1)):
            tm, tn = wm * mfma.m * waves[0], wn * mfma.n * waves[1]
            if (tm > 2 * p.m or tn > 2 * p.n) and (wm, wn) != (1, 1):
                continue
            groups = -(-p.m // tm) * -(-p.n // tn) * p.batch
            if (wm, wn) != (1, 1) and wm * wn > 4 and groups * 4 < target.compute_units * 3:
                continue
            for prefetch in (2, 1):
                cfg = GemmConfig(tm, tn, depth, waves[0], waves[1], mfma.name, prefetch=prefetch)
                try:
                    _accepted(p, cfg, spec, target, accept)
                    return cfg
                except IRError as exc:
                    reasons.append(f"{tm}x{tn} {mfma.name}: {exc}")
    raise IRError(f"no default config fits {target.target} for {p.a.name}x{p.b.name}: " + "; ".join(reasons[-3:]))
