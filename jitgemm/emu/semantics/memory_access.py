"""What the memory families share (memory.py: SMEM, FLAT/scratch, DS; buffer.py: MUBUF/MTBUF): the implicit
memory operand's size and format, element loads and stores with sign/zero extension, D16 halves, atomics
(read-modify-write of every ATOMIC_* op), LDS-direct stores (M0-based), faults naming the lanes and addresses, and
the tail every load ends with (`write_loaded`)."""

from __future__ import annotations

import re

import numpy as np

from ..errors import MemoryFault
from ..state import WAVE
from ..values import Fmt, operand_fmt


def mem_operand(b, d, kind: str):
    """(size in bits, Fmt, is_load, is_store) from the implicit OPR_GPUMEM / OPR_DSMEM operands."""
    load = store = False
    size = 32
    fmt = None
    for o in d.implicit_operands():
        if o.operand_type != kind:
            continue
        size = o.size
        fmt = operand_fmt(b.spec, o.data_format, o.size)
        load |= o.input
        store |= o.output
    return size, fmt, load, store


def memory_fault(ctx, d, what, addr, w, lanes_bad, detail_fn=None):
    st = ctx.st
    waves = np.arange(st.count)[w] if isinstance(w, slice) else np.asarray(w)
    gi, li = np.argwhere(lanes_bad)[0]
    address = int(np.asarray(addr)[gi, li])
    detail = detail_fn(address) if detail_fn else ""
    raise MemoryFault(f"{what} ({d.text})", address, d.pc, int(waves[gi]), int(li), ctx.kernel, detail,
                      code_address=ctx.code_address)


def extend_loaded(raw_bytes: np.ndarray, fmt: Fmt | None, nbytes: int) -> np.ndarray:
    """(..., nbytes) uint8 -> (...) uint32, sign-extended when the memory format is signed."""
    if nbytes == 1:
        v = raw_bytes[..., 0]
        return v.view(np.int8).astype(np.int32).view(np.uint32) if fmt is not None and fmt.kind == "i" \
            else v.astype(np.uint32)
    v = np.ascontiguousarray(raw_bytes).view(np.uint16)[..., 0]
    return v.view(np.int16).astype(np.int32).view(np.uint32) if fmt is not None and fmt.kind == "i" \
        else v.astype(np.uint32)


def d16_half(name: str) -> str | None:
    if "D16_HI" in name:
        return "hi"
    if "D16" in name:
        return "lo"
    return None


def merge_d16(old: np.ndarray, value: np.ndarray, half: str) -> np.ndarray:
    old = old.astype(np.uint32)
    v = value.astype(np.uint32) & np.uint32(0xFFFF)
    if half == "hi":
        return (old & np.uint32(0xFFFF)) | (v << np.uint32(16))
    return (old & np.uint32(0xFFFF0000)) | v


def read_data_regs(src, st, w, regs: int) -> np.ndarray:
    """(G, 64, regs) uint32 from a VGPR data operand."""
    bits = np.asarray(src.read(st, w))
    if bits.dtype == np.uint64:
        bits = np.ascontiguousarray(bits).view(np.uint32).reshape(bits.shape + (2,))
    if bits.ndim == 2:
        bits = bits[..., None]
    return bits


ATOMIC_OP = re.compile(r"ATOMIC_(PK_ADD|ADD|SUB|SMIN|UMIN|SMAX|UMAX|MIN|MAX|AND|OR|XOR|SWAP|CMPSWAP|INC|DEC)"
                     r"(?:_(F16|BF16|F32|F64))?(?:_X2)?$")


def atomic_apply(op: str, old, data, cmp=None):
    if op == "ADD":
        return old + data
    if op == "SUB":
        return old - data
    if op == "RSUB":
        return data - old
    if op in ("SMIN", "UMIN", "MIN"):
        return np.fmin(old, data) if old.dtype.kind == "f" else np.minimum(old, data)
    if op in ("SMAX", "UMAX", "MAX"):
        return np.fmax(old, data) if old.dtype.kind == "f" else np.maximum(old, data)
    if op == "AND":
        return old & data
    if op == "OR":
        return old | data
    if op == "XOR":
        return old ^ data
    if op in ("SWAP", "WRXCHG"):
        return data
    if op in ("CMPSWAP", "CMPST"):
        return np.where(old == cmp, data, old)
    if op == "INC":
        return np.where(old >= data, 0, old + 1).astype(old.dtype)
    if op == "DEC":
        return np.where((old == 0) | (old > data), data, old - 1).astype(old.dtype)
    raise ValueError(op)


def atomic_dtype(op: str, fmt: Fmt | None, nbytes: int, name: str) -> np.dtype:
    if fmt is not None and fmt.kind == "f" and fmt.count == 1:
        return fmt.dtype
    signed = op in ("SMIN", "SMAX") or name.endswith(("I32", "I64"))
    return np.dtype({(4, False): np.uint32, (4, True): np.int32, (8, False): np.uint64, (8, True): np.int64}[
        (nbytes, signed)])


def pair_dtype(name: str) -> np.dtype:
    """The element of a packed-pair atomic add (*_PK_ADD_F16 / *_PK_ADD_BF16): two halves of one dword."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16 if name.endswith("BF16") else np.float16)


def pk_add(old: np.ndarray, data: np.ndarray, pair: np.dtype) -> np.ndarray:
    """Each half plus the data's half, rounded once to nearest even (the exact sum of two f16 or two bf16 values
    is exact or below half an ulp of float64, so float64 then one rounding is the correctly rounded sum)."""
    return (old.astype(np.float64) + data.view(pair).reshape(old.shape).astype(np.float64)).astype(pair)


def atomic_rmw(store, offs: np.ndarray, op: str, dtype: np.dtype, data: np.ndarray, cmp: np.ndarray | None,
                packed: np.dtype | None) -> np.ndarray:
    """Read-modify-write at byte offsets `offs` (N,) in lane order; returns the values before each lane's
    update (lanes hitting the same address see each other's updates in order). `packed`: the element type of a
    packed-pair add (pair_dtype), else None."""
    nbytes = dtype.itemsize if packed is None else 4
    n = len(offs)
    raw_old = store.load_bytes(offs, nbytes)
    uniq = len(np.unique(offs)) == n
    if uniq:
        old = np.ascontiguousarray(raw_old).view(dtype if packed is None else packed)
        if packed is not None:
            old = old.reshape(n, 2)
            new = pk_add(old, data, packed)
        else:
            old = old.reshape(n)
            new = atomic_apply(op, old, data.view(dtype).reshape(n),
                                None if cmp is None else cmp.view(dtype).reshape(n)).astype(dtype)
        store.store_bytes(offs, np.ascontiguousarray(new).view(np.uint8).reshape(n, nbytes))
        return raw_old
    out = np.empty_like(raw_old)
    for i in range(n):  # conflicting lanes: one at a time, in lane order
        o = offs[i:i + 1]
        cur = store.load_bytes(o, nbytes)
        out[i] = cur[0]
        if packed is not None:
            old = np.ascontiguousarray(cur).view(packed)
            new = pk_add(old, data[i:i + 1], packed)
        else:
            old = np.ascontiguousarray(cur).view(dtype)
            new = atomic_apply(op, old, data[i:i + 1].view(dtype),
                                None if cmp is None else cmp[i:i + 1].view(dtype)).astype(dtype)
        store.store_bytes(o, np.ascontiguousarray(new).view(np.uint8).reshape(1, nbytes))
    return out


def lds_direct_store(ctx, st, w, d, lanes, data: np.ndarray, nbytes: int, offset: int, m0_mask: int) -> None:
    """A load-to-LDS writes each lane's data at M0 + instruction offset + lane * max(4, size): dword and smaller
    loads fill one dword per lane, CDNA 4's dwordx3/x4 loads 12/16 bytes per lane (CDNA 3/4 ISA guides,
    "Global and buffer loads to LDS"; Triton's gfx950 GEMMs with async copies, tests/emu/test_emu_gfx950_kernels.py).
    M0 holds the LDS byte address in as many low bits as the target's LDS needs (profile lds size)."""
    stride = max(4, nbytes)
    regs = max(1, nbytes // 4)
    m0 = st.s[w, st.m0_slot].astype(np.int64) & m0_mask
    lds_addr = m0[:, None] + offset + stride * np.arange(WAVE)[None, :]
    sel = np.nonzero(lanes)
    offs = ctx.lds_offsets(w, sel, lds_addr[sel], stride, d)
    ctx.lds.store_dwords(offs, np.ascontiguousarray(data[sel][:, :regs]))


def m0_mask_of(spec) -> int:
    from ..memory import lds_limit

    return (1 << max(16, (lds_limit(spec) - 1).bit_length())) - 1


def load_elements(store, offs: np.ndarray, nbytes: int, fmt: Fmt | None) -> np.ndarray:
    if nbytes >= 4:
        return store.load_dwords(offs, nbytes // 4)
    return extend_loaded(store.load_bytes(offs, nbytes), fmt, nbytes)[:, None]


def store_elements(store, offs: np.ndarray, data: np.ndarray, nbytes: int) -> None:
    if nbytes >= 4:
        store.store_dwords(offs, data[:, : nbytes // 4])
    else:
        raw = np.ascontiguousarray(data[:, 0].astype(np.uint32)).view(np.uint8).reshape(len(offs), 4)[:, :nbytes]
        store.store_bytes(offs, raw)


def write_loaded(dst, st, w, out: np.ndarray, regs: int, half: str | None, lanes) -> None:
    """The end of every vector load: one register or a register run per lane, a D16 load merged into the half
    of the destination it writes, written for the lanes that loaded."""
    value = out if regs > 1 else out[..., 0]
    if half is not None:
        value = merge_d16(np.asarray(dst.read_old(st, w)), value, half)
    dst.write(st, w, value, lanes)
