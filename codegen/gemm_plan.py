"""The plan of one kernel: a tiling config checked against a problem, the target's limits and the spec's
MFMAs, made once per (problem class, config, spec, target) and shared by both lowerings (codegen/gemm_asm.py,
codegen/llvm/), the kernel contract and the selector. `validate_config` returns the frozen `GemmPlan` (config,
MFMA, A/B staging, fragment grouping, resources, LDS bytes, grid formula) or raises IRError saying which
limit is exceeded; the answer (either) is memoized, so asking again is a dictionary lookup.

The resource model is the direct generator's: accumulators live in AGPRs; A/B fragments, global-load staging
and addresses in VGPRs; A and B tiles in LDS with K contiguous (+ padding), one or two buffers. `resources()`
is an upper bound of what the lowering allocates (tests/codegen/test_gemm_config.py checks it against the lowering
for a sweep of configs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from jitgemm.isa.spec.mfma import WAVE64
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .field_limits import ds_offset_limit
from .gemm_ir import BLOCK_SCALE_K, GemmConfig, GemmProblem, IRError
from .gemm_plan_mx import MxPlan, check_mx, mx_vgprs
from .kernel_abi import grid_formula
from .mfma_catalog import Mfma, mfma_catalog, mfmas_for

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
    def max_write_offset(self) -> int:
        """The largest offset (bytes, from the work-item's LDS write base) of this operand's LDS writes in one
        buffer: the lowering puts each write's place in the tile into the DS instruction's offset field
        (codegen/gemm_asm_staging.py, `_alloc_stage`: the same slot walk)."""
        vpr, most = self.vectors_per_row, 0
        if self.k_is_col:
            for i in range(self.slots):
                lin = i * self.threads
                most = max(most, (lin // vpr) * self.lds_row + (lin % vpr) * self.vec * self.eb
                           + self.load_bytes - self.chunk)
            return most
        for j in range(self.slots // self.pack):
            lin = j * self.threads
            most = max(most, (lin % vpr) * self.vec * self.lds_row + (lin // vpr) * self.pack * self.eb
                       + (self.vec - 1) * self.lds_row)
        return most

    def needs_high_base(self, buffer_bytes: int, buffers: int, limit: int) -> bool:
        """Whether the second LDS buffer's writes need a base register of their own: their offsets (one buffer
        further) pass the DS offset field (gfx950's 160 KiB of LDS lets a double-buffered tile pass 64 KiB)."""
        return self.max_write_offset + (buffers - 1) * buffer_bytes > limit

    @property
    def lds_writes(self) -> int:
        """LDS write instructions per work-item and tile."""
        if self.k_is_col:
            return self.slots * (self.load_bytes // self.chunk)
        return self.slots // self.pack * self.vec


def log2_exact(x: int, what: str) -> int:
    """log2 of a power of two; IRError naming `what` otherwise (tiles, waves and vectors are powers of two)."""
    if x < 1 or x & (x - 1):
        raise IRError(f"{what}={x} must be a power of two for this generator")
    return x.bit_length() - 1


def check_powers_of_two(config: GemmConfig, vectors: bool = True) -> None:
    """IRError naming the first tile, wave (and, with `vectors`, vector) field of `config` that is not a power of
    two: both lowerings index tiles and lanes with shifts and masks."""
    fields = ["tile_m", "tile_n", "depth_k", "waves_m", "waves_n"] + (["vec_a", "vec_b"] if vectors else [])
    for what in fields:
        log2_exact(getattr(config, what), what)


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
    check_powers_of_two(c)
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
    if mfma.acc.kind == "int" and p.d.name != "int32" and not p.epilogue_float:
        raise IRError("int8 GEMM writes int32 (a scaled one, scale_mode tensor/rowcol/block, writes floats)")
    buffer = -(-base // 16) * 16
    return out[0], out[1], buffer


def mfma_named(spec: Spec, name: str) -> Mfma:
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


def _stage_vgprs(st: Staging, high_base: bool = False) -> int:
    regs = st.slots * st.data_regs + st.slots + 2          # data, per-slot offsets, k index, LDS write base
    regs += high_base                                      # the second buffer's write base
    if not st.k_is_col:
        if st.pack > 1:
            regs += st.vec * max(1, st.pack * st.eb // 4) + (4 if st.eb == 1 and st.pack >= 4 else 0)
        elif st.eb < 4:
            regs += 1                                        # shifted element
    return regs


def scale_vgprs(problem: GemmProblem, mfma: Mfma, blocks_m: int, blocks_n: int) -> int:
    """VGPRs the scale modes add (codegen/gemm_asm_scale.py): block mode keeps a running fp32 sum per accumulator,
    one tile's scales (one per accumulator row, one per block column), the lane's first row and column and two
    temporaries; rowcol the epilogue's scales (one per accumulator row and per block column), tensor two."""
    if problem.scale_mode == "block":       # two scale sets with ping-pong accumulators (prefetch=2)
        return blocks_m * blocks_n * mfma.acc_regs + 2 * (blocks_m * mfma.acc_regs + blocks_n) + 4
    if problem.scale_mode == "rowcol":
        return blocks_m * mfma.acc_regs + blocks_n
    return 2 if problem.scale_mode == "tensor" else 0


def resources(problem: GemmProblem, config: GemmConfig, spec: Spec) -> Resources:
    mfma = mfma_named(spec, config.mfma)
    wave_m, wave_n = config.wave_tile
    blocks = (wave_m // mfma.m) * (wave_n // mfma.n) if wave_m >= mfma.m and wave_n >= mfma.n else 0
    row = config.depth_k + config.lds_pad
    buffer = -(-(config.tile_m * row * problem.a.bytes + config.tile_n * row * problem.b.bytes) // 16) * 16
    lds = buffer * max(1, config.lds_buffers)
    threads = config.workgroup_size
    vgprs = FIXED_VGPRS + EPILOGUE_VGPRS + SETUP_TEMPS
    try:
        a, b, staged = plan_staging(problem, config, mfma)
        bm, bn, groups = fragment_plan(config, mfma)
        per_group = max(len(g) for g in groups) if groups else 1
        sets = 2 if len(groups) > 1 else 1
        limit, buffers = ds_offset_limit(spec), max(1, config.lds_buffers)
        loop = (_stage_vgprs(a, a.needs_high_base(staged, buffers, limit))
                + _stage_vgprs(b, b.needs_high_base(staged, buffers, limit)) + 1   # + guarded-load address
                + sets * per_group * (bm * mfma.a_regs + bn * mfma.b_regs)     # fragments
                + max(1, config.lds_buffers) * (bm + bn) + 2)                  # read bases, lane bases
        vgprs = FIXED_VGPRS + max(loop + SETUP_TEMPS, EPILOGUE_VGPRS) + scale_vgprs(problem, mfma, bm, bn)
    except IRError:
        pass    # validate_config reports the shape error; the lowering repeats it with details
    sets = 2 if problem.scale_mode == "block" else 1     # block scales: ping-pong accumulators (gemm_asm_scale)
    return Resources(lds, sets * blocks * mfma.acc_regs, vgprs, threads, mfma)


def _check(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> Resources:
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
    if problem.scale_mode == "block" and config.depth_k != BLOCK_SCALE_K:
        raise IRError(f"depth_k={config.depth_k}: scale_mode=block applies its scales once per K tile, so the tile is "
                      f"the {BLOCK_SCALE_K}-element scale block; accepted: depth_k={BLOCK_SCALE_K}")
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
    if target.wavefront_size != WAVE64:
        raise IRError(f"{target.target} runs wave{target.wavefront_size}; the generators emit wave64 MFMA code "
                      f"(CDNA targets)")
    max_wg = target.max_workgroup_size
    if res.workgroup_size > max_wg:
        raise IRError(f"{config.waves_m}x{config.waves_n} waves = {res.workgroup_size} work-items; "
                      f"{target.target} allows {max_wg}")
    lds_limit = target.lds_bytes_per_workgroup
    if res.lds_bytes > lds_limit:
        raise IRError(f"config needs {res.lds_bytes} bytes of LDS; {target.target} has {lds_limit} per workgroup")
    agpr_limit = target.agprs
    if res.agprs > agpr_limit:
        raise IRError(f"wave tile {wave_m}x{wave_n} needs {res.agprs} accumulator registers; {target.target} has "
                      f"{agpr_limit} AGPRs")
    vgpr_limit = target.arch_vgprs
    if res.vgprs > vgpr_limit:
        raise IRError(f"config needs about {res.vgprs} VGPRs (staging, fragments, addresses); {target.target} has "
                      f"{vgpr_limit}")
    return res


@dataclass(frozen=True)
class GemmPlan:
    """Everything decided about one kernel before any instruction exists: made once by `validate_config` and
    read by the lowerings, the contract and the selector. Field names of `Resources` are kept (mfma, vgprs,
    agprs, lds_bytes, workgroup_size): a plan is also the resource figure of the direct generator.

    A block-scaled or sub-byte problem has no LDS staging (a, b: None; buffer and LDS bytes 0) and carries its
    `mx` part instead: the f8f6f4 (or weight-only 16-bit) MFMA from the catalog, per-operand format codes,
    fragment registers and scale reads. Both lowerings read it (codegen/gemm_asm_mx.py; codegen/llvm/mx_builder.py,
    whose own limits are codegen/llvm/mx_plan.py's `accept_mx`)."""

    problem: GemmProblem          # the kernel class
    config: GemmConfig
    mfma: Mfma
    a: Staging | None             # None for MX problems
    b: Staging | None
    buffer_bytes: int             # one LDS buffer (A tile + B tile, 16-byte rounded)
    lds_bytes: int                # every buffer
    vgprs: int                    # upper bound of the direct lowering's VGPRs
    agprs: int                    # accumulators
    workgroup_size: int
    blocks_m: int                 # MFMA blocks per wave along M and N
    blocks_n: int
    groups: tuple[tuple[int, ...], ...]   # K substeps read together (one ds_read2 per block and group)
    grid: tuple[str, str, str]
    mx: MxPlan | None = None      # block-scaled / sub-byte problems (codegen/gemm_plan_mx.py)
    arch_vgprs: int = 0           # the target's architected VGPRs (a generator's `accept` checks its own estimate)


_memo: dict[tuple, tuple[Spec, TargetProfile, object]] = {}
_memo_lock = threading.Lock()
_MEMO_LIMIT = 8192


def remembered(kind: str, key: tuple, spec: Spec, target: TargetProfile, make: Callable[[], object]) -> object:
    """`make()`'s answer (a value, or the IRError it raised, raised again) kept per kind and key for this spec
    and target object: what only the kernel class and config decide is decided once."""
    full = (kind, key, id(spec), id(target))
    hit = _memo.get(full)
    if hit is not None and hit[0] is spec and hit[1] is target:
        result = hit[2]
    else:
        try:
            result = make()
        except IRError as exc:
            result = exc
        with _memo_lock:
            if len(_memo) >= _MEMO_LIMIT:
                _memo.clear()
            _memo[full] = (spec, target, result)
    if isinstance(result, IRError):
        raise IRError(str(result))
    return result


def make_plan(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> GemmPlan:
    """Check and plan, without the memo (`validate_config` is the memoized entry point)."""
    if problem.scaled:
        return _make_mx_plan(problem, config, spec, target)
    if problem.b_preshuffle != "none":     # (a scaled 8-bit B in aiter's pre-shuffled layout: aiter's kernels)
        raise IRError(f"b_preshuffle={problem.b_preshuffle}: this generator reads 8-bit B as stored (layouts NN/NT/"
                      "TN/TT); accepted: b_preshuffle=none")
    res = _check(problem, config, spec, target)
    a, b, buffer = plan_staging(problem, config, res.mfma)
    bm, bn, groups = fragment_plan(config, res.mfma)
    return GemmPlan(problem.kernel_class(), config, res.mfma, a, b, buffer, res.lds_bytes, res.vgprs, res.agprs,
                    res.workgroup_size, bm, bn, tuple(groups), grid_formula(config), arch_vgprs=target.arch_vgprs)


def _make_mx_plan(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> GemmPlan:
    """The plan of a block-scaled or sub-byte problem (codegen/gemm_plan_mx.py): fragments straight to registers,
    no LDS; IRError for a limit it exceeds."""
    check_powers_of_two(config, vectors=False)
    mfma, mx = check_mx(problem, config, spec, target)
    agprs = mx.a.blocks * mx.b.blocks * mfma.acc_regs
    vgprs = mx_vgprs(mx)
    if agprs > target.agprs:
        raise IRError(f"wave tile {config.wave_tile[0]}x{config.wave_tile[1]} needs {agprs} accumulator registers; "
                      f"{target.target} has {target.agprs} AGPRs")
    if vgprs > target.arch_vgprs:
        raise IRError(f"config needs about {vgprs} VGPRs ({mx.sets} fragment set(s) of {mx.steps} K step(s), "
                      f"scales, offsets); {target.target} has {target.arch_vgprs}: use a smaller wave tile, depth_k or "
                      f"prefetch=1")
    return GemmPlan(problem.kernel_class(), config, mfma, None, None, 0, 0, vgprs, agprs,
                    config.workgroup_size, mx.a.blocks, mx.b.blocks, tuple((s,) for s in range(mx.steps)),
                    grid_formula(config), mx, target.arch_vgprs)


def validate_config(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> GemmPlan:
    """The plan of a legal config; IRError saying which limit is exceeded otherwise. Only the kernel class
    matters (sizes are runtime arguments), so every problem of one class shares the answer, which is kept
    per spec and target object."""
    cls = problem.kernel_class()
    return remembered("plan", (cls, config), spec, target,
                      lambda: make_plan(cls, config, spec, target))  # type: ignore[return-value]


def clear_plans() -> None:
    """Forget every memoized plan (tests that count planning start from here)."""
    with _memo_lock:
        _memo.clear()
