"""The direct generator's staging phase: every work-item's load slots and their registers, the address setup
before the loop, the global loads of a K tile and their LDS writes (transposed operands packed along K with
v_perm_b32). A part of `GemmLowering` (codegen/gemm_asm.py, whose docstring describes the scheme)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitgemm.isa.instruction import VCC, Reg

from .field_limits import buffer_offset_limit, ds_offset_limit
from .gemm_plan import Staging, log2_exact

BUFFER_LOAD = {1: "buffer_load_ubyte", 2: "buffer_load_ushort", 4: "buffer_load_dword", 8: "buffer_load_dwordx2",
         16: "buffer_load_dwordx4"}
_DS_WRITE = {1: "ds_write_b8", 2: "ds_write_b16", 4: "ds_write_b32", 8: "ds_write_b64", 16: "ds_write_b128"}
_DS_WRITE_HI = {1: "ds_write_b8_d16_hi", 2: "ds_write_b16_d16_hi"}

# v_perm_b32 selectors (byte i of the result = byte sel[i] of {src0:src1}, 0-3 from src1, 4-7 from src0)
_PERM_LO16 = 0x05040100   # [src1.lo16, src0.lo16]
_PERM_HI16 = 0x07060302   # [src1.hi16, src0.hi16]
_PERM_B01 = 0x05010400    # [src1.b0, src0.b0, src1.b1, src0.b1]
_PERM_B23 = 0x07030602    # [src1.b2, src0.b2, src1.b3, src0.b3]


@dataclass
class _Slot:
    """One global load of a work-item: `rows` below the thread's first stored row, `cols` right of it."""

    drow: int
    dcol: int
    data: Reg
    voff: Reg | None = None
    imm: int = 0          # instruction offset (bytes) on top of voff
    lds: int = 0          # LDS write offset (bytes) from the write base (K-contiguous operands)

    def dk(self, k_is_col: bool) -> int:
        return self.dcol if k_is_col else self.drow


@dataclass
class _Stage:
    """An operand's staging registers."""

    st: Staging
    slots: list[_Slot]
    packs: list[tuple[list[_Slot], int]]      # transposed operands: (R slots of consecutive K rows, LDS offset)
    k_local: Reg
    write_base: Reg
    soff: Reg
    step: int | Reg
    out: list[Reg]                            # packed words per M/N column (transposed operands)
    temps: list[Reg]                          # 4x4 byte transposes / shifted elements
    high_base: Reg | None = None              # write base of the second LDS buffer, when its offsets would pass
                                              # the DS offset field (Staging.needs_high_base)


Thunk = Callable[[], None]


Thunk = Callable[[], None]


class StagingPhase:
    """Global -> VGPR -> LDS for A and B (methods of GemmLowering)."""

    # --- staging: registers --------------------------------------------------------------------------------
    def _alloc_stage(self, st: Staging) -> _Stage:
        """The slots of one operand and their registers. Work-item t loads vectors t, t + T, t + 2T, ... of the
        stored tile (of its K-row packs, for a transposed operand), so every slot is the first one moved by a
        compile-time (row, col) delta."""
        vpr = st.vectors_per_row
        slots, packs = [], []
        if st.k_is_col:
            for i in range(st.slots):
                lin = i * self.threads
                slots.append(_Slot(lin // vpr, (lin % vpr) * st.vec, self.vtmp(st.data_regs)))
        else:
            for j in range(st.slots // st.pack):
                lin = j * self.threads
                prow, dcol = lin // vpr, (lin % vpr) * st.vec
                group = [_Slot(prow * st.pack + i, dcol, self.vtmp(st.data_regs)) for i in range(st.pack)]
                slots += group
                packs.append((group, dcol * st.lds_row + prow * st.pack * st.eb))
        voffs: dict[tuple[int, int], Reg] = {}
        for s in slots:
            if st.k_is_col and s.dcol * st.eb <= buffer_offset_limit(self.spec):
                key, s.imm = (s.drow, 0), s.dcol * st.eb      # the K delta rides in the instruction offset
            else:
                key = (s.drow, s.dcol)
            if key not in voffs:
                voffs[key] = self.vtmp()
            s.voff = voffs[key]
            s.lds = s.drow * st.lds_row + s.dcol * st.eb if st.k_is_col else 0
        out, temps = [], []
        if not st.k_is_col:
            words = max(1, st.pack * st.eb // 4)
            if st.pack > 1:
                out = [self.vtmp(words) for _ in range(st.vec)]
                if st.eb == 1 and st.pack >= 4:
                    temps = [self.vtmp() for _ in range(4)]
            elif st.eb < 4:
                temps = [self.vtmp()]
        stage = _Stage(st, slots, packs, self.vtmp(), self.vtmp(), self.ra.take("s"), 0, out, temps)
        if st.needs_high_base(self.buffer_bytes, max(1, self.c.lds_buffers), ds_offset_limit(self.spec)):
            stage.high_base = self.vtmp()
        return stage

    # --- staging: setup before the loop ---------------------------------------------------------------------
    def _setup_stage(self, stage: _Stage, temps: list[Reg]) -> None:
        """Per-slot global offsets (transposed operands: OOB for columns past M/N), the LDS write base and the
        work-item's first K index; the soffset step per K tile."""
        emit, st = self.emit, stage.st
        ld = self.args[f"ld{st.name}"]
        vpr = st.vectors_per_row
        origin = self.row0 if st.name == "a" else self.col0
        bound = self.args["m"] if st.name == "a" else self.args["n"]
        r, c, off, t = temps[:4]
        emit("v_lshrrev_b32", r, log2_exact(vpr, "vectors per row"), self.tid)
        emit("v_and_b32", c, vpr - 1, self.tid)
        if st.vec > 1:
            emit("v_lshlrev_b32", c, log2_exact(st.vec, "vec"), c)
        eb_log = log2_exact(st.eb, "element size")
        if st.k_is_col:                      # stored rows: M/N; stored columns: K
            fix_local, k_local = r, c
            emit("v_add_u32", t, origin, r)
            emit("v_mul_lo_u32", off, t, ld)
            emit("v_add_u32", off, off, c)
        else:                                # stored rows: K (in packs of st.pack); stored columns: M/N
            if st.pack > 1:
                emit("v_lshlrev_b32", r, log2_exact(st.pack, "pack"), r)
            fix_local, k_local = c, r
            emit("v_mul_lo_u32", off, r, ld)
            emit("v_add3_u32", off, off, c, origin)
        if eb_log:
            emit("v_lshlrev_b32", off, eb_log, off)
        emit("v_mov_b32", stage.k_local, k_local)
        wb = stage.write_base
        emit("v_mul_u32_u24", wb, st.lds_row, fix_local)
        if eb_log:
            emit("v_lshlrev_b32", t, eb_log, k_local)
        emit("v_add3_u32", wb, wb, t if eb_log else k_local, self.k(st.lds_base))
        if stage.high_base is not None:
            emit("v_add_u32", stage.high_base, self.buffer_bytes, wb)
        sdelta, sbound = self.stmp, self.stmp2
        if not st.k_is_col:
            emit("s_sub_i32", self.rem_fix, bound, origin)
        done = set()
        for s in stage.slots:
            if s.voff.index in done:
                continue
            done.add(s.voff.index)
            in_imm = st.k_is_col and s.dcol * st.eb <= buffer_offset_limit(self.spec)      # the K delta is s.imm
            delta_cols = 0 if in_imm else s.dcol * st.eb
            if s.drow:
                emit("s_mul_i32", sdelta, ld, s.drow * st.eb)
                if delta_cols:
                    emit("s_add_u32", sdelta, sdelta, delta_cols)
                emit("v_add_u32", s.voff, sdelta, off)
            elif delta_cols:
                emit("v_add_u32", s.voff, delta_cols, off)
            else:
                emit("v_mov_b32", s.voff, off)
            if not st.k_is_col:              # column past M/N: never in range
                emit("s_sub_i32", sbound, self.rem_fix, s.dcol)
                emit("v_cmp_gt_i32", VCC, sbound, c)
                emit("v_cndmask_b32", s.voff, self.oob, s.voff, VCC)
        emit("s_mov_b32", stage.soff, 0)
        if st.k_is_col:
            stage.step = self.c.depth_k * st.eb
        else:
            stage.step = self.ra.take("s")
            emit("s_mul_i32", stage.step, ld, self.c.depth_k * st.eb)

    # --- staging: in the loop ----------------------------------------------------------------------------------
    def _load_thunks(self, guarded: bool) -> list[Thunk]:
        """Global loads of the next tile to load, one thunk per slot, then the soffset (and, guarded, the K
        index) advance. Guarded: every slot's offset is masked against the K that remains for that tile."""
        emit = self.emit
        out: list[Thunk] = []
        if guarded:
            out.append(lambda: emit("s_sub_i32", self.rem_k, self.args["k"], self.kload))
        for stage in self.stages:
            st = stage.st
            for s in stage.slots:
                def load(stage=stage, st=st, s=s):
                    vaddr = s.voff
                    if guarded:
                        vaddr = self.vaddr
                        emit("s_sub_i32", self.stmp, self.rem_k, s.dk(st.k_is_col))
                        emit("v_cmp_gt_i32", VCC, self.stmp, stage.k_local)
                        emit("v_cndmask_b32", vaddr, self.oob, s.voff, VCC)
                    emit(BUFFER_LOAD[st.load_bytes], s.data, vaddr, self.rsrc[st.name], stage.soff, offen=True,
                         offset=s.imm or None)
                out.append(load)
        advanced = []
        for stage in self.stages:                 # after every load: operands with equal steps share soffset
            if stage.soff not in advanced:
                advanced.append(stage.soff)
                out.append(lambda stage=stage: emit("s_add_u32", stage.soff, stage.soff, stage.step))
        if guarded:
            out.append(lambda: emit("s_add_u32", self.kload, self.kload, self.c.depth_k))
        return out

    def _write_thunks(self, parity: int) -> list[Thunk]:
        """LDS writes of the staged tile into buffer `parity`, after one wait for all its loads (the only
        vector-memory operations in flight then; one wait rather than one per slot)."""
        out: list[Thunk] = [lambda: self.e.wait(vmcnt=0)]
        for stage in self.stages:
            st = stage.st
            if st.k_is_col:
                out += [lambda stage=stage, s=s: self._write_vector(stage, s, parity) for s in stage.slots]
            elif st.pack > 1:
                for group, lds in stage.packs:
                    step = 4 if st.eb == 1 and st.pack >= 4 else 1
                    out += [lambda stage=stage, group=group, lds=lds, e=e: self._write_packed(stage, group, lds, e,
                                                                                              parity)
                            for e in range(0, st.vec, step)]
            else:
                out += [lambda stage=stage, s=s: self._write_elements(stage, s, parity) for s in stage.slots]
        return out

    def _lds_place(self, stage: _Stage, offset: int, parity: int) -> tuple[Reg, int | None]:
        """(base register, instruction offset) of an LDS write `offset` bytes into buffer `parity` of the stage."""
        if parity and stage.high_base is not None:
            return stage.high_base, offset or None
        return stage.write_base, (offset + parity * self.buffer_bytes) or None

    def _write_vector(self, stage: _Stage, s: _Slot, parity: int) -> None:
        st = stage.st
        for part in range(0, st.load_bytes, st.chunk):
            data = Reg("v", s.data.index + part // 4, max(1, st.chunk // 4))
            base, offset = self._lds_place(stage, s.lds + part, parity)
            self.emit(_DS_WRITE[st.chunk], base, data, offset=offset)

    def _write_elements(self, stage: _Stage, s: _Slot, parity: int) -> None:
        """A transposed vector one element per LDS row (32-bit elements, or no second K row to pack with):
        16-bit halves and bytes 0/2 straight from the register (d16_hi writes take the high half)."""
        emit, st = self.emit, stage.st
        first = s.dcol * st.lds_row + s.drow * st.eb
        for e in range(st.vec):
            word = Reg("v", s.data.index + e * st.eb // 4)
            byte = e * st.eb % 4
            base, offset = self._lds_place(stage, first + e * st.lds_row, parity)
            if st.eb == 4 or byte == 0:
                emit(_DS_WRITE[st.eb], base, word, offset=offset)
            elif byte == 2:
                emit(_DS_WRITE_HI[st.eb], base, word, offset=offset)
            else:                             # bytes 1 and 3: shifted down by 8 to bytes 0 and 2
                shifted = stage.temps[0]
                if byte == 1:
                    emit("v_lshrrev_b32", shifted, 8, word)
                emit(_DS_WRITE[1] if byte == 1 else _DS_WRITE_HI[1], base, shifted, offset=offset)

    def _write_packed(self, stage: _Stage, group: list[_Slot], lds: int, e: int, parity: int) -> None:
        """Columns e (16-bit: one column; bytes: e..e+3, or one for 2-row packs) of a K-row pack gathered with
        v_perm_b32 and written with one LDS write per column."""
        emit, st = self.emit, stage.st
        R = st.pack
        if st.eb == 2:
            cols = [e]
            word, half = e // 2, e % 2
            for q in range(R // 2):
                dst = Reg("v", stage.out[e].index + q)
                lo, hi = Reg("v", group[2 * q].data.index + word), Reg("v", group[2 * q + 1].data.index + word)
                emit("v_perm_b32", dst, hi, lo, self.k(_PERM_HI16 if half else _PERM_LO16))
        elif R == 2:                          # bytes, two K rows: 16 bits per column
            cols = [e]
            word, byte = e // 4, e % 4
            lo, hi = Reg("v", group[0].data.index + word), Reg("v", group[1].data.index + word)
            dst = stage.out[e]
            emit("v_perm_b32", dst, hi, lo, self.k(((4 + byte) << 8) | byte))
        else:                                 # bytes, 4-row blocks: 4x4 byte transposes of words e // 4
            cols = list(range(e, e + 4))
            word = e // 4
            t0, t1, t2, t3 = stage.temps
            for q in range(R // 4):
                x = [Reg("v", group[4 * q + i].data.index + word) for i in range(4)]
                emit("v_perm_b32", t0, x[1], x[0], self.k(_PERM_B01))
                emit("v_perm_b32", t1, x[1], x[0], self.k(_PERM_B23))
                emit("v_perm_b32", t2, x[3], x[2], self.k(_PERM_B01))
                emit("v_perm_b32", t3, x[3], x[2], self.k(_PERM_B23))
                for cc, (src0, src1, sel) in enumerate(((t2, t0, _PERM_LO16), (t2, t0, _PERM_HI16),
                                                         (t3, t1, _PERM_LO16), (t3, t1, _PERM_HI16))):
                    dst = Reg("v", stage.out[e + cc].index + q)
                    emit("v_perm_b32", dst, src0, src1, self.k(sel))
        size = R * st.eb
        for col in cols:
            data = Reg("v", stage.out[col].index, max(1, size // 4))
            base, offset = self._lds_place(stage, lds + col * st.lds_row, parity)
            self.emit(_DS_WRITE[size], base, data, offset=offset)

    def _perm_selectors(self) -> None:
        """The v_perm_b32 selectors the packed writes use, made once before any branch."""
        for stage in self.stages:
            if not stage.st.k_is_col and stage.st.pack > 1:
                if stage.st.eb == 2:
                    sels = (_PERM_LO16, _PERM_HI16)
                elif stage.st.pack == 2:
                    sels = tuple(((4 + b) << 8) | b for b in range(min(4, stage.st.vec)))
                else:
                    sels = (_PERM_B01, _PERM_B23, _PERM_LO16, _PERM_HI16)
                for sel in sels:
                    self.k(sel)
