"""From a decoded instruction to an executable op: finds its semantics in the registry (registry.py: a named
entry, else its family's path, the family taken from the spec form), binds its operands to the register state,
and returns `Op` objects the engine runs for a group of waves at a time.

The ALU family paths here run the statement table of semantics_alu.py with operands typed by the spec's data
formats (VALU with DPP/SDWA lane selection and op_sel, packed math with component selection); the MFMA path
runs mfma.py; the memory families live in semantics_mem.py and semantics_buffer.py. Named entries here cover
program control, lane reads/writes, mixed-precision FMAs and fp8 conversions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from jitgemm.isa.instruction import Imm, Reg, SrcMods
from jitgemm.isa.spec.model import Spec

from . import registry
from . import semantics_buffer as _semantics_buffer  # noqa: F401 - registers the buffer family
from . import semantics_gfx950 as _semantics_gfx950  # noqa: F401 - registers gfx950's named semantics
from . import semantics_mem as _semantics_mem  # noqa: F401 - registers the SMEM, FLAT and DS families
from . import sparse_mfma as _sparse_mfma  # noqa: F401 - registers the sparse (SMFMAC) MFMAs
from .errors import EmulatorError, NoSemantics, pc_text
from .mfma import MfmaShapeError, mfma_registers, mfma_shape
from .modes import MODE_INSTRUCTIONS, mode_op
from .operands import Operands, VgprDst, register_rows
from .program import Decoded
from .registry import INDEXABLE_FAMILIES, VECTOR_FAMILIES, family_path, register, semantics
from .semantics_alu import Statements, semantics_of
from .state import AT_BARRIER, DONE, LANE_INDEX, WAVE, lanes_of, mask_of
from .values import Fmt, from_typed, operand_fmt, to_typed

RunFn = Callable[["object", object], None]


@dataclass
class Op:
    """One executable instruction. `run(ctx, w)` executes it for waves `w` (the engine has already moved
    their PC to `next_pc`; branches overwrite it)."""

    pc: int
    size: int
    name: str
    text: str
    run: RunFn | None
    problem: str = ""  # why `run` is None
    lane_ops: int = 1  # lane-instructions per wave execution (for the rate statistics)

    @property
    def next_pc(self) -> int:
        return self.pc + self.size


class Builder:
    """Builds ops for one program: holds the spec, the register-slot map and the kernel name."""

    def __init__(self, spec: Spec, operands: Operands, kernel: str, code_address: int = 0,
                 code_size: int = 0) -> None:
        self.spec = spec
        self.ops = operands
        self.kernel = kernel
        self.code_address = code_address  # where the kernel's first byte is loaded (its PC 0)
        self.code_size = code_size

    def indexable(self, d: Decoded) -> bool:
        """GPR indexing (S_SET_GPR_IDX_ON) renumbers the VGPR operands of VALU instructions only."""
        return d.inst is not None and d.form is not None and registry.family_of(d.form) in INDEXABLE_FAMILIES

    def build(self, d: Decoded) -> Op:
        if d.inst is None:
            return Op(d.pc, d.size, d.name, d.text, None,
                      f"no instruction of the loaded spec ({self.spec.source or self.spec.architecture.name}) "
                      "matches this word; a subset spec may lack it (`jitgemm spec fetch` gets AMD's full file)")
        if d.form is None:
            return Op(d.pc, d.size, d.name, d.text, None, "no spec form matches the decoded instruction")
        entry, fam = registry.resolve(d.name, d.form)
        if entry is None:
            return Op(d.pc, d.size, d.name, d.text, None, f"no semantics: no named entry and no path for the {fam} "
                      "family (jitgemm/emu/registry.py)")
        try:
            run = entry.build(self, d)
        except NoSemantics as exc:
            return Op(d.pc, d.size, d.name, d.text, None, str(exc))
        if run is None:
            return Op(d.pc, d.size, d.name, d.text, None, f"no semantics: {entry.build.__name__} built nothing")
        op = Op(d.pc, d.size, d.name, d.text, run)
        if fam in VECTOR_FAMILIES:
            op.lane_ops = WAVE
        return op

    def fmt(self, o) -> Fmt:
        return operand_fmt(self.spec, o.data_format, o.size)


def _names(d: Decoded) -> list[str]:
    inst = d.spec_inst
    return [inst.name.upper(), *(a.upper() for a in inst.aliases)]


def _semantics(d: Decoded) -> Statements:
    for n in _names(d):
        text = semantics_of(n)
        if text is not None:
            return Statements(text, n)
    raise NoSemantics("no semantics in jitgemm.emu.semantics_alu")


# --- operand binding for ALU instructions ----------------------------------------------------------------

_VALUE_TYPES = ("OPR_SRC", "OPR_VGPR")


@dataclass
class _Src:
    role: str
    read: Callable
    fmt: Fmt
    mask: bool
    neg: bool = False
    abs: bool = False
    sext: bool = False
    uniform: bool = True
    sel: int = 6  # SDWA select (6 = DWORD)
    hi: bool = False  # VOP3 op_sel: take the high 16 bits
    is_vgpr: bool = False


@dataclass
class _Dst:
    role: str
    dst: object
    fmt: Fmt
    mask: bool


def _is_mask(o, vector: bool) -> bool:
    return vector and o.size == 64 and not (o.operand_type or "").startswith(_VALUE_TYPES)


def _bind(b: Builder, d: Decoded, vector: bool) -> tuple[list[_Src], list[_Dst]]:
    srcs: list[_Src] = []
    dsts: list[_Dst] = []
    for o, op in d.operand_pairs():
        fmt = b.fmt(o)
        mask = _is_mask(o, vector)
        if o.output:
            dsts.append(_Dst(f"D{len(dsts)}", b.ops.dst(op, o.size), fmt, mask))
            continue
        mods = op if isinstance(op, SrcMods) else None
        base = mods.operand if mods else op
        # a float constant takes its operand's component format (f32 in the low half of a packed-f32 pair)
        float_bits = fmt.bits if fmt.kind == "f" else 0
        src = b.ops.src(base, o.size, float_bits)
        s = _Src(f"S{len(srcs)}", src.read, fmt, mask, uniform=src.uniform,
                 is_vgpr=isinstance(base, Reg) and base.kind in ("v", "a"))
        if mods:
            s.neg, s.abs, s.sext = mods.neg, mods.abs, mods.sext
        srcs.append(s)
    return srcs, dsts


def _components(bits, fmt: Fmt) -> np.ndarray:
    """A packed operand's components as a (..., count) array (floats widened to float32)."""
    b = np.asarray(bits)
    if fmt.total_bits > 32:
        regs = np.ascontiguousarray(b.astype(np.uint64))
    else:
        regs = np.ascontiguousarray(b.astype(np.uint32))
    raw = regs.view(np.uint8).reshape(regs.shape + (regs.dtype.itemsize,))[..., : fmt.total_bits // 8]
    comps = np.ascontiguousarray(raw).view(fmt.dtype)
    if fmt.kind == "f" and fmt.bits < 32:
        return comps.astype(np.float32)
    return comps


def _typed(bits, fmt: Fmt):
    """Register bits as typed values. Packed float formats become (..., components) arrays (numbers to
    compute with); packed integer/bit formats stay raw bits in ALU statements (V_PERM_B32's byte selector)
    and are split into components by the packed-math handler."""
    if fmt.count > 1 and fmt.total_bits <= 64:
        if fmt.kind == "f":
            return _components(bits, fmt)
        return np.asarray(bits).astype(np.uint64 if fmt.total_bits > 32 else np.uint32)
    return to_typed(bits, fmt)


def _untyped(value, fmt: Fmt, shape):
    """Typed result -> bits (uint32, or uint64 for 64-bit operands)."""
    if fmt.count > 1 and fmt.total_bits <= 64:
        if np.ndim(value) >= 1 and np.shape(value)[-1] == fmt.count and (
                np.ndim(value) > len(shape) or np.shape(value)[-1] != shape[-1]):
            arr = np.ascontiguousarray(np.broadcast_to(np.asarray(value), shape + (fmt.count,)).astype(fmt.dtype))
            raw = arr.view(np.uint8).reshape(shape + (fmt.total_bits // 8,))
            width = 8 if fmt.total_bits > 32 else 4
            padded = np.zeros(shape + (width,), np.uint8)
            padded[..., : raw.shape[-1]] = raw
            return padded.view(np.uint64 if width == 8 else np.uint32)[..., 0]
        width = 64 if fmt.total_bits > 32 else 32
        fmt = Fmt(fmt.name, "b", width, 1, np.dtype(np.uint64 if width == 64 else np.uint32))
    return from_typed(value, fmt, shape)


_SEL_SHIFT = {0: (0, 8), 1: (8, 8), 2: (16, 8), 3: (24, 8), 4: (0, 16), 5: (16, 16), 6: (0, 32)}


def _sdwa_select(bits, sel: int, sext: bool):
    shift, width = _SEL_SHIFT[sel]
    if width == 32:
        return bits
    v = (np.asarray(bits).astype(np.uint32) >> shift) & np.uint32((1 << width) - 1)
    if sext:
        v = ((v << (32 - width)).view(np.int32) >> (32 - width)).view(np.uint32)
    return v


def _sign_bit_mods(bits, s: _Src):
    """neg/abs on an operand that is not typed as a float (V_CNDMASK_B32's sources): the modifiers act on the
    sign bit, as they do for floats."""
    b = np.asarray(bits)
    sign = np.uint64(1 << 63) if b.dtype == np.uint64 else np.uint32(1 << 31)
    if s.abs:
        b = b & ~sign
    if s.neg:
        b = b ^ sign
    return b


def _float_mods(val, s: _Src):
    if s.abs:
        val = np.abs(val)
    if s.neg:
        val = -val
    return val


def _read_sources(srcs: list[_Src], st, w, vector: bool, env: dict) -> None:
    """Typed values of the sources into `env` (VALU: (G, 64) arrays, uniform values as (G, 1))."""
    for s in srcs:
        bits = s.read(st, w)
        if s.mask:  # a lane mask (VCC or an SGPR pair) read by a VALU instruction: per-lane bools
            env[s.role] = lanes_of(bits)
            continue
        if vector and s.uniform:
            bits = bits[:, None]
        if s.sel != 6:
            bits = _sdwa_select(bits, s.sel, s.sext)
        if s.hi:
            bits = np.asarray(bits) >> np.uint32(16)
        if (s.neg or s.abs) and s.fmt.kind != "f":
            bits = _sign_bit_mods(bits, s)
        val = _typed(bits, s.fmt)
        if s.fmt.kind == "f" and (s.neg or s.abs):
            val = _float_mods(val, s)
        env[s.role] = val


def _dpp_source_lanes(mods: dict) -> tuple[np.ndarray, np.ndarray]:
    """(source lane of each lane, whether that source lane exists) for a DPP control."""
    lane = np.arange(WAVE)
    row = lane // 16 * 16
    if "quad_perm" in mods:
        perm = np.array(mods["quad_perm"])
        return (lane & ~3) + perm[lane & 3], np.ones(WAVE, bool)
    if "row_shl" in mods:
        src = lane + mods["row_shl"]
        return np.clip(src, 0, WAVE - 1), (src // 16 * 16) == row
    if "row_shr" in mods:
        src = lane - mods["row_shr"]
        return np.clip(src, 0, WAVE - 1), (src >= 0) & ((np.maximum(src, 0) // 16 * 16) == row)
    if "row_ror" in mods:
        return row + (lane % 16 - mods["row_ror"]) % 16, np.ones(WAVE, bool)
    if "wave_shl" in mods:
        src = lane + 1
        return np.clip(src, 0, WAVE - 1), src < WAVE
    if "wave_rol" in mods:
        return (lane + 1) % WAVE, np.ones(WAVE, bool)
    if "wave_shr" in mods:
        src = lane - 1
        return np.clip(src, 0, WAVE - 1), src >= 0
    if "wave_ror" in mods:
        return (lane - 1) % WAVE, np.ones(WAVE, bool)
    if "row_mirror" in mods:
        return row + 15 - lane % 16, np.ones(WAVE, bool)
    if "row_half_mirror" in mods:
        return (lane & ~7) + 7 - lane % 8, np.ones(WAVE, bool)
    if "row_bcast" in mods:
        if mods["row_bcast"] == 15:
            return np.clip(row - 1, 0, WAVE - 1), row > 0
        return np.full(WAVE, 31), lane >= 32
    raise NoSemantics(f"DPP control {sorted(mods)} is not modelled")


# --- ALU handlers ----------------------------------------------------------------------------------------

register(sorted(MODE_INSTRUCTIONS), mode_op)


@semantics("S_GETREG_B32")
def _getreg(b: Builder, d: Decoded) -> RunFn:
    """Hardware registers read as 0."""
    dst = b.ops.dst(d.inst.operands[0], 32)
    return lambda ctx, w: dst.write(ctx.st, w, np.zeros(ctx.group_size(w), np.uint32))


@family_path("salu")
def _salu(b: Builder, d: Decoded) -> RunFn:
    stmts = _semantics(d)
    srcs, dsts = _bind(b, d, vector=False)
    writes_scc = any(o.operand_type == "OPR_SSRC_SPECIAL_SCC" and o.output for o in d.implicit_operands())
    reads_old = "D0" in _rhs_names(stmts)
    pc = d.pc

    def run(ctx, w):
        st = ctx.st
        env: dict = {"SCC": st.scc[w], "EXEC": st.exec64(w), "PC": np.int64(b.code_address + pc)}
        _read_sources(srcs, st, w, False, env)
        if reads_old and dsts:
            env["D0"] = _typed(dsts[0].dst.read_old(st, w), dsts[0].fmt)
        stmts.run(env)
        n = ctx.group_size(w)
        for dd in dsts:
            if dd.role in env and (dd.role != "D0" or "D0" in stmts.targets):
                dd.dst.write(st, w, _untyped(env[dd.role], dd.fmt, (n,)))
        if "EXEC" in stmts.targets:
            st.set_exec64(w, np.broadcast_to(np.asarray(env["EXEC"]).astype(np.uint64), (n,)))
        if "SCC" in stmts.targets:
            st.scc[w] = np.broadcast_to(np.asarray(env["SCC"]) != 0, (n,))
        elif writes_scc and "D0" in env:
            st.scc[w] = np.broadcast_to(np.asarray(env["D0"]) != 0, (n,))
    return run


def _rhs_names(stmts: Statements) -> set[str]:
    names: set[str] = set()
    for _, code in stmts.steps:
        names |= set(code.co_names)
    return names


@family_path("valu")
def _valu(b: Builder, d: Decoded) -> RunFn:
    stmts = _semantics(d)
    srcs, dsts = _bind(b, d, vector=True)
    inst = d.inst
    mods = dict(inst.modifiers)
    # V_CMPX_*: the spec lists EXEC as an implicit output; the compare result goes to EXEC too
    is_cmpx = any(o.output and o.operand_type == "OPR_SDST_EXEC" for o in d.implicit_operands())
    clamp = bool(mods.get("clamp"))
    omod = 2.0 if mods.get("mul") == 2 else 4.0 if mods.get("mul") == 4 else 0.5 if mods.get("div") == 2 else 1.0
    # VOP3 op_sel on 16-bit operands (gfx9: per source, last bit = destination high half)
    op_sel = mods.get("op_sel")
    dst_hi = False
    if op_sel:
        for s, bit in zip(srcs, op_sel, strict=False):
            s.hi = bool(bit)
        dst_hi = len(op_sel) > len(srcs) and bool(op_sel[-1])
    # SDWA
    sdwa = "src0_sel" in mods or "dst_sel" in mods
    dst_sel = 6
    dst_unused = "UNUSED_PRESERVE"
    if sdwa:
        from jitgemm.isa.operand_syntax import SDWA_SEL
        for i, s in enumerate(srcs[:2]):
            key = f"src{i}_sel"
            if key in mods and not s.mask:
                s.sel = SDWA_SEL[mods[key]]
        dst_sel = SDWA_SEL.get(mods.get("dst_sel", "DWORD"), 6)
        dst_unused = mods.get("dst_unused", "UNUSED_PRESERVE")
    # DPP
    dpp = any(k in mods for k in ("quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_rol",
                                  "wave_shr", "wave_ror", "row_mirror", "row_half_mirror", "row_bcast"))
    dpp_src = dpp_ok = None
    dpp_enable = None
    bound_zero = bool(mods.get("bound_ctrl"))
    if dpp:
        dpp_src, dpp_ok = _dpp_source_lanes(mods)
        row_mask = int(mods.get("row_mask", 0xF))
        bank_mask = int(mods.get("bank_mask", 0xF))
        lane = np.arange(WAVE)
        dpp_enable = (((row_mask >> (lane // 16)) & 1) & ((bank_mask >> ((lane // 4) % 4)) & 1)).astype(bool)
    reads_old = "D0" in _rhs_names(stmts)
    float_out = [dd.fmt.kind == "f" and not dd.mask for dd in dsts]

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        n = lanes.shape[0]
        env: dict = {"SCC": st.scc[w], "LANE": LANE_INDEX}
        write_lanes = lanes
        if dpp:
            s0 = srcs[0]
            raw = s0.read(st, w)
            if s0.uniform:
                raw = np.broadcast_to(np.asarray(raw)[:, None], (n, WAVE))
            moved = np.asarray(raw)[:, dpp_src]
            valid = dpp_ok[None, :] & lanes[:, dpp_src]
            if bound_zero:
                moved = np.where(valid, moved, 0)
                write_lanes = lanes & dpp_enable[None, :]
            else:
                write_lanes = lanes & dpp_enable[None, :] & valid
            val = _typed(moved, s0.fmt)
            if s0.fmt.kind == "f" and (s0.neg or s0.abs):
                val = _float_mods(val, s0)
            env[s0.role] = val
            _read_sources(srcs[1:], st, w, True, env)
        else:
            _read_sources(srcs, st, w, True, env)
        if reads_old and dsts:
            old = dsts[0].dst.read_old(st, w)
            env["D0"] = _typed(old, dsts[0].fmt)
        stmts.run(env)
        for dd, is_float in zip(dsts, float_out, strict=True):
            if dd.role not in env or (dd.role == "D0" and "D0" not in stmts.targets and not stmts.steps):
                continue
            value = env[dd.role]
            if dd.mask:
                res = np.broadcast_to(np.asarray(value, bool), (n, WAVE)) & lanes
                dd.dst.write(st, w, mask_of(res))
                if is_cmpx and dd.role == "D0":
                    st.set_exec64(w, mask_of(res))
                continue
            if is_float:
                if omod != 1.0:
                    value = np.asarray(value) * omod
                if clamp:
                    value = np.clip(value, 0.0, 1.0)
            bits = _untyped(value, dd.fmt, (n, WAVE))
            if dst_hi:
                old = np.asarray(dd.dst.read_old(st, w)).astype(np.uint32)
                bits = (old & np.uint32(0xFFFF)) | (bits.astype(np.uint32) << np.uint32(16))
            elif sdwa and dst_sel != 6 and dd.role == "D0":
                bits = _sdwa_place(bits, dst_sel, dst_unused, dd.dst.read_old(st, w))
            dd.dst.write(st, w, bits, write_lanes)
        if is_cmpx and not any(dd.mask for dd in dsts):
            st.set_exec64(w, mask_of(np.asarray(env["D0"], bool) & lanes))
    return run


def _sdwa_place(bits, sel: int, unused: str, old):
    shift, width = _SEL_SHIFT[sel]
    field = np.asarray(bits).astype(np.uint32) & np.uint32((1 << width) - 1)
    placed = field << np.uint32(shift)
    fmask = np.uint32(((1 << width) - 1) << shift)
    if unused == "UNUSED_PRESERVE":
        return (np.asarray(old).astype(np.uint32) & ~fmask) | placed
    if unused == "UNUSED_SEXT":
        sign = (field >> np.uint32(width - 1)) & 1
        high = np.where(sign != 0, np.uint32(0xFFFFFFFF) << np.uint32(shift + width) if shift + width < 32 else 0, 0)
        return placed | high.astype(np.uint32)
    return placed


@semantics("V_READFIRSTLANE_B32")
def _readfirstlane(b: Builder, d: Decoded) -> RunFn:
    ops = d.inst.operands
    dst = b.ops.dst(ops[0], 32)
    src = b.ops.src(ops[1], 32)

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        vals = src.read(st, w)
        if src.uniform:
            dst.write(st, w, vals)
            return
        first = np.argmax(lanes, axis=1)  # lane 0 when EXEC is zero
        dst.write(st, w, vals[np.arange(len(first)), first])
    return run


@semantics("V_READLANE_B32")
def _readlane(b: Builder, d: Decoded) -> RunFn:
    ops = d.inst.operands
    dst = b.ops.dst(ops[0], 32)
    src = b.ops.src(ops[1], 32)
    sel = b.ops.src(ops[2], 32)

    def run(ctx, w):
        st = ctx.st
        vals = src.read(st, w)
        lane = np.asarray(sel.read(st, w)).astype(np.int64) & (WAVE - 1)
        if src.uniform:
            dst.write(st, w, vals)
            return
        dst.write(st, w, vals[np.arange(len(lane)), lane])
    return run


@semantics("V_WRITELANE_B32")
def _writelane(b: Builder, d: Decoded) -> RunFn:
    ops = d.inst.operands
    dst = b.ops.dst(ops[0], 32)
    src = b.ops.src(ops[1], 32)
    sel = b.ops.src(ops[2], 32)

    def run(ctx, w):
        st = ctx.st
        val = np.asarray(src.read(st, w))
        lane = np.asarray(sel.read(st, w)).astype(np.int64) & (WAVE - 1)
        old = np.array(dst.read_old(st, w))
        old[np.arange(len(lane)), lane] = val
        dst.write(st, w, old)
    return run


@semantics("V_SWAP_B32")
def _swap(b: Builder, d: Decoded) -> RunFn:
    ops = d.inst.operands
    a_dst, b_dst = b.ops.dst(ops[0], 32), b.ops.dst(ops[1], 32)

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        va, vb = a_dst.read_old(st, w).copy(), b_dst.read_old(st, w).copy()
        a_dst.write(st, w, vb, lanes)
        b_dst.write(st, w, va, lanes)
    return run


@semantics("V_CVT_PK_FP8_F32", "V_CVT_PK_BF8_F32")
def _cvt_pk_fp8(b: Builder, d: Decoded) -> RunFn:
    """Two f32 -> two saturated fp8/bf8 bytes into the low or (op_sel[3]) high half of the destination."""
    srcs, dsts = _bind(b, d, vector=True)
    op_sel = d.modifier("op_sel") or ()
    high = len(op_sel) > 2 and bool(op_sel[-1])
    out_fmt = dsts[0].fmt

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        env: dict = {}
        _read_sources(srcs, st, w, True, env)
        n = lanes.shape[0]
        pair = np.stack(np.broadcast_arrays(env["S0"], env["S1"]), axis=-1).astype(np.float32)
        pair = np.broadcast_to(pair, (n, WAVE, 2))
        packed = _saturate_fp8(pair, out_fmt.dtype).view(np.uint8).astype(np.uint32)
        word = packed[..., 0] | (packed[..., 1] << np.uint32(8))
        old = np.asarray(dsts[0].dst.read_old(st, w)).astype(np.uint32)
        bits = (old & np.uint32(0xFFFF)) | (word << np.uint32(16)) if high else \
            (old & np.uint32(0xFFFF0000)) | word
        dsts[0].dst.write(st, w, bits, lanes)
    return run


@semantics("V_CVT_PK_F32_FP8", "V_CVT_PK_F32_BF8")
def _cvt_pk_f32_fp8(b: Builder, d: Decoded) -> RunFn:
    """Two fp8/bf8 bytes of the low or (op_sel[0]) high half -> two f32."""
    srcs, dsts = _bind(b, d, vector=True)
    op_sel = d.modifier("op_sel") or ()
    high = bool(op_sel[0]) if op_sel else False
    in_fmt = srcs[0].fmt

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        bits = srcs[0].read(st, w)
        if srcs[0].uniform:
            bits = np.broadcast_to(np.asarray(bits)[:, None], lanes.shape)
        bits = np.asarray(bits).astype(np.uint32)
        if high:
            bits = bits >> np.uint32(16)
        lo = (bits & 0xFF).astype(np.uint8).view(in_fmt.dtype).astype(np.float32)
        hi = ((bits >> 8) & 0xFF).astype(np.uint8).view(in_fmt.dtype).astype(np.float32)
        out = (lo.view(np.uint32).astype(np.uint64) | (hi.view(np.uint32).astype(np.uint64) << np.uint64(32)))
        dsts[0].dst.write(st, w, out, lanes)
    return run


def _saturate_fp8(values: np.ndarray, dtype) -> np.ndarray:
    """f32 -> fp8 (FNUZ) with saturation to the largest finite value, as the conversion instructions do."""
    info_max = float(ml_dtypes.finfo(dtype).max)
    v = np.where(np.isnan(values), values, np.clip(values, -info_max, info_max))
    return v.astype(dtype)


@semantics("V_FMA_MIX_F32", "V_FMA_MIXLO_F16", "V_FMA_MIXHI_F16")
def _fma_mix(b: Builder, d: Decoded) -> RunFn:
    """Mixed-precision FMA (V_FMA_MIX_F32, V_FMA_MIXLO/HI_F16): source i is the f16 half op_sel[i] picks when
    op_sel_hi[i] is set, else an f32; `-x`/`|x|` apply; the product-sum is rounded once from float64 (exact
    product of two f32 values) to f32, or to f16 into the low/high half keeping the other half."""
    srcs, dsts = _bind(b, d, vector=True)
    mods = dict(d.inst.modifiers)
    op_sel = tuple(mods.get("op_sel", (0, 0, 0))) + (0, 0, 0)
    op_sel_hi = tuple(mods.get("op_sel_hi", (0, 0, 0))) + (0, 0, 0)
    clamp = bool(mods.get("clamp"))
    kind = d.name

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        n = lanes.shape[0]
        vals = []
        for i, src in enumerate(srcs):
            bits = np.asarray(src.read(st, w)).astype(np.uint32)
            if src.uniform:
                bits = bits[:, None]
            bits = np.ascontiguousarray(np.broadcast_to(bits, (n, WAVE)))
            if op_sel_hi[i]:
                half = ((bits >> np.uint32(16 * op_sel[i])) & np.uint32(0xFFFF)).astype(np.uint16)
                x = half.view(np.float16).astype(np.float64)
            else:
                x = bits.view(np.float32).astype(np.float64)
            if src.abs:
                x = np.abs(x)
            if src.neg:
                x = -x
            vals.append(x)
        with np.errstate(all="ignore"):
            r = vals[0] * vals[1] + vals[2]
            if clamp:
                r = np.clip(r, 0.0, 1.0)
            if kind == "V_FMA_MIX_F32":
                out = r.astype(np.float32).view(np.uint32)
            else:
                h = r.astype(np.float16).view(np.uint16).astype(np.uint32)
                old = np.asarray(dsts[0].dst.read_old(st, w)).astype(np.uint32)
                if kind == "V_FMA_MIXLO_F16":
                    out = (old & np.uint32(0xFFFF0000)) | h
                else:
                    out = (old & np.uint32(0xFFFF)) | (h << np.uint32(16))
        dsts[0].dst.write(st, w, out, lanes)
    return run


@semantics("V_PK_MOV_B32")
def _pk_mov(b: Builder, d: Decoded) -> RunFn:
    """V_PK_MOV_B32: the low result is S0's component op_sel[0], the high one S1's component op_sel[1]."""
    return _vop3p(b, d, mov=True)


@family_path("packed")
def _vop3p(b: Builder, d: Decoded, mov: bool = False) -> RunFn:
    """Packed math: each source's two components are chosen by op_sel (low result) and op_sel_hi (high
    result), negated by neg_lo/neg_hi, then the statement runs on (..., 2) arrays."""
    stmts = _semantics(d)
    srcs, dsts = _bind(b, d, vector=True)
    mods = dict(d.inst.modifiers)
    nsrc = len(srcs)
    op_sel = tuple(mods.get("op_sel", (0,) * nsrc))
    op_sel_hi = tuple(mods.get("op_sel_hi", (1,) * nsrc))
    neg_lo = tuple(mods.get("neg_lo", (0,) * nsrc))
    neg_hi = tuple(mods.get("neg_hi", (0,) * nsrc))
    clamp = bool(mods.get("clamp"))
    is_mov = mov
    reads_old = "D0" in _rhs_names(stmts)

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        n = lanes.shape[0]
        env: dict = {}
        comps = []
        for i, s in enumerate(srcs):
            bits = s.read(st, w)
            if s.uniform:
                bits = np.asarray(bits)[:, None]
            if s.fmt.count == 1 or s.fmt.count > 2:   # op_sel picks halves: wider packs (dot4/dot8) stay whole
                env[s.role] = _typed(bits, s.fmt)
                comps.append(None)
                continue
            if not s.is_vgpr and s.uniform and s.fmt.total_bits == 64 and np.asarray(bits).dtype != np.uint64:
                bits = np.asarray(bits).astype(np.uint64)
            vals = _components(bits, s.fmt)
            vals = np.broadcast_to(vals, (n, WAVE, vals.shape[-1]))
            lo = vals[..., op_sel[i] if i < len(op_sel) else 0]
            hi = vals[..., op_sel_hi[i] if i < len(op_sel_hi) else 1]
            if s.fmt.kind == "f":
                if i < len(neg_lo) and neg_lo[i]:
                    lo = -lo
                if i < len(neg_hi) and neg_hi[i]:
                    hi = -hi
            if is_mov:
                comps.append(vals)
            env[s.role] = np.stack([lo, hi], axis=-1)
        if is_mov:
            env["D0"] = np.stack([comps[0][..., op_sel[0]], comps[1][..., op_sel[1] if len(op_sel) > 1 else 0]],
                                 axis=-1)
        else:
            if reads_old and dsts:
                env["D0"] = _typed(dsts[0].dst.read_old(st, w), dsts[0].fmt)
            stmts.run(env)
        for dd in dsts:
            if dd.role not in env:
                continue
            value = env[dd.role]
            if clamp and dd.fmt.kind == "f":
                value = np.clip(value, 0.0, 1.0)
            dd.dst.write(st, w, _untyped(value, dd.fmt, (n, WAVE)), lanes)
    return run


@family_path("mfma")
def _mfma(b: Builder, d: Decoded) -> RunFn:
    pairs = d.operand_pairs()
    if len(pairs) != 4:
        raise NoSemantics("MFMA without its four operands")
    (od, opd), (oa, opa), (ob, opb), (oc, opc) = pairs
    try:
        shape = mfma_shape(d.name, _element(b.fmt(oa)), _element(b.fmt(ob)), _element(b.fmt(od)), oa.size, ob.size,
                           od.size)
    except MfmaShapeError as exc:
        raise NoSemantics(str(exc)) from None
    dst = b.ops.dst(opd, od.size)
    a = b.ops.src(opa, oa.size)
    bb = b.ops.src(opb, ob.size)
    c = b.ops.src(opc, oc.size)
    cbsz, abid, blgp = (int(d.modifier(k, 0) or 0) for k in ("cbsz", "abid", "blgp"))
    neg = d.modifier("neg", ())   # an f64 MFMA writes its BLGP bits as neg:[a,b,c] (modifiers._f64_matrix)
    if neg:
        blgp = sum(bit << i for i, bit in enumerate(neg))

    in_place = isinstance(dst, VgprDst) and dst.regs == shape.c_regs

    def run(ctx, w):
        st = ctx.st
        a_rows, b_rows = register_rows(a, st, w, shape.a_regs), register_rows(bb, st, w, shape.b_regs)
        c_rows = register_rows(c, st, w, shape.c_regs)
        if in_place and isinstance(w, slice):  # D straight into the register file
            mfma_registers(shape, a_rows, b_rows, c_rows, cbsz, abid, blgp,
                           out=st.v[w, dst.slot:dst.slot + shape.c_regs])
            return
        out = mfma_registers(shape, a_rows, b_rows, c_rows, cbsz, abid, blgp)
        dst.write(st, w, np.swapaxes(out, 1, 2) if shape.c_regs > 1 else out[:, 0])
    return run


def _element(fmt: Fmt) -> Fmt:
    return fmt.component


# --- program control ---------------------------------------------------------------------------------------

_BRANCH_COND = {
    "S_BRANCH": None,
    "S_CBRANCH_SCC0": lambda st, w: ~st.scc[w],
    "S_CBRANCH_SCC1": lambda st, w: st.scc[w],
    "S_CBRANCH_VCCZ": lambda st, w: st.s64[w, st.vcc_slot // 2] == 0,
    "S_CBRANCH_VCCNZ": lambda st, w: st.s64[w, st.vcc_slot // 2] != 0,
    "S_CBRANCH_EXECZ": lambda st, w: st.exec64(w) == 0,
    "S_CBRANCH_EXECNZ": lambda st, w: st.exec64(w) != 0,
}
_NOOPS = {"S_NOP", "S_WAITCNT", "S_SETPRIO", "S_SLEEP", "S_DCACHE_WB", "S_DCACHE_INV", "S_ICACHE_INV",
          "S_SENDMSG", "S_SENDMSGHALT", "S_TTRACEDATA", "S_CODE_END", "S_WAITCNT_VSCNT",
          "S_INCPERFLEVEL", "S_DECPERFLEVEL", "S_BARRIER_WAIT", "S_WAKEUP", "S_SETKILL", "S_WAITCNT_DEPCTR",
          "BUFFER_WBL2", "BUFFER_INV", "BUFFER_WBINVL1", "BUFFER_WBINVL1_VOL", "S_DCACHE_WB_VOL",
          "S_DCACHE_INV_VOL"}


def _no_op(b: Builder, d: Decoded) -> RunFn:
    def no_op(ctx, w):
        return None
    return no_op


register(sorted(_NOOPS | {"V_NOP"}), _no_op, "no architectural effect here: no caches, no scheduling priorities, "
         "no clocks")
register(("S_SETREG_B32", "S_SETREG_IMM32_B32", "S_DENORM_MODE", "S_ROUND_MODE"), _no_op,
         "mode bits: numpy keeps denormals and rounds to nearest even, whatever the kernel asks")


@semantics("S_ENDPGM")
def _endpgm(b: Builder, d: Decoded) -> RunFn:
    def end(ctx, w):
        ctx.st.status[w] = DONE
        ctx.release_barriers()
    return end


@semantics("S_BARRIER")
def _barrier(b: Builder, d: Decoded) -> RunFn:
    def barrier(ctx, w):
        ctx.st.status[w] = AT_BARRIER
        ctx.release_barriers()
    return barrier


@semantics("S_TRAP", "S_ENDPGM_SAVED")
def _trap(b: Builder, d: Decoded) -> RunFn:
    def trap(ctx, w):
        raise EmulatorError(f"kernel {b.kernel!r}: {d.text} at PC 0x{d.pc:x} (a trap: the kernel "
                            f"aborted, e.g. a failed device-side assert)")
    return trap


@semantics(*_BRANCH_COND)
def _branch(b: Builder, d: Decoded) -> RunFn:
    op = d.inst.operands[0] if d.inst.operands else Imm(0)
    if not isinstance(op, Imm) or not isinstance(op.value, int):
        raise NoSemantics(f"branch target {op} is not an offset")
    simm = op.value - 0x10000 if op.value >= 0x8000 else op.value  # SIMM16 is a signed dword count
    target = d.pc + 4 + 4 * simm
    cond = _BRANCH_COND[d.name]

    def branch(ctx, w):
        if cond is None:
            ctx.st.pc[w] = target
            return
        taken = cond(ctx.st, w)
        ctx.st.pc[w] = np.where(taken, target, d.pc + d.size)
    return branch


@semantics("S_SETPC_B64", "S_SWAPPC_B64")
def _setpc(b: Builder, d: Decoded) -> RunFn:
    pairs = d.operand_pairs()   # S_SWAPPC_B64 also writes the return address to its SDST
    outs = [op for o, op in pairs if o.output]
    src = b.ops.src(next(op for o, op in pairs if not o.output), 64)
    dst = b.ops.dst(outs[0], 64) if outs else None

    base, size = b.code_address, b.code_size

    def run(ctx, w):
        # PCs are addresses in the loaded code object (s_getpc_b64 reads them); a jump outside the kernel's
        # code faults here instead of running whatever a real GPU would find there
        st = ctx.st
        target = np.asarray(src.read(st, w)).astype(np.uint64).astype(np.int64)
        rel = target - base
        outside = (rel < 0) | (rel >= size)
        if outside.any():
            i = int(np.argmax(outside))
            wave = int((np.arange(st.count)[w] if isinstance(w, slice) else np.asarray(w))[i])
            raise EmulatorError(f"kernel {b.kernel!r}: {d.text} at PC {pc_text(d.pc, base)}, wave "
                                f"{wave}: jump to address 0x{int(target[i]) & 0xFFFFFFFFFFFFFFFF:x}, outside the "
                                f"kernel's code [0x{base:x}, 0x{base + size:x})")
        if dst is not None:
            dst.write(st, w, np.full(ctx.group_size(w), np.uint64(base + d.pc + d.size)))
        st.pc[w] = rel
    return run
