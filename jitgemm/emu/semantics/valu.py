"""The ALU family paths: SALU and VALU instructions run the statement table of alu_statements.py with operands typed
by the spec's data formats (VALU with DPP/SDWA lane selection and op_sel; VOP3P packed math with component
selection), plus the named VALU entries the table cannot express: lane reads and writes, swaps, mixed-precision FMAs
and fp8 conversions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitgemm.isa.instruction import Reg, SrcMods

from ..errors import NoSemantics
from ..ops import Builder, RunFn
from ..program import Decoded
from ..registry import family_path, semantics
from ..state import LANE_INDEX, WAVE, lanes_of, mask_of
from ..values import Fmt, from_typed, to_typed
from .alu_statements import Statements, semantics_of


def _names(d: Decoded) -> list[str]:
    inst = d.spec_inst
    return [inst.name.upper(), *(a.upper() for a in inst.aliases)]


def _semantics(d: Decoded) -> Statements:
    for n in _names(d):
        text = semantics_of(n)
        if text is not None:
            return Statements(text, n)
    raise NoSemantics("no semantics in jitgemm.emu.semantics.alu_statements")


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
    if "row_newbcast" in mods or "row_share" in mods:
        # DPP_CTRL 0x150-0x15F: gfx90a/CDNA 3 spell it row_newbcast:n, GFX10+ row_share:n (one encoding, LLVM
        # llvm/lib/Target/AMDGPU/SIDefines.h: ROW_NEWBCAST_FIRST = ROW_SHARE_FIRST = 0x150): every lane of a row of
        # 16 reads lane n of its row (aiter's I8gemm epilogue broadcasts per-column scales with it)
        return row + mods.get("row_newbcast", mods.get("row_share", 0)), np.ones(WAVE, bool)
    if "row_xmask" in mods:
        return row + ((lane % 16) ^ mods["row_xmask"]), np.ones(WAVE, bool)     # SIDefines.h ROW_XMASK (GFX10+)
    if "row_bcast" in mods:
        if mods["row_bcast"] == 15:
            return np.clip(row - 1, 0, WAVE - 1), row > 0
        return np.full(WAVE, 31), lane >= 32
    raise NoSemantics(f"DPP control {sorted(mods)} is not modelled")


# --- ALU handlers ----------------------------------------------------------------------------------------

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
                                  "wave_shr", "wave_ror", "row_mirror", "row_half_mirror", "row_bcast",
                                  "row_newbcast", "row_share", "row_xmask"))
    if not dpp and ("row_mask" in mods or "bank_mask" in mods):
        # a DPP word whose control the table above does not know must not run as a plain VOP2 (it did, silently,
        # for row_newbcast: aiter's I8gemm then applied the wrong column scales)
        raise NoSemantics(f"DPP control {sorted(mods)} is not modelled")
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
    import ml_dtypes  # on first use: its import costs a new process ~0.5 s CPU (issue 31)

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
