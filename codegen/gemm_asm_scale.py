"""The direct generator's fp32 scale modes (codegen/gemm_ir.py `scale_mode`, issue 26). A part of `GemmLowering`
(codegen/gemm_asm.py); every method is a no-op for an unscaled problem.

- tensor / rowcol: the epilogue multiplies each accumulator (converted to fp32 first when it is int32) by
  sa[m] and then by sb[n] (the order of the float64 reference: ((A@B) * sa) * sb). Per-tensor scales are read
  once; per-row scales once per accumulator row, per-column scales once per MFMA block column, with bounds-checked
  buffer loads like the bias (`ld_a_scale` = 0 broadcasts one value).
- block: the K loop's tile is the scale block (depth_k = 128, gemm_plan checks it), so after each tile's MFMAs the
  accumulators hold that K block's partial product P. Each is read, converted to fp32 (int8), scaled and added to
  a running fp32 sum in VGPRs, sum = fma(P * sb[n // 128, kb], sa[m, kb], sum), and zeroed for the next block;
  the epilogue starts from the sums. The tile's scales are loaded at the start of its body, so they arrive while
  its MFMAs run. K tails: the last tile's missing K elements read 0 (the staging's guards), its scale index kb =
  ceil(K/128) - 1 is in range; N tails: columns past N read no scale that any store uses.

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
        """A buffer descriptor over scale array `x` ("a_scale" or "b_scale"): (rows - 1) * ld + cols fp32."""
        emit, a = self.emit, self.args
        rows, cols, ld = mode_scale_extent(self.p, x[0])
        counts = self._scale_counts()
        value = {"m": a["m"], "n": a["n"], **counts}
        rsrc = self.ra.take("s", 4, align=4)
        w = [Reg("s", rsrc.index + i) for i in range(4)]
        ptr = a[x]
        emit("s_mov_b32", w[0], Reg("s", ptr.index))
        emit("s_and_b32", w[1], Reg("s", ptr.index + 1), 0xFFFF)
        if rows == "1":
            emit("s_mov_b32", w[2], 0)
        else:
            emit("s_sub_u32", w[2], value[rows], 1)
            emit("s_mul_i32", w[2], w[2], a[ld])
        if cols == "1":
            emit("s_add_u32", w[2], w[2], 1)
        else:
            emit("s_add_u32", w[2], w[2], value[cols])
        emit("s_lshl_b32", w[2], w[2], 2)
        emit("s_mov_b32", w[3], RSRC_WORD3)
        return rsrc

    def _scale_counts(self) -> dict[str, Reg]:
        """SGPRs holding ceil(k/128) ("kb") and ceil(n/128) ("nb"), made once."""
        if "_counts" not in self.__dict__:
            counts = {}
            for key, dim in (("kb", "k"), ("nb", "n")):
                reg = self.ra.take("s")
                self.emit("s_add_u32", reg, self.args[dim], 127)
                self.emit("s_lshr_b32", reg, reg, BLOCK_SHIFT)
                counts[key] = reg
            self._counts = counts
        return self._counts

    def _block_setup(self) -> None:
        """Block mode, before the loop: the running sums (zero), the K block counter and each lane's first row and
        column of D (the MFMA result layout of the module docstring of codegen/gemm_asm.py). These live to the
        epilogue."""
        if self.p.scale_mode != "block":
            return
        emit, m = self.emit, self.mfma
        count = self.blocks_m * self.blocks_n * m.acc_regs
        self.sums = self.vtmp(count)
        for q in range(count):
            emit("v_mov_b32", Reg("v", self.sums.index + q), 0)
        self.kb = self.ra.take("s")
        emit("s_mov_b32", self.kb, 0)
        self.srow, self.scol = self.vtmp(), self.vtmp()
        origin = self.ra.take("s")
        emit("v_lshrrev_b32", self.srow, log2_exact(m.n, "mfma n"), self.lane)
        emit("v_lshlrev_b32", self.srow, 2, self.srow)
        emit("s_add_u32", origin, self.wrow, self.row0)
        emit("v_add_u32", self.srow, origin, self.srow)
        emit("v_and_b32", self.scol, m.n - 1, self.lane)
        emit("s_add_u32", origin, self.wcol, self.col0)
        emit("v_add_u32", self.scol, origin, self.scol)

    def _block_registers(self) -> None:
        """Block mode, inside the loop's register range: one tile's A scales (a value per accumulator row), B
        scales (one per block column), an offset and a temporary, and the scalar K offsets."""
        if self.p.scale_mode != "block":
            return
        self.sa_vals = self.vtmp(self.blocks_m * self.mfma.acc_regs)
        self.sb_vals = self.vtmp(self.blocks_n)
        self.s_off, self.s_tmp = self.vtmp(), self.vtmp()
        self.soff_a, self.soff_b = self.ra.take("s"), self.ra.take("s")

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

    def _block_scale_loads(self) -> None:
        """The scales of K block kb for this lane's rows (A) and block columns (B), issued before the tile's
        MFMAs."""
        if self.p.scale_mode != "block":
            return
        emit, m, p = self.emit, self.mfma, self.p
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
                emit("buffer_load_dword", Reg("v", self.sa_vals.index + i * m.acc_regs + r), off,
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
            emit("buffer_load_dword", Reg("v", self.sb_vals.index + j), off, self.rsrc["b_scale"], self.soff_b,
                 offen=True)

    def _block_flush(self) -> None:
        """sum += (P * sb) * sa for every accumulator P of this tile, which is zeroed for the next K block."""
        if self.p.scale_mode != "block":
            return
        emit, m = self.emit, self.mfma
        integer = m.acc.kind == "int"
        t = self.s_tmp
        for i in range(self.blocks_m):
            for j in range(self.blocks_n):
                acc = self._acc(i, j)
                for r in range(m.acc_regs):
                    emit("v_accvgpr_read_b32", t, Reg("a", acc.index + r))
                    if integer:
                        emit("v_cvt_f32_i32", t, t)
                    emit("v_mul_f32", t, t, Reg("v", self.sb_vals.index + j))
                    emit("v_fma_f32", self._sum(i, j, r), t, Reg("v", self.sa_vals.index + i * m.acc_regs + r),
                         self._sum(i, j, r))
                    emit("v_accvgpr_write_b32", Reg("a", acc.index + r), 0)
        emit("s_add_u32", self.kb, self.kb, 1)

    def _sum(self, i: int, j: int, r: int) -> Reg:
        n = self.mfma.acc_regs
        return Reg("v", self.sums.index + (i * self.blocks_n + j) * n + r)

    # --- epilogue ---------------------------------------------------------------------------------------------
    def _scale_epilogue_setup(self) -> None:
        """tensor: both scales loaded once; rowcol: their registers."""
        mode = self.p.scale_mode
        if mode not in ("tensor", "rowcol"):
            return
        self.va, self.vb = self.vtmp(), self.vtmp()
        if mode == "tensor":
            zero = self.vtmp()
            self.emit("v_mov_b32", zero, 0)
            self.emit("buffer_load_dword", self.va, zero, self.rsrc["a_scale"], 0, offen=True)
            self.emit("buffer_load_dword", self.vb, zero, self.rsrc["b_scale"], 0, offen=True)

    def _accumulator_value(self, x: Reg, i: int, j: int, r: int) -> None:
        """x = accumulator r of block (i, j): the running sum in block mode, else the AGPR."""
        if self.p.scale_mode == "block":
            self.emit("v_mov_b32", x, self._sum(i, j, r))
        else:
            self.emit("v_accvgpr_read_b32", x, Reg("a", self._acc(i, j).index + r))

    def _scale_column(self, col: Reg, cmask: Reg, off: Reg) -> None:
        """rowcol: vb = sb[col] for this block column (0 for a column past N)."""
        if self.p.scale_mode != "rowcol":
            return
        emit = self.emit
        emit("v_mul_lo_u32", off, col, self.args["ld_b_scale"])
        emit("v_lshlrev_b32", off, 2, off)
        emit("v_cndmask_b32_e64", off, self.oob, off, cmask)
        emit("buffer_load_dword", self.vb, off, self.rsrc["b_scale"], 0, offen=True)

    def _scale_value(self, x: Reg, row: Reg, off: Reg) -> None:
        """tensor / rowcol: x = fp32(x) * sa[row] * sb (VCC: the element is inside D)."""
        mode = self.p.scale_mode
        if mode not in ("tensor", "rowcol"):
            return
        emit = self.emit
        if self.mfma.acc.kind == "int":
            emit("v_cvt_f32_i32", x, x)
        if mode == "rowcol":
            emit("v_mul_lo_u32", off, row, self.args["ld_a_scale"])
            emit("v_lshlrev_b32", off, 2, off)
            emit("v_cndmask_b32", off, self.oob, off, VCC)
            emit("buffer_load_dword", self.va, off, self.rsrc["a_scale"], 0, offen=True)
        emit("v_mul_f32", x, x, self.va)
        emit("v_mul_f32", x, x, self.vb)
