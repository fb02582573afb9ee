"""The plan of a block-scaled (MX) or sub-byte GEMM on gfx950's f8f6f4 MFMAs: which MFMA (per-operand formats by
CBSZ/BLGP), how each lane's fragments come from memory, how the scales are read, and the resources that takes.

Why direct-to-register loads (no LDS). An MX problem is stored K-contiguous (layout NT), and an f8f6f4 MFMA lane
holds 32 elements of one row of A (column of B) in a few contiguous runs along K (CDNA 4 ISA guide, matrix-core
chapter; the emulator's jitgemm/emu/semantics_gfx950.py `k_of_element`, proven on Triton's gfx950 dot_scaled
kernels): 8-bit formats two 16-byte runs (bytes 16g.. and K/2 + 16g.. of the MFMA's K window, g = lane // M),
fp4 one 16-byte run (16g..), fp6 one 24-byte run (24g..). So each lane loads its fragment with one or two
16-byte buffer loads straight into the MFMA's registers: no LDS layout for 4- and 6-bit data, no LDS writes, no
barriers, no ds_read latency; the cost is that waves sharing rows of A (columns of B) load them each, served by
the L1/L2 caches instead of LDS. The 16x16 pre-shuffled weight layout (jitgemm.mx.shuffle_weight) keeps every
16-byte K run of a column contiguous, which is what makes it cheap for this scheme (its purpose in AMD's kernels).

Scales: one E8M0 byte per lane and MFMA (lane l: row l % M, K block l // M of the MFMA's K window). Plain scales
[rows, ceil(K/32)]: one byte load per lane, block and K step. Pre-shuffled scales (aiter's e8m0_shuffle: rows in
groups of 32 = 2 x 16, columns in groups of 8 = 2 x 4, permuted so that byte c2*64 + r2*4 + c1*2 + r1 of each
256-byte chunk is row 16*r1 + r2, column 4*c1 + c2): with the 16x16x128 MFMA, lane l = 16*c2 + r2 reads dword
l of a chunk, which holds the scales of two 16-row blocks (r1) for two consecutive K steps (c1); op_sel picks r1
and op_sel_hi c1 (the emulator's scale-byte rule, CDNA 4 ISA guide "V_MFMA_SCALE_*": OPSEL/OPSEL_HI select the
scale byte). So one dword load serves four MFMAs. Other shapes read the shuffled layout one byte per lane.

K tails: whole tiles inside K are loaded unguarded; the last partial tile masks every dword to the bits inside K
(elements past K read 0, their scales 2^-127 from out-of-range loads), and a dword that the matrix's last row
ends inside is read as the 4 bytes ending at the row's end and shifted (raw buffers range-check per dword, so a
straddling dword would read 0: CDNA 3 ISA guide "Range checking", as the emulator implements it).
"""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.spec.mfma import WAVE64
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .dtypes import DType
from .field_limits import buffer_offset_limit
from .gemm_ir import GemmConfig, GemmProblem, IRError
from .mfma_catalog import F8F6F4_FORMAT_CODES as F8F6F4_CODE
from .mfma_catalog import Mfma, f8f6f4_mfmas_for, f8f6f4_named, lane_registers, mfmas_for

SHUFFLE_ROWS, SHUFFLE_COLS, SHUFFLE_CHUNK = 32, 8, 256   # one 256-byte chunk of the shuffled scale layout
# VGPRs outside fragments, scales and offsets: v0, lane, wave, OOB, the 4 setup / tail temporaries, the tail's
# mask pair and {~0, 0} pair, the constants (127, 0xFFFF, 0xFFFF0000) and a register of alignment padding
MX_FIXED_VGPRS = 18
_IMM_ROOM = 16            # bytes the K tail's per-dword loads add to an instruction offset


@dataclass(frozen=True)
class MxLoad:
    """One buffer load of a lane's fragment: into register `reg` of the fragment, `nbytes` bytes, from byte
    `kbyte[g]` of the MFMA's K window for lane group g = lane // M (N for B)."""

    reg: int
    nbytes: int
    kbyte: tuple[int, ...]


@dataclass(frozen=True)
class MxOperand:
    """How one operand (A or B) of an MX GEMM reaches the MFMA."""

    name: str                  # "a" or "b"
    dtype: DType
    code: int                  # CBSZ (A) / BLGP (B)
    regs: int                  # fragment registers (8 fp8/bf8, 6 fp6/bf6, 4 fp4)
    dim: int                   # MFMA M (A) or N (B): rows of the operand per block
    blocks: int                # MFMA blocks per wave along that dimension
    loads: tuple[MxLoad, ...]
    mfma_bytes: int            # bytes of one row per MFMA K step
    depth_bytes: int           # bytes of one row per K tile
    scale: str                 # "none" | "plain" | "shuffled"
    scale_mode: str            # "none" | "byte" (one byte per lane and MFMA) | "dword" (4 scales, op_sel)
    preshuffle: bool           # B in the 16x16 pre-shuffled weight layout
    offset_max: int            # largest MUBUF instruction offset (field_limits.buffer_offset_limit)

    @property
    def groups(self) -> int:
        """Lane groups along K (64 / dim)."""
        return WAVE64 // self.dim

    @property
    def k_step(self) -> int:
        """soffset advance per K tile (bytes): the pre-shuffled layout puts 32-byte K runs 512 bytes apart."""
        return self.depth_bytes * 16 if self.preshuffle else self.depth_bytes


@dataclass(frozen=True)
class MxPlan:
    a: MxOperand
    b: MxOperand
    steps: int                 # MFMA K steps per tile (weight-only: 128-element steps of 4 MFMAs)
    sets: int                  # fragment register sets (2: the next tile loads while this one multiplies)
    weight_only: bool = False  # 16-bit A x MX B: B dequantized in registers (v_cvt_scalef32_*) for a 16-bit MFMA

    def scale_regs(self, op: MxOperand) -> int:
        if op.scale_mode == "byte":
            return op.blocks * self.steps
        if op.scale_mode == "dword":
            return -(-op.blocks // 2) * -(-self.steps // 2)
        return 0


def _loads(dt: DType, mfma_k: int, groups: int, preshuffle: bool) -> tuple[MxLoad, ...]:
    """Each lane's runs along K (see the module docstring), split into loads of at most 16 bytes; pre-shuffled
    B only in pieces that stay inside one 16-byte run of its layout."""
    g = range(groups)
    if dt.bits == 8:
        return (MxLoad(0, 16, tuple(16 * x for x in g)), MxLoad(4, 16, tuple(mfma_k // 2 + 16 * x for x in g)))
    if dt.bits == 4:
        return (MxLoad(0, 16, tuple(16 * x for x in g)),)
    if dt.bits == 6:
        if preshuffle:
            return tuple(MxLoad(2 * q, 8, tuple(24 * x + 8 * q for x in g)) for q in range(3))
        return (MxLoad(0, 16, tuple(24 * x for x in g)), MxLoad(4, 8, tuple(24 * x + 16 for x in g)))
    raise IRError(f"{dt.name}: not an f8f6f4 element format")


# Weight-only (bf16/fp16 A x MX B): B's fragment is the f8f6f4 B fragment with 32 consecutive K elements per lane
# (one scale block), dequantized with gfx950's v_cvt_scalef32_pk_{bf16,f16}_* (pk32 for fp6/bf6) into the operand of
# four 16x16x32 bf16/f16 MFMAs. Those MFMAs hold 8 consecutive K per lane (lane l: K 8 * (l // 16) + j of the
# MFMA's 32; codegen/gemm_asm.py), and any permutation of K applied to A and B alike leaves A @ B unchanged, so
# MFMA q of a 128-element step takes K 32 g + 8 q + j for lane group g: lane l's four MFMAs together take K
# 32 g .. 32 g + 31, its one block of B and its one scale, and its A runs are 64 contiguous bytes.
WEIGHT_ONLY_STEP = 128
WEIGHT_ONLY_SUBSTEPS = 4
CONVERT_REGS = 16          # 32 converted 16-bit values per lane and step


def _weight_only_loads(dt: DType, groups: int, preshuffle: bool) -> tuple[MxLoad, ...]:
    g = range(groups)
    if dt.bits == 16:
        return tuple(MxLoad(4 * q, 16, tuple(64 * x + 16 * q for x in g)) for q in range(4))
    if dt.bits == 8:
        return (MxLoad(0, 16, tuple(32 * x for x in g)), MxLoad(4, 16, tuple(32 * x + 16 for x in g)))
    return _loads(dt, WEIGHT_ONLY_STEP, groups, preshuffle)


def scale_mode(scale: str, dim: int, wave: int) -> str:
    """How a lane reads an operand's scales: "none"; "dword" (shuffled scales on a 16-row MFMA with whole 32-row
    groups per wave: one dword holds four MFMAs' scales, chosen by op_sel/op_sel_hi); else "byte" (one byte per
    lane and MFMA)."""
    if scale == "none":
        return "none"
    return "dword" if scale == "shuffled" and dim == 16 and wave % SHUFFLE_ROWS == 0 else "byte"


def mx_mfma(problem: GemmProblem, config: GemmConfig, spec: Spec) -> Mfma:
    """The catalog entry config.mfma names for the problem's formats; IRError listing the usable ones."""
    p = problem
    scaled = p.a_scale != "none" or p.b_scale != "none"
    found = f8f6f4_named(spec, config.mfma, p.a, p.b)
    usable = f8f6f4_mfmas_for(spec, p.a, p.b, scaled)
    if found is None or found.scaled != scaled:
        raise _no_mfma(config, f"{p.a.name}x{p.b.name} {'with' if scaled else 'without'} block scales", usable, spec)
    return found


def _no_mfma(config: GemmConfig, what: str, usable: tuple[Mfma, ...], spec: Spec) -> IRError:
    """The refusal of config.mfma for `what`, listing the MFMAs the spec offers for it."""
    return IRError(f"mfma={config.mfma}: {what} needs one of: "
                   f"{', '.join(x.name for x in usable) or f'none on {spec.architecture.name} (gfx950 has them)'}")


def mx_operands(problem: GemmProblem, config: GemmConfig, mfma: Mfma, spec: Spec) -> tuple[MxOperand, MxOperand]:
    """How A and B reach the MFMA: block-scaled / sub-byte operands as the f8f6f4 MFMA's (format codes and
    registers from its catalog entry), weight-only ones as 32 values per lane and 128-element step (the weight-only
    K layout above)."""
    p, c = problem, config
    wave_m, wave_n = c.wave_tile
    out = []
    for name, dt, code, regs, dim, wave in (("a", p.a, mfma.cbsz, mfma.a_regs, mfma.m, wave_m),
                                            ("b", p.b, mfma.blgp, mfma.b_regs, mfma.n, wave_n)):
        scale = getattr(p, f"{name}_scale")
        preshuffle = name == "b" and p.b_preshuffle == "16x16"
        if p.weight_only:     # 32 values per lane and step, as an f8f6f4 operand holds
            code, regs, step = F8F6F4_CODE.get(dt.name, 0), lane_registers(dt), WEIGHT_ONLY_STEP
            loads = _weight_only_loads(dt, WAVE64 // dim, preshuffle)
        else:
            step, loads = mfma.k, _loads(dt, mfma.k, WAVE64 // dim, preshuffle)
        out.append(MxOperand(name, dt, code, regs, dim, wave // dim, loads, dt.storage_bytes(step),
                             dt.storage_bytes(c.depth_k), scale, scale_mode(scale, dim, wave), preshuffle,
                             buffer_offset_limit(spec)))
    return out[0], out[1]


def check_mx(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile) -> tuple[Mfma, MxPlan]:
    """The MFMA and MX plan of a legal config (its tile sizes already checked to be powers of two by
    gemm_plan); IRError naming the field that does not fit otherwise."""
    p, c = problem, config
    mfma = weight_only_mfma(p, c, spec) if p.weight_only else mx_mfma(p, c, spec)
    wave_m, wave_n = c.wave_tile
    if c.tile_m % c.waves_m or c.tile_n % c.waves_n or wave_m % mfma.m or wave_n % mfma.n:
        raise IRError(f"tile {c.tile_m}x{c.tile_n} over {c.waves_m}x{c.waves_n} waves is not a multiple of the MFMA "
                      f"shape {mfma.m}x{mfma.n} per wave")
    step_k = WEIGHT_ONLY_STEP if p.weight_only else mfma.k
    if c.depth_k % step_k:
        raise IRError(f"depth_k={c.depth_k} is not a multiple of {step_k} (the MFMA's K"
                      f"{' x 4: one scale block per lane' if p.weight_only else ''})")
    if c.prefetch not in (1, 2):
        raise IRError(f"prefetch={c.prefetch}; accepted: 1 (one fragment set) or 2 (the next tile loads into a "
                      "second set while this one multiplies)")
    if c.lds_buffers != 1 or c.lds_pad:
        raise IRError("MX kernels of the direct generator load fragments straight to registers: lds_buffers=1 and "
                      "lds_pad=0")
    for op in ("a", "b"):
        if getattr(p, f"{op}_scale") == "shuffled" and c.depth_k % (SHUFFLE_COLS * p.scale_block):
            raise IRError(f"depth_k={c.depth_k}: {op}_scale=shuffled needs depth_k a multiple of "
                          f"{SHUFFLE_COLS * p.scale_block} (one column group of the shuffled layout per tile)")
    if p.b_preshuffle == "16x16" and p.b.storage_bytes(c.depth_k) % 32:
        raise IRError(f"b_preshuffle=16x16 needs depth_k*bits/8 a multiple of 32 bytes, got "
                      f"{p.b.storage_bytes(c.depth_k)}")
    if target.wavefront_size != WAVE64:
        raise IRError(f"{target.target} runs wave{target.wavefront_size}; MFMA code needs wave64")
    if c.workgroup_size > target.max_workgroup_size:
        raise IRError(f"{c.waves_m}x{c.waves_n} waves = {c.workgroup_size} work-items; {target.target} allows "
                      f"{target.max_workgroup_size}")
    a, b = mx_operands(p, c, mfma, spec)
    if p.weight_only:
        return mfma, MxPlan(a, b, c.depth_k // WEIGHT_ONLY_STEP, c.prefetch, True)
    return mfma, MxPlan(a, b, c.depth_k // mfma.k, c.prefetch)


def weight_only_mfmas(spec: Spec, a: DType) -> tuple[Mfma, ...]:
    """The MFMAs a weight-only GEMM with activations of dtype `a` can use: 16x16 with 8 consecutive K per lane
    (16x16x32: the K layout above), so a lane's four MFMAs of a 128-element step take one 32-K scale block of B.
    Empty where the spec has none (gfx942's 16-bit MFMAs hold 4 K per lane)."""
    return tuple(x for x in mfmas_for(spec, a, a) if x.m == x.n == 16 and x.k * x.m == WAVE64 * 8)


def weight_only_mfma(problem: GemmProblem, config: GemmConfig, spec: Spec) -> Mfma:
    """The weight-only MFMA (`weight_only_mfmas`) that config.mfma names; IRError listing the usable ones."""
    usable = weight_only_mfmas(spec, problem.a)
    inst = spec.find_instruction(config.mfma)
    found = next((x for x in usable if inst is not None and x.name == inst.name), None)
    if found is None:
        raise _no_mfma(config, f"weight-only {problem.a.name}x{problem.b.name}", usable, spec)
    return found


def _offset_keys(op: MxOperand, steps: int) -> int:
    """Distinct per-lane offset registers per block (gemm_asm_mx.MxGemmLowering._setup)."""
    return len({key for key, _ in element_offsets(op, steps).values()})


def mx_vgprs(mx: MxPlan) -> int:
    """Upper bound of the MX lowering's VGPRs: fragments and scales per set, per-block offsets, fixed."""
    total = MX_FIXED_VGPRS
    for op in (mx.a, mx.b):
        # fragments (even-aligned ranges allocated back to back: no padding) and scales, per set
        total += mx.sets * (op.blocks * mx.steps * op.regs + mx.scale_regs(op))
        total += op.blocks * (_offset_keys(op, mx.steps) + 1)
        total += 2          # the side's g and 8 * K-byte lane step
    if mx.weight_only:
        total += 2 * CONVERT_REGS + 2
    return total


# --- per-lane address patterns (the lowering turns each key into one offset VGPR per block) ---------------------
def _preshuffled_k(kb: int) -> int:
    """Offset of K byte `kb` of a column within its 16-row group of the 16x16 pre-shuffled weight layout."""
    return (kb // 32) * 512 + ((kb // 16) % 2) * 256 + kb % 16


def _shuffled_scale_k(kk: int) -> int:
    """Offset of scale column `kk` (within the tile's column groups) in the shuffled scale layout, for row 0."""
    return (kk // SHUFFLE_COLS) * SHUFFLE_CHUNK + (kk % 4) * 64 + ((kk // 4) % 2) * 2


def _split(values: list[int], offset_max: int) -> tuple[tuple, int]:
    """(lane-pattern key, instruction offset): values per lane group minus the first, which goes to the
    instruction offset unless it is beyond `offset_max` (then it stays in the key's register)."""
    rem = tuple(v - values[0] for v in values)
    if values[0] > offset_max - _IMM_ROOM:
        return (rem, values[0]), 0
    return (rem, 0), values[0]


def element_offsets(op: MxOperand, steps: int) -> dict[tuple[int, int], tuple[tuple, int]]:
    """(K step, load) -> (offset-register key, instruction offset) of an operand's fragment loads."""
    out = {}
    for s in range(steps):
        for q, ld in enumerate(op.loads):
            kbs = [s * op.mfma_bytes + kb for kb in ld.kbyte]
            out[(s, q)] = _split([_preshuffled_k(kb) if op.preshuffle else kb for kb in kbs], op.offset_max)
    return out


def scale_offsets(op: MxOperand, steps: int, mfma_k: int) -> dict[int, tuple[tuple, int]]:
    """K step -> (offset-register key, instruction offset) of an operand's byte scale loads: lane group g reads
    K block s * (mfma_k / 32) + g of the tile."""
    per_step = mfma_k // 32
    out = {}
    for s in range(steps):
        kks = [s * per_step + g for g in range(op.groups)]
        out[s] = _split([_shuffled_scale_k(kk) if op.scale == "shuffled" else kk for kk in kks], op.offset_max)
    return out
