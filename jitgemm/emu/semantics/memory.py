"""Semantics of the memory instructions: scalar loads, global/flat, buffer (MUBUF) and LDS (DS) accesses.

How wide an access is and how a narrow load is extended come from the spec: the implicit memory operand
(OPR_GPUMEM for global/buffer, OPR_DSMEM for LDS) carries the access size and data format (FMT_NUM_U16 for
GLOBAL_LOAD_USHORT, FMT_NUM_I8 for a sign-extending byte load, FMT_NUM_F32 for GLOBAL_ATOMIC_ADD_F32). What
an atomic does is read from its name (ADD, SMIN, CMPSWAP, ...) over that typed memory operand.

Global accesses are checked against the launched buffers: an active lane outside every buffer raises a
MemoryFault naming address, PC, wave and lane. Buffer accesses follow the resource descriptor's bounds rule
instead (an out-of-range lane reads 0 and does not store), as the hardware does. LDS accesses outside the
workgroup's allocation are faults too (a real GPU returns 0 there; a kernel that relies on that is rare and
an emulator bug is likelier).
"""

from __future__ import annotations

import re

import numpy as np

from jitgemm.isa.instruction import Imm, Off

from ..errors import MemoryFault
from ..errors import NoSemantics as Unsupported
from ..operands import PRIVATE_APERTURE_HI, SHARED_APERTURE_HI
from ..registry import family_path, semantics
from ..state import WAVE, Active
from .gfx950 import lds_transpose, transpose_bits
from .memory_access import (
    ATOMIC_OP,
    atomic_dtype,
    atomic_rmw,
    d16_half,
    lds_direct_store,
    load_elements,
    m0_mask_of,
    mem_operand,
    memory_fault,
    pair_dtype,
    read_data_regs,
    store_elements,
    write_loaded,
)

_MASK32 = np.uint64(0xFFFFFFFF)















# --- atomics ---------------------------------------------------------------------------------------------

_DS_ATOMIC = re.compile(r"^DS_(ADD|SUB|RSUB|INC|DEC|MIN|MAX|AND|OR|XOR|MSKOR|WRXCHG|CMPST|PK_ADD)(_RTN)?_"
                        r"(U32|I32|F32|U64|I64|F64|B32|B64|F16|BF16)$")












# --- scalar memory ---------------------------------------------------------------------------------------

@semantics("S_MEMTIME", "S_MEMREALTIME")
def _memtime(b, d):
    """The clocks read as 0 (time does not pass in the emulator's sense)."""
    dst = b.ops.dst(d.inst.operands[0], 64)
    return lambda ctx, w: dst.write(ctx.st, w, np.zeros(ctx.group_size(w), np.uint64))


@family_path("smem")
def smem(b, d):
    """Scalar memory: loads, stores and atomics at SBASE (64-bit address, or the base of an S_BUFFER_* V#) +
    offset + SOFFSET, dword-aligned (the low two address bits are ignored). Each wave accesses memory once;
    atomics of several waves apply in wave order. An atomic with GLC returns the old value into SDATA."""
    name = d.name
    f = d.by_field()
    load = name.startswith(("S_LOAD_DWORD", "S_BUFFER_LOAD_DWORD"))
    store = name.startswith(("S_STORE_DWORD", "S_BUFFER_STORE_DWORD"))
    atomic = ATOMIC_OP.search(name) if name.startswith(("S_ATOMIC_", "S_BUFFER_ATOMIC_")) else None
    if not (load or store or atomic):
        raise Unsupported("no semantics for this scalar memory instruction")
    sdata = f.get("SDATA")
    regs = sdata.count
    buffer = name.startswith("S_BUFFER")
    base = b.ops.src(f["SBASE"], 128 if buffer else 64)
    off_op = f.get("SOFFSET", f.get("OFFSET"))
    imm = int(d.modifier("offset", 0) or 0)
    off_src = None
    if isinstance(off_op, Imm):
        imm += int(off_op.value)
    elif off_op is not None:
        off_src = b.ops.src(off_op, 32)

    def address(ctx, w, nbytes: int, write: bool, what: str):
        st = ctx.st
        if buffer:
            rsrc = np.asarray(base.read(st, w)).astype(np.uint64)
            addr = rsrc[:, 0] | ((rsrc[:, 1] & np.uint64(0xFFFF)) << np.uint64(32))
        else:
            addr = np.asarray(base.read(st, w)).astype(np.uint64)
        addr = addr + np.uint64(imm & 0xFFFFFFFFFFFFFFFF)
        if off_src is not None:
            addr = addr + np.asarray(off_src.read(st, w)).astype(np.uint64)
        addr = addr & ~np.uint64(3)
        if not write and ctx.mem.read_hook is not None:   # jitgemm.emu.kernarg_trace
            ctx.mem.read_hook(d.pc, d.text, addr, nbytes)
        ok = ctx.mem.valid(addr, nbytes, write=write)
        if not ok.all():
            memory_fault(ctx, d, what, addr[:, None], w, ~ok[:, None], ctx.mem.describe)
        if ctx.prov is not None:   # and inside the buffer SBASE was derived from (provenance.py)
            ctx.prov.check(ctx, d, w, addr[:, None], np.ones((len(addr), 1), np.bool_), nbytes)
        return ctx.mem.offsets(addr)

    if load:
        dst = b.ops.dst(sdata, 32 * regs)

        def run_load(ctx, w):
            vals = ctx.mem.load_dwords(address(ctx, w, 4 * regs, False, "scalar load"), regs)
            dst.write(ctx.st, w, vals if regs > 1 else vals[:, 0])
        return run_load

    data = b.ops.src(sdata, 32 * regs)

    def words(ctx, w, count: int) -> np.ndarray:
        v = np.asarray(data.read(ctx.st, w))
        if v.dtype == np.uint64:
            v = np.ascontiguousarray(v).view(np.uint32).reshape(v.shape + (2,))
        return v.reshape(v.shape[0], -1)[:, :count]

    if store:
        def run_store(ctx, w):
            ctx.mem.store_dwords(address(ctx, w, 4 * regs, True, "scalar store"), words(ctx, w, regs))
        return run_store

    op = atomic.group(1)
    cmpswap = op == "CMPSWAP"
    width = regs // 2 if cmpswap else regs  # CMPSWAP's SDATA holds the new value, then the compare value
    dtype = atomic_dtype(op, None, 4 * width, name)
    returns = bool(d.modifier("glc") or d.modifier("sc0"))
    dst = b.ops.dst(sdata, 32 * width) if returns else None

    def run_atomic(ctx, w):
        offs = address(ctx, w, 4 * width, True, "scalar atomic")
        v = words(ctx, w, regs)
        src = np.ascontiguousarray(v[:, :width]).view(np.uint8).reshape(len(offs), -1)
        cmp = np.ascontiguousarray(v[:, width:]).view(np.uint8).reshape(len(offs), -1) if cmpswap else None
        old = atomic_rmw(ctx.mem, offs, op, dtype, src, cmp, None)
        if dst is not None:
            old = np.ascontiguousarray(old).view(np.uint32).reshape(len(offs), width)
            dst.write(ctx.st, w, old if width > 1 else old[:, 0])
    return run_atomic






# --- global / flat ---------------------------------------------------------------------------------------

def private_pieces(ctx, d, w, sel, off: np.ndarray, nbytes: int) -> list[tuple[np.ndarray, int]]:
    """Where the lanes `sel` (indices into the (G, 64) group) of waves `w` access `nbytes` of their private
    (scratch) memory at private byte offsets `off`: (offsets into global memory, width) per dword.

    The private segment is one region, a wave's 64 lanes after each other; inside a wave, dword i of lane l
    lies at (i * 64 + l) * 4 (the swizzle the private-segment V# describes: ADD_TID, element size 4, index
    stride 64), so buffer and flat scratch accesses see the same bytes."""
    size = ctx.private_size
    off = np.asarray(off, np.int64)
    bad = (off < 0) | (off + nbytes > size)
    if bad.any():
        waves = (np.arange(ctx.st.count)[w] if isinstance(w, slice) else np.asarray(w))[sel[0]]
        i = int(np.argmax(bad))
        raise MemoryFault(f"private (scratch) access outside the {size} bytes per work-item ({d.text})",
                          int(off[i]) & 0xFFFFFFFF, d.pc, int(waves[i]), int(sel[1][i]), ctx.kernel,
                          "the kernel descriptor's private_segment_fixed_size", code_address=ctx.code_address)
    waves = (np.arange(ctx.st.count)[w] if isinstance(w, slice) else np.asarray(w))[sel[0]]
    base = ctx.mem.heap_offset(ctx.scratch_address) + waves.astype(np.int64) * 64 * size
    lane = np.asarray(sel[1], np.int64)
    pieces = []
    for k in range(max(1, nbytes // 4)):
        o = off + 4 * k
        pieces.append((base + (o // 4 * WAVE + lane) * 4 + o % 4, min(4, nbytes)))
    return pieces


def _scratch(b, d):
    """SCRATCH_* (flat scratch): private address = SADDR (an SGPR offset, or off) + ADDR (a VGPR, or off)
    + offset, per lane; FLAT_SCRATCH (architected on gfx942) points at the wave's own private memory."""
    name = d.name
    f = d.by_field()
    size_bits, mfmt, is_load, is_store = mem_operand(b, d, "OPR_GPUMEM")
    offset = int(d.modifier("offset", 0) or 0)
    addr_op, saddr_op = f.get("ADDR"), f.get("SADDR")
    addr_src = b.ops.src(addr_op, 32) if addr_op is not None and not isinstance(addr_op, Off) else None
    saddr_src = b.ops.src(saddr_op, 32) if saddr_op is not None and not isinstance(saddr_op, Off) else None
    nbytes = size_bits // 8
    regs = max(1, size_bits // 32)
    half = d16_half(name)

    def private_offsets(ctx, w, lanes):
        st = ctx.st
        off = np.full(lanes.shape, offset, np.int64)
        if addr_src is not None:
            v = np.asarray(addr_src.read(st, w)).astype(np.int64)
            off = off + (v if v.ndim == 2 else v[:, None])
        if saddr_src is not None:
            off = off + np.asarray(saddr_src.read(st, w)).astype(np.int64)[:, None]
        return off & 0xFFFFFFFF

    if is_load and not is_store:
        dst = b.ops.dst(f["VDST"], max(32, size_bits))

        def run_load(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            sel = np.nonzero(lanes)
            out = np.zeros(lanes.shape + (regs,), np.uint32)
            for k, (offs, width) in enumerate(private_pieces(ctx, d, w, sel, private_offsets(ctx, w, lanes)[sel],
                                                             nbytes)):
                out[sel + (k,)] = load_elements(ctx.mem, offs, width, mfmt)[:, 0]
            write_loaded(dst, st, w, out, regs, half, lanes)
        return run_load
    if is_store and not is_load:
        data_src = b.ops.src(f["DATA"], 32 * regs)

        def run_store(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            sel = np.nonzero(lanes)
            data = read_data_regs(data_src, st, w, regs)
            if half == "hi":
                data = data >> np.uint32(16)
            data = data[sel]
            for k, (offs, width) in enumerate(private_pieces(ctx, d, w, sel, private_offsets(ctx, w, lanes)[sel],
                                                             nbytes)):
                store_elements(ctx.mem, offs, data[:, k:k + 1], width)
        return run_store
    raise Unsupported("no semantics for this scratch instruction")


@family_path("flat")
def flat(b, d):
    name = d.name
    if name.startswith("SCRATCH_"):
        return _scratch(b, d)
    f = d.by_field()
    size_bits, mfmt, is_load, is_store = mem_operand(b, d, "OPR_GPUMEM")
    offset = int(d.modifier("offset", 0) or 0)
    addr_op = f["ADDR"]
    saddr_op = f.get("SADDR")
    use_saddr = saddr_op is not None and not isinstance(saddr_op, Off)
    addr_src = b.ops.src(addr_op, 32 if use_saddr else 64)
    saddr_src = b.ops.src(saddr_op, 64) if use_saddr else None
    is_flat = name.startswith("FLAT_")
    atomic = ATOMIC_OP.search(name)
    nbytes = size_bits // 8
    half = d16_half(name)
    vdst = f.get("VDST")
    data_op = f.get("DATA")

    def addresses(ctx, w):
        st = ctx.st
        if saddr_src is None:
            a = np.asarray(addr_src.read(st, w)).astype(np.uint64)
        else:
            base = np.asarray(saddr_src.read(st, w)).astype(np.uint64)[:, None]
            a = base + np.asarray(addr_src.read(st, w)).astype(np.uint64)
        return a + np.uint64(offset & 0xFFFFFFFFFFFFFFFF) if offset >= 0 else a - np.uint64(-offset)

    def checked(ctx, w, addr, lanes, write: bool):
        """(global lanes, LDS lanes) of the active lanes, or a fault; a flat address in the private aperture
        is a fault here (loads and stores take those lanes through `private` first)."""
        lds_lanes = np.zeros_like(lanes)
        if is_flat:
            lds_lanes = lanes & ((addr >> np.uint64(32)) == np.uint64(SHARED_APERTURE_HI))
        glanes = lanes & ~lds_lanes
        ok = ctx.mem.valid(addr, nbytes, write=write)
        bad = glanes & ~ok
        if bad.any():
            memory_fault(ctx, d, "store" if write else "load", addr, w, bad, ctx.mem.describe)
        if ctx.prov is not None:   # and inside the buffer the base registers were derived from (provenance.py)
            ctx.prov.check(ctx, d, w, addr, glanes, nbytes)
        return glanes, lds_lanes

    if atomic:
        op = atomic.group(1)
        dtype = atomic_dtype(op, mfmt, nbytes, name)
        packed = pair_dtype(name) if op == "PK_ADD" else None
        data_regs = max(1, nbytes // 4) * (2 if op == "CMPSWAP" else 1)
        data_src = b.ops.src(data_op, 32 * data_regs)
        dst = b.ops.dst(vdst, nbytes * 8) if vdst is not None else None

        def run_atomic(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            addr = addresses(ctx, w)
            glanes, lds_lanes = checked(ctx, w, addr, lanes, True)
            if lds_lanes.any():
                raise MemoryFault(f"flat atomic to LDS ({d.text}) is not modelled", 0, d.pc, 0, 0, ctx.kernel,
                                  code_address=ctx.code_address)
            data = read_data_regs(data_src, st, w, data_regs)
            sel = np.nonzero(glanes)
            offs = ctx.mem.offsets(addr[sel])
            words = nbytes // 4 if nbytes >= 4 else 1
            src_data = np.ascontiguousarray(data[sel][:, :words]).view(np.uint8).reshape(len(offs), -1)
            src_data = src_data[:, :max(nbytes, 4)]
            cmp = None
            if op == "CMPSWAP":
                cmp = np.ascontiguousarray(data[sel][:, words:2 * words]).view(np.uint8).reshape(len(offs), -1)
            old = atomic_rmw(ctx.mem, offs, op, dtype, src_data, cmp, packed)
            if dst is not None:
                full = np.zeros(lanes.shape + (max(1, nbytes // 4),), np.uint32)
                full[sel] = np.ascontiguousarray(old).view(np.uint32).reshape(len(offs), -1)
                dst.write(st, w, full if nbytes > 4 else full[..., 0], glanes)
        return run_atomic

    def private(ctx, w, addr, lanes):
        """Flat lanes addressing the private aperture: (their lanes, (offsets, width) per dword)."""
        plane = lanes & ((addr >> np.uint64(32)) == np.uint64(PRIVATE_APERTURE_HI)) if is_flat else None
        if plane is None or not plane.any():
            return None, lanes
        sel = np.nonzero(plane)
        return (sel, private_pieces(ctx, d, w, sel, (addr[sel] & _MASK32).astype(np.int64), nbytes)), lanes & ~plane

    if is_load and "_LOAD_LDS_" in name:
        regs = max(1, size_bits // 32)
        m0_mask = m0_mask_of(b.spec)

        def run_load_lds(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            addr = addresses(ctx, w)
            glanes, _lds = checked(ctx, w, addr, lanes, False)
            out = np.zeros(lanes.shape + (regs,), np.uint32)
            if glanes.any():
                sel = np.nonzero(glanes)
                out[sel] = load_elements(ctx.mem, ctx.mem.offsets(addr[sel]), nbytes, mfmt)
            lds_direct_store(ctx, st, w, d, lanes, out, nbytes, offset, m0_mask)
        return run_load_lds

    if is_load:
        dst = b.ops.dst(vdst, max(32, size_bits))
        regs = max(1, size_bits // 32)

        def run_load(ctx, w):
            st = ctx.st
            all_lanes = lanes = st.exec_lanes(w)
            addr = addresses(ctx, w)
            priv, lanes = private(ctx, w, addr, lanes)
            glanes, lds_lanes = checked(ctx, w, addr, lanes, False)
            out = np.zeros(lanes.shape + (regs,), np.uint32)
            if priv is not None:
                for k, (offs, width) in enumerate(priv[1]):
                    out[priv[0] + (k,)] = load_elements(ctx.mem, offs, width, mfmt)[:, 0]
            if glanes.any():
                on = Active(glanes)
                on.put(out, load_elements(ctx.mem, ctx.mem.offsets(on.pick(addr)), nbytes, mfmt))
            if lds_lanes.any():
                sel = np.nonzero(lds_lanes)
                offs = ctx.lds_offsets(w, sel, (addr[sel] & _MASK32).astype(np.int64), nbytes, d)
                out[sel] = load_elements(ctx.lds, offs, nbytes, mfmt)
            write_loaded(dst, st, w, out, regs, half, all_lanes)
        return run_load

    if is_store:
        regs = max(1, size_bits // 32)
        data_src = b.ops.src(data_op, 32 * regs)

        def run_store(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            addr = addresses(ctx, w)
            priv, lanes = private(ctx, w, addr, lanes)
            glanes, lds_lanes = checked(ctx, w, addr, lanes, True)
            data = read_data_regs(data_src, st, w, regs)
            if half == "hi":
                data = data >> np.uint32(16)
            if priv is not None:
                for k, (offs, width) in enumerate(priv[1]):
                    store_elements(ctx.mem, offs, data[priv[0]][:, k:k + 1], width)
            for lanes_sel, store, lds in ((glanes, ctx.mem, False), (lds_lanes, ctx.lds, True)):
                if not lanes_sel.any():
                    continue
                on = Active(lanes_sel)
                offs = (ctx.lds_offsets(w, on.sel, (on.pick(addr) & _MASK32).astype(np.int64), nbytes, d) if lds
                        else ctx.mem.offsets(on.pick(addr)))
                store_elements(store, offs, on.pick(data), nbytes)
        return run_store
    raise Unsupported("no semantics for this flat instruction")






# --- LDS (DS) ----------------------------------------------------------------------------------------------------

@family_path("ds")
def ds(b, d):
    name = d.name
    f = d.by_field()
    if bool(d.modifier("gds")):
        raise Unsupported("GDS is not modelled")
    size_bits, mfmt, is_load, is_store = mem_operand(b, d, "OPR_DSMEM")
    nbytes = size_bits // 8
    addr_src = b.ops.src(f["ADDR"], 32) if "ADDR" in f else None
    offset = int(d.modifier("offset", 0) or 0)
    off0 = int(d.modifier("offset0", 0) or 0)
    off1 = int(d.modifier("offset1", 0) or 0)
    two = "READ2" in name or "WRITE2" in name
    st64 = "ST64" in name
    half = d16_half(name)
    vdst = f.get("VDST")

    if addr_src is None:   # M0-addressed forms: ds_append/ds_consume, ds_*_addtid_b32
        raise Unsupported(f"{name} (an LDS address from M0) is not modelled")

    def base_addr(ctx, w):
        return np.asarray(addr_src.read(ctx.st, w)).astype(np.int64)

    if two:
        scale = nbytes * (64 if st64 else 1)
        elem_regs = max(1, nbytes // 4)
        if "READ2" in name:
            dst = b.ops.dst(vdst, 2 * 8 * nbytes)

            def run_read2(ctx, w):
                st = ctx.st
                lanes = st.exec_lanes(w)
                a = base_addr(ctx, w)
                on = Active(lanes)
                out = np.zeros(lanes.shape + (2 * elem_regs,), np.uint32)
                for k, o in enumerate((off0, off1)):
                    offs = ctx.lds_offsets(w, on.sel, on.pick(a) + o * scale, nbytes, d)
                    on.put(out, ctx.lds.load_dwords(offs, elem_regs), slice(k * elem_regs, (k + 1) * elem_regs))
                dst.write(st, w, out, lanes)
            return run_read2
        data0 = b.ops.src(f["DATA0"], 8 * nbytes)
        data1 = b.ops.src(f["DATA1"], 8 * nbytes)

        def run_write2(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            a = base_addr(ctx, w)
            on = Active(lanes)
            for o, src in ((off0, data0), (off1, data1)):
                offs = ctx.lds_offsets(w, on.sel, on.pick(a) + o * scale, nbytes, d)
                ctx.lds.store_dwords(offs, on.pick(read_data_regs(src, st, w, elem_regs)))
        return run_write2

    atomic = _DS_ATOMIC.match(name)
    if atomic:
        op = atomic.group(1)
        dtype = atomic_dtype(op if op not in ("MIN", "MAX") or not name.endswith("I32") else "S" + op, mfmt,
                              max(4, nbytes), name)
        if name.endswith(("I32", "I64")) and op in ("MIN", "MAX"):
            dtype = np.dtype(np.int32 if nbytes == 4 else np.int64)
        packed = pair_dtype(name) if op == "PK_ADD" else None
        regs = max(1, nbytes // 4)
        data0 = b.ops.src(f["DATA0"], 8 * nbytes)
        data1 = b.ops.src(f["DATA1"], 8 * nbytes) if "DATA1" in f else None
        dst = b.ops.dst(vdst, 8 * nbytes) if vdst is not None else None
        if op == "MSKOR":
            raise Unsupported("DS_MSKOR is not modelled")

        def run_atomic(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            a = base_addr(ctx, w)
            sel = np.nonzero(lanes)
            offs = ctx.lds_offsets(w, sel, a[sel] + offset, nbytes, d)
            dat = np.ascontiguousarray(read_data_regs(data0, st, w, regs)[sel]).view(np.uint8).reshape(len(offs), -1)
            cmp = None
            if data1 is not None:
                # DS_CMPST: DATA0 is the compare value, DATA1 the new value
                cmp, dat = dat, np.ascontiguousarray(read_data_regs(data1, st, w, regs)[sel]).view(np.uint8).reshape(
                    len(offs), -1)
            old = atomic_rmw(ctx.lds, offs, op, dtype, dat, cmp, packed)
            if dst is not None:
                full = np.zeros(lanes.shape + (regs,), np.uint32)
                full[sel] = np.ascontiguousarray(old).view(np.uint32).reshape(len(offs), regs)
                dst.write(st, w, full if regs > 1 else full[..., 0], lanes)
        return run_atomic

    if is_load and is_store:   # read-modify-write forms the atomic table above lacks (ds_wrap, ds_wrxchg2, ...)
        raise Unsupported(f"{name} is not modelled")
    if is_load and vdst is not None:
        regs = max(1, nbytes // 4)
        dst = b.ops.dst(vdst, max(32, 8 * nbytes))
        tr_bits = transpose_bits(name)

        def run_read(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            a = base_addr(ctx, w)
            on = Active(lanes)
            offs = ctx.lds_offsets(w, on.sel, on.pick(a) + offset, nbytes, d)
            out = np.zeros(lanes.shape + (regs,), np.uint32)
            on.put(out, load_elements(ctx.lds, offs, nbytes, mfmt))
            if tr_bits:  # gfx950 transposing read: lanes of each 16-lane row exchange elements
                out = lds_transpose(out, tr_bits)
            write_loaded(dst, st, w, out, regs, half, lanes)
        return run_read

    if is_store:
        regs = max(1, nbytes // 4)
        data0 = b.ops.src(f["DATA0"], max(32, 8 * nbytes))

        def run_write(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            a = base_addr(ctx, w)
            on = Active(lanes)
            offs = ctx.lds_offsets(w, on.sel, on.pick(a) + offset, nbytes, d)
            data = read_data_regs(data0, st, w, regs)
            if half == "hi":
                data = data >> np.uint32(16)
            store_elements(ctx.lds, offs, on.pick(data), nbytes)
        return run_write
    raise Unsupported("no semantics for this LDS instruction")


@semantics("DS_NOP")
def _ds_nop(b, d):
    return lambda ctx, w: None


@semantics("DS_SWIZZLE_B32", "DS_BPERMUTE_B32", "DS_PERMUTE_B32")
def _ds_lane_ops(b, d):
    """Cross-lane moves through the LDS crossbar (no LDS memory is touched)."""
    name = d.name
    if bool(d.modifier("gds")):
        raise Unsupported("GDS is not modelled")
    f = d.by_field()
    offset = int(d.modifier("offset", 0) or 0)
    dst = b.ops.dst(f["VDST"], 32)
    lane = np.arange(WAVE)
    if name == "DS_SWIZZLE_B32":
        data = b.ops.src(f["DATA0"], 32)
        if offset & 0x8000:  # quad permute mode: 2 bits per lane of a quad
            src_lane = (lane & ~3) + ((offset >> (2 * (lane & 3))) & 3)
        else:  # bit mode within groups of 32 lanes
            and_mask, or_mask, xor_mask = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
            src_lane = (lane & ~31) | ((((lane & 31) & and_mask) | or_mask) ^ xor_mask)

        def run_swizzle(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            v = np.asarray(data.read(st, w))
            if v.ndim == 1:
                v = np.broadcast_to(v[:, None], lanes.shape)
            moved = np.where(lanes[:, src_lane], v[:, src_lane], 0)
            dst.write(st, w, moved, lanes)
        return run_swizzle
    addr = b.ops.src(f["ADDR"], 32)
    data = b.ops.src(f["DATA0"], 32)

    def run_perm(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        v = np.asarray(data.read(st, w))
        if v.ndim == 1:
            v = np.broadcast_to(v[:, None], lanes.shape)
        a = np.asarray(addr.read(st, w))
        if a.ndim == 1:
            a = np.broadcast_to(a[:, None], lanes.shape)
        target = ((a.astype(np.int64) + offset) >> 2) & 63
        n = lanes.shape[0]
        rows = np.arange(n)[:, None]
        if name == "DS_BPERMUTE_B32":  # each lane reads the lane it addresses
            moved = np.where(lanes[rows, target], v[rows, target], 0)
            dst.write(st, w, moved, lanes)
            return
        out = np.zeros(lanes.shape, np.uint32)  # DS_PERMUTE_B32: each lane writes the lane it addresses
        for g in range(n):
            act = np.nonzero(lanes[g])[0]
            out[g, target[g, act]] = v[g, act]
        dst.write(st, w, out, lanes)
    return run_perm
