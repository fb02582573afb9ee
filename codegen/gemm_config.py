"""Checking a tiling config against a problem, the target's limits and the spec's MFMAs, and choosing a
sensible default. The resource model here is the direct generator's (codegen/gemm_asm.py): accumulators live
in AGPRs; A/B fragments, global-load staging and addresses in VGPRs; A and B tiles in LDS with K contiguous
(+ padding), one or two buffers. `resources()` is an upper bound of what the lowering allocates
(tests/test_gemm_config.py checks it against the lowering for a sweep of configs).

LDS bank model (used to choose `lds_pad`): gfx942's LDS has 32 banks of 4 bytes and serves 128 bytes per
clock; a wave's access is split into phases of 128 / width lanes (8 lanes for 16-byte accesses, 16 for
8-byte, 32 for 4-byte and narrower), and lanes of one phase that touch different dwords of one bank are
served one after the other. Sources: AMD's ROCm blog "Avoiding LDS Bank Conflicts on AMD GPUs Using CK-Tile
Framework" (MI-series LDS: 32 banks, 4 bytes each) and the Composable Kernel documentation "Understanding AMD
GPU LDS and Bank Conflicts" (32 or 64 banks depending on the architecture; ds_write_b128 in 8 phases of 8
lanes). 64 banks is CDNA 4 (gfx950, MI355X), not gfx942. A target profile may say `lds_banks`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from jitgemm.isa.model import Spec
from jitgemm.isa.targets import TargetProfile

from .gemm_ir import GemmConfig, GemmProblem, IRError
from .mfma_catalog import Mfma, mfma_catalog, mfmas_for

WAVE = 64
LDS_BANKS = 32          # gfx942 (see the module docstring)
LDS_BANK_BYTES = 4
# VGPRs the lowering keeps outside the staging/fragment/address groups counted per config below:
# v0 (work-item id), the lane, the wave index, the out-of-range offset constant.
FIXED_VGPRS = 4
SETUP_TEMPS = 6         # address arithmetic before the loop (reused afterwards)
EPILOGUE_VGPRS = 9      # row/col bases, row, col, value, offset, two temporaries, the bf16 NaN constant


@dataclass(frozen=True)
class Resources:
    lds_bytes: int
    agprs: int
    vgprs: int
    workgroup_size: int
    mfma: Mfma


@dataclass(frozen=True)
class Staging:
    """How one input matrix (A or B) moves global -> VGPRs -> LDS. Stored tile rows x cols (cols contiguous in
    memory); LDS keeps K contiguous, one row of `lds_row` bytes per M (A) or N (B) index."""

    name: str          # "a" or "b"
    eb: int            # bytes per element
    vec: int           # elements per global load
    rows_t: int
    cols_t: int
    k_is_col: bool     # K runs along the contiguous dimension (the tile is copied as it is)
    lds_base: int
    lds_row: int
    threads: int
    pack: int          # K rows one work-item packs into one LDS write (transposed operands), else 1
    chunk: int         # bytes per LDS write of a K-contiguous vector (the vector, or 8 when rows are not
                       # 16-byte aligned)

    @property
    def load_bytes(self) -> int:
        return self.vec * self.eb

    @property
    def vectors_per_row(self) -> int:
        return self.cols_t // self.vec

    @property
    def slots(self) -> int:
        """Global loads per work-item and tile."""
        return self.rows_t * self.cols_t // self.vec // self.threads

    @property
    def data_regs(self) -> int:
        return max(1, self.load_bytes // 4)

    @property
    def write_bytes(self) -> int:
        return self.chunk if self.k_is_col else self.pack * self.eb

    @property
    def lds_writes(self) -> int:
        """LDS write instructions per work-item and tile."""
        if self.k_is_col:
            return self.slots * (self.load_bytes // self.chunk)
        return self.slots // self.pack * self.vec


def _pow2(x: int) -> bool:
    return x >= 1 and not x & (x - 1)


def _pack_rows(eb: int, vec: int, rows_t: int, slots: int, lds_row: int) -> int:
    """K rows a work-item gathers per LDS write of a transposed operand: as many as its loads hold (up to a
    16-byte write), when the LDS row keeps that write aligned. 32-bit elements are written one by one."""
    if eb >= 4:
        return 1
    best = 1
    r = 2
    while r * eb <= 16 and r <= slots:
        whole_words = eb > 1 or r == 2 or vec % 4 == 0        # byte packs of 4+ rows transpose whole words
        if slots % r == 0 and rows_t % r == 0 and lds_row % (r * eb) == 0 and whole_words:
            best = r
        r *= 2
    return best


def _chunk(load_bytes: int, lds_row: int) -> int:
    chunk = load_bytes
    while chunk > 4 and lds_row % chunk:
        chunk //= 2
    return chunk


def plan_staging(problem: GemmProblem, config: GemmConfig, mfma: Mfma) -> tuple[Staging, Staging, int]:
    """(A staging, B staging, bytes of one LDS buffer); IRError naming the config field that does not fit."""
    p, c = problem, config
    threads = c.workgroup_size
    for what, value in (("tile_m", c.tile_m), ("tile_n", c.tile_n), ("depth_k", c.depth_k),
                        ("waves_m", c.waves_m), ("waves_n", c.waves_n), ("vec_a", c.vec_a), ("vec_b", c.vec_b)):
        if not _pow2(value):
            raise IRError(f"{what}={value} must be a power of two for this generator")
    out = []
    base = 0
    for name, eb, vec, transposed, fixed, frag in (("a", p.a.bytes, c.vec_a, p.a_transposed, c.tile_m, mfma.a_regs),
                                                   ("b", p.b.bytes, c.vec_b, not p.b_transposed, c.tile_n,
                                                    mfma.b_regs)):
        rows_t, cols_t = (c.depth_k, fixed) if transposed else (fixed, c.depth_k)
        lds_row = (c.depth_k + c.lds_pad) * eb
        load_bytes = vec * eb
        if load_bytes not in (1, 2, 4, 8, 16):
            raise IRError(f"vec_{name}={vec} gives {load_bytes}-byte loads; accepted: 1, 2, 4, 8 or 16 bytes")
        if cols_t % vec:
            raise IRError(f"vec_{name}={vec} does not divide the tile's contiguous extent {cols_t}")
        if (rows_t * cols_t // vec) % threads:
            raise IRError(f"the {name.upper()} tile ({rows_t}x{cols_t}, vec {vec}) does not split evenly over "
                          f"{threads} work-items")
        if lds_row % (frag * 4):
            raise IRError(f"LDS row of {name.upper()} is {lds_row} bytes (depth_k + lds_pad elements); it must be a "
                          f"multiple of {frag * 4}: choose lds_pad accordingly")
        slots = rows_t * cols_t // vec // threads
        k_is_col = not transposed
        pack = 1 if k_is_col else _pack_rows(eb, vec, rows_t, slots, lds_row)
        chunk = _chunk(load_bytes, lds_row) if k_is_col else eb
        out.append(Staging(name, eb, vec, rows_t, cols_t, k_is_col, base, lds_row, threads, pack, chunk))
        base += fixed * lds_row
    if mfma.acc.kind == "int" and p.d.name != "int32":
        raise IRError("int8 GEMM writes int32")
    buffer = -(-base // 16) * 16
    return out[0], out[1], buffer


def _mfma_named(spec: Spec, name: str) -> Mfma:
    inst = spec.find_instruction(name)
    for x in mfma_catalog(spec):
        if inst is not None and x.name == inst.name:
            return x
    raise IRError(f"mfma={name}: not an MFMA of this spec that the generator can use; available: "
                  + ", ".join(x.name for x in mfma_catalog(spec)))


def fragment_plan(config: GemmConfig, mfma: Mfma) -> tuple[int, int, list[tuple[int, ...]]]:
    """(blocks_m, blocks_n, groups of K substeps read together): consecutive substeps are read in pairs
    (one ds_read2 per block and pair)."""
    wave_m, wave_n = config.wave_tile
    steps = list(range(config.depth_k // mfma.k))
    groups = [tuple(steps[i:i + 2]) for i in range(0, len(steps), 2)]
    return wave_m // mfma.m, wave_n // mfma.n, groups


def _stage_vgprs(st: Staging) -> int:
    regs = st.slots * st.data_regs + st.slots + 2          # data, per-slot offsets, k index, LDS write base
    if not st.k_is_col:
        if st.pack > 1:
            regs += st.vec * max(1, st.pack * st.eb // 4) + (4 if st.eb == 1 and st.pack >= 4 else 0)
        elif st.eb < 4:
            regs += 1                                        # shifted element
    return regs


def resources(problem: GemmProblem, config: GemmConfig, spec: Spec) -> Resources:
    mfma = _mfma_named(spec, config.mfma)
    wave_m, wave_n = config.wave_tile
    blocks = (wave_m // mfma.m) * (wave_n // mfma.n) if wave_m >= mfma.m and wave_n >= mfma.n else 0
    row = config.depth_k + config.lds_pad
    buffer = -(-(config.tile_m * row * problem.a.bytes + config.tile_n * row * problem.b.bytes) // 16) * 16
    lds = buffer * max(1, config.lds_buffers)
    threads = config.workgroup_size
    vgprs = FIXED_VGPRS + EPILOGUE_VGPRS + SETUP_TEMPS
    try:
        a, b, _ = plan_staging(problem, config, mfma)
        bm, bn, groups = fragment_plan(config, mfma)
        per_group = max(len(g) for g in groups) if groups else 1
        sets = 2 if len(groups) > 1 else 1
        loop = (_stage_vgprs(a) + _stage_vgprs(b) + 1                        # + guarded-load address
                + sets * per_group * (bm * mfma.a_regs + bn * mfma.b_regs)     # fragments
                + max(1, config.lds_buffers) * (bm + bn) + 2)                  # read bases, lane bases
        vgprs = FIXED_VGPRS + max(loop + SETUP_TEMPS, EPILOGUE_VGPRS)
    except IRError:
        pass    # validate_config reports the shape error; the lowering repeats it with details
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
    if config.lds_buffers not in (1, 2):
        raise IRError(f"lds_buffers={config.lds_buffers}; accepted: 1 (one LDS tile) or 2 (double buffer: the next "
                      f"tile is written while this one is multiplied)")
    if config.unroll < 1 or config.lds_pad < 0:
        raise IRError("unroll must be >= 1 and lds_pad >= 0")
    for name, dt, regs in (("A", problem.a, mfma.a_regs), ("B", problem.b, mfma.b_regs)):
        row = (config.depth_k + config.lds_pad) * dt.bytes
        if row % (regs * 4):       # fragments are read whole (ds_read_b64/b32 need natural alignment)
            raise IRError(f"LDS row of {name} is {row} bytes (depth_k + lds_pad elements); it must be a multiple "
                          f"of {regs * 4}: choose lds_pad accordingly")
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
        kpl = mfma.k * dim // WAVE
        reads = [(lane % dim) * st.lds_row + (lane // dim) * kpl * st.eb for lane in range(WAVE)]
        cycles += bank_cycles(reads, regs * 4, banks) * substeps * blocks
        instructions += len(groups) * blocks
        vpr = st.vectors_per_row
        if st.k_is_col:
            for part in range(0, st.load_bytes, st.chunk):
                writes = [(t // vpr) * st.lds_row + (t % vpr) * st.load_bytes + part for t in range(WAVE)]
                cycles += bank_cycles(writes, st.chunk, banks) * st.slots
        else:
            for e in range(st.vec):
                writes = [((t % vpr) * st.vec + e) * st.lds_row + (t // vpr) * st.pack * st.eb for t in range(WAVE)]
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
    mfma = _mfma_named(spec, config.mfma)
    banks = int(target.get("lds_banks", LDS_BANKS) or LDS_BANKS)
    eb = max(problem.a.bytes, problem.b.bytes)
    best = None
    for pad in range(0, max_pad_bytes // eb + 1):
        cfg = replace(config, lds_pad=pad)
        try:
            validate_config(problem, cfg, spec, target)
            stages = plan_staging(problem, cfg, mfma)[:2]
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


def fit_vectors(problem: GemmProblem, config: GemmConfig, spec: Spec, accept=None) -> GemmConfig:
    """Halve vector widths until the tiles split evenly over the work-items (`accept(config)` raising IRError
    for a config a generator cannot take; default: the staging plan both generators share)."""
    mfma = _mfma_named(spec, config.mfma)
    check = accept or (lambda c: plan_staging(problem, c, mfma))
    cfg = config
    while True:
        try:
            check(cfg)
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


def default_config(problem: GemmProblem, spec: Spec, target: TargetProfile) -> GemmConfig:
    """A config that fits the target: the largest MFMA for the dtypes; the largest macro tile (up to 256x256 with
    4 waves) that still gives every compute unit a workgroup (about 3/4 of them, as large tiles run faster per
    CU), else 128x128 for problems of at least four MFMA blocks per side and smaller tiles below; 64 bytes of K
    per step, the next tile's loads in flight (prefetch=2; it costs no registers in this lowering), the widest
    vector loads the problem allows and the LDS padding with the fewest bank conflicts. One LDS buffer: a
    256x256 tile has no room for a padded second one, and smaller tiles keep LDS for two or three workgroups
    per CU, which hide each other's barriers (lds_buffers=2 is the explicit alternative)."""
    options = mfmas_for(spec, problem.a, problem.b)
    if not options:
        raise IRError(f"the spec ({spec.architecture.name}) has no MFMA for {problem.a.name}x{problem.b.name}")
    small = problem.m <= 32 and problem.n <= 32
    units = int(target.get("compute_units", 304) or 304)
    for mfma in sorted(options, key=lambda x: (x.m * x.n, x.k) if small else (-x.m * x.n, -x.k)):
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
            cfg = GemmConfig(tm, tn, depth, wm, wn, mfma.name, lds_pad=0, prefetch=2)
            try:
                cfg = fit_vectors(problem, widest_vectors(problem, cfg), spec)
                cfg = replace(cfg, lds_pad=best_lds_pad(problem, cfg, spec, target))
                validate_config(problem, cfg, spec, target)
                return cfg
            except IRError:
                continue
    raise IRError(f"no default config fits {target.target} for {problem.a.name}x{problem.b.name}")
