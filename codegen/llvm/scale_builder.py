"""The LLVM generator's fp32 scale modes (codegen/gemm_ir.py `scale_mode`): the same arithmetic, in the same
order, as the direct generator's (codegen/gemm_asm_scale.py, whose docstring says what each mode does), so the two
agree bit for bit. A part of `GemmIRBuilder` (codegen/llvm/ir_builder.py); every method is a no-op or the
identity for an unscaled problem.

- tensor / rowcol: x = fp32(acc) * sa[row] * sb[col] in the epilogue;
- block: the loop's tile is the 128-element scale block (gemm_plan checks depth_k); each iteration's MFMAs start
  from zero and their partial P goes into a running fp32 sum carried around the loop,
  sum = fma(P * sb[col // 128, kb], sa[row, kb], sum).
"""

from __future__ import annotations

from jitgemm.codegen.gemm_plan import log2_exact
from jitgemm.codegen.kernel_abi import RSRC_WORD3, mode_scale_extent
from jitgemm.isa.spec.mfma import WAVE64
from llvmlite import ir

from .intrinsics import F32, I16, I32, I64

BLOCK_SHIFT = 7     # log2(128): gemm_ir.BLOCK_SCALE_K and BLOCK_SCALE_N


def _c32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


class ScaleIRMixin:
    """Scale resources, the block mode's per-iteration sums and the epilogue's scale multiplies."""

    def _scale_resources(self, batch: ir.Value) -> None:
        """Buffer resources over this batch entry's scale arrays ((rows - 1) * ld + cols fp32 elements)."""
        p = self.p
        if p.scale_mode == "none":
            return
        b, a = self.b, self.args
        counts = {"m": a["m"], "n": a["n"], "1": _c32(1),
                  "kb": b.lshr(b.add(a["k"], _c32(127)), _c32(BLOCK_SHIFT), name="kb.count"),
                  "nb": b.lshr(b.add(a["n"], _c32(127)), _c32(BLOCK_SHIFT), name="nb.count")}
        for x in ("a_scale", "b_scale"):
            rows, cols, ld = mode_scale_extent(p, x[0])
            elems = b.add(b.mul(b.sub(counts[rows], _c32(1)), a[ld]), counts[cols])
            offset = b.mul(b.mul(batch, b.zext(a[f"stride_{x}"], I64)), ir.Constant(I64, 4))
            ptr = b.gep(a[x], [offset], source_etype=ir.IntType(8), name=f"{x}.batch")
            self.rsrc[x] = self.call(self.intr.make_buffer_rsrc(), ptr, ir.Constant(I16, 0),
                                     b.zext(b.shl(elems, _c32(2)), I64), _c32(RSRC_WORD3), name=f"{x}.rsrc")

    def _lane_origin(self) -> tuple[ir.Value, ir.Value]:
        """This lane's first row and column of D (the MFMA result layout, codegen/gemm_asm.py's docstring)."""
        b, m = self.b, self.mfma
        rbase = b.add(b.add(b.shl(b.lshr(self.lane, _c32(log2_exact(m.n, "mfma n"))), _c32(2)), self.wrow),
                      self.row0, name="d.row")
        cbase = b.add(b.add(b.and_(self.lane, _c32(m.n - 1)), self.wcol), self.col0, name="d.col")
        return rbase, cbase

    def _acc_row(self, i: int, r: int) -> int:
        m = self.mfma
        return i * m.m + (r // 4) * 4 * (WAVE64 // m.n) + r % 4

    def _scale_load(self, x: str, offset: ir.Value) -> ir.Value:
        raw = self.call(self.intr.buffer_load(I32), self.rsrc[x], offset, _c32(0), _c32(0))
        return self.b.bitcast(raw, F32)

    def _block_flush(self, accs: list[list[ir.Value]], sums: list[list[ir.Value]],
                     kt: ir.Value) -> list[list[ir.Value]]:
        """The sums after K block kt / 128: sum = fma(P * sb, sa, sum) per accumulator element P."""
        b, m, p, a = self.b, self.mfma, self.p, self.args
        kb = b.lshr(kt, _c32(BLOCK_SHIFT), name="kb")
        rbase, cbase = self._lane_origin()
        sa = []
        for i in range(self.blocks_m):
            row_vals = []
            for r in range(m.acc_regs):
                drow = self._acc_row(i, r)
                row = b.add(rbase, _c32(drow)) if drow else rbase
                index = (b.add(b.mul(row, a["ld_a_scale"]), kb) if p.a_scale_order == "row"
                         else b.add(b.mul(kb, a["ld_a_scale"]), row))
                row_vals.append(self._scale_load("a_scale", b.shl(index, _c32(2))))
            sa.append(row_vals)
        sb = []
        for j in range(self.blocks_n):
            col = b.add(cbase, _c32(j * m.n)) if j else cbase
            nb = b.lshr(col, _c32(BLOCK_SHIFT))
            index = (b.add(b.mul(nb, a["ld_b_scale"]), kb) if p.b_scale_order == "row"
                     else b.add(b.mul(kb, a["ld_b_scale"]), nb))
            sb.append(self._scale_load("b_scale", b.shl(index, _c32(2))))
        out = []
        for i in range(self.blocks_m):
            row_out = []
            for j in range(self.blocks_n):
                acc, total = accs[i][j], sums[i][j]
                for r in range(m.acc_regs):
                    part = b.extract_element(acc, _c32(r))
                    if m.acc.kind == "int":
                        part = b.sitofp(part, F32)
                    t = b.fmul(part, sb[j])
                    s = self.call(self.intr.fma(), t, sa[i][r], b.extract_element(total, _c32(r)))
                    total = b.insert_element(total, s, _c32(r))
                row_out.append(total)
            out.append(row_out)
        return out

    def _scale_column(self, col: ir.Value, col_in: ir.Value) -> ir.Value | None:
        """rowcol: sb[col] (0 past N); tensor: sb; otherwise None."""
        p, b = self.p, self.b
        if p.scale_mode == "tensor":
            return self._scale_load("b_scale", _c32(0))
        if p.scale_mode != "rowcol":
            return None
        offset = b.select(col_in, b.shl(b.mul(col, self.args["ld_b_scale"]), _c32(2)), _c32(self.OOB))
        return self._scale_load("b_scale", offset)

    def _scale_value(self, x: ir.Value, row: ir.Value, inside: ir.Value, sb: ir.Value | None) -> ir.Value:
        """tensor / rowcol: fp32(x) * sa[row] * sb; block and unscaled problems: x as it is."""
        p, b = self.p, self.b
        if p.scale_mode not in ("tensor", "rowcol"):
            return x
        if self.mfma.acc.kind == "int":
            x = b.sitofp(x, F32)
        if p.scale_mode == "tensor":
            sa = self._scale_load("a_scale", _c32(0))
        else:
            offset = b.select(inside, b.shl(b.mul(row, self.args["ld_a_scale"]), _c32(2)), _c32(self.OOB))
            sa = self._scale_load("a_scale", offset)
        return b.fmul(b.fmul(x, sa), sb)
