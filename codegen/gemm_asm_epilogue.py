"""The direct generator's epilogue: the accumulators read back, alpha, beta*C, bias and the activation
applied, converted and stored with bounds-checked buffer stores. A part of `GemmLowering`
(codegen/gemm_asm.py)."""

from __future__ import annotations

import math
import struct

from jitgemm.isa.instruction import VCC, Reg

from .gemm_asm_staging import BUFFER_LOAD
from .gemm_plan import log2_exact

_STORE = {1: "buffer_store_byte", 2: "buffer_store_short", 4: "buffer_store_dword"}
# atomic split-K (codegen/gemm_split.py): the no-return buffer atomics that add one dword into D. CDNA 3 ISA guide,
# "MUBUF Instructions": BUFFER_ATOMIC_ADD_F32 (opcode 77, an IEEE fp32 add, rounding to nearest even) and
# BUFFER_ATOMIC_ADD (32-bit integer add, wrapping); both are in the gfx942 and gfx950 MR-ISA specs.
ATOMIC_ADD = {"fp32": "buffer_atomic_add_f32", "int32": "buffer_atomic_add"}
REPLAY_STORES = True     # tests/codegen/test_epilogue_replay.py turns it off: every store emitted afresh, same code


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


class EpiloguePhase:
    """Accumulators -> D (methods of GemmLowering)."""

    # --- epilogue --------------------------------------------------------------------------------------
    def _epilogue(self) -> None:
        emit, ra, m = self.emit, self.ra, self.mfma
        groups = 64 // m.n
        rbase, cbase = self.vtmp(), self.vtmp()
        emit("v_lshrrev_b32", rbase, log2_exact(m.n, "mfma n"), self.lane)
        emit("v_lshlrev_b32", rbase, 2, rbase)
        origin = self.ra.take("s")
        emit("s_add_u32", origin, self.wrow, self.row0)
        emit("v_add_u32", rbase, origin, rbase)
        emit("v_and_b32", cbase, m.n - 1, self.lane)
        emit("s_add_u32", origin, self.wcol, self.col0)
        emit("v_add_u32", cbase, origin, cbase)
        row, col, x, off, tmp, tmp2 = (self.vtmp() for _ in range(6))
        cmask = ra.take("s", 2)
        consts = self._epilogue_constants()
        self.round_reg = consts.get("round")
        self.nan_mask = ra.take("s", 2)
        self._scale_epilogue_setup(rbase, cbase, off)    # codegen/gemm_asm_scale.py
        # One loop over the table of stores: each accumulator's block (i, j), register r and row offset from the
        # wave's first row; a new block column starts a new column mask. What follows the value (convert, the
        # row*ld+col offset masked by VCC, the store) is the same instructions on the same registers every time:
        # recorded once it is settled (its second time: the first may make a constant) and replayed.
        table = [(i, j, r, i * m.m + (r // 4) * 4 * groups + r % 4)
                 for i in range(self.blocks_m) for j in range(self.blocks_n) for r in range(m.acc_regs)]
        stores: list | None = None
        for n, (i, j, r, drow) in enumerate(table):
            if r == 0:
                emit("v_add_u32", col, j * m.n, cbase)
                emit("v_cmp_gt_u32_e64", cmask, self.args["n"], col)
            emit("v_add_u32", row, drow, rbase)
            emit("v_cmp_gt_u32", VCC, self.args["m"], row)
            emit("s_and_b64", VCC, VCC, cmask)
            self._accumulator_value(x, i, j, r)      # codegen/gemm_asm_scale.py: sums, scales
            self._scale_value(x, i, j, r)
            self._epilogue_value(x, row, col, off, tmp, tmp2, consts)
            if stores is not None:
                self.e.replay(stores)
                continue
            recorded: list | None = [] if n == 1 and REPLAY_STORES else None
            self.e.record(recorded)
            self._store(x, row, col, off, tmp)
            self.e.record(None)
            stores = recorded

    def _epilogue_constants(self) -> dict:
        p = self.p
        consts = {}
        if p.activation == "gelu":
            consts["c3"] = self.sconst(_f32_bits(0.044715))
            consts["k"] = self.sconst(_f32_bits(0.7978845608028654 * 2.0 * math.log2(math.e)))
        if p.epilogue_float and p.d.name == "bf16":
            consts["round"] = self.sconst(0x7FFF)
        return consts

    def _masked_offset(self, off: Reg, row: Reg, col: Reg, ld: Reg, eb: int) -> None:
        """off = in range (VCC) ? (row*ld + col) * eb : OOB."""
        emit = self.emit
        emit("v_mul_lo_u32", off, row, ld)
        emit("v_add_u32", off, off, col)
        if eb > 1:
            emit("v_lshlrev_b32", off, log2_exact(eb, "element size"), off)
        emit("v_cndmask_b32", off, self.oob, off, VCC)

    def _load_scalar(self, dst: Reg, rsrc: Reg, off: Reg, dtype) -> None:
        """Load one element as f32 (or i32) into dst."""
        emit = self.emit
        emit(BUFFER_LOAD[dtype.bytes], dst, off, rsrc, 0, offen=True)
        if dtype.name == "bf16":
            emit("v_lshlrev_b32", dst, 16, dst)
        elif dtype.name == "fp16":
            emit("v_cvt_f32_f16", dst, dst)

    def _epilogue_value(self, x: Reg, row: Reg, col: Reg, off: Reg, tmp: Reg, tmp2: Reg, consts) -> None:
        emit, p, a = self.emit, self.p, self.args
        integer = not p.epilogue_float
        if p.alpha != 1.0:
            if integer:
                emit("v_mul_lo_u32", x, x, a["alpha"])
            else:
                emit("v_mul_f32", x, a["alpha"], x)
        if p.c is not None and p.beta != 0.0:
            self._masked_offset(off, row, col, a["ldc"], p.c.bytes)
            self._load_scalar(tmp, self.rsrc["c"], off, p.c)
            if integer:
                emit("v_mul_lo_u32", tmp, tmp, a["beta"])
                emit("v_add_u32", x, x, tmp)
            else:
                emit("v_fma_f32", x, tmp, a["beta"], x)
        if p.bias != "none":
            index = row if p.bias == "m" else col
            emit("v_lshlrev_b32", off, 2, index)
            emit("v_cndmask_b32", off, self.oob, off, VCC)
            emit("buffer_load_dword", tmp, off, self.rsrc["bias"], 0, offen=True)
            emit("v_add_u32" if integer else "v_add_f32", x, x, tmp)
        if p.activation == "relu":
            if integer:
                emit("v_max_i32", x, 0, x)
            else:
                emit("v_max_f32", x, 0, x)
        elif p.activation == "gelu":
            # gelu(x) ~= x * (0.5 + 0.5 * tanh(y)), y = sqrt(2/pi) * (x + 0.044715 x^3) (the tanh form of
            # Hendrycks & Gimpel, "Gaussian Error Linear Units", arXiv:1606.08415, section 2),
            # tanh(y) = 1 - 2 / (1 + 2^(2 y log2 e)); codegen/llvm/ir_builder.py does the same, step for step
            emit("v_mul_f32", tmp, x, x)
            emit("v_fma_f32", tmp, tmp, consts["c3"], 1.0)
            emit("v_mul_f32", tmp, tmp, x)
            emit("v_mul_f32", tmp, consts["k"], tmp)
            emit("v_exp_f32", tmp, tmp)
            emit("v_add_f32", tmp, 1.0, tmp)
            emit("v_rcp_f32", tmp, tmp)
            emit("v_fma_f32", tmp, tmp, -2.0, 1.0)
            emit("v_fma_f32", tmp, tmp, 0.5, 0.5)
            emit("v_mul_f32", x, x, tmp)

    def _store(self, x: Reg, row: Reg, col: Reg, off: Reg, tmp: Reg) -> None:
        emit, p = self.emit, self.p
        if p.d.name == "bf16" and p.epilogue_float:
            # round to nearest even; NaN stays NaN (quiet 0x7fc0)
            emit("v_bfe_u32", tmp, x, 16, 1)
            emit("v_add3_u32", tmp, x, tmp, self.round_reg)
            emit("v_lshrrev_b32", tmp, 16, tmp)
            emit("v_cmp_o_f32_e64", self.nan_mask, x, x)
            emit("v_cndmask_b32_e64", x, self.vconst(0x7FC0), tmp, self.nan_mask)
        elif p.d.name == "fp16":
            emit("v_cvt_f16_f32", x, x)
        self._masked_offset(off, row, col, self.args["ldd"], p.d.bytes)
        if p.k_split == "atomic":       # codegen/gemm_split.py: K ranges add into D (zeroed by the launcher)
            emit(ATOMIC_ADD[p.d.name], x, off, self.rsrc["d"], 0, offen=True)
            return
        emit(_STORE[p.d.bytes], x, off, self.rsrc["d"], 0, offen=True)


