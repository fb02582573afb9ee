"""Lowering the tiled GEMM IR to gfx9 (CDNA) instructions: the direct-assembly generator.

One workgroup computes a TILE_M x TILE_N block of D for one batch; its waves split the tile into wave
tiles of MFMA blocks whose accumulators live in AGPRs. Per step of DEPTH_K:

  global -> VGPR staging (buffer loads; out-of-range elements get an offset past the buffer's
  num_records, so the hardware returns 0 — that is how ragged M, N and K edges work)
  -> LDS, both operands stored K-contiguous ([m][k] and [n][k], rows padded by LDS_PAD)
  -> MFMA operand fragments (ds_read) -> MFMA.

With prefetch=2 the loads of the next step are issued before this step's MFMAs. The epilogue reads the
accumulators, applies alpha/beta*C/bias/activation, converts and stores with bounds-checked buffer stores.

MFMA operand/result lane layouts (single-block MFMAs, 64 lanes; AMD's "AMD matrix instruction calculator"
for CDNA 3 and LLVM's AMDGPU MFMA documentation): lane l holds A[l % M][kpl*(l // M) + j] and
B[kpl*(l // N) + j][l % N] for j < kpl = K*M/64, and result register r of lane l is
D[(r // 4) * 4 * (64 // N) + 4 * (l // N) + r % 4][l % N].

Instruction names are LLVM's mnemonics; the encoder takes them to the spec. Kernel arguments: see KERNARGS.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from isa.instruction import VCC, Instruction, Reg
from isa.model import Spec
from isa.targets import TargetProfile

from .asm_emit import Emitter, RegAlloc, counter_lookup
from .gemm_config import validate_config
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

_LOAD = {1: "buffer_load_ubyte", 2: "buffer_load_ushort", 4: "buffer_load_dword", 8: "buffer_load_dwordx2",
         16: "buffer_load_dwordx4"}
_STORE = {1: "buffer_store_byte", 2: "buffer_store_short", 4: "buffer_store_dword"}
_DS_WRITE = {1: "ds_write_b8", 2: "ds_write_b16", 4: "ds_write_b32", 8: "ds_write_b64", 16: "ds_write_b128"}
_DS_READ = {4: "ds_read_b32", 8: "ds_read_b64", 16: "ds_read_b128"}


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


@dataclass(frozen=True)
class _Operand:
    """How one input matrix (A or B) is staged."""

    name: str          # "a" or "b"
    eb: int            # bytes per element
    vec: int           # elements per global load
    rows_t: int        # stored tile rows
    cols_t: int        # stored tile cols (contiguous in memory)
    k_is_col: bool     # K runs along the contiguous dimension
    tile_fixed: int    # tile extent of the non-K dim (tile_m for A, tile_n for B)
    lds_base: int
    lds_row: int       # bytes per LDS row (one m or n index)

    @property
    def slots(self) -> int:
        return self.rows_t * self.cols_t // self.vec


class GemmLowering:
    def __init__(self, problem: GemmProblem, config: GemmConfig, spec: Spec, target: TargetProfile,
                 name: str = "jitgemm_gemm") -> None:
        self.p, self.c, self.spec, self.target, self.name = problem, config, spec, target, name
        self.res = validate_config(problem, config, spec, target)
        self.mfma = self.res.mfma
        self.threads = config.workgroup_size
        self.e = Emitter(counter_lookup(spec, target), target.get("hazards") or ())
        self.ra = RegAlloc({"s": int(target.get("sgprs", 102)), "v": int(target.get("arch_vgprs", 256)),
                            "a": int(target.get("agprs", 256))})
        self._check_shapes()

    # --- planning ------------------------------------------------------------------------------------
    def _check_shapes(self) -> None:
        c, p = self.c, self.p
        for what, value in (("tile_m", c.tile_m), ("tile_n", c.tile_n), ("depth_k", c.depth_k),
                            ("waves_m", c.waves_m), ("waves_n", c.waves_n), ("vec_a", c.vec_a), ("vec_b", c.vec_b)):
            _log2(value, what)
        row_a = (c.depth_k + c.lds_pad) * p.a.bytes
        row_b = (c.depth_k + c.lds_pad) * p.b.bytes
        self.A = _Operand("a", p.a.bytes, c.vec_a, *( (c.depth_k, c.tile_m) if p.a_transposed
                                                      else (c.tile_m, c.depth_k)),
                          k_is_col=not p.a_transposed, tile_fixed=c.tile_m, lds_base=0, lds_row=row_a)
        self.B = _Operand("b", p.b.bytes, c.vec_b, *((c.tile_n, c.depth_k) if p.b_transposed
                                                     else (c.depth_k, c.tile_n)),
                          k_is_col=p.b_transposed, tile_fixed=c.tile_n, lds_base=c.tile_m * row_a, lds_row=row_b)
        for op in (self.A, self.B):
            vbytes = op.vec * op.eb
            if vbytes not in _LOAD:
                raise IRError(f"vec_{op.name}={op.vec} gives {vbytes}-byte loads; accepted: 1, 2, 4, 8 or 16 bytes")
            if op.cols_t % op.vec:
                raise IRError(f"vec_{op.name}={op.vec} does not divide the tile's contiguous extent {op.cols_t}")
            if op.slots % self.threads:
                raise IRError(f"the {op.name.upper()} tile ({op.rows_t}x{op.cols_t}, vec {op.vec}) does not split "
                              f"evenly over {self.threads} work-items")
            frag = self.mfma.a_regs * 4 if op.name == "a" else self.mfma.b_regs * 4
            align = max(frag, vbytes if op.k_is_col else op.eb)
            if op.lds_row % align:
                raise IRError(f"LDS row of {op.name.upper()} is {op.lds_row} bytes (depth_k + lds_pad elements); it "
                              f"must be a multiple of {align}: choose lds_pad accordingly")
        self.lds_bytes = c.tile_m * row_a + c.tile_n * row_b
        if self.mfma.acc.kind == "int" and p.d.name != "int32":
            raise IRError("int8 GEMM writes int32")

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
        self._main_loop()
        self._epilogue()
        emit("s_endpgm")
        return LoweredKernel(self.name, tuple(self.e.code), self.lds_bytes, ra.next["v"], ra.next["s"],
                             ra.next["a"], self.threads,
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
        wave_m, wave_n = self.c.wave_tile
        self.blocks_m, self.blocks_n = wave_m // self.mfma.m, wave_n // self.mfma.n
        n_acc = self.blocks_m * self.blocks_n * self.mfma.acc_regs
        self.acc = self.ra.take("a", n_acc, align=4)
        for i in range(n_acc):
            self.emit("v_accvgpr_write_b32", Reg("a", self.acc.index + i), 0, writes=[Reg("a", self.acc.index + i)])

    # --- global -> LDS ---------------------------------------------------------------------------------
    def _plan_slots(self, op: _Operand):
        """Load slots of one operand. Work-item t loads vectors t, t + T, t + 2T, ... of the stored tile, so
        every slot is the first one moved by a compile-time (row, col) delta: the work-item keeps one base
        (in-tile fixed and k index, global offset, LDS address) and per slot only its data registers."""
        emit = self.emit
        ld = self.args[f"ld{op.name}"]
        vpr = op.cols_t // op.vec                     # vectors per stored row
        cv_log = _log2(vpr, "vectors per row")
        origin = self.row0 if op.name == "a" else self.col0
        r, ccol = self.vtmp(), self.vtmp()
        emit("v_lshrrev_b32", r, cv_log, self.tid, writes=[r])
        emit("v_and_b32", ccol, vpr - 1, self.tid, writes=[ccol])
        if op.vec > 1:
            emit("v_lshlrev_b32", ccol, _log2(op.vec, "vec"), ccol, writes=[ccol])
        k_local, fix_local = (ccol, r) if op.k_is_col else (r, ccol)
        grow, gcol, kb = self.setup_scratch[:3]
        if op.k_is_col:        # stored rows are the fixed dimension
            emit("v_add_u32", grow, origin, r, writes=[grow])
            emit("v_mov_b32", gcol, ccol, writes=[gcol])
        else:
            emit("v_mov_b32", grow, r, writes=[grow])
            emit("v_add_u32", gcol, origin, ccol, writes=[gcol])
        off = self.vtmp()
        emit("v_mul_lo_u32", off, grow, ld, writes=[off])
        emit("v_add_u32", off, off, gcol, writes=[off])
        if op.eb > 1:
            emit("v_lshlrev_b32", off, _log2(op.eb, "element size"), off, writes=[off])
        lds = self.vtmp()
        emit("v_mul_u32_u24", lds, op.lds_row, fix_local, writes=[lds])
        emit("v_lshlrev_b32", kb, _log2(op.eb, "element size"), k_local, writes=[kb])
        emit("v_add3_u32", lds, lds, kb, self.k(op.lds_base), writes=[lds])
        slots = []
        vb = op.vec * op.eb
        for i in range(op.slots // self.threads):
            lin = i * self.threads                # vector index delta of this slot
            drow, dcol = lin // vpr, (lin % vpr) * op.vec
            dk, dfix = (dcol, drow) if op.k_is_col else (drow, dcol)
            slots.append({"drow": drow, "dcol": dcol, "dk": dk, "dfix": dfix,
                          "lds_delta": dfix * op.lds_row + dk * op.eb, "data": self.vtmp(max(1, vb // 4))})
        if op.k_is_col:
            step = self.c.depth_k * op.eb
        else:
            step = self.ra.take("s")
            emit("s_mul_i32", step, ld, self.c.depth_k * op.eb, writes=[step])
        rem_fix = self.ra.take("s")
        bound = self.args["m"] if op.name == "a" else self.args["n"]
        emit("s_sub_u32", rem_fix, bound, origin, writes=[rem_fix])
        return {"slots": slots, "step": step, "rem_fix": rem_fix, "op": op, "off": off, "fix": fix_local,
                "k": k_local, "lds": lds, "ld": ld}

    def _issue_loads(self, plan, rem_k: Reg) -> None:
        """Bounds: the slot's element is in range when fix0 + dfix < rem_fix and k0 + dk < rem_k, i.e. the base
        indices against bounds lowered by the slot's deltas (signed: the lowered bound may go negative)."""
        emit, op = self.emit, plan["op"]
        vaddr, sb, sk, so = self.vaddr, self.sbound, self.kbound, self.soff
        for slot in plan["slots"]:
            emit("s_sub_i32", sb, plan["rem_fix"], slot["dfix"], writes=[sb])
            emit("s_sub_i32", sk, rem_k, slot["dk"], writes=[sk])
            emit("v_cmp_gt_i32", VCC, sb, plan["fix"], writes=[VCC])
            emit("v_cmp_gt_i32_e64", self.mask, sk, plan["k"], writes=[self.mask])
            emit("s_and_b64", VCC, VCC, self.mask, writes=[VCC])
            delta = slot["dcol"] * op.eb
            if slot["drow"]:
                emit("s_mul_i32", so, plan["ld"], slot["drow"] * op.eb, writes=[so])
                if delta:
                    emit("s_add_u32", so, so, delta, writes=[so])
                emit("v_add_u32", vaddr, so, plan["off"], writes=[vaddr])
            elif delta:
                emit("v_add_u32", vaddr, delta, plan["off"], writes=[vaddr])
            else:
                emit("v_mov_b32", vaddr, plan["off"], writes=[vaddr])
            emit("v_cndmask_b32", vaddr, self.oob, vaddr, VCC, writes=[vaddr])
            emit(_LOAD[op.vec * op.eb], slot["data"], vaddr, self.rsrc[op.name], 0, offen=True,
                 writes=[slot["data"]])

    def _advance(self, plan) -> None:
        self.emit("v_add_u32", plan["off"], plan["step"], plan["off"], writes=[plan["off"]])

    def _write_lds(self, plan) -> None:
        emit, op = self.emit, plan["op"]
        vb = op.vec * op.eb
        for slot in plan["slots"]:
            data = slot["data"]
            if op.k_is_col or op.vec == 1:      # the vector is contiguous in LDS too
                emit(_DS_WRITE[vb], plan["lds"], data, offset=slot["lds_delta"] or None, writes=[])
                continue
            for e in range(op.vec):             # scatter: element e goes to the next LDS row
                word = Reg("v", data.index + (e * op.eb) // 4)
                shift = (e * op.eb) % 4 * 8
                src = word
                if shift:
                    src = self.scratch
                    emit("v_lshrrev_b32", src, shift, word, writes=[src])
                emit(_DS_WRITE[op.eb], plan["lds"], src, offset=(slot["lds_delta"] + e * op.lds_row) or None,
                     writes=[])

    # --- MFMA steps ------------------------------------------------------------------------------------
    def _fragment_bases(self) -> None:
        """Per-lane LDS byte addresses of the first A and B fragments of this wave."""
        emit, m = self.emit, self.mfma
        self.frag_base = {}
        for op, dim, sbase in ((self.A, m.m, self.wrow), (self.B, m.n, self.wcol)):
            kpl = m.k * dim // 64
            idx, kk = self.vtmp(), self.vtmp()
            emit("v_and_b32", idx, dim - 1, self.lane, writes=[idx])
            emit("v_add_u32", idx, sbase, idx, writes=[idx])
            emit("v_lshrrev_b32", kk, _log2(dim, "mfma dim"), self.lane, writes=[kk])
            emit("v_mul_u32_u24", kk, kpl * op.eb, kk, writes=[kk])
            base = self.vtmp()
            emit("v_mul_u32_u24", base, op.lds_row, idx, writes=[base])
            emit("v_add3_u32", base, base, kk, self.k(op.lds_base), writes=[base])
            self.frag_base[op.name] = base

    def _mfma_step(self) -> None:
        emit, m = self.emit, self.mfma
        fa_bytes, fb_bytes = m.a_regs * 4, m.b_regs * 4
        for kk in range(0, self.c.depth_k, m.k):
            for i in range(self.blocks_m):
                emit(_DS_READ[fa_bytes], self.frag_a[i], self.frag_base["a"],
                     offset=(i * m.m * self.A.lds_row + kk * self.A.eb) or None, writes=[self.frag_a[i]])
            for j in range(self.blocks_n):
                emit(_DS_READ[fb_bytes], self.frag_b[j], self.frag_base["b"],
                     offset=(j * m.n * self.B.lds_row + kk * self.B.eb) or None, writes=[self.frag_b[j]])
            for i in range(self.blocks_m):
                for j in range(self.blocks_n):
                    acc = self._acc(i, j)
                    emit(m.name.lower(), acc, self.frag_a[i], self.frag_b[j], acc, writes=[acc])

    def _acc(self, i: int, j: int) -> Reg:
        n = self.mfma.acc_regs
        return Reg("a", self.acc.index + (i * self.blocks_n + j) * n, n)

    def _main_loop(self) -> None:
        emit, ra = self.emit, self.ra
        self.mask = ra.take("s", 2)
        self.oob = self.vconst(OOB)
        self.vaddr = self.vtmp()
        self.scratch = self.vtmp()
        self.setup_scratch = [self.vtmp() for _ in range(3)]
        self.sbound, self.kbound, self.soff = ra.take("s"), ra.take("s"), ra.take("s")
        plans = [self._plan_slots(self.A), self._plan_slots(self.B)]
        self._fragment_bases()
        self.frag_a = [self.vtmp(self.mfma.a_regs) for _ in range(self.blocks_m)]
        self.frag_b = [self.vtmp(self.mfma.b_regs) for _ in range(self.blocks_n)]
        kt, rem_k = ra.take("s"), ra.take("s")
        emit("s_mov_b32", kt, 0, writes=[kt])
        emit("s_mov_b32", rem_k, self.args["k"], writes=[rem_k])
        prefetch = self.c.prefetch == 2
        if prefetch:
            for plan in plans:
                self._issue_loads(plan, rem_k)
        self.e.label("main_loop")
        if not prefetch:
            for plan in plans:
                self._issue_loads(plan, rem_k)
        for plan in plans:
            self._write_lds(plan)
        self.e.wait(lgkmcnt=0)
        emit("s_barrier")
        emit("s_add_u32", kt, kt, self.c.depth_k, writes=[kt])
        emit("s_sub_u32", rem_k, self.args["k"], kt, writes=[rem_k])
        for plan in plans:
            self._advance(plan)
        if prefetch:
            for plan in plans:      # the next step's tile: fully masked (zeros) after the last step
                self._issue_loads(plan, rem_k)
        self._mfma_step()
        self.e.wait(lgkmcnt=0)
        emit("s_barrier")
        emit("s_cmp_lt_u32", kt, self.args["k"])
        self.e.branch("s_cbranch_scc1", "main_loop")
        self.e.wait(vmcnt=0)

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


def instruction_names(lowered: LoweredKernel) -> set[str]:
    return {i.name for i in lowered.instructions if isinstance(i, Instruction)}
