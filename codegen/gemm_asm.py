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

Instruction names are LLVM's mnemonics; the encoder takes them to the spec. Kernel arguments: see KERNARGS.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

from jitgemm.isa.instruction import VCC, Reg
from jitgemm.isa.model import Spec
from jitgemm.isa.targets import TargetProfile

from .asm_emit import Emitter, RegAlloc, class_lookup, counter_lookup
from .gemm_config import SETUP_TEMPS, Staging, fragment_plan, plan_staging, validate_config
from .gemm_ir import GemmConfig, GemmProblem, IRError

# name, offset, size, type
KERNARGS: tuple[tuple[str, int, int, str], ...] = (
    ("a", 0, 8, "ptr"), ("b", 8, 8, "ptr"), ("c", 16, 8, "ptr"), ("d", 24, 8, "ptr"), ("bias", 32, 8, "ptr"),
    ("m", 40, 4, "i32"), ("n", 44, 4, "i32"), ("k", 48, 4, "i32"), ("batch", 52, 4, "i32"),
    ("lda", 56, 4, "i32"), ("ldb", 60, 4, "i32"), ("ldc", 64, 4, "i32"), ("ldd", 68, 4, "i32"),
    ("stride_a", 72, 4, "i32"), ("stride_b", 76, 4, "i32"), ("stride_c", 80, 4, "i32"), ("stride_d", 84, 4, "i32"),
    ("alpha", 88, 4, "f32"), ("beta", 92, 4, "f32"),
)
KERNARG_SIZE = 96
OOB = 0x80000000          # an offset past any num_records the kernel sets (matrices are < 2 GiB)
RSRC_WORD3 = 0x00020000   # raw buffer, DATA_FORMAT 32 (the value LLVM and Triton use on gfx942)
MAX_BUFFER_OFFSET = 4095  # MUBUF instruction offset: 12 bits

_LOAD = {1: "buffer_load_ubyte", 2: "buffer_load_ushort", 4: "buffer_load_dword", 8: "buffer_load_dwordx2",
         16: "buffer_load_dwordx4"}
_STORE = {1: "buffer_store_byte", 2: "buffer_store_short", 4: "buffer_store_dword"}
_DS_WRITE = {1: "ds_write_b8", 2: "ds_write_b16", 4: "ds_write_b32", 8: "ds_write_b64", 16: "ds_write_b128"}
_DS_WRITE_HI = {1: "ds_write_b8_d16_hi", 2: "ds_write_b16_d16_hi"}
_DS_READ = {4: "ds_read_b32", 8: "ds_read_b64", 16: "ds_read_b128"}
_DS_READ2 = {4: "ds_read2_b32", 8: "ds_read2_b64"}
_DS_READ2_MAX = 255       # ds_read2 offsets: 8 bits, in units of the element size

# v_perm_b32 selectors (byte i of the result = byte sel[i] of {src0:src1}, 0-3 from src1, 4-7 from src0)
_PERM_LO16 = 0x05040100   # [src1.lo16, src0.lo16]
_PERM_HI16 = 0x07060302   # [src1.hi16, src0.hi16]
_PERM_B01 = 0x05010400    # [src1.b0, src0.b0, src1.b1, src0.b1]
_PERM_B23 = 0x07030602    # [src1.b2, src0.b2, src1.b3, src0.b3]


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _log2(x: int, what: str) -> int:
    if x < 1 or x & (x - 1):
        raise IRError(f"{what}={x} must be a power of two for this generator")
    return x.bit_length() - 1


@dataclass(frozen=True)
class LoweredKernel:
    name: str
    instructions: tuple
    lds_bytes: int
    next_free_vgpr: int
    next_free_sgpr: int
    next_free_agpr: int
    workgroup_size: int
    grid: tuple[str, str, str]


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


Thunk = Callable[[], None]


class GemmLowering:
    def __init__(self, problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                 name: str = "jitgemm_gemm") -> None:
        self.p, self.c, self.spec, self.target, self.name = problem, config, spec, target, name
        self.res = validate_config(problem, config, spec, target)
        self.mfma = self.res.mfma
        self.threads = config.workgroup_size
        self.e = Emitter(counter_lookup(spec, target), target.get("hazards") or (), class_lookup(spec))
        self.ra = RegAlloc({"s": int(target.get("sgprs", 102)), "v": int(target.get("arch_vgprs", 256)),
                            "a": int(target.get("agprs", 256))})
        self.A, self.B, self.buffer_bytes = plan_staging(problem, config, self.mfma)
        self.lds_bytes = self.buffer_bytes * config.lds_buffers
        self.blocks_m, self.blocks_n, self.groups = fragment_plan(config, self.mfma)
        for what, value in (("waves_n", config.waves_n), ("tile_m", config.tile_m), ("tile_n", config.tile_n)):
            _log2(value, what)

    # --- helpers -------------------------------------------------------------------------------------
    def emit(self, *args, **kw):
        return self.e.emit(*args, **kw)

    def sconst(self, value: int) -> Reg:
        reg = self.ra.take("s")
        self.emit("s_mov_b32", reg, value, writes=[reg])
        return reg

    def vconst(self, value: int) -> Reg:
        """A VGPR holding a constant, made once: VALU instructions may read only one SGPR or literal
        (the constant-bus limit of gfx9), so a constant next to an SGPR or VCC operand lives in a VGPR."""
        cache = self.__dict__.setdefault("_vconsts", {})
        if value not in cache:
            if getattr(self, "_in_loop", False):
                raise AssertionError(f"constant {value:#x} first needed inside the loop: make it before")
            reg = self.vtmp()
            self.emit("v_mov_b32", reg, value, writes=[reg])
            cache[value] = reg
        return cache[value]

    def k(self, value: int):
        """An integer operand for a VOP3 instruction: inline constants as they are, anything else in an SGPR
        (gfx9 VOP3 encodings take no literal)."""
        if -16 <= value <= 64:
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
        for base in (0, 32, 64):
            dst = ra.take("s", 8, align=4)
            emit("s_load_dwordx8", dst, self.kernarg, base, writes=[dst])
            for name, off, size, _ in KERNARGS:
                if base <= off < base + 32:
                    args[name] = Reg("s", dst.index + (off - base) // 4, size // 4)
        self.args = args
        emit("v_and_b32", tid, 0x3FF, tid, writes=[tid])
        lane = self.vtmp()
        emit("v_and_b32", lane, 63, tid, writes=[lane])
        wave_v = self.vtmp()
        emit("v_lshrrev_b32", wave_v, 6, tid, writes=[wave_v])
        wave = ra.take("s")
        emit("v_readfirstlane_b32", wave, wave_v, writes=[wave])
        wave_m, wave_n = self.c.wave_tile
        wrow, wcol = ra.take("s"), ra.take("s")
        emit("s_lshr_b32", wrow, wave, _log2(self.c.waves_n, "waves_n"), writes=[wrow])
        emit("s_mul_i32", wrow, wrow, wave_m, writes=[wrow])
        emit("s_and_b32", wcol, wave, self.c.waves_n - 1, writes=[wcol])
        emit("s_mul_i32", wcol, wcol, wave_n, writes=[wcol])
        row0, col0 = ra.take("s"), ra.take("s")
        emit("s_lshl_b32", row0, wg_y, _log2(self.c.tile_m, "tile_m"), writes=[row0])
        emit("s_lshl_b32", col0, wg_x, _log2(self.c.tile_n, "tile_n"), writes=[col0])
        self.row0, self.col0, self.wrow, self.wcol, self.lane, self.tid = row0, col0, wrow, wcol, lane, tid
        self._batch_offsets(wg_z)
        self.rsrc = {x: self._resource(x) for x in ("a", "b", "c", "d", "bias")
                     if x in ("a", "b", "d") or (x == "c" and self.p.c is not None) or
                     (x == "bias" and self.p.bias != "none")}
        self._zero_accumulators()
        self.oob = self.vconst(OOB)
        mark = ra.next["v"]
        self._main_loop()
        ra.release("v", mark)                     # staging, fragments and addresses are dead after the loop
        self._vconsts = {v: r for v, r in self._vconsts.items() if r.index < mark}
        self._epilogue()
        emit("s_endpgm")
        return LoweredKernel(self.name, tuple(self.e.code), self.lds_bytes, ra.high["v"], ra.high["s"],
                             ra.high["a"], self.threads,
                             (f"ceil(n/{self.c.tile_n})", f"ceil(m/{self.c.tile_m})", "batch"))

    def _batch_offsets(self, wg_z: Reg) -> None:
        """ptr_X += wg_z * stride_X * bytes (64-bit), for every matrix."""
        emit, a = self.emit, self.args
        prod = self.ra.take("s", 2)
        lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
        sizes = {"a": self.p.a.bytes, "b": self.p.b.bytes, "d": self.p.d.bytes}
        if self.p.c is not None:
            sizes["c"] = self.p.c.bytes
        for x, eb in sizes.items():
            ptr = a[x]
            plo, phi = Reg("s", ptr.index), Reg("s", ptr.index + 1)
            emit("s_mul_i32", lo, wg_z, a[f"stride_{x}"], writes=[lo])
            emit("s_mul_hi_u32", hi, wg_z, a[f"stride_{x}"], writes=[hi])
            if eb > 1:
                emit("s_lshl_b64", prod, prod, _log2(eb, "element size"), writes=[prod])
            emit("s_add_u32", plo, plo, lo, writes=[plo])
            emit("s_addc_u32", phi, phi, hi, writes=[phi])

    def _resource(self, x: str) -> Reg:
        """A buffer descriptor whose num_records is exactly the matrix's bytes ((rows-1)*ld + cols)."""
        emit, a, p = self.emit, self.args, self.p
        rsrc = self.ra.take("s", 4, align=4)
        w = [Reg("s", rsrc.index + i) for i in range(4)]
        ptr = a[x]
        emit("s_mov_b32", w[0], Reg("s", ptr.index), writes=[w[0]])
        emit("s_and_b32", w[1], Reg("s", ptr.index + 1), 0xFFFF, writes=[w[1]])
        if x == "bias":
            count = a["m"] if p.bias == "m" else a["n"]
            emit("s_lshl_b32", w[2], count, 2, writes=[w[2]])
        else:
            eb = {"a": p.a, "b": p.b, "c": p.c or p.d, "d": p.d}[x].bytes
            rows, cols = {
                "a": (a["k"], a["m"]) if p.a_transposed else (a["m"], a["k"]),
                "b": (a["n"], a["k"]) if p.b_transposed else (a["k"], a["n"]),
                "c": (a["m"], a["n"]), "d": (a["m"], a["n"])}[x]
            emit("s_sub_u32", w[2], rows, 1, writes=[w[2]])
            emit("s_mul_i32", w[2], w[2], a[f"ld{x}"], writes=[w[2]])
            emit("s_add_u32", w[2], w[2], cols, writes=[w[2]])
            if eb > 1:
                emit("s_lshl_b32", w[2], w[2], _log2(eb, "element size"), writes=[w[2]])
        emit("s_mov_b32", w[3], RSRC_WORD3, writes=[w[3]])
        return rsrc

    def _zero_accumulators(self) -> None:
        n_acc = self.blocks_m * self.blocks_n * self.mfma.acc_regs
        self.acc = self.ra.take("a", n_acc, align=4)
        for i in range(n_acc):
            self.emit("v_accvgpr_write_b32", Reg("a", self.acc.index + i), 0, writes=[Reg("a", self.acc.index + i)])

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
            if st.k_is_col and s.dcol * st.eb <= MAX_BUFFER_OFFSET:
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
        return _Stage(st, slots, packs, self.vtmp(), self.vtmp(), self.ra.take("s"), 0, out, temps)

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
        emit("v_lshrrev_b32", r, _log2(vpr, "vectors per row"), self.tid, writes=[r])
        emit("v_and_b32", c, vpr - 1, self.tid, writes=[c])
        if st.vec > 1:
            emit("v_lshlrev_b32", c, _log2(st.vec, "vec"), c, writes=[c])
        eb_log = _log2(st.eb, "element size")
        if st.k_is_col:                      # stored rows: M/N; stored columns: K
            fix_local, k_local = r, c
            emit("v_add_u32", t, origin, r, writes=[t])
            emit("v_mul_lo_u32", off, t, ld, writes=[off])
            emit("v_add_u32", off, off, c, writes=[off])
        else:                                # stored rows: K (in packs of st.pack); stored columns: M/N
            if st.pack > 1:
                emit("v_lshlrev_b32", r, _log2(st.pack, "pack"), r, writes=[r])
            fix_local, k_local = c, r
            emit("v_mul_lo_u32", off, r, ld, writes=[off])
            emit("v_add3_u32", off, off, c, origin, writes=[off])
        if eb_log:
            emit("v_lshlrev_b32", off, eb_log, off, writes=[off])
        emit("v_mov_b32", stage.k_local, k_local, writes=[stage.k_local])
        wb = stage.write_base
        emit("v_mul_u32_u24", wb, st.lds_row, fix_local, writes=[wb])
        if eb_log:
            emit("v_lshlrev_b32", t, eb_log, k_local, writes=[t])
        emit("v_add3_u32", wb, wb, t if eb_log else k_local, self.k(st.lds_base), writes=[wb])
        sdelta, sbound = self.stmp, self.stmp2
        if not st.k_is_col:
            emit("s_sub_i32", self.rem_fix, bound, origin, writes=[self.rem_fix])
        done = set()
        for s in stage.slots:
            if s.voff.index in done:
                continue
            done.add(s.voff.index)
            in_imm = st.k_is_col and s.dcol * st.eb <= MAX_BUFFER_OFFSET      # the K delta is s.imm
            delta_cols = 0 if in_imm else s.dcol * st.eb
            if s.drow:
                emit("s_mul_i32", sdelta, ld, s.drow * st.eb, writes=[sdelta])
                if delta_cols:
                    emit("s_add_u32", sdelta, sdelta, delta_cols, writes=[sdelta])
                emit("v_add_u32", s.voff, sdelta, off, writes=[s.voff])
            elif delta_cols:
                emit("v_add_u32", s.voff, delta_cols, off, writes=[s.voff])
            else:
                emit("v_mov_b32", s.voff, off, writes=[s.voff])
            if not st.k_is_col:              # column past M/N: never in range
                emit("s_sub_i32", sbound, self.rem_fix, s.dcol, writes=[sbound])
                emit("v_cmp_gt_i32", VCC, sbound, c, writes=[VCC])
                emit("v_cndmask_b32", s.voff, self.oob, s.voff, VCC, writes=[s.voff])
        emit("s_mov_b32", stage.soff, 0, writes=[stage.soff])
        if st.k_is_col:
            stage.step = self.c.depth_k * st.eb
        else:
            stage.step = self.ra.take("s")
            emit("s_mul_i32", stage.step, ld, self.c.depth_k * st.eb, writes=[stage.step])

    # --- staging: in the loop ----------------------------------------------------------------------------------
    def _load_thunks(self, guarded: bool) -> list[Thunk]:
        """Global loads of the next tile to load, one thunk per slot, then the soffset (and, guarded, the K
        index) advance. Guarded: every slot's offset is masked against the K that remains for that tile."""
        emit = self.emit
        out: list[Thunk] = []
        if guarded:
            out.append(lambda: emit("s_sub_i32", self.rem_k, self.args["k"], self.kload, writes=[self.rem_k]))
        for stage in self.stages:
            st = stage.st
            for s in stage.slots:
                def load(stage=stage, st=st, s=s):
                    vaddr = s.voff
                    if guarded:
                        vaddr = self.vaddr
                        emit("s_sub_i32", self.stmp, self.rem_k, s.dk(st.k_is_col), writes=[self.stmp])
                        emit("v_cmp_gt_i32", VCC, self.stmp, stage.k_local, writes=[VCC])
                        emit("v_cndmask_b32", vaddr, self.oob, s.voff, VCC, writes=[vaddr])
                    emit(_LOAD[st.load_bytes], s.data, vaddr, self.rsrc[st.name], stage.soff, offen=True,
                         offset=s.imm or None, writes=[s.data])
                out.append(load)
        advanced = []
        for stage in self.stages:                 # after every load: operands with equal steps share soffset
            if stage.soff not in advanced:
                advanced.append(stage.soff)
                out.append(lambda stage=stage: emit("s_add_u32", stage.soff, stage.soff, stage.step,
                                                    writes=[stage.soff]))
        if guarded:
            out.append(lambda: emit("s_add_u32", self.kload, self.kload, self.c.depth_k, writes=[self.kload]))
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

    def _write_vector(self, stage: _Stage, s: _Slot, parity: int) -> None:
        st = stage.st
        for part in range(0, st.load_bytes, st.chunk):
            data = Reg("v", s.data.index + part // 4, max(1, st.chunk // 4))
            self.emit(_DS_WRITE[st.chunk], stage.write_base, data,
                      offset=(s.lds + part + parity * self.buffer_bytes) or None, writes=[])

    def _write_elements(self, stage: _Stage, s: _Slot, parity: int) -> None:
        """A transposed vector one element per LDS row (32-bit elements, or no second K row to pack with):
        16-bit halves and bytes 0/2 straight from the register (d16_hi writes take the high half)."""
        emit, st = self.emit, stage.st
        base = s.dcol * st.lds_row + s.drow * st.eb + parity * self.buffer_bytes
        for e in range(st.vec):
            word = Reg("v", s.data.index + e * st.eb // 4)
            byte = e * st.eb % 4
            offset = (base + e * st.lds_row) or None
            if st.eb == 4 or byte == 0:
                emit(_DS_WRITE[st.eb], stage.write_base, word, offset=offset, writes=[])
            elif byte == 2:
                emit(_DS_WRITE_HI[st.eb], stage.write_base, word, offset=offset, writes=[])
            else:                             # bytes 1 and 3: shifted down by 8 to bytes 0 and 2
                shifted = stage.temps[0]
                if byte == 1:
                    emit("v_lshrrev_b32", shifted, 8, word, writes=[shifted])
                emit(_DS_WRITE[1] if byte == 1 else _DS_WRITE_HI[1], stage.write_base, shifted, offset=offset,
                     writes=[])

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
                emit("v_perm_b32", dst, hi, lo, self.k(_PERM_HI16 if half else _PERM_LO16), writes=[dst])
        elif R == 2:                          # bytes, two K rows: 16 bits per column
            cols = [e]
            word, byte = e // 4, e % 4
            lo, hi = Reg("v", group[0].data.index + word), Reg("v", group[1].data.index + word)
            dst = stage.out[e]
            emit("v_perm_b32", dst, hi, lo, self.k(((4 + byte) << 8) | byte), writes=[dst])
        else:                                 # bytes, 4-row blocks: 4x4 byte transposes of words e // 4
            cols = list(range(e, e + 4))
            word = e // 4
            t0, t1, t2, t3 = stage.temps
            for q in range(R // 4):
                x = [Reg("v", group[4 * q + i].data.index + word) for i in range(4)]
                emit("v_perm_b32", t0, x[1], x[0], self.k(_PERM_B01), writes=[t0])
                emit("v_perm_b32", t1, x[1], x[0], self.k(_PERM_B23), writes=[t1])
                emit("v_perm_b32", t2, x[3], x[2], self.k(_PERM_B01), writes=[t2])
                emit("v_perm_b32", t3, x[3], x[2], self.k(_PERM_B23), writes=[t3])
                for cc, (src0, src1, sel) in enumerate(((t2, t0, _PERM_LO16), (t2, t0, _PERM_HI16),
                                                         (t3, t1, _PERM_LO16), (t3, t1, _PERM_HI16))):
                    dst = Reg("v", stage.out[e + cc].index + q)
                    emit("v_perm_b32", dst, src0, src1, self.k(sel), writes=[dst])
        size = R * st.eb
        for col in cols:
            data = Reg("v", stage.out[col].index, max(1, size // 4))
            self.emit(_DS_WRITE[size], stage.write_base, data,
                      offset=(lds + col * st.lds_row + parity * self.buffer_bytes) or None, writes=[])

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
            emit("v_and_b32", idx, dim - 1, self.lane, writes=[idx])
            emit("v_add_u32", idx, sbase, idx, writes=[idx])
            emit("v_lshrrev_b32", kk, _log2(dim, "mfma dim"), self.lane, writes=[kk])
            emit("v_mul_u32_u24", kk, kpl * st.eb, kk, writes=[kk])
            emit("v_mul_u32_u24", lane_base, st.lds_row, idx, writes=[lane_base])
            emit("v_add_u32", lane_base, lane_base, kk, writes=[lane_base])
            current = None
            for parity in range(self.c.lds_buffers):
                for i in range(blocks):
                    offset = st.lds_base + parity * self.buffer_bytes + i * dim * st.lds_row
                    if current is None or offset - current[1] + span > _DS_READ2_MAX * unit:
                        reg = self.read_bases.pop(0)
                        if offset:
                            emit("v_add_u32", reg, offset, lane_base, writes=[reg])
                        else:
                            emit("v_mov_b32", reg, lane_base, writes=[reg])
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
                if len(offs) == 2:
                    self.emit(_DS_READ2[unit], Reg("v", dst.index, 2 * regs), base, offset0=offs[0] // unit or None,
                              offset1=offs[1] // unit or None, writes=[Reg("v", dst.index, 2 * regs)])
                else:
                    self.emit(_DS_READ[unit], Reg("v", dst.index, regs), base, offset=offs[0] or None,
                              writes=[Reg("v", dst.index, regs)])
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
                            self.emit(m.name.lower(), acc, a, b, acc, writes=[acc])
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

    # --- the loop --------------------------------------------------------------------------------------------
    def _barrier(self) -> None:
        self.e.wait(lgkmcnt=0)
        self.emit("s_barrier")

    def _body(self, parity: int, guarded: bool) -> None:
        """One K tile: LDS buffer `parity` holds it (written before the first barrier with one buffer)."""
        if self.c.lds_buffers == 1:
            if self.c.prefetch == 1:
                for th in self._load_thunks(guarded):
                    th()
            for th in self._write_thunks(0):
                th()
            self._barrier()
            self._compute(0, early=self._load_thunks(guarded) if self.c.prefetch == 2 else [])
            self._barrier()
            return
        other = 1 - parity
        if self.c.prefetch == 1:
            self._compute(parity, early=self._load_thunks(guarded), late=self._write_thunks(other))
        else:
            self._compute(parity, early=self._write_thunks(other) + self._load_thunks(guarded))
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
        mark = ra.next["v"]
        temps = [self.vtmp() for _ in range(SETUP_TEMPS)]
        for stage in self.stages:
            self._setup_stage(stage, temps)
        a, b = self.stages
        if isinstance(a.step, int) and a.step == b.step:
            b.soff = a.soff
        self._fragment_setup(temps)
        ra.release("v", mark)
        for stage in self.stages:                 # v_perm_b32 selectors, made once before any branch
            if not stage.st.k_is_col and stage.st.pack > 1:
                if stage.st.eb == 2:
                    sels = (_PERM_LO16, _PERM_HI16)
                elif stage.st.pack == 2:
                    sels = tuple(((4 + b) << 8) | b for b in range(min(4, stage.st.vec)))
                else:
                    sels = (_PERM_B01, _PERM_B23, _PERM_LO16, _PERM_HI16)
                for sel in sels:
                    self.k(sel)

        # loop control: tiles = ceil(K / depth); the first `fast` iterations load a tile inside K
        log_depth = _log2(c.depth_k, "depth_k")
        lookahead = (c.prefetch - 1) + (c.lds_buffers - 1)
        fast, tail, cnt, cnt2 = (ra.take("s") for _ in range(4))
        emit("s_lshr_b32", fast, self.args["k"], log_depth, writes=[fast])
        emit("s_add_u32", tail, self.args["k"], c.depth_k - 1, writes=[tail])
        emit("s_lshr_b32", tail, tail, log_depth, writes=[tail])
        if lookahead:
            emit("s_sub_i32", fast, fast, lookahead, writes=[fast])
            emit("s_max_i32", fast, fast, 0, writes=[fast])
        emit("s_sub_u32", tail, tail, fast, writes=[tail])
        emit("s_sub_u32", cnt, 0, fast, writes=[cnt])
        emit("s_sub_u32", cnt2, 0, tail, writes=[cnt2])

        # prologue: the first `lookahead` tiles
        emit("s_mov_b32", self.kload, 0, writes=[self.kload])
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
        emit("s_add_u32", self.stmp, fast, lookahead, writes=[self.stmp])
        emit("s_lshl_b32", self.kload, self.stmp, log_depth, writes=[self.kload])

        e = self.e
        self._in_loop = True
        emit("s_cmp_eq_u32", fast, 0)
        e.branch("s_cbranch_scc1", "tail0")
        e.label("main_loop")
        if c.lds_buffers == 1:
            self._body(0, guarded=False)
            emit("s_add_u32", cnt, cnt, 1, writes=[cnt])
            e.branch("s_cbranch_scc0", "main_loop")
            e.label("tail0")
            if not lookahead:
                emit("s_cmp_eq_u32", tail, 0)
                e.branch("s_cbranch_scc1", "loop_done")
            e.label("tail_loop")
            self._body(0, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1, writes=[cnt2])
            e.branch("s_cbranch_scc0", "tail_loop")
        else:
            self._body(0, guarded=False)
            emit("s_add_u32", cnt, cnt, 1, writes=[cnt])
            e.branch("s_cbranch_scc1", "tail1")
            self._body(1, guarded=False)
            emit("s_add_u32", cnt, cnt, 1, writes=[cnt])
            e.branch("s_cbranch_scc0", "main_loop")
            e.label("tail0")
            self._body(0, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1, writes=[cnt2])
            e.branch("s_cbranch_scc1", "loop_done")
            e.label("tail1")
            self._body(1, guarded=True)
            emit("s_add_u32", cnt2, cnt2, 1, writes=[cnt2])
            e.branch("s_cbranch_scc0", "tail0")
        e.label("loop_done")
        e.wait(vmcnt=0)
        self._in_loop = False

    # --- epilogue --------------------------------------------------------------------------------------
    def _epilogue(self) -> None:
        emit, ra, m = self.emit, self.ra, self.mfma
        groups = 64 // m.n
        rbase, cbase = self.vtmp(), self.vtmp()
        emit("v_lshrrev_b32", rbase, _log2(m.n, "mfma n"), self.lane, writes=[rbase])
        emit("v_lshlrev_b32", rbase, 2, rbase, writes=[rbase])
        origin = self.ra.take("s")
        emit("s_add_u32", origin, self.wrow, self.row0, writes=[origin])
        emit("v_add_u32", rbase, origin, rbase, writes=[rbase])
        emit("v_and_b32", cbase, m.n - 1, self.lane, writes=[cbase])
        emit("s_add_u32", origin, self.wcol, self.col0, writes=[origin])
        emit("v_add_u32", cbase, origin, cbase, writes=[cbase])
        row, col, x, off, tmp, tmp2 = (self.vtmp() for _ in range(6))
        cmask = ra.take("s", 2)
        consts = self._epilogue_constants()
        self.round_reg = consts.get("round")
        self.nan_mask = ra.take("s", 2)
        for i in range(self.blocks_m):
            for j in range(self.blocks_n):
                acc = self._acc(i, j)
                emit("v_add_u32", col, j * m.n, cbase, writes=[col])
                emit("v_cmp_gt_u32_e64", cmask, self.args["n"], col, writes=[cmask])
                for r in range(m.acc_regs):
                    drow = i * m.m + (r // 4) * 4 * groups + r % 4
                    emit("v_add_u32", row, drow, rbase, writes=[row])
                    emit("v_cmp_gt_u32", VCC, self.args["m"], row, writes=[VCC])
                    emit("s_and_b64", VCC, VCC, cmask, writes=[VCC])
                    emit("v_accvgpr_read_b32", x, Reg("a", acc.index + r), writes=[x])
                    self._epilogue_value(x, row, col, off, tmp, tmp2, consts)
                    self._store(x, row, col, off, tmp)

    def _epilogue_constants(self) -> dict:
        p = self.p
        consts = {}
        if p.activation == "gelu":
            consts["c3"] = self.sconst(_f32_bits(0.044715))
            consts["k"] = self.sconst(_f32_bits(0.7978845608028654 * 2.0 * math.log2(math.e)))
        if self.mfma.acc.kind == "float" and p.d.name == "bf16":
            consts["round"] = self.sconst(0x7FFF)
        return consts

    def _masked_offset(self, off: Reg, row: Reg, col: Reg, ld: Reg, eb: int) -> None:
        """off = in range (VCC) ? (row*ld + col) * eb : OOB."""
        emit = self.emit
        emit("v_mul_lo_u32", off, row, ld, writes=[off])
        emit("v_add_u32", off, off, col, writes=[off])
        if eb > 1:
            emit("v_lshlrev_b32", off, _log2(eb, "element size"), off, writes=[off])
        emit("v_cndmask_b32", off, self.oob, off, VCC, writes=[off])

    def _load_scalar(self, dst: Reg, rsrc: Reg, off: Reg, dtype) -> None:
        """Load one element as f32 (or i32) into dst."""
        emit = self.emit
        emit(_LOAD[dtype.bytes], dst, off, rsrc, 0, offen=True, writes=[dst])
        if dtype.name == "bf16":
            emit("v_lshlrev_b32", dst, 16, dst, writes=[dst])
        elif dtype.name == "fp16":
            emit("v_cvt_f32_f16", dst, dst, writes=[dst])

    def _epilogue_value(self, x: Reg, row: Reg, col: Reg, off: Reg, tmp: Reg, tmp2: Reg, consts) -> None:
        emit, p, a = self.emit, self.p, self.args
        integer = self.mfma.acc.kind == "int"
        if p.alpha != 1.0:
            if integer:
                emit("v_mul_lo_u32", x, x, a["alpha"], writes=[x])
            else:
                emit("v_mul_f32", x, a["alpha"], x, writes=[x])
        if p.c is not None and p.beta != 0.0:
            self._masked_offset(off, row, col, a["ldc"], p.c.bytes)
            self._load_scalar(tmp, self.rsrc["c"], off, p.c)
            if integer:
                emit("v_mul_lo_u32", tmp, tmp, a["beta"], writes=[tmp])
                emit("v_add_u32", x, x, tmp, writes=[x])
            else:
                emit("v_fma_f32", x, tmp, a["beta"], x, writes=[x])
        if p.bias != "none":
            index = row if p.bias == "m" else col
            emit("v_lshlrev_b32", off, 2, index, writes=[off])
            emit("v_cndmask_b32", off, self.oob, off, VCC, writes=[off])
            emit("buffer_load_dword", tmp, off, self.rsrc["bias"], 0, offen=True, writes=[tmp])
            emit("v_add_u32" if integer else "v_add_f32", x, x, tmp, writes=[x])
        if p.activation == "relu":
            if integer:
                emit("v_max_i32", x, 0, x, writes=[x])
            else:
                emit("v_max_f32", x, 0, x, writes=[x])
        elif p.activation == "gelu":
            # gelu(x) ~= x * (0.5 + 0.5 * tanh(y)), y = sqrt(2/pi) * (x + 0.044715 x^3),
            # tanh(y) = 1 - 2 / (1 + 2^(2 y log2 e))
            emit("v_mul_f32", tmp, x, x, writes=[tmp])
            emit("v_fma_f32", tmp, tmp, consts["c3"], 1.0, writes=[tmp])
            emit("v_mul_f32", tmp, tmp, x, writes=[tmp])
            emit("v_mul_f32", tmp, consts["k"], tmp, writes=[tmp])
            emit("v_exp_f32", tmp, tmp, writes=[tmp])
            emit("v_add_f32", tmp, 1.0, tmp, writes=[tmp])
            emit("v_rcp_f32", tmp, tmp, writes=[tmp])
            emit("v_fma_f32", tmp, tmp, -2.0, 1.0, writes=[tmp])
            emit("v_fma_f32", tmp, tmp, 0.5, 0.5, writes=[tmp])
            emit("v_mul_f32", x, x, tmp, writes=[x])

    def _store(self, x: Reg, row: Reg, col: Reg, off: Reg, tmp: Reg) -> None:
        emit, p = self.emit, self.p
        if p.d.name == "bf16" and self.mfma.acc.kind == "float":
            # round to nearest even; NaN stays NaN (quiet 0x7fc0)
            emit("v_bfe_u32", tmp, x, 16, 1, writes=[tmp])
            emit("v_add3_u32", tmp, x, tmp, self.round_reg, writes=[tmp])
            emit("v_lshrrev_b32", tmp, 16, tmp, writes=[tmp])
            emit("v_cmp_o_f32_e64", self.nan_mask, x, x, writes=[self.nan_mask])
            emit("v_cndmask_b32_e64", x, self.vconst(0x7FC0), tmp, self.nan_mask, writes=[x])
        elif p.d.name == "fp16":
            emit("v_cvt_f16_f32", x, x, writes=[x])
        self._masked_offset(off, row, col, self.args["ldd"], p.d.bytes)
        emit(_STORE[p.d.bytes], x, off, self.rsrc["d"], 0, offen=True, writes=[])


def lower_gemm(problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
               name: str = "jitgemm_gemm") -> LoweredKernel:
    """Instructions and resource use of one GEMM kernel class."""
    return GemmLowering(problem, config, spec, target, name).lower()
