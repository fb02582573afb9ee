"""The direct generator's lowering of block-scaled (MX) and sub-byte GEMMs on gfx950 (the plan and the reasons
for its choices: codegen/gemm_plan_mx.py).

Per workgroup and wave as the other GEMMs (codegen/gemm_asm.py: tile origin, wave tile of MFMA blocks, AGPR
accumulators, the shared epilogue); the main loop differs: every lane loads its own A and B fragments and its
scales with buffer loads straight into the MFMA's registers, one fragment set per K tile. With prefetch=2 two
sets alternate, so the next tile's loads are in flight while this tile's MFMAs run (the loop body is emitted once
per set); the partial last tile, if K needs one, is loaded guarded after the full tiles (one copy of the masking
code). Addresses: per lane and block one offset VGPR per distinct lane
pattern (computed before the loop), the MFMA step and run within the tile in the instruction offset, the tile's
K position in soffset (set from the tile index per load, so no state is carried between iterations).

Lane facts (each cited where it is used): f8f6f4 operand runs `gemm_plan_mx._loads`; scale lane l = row l % M,
K block l // M; the shuffled scale layout's byte (c2*64 + r2*4 + c1*2 + r1 of a 256-byte chunk); the 16x16
pre-shuffled weights (jitgemm.mx.shuffle_weight: byte k of column n at (n//16)*16*Kb + (k//32)*512 +
((k//16)%2)*256 + (n%16)*16 + k%16).
"""

from __future__ import annotations

from jitgemm.isa.hazards import emit_facts
from jitgemm.isa.instruction import VCC, Reg
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .asm_emit import Emitter, RegAlloc
from .gemm_asm import GemmLowering
from .gemm_asm_staging import BUFFER_LOAD, Thunk
from .gemm_ir import GemmConfig, GemmProblem
from .gemm_plan import log2_exact, validate_config
from .gemm_plan_mx import SHUFFLE_CHUNK, SHUFFLE_ROWS, MxOperand, MxPlan, element_offsets, scale_offsets
from .kernel_abi import LoweredKernel

E8M0_ONE = 127            # the scale of a side without scales: 2^0


class MxGemmLowering(GemmLowering):
    """An MX problem's kernel: GemmLowering's prologue and epilogue around the direct-to-register main loop."""

    def __init__(self, problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                 name: str = "jitgemm_gemm") -> None:
        self.p, self.c, self.spec, self.target, self.name = problem, config, spec, target, name
        self.plan = validate_config(problem, config, spec, target)
        self.mx: MxPlan = self.plan.mx  # type: ignore[assignment]
        self.mfma = self.plan.mfma
        self.threads = config.workgroup_size
        self.e = Emitter(emit_facts(spec, target), target.hazard_rules)
        self.ra = RegAlloc({"s": target.sgprs, "v": target.arch_vgprs, "a": target.agprs})
        self.lds_bytes = 0
        self.blocks_m, self.blocks_n = self.plan.blocks_m, self.plan.blocks_n
        self.ops = (self.mx.a, self.mx.b)

    # --- prologue pieces ------------------------------------------------------------------------------------
    def _bits_to_bytes(self, prod: Reg, bits: int) -> None:
        """A 64-bit element count in `prod` (SGPR pair) times bits / 8 (exact: packed rows start on a byte)."""
        emit = self.emit
        if bits % 8 == 0:
            if bits > 8:
                emit("s_lshl_b64", prod, prod, log2_exact(bits // 8, "element bytes"))
        elif bits == 4:
            emit("s_lshr_b64", prod, prod, 1)
        elif bits == 6:                     # x3 / 4
            t = self.ra.take("s", 2, align=2)
            emit("s_lshl_b64", t, prod, 1)
            emit("s_add_u32", Reg("s", prod.index), Reg("s", prod.index), Reg("s", t.index))
            emit("s_addc_u32", Reg("s", prod.index + 1), Reg("s", prod.index + 1), Reg("s", t.index + 1))
            emit("s_lshr_b64", prod, prod, 2)
        else:
            raise AssertionError(f"{bits}-bit elements")

    def _batch_offsets(self, wg_z: Reg, sizes: dict | None = None) -> None:
        """ptr_X += wg_z * stride_X * bits / 8 for every matrix and scale array (64-bit); split-K (`sizes`
        given, codegen/gemm_split.py): only those matrices, and D not with the batch entry."""
        emit, a, p = self.emit, self.args, self.p
        mark = self.ra.next["s"]
        prod = self.ra.take("s", 2, align=2)
        lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
        items = [("a", p.a.bits, "stride_a"), ("b", p.b.bits, "stride_b"), ("d", p.d.bits, "stride_d")]
        if p.c is not None:
            items.append(("c", p.c.bits, "stride_c"))
        items += [(f"{op.name}_scale", 8, f"stride_{op.name}_scale") for op in self.ops if op.scale != "none"]
        if sizes is not None:
            items = [(x, 8 * eb, f"stride_{x}") for x, eb in sizes.items()]
        elif p.k_split == "partial":
            items = [item for item in items if item[0] != "d"]
        elif p.k_split == "streamk":                  # z is the segment's workspace slot: only D moves
            items = [item for item in items if item[0] == "d"]
        for x, bits, stride in items:
            ptr = a[x]
            emit("s_mul_i32", lo, wg_z, a[stride])
            emit("s_mul_hi_u32", hi, wg_z, a[stride])
            self._bits_to_bytes(prod, bits)
            emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
            emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)
        self.ra.release("s", mark)                 # the products are dead: the descriptors reuse them

    def _advance_k(self, k0: Reg, prod: Reg) -> None:
        """Split-K (codegen/gemm_split.py): each operand and scale array starts at K tile k0 / depth_k, the byte
        offset `_tile_offsets` gives that tile (op.k_step per tile; scales depth_k / 32 bytes, or depth_k in the
        shuffled layout's 256-byte chunks); the kernel then runs its range as a K of the range's length."""
        emit, a, c = self.emit, self.args, self.c
        lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
        arrays = [(op.name, op.k_step) for op in self.ops]
        arrays += [(f"{op.name}_scale", c.depth_k if op.scale == "shuffled" else c.depth_k // self.p.scale_block)
                   for op in self.ops if op.scale != "none"]
        for x, per_tile in arrays:
            emit("s_lshr_b32", lo, k0, log2_exact(c.depth_k, "depth_k"))
            emit("s_mul_hi_u32", hi, lo, per_tile)
            emit("s_mul_i32", lo, lo, per_tile)
            ptr = a[x]
            emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
            emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)

    def _descriptor(self, ptr: Reg) -> tuple[Reg, Reg]:
        """A raw buffer descriptor of `ptr`; (descriptor, its num_records word for the caller to fill)."""
        from .kernel_abi import RSRC_WORD3

        rsrc = self.ra.take("s", 4, align=4)
        w = [Reg("s", rsrc.index + i) for i in range(4)]
        self.emit("s_mov_b32", w[0], Reg("s", ptr.index))
        self.emit("s_and_b32", w[1], Reg("s", ptr.index + 1), 0xFFFF)
        self.emit("s_mov_b32", w[3], RSRC_WORD3)
        return rsrc, w[2]

    def _resources(self) -> dict[str, Reg]:
        out = super()._resources()
        a = self.args
        for op in self.ops:
            if op.scale == "none":
                continue
            rows = a["m"] if op.name == "a" else a["n"]
            ld = a[f"ld_{op.name}_scale"]
            rsrc, t = self._descriptor(a[f"{op.name}_scale"])
            if op.scale == "plain":        # (rows - 1) * ld + ceil(k / 32) entries
                self.emit("s_sub_u32", t, rows, 1)
                self.emit("s_mul_i32", t, t, ld)
                self.emit("s_add_u32", self.stmp0, a["k"], self.p.scale_block - 1)
                self.emit("s_lshr_b32", self.stmp0, self.stmp0, log2_exact(self.p.scale_block, "scale_block"))
                self.emit("s_add_u32", t, t, self.stmp0)
            else:                          # rows padded to 256, times ld (the padded columns)
                self.emit("s_add_u32", t, rows, 255)
                self.emit("s_lshr_b32", t, t, 8)
                self.emit("s_lshl_b32", t, t, 8)
                self.emit("s_mul_i32", t, t, ld)
            out[f"{op.name}_scale"] = rsrc
        return out

    def _resource(self, x: str) -> Reg:
        """A and B: num_records = the packed bytes of (rows - 1) * ld + k elements (rows start on a byte)."""
        if x not in ("a", "b"):
            return super()._resource(x)
        a = self.args
        if not hasattr(self, "stmp0"):
            self.stmp0 = self.ra.take("s")
        bits = getattr(self.p, x).bits
        rsrc, t = self._descriptor(a[x])
        self.emit("s_sub_u32", t, a["m"] if x == "a" else a["n"], 1)
        self.emit("s_mul_i32", t, t, a[f"ld{x}"])
        self.emit("s_add_u32", t, t, a["k"])
        if bits != 8:
            self.emit("s_mul_i32", t, t, bits)
            self.emit("s_add_u32", t, t, 7)
            self.emit("s_lshr_b32", t, t, 3)
        return rsrc

    # --- setup before the loop -------------------------------------------------------------------------------
    def _lane_pattern(self, dst: Reg, rem: tuple[int, ...], g: Reg, tmp: Reg) -> None:
        """dst = rem[g] for the lane's group g: a multiply when the pattern is linear, else a select chain."""
        emit = self.emit
        step = rem[1] if len(rem) > 1 else 0
        if all(v == step * i for i, v in enumerate(rem)):
            if step == 0:
                emit("v_mov_b32", dst, 0)
            elif step & (step - 1) == 0:
                emit("v_lshlrev_b32", dst, log2_exact(step, "lane step"), g)
            else:
                emit("v_mul_u32_u24", dst, step, g)
            return
        emit("v_mov_b32", dst, rem[0])
        for i in range(1, len(rem)):
            emit("v_cmp_eq_u32", VCC, i, g)
            emit("v_mov_b32", tmp, rem[i])
            emit("v_cndmask_b32", dst, dst, tmp, VCC)

    def _row_of(self, dst: Reg, origin: Reg, block: int, op: MxOperand, r: Reg) -> None:
        """dst = the lane's row of A (column of B) in block `block`: origin + block * dim + lane % dim."""
        self.emit("v_add_u32", dst, origin, r)
        if block:
            self.emit("v_add_u32", dst, block * op.dim, dst)

    def _setup(self) -> None:
        emit, ra, a, mx = self.emit, self.ra, self.args, self.mx
        temps = [self.vtmp() for _ in range(4)]
        row, x, y, tmp = temps
        self.g, self.kb8, self.offs, self.soffs_v = {}, {}, {}, {}
        self.soff, self.ssoff = {}, {}
        for op in self.ops:
            n = op.name
            origin = ra.take("s")
            emit("s_add_u32", origin, self.row0 if n == "a" else self.col0, self.wrow if n == "a" else self.wcol)
            g = self.vtmp()
            emit("v_lshrrev_b32", g, log2_exact(op.dim, "mfma dim"), self.lane)
            self.g[n] = g
            kb8 = self.vtmp()
            diffs = {tuple(8 * (v - ld.kbyte[0]) for v in ld.kbyte) for ld in op.loads}
            assert len(diffs) == 1, diffs
            self._lane_pattern(kb8, next(iter(diffs)), g, x)
            self.kb8[n] = kb8
            ldb = ra.take("s")                                   # bytes per stored row
            emit("s_mul_i32", ldb, a[f"ld{n}"], op.dtype.bits)
            emit("s_lshr_b32", ldb, ldb, 3)
            if op.preshuffle:
                emit("s_lshl_b32", ldb, ldb, 4)                  # 16 rows of Kb bytes per column group
            eoffs = element_offsets(op, mx.steps)
            keys = sorted({key for key, _ in eoffs.values()})
            self.offs[n] = []
            for blk in range(op.blocks):
                emit("v_and_b32", tmp, op.dim - 1, self.lane)
                self._row_of(row, origin, blk, op, tmp)
                if op.preshuffle:                                # (n // 16) * 16 Kb + (n % 16) * 16
                    emit("v_lshrrev_b32", x, 4, row)
                    emit("v_mul_lo_u32", x, x, ldb)
                    emit("v_and_b32", y, 15, row)
                    emit("v_lshlrev_b32", y, 4, y)
                    emit("v_add_u32", x, x, y)
                else:
                    emit("v_mul_lo_u32", x, row, ldb)
                self.offs[n].append(self._offset_registers(keys, g, x, y))
            self.soff[n] = ra.take("s")
            if op.scale != "none":
                self.ssoff[n] = ra.take("s")
                self._setup_scales(op, origin, temps)
        self.temps = temps

    def _offset_registers(self, keys, g, base: Reg, scratch: Reg) -> dict:
        """One VGPR per (lane-pattern remainder, folded constant) key: `base` + the lane's pattern + the constant
        (the per-lane byte offsets of element runs and of scales share this shape)."""
        regs = {}
        for rem, fold in keys:
            reg = self.vtmp()
            self._lane_pattern(reg, rem, g, scratch)
            self.emit("v_add_u32", reg, base, reg)
            if fold:
                self.emit("v_add_u32", reg, self.k(fold), reg)
            regs[(rem, fold)] = reg
        return regs

    def _setup_scales(self, op: MxOperand, origin: Reg, temps: list[Reg]) -> None:
        emit, a = self.emit, self.args
        row, x, y, tmp = temps
        n, g = op.name, self.g[op.name]
        ld = a[f"ld_{n}_scale"]
        regs: list = []
        if op.scale_mode == "dword":
            # lane l reads dword l of the 256-byte chunk of its 32-row group: 4 * lane + (row // 32) * 32 * ld
            s32 = self.stmp0
            emit("s_lshl_b32", s32, ld, 5)
            for pair in range(-(-op.blocks // 2)):
                reg = self.vtmp()
                srow = self.stmp
                emit("s_add_u32", srow, origin, pair * SHUFFLE_ROWS)
                emit("s_lshr_b32", srow, srow, 5)
                emit("s_mul_i32", srow, srow, s32)
                emit("v_lshlrev_b32", reg, 2, self.lane)
                emit("v_add_u32", reg, srow, reg)
                regs.append(reg)
        else:
            soffs = scale_offsets(op, self.mx.steps, self.mfma.k)
            keys = sorted({key for key, _ in soffs.values()})
            for blk in range(op.blocks):
                emit("v_and_b32", tmp, op.dim - 1, self.lane)
                self._row_of(row, origin, blk, op, tmp)
                if op.scale == "plain":
                    emit("v_mul_lo_u32", x, row, ld)
                else:        # (row // 32) * 32 ld + (row % 16) * 4 + (row // 16) % 2
                    s32 = self.stmp0
                    emit("s_lshl_b32", s32, ld, 5)
                    emit("v_lshrrev_b32", x, 5, row)
                    emit("v_mul_lo_u32", x, x, s32)
                    emit("v_and_b32", y, 15, row)
                    emit("v_lshl_add_u32", x, y, 2, x)
                    emit("v_bfe_u32", y, row, 4, 1)
                    emit("v_add_u32", x, x, y)
                regs.append(self._offset_registers(keys, g, x, y))
        self.soffs_v[n] = regs

    # --- the loop --------------------------------------------------------------------------------------------
    def _main_loop(self) -> None:
        emit, ra, c, mx, e = self.emit, self.ra, self.c, self.mx, self.e
        smark = ra.next["s"]
        if not hasattr(self, "stmp0"):
            self.stmp0 = ra.take("s")
        self.stmp, self.stmp2 = ra.take("s"), ra.take("s")
        # every even-sized range first (fragments, conversion buffers, the mask pairs), then the single registers,
        # so no alignment padding falls between them (gemm_plan_mx.mx_vgprs counts none)
        frags = [{op.name: [ra.take("v", mx.steps * op.regs, align=2) for _ in range(op.blocks)] for op in self.ops}
                 for _ in range(mx.sets)]
        if mx.weight_only:
            from .gemm_plan_mx import CONVERT_REGS

            self.conv = [ra.take("v", CONVERT_REGS, align=2) for _ in range(2)]
        self.ones = ra.take("v", 2, align=2)
        self.mask = ra.take("v", 2, align=2)
        self.sets = [(frag, {op.name: [self.vtmp() for _ in range(mx.scale_regs(op))] for op in self.ops})
                     for frag in frags]
        if mx.weight_only:
            self.conv_scale = [self.vtmp() for _ in range(2)]
        self._setup()
        scaled = self.mfma.scaled
        if scaled:
            self.one_scale = self.vconst(E8M0_ONE)
        if any(op.scale_mode == "dword" for op in self.ops):
            self.half_masks = (self.vconst(0xFFFF), self.vconst(0xFFFF0000))
        emit("v_mov_b32", Reg("v", self.ones.index), 0xFFFFFFFF)
        emit("v_mov_b32", Reg("v", self.ones.index + 1), 0)
        self.kbits, self.sbound = {}, {}
        for op in self.ops:
            self.kbits[op.name] = ra.take("s")
            if op.scale != "none":
                self.sbound[op.name] = ra.take("s")
        self.nblocks = ra.take("s")
        emit("s_add_u32", self.nblocks, self.args["k"], self.p.scale_block - 1)
        emit("s_lshr_b32", self.nblocks, self.nblocks, log2_exact(self.p.scale_block, "scale_block"))

        log_depth = log2_exact(c.depth_k, "depth_k")
        full, tiles, t, n1 = (ra.take("s") for _ in range(4))
        emit("s_lshr_b32", full, self.args["k"], log_depth)
        emit("s_add_u32", tiles, self.args["k"], c.depth_k - 1)
        emit("s_lshr_b32", tiles, tiles, log_depth)
        emit("s_mov_b32", t, 0)
        self._in_loop = True
        if mx.sets == 1:
            e.label("mx_loop")
            emit("s_cmp_ge_u32", t, full)
            e.branch("s_cbranch_scc1", "mx_tail")
            self._load(0, t, guarded=False)
            self._compute(0)
            emit("s_add_u32", t, t, 1)
            e.jump("mx_loop")
            e.label("mx_tail")
            emit("s_cmp_ge_u32", t, tiles)
            e.branch("s_cbranch_scc1", "mx_done")
            self._load(0, t, guarded=True)
            self._compute(0)
        else:
            # full tiles with the next one in flight; the partial last tile (if K needs one) after them, guarded,
            # in one copy (its loads are not overlapped: one tile per kernel)
            emit("s_cmp_eq_u32", full, 0)
            e.branch("s_cbranch_scc1", "mx_tail")
            self._load(0, t, guarded=False)
            for cur in (0, 1):
                e.label(f"mx_set{cur}")
                emit("s_add_u32", n1, t, 1)
                emit("s_cmp_ge_u32", n1, full)
                e.branch("s_cbranch_scc1", f"mx_last{cur}")
                self._compute(cur, fillers=self._load_thunks(1 - cur, n1))
                emit("s_mov_b32", t, n1)
                if cur == 1:
                    e.jump("mx_set0")
            e.label("mx_last0")
            self._compute(0)
            e.jump("mx_tail")
            e.label("mx_last1")
            self._compute(1)
            e.label("mx_tail")
            emit("s_cmp_ge_u32", full, tiles)
            e.branch("s_cbranch_scc1", "mx_done")
            self._load(0, full, guarded=True)
            self._compute(0)
        e.label("mx_done")
        e.wait(vmcnt=0)
        self._in_loop = False
        # the loop's SGPRs (and constants first made in it) are dead: the epilogue reuses them
        ra.release("s", smark)
        self._kregs = {v: r for v, r in self.__dict__.get("_kregs", {}).items() if r.index < smark}

    def _load(self, sset: int, tile: Reg, guarded: bool) -> None:
        """Every fragment and scale load of K tile `tile` (an SGPR) into register set `sset`; guarded: the tile
        reaches past K (elements past K read 0, their scales 2^-127)."""
        if not guarded:
            for thunk in self._load_thunks(sset, tile):
                thunk()
            return
        emit, a, mx = self.emit, self.args, self.mx
        frag, scales = self.sets[sset]
        self._tile_offsets(tile)
        for op in self.ops:
            kb = self.kbits[op.name]                         # K bits of a row left from this tile on
            emit("s_mul_i32", self.stmp, tile, 8 * op.depth_bytes)
            emit("s_mul_i32", kb, a["k"], op.dtype.bits)
            emit("s_sub_i32", kb, kb, self.stmp)
            if op.scale != "none":                           # scale blocks left from this tile on
                emit("s_mul_i32", self.stmp, tile, self.c.depth_k // self.p.scale_block)
                emit("s_sub_i32", self.sbound[op.name], self.nblocks, self.stmp)
        pending = []
        for op in self.ops:
            eoffs = element_offsets(op, mx.steps)
            for blk in range(op.blocks):
                for s in range(mx.steps):
                    for q, ld in enumerate(op.loads):
                        key, imm = eoffs[(s, q)]
                        voff = self.offs[op.name][blk][key]
                        dst = Reg("v", frag[op.name][blk].index + s * op.regs + ld.reg, ld.nbytes // 4)
                        for d in range(ld.nbytes // 4):
                            pos = s * op.mfma_bytes + ld.kbyte[0] + 4 * d
                            word = Reg("v", dst.index + d)
                            self._tail_dword_load(op, word, voff, imm + 4 * d, pos)
                            pending.append((op, word, pos, voff, imm + 4 * d))
            for thunk in self._scale_loads(op, scales[op.name], guarded=True):
                thunk()
        for op, word, pos, voff, imm in pending:
            self._tail_dword_mask(op, word, pos, voff, imm)
        for op in self.ops:
            if op.scale_mode == "dword":
                self._tail_scale_mask(op, scales[op.name])

    def _tile_offsets(self, tile: Reg) -> None:
        """soffset of every operand and scale array for K tile `tile`."""
        emit = self.emit
        for op in self.ops:
            emit("s_mul_i32", self.soff[op.name], tile, op.k_step)
            if op.scale != "none":
                step = self.c.depth_k if op.scale == "shuffled" else self.c.depth_k // self.p.scale_block
                emit("s_mul_i32", self.ssoff[op.name], tile, step)

    def _load_thunks(self, sset: int, tile: Reg) -> list[Thunk]:
        """The unguarded loads of tile `tile` into set `sset`, one thunk per load (the first sets the soffsets),
        A and B blocks alternating so the MFMAs they are spread between keep both streams going."""
        mx = self.mx
        frag, scales = self.sets[sset]
        per_op = []
        for op in self.ops:
            eoffs = element_offsets(op, mx.steps)
            rsrc, soff = self.rsrc[op.name], self.soff[op.name]
            loads: list[Thunk] = []
            for blk in range(op.blocks):
                for s in range(mx.steps):
                    for q, ld in enumerate(op.loads):
                        key, imm = eoffs[(s, q)]
                        dst = Reg("v", frag[op.name][blk].index + s * op.regs + ld.reg, ld.nbytes // 4)
                        loads.append(lambda ld=ld, dst=dst, voff=self.offs[op.name][blk][key], rsrc=rsrc, soff=soff,
                                     imm=imm: self.emit(BUFFER_LOAD[ld.nbytes], dst, voff, rsrc, soff, offen=True,
                                                        offset=imm or None))
            per_op.append(loads + self._scale_loads(op, scales[op.name], guarded=False))
        out: list[Thunk] = [lambda: self._tile_offsets(tile)]
        for i in range(max(len(x) for x in per_op)):
            out += [x[i] for x in per_op if i < len(x)]
        return out

    def _valid_bits(self, op: MxOperand, pos: int, vb: Reg) -> None:
        """vb = bits of the lane's dword at K byte `pos` (+ its lane group's run) that lie inside K."""
        self.emit("s_sub_i32", self.stmp, self.kbits[op.name], 8 * pos)
        self.emit("v_sub_u32", vb, self.stmp, self.kb8[op.name])

    def _window(self, vb: Reg, t: Reg, voff: Reg, imm: int) -> None:
        """t = bytes the dword is moved back so that it ends inside the row: clamp(4 - ceil(vb / 8), 0, 3), and
        never before byte 0 of the buffer (a first row shorter than a dword; temps[2] = voff + imm)."""
        emit = self.emit
        emit("v_add_u32", t, 7, vb)
        emit("v_ashrrev_i32", t, 3, t)
        emit("v_sub_u32", t, 4, t)
        emit("v_med3_i32", t, t, 0, 3)
        addr = self.temps[2]
        if imm:
            emit("v_add_u32", addr, imm, voff)
        else:
            emit("v_mov_b32", addr, voff)
        emit("v_min_u32", t, t, addr)

    def _tail_dword_load(self, op: MxOperand, word: Reg, voff: Reg, imm: int, pos: int) -> None:
        vb, t, addr = self.temps[0], self.temps[1], self.temps[2]
        if op.preshuffle:            # whole dwords (K bytes a multiple of 32): masked after the load
            self.emit("buffer_load_dword", word, voff, self.rsrc[op.name], self.soff[op.name], offen=True,
                      offset=imm or None)
            return
        self._valid_bits(op, pos, vb)
        self._window(vb, t, voff, imm)
        self.emit("v_sub_u32", addr, addr, t)
        self.emit("buffer_load_dword", word, addr, self.rsrc[op.name], self.soff[op.name], offen=True)

    def _tail_dword_mask(self, op: MxOperand, word: Reg, pos: int, voff: Reg, imm: int) -> None:
        """Shift a moved-back dword into place and clear the bits past K."""
        emit = self.emit
        vb, t = self.temps[0], self.temps[1]
        self._valid_bits(op, pos, vb)
        if not op.preshuffle:
            self._window(vb, t, voff, imm)
            emit("v_lshlrev_b32", t, 3, t)
            emit("v_lshrrev_b32", word, t, word)
        emit("v_sub_u32", t, 32, vb)
        emit("v_med3_i32", t, t, 0, 32)
        emit("v_lshrrev_b64", self.mask, t, self.ones)   # low word: ~0 >> (32 - valid bits)
        emit("v_and_b32", word, word, Reg("v", self.mask.index))

    def _scale_loads(self, op: MxOperand, regs: list[Reg], guarded: bool) -> list[Thunk]:
        """One thunk per scale load of the operand (none without scales)."""
        if op.scale == "none":
            return []
        emit = self.emit
        n = op.name
        rsrc, soff = self.rsrc[f"{n}_scale"], self.ssoff[n]
        out: list[Thunk] = []
        if op.scale_mode == "dword":
            spairs = -(-self.mx.steps // 2)
            for pair in range(-(-op.blocks // 2)):
                for sp in range(spairs):
                    out.append(lambda dst=regs[pair * spairs + sp], voff=self.soffs_v[n][pair], sp=sp:
                               emit("buffer_load_dword", dst, voff, rsrc, soff, offen=True,
                                    offset=sp * SHUFFLE_CHUNK or None))
            return out
        soffs = scale_offsets(op, self.mx.steps, self.mfma.k)
        per_step = self.mfma.k // self.p.scale_block

        def load(dst: Reg, voff: Reg, imm: int, s: int) -> None:
            if guarded:          # K blocks past ceil(K / 32): out of range (reads 0 = 2^-127)
                emit("s_sub_i32", self.stmp, self.sbound[n], s * per_step)
                emit("v_cmp_gt_i32", VCC, self.stmp, self.g[n])
                emit("v_cndmask_b32", self.temps[2], self.oob, voff, VCC)
                voff = self.temps[2]
            emit("buffer_load_ubyte", dst, voff, rsrc, soff, offen=True, offset=imm or None)

        for blk in range(op.blocks):
            for s in range(self.mx.steps):
                key, imm = soffs[s]
                out.append(lambda dst=regs[blk * self.mx.steps + s], voff=self.soffs_v[n][blk][key], imm=imm, s=s:
                           load(dst, voff, imm, s))
        return out

    def _tail_scale_mask(self, op: MxOperand, regs: list[Reg]) -> None:
        """Shuffled dwords of the tail: bytes of K blocks past ceil(K / 32) cleared (2^-127). Byte c1*2 + r1 of
        lane group g holds K block 8 * step pair + 4 * c1 + g of the tile."""
        emit = self.emit
        n = op.name
        m0, m1 = self.temps[0], self.temps[1]
        spairs = -(-self.mx.steps // 2)
        for pair in range(-(-op.blocks // 2)):
            for sp in range(spairs):
                for c1, m in ((0, m0), (1, m1)):
                    emit("s_sub_i32", self.stmp, self.sbound[n], 8 * sp + 4 * c1)
                    emit("v_cmp_gt_i32", VCC, self.stmp, self.g[n])
                    emit("v_cndmask_b32", m, 0, self.half_masks[c1], VCC)
                reg = regs[pair * spairs + sp]
                emit("v_or_b32", m0, m0, m1)
                emit("v_and_b32", reg, reg, m0)

    def _scale_operand(self, op: MxOperand, sset: int, blk: int, s: int) -> tuple[Reg, int]:
        """(scale register, byte select) of block `blk`, step `s`."""
        regs = self.sets[sset][1][op.name]
        if op.scale_mode == "none":
            return self.one_scale, 0
        if op.scale_mode == "byte":
            return regs[blk * self.mx.steps + s], 0
        spairs = -(-self.mx.steps // 2)
        return regs[(blk // 2) * spairs + s // 2], (s % 2) * 2 + blk % 2

    def _convert(self, sset: int, j: int, s: int, conv: Reg, scale: Reg) -> None:
        """B block j, step s of set `sset`: 32 MX values times their block's scale -> 32 A-typed values in `conv`
        (v_cvt_scalef32_pk_<bf16|f16>_<fp4|fp8|bf8>: two values of the byte (fp4) or 16-bit word (fp8) op_sel
        selects; pk32 for fp6/bf6: all 32 from 6 registers; the scale operand is an f32 whose exponent is the E8M0
        code: code << 23, AMD's cdna4 descriptions)."""
        emit = self.emit
        B = self.mx.b
        reg, sel = self._scale_operand(B, sset, j, s)
        if sel:
            emit("v_bfe_u32", scale, reg, 8 * sel, 8)
            emit("v_lshlrev_b32", scale, 23, scale)
        else:
            emit("v_lshlrev_b32", scale, 23, reg)
        out = {"bf16": "bf16", "fp16": "f16"}[self.p.a.name]
        src = {"fp4": "fp4", "fp8_e4m3": "fp8", "fp8_e5m2": "bf8", "fp6_e2m3": "fp6", "fp6_e3m2": "bf6"}[B.dtype.name]
        frag = self.sets[sset][0]["b"][j].index + s * B.regs
        if B.dtype.bits == 6:
            emit(f"v_cvt_scalef32_pk32_{out}_{src}", conv, Reg("v", frag, 6), scale)
            return
        per_reg = 32 // (2 * B.dtype.bits)               # conversions per source register: 4 (fp4) or 2 (fp8)
        for w in range(16):
            part = w % per_reg
            op_sel = (part & 1, part >> 1, 0) if B.dtype.bits == 4 else (part, 0, 0)
            emit(f"v_cvt_scalef32_pk_{out}_{src}", Reg("v", conv.index + w), Reg("v", frag + w // per_reg), scale,
                 op_sel=op_sel if any(op_sel) else None)

    def _compute_weight_only(self, sset: int, fillers: list[Thunk]) -> None:
        """Per step and B block: dequantize, then the four 16-bit MFMAs of every A block (K order above)."""
        from .gemm_plan_mx import WEIGHT_ONLY_SUBSTEPS

        m, mx = self.mfma, self.mx
        A, B = self.ops
        frag = self.sets[sset][0]
        for s in range(mx.steps):
            for j in range(B.blocks):
                conv, scale = self.conv[j % 2], self.conv_scale[j % 2]
                self._convert(sset, j, s, conv, scale)
                for i in range(A.blocks):
                    acc = self._acc(i, j)
                    for q in range(WEIGHT_ONLY_SUBSTEPS):
                        fa = Reg("v", frag["a"][i].index + s * A.regs + 4 * q, 4)
                        self.emit(m.name.lower(), acc, fa, Reg("v", conv.index + 4 * q, 4), acc)
                        if fillers:
                            fillers.pop(0)()
        for thunk in fillers:
            thunk()

    @staticmethod
    def _spread(fillers: list[Thunk], mfmas: int) -> list[Thunk]:
        """The fillers grouped so that they are all issued within the first half of the MFMAs: the loads of the
        next tile start early (its MFMAs read them right after this tile's) yet do not hold up this tile's issue.
        llvm-mca-22 -mcpu=gfx950 on the loop (cycles per 16x16x128 MFMA; 4 is MFMA-bound): with two K steps per
        tile all loads first 4.8-5.1, one per MFMA gap 4.9-6.0, within the first half 4.1-4.3; with one K step
        all loads first 5.4-5.9 and the first half 6.3-6.9, so one-step tiles issue them first."""
        per = max(1, -(-2 * len(fillers) // max(1, mfmas)))
        return [lambda chunk=fillers[i:i + per]: [t() for t in chunk] for i in range(0, len(fillers), per)]

    def _compute(self, sset: int, fillers: list[Thunk] | None = None) -> None:
        """The tile's MFMAs from register set `sset`, every accumulator taking its K steps in order; `fillers`
        (the next tile's loads) are issued one after each MFMA, the rest after the last."""
        m, mx = self.mfma, self.mx
        fillers = list(fillers or [])
        if mx.weight_only:      # one load per MFMA gap, between the conversions: 4.97 cycles per MFMA, 5.38 first
            pass
        elif mx.steps > 1:
            fillers = self._spread(fillers, mx.steps * self.blocks_m * self.blocks_n)
        else:                   # one K step: all loads first
            for thunk in fillers:
                thunk()
            fillers = []
        if mx.weight_only:
            self._compute_weight_only(sset, fillers)
            return
        frag = self.sets[sset][0]
        A, B = self.ops
        for s in range(mx.steps):
            for i in range(A.blocks):
                for j in range(B.blocks):
                    acc = self._acc(i, j)
                    fa = Reg("v", frag["a"][i].index + s * A.regs, A.regs)
                    fb = Reg("v", frag["b"][j].index + s * B.regs, B.regs)
                    codes = dict(cbsz=A.code or None, blgp=B.code or None)
                    if not m.scaled:
                        self.emit(m.name.lower(), acc, fa, fb, acc, **codes)
                        if fillers:
                            fillers.pop(0)()
                        continue
                    sa, sel_a = self._scale_operand(A, sset, i, s)
                    sb, sel_b = self._scale_operand(B, sset, j, s)
                    op_sel = (sel_a & 1, sel_b & 1, 0)
                    op_sel_hi = (sel_a >> 1, sel_b >> 1, 0)
                    self.emit(m.name.lower(), acc, fa, fb, acc, sa, sb, op_sel=op_sel if any(op_sel) else None,
                              op_sel_hi=op_sel_hi if any(op_sel_hi) else None, **codes)
                    if fillers:
                        fillers.pop(0)()
        for thunk in fillers:
            thunk()


def lower_mx_gemm(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                  name: str = "jitgemm_gemm") -> LoweredKernel:
    """Instructions and resource use of one block-scaled, sub-byte or weight-only GEMM kernel class."""
    return MxGemmLowering(problem, config, spec, target, name).lower()
