"""Lowering the tiled GEMM IR to gfx9 (CDNA) instructions: the direct-assembly generator.

One workgroup computes a TILE_M x TILE_N block of D for one batch; its waves split the tile into wave
tiles of MFMA blocks whose accumulators live in AGPRs. Per step of DEPTH_K:

  global -> VGPR staging (buffer loads) -> LDS, both operands stored K-contiguous ([m][k] and [n][k], rows
  padded by LDS_PAD) -> MFMA operand fragments (ds_read2: two K substeps of one block per read) -> MFMA.

Addressing. Every load slot of a work-item has its own offset VGPR, computed once before the loop; the
loop only advances one SGPR per operand (the buffer instruction's soffset) by a K step. Out-of-range
elements read 0 through the buffer descriptor, whose num_records is exactly the matrix's bytes:
  - rows past M (A) or N (B) of a K-contiguous operand lie past num_records (row*ld >= (rows-1)*ld + cols);
  - columns past M/N of a transposed operand are masked once: their slot offset is OOB (0x80000000);
  - K: the loop runs unguarded while the tile it loads lies inside K; the last one or two iterations (the
    tail, a copy of the loop body) mask each slot's offset against the remaining K.
Only the VGPR offset and the instruction offset decide a masked lane (OOB is past any num_records whether or
not the hardware counts soffset in its range check), so the scheme holds on both readings of that check.

Schedule. With prefetch=2 the next tile's loads are issued during this tile's MFMAs; with lds_buffers=2
the next tile is also written to the other LDS buffer during them, so each step has one barrier (the loop
body is emitted once per buffer). Within a tile, the fragments of the next pair of K substeps are read
while the MFMAs of this pair run (two fragment register sets); global loads and LDS writes are spread
between the MFMAs. Transposed operands (K along rows in memory) are packed along K in registers
(v_perm_b32) so one LDS write carries 2-16 bytes of one M/N index instead of one element.

The epilogue reads the accumulators, applies alpha/beta*C/bias/activation, converts and stores with
bounds-checked buffer stores.

MFMA operand/result lane layouts (single-block MFMAs, 64 lanes; AMD's "AMD matrix instruction calculator"
for CDNA 3 and LLVM's AMDGPU MFMA documentation): lane l holds A[l % M][kpl*(l // M) + j] and
B[kpl*(l // N) + j][l % N] for j < kpl = K*M/64, and result register r of lane l is
D[(r // 4) * 4 * (64 // N) + 4 * (l // N) + r % 4][l % N]. Every accumulator takes its K substeps in
order, as the LLVM generator does (the two agree bit for bit).

Instruction names are LLVM's mnemonics; the encoder takes them to the spec. Kernel arguments: kernel_abi.kernargs;
block-scaled, sub-byte and weight-only problems are lowered by codegen/gemm_asm_mx.py.
"""


from __future__ import annotations

from jitgemm.isa.hazards import emit_facts
from jitgemm.isa.instruction import Reg
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .asm_emit import Emitter, RegAlloc
from .gemm_asm_epilogue import EpiloguePhase
from .gemm_asm_fragments import FragmentPhase
from .gemm_asm_scale import ScalePhase
from .gemm_asm_staging import StagingPhase
from .gemm_group import GROUP_DONE, emit_group_rows
from .gemm_ir import GemmConfig, GemmProblem
from .gemm_plan import SETUP_TEMPS, GemmPlan, log2_exact, validate_config
from .gemm_split import emit_k_range, emit_split_z
from .kernel_abi import OOB, RSRC_WORD3, LoweredKernel, kernarg_size, kernargs, matrix_extent


class GemmLowering(StagingPhase, FragmentPhase, EpiloguePhase, ScalePhase):
    """One kernel class and config lowered to instructions: prologue, loop and the phases' methods."""

    def __init__(self, problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                 name: str = "jitgemm_gemm") -> None:
        self.p, self.c, self.spec, self.target, self.name = problem, config, spec, target, name
        self.plan: GemmPlan = validate_config(problem, config, spec, target)
        self.mfma = self.plan.mfma
        self.threads = config.workgroup_size
        self.e = Emitter(emit_facts(spec, target), target.hazard_rules)
        self.ra = RegAlloc({"s": target.sgprs, "v": target.arch_vgprs, "a": target.agprs})
        self.A, self.B, self.buffer_bytes = self.plan.a, self.plan.b, self.plan.buffer_bytes
        self.lds_bytes = self.plan.lds_bytes
        self.blocks_m, self.blocks_n, self.groups = self.plan.blocks_m, self.plan.blocks_n, list(self.plan.groups)
        for what, value in (("waves_n", config.waves_n), ("tile_m", config.tile_m), ("tile_n", config.tile_n)):
            log2_exact(value, what)

    # --- helpers -------------------------------------------------------------------------------------
    def emit(self, *args, **kw):
        return self.e.emit(*args, **kw)

    def sconst(self, value: int) -> Reg:
        reg = self.ra.take("s")
        self.emit("s_mov_b32", reg, value)
        return reg

    def vconst(self, value: int) -> Reg:
        """A VGPR holding a constant, made once: VALU instructions may read only one SGPR or literal
        (the constant-bus limit of gfx9), so a constant next to an SGPR or VCC operand lives in a VGPR."""
        cache = self.__dict__.setdefault("_vconsts", {})
        if value not in cache:
            if getattr(self, "_in_loop", False):
                raise AssertionError(f"constant {value:#x} first needed inside the loop: make it before")
            reg = self.vtmp()
            self.emit("v_mov_b32", reg, value)
            cache[value] = reg
        return cache[value]

    def k(self, value: int):
        """An integer operand for a VOP3 instruction: inline constants (the spec's) as they are, anything else in
        an SGPR (gfx9 VOP3 encodings take no literal)."""
        if value in self.e.facts.inline_ints:
            return value
        cache = self.__dict__.setdefault("_kregs", {})
        if value not in cache:
            if getattr(self, "_in_loop", False):      # code there runs on some paths only
                raise AssertionError(f"constant {value:#x} first needed inside the loop: make it before")
            cache[value] = self.sconst(value)
        return cache[value]

    def vtmp(self, count: int = 1) -> Reg:
        return self.ra.take("v", count)

    # --- the kernel ----------------------------------------------------------------------------------
    def lower(self) -> LoweredKernel:
        ra, emit = self.ra, self.emit
        self.kernarg = ra.at("s", 0, 2)
        wg_x, wg_y, wg_z = ra.at("s", 2), ra.at("s", 3), ra.at("s", 4)
        tid = ra.at("v", 0)
        args = {}
        self.arg_loads = []
        for base in range(0, kernarg_size(self.p), 32):
            dst = ra.take("s", 8, align=4)
            emit("s_load_dwordx8", dst, self.kernarg, base)
            self.arg_loads.append((dst, base))
            for name, off, size, _ in kernargs(self.p):
                if base <= off < base + 32:
                    args[name] = Reg("s", dst.index + (off - base) // 4, size // 4)
        self.args = args
        emit("v_and_b32", tid, 0x3FF, tid)
        lane = self.vtmp()
        emit("v_and_b32", lane, 63, tid)
        wave_v = self.vtmp()
        emit("v_lshrrev_b32", wave_v, 6, tid)
        wave = ra.take("s")
        emit("v_readfirstlane_b32", wave, wave_v)
        wave_m, wave_n = self.c.wave_tile
        wrow, wcol = ra.take("s"), ra.take("s")
        emit("s_lshr_b32", wrow, wave, log2_exact(self.c.waves_n, "waves_n"))
        emit("s_mul_i32", wrow, wrow, wave_m)
        emit("s_and_b32", wcol, wave, self.c.waves_n - 1)
        emit("s_mul_i32", wcol, wcol, wave_n)
        row0, col0 = ra.take("s"), ra.take("s")
        streamk = None
        if self.p.k_split == "streamk":           # a loop over this workgroup's segments (codegen/gemm_streamk.py)
            from .gemm_streamk import StreamKLoop

            streamk = StreamKLoop(self, wg_x)
            wg_y, wg_x, wg_z = streamk.ty, streamk.tx, streamk.slot
        emit("s_lshl_b32", row0, wg_y, log2_exact(self.c.tile_m, "tile_m"))
        emit("s_lshl_b32", col0, wg_x, log2_exact(self.c.tile_n, "tile_n"))
        self.row0, self.col0, self.wrow, self.wcol, self.lane, self.tid = row0, col0, wrow, wcol, lane, tid
        if self.p.k_split in ("partial", "atomic"):   # z = batch entry x split_k + K range (codegen/gemm_split.py)
            zb, zr = emit_split_z(self, wg_z)
            self._batch_offsets(zb)
            if self.p.k_split == "partial":           # the workspace slice: z itself
                self._batch_offsets(wg_z, {"d": self.p.d.bytes})
            emit_k_range(self, zr)
        else:
            self._batch_offsets(wg_z)
        if streamk:
            streamk.k_range()
        if self.p.grouped:                        # this group's rows of A, C and D; idle workgroups leave
            emit_group_rows(self, wg_z)
        self.rsrc = self._resources()
        self._zero_accumulators()
        self.oob = self.vconst(OOB)
        self._block_setup()                       # block scales: running sums that live to the epilogue
        mark = ra.next["v"]
        self._main_loop()
        ra.release("v", mark)                     # staging, fragments and addresses are dead after the loop
        self._vconsts = {v: r for v, r in self._vconsts.items() if r.index < mark}
        self._epilogue()
        if self.p.grouped:
            self.e.label(GROUP_DONE)
        if streamk:
            streamk.close(lambda: [emit("s_load_dwordx8", dst, self.kernarg, base) for dst, base in self.arg_loads])
        emit("s_endpgm")
        return LoweredKernel(self.name, tuple(self.e.code), self.lds_bytes, ra.high["v"], ra.high["s"],
                             ra.high["a"], self.threads, self.plan.grid)

    def _batch_offsets(self, wg_z: Reg, sizes: dict | None = None) -> None:
        """ptr_X += wg_z * stride_X * bytes (64-bit), for every matrix (or those of `sizes`)."""
        emit, a = self.emit, self.args
        prod = self.ra.take("s", 2)
        lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
        given = sizes is not None
        sizes = {"a": self.p.a.bytes, "b": self.p.b.bytes, "d": self.p.d.bytes} if sizes is None else sizes
        if self.p.c is not None and not given:
            sizes["c"] = self.p.c.bytes
        if self.p.scale_mode != "none" and not given:
            sizes.update({"a_scale": 4, "b_scale": 4})     # fp32 scales
        if self.p.k_split == "streamk":                   # only D (the workspace slice) moves with z (the slot)
            sizes = {"d": self.p.d.bytes}
        if self.p.k_split == "partial" and not given:     # the batch entry moves A, B (scales); D: its z slice
            sizes.pop("d")
        if self.p.grouped:                                # only B is per group; rows: codegen/gemm_group.py
            sizes = {"b": self.p.b.bytes}
        for x, eb in sizes.items():
            ptr = a[x]
            plo, phi = Reg("s", ptr.index), Reg("s", ptr.index + 1)
            emit("s_mul_i32", lo, wg_z, a[f"stride_{x}"])
            emit("s_mul_hi_u32", hi, wg_z, a[f"stride_{x}"])
            if eb > 1:
                emit("s_lshl_b64", prod, prod, log2_exact(eb, "element size"))
            emit("s_add_u32", plo, plo, lo)
            emit("s_addc_u32", phi, phi, hi)

    def _advance_k(self, k0: Reg, prod: Reg) -> None:
        """Split-K / stream-K: A, B (and block scales) start at K element `k0` (codegen/gemm_split.py)."""
        from .gemm_split import advance_ab, advance_scales

        advance_ab(self, k0, prod)
        advance_scales(self, k0, prod)

    def _resources(self) -> dict[str, Reg]:
        """Buffer descriptors of the matrices the kernel reads or writes (and of its fp32 scales)."""
        out = {x: self._resource(x) for x in ("a", "b", "c", "d", "bias")
               if x in ("a", "b", "d") or (x == "c" and self.p.c is not None) or
               (x == "bias" and self.p.bias != "none")}
        if self.p.scale_mode != "none":
            out.update({x: self._scale_resource(x) for x in ("a_scale", "b_scale")})
        return out

    def _resource(self, x: str) -> Reg:
        """A buffer descriptor whose num_records is exactly the matrix's bytes ((rows-1)*ld + cols)."""
        emit, a, p = self.emit, self.args, self.p
        rsrc = self.ra.take("s", 4, align=4)
        w = [Reg("s", rsrc.index + i) for i in range(4)]
        ptr = a[x]
        emit("s_mov_b32", w[0], Reg("s", ptr.index))
        emit("s_and_b32", w[1], Reg("s", ptr.index + 1), 0xFFFF)
        if x == "bias":
            count = a["m"] if p.bias == "m" else a["n"]
            emit("s_lshl_b32", w[2], count, 2)
        else:
            rows, cols, ld, eb = matrix_extent(p, x)
            emit("s_sub_u32", w[2], a[rows], 1)
            emit("s_mul_i32", w[2], w[2], a[ld])
            emit("s_add_u32", w[2], w[2], a[cols])
            if eb > 1:
                emit("s_lshl_b32", w[2], w[2], log2_exact(eb, "element size"))
        emit("s_mov_b32", w[3], RSRC_WORD3)
        return rsrc

    def _zero_accumulators(self) -> None:
        n_acc = self.blocks_m * self.blocks_n * self.mfma.acc_regs
        self.acc = self.ra.take("a", n_acc, align=4)
        for i in range(n_acc):
            self.emit("v_accvgpr_write_b32", Reg("a", self.acc.index + i), 0)

    # --- the loop --------------------------------------------------------------------------------------------
    def _barrier(self) -> None:
        self.e.wait(lgkmcnt=0)
        self.emit("s_barrier")

    def _body(self, parity: int, guarded: bool) -> None:
        """One K tile: LDS buffer `parity` holds it (written before the first barrier with one buffer). Block
        scales: the tile is one K block, whose scales are loaded first and applied after its MFMAs, or, with two
        accumulator sets (`pingpong`, codegen/gemm_asm_scale.py), during the next tile's MFMAs."""
        self._block_scale_loads(parity)
        self._tile(parity, guarded, self._flush_thunks(1 - parity))
        self._block_flush()

    def _tile(self, parity: int, guarded: bool, flush: list = ()) -> None:
        flush = list(flush)
        if self.c.lds_buffers == 1:
            if self.c.prefetch == 1:
                for th in self._load_thunks(guarded):
                    th()
            for th in self._write_thunks(0):
                th()
            self._barrier()
            self._compute(0, early=(self._load_thunks(guarded) if self.c.prefetch == 2 else []) + flush)
            self._barrier()
            return
        other = 1 - parity
        if self.c.prefetch == 1:
            self._compute(parity, early=self._load_thunks(guarded) + flush, late=self._write_thunks(other))
        else:
            self._compute(parity, early=self._write_thunks(other) + self._load_thunks(guarded) + flush)
        self._barrier()

    def _main_loop(self) -> None:
        emit, ra, c = self.emit, self.ra, self.c
        self.stmp, self.stmp2, self.rem_fix, self.rem_k, self.kload = (ra.take("s") for _ in range(5))
        self.stages = [self._alloc_stage(self.A), self._alloc_stage(self.B)]
        m = self.mfma
        per_group = max(len(g) for g in self.groups)
        sets = 2 if len(self.groups) > 1 else 1
        self.frag_sets = [([self.vtmp(per_group * m.a_regs) for _ in range(self.blocks_m)],
                           [self.vtmp(per_group * m.b_regs) for _ in range(self.blocks_n)]) for _ in range(sets)]
        self.read_bases = [self.vtmp() for _ in range(c.lds_buffers * (self.blocks_m + self.blocks_n))]
        self.vaddr = self.vtmp()
        self._block_registers()
        mark = ra.next["v"]
        temps = [self.vtmp() for _ in range(SETUP_TEMPS)]
        for stage in self.stages:
            self._setup_stage(stage, temps)
        a, b = self.stages
        if isinstance(a.step, int) and a.step == b.step:
            b.soff = a.soff
        self._fragment_setup(temps)
        ra.release("v", mark)
        self._perm_selectors()

        # loop control: tiles = ceil(K / depth); the first `fast` iterations load a tile inside K
        log_depth = log2_exact(c.depth_k, "depth_k")
        lookahead = (c.prefetch - 1) + (c.lds_buffers - 1)
        fast, tail, cnt, cnt2 = (ra.take("s") for _ in range(4))
        emit("s_lshr_b32", fast, self.args["k"], log_depth)
        emit("s_add_u32", tail, self.args["k"], c.depth_k - 1)
        emit("s_lshr_b32", tail, tail, log_depth)
        if lookahead:
            emit("s_sub_i32", fast, fast, lookahead)
            emit("s_max_i32", fast, fast, 0)
        emit("s_sub_u32", tail, tail, fast)
        emit("s_sub_u32", cnt, 0, fast)
        emit("s_sub_u32", cnt2, 0, tail)

        # prologue: the first `lookahead` tiles
        emit("s_mov_b32", self.kload, 0)
        if lookahead:
            for th in self._load_thunks(True):
                th()
        if c.lds_buffers == 2:
            for th in self._write_thunks(0):
                th()
            if c.prefetch == 2:
                for th in self._load_thunks(True):
                    th()
            self._barrier()
        emit("s_add_u32", self.stmp, fast, lookahead)
        emit("s_lshl_b32", self.kload, self.stmp, log_depth)

        e = self.e
        self._in_loop = True
        emit("s_cmp_eq_u32", fast, 0)
        e.branch("s_cbranch_scc1", "tail0")
        e.label("main_loop")
        if c.lds_buffers == 1 and not self.pingpong:
            self._body(0, guarded=False)
            emit("s_add_u32", cnt, cnt, 1)
            e.branch("s_cbranch_scc0", "main_loop")
            e.label("tail0")
            if not lookahead:
                emit("s_cmp_eq_u32", tail, 0)
                e.branch("s_cbranch_scc1", "loop_done")
            e.label("tail_loop")
            self._body(0, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1)
            e.branch("s_cbranch_scc0", "tail_loop")
        else:
            self._body(0, guarded=False)
            emit("s_add_u32", cnt, cnt, 1)
            e.branch("s_cbranch_scc1", "tail1")
            self._body(1, guarded=False)
            emit("s_add_u32", cnt, cnt, 1)
            e.branch("s_cbranch_scc0", "main_loop")
            e.label("tail0")
            self._body(0, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1)
            e.branch("s_cbranch_scc1", "loop_done")
            e.label("tail1")
            self._body(1, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1)
            e.branch("s_cbranch_scc0", "tail0")
        e.label("loop_done")
        e.wait(vmcnt=0)
        self._in_loop = False
        self._block_final_flush()

def lower_gemm(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
               name: str = "jitgemm_gemm") -> LoweredKernel:
    """Instructions and resource use of one GEMM kernel class (block-scaled and sub-byte problems:
    codegen/gemm_asm_mx.lower_mx_gemm)."""
    return GemmLowering(problem, config, spec, target, name).lower()
