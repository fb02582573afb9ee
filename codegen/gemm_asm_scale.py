"""The direct generator's fp32 scale modes (codegen/gemm_ir.py `scale_mode`, issue 26). A part of `GemmLowering`
(codegen/gemm_asm.py); every method is a no-op for an unscaled problem.

- tensor / rowcol: the epilogue multiplies each accumulator (converted to fp32 first when it is int32) by
  sa[m] and then by sb[n] (the order of the float64 reference: ((A@B) * sa) * sb). The scales are loaded once,
  before the stores: per-tensor two values, per-row one per row the lane stores, per-column one per MFMA block
  column, with bounds-checked buffer loads (`ld_a_scale` = 0 broadcasts one value).
- block: the K loop's tile is the scale block (depth_k = 128, gemm_plan checks it), so after each tile's MFMAs the
  accumulators hold that K block's partial product P. Each is read, converted to fp32 (int8), scaled and added to
  a running fp32 sum in VGPRs, sum = fma(P * sb[n // 128, kb], sa[m, kb], sum), and zeroed for a later block;
  the epilogue starts from the sums. The tile's scales are loaded at the start of its body, so they arrive while
  its MFMAs run. With a tile in flight (prefetch=2, the default) there are two accumulator sets: tile t's MFMAs
  go to set t % 2 while the flush of tile t-1's set runs between them (one accumulator per MFMA gap), so the
  VALU work overlaps the MFMAs instead of following them; the last set is flushed after the loop. K tails: the
  last tile's missing K elements read 0 (the staging's guards), its scale index kb = ceil(K/128) - 1 is in range;
  N tails: columns past N read no scale that any store uses.

Scale arrays are fp32 (4 bytes); each has a buffer descriptor whose num_records is exactly its bytes
(kernel_abi.mode_scale_extent), so a lane past the array reads 0.
"""

from __future__ import annotations

from jitgemm.isa.instruction import VCC, Reg

from .gemm_plan import log2_exact
from .kernel_abi import RSRC_WORD3, mode_scale_extent

BLOCK_SHIFT = 7     # log2(128): gemm_ir.BLOCK_SCALE_K and BLOCK_SCALE_N


class ScalePhase:
    """Scale descriptors, the block mode's per-tile flush and the epilogue's scale multiplies (methods of
    GemmLowering)."""

    # --- set-up --------------------------------------------------------------------------------------------
    def _scale_resource(self, x: str) -> Reg:
        """A buffer descriptor over scale array `x` ("a_scale" or "b_scale"): (rows - 1) * ld + cols fp32. The block
        counts ceil(k/128) and ceil(n/128) are made in word 3 before it takes its constant (no SGPR of their own:
        a kernel with C, bias and block scales uses nearly all of gfx9's SGPRs)."""
        emit, a = self.emit, self.args
        rows, cols, ld = mode_scale_extent(self.p, x[0])
        rsrc = self.ra.take("s", 4, align=4)
        w = [Reg("s", rsrc.index + i) for i in range(4)]

        def count(name: str) -> Reg:        # m, n, or a block count computed into word 3
            if name in ("m", "n"):
                return a[name]
            emit("s_add_u32", w[3], a["k" if name == "kb" else "n"], 127)
            emit("s_lshr_b32", w[3], w[3], BLOCK_SHIFT)
            return w[3]

        ptr = a[x]
        emit("s_mov_b32", w[0], Reg("s", ptr.index))
        emit("s_and_b32", w[1], Reg("s", ptr.index + 1), 0xFFFF)
        if rows == "1":
            emit("s_mov_b32", w[2], 0)
        else:
            emit("s_sub_u32", w[2], count(rows), 1)
            emit("s_mul_i32", w[2], w[2], a[ld])
        if cols == "1":
            emit("s_add_u32", w[2], w[2], 1)
        else:
            emit("s_add_u32", w[2], w[2], count(cols))
        emit("s_lshl_b32", w[2], w[2], 2)
        emit("s_mov_b32", w[3], RSRC_WORD3)
        return rsrc

    @property
    def pingpong(self) -> bool:
        """Block mode with a tile in flight (prefetch=2 or two LDS buffers): two accumulator sets, tile t's MFMAs
        into set t % 2 while tile t-1's partial in the other set is scaled into the sums between them (the loop
        is emitted as two bodies, one per set, as with two LDS buffers). Without a tile in flight the loop may
        have no tail iteration to alternate with, and each tile is flushed right after its MFMAs."""
        c = self.c
        return self.p.scale_mode == "block" and (c.prefetch - 1) + (c.lds_buffers - 1) >= 1

    def _block_setup(self) -> None:
        """Block mode, before the loop: the running sums (zero), the second accumulator set (ping-pong), the K
        block counter and each lane's first row and column of D (the MFMA result layout of the module docstring
        of codegen/gemm_asm.py). These live to the epilogue."""
        if self.p.scale_mode != "block":
            return
        emit, m = self.emit, self.mfma
        count = self.blocks_m * self.blocks_n * m.acc_regs
        self.sums = self.vtmp(count)
        for q in range(count):
            emit("v_mov_b32", Reg("v", self.sums.index + q), 0)
        self.acc_sets = [self.acc]
        if self.pingpong:
            second = self.ra.take("a", count, align=4)
            for q in range(count):
                emit("v_accvgpr_write_b32", Reg("a", second.index + q), 0)
            self.acc_sets.append(second)
        self.kb = self.ra.take("s")
        emit("s_mov_b32", self.kb, 0)
        self.srow, self.scol = self.vtmp(), self.vtmp()
        self.soff_a, self.soff_b = self.ra.take("s"), self.ra.take("s")
        origin = self.soff_a                            # a temporary here; the K offset of A's scales in the loop
        emit("v_lshrrev_b32", self.srow, log2_exact(m.n, "mfma n"), self.lane)
        emit("v_lshlrev_b32", self.srow, 2, self.srow)
        emit("s_add_u32", origin, self.wrow, self.row0)
        emit("v_add_u32", self.srow, origin, self.srow)
        emit("v_and_b32", self.scol, m.n - 1, self.lane)
        emit("s_add_u32", origin, self.wcol, self.col0)
        emit("v_add_u32", self.scol, origin, self.scol)

    def _block_registers(self) -> None:
        """Block mode, inside the loop's register range: a tile's A scales (a value per accumulator row) and B
        scales (one per block column), one set per accumulator set, an offset and a temporary, and the scalar K
        offsets. The second set starts at zero: the first tile's flush of the (zero) other set adds 0 * 0."""
        if self.p.scale_mode != "block":
            return
        sets = len(self.acc_sets)
        self.sa_sets = [self.vtmp(self.blocks_m * self.mfma.acc_regs) for _ in range(sets)]
        self.sb_sets = [self.vtmp(self.blocks_n) for _ in range(sets)]
        self.s_off, self.s_tmp = self.vtmp(), self.vtmp()
        if sets == 2:
            for reg in (self.sa_sets[1], self.sb_sets[1]):
                for q in range(reg.count):
                    self.emit("v_mov_b32", Reg("v", reg.index + q), 0)

    # --- block mode: per tile ----------------------------------------------------------------------------------
    def _acc_row(self, i: int, r: int) -> int:
        """Row of D (relative to the lane's first row) that accumulator register r of block row i holds."""
        m = self.mfma
        return i * m.m + (r // 4) * 4 * (64 // m.n) + r % 4

    def _k_offset(self, soff: Reg, op: str) -> None:
        """soff = the byte offset of K block kb in `op`'s scales: kb (row-major) or kb * ld (column-major)."""
        if getattr(self.p, f"{op}_scale_order") == "col":
            self.emit("s_mul_i32", soff, self.kb, self.args[f"ld_{op}_scale"])
            self.emit("s_lshl_b32", soff, soff, 2)
        else:
            self.emit("s_lshl_b32", soff, self.kb, 2)

    def _block_scale_loads(self, parity: int = 0) -> None:
        """The scales of K block kb for this lane's rows (A) and block columns (B), issued before the tile's
        MFMAs into the scale set of the tile's accumulator set (and, ping-pong, that set made the MFMAs')."""
        if self.p.scale_mode != "block":
            return
        emit, m, p = self.emit, self.mfma, self.p
        q = parity if self.pingpong else 0
        self.acc = self.acc_sets[q]
        sa_vals, sb_vals = self.sa_sets[q], self.sb_sets[q]
        off = self.s_off
        self._k_offset(self.soff_a, "a")
        self._k_offset(self.soff_b, "b")
        for i in range(self.blocks_m):
            for r in range(m.acc_regs):
                drow = self._acc_row(i, r)
                if drow:
                    emit("v_add_u32", off, drow, self.srow)
                row = off if drow else self.srow
                if p.a_scale_order == "row":
                    emit("v_mul_lo_u32", off, row, self.args["ld_a_scale"])
                    emit("v_lshlrev_b32", off, 2, off)
                else:
                    emit("v_lshlrev_b32", off, 2, row)
                emit("buffer_load_dword", Reg("v", sa_vals.index + i * m.acc_regs + r), off,
                     self.rsrc["a_scale"], self.soff_a, offen=True)
        for j in range(self.blocks_n):
            if j:
                emit("v_add_u32", off, j * m.n, self.scol)
                emit("v_lshrrev_b32", off, BLOCK_SHIFT, off)
            else:
                emit("v_lshrrev_b32", off, BLOCK_SHIFT, self.scol)
            if p.b_scale_order == "row":
                emit("v_mul_lo_u32", off, off, self.args["ld_b_scale"])
            emit("v_lshlrev_b32", off, 2, off)
            emit("buffer_load_dword", Reg("v", sb_vals.index + j), off, self.rsrc["b_scale"], self.soff_b,
                 offen=True)
        if self.pingpong:
            emit("s_add_u32", self.kb, self.kb, 1)

    def _flush_one(self, q: int, i: int, j: int, r: int) -> None:
        """sum += (P * sb) * sa for accumulator r of block (i, j) of set q, which is zeroed for a later K block."""
        emit, m = self.emit, self.mfma
        t = self.s_tmp
        acc = Reg("a", self.acc_sets[q].index + (i * self.blocks_n + j) * m.acc_regs + r)
        emit("v_accvgpr_read_b32", t, acc)
        if m.acc.kind == "int":
            emit("v_cvt_f32_i32", t, t)
        emit("v_mul_f32", t, t, Reg("v", self.sb_sets[q].index + j))
        emit("v_fma_f32", self._sum(i, j, r), t, Reg("v", self.sa_sets[q].index + i * m.acc_regs + r),
             self._sum(i, j, r))
        emit("v_accvgpr_write_b32", acc, 0)

    def _flush_all(self, q: int) -> None:
        for i in range(self.blocks_m):
            for j in range(self.blocks_n):
                for r in range(self.mfma.acc_regs):
                    self._flush_one(q, i, j, r)

    def _flush_thunks(self, q: int) -> list:
        """Ping-pong: the flush of set q, one thunk per accumulator, for the gaps between the other set's MFMAs."""
        if not (self.p.scale_mode == "block" and self.pingpong):
            return []
        m = self.mfma
        return [lambda i=i, j=j, r=r: self._flush_one(q, i, j, r)
                for i in range(self.blocks_m) for j in range(self.blocks_n) for r in range(m.acc_regs)]

    def _block_flush(self) -> None:
        """Without ping-pong: the tile's partials into the sums right after its MFMAs."""
        if self.p.scale_mode != "block" or self.pingpong:
            return
        self._flush_all(0)
        self.emit("s_add_u32", self.kb, self.kb, 1)

    def _block_final_flush(self) -> None:
        """Ping-pong, after the loop: the last tile's set, (kb - 1) % 2 for kb = ceil(K/128) tiles, into the sums."""
        if self.p.scale_mode != "block" or not self.pingpong:
            return
        e = self.e
        self.emit("s_bitcmp1_b32", self.kb, 0)          # kb odd: the last tile was even, set 0
        e.branch("s_cbranch_scc0", "scale_flush1")
        self._flush_all(0)
        e.jump("scale_flushed")
        e.label("scale_flush1")
        self._flush_all(1)
        e.label("scale_flushed")

    def _sum(self, i: int, j: int, r: int) -> Reg:
        n = self.mfma.acc_regs
        return Reg("v", self.sums.index + (i * self.blocks_n + j) * n + r)

    # --- epilogue ---------------------------------------------------------------------------------------------
    def _scale_epilogue_setup(self, rbase: Reg, cbase: Reg, off: Reg) -> None:
        """tensor: both scales, loaded once; rowcol: the scale of every row this lane stores (one per accumulator row
        of a block row) and of every block column, loaded once before the stores (0 past M or N)."""
        mode = self.p.scale_mode
        if mode not in ("tensor", "rowcol"):
            return
        emit, m = self.emit, self.mfma
        if mode == "tensor":
            self.va, self.vb = self.vtmp(), self.vtmp()
            emit("v_mov_b32", off, 0)
            emit("buffer_load_dword", self.va, off, self.rsrc["a_scale"], 0, offen=True)
            emit("buffer_load_dword", self.vb, off, self.rsrc["b_scale"], 0, offen=True)
            return
        self.sa_rows = self.vtmp(self.blocks_m * m.acc_regs)
        self.sb_cols = self.vtmp(self.blocks_n)
        for i in range(self.blocks_m):
            for r in range(m.acc_regs):
                emit("v_add_u32", off, self._acc_row(i, r), rbase)
                emit("v_cmp_gt_u32", VCC, self.args["m"], off)
                emit("v_mul_lo_u32", off, off, self.args["ld_a_scale"])
                emit("v_lshlrev_b32", off, 2, off)
                emit("v_cndmask_b32", off, self.oob, off, VCC)
                emit("buffer_load_dword", Reg("v", self.sa_rows.index + i * m.acc_regs + r), off,
                     self.rsrc["a_scale"], 0, offen=True)
        for j in range(self.blocks_n):
            emit("v_add_u32", off, j * m.n, cbase)
            emit("v_cmp_gt_u32", VCC, self.args["n"], off)
            emit("v_mul_lo_u32", off, off, self.args["ld_b_scale"])
            emit("v_lshlrev_b32", off, 2, off)
            emit("v_cndmask_b32", off, self.oob, off, VCC)
            emit("buffer_load_dword", Reg("v", self.sb_cols.index + j), off, self.rsrc["b_scale"], 0, offen=True)

    def _accumulator_value(self, x: Reg, i: int, j: int, r: int) -> None:
        """x = accumulator r of block (i, j): the running sum in block mode, else the AGPR."""
        if self.p.scale_mode == "block":
            self.emit("v_mov_b32", x, self._sum(i, j, r))
        else:
            self.emit("v_accvgpr_read_b32", x, Reg("a", self._acc(i, j).index + r))

    def _scale_value(self, x: Reg, i: int, j: int, r: int) -> None:
        """tensor / rowcol: x = fp32(x) * sa[row] * sb[col] (block mode's sums are already scaled)."""
        mode = self.p.scale_mode
        if mode not in ("tensor", "rowcol"):
            return
        emit = self.emit
        if self.mfma.acc.kind == "int":
            emit("v_cvt_f32_i32", x, x)
        if mode == "rowcol":
            sa = Reg("v", self.sa_rows.index + i * self.mfma.acc_regs + r)
            sb = Reg("v", self.sb_cols.index + j)
        else:
            sa, sb = self.va, self.vb
        emit("v_mul_f32", x, x, sa)
        emit("v_mul_f32", x, x, sb)
