"""Sparse MFMA (V_SMFMAC_*) semantics: D = C + A x B with A 4:2 structurally sparse, for the CDNA 3 (gfx942)
shapes and the doubled-K CDNA 4 (gfx950) ones.

Facts, from the CDNA 4 ISA guide section 7.5 "Sparse Matrices" (the CDNA 3 guide's section of the same name
for the gfx942 shapes):
- C and D are the VDST registers ("all 'accumulate' ops"); SRC2 is one VGPR of 2-bit sparsity indices, always
  an architectural VGPR whatever ACC_CD says; CBSZ/ABID only pick the index set.
- B (K x N, dense) is laid out per lane as the dense MFMAs' 16-bit / 8-bit tables: lane l holds column l % N and,
  with G = 64 / N lane groups and g = l // N, items in chunks of four VGPRs (128 bits): chunk h of H holds
  K/(G*H) consecutive k from h * K/H + g * K/(G*H) (guide 7.5.1 Tables 34/36 for CDNA 3, "F16/BF16 Layout for
  Matrix B" B[64][16] / B[32][32] and "IU8/F*8 Layout for Matrix B" B[128][16] / B[64][32] for CDNA 4).
- A holds the non-zero half of the same dense lane positions: its values 2p and 2p+1 are the two non-zero
  elements of group p (dense positions 4p .. 4p+3 of the lane's list), at offsets idx[2p] and idx[2p+1] within
  the group, the 2-bit indices of the selected set, value j's at bits [2j+1:2j] of the set (guide Tables 35 /
  37 and the CDNA 4 "Index Layout" tables: bits [1:0] V0[15:0], [3:2] V0[31:16], ... for 16-bit data;
  [1:0] V0[7:0], [3:2] V0[15:8], ... for 8-bit data).
- Index sets: a set is 2 bits per A value; SRC2 holds 32 / (2 * A values) of them. With CBSZ = 0, ABID picks the
  set (ABID[1:0] of four on CDNA 3 16-bit data, ABID[0] of two on CDNA 3 8-bit and CDNA 4 16-bit data); with
  CBSZ != 0 the first; CDNA 4's 8-bit forms have one set and ignore both (guide 7.5, "Sparse Index Select";
  LLVM's MLIR smfmac verifier fix for gfx950, "16 bit sparse indices ... one of two 16-bit sets").
- Rounding: products and the K-sum in float64, one rounding to f32 (RNE, denormals kept); i8 forms accumulate
  in int32 with the carry dropped (guide: "I32 ... otherwise the carry out bits are dropped").

Checked by LLVM 22's llvm.amdgcn.smfmac.* intrinsics compiled for gfx950 and gfx942 (tests/emu/test_emu_smfmac.py)
against numpy of these tables.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from jitgemm.isa.spec.mfma import parse_smfmac_name

from ..mfma import WAVE, _d_flat, _elements
from ..registry import register_pattern

if TYPE_CHECKING:
    from ..ops import Builder, RunFn
    from ..program import Decoded


def is_smfmac(name: str) -> bool:
    return parse_smfmac_name(name) is not None


@cache
def b_k_positions(m: int, k: int, items: int, bits: int) -> np.ndarray:
    """(64, items) dense K index of each B item of each lane (module docstring), the list A's groups index."""
    chunks = max(1, items * bits // 128)
    per = items // chunks
    lane = np.arange(WAVE)[:, None]
    e = np.arange(items)[None, :]
    return (e // per) * (k // chunks) + (lane // m) * per + e % per


def index_set(cbsz: int, abid: int, a_items: int) -> tuple[int, int]:
    """(first bit, bits) of the index set CBSZ/ABID select in SRC2 for `a_items` A values per lane."""
    bits = 2 * a_items
    sets = max(1, 32 // bits)
    chosen = (abid & (sets - 1)) if cbsz == 0 else 0
    return chosen * bits, bits


def smfmac_product(a_vals: np.ndarray, b_vals: np.ndarray, idx: np.ndarray, m: int, k: int,
                   kpos: np.ndarray) -> np.ndarray:
    """(G, M, N) float64 / int64 A x B from A values (G, 64, a_items), B values (G, 64, b_items), 2-bit indices
    (G, 64, a_items) and B's lane K positions (64, b_items)."""
    g, lanes, a_items = a_vals.shape
    group = np.arange(a_items) // 2
    slot = 4 * group[None, None, :] + idx                          # position in the lane's dense list
    k_of_a = np.take_along_axis(np.broadcast_to(kpos, (g, lanes, kpos.shape[1])), slot, axis=2)
    dtype = np.int64 if a_vals.dtype.kind in "iu" else np.float64
    a_dense = np.zeros((g, m, k), dtype)
    rows = np.broadcast_to((np.arange(lanes) % m)[None, :, None], k_of_a.shape)
    wave = np.broadcast_to(np.arange(g)[:, None, None], k_of_a.shape)
    np.add.at(a_dense, (wave, rows, k_of_a), a_vals.astype(dtype))
    b_dense = np.zeros((g, k, m), dtype)
    cols = np.broadcast_to((np.arange(lanes) % m)[None, :, None], (g, lanes, kpos.shape[1]))
    b_dense[np.arange(g)[:, None, None], np.broadcast_to(kpos, cols.shape), cols] = b_vals.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.matmul(a_dense, b_dense)


def smfmac(b: Builder, d: Decoded) -> RunFn:
    """The op of one V_SMFMAC_* instruction (module docstring for the layouts)."""
    from ..errors import NoSemantics

    shape = parse_smfmac_name(d.name)
    pairs = d.operand_pairs()
    if shape is None or len(pairs) != 4:
        raise NoSemantics(f"{d.name}: a sparse MFMA needs VDST, SRC0 (A), SRC1 (B) and SRC2 (indices)")
    (od, opd), (oa, opa), (ob, opb), (_oi, opi) = pairs
    a_fmt, b_fmt, acc = (b.fmt(o).component for o in (oa, ob, od))
    m, k = shape.m, shape.k
    a_items, b_items = oa.size // a_fmt.bits, ob.size // b_fmt.bits
    if shape.m != shape.n or b_items != 2 * a_items or b_items * (WAVE // m) != k:
        raise NoSemantics(f"{d.name}: {a_items} A and {b_items} B elements per lane do not make a 4:2 sparse "
                          f"{m}x{shape.n}x{k}")
    kpos = b_k_positions(m, k, b_items, b_fmt.bits)
    first, nbits = index_set(int(d.modifier("cbsz", 0) or 0), int(d.modifier("abid", 0) or 0), a_items)
    c_regs = od.size // 32
    dst = b.ops.dst(opd, od.size)
    srcs = {"a": (b.ops.src(opa, oa.size), oa.size // 32), "b": (b.ops.src(opb, ob.size), ob.size // 32),
            "c": (b.ops.src(opd, od.size), c_regs), "i": (b.ops.src(opi, 32), 1)}
    flat = _d_flat(m, m, 1)
    shifts = (first + 2 * np.arange(a_items)).astype(np.uint32)

    def regs(which, st, w):
        src, count = srcs[which]
        bits = np.asarray(src.read(st, w))
        if src.uniform:
            bits = np.broadcast_to(bits.astype(np.uint32).reshape(-1, 1, 1), (bits.shape[0], WAVE, count))
        elif bits.dtype == np.uint64:   # a 64-bit operand reads as one uint64 per lane
            bits = np.ascontiguousarray(bits).view(np.uint32)
        return np.ascontiguousarray(bits, np.uint32).reshape(bits.shape[0], WAVE, count)

    def run(ctx, w):
        st = ctx.st
        index = regs("i", st, w)[..., 0]
        idx = ((index[..., None] >> shifts) & np.uint32(3)).astype(np.int64)
        prod = smfmac_product(_elements(regs("a", st, w), a_fmt, False), _elements(regs("b", st, w), b_fmt, False),
                              idx, m, k, kpos)
        gathered = np.take(prod.reshape(prod.shape[0], -1), flat, axis=1)
        c = regs("c", st, w)
        if acc.kind == "f":
            out = (gathered + c.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
        else:
            out = (gathered + c.view(np.int32).astype(np.int64)).astype(np.uint32)
        dst.write(st, w, out if c_regs > 1 else out[..., 0])
    return run


# --- registration (jitgemm/emu/registry.py): every V_SMFMAC_* the name parser reads (isa.spec.mfma.parse_smfmac_name)
register_pattern(r"^V_SMFMAC_", smfmac)
