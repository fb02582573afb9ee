"""Semantics of the buffer instructions (MUBUF and the typed MTBUF): loads, stores, typed (FORMAT) accesses,
atomics and the LDS-direct load, all through a V# resource decoded by resource.py.

The address and range rules are the ISA's (resource.py): the buffer kind comes from IDXEN, ADD_TID_ENABLE and
SWIZZLE_ENABLE; an out-of-range lane reads 0 and does not store. Untyped loads and stores are range-checked per
dword; typed accesses and atomics all or nothing per element (CDNA3 ISA, "Range Checking", notes 3 and 4).
A lane in range whose address lies outside every launched buffer is an emulator fault naming address, PC,
wave and lane (a real GPU would read or corrupt whatever is mapped there).

Typed accesses convert between memory and 32-bit VGPR components as the data format (DFMT: component count
and widths) and numeric format (NFMT) say (CDNA3 ISA, "Buffer Instructions", data and numeric format tables):
UNORM/SNORM scale to [0, 1] / [-1, 1], USCALED/SSCALED convert integers to float, UINT/SINT extend, FLOAT is
IEEE (16-bit halves widen to f32). MTBUF takes the formats from the instruction, BUFFER_*_FORMAT_* from the V#.
A component the format lacks reads 0, or 1 for W (the descriptor's default DST_SEL).
"""

from __future__ import annotations

import numpy as np

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.instruction import Reg

from ..errors import NoSemantics as Unsupported
from ..registry import family_path
from ..resource import access
from ..state import Active
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

# DFMT -> component widths in bits (the uniform-width formats; packed 10/11-bit ones are not modelled)
_DFMT_WIDTHS = {1: (8,), 2: (16,), 3: (8, 8), 4: (32,), 5: (16, 16), 10: (8, 8, 8, 8), 11: (32, 32),
                12: (16, 16, 16, 16), 13: (32, 32, 32), 14: (32, 32, 32, 32)}
_NFMT = {name: i for i, name in enumerate(syn.BUF_NUM_FORMATS)}
_COUNT = {"X": 1, "XY": 2, "XYZ": 3, "XYZW": 4}


def _components(name: str) -> int:
    return _COUNT[name.rsplit("_", 1)[-1]]


def _to_register(raw: np.ndarray, bits: int, nfmt: int) -> np.ndarray:
    """Memory components (N,) uint64 of `bits` bits -> 32-bit register values (N,) uint32."""
    v = raw.astype(np.uint64) & np.uint64((1 << bits) - 1)
    signed = v.astype(np.int64) - np.where(v >> np.uint64(bits - 1) != 0, np.int64(1) << bits, 0)
    if nfmt == _NFMT["UNORM"]:
        return (v.astype(np.float64) / ((1 << bits) - 1)).astype(np.float32).view(np.uint32)
    if nfmt == _NFMT["SNORM"]:
        return np.maximum(signed / ((1 << (bits - 1)) - 1), -1.0).astype(np.float32).view(np.uint32)
    if nfmt == _NFMT["USCALED"]:
        return v.astype(np.float32).view(np.uint32)
    if nfmt == _NFMT["SSCALED"]:
        return signed.astype(np.float32).view(np.uint32)
    if nfmt == _NFMT["UINT"]:
        return v.astype(np.uint32)
    if nfmt == _NFMT["SINT"]:
        return signed.astype(np.int32).view(np.uint32)
    if nfmt == _NFMT["FLOAT"]:
        if bits == 32:
            return v.astype(np.uint32)
        if bits == 16:
            return v.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    raise Unsupported(f"numeric format {syn.BUF_NUM_FORMATS[nfmt]} with {bits}-bit components is not modelled")


def _to_memory(reg: np.ndarray, bits: int, nfmt: int) -> np.ndarray:
    """32-bit register values (N,) uint32 -> memory components (N,) uint64 of `bits` bits."""
    reg = np.ascontiguousarray(reg.astype(np.uint32))
    f = reg.view(np.float32).astype(np.float64)
    mask = (1 << bits) - 1
    with np.errstate(invalid="ignore"):
        if nfmt == _NFMT["UNORM"]:
            out = np.rint(np.clip(np.nan_to_num(f), 0.0, 1.0) * mask).astype(np.int64)
        elif nfmt == _NFMT["SNORM"]:
            out = np.rint(np.clip(np.nan_to_num(f), -1.0, 1.0) * ((1 << (bits - 1)) - 1)).astype(np.int64)
        elif nfmt in (_NFMT["USCALED"], _NFMT["SSCALED"]):
            out = np.trunc(np.nan_to_num(f)).astype(np.int64)
        elif nfmt in (_NFMT["UINT"], _NFMT["SINT"]):
            out = reg.astype(np.int64)
        elif nfmt == _NFMT["FLOAT"] and bits == 32:
            out = reg.astype(np.int64)
        elif nfmt == _NFMT["FLOAT"] and bits == 16:
            out = f.astype(np.float16).view(np.uint16).astype(np.int64)
        else:
            raise Unsupported(f"numeric format {syn.BUF_NUM_FORMATS[nfmt]} with {bits}-bit components is not "
                              "modelled")
    return (out & mask).astype(np.uint64)


def _instruction_format(d) -> tuple[int, int]:
    """(DFMT, NFMT) of an MTBUF instruction from its format: modifier (LLVM leaves out the defaults)."""
    value = d.modifier("format")
    dfmt, nfmt = syn.BUF_FORMAT_DEFAULT
    if isinstance(value, int) and not isinstance(value, bool):
        return value & 0xF, value >> 4
    for item in value if isinstance(value, tuple) else (value,) if value else ():
        text = str(item).upper()
        if text.startswith("BUF_DATA_FORMAT_"):
            dfmt = syn.BUF_DATA_FORMATS.index(text[16:])
        elif text.startswith("BUF_NUM_FORMAT_"):
            nfmt = syn.BUF_NUM_FORMATS.index(text[15:])
    return dfmt, nfmt


def _check_format(dfmt: int, nfmt: int) -> tuple[int, ...]:
    widths = _DFMT_WIDTHS.get(dfmt)
    if widths is None:
        raise Unsupported(f"data format BUF_DATA_FORMAT_{syn.BUF_DATA_FORMATS[dfmt]} is not modelled")
    if nfmt == _NFMT["FLOAT"] and widths[0] == 8 or syn.BUF_NUM_FORMATS[nfmt].startswith("RESERVED"):
        raise Unsupported(f"BUF_NUM_FORMAT_{syn.BUF_NUM_FORMATS[nfmt]} with {widths[0]}-bit components is not "
                          "a format")
    return widths


@family_path("buffer")
def mubuf(b, d):
    """MUBUF and MTBUF instructions (see the module docstring)."""
    name = d.name
    f = d.by_field()
    if "SRSRC" not in f:
        raise Unsupported("buffer instruction without a resource operand")
    size_bits, mfmt, is_load, is_store = mem_operand(b, d, "OPR_GPUMEM")
    offset = int(d.modifier("offset", 0) or 0)
    offen = bool(d.modifier("offen"))
    idxen = bool(d.modifier("idxen"))
    to_lds = bool(d.modifier("lds"))
    m0_mask = m0_mask_of(b.spec) if to_lds else 0
    vaddr = f.get("VADDR")
    nv = int(offen) + int(idxen)
    vaddr_src = b.ops.src(vaddr, 32 * nv) if nv and isinstance(vaddr, Reg) else None
    rsrc_src = b.ops.src(f["SRSRC"], 128)
    soff = f.get("SOFFSET")
    soff_src = b.ops.src(soff, 32) if soff is not None else None
    vdata = f.get("VDATA")

    def locate(ctx, w):
        st = ctx.st
        rsrc = np.asarray(rsrc_src.read(st, w))
        n = rsrc.shape[0]
        voff = vidx = np.zeros((n, 64), np.uint64)
        if vaddr_src is not None:
            v = np.asarray(vaddr_src.read(st, w))
            if v.dtype == np.uint64:
                v = np.ascontiguousarray(v).view(np.uint32).reshape(v.shape + (2,))
            if v.ndim == 2:
                v = v[..., None]
            if idxen:
                vidx = v[..., 0].astype(np.uint64)
                if offen:
                    voff = v[..., 1].astype(np.uint64)
            elif offen:
                voff = v[..., 0].astype(np.uint64)
        soffset = np.asarray(soff_src.read(st, w)).astype(np.uint64) if soff_src is not None else np.zeros(n, np.uint64)
        return access(rsrc, idxen=idxen, voffset=voff, vindex=vidx, inst_offset=offset, soffset=soffset)

    def checked(ctx, w, acc, ok, extra: int, width: int, write: bool, what: str):
        a = acc.address(extra)
        bad = ok & ~ctx.mem.valid(a, width, write=write)
        if bad.any():
            memory_fault(ctx, d, f"buffer {what} inside the descriptor's range but outside every buffer", a, w, bad,
                   ctx.mem.describe)
        base = acc.resource.base[:, None]
        bad = ok & ~ctx.mem.same_buffer(a, base)  # index x stride reaches 2**46: past the gap to another buffer
        if bad.any():
            def where(address: int) -> str:
                i = int(np.argwhere(bad)[0][0])
                return (f"{ctx.mem.describe(address)}; the descriptor's base 0x{int(acc.resource.base[i]):x} "
                        f"points into {ctx.mem.describe(int(acc.resource.base[i]))}")
            memory_fault(ctx, d, f"buffer {what} inside the descriptor's range but outside the buffer its base points "
                   "into", a, w, bad, where)
        if ctx.prov is not None:   # the base itself computed to lie in another buffer (provenance.py)
            ctx.prov.check(ctx, d, w, a, ok, width)
        return a

    if "FORMAT" in name:
        return _typed(b, d, f, locate, checked, is_load, vdata)
    atomic = ATOMIC_OP.search(name)
    if atomic:
        return _atomic(b, d, atomic.group(1), size_bits, mfmt, locate, checked, vdata)

    nbytes = size_bits // 8
    regs = max(1, nbytes // 4)
    half = d16_half(name)
    width = 4 if nbytes >= 4 else nbytes

    if is_load:
        dst = b.ops.dst(vdata, max(32, size_bits)) if vdata is not None and not to_lds else None

        def run_load(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            acc = locate(ctx, w)
            out = np.zeros(lanes.shape + (regs,), np.uint32)
            for k in range(regs):
                ok = lanes & acc.in_range(4 * k, width)
                a = checked(ctx, w, acc, ok, 4 * k, width, False, "load")
                if ok.any():
                    on = Active(ok)
                    on.put(out, load_elements(ctx.mem, ctx.mem.offsets(on.pick(a)), width, mfmt)[:, 0], k)
            if to_lds:  # LDS-direct: M0 + instruction offset + max(4, size) * lane
                lds_direct_store(ctx, st, w, d, lanes, out, nbytes, offset, m0_mask)
                return
            write_loaded(dst, st, w, out, regs, half, lanes)
        return run_load

    if is_store:
        data_src = b.ops.src(vdata, 32 * regs)

        def run_store(ctx, w):
            st = ctx.st
            lanes = st.exec_lanes(w)
            acc = locate(ctx, w)
            data = read_data_regs(data_src, st, w, regs)
            if half == "hi":
                data = data >> np.uint32(16)
            for k in range(regs):
                ok = lanes & acc.in_range(4 * k, width)
                a = checked(ctx, w, acc, ok, 4 * k, width, True, "store")
                if ok.any():
                    on = Active(ok)
                    store_elements(ctx.mem, ctx.mem.offsets(on.pick(a)), on.pick(data)[:, k:k + 1], width)
        return run_store
    raise Unsupported("no semantics for this buffer instruction")


def _atomic(b, d, op: str, size_bits: int, mfmt, locate, checked, vdata):
    """Buffer atomics: read-modify-write of one element per lane, lanes in order; with SC0 (GLC) VDATA gets
    the value before the update. CMPSWAP's VDATA holds the new value, then the compare value."""
    name = d.name
    nbytes = size_bits // 8
    dtype = atomic_dtype(op, mfmt, nbytes, name)
    packed = pair_dtype(name) if op == "PK_ADD" else None
    if packed is not None and (mfmt is None or mfmt.kind != "f" or mfmt.bits != 16):
        raise Unsupported(f"{name}: only the f16 and bf16 pairs are modelled")
    words = max(1, nbytes // 4)
    data_regs = words * (2 if op == "CMPSWAP" else 1)
    data_src = b.ops.src(vdata, 32 * data_regs)
    returns = bool(d.modifier("sc0") or d.modifier("glc"))
    dst = b.ops.dst(vdata, 32 * words) if returns else None

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        acc = locate(ctx, w)
        ok = lanes & acc.in_range(0, nbytes)
        a = checked(ctx, w, acc, ok, 0, nbytes, True, "atomic")
        full = np.zeros(lanes.shape + (words,), np.uint32)  # out of range: the returned value is 0
        if ok.any():
            data = read_data_regs(data_src, st, w, data_regs)
            sel = np.nonzero(ok)
            offs = ctx.mem.offsets(a[sel])
            src = np.ascontiguousarray(data[sel][:, :words]).view(np.uint8).reshape(len(offs), 4 * words)
            cmp = None
            if op == "CMPSWAP":
                cmp = np.ascontiguousarray(data[sel][:, words:]).view(np.uint8).reshape(len(offs), 4 * words)
            old = atomic_rmw(ctx.mem, offs, op, dtype, src, cmp, packed)
            full[sel] = np.ascontiguousarray(old).view(np.uint32).reshape(len(offs), words)
        if dst is not None:
            dst.write(st, w, full if words > 1 else full[..., 0], lanes)
    return run


def _typed(b, d, f, locate, checked, is_load: bool, vdata):
    """Typed accesses: TBUFFER_* (formats from the instruction) and BUFFER_*_FORMAT_* (from the V#)."""
    name = d.name
    if "D16" in name:
        raise Unsupported(f"{name}: 16-bit typed accesses are not modelled")
    count = _components(name)
    fixed = _instruction_format(d) if name.startswith("TBUFFER") else None
    if fixed is not None:
        _check_format(*fixed)
    if is_load:
        dst = b.ops.dst(vdata, 32 * count)
    else:
        data_src = b.ops.src(vdata, 32 * count)

    def formats(acc):
        if fixed is not None:
            return fixed
        dfmts = np.unique(acc.resource.data_format)
        nfmts = np.unique(acc.resource.num_format)
        if len(dfmts) != 1 or len(nfmts) != 1:
            raise Unsupported(f"{name}: waves at one PC use different V# formats")
        return int(dfmts[0]), int(nfmts[0])

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        acc = locate(ctx, w)
        dfmt, nfmt = formats(acc)
        widths = _check_format(dfmt, nfmt)
        elem = sum(widths) // 8
        ok = lanes & acc.in_range(0, elem)
        a = checked(ctx, w, acc, ok, 0, elem, not is_load, "load" if is_load else "store")
        sel = np.nonzero(ok)
        offs = ctx.mem.offsets(a[sel])
        if is_load:
            raw = ctx.mem.load_bytes(offs, elem)
            out = np.zeros(lanes.shape + (count,), np.uint32)
            pos = 0
            for c in range(count):
                if c < len(widths):
                    nb = widths[c] // 8
                    piece = np.zeros((len(offs), 8), np.uint8)
                    piece[:, :nb] = raw[:, pos:pos + nb]
                    out[sel + (c,)] = _to_register(piece.view(np.uint64)[:, 0], widths[c], nfmt)
                    pos += nb
                elif c == 3:  # W of a format without it: 1 (1.0 for float-valued formats)
                    one = np.uint32(1) if nfmt in (_NFMT["UINT"], _NFMT["SINT"]) else np.float32(1.0).view(np.uint32)
                    out[sel + (c,)] = one
            dst.write(st, w, out if count > 1 else out[..., 0], lanes)
            return
        data = read_data_regs(data_src, st, w, count)[sel]
        written = sum(widths[:count]) // 8  # a store writes the components it has
        raw = np.zeros((len(offs), written), np.uint8)
        pos = 0
        for c, bits in enumerate(widths[:count]):
            nb = bits // 8
            comp = _to_memory(data[:, c], bits, nfmt)
            raw[:, pos:pos + nb] = np.ascontiguousarray(comp).view(np.uint8).reshape(len(offs), 8)[:, :nb]
            pos += nb
        ctx.mem.store_bytes(offs, raw)
    return run
