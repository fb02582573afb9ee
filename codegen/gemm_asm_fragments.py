"""The direct generator's MFMA phase: per-lane fragment read bases, the ds_read2 of a group of K substeps
and the MFMAs of a tile, the next group's reads and the staging thunks interleaved with them. A part of
`GemmLowering` (codegen/gemm_asm.py)."""

from __future__ import annotations

from jitgemm.isa.instruction import Reg

from .gemm_asm_staging import Thunk
from .gemm_plan import log2_exact

_DS_READ = {4: "ds_read_b32", 8: "ds_read_b64", 16: "ds_read_b128"}
_DS_READ2 = {4: "ds_read2_b32", 8: "ds_read2_b64"}
_DS_READ2_MAX = 255       # ds_read2 offsets: 8 bits, in units of the element size


class FragmentPhase:
    """LDS -> fragments -> MFMA (methods of GemmLowering)."""

    # --- fragments -----------------------------------------------------------------------------------------
    def _fragment_setup(self, temps: list[Reg]) -> None:
        """Per-lane LDS byte addresses of the fragments: one base per block and buffer, shared by blocks whose
        offsets fit the ds_read2 offset fields."""
        emit, m = self.emit, self.mfma
        self.read_base: dict[tuple[str, int, int], tuple[Reg, int]] = {}
        span = self.c.depth_k * max(self.A.eb, self.B.eb)
        for st, dim, blocks, regs, sbase in ((self.A, m.m, self.blocks_m, m.a_regs, self.wrow),
                                             (self.B, m.n, self.blocks_n, m.b_regs, self.wcol)):
            unit = regs * 4
            kpl = m.k * dim // 64
            idx, kk, lane_base = temps[:3]
            emit("v_and_b32", idx, dim - 1, self.lane)
            emit("v_add_u32", idx, sbase, idx)
            emit("v_lshrrev_b32", kk, log2_exact(dim, "mfma dim"), self.lane)
            emit("v_mul_u32_u24", kk, kpl * st.eb, kk)
            emit("v_mul_u32_u24", lane_base, st.lds_row, idx)
            emit("v_add_u32", lane_base, lane_base, kk)
            current = None
            for parity in range(self.c.lds_buffers):
                for i in range(blocks):
                    offset = st.lds_base + parity * self.buffer_bytes + i * dim * st.lds_row
                    if current is None or offset - current[1] + span > _DS_READ2_MAX * unit:
                        reg = self.read_bases.pop(0)
                        if offset:
                            emit("v_add_u32", reg, offset, lane_base)
                        else:
                            emit("v_mov_b32", reg, lane_base)
                        current = (reg, offset)
                    self.read_base[(st.name, parity, i)] = (current[0], offset - current[1])

    def _read_thunks(self, group_index: int, parity: int) -> list[Thunk]:
        """ds_read2 (or ds_read for a lone substep) of every block's fragments for one group of K substeps,
        into fragment set group_index % 2; A and B blocks alternate so the first MFMAs can start early."""
        m = self.mfma
        group = self.groups[group_index]
        fset = group_index % len(self.frag_sets)
        order = []
        for i in range(max(self.blocks_m, self.blocks_n)):
            if i < self.blocks_m:
                order.append((self.A, i, m.a_regs, self.frag_sets[fset][0][i]))
            if i < self.blocks_n:
                order.append((self.B, i, m.b_regs, self.frag_sets[fset][1][i]))
        out = []
        for st, i, regs, dst in order:
            base, rel = self.read_base[(st.name, parity, i)]
            unit = regs * 4
            offs = [rel + s * m.k * st.eb for s in group]

            def read(base=base, offs=offs, unit=unit, dst=dst, regs=regs):
                if len(offs) == 2 and unit not in _DS_READ2:  # no ds_read2 of 16 bytes (gfx950's 8-element MFMA
                    for k, off in enumerate(offs):           # fragments): two ds_read_b128
                        self.emit(_DS_READ[unit], Reg("v", dst.index + k * regs, regs), base, offset=off or None)
                elif len(offs) == 2:
                    self.emit(_DS_READ2[unit], Reg("v", dst.index, 2 * regs), base, offset0=offs[0] // unit or None,
                              offset1=offs[1] // unit or None)
                else:
                    self.emit(_DS_READ[unit], Reg("v", dst.index, regs), base, offset=offs[0] or None)
            out.append(read)
        return out

    def _acc(self, i: int, j: int) -> Reg:
        n = self.mfma.acc_regs
        return Reg("a", self.acc.index + (i * self.blocks_n + j) * n, n)

    def _compute(self, parity: int, early: list[Thunk] = (), late: list[Thunk] = ()) -> None:
        """One K tile's MFMAs from LDS buffer `parity`: fragments of the next substep group are read during the
        MFMAs of this one; `early` thunks are spread over the first MFMA gaps in order, `late` ones end at the
        last gap. Every accumulator takes its substeps in order."""
        m = self.mfma
        for read in self._read_thunks(0, parity):
            read()
        mfmas: list[tuple[int, Thunk]] = []
        for g, group in enumerate(self.groups):
            fa, fb = self.frag_sets[g % len(self.frag_sets)]
            for si, _ in enumerate(group):
                for i in range(self.blocks_m):
                    for j in range(self.blocks_n):
                        def mfma(i=i, j=j, si=si, fa=fa, fb=fb):
                            acc = self._acc(i, j)
                            a = Reg("v", fa[i].index + si * m.a_regs, m.a_regs)
                            b = Reg("v", fb[j].index + si * m.b_regs, m.b_regs)
                            self.emit(m.name.lower(), acc, a, b, acc)
                        mfmas.append((g, mfma))
        gaps: list[list[Thunk]] = [[] for _ in mfmas]
        for g in range(len(self.groups) - 1):
            positions = [k for k, (gg, _) in enumerate(mfmas) if gg == g]
            for q, read in enumerate(self._read_thunks(g + 1, parity)):
                gaps[positions[min(q, len(positions) - 1)]].append(read)
        n = len(mfmas)
        last = 0
        for q, th in enumerate(early):              # in order, at most one per gap while there are gaps
            last = q * n // max(n, len(early))
            gaps[last].append(th)
        start = max(last, n - len(late))            # after every early thunk (late ones may consume them)
        for q, th in enumerate(late):
            gaps[start + q * (n - start) // max(n - start, len(late))].append(th)
        for (_, mfma), fillers in zip(mfmas, gaps, strict=True):
            mfma()
            for th in fillers:
                th()

