"""Matrix fused multiply-add (MFMA) semantics: D = A x B + C over the lanes of a wave64.

What an MFMA computes (M x N x K, block count, element types, register counts) comes from the spec: element
types and per-lane register counts from the operands' data formats, the shape from the instruction name
(AMD's and LLVM's naming, V_MFMA_<acc>_<M>X<N>X<K>[_<B>B]_<types>), checked against the operand sizes.

Lane layouts (AMD's matrix instruction calculator, `--detail-instruction` output for CDNA3, and the CDNA3
ISA guide, section "Dependency and Layout" of the matrix arithmetic chapter; the authority that confirms
them in this project is Triton-compiled GEMMs matching numpy, tests/emu/test_emu_triton.py):

- A (M x K): lane l holds row i = l % M; with G = 64 / M lane groups, group g = l // M holds
  k = g * kper + j for element j of its registers (one block), or is block g with k = j (G blocks).
- B (K x N): the same with column n = l % N.
- C and D (per block M x N, M*N/64 registers per lane and block): lane l holds column n = l % N; register r
  of block b = r // R holds row (r' // 4) * 4G + 4 * (l // N) + r' % 4 with r' = r % R.
- CBSZ/ABID: block b takes its A from block (b // 2**CBSZ) * 2**CBSZ + ABID (broadcast of one A block to
  a group of 2**CBSZ blocks); BLGP permutes the lanes B is read from (0: none, 1/2: lanes 0-31/32-63
  broadcast, 3: rotate down by 16 lanes, 4-7: lanes 16*(BLGP-4)..+15 broadcast).
- f64 (DGEMM) results do not use the 4 x N tiles: their group height is 1, so item p of lane l (a register
  pair) holds row 4p + l // 16 of a 16x16 block (CDNA 3/4 ISA guide, "General input and output layout": H = 1
  for f64; the V_MFMA_F64_16X16X4_F64 example); they ignore CBSZ/ABID and BLGP[0..2] negates A, B and C
  (guide "Alternate meaning of broadcast fields for F64 instructions"). One rounding, to f64.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from jitgemm.isa.spec.mfma import WAVE64 as WAVE
from jitgemm.isa.spec.mfma import parse_mfma_name

from .values import Fmt


class MfmaShapeError(ValueError):
    pass


@dataclass(frozen=True)
class MfmaShape:
    name: str
    m: int
    n: int
    k: int
    blocks: int
    a: Fmt   # element format of A (one component)
    b: Fmt
    acc: Fmt
    a_regs: int
    b_regs: int
    c_regs: int
    kper: int   # A/B elements per lane
    xf32: bool  # inputs rounded to 10 mantissa bits (XF32 variants)


def mfma_shape(name: str, a: Fmt, b: Fmt, acc: Fmt, a_bits: int, b_bits: int, c_bits: int) -> MfmaShape:
    """Shape of an MFMA from its spec name and operand formats/sizes; MfmaShapeError when they disagree."""
    parsed = parse_mfma_name(name)
    if parsed is None:
        raise MfmaShapeError(f"{name}: not an MFMA name of the form V_MFMA_<acc>_<M>X<N>X<K>[_<B>B]_<types>")
    m, n, k, blocks, xf32 = parsed.m, parsed.n, parsed.k, parsed.blocks, parsed.xf32
    if m != n or WAVE % m:
        raise MfmaShapeError(f"{name}: only square M=N shapes dividing the wave are modelled")
    kper = a_bits // a.bits
    groups = WAVE // m
    if blocks == 1 and groups * kper != k:
        raise MfmaShapeError(f"{name}: {kper} A elements per lane x {groups} lane groups != K={k}")
    if blocks > 1 and (blocks != groups or kper != k):
        raise MfmaShapeError(f"{name}: {blocks} blocks need {groups} lane groups of K={k} elements, "
                             f"operands hold {kper}")
    c_regs = c_bits // 32
    if c_regs * WAVE != m * n * blocks * (acc.bits // 32) or m * n < WAVE:
        raise MfmaShapeError(f"{name}: {c_regs} accumulator registers per lane do not hold {blocks} blocks of "
                             f"{m}x{n}")
    return MfmaShape(name, m, n, k, blocks, a, b, acc, a_bits // 32, b_bits // 32, c_regs, kper, xf32)


@cache
def _d_layout(m: int, n: int, blocks: int, height: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block, row, col) of each (lane, item) of C/D; `height` is the guide's group height H (4, or 1 for f64)."""
    groups = WAVE // n
    per_block = m * n // WAVE
    lane = np.arange(WAVE)[:, None]
    reg = np.arange(per_block * blocks)[None, :]
    block = np.broadcast_to(reg // per_block, (WAVE, per_block * blocks))
    r = reg % per_block
    row = (r // height) * height * groups + height * (lane // n) + r % height
    col = np.broadcast_to(lane % n, row.shape)
    return block, row, col


@cache
def _d_flat(m: int, n: int, blocks: int, height: int = 4) -> np.ndarray:
    """The (lane, item) -> flat (block, row, col) index of `_d_layout`, for one `np.take` over a
    (G, blocks * M * N) product: the same elements as indexing with three arrays, about 3x faster."""
    block, row, col = _d_layout(m, n, blocks, height)
    return np.ascontiguousarray((block * m + row) * n + col)


_BLGP = {
    0: np.arange(WAVE), 1: np.arange(WAVE) % 32, 2: 32 + np.arange(WAVE) % 32, 3: (np.arange(WAVE) + 16) % WAVE,
    4: np.arange(WAVE) % 16, 5: 16 + np.arange(WAVE) % 16, 6: 32 + np.arange(WAVE) % 16, 7: 48 + np.arange(WAVE) % 16,
}


def _elements(bits: np.ndarray, fmt: Fmt, xf32: bool) -> np.ndarray:
    """(G, 64, regs) uint32 -> (G, 64, elements) float64 / int64."""
    regs = np.ascontiguousarray(bits, np.uint32)
    if fmt.kind == "f" and fmt.bits == 16 and fmt.dtype.name == "bfloat16":
        # bf16 is the top half of an fp32, so this is exact, and ~2x faster than ml_dtypes' bf16 -> float64 cast
        return (regs.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    raw = regs.view(fmt.dtype)
    if fmt.kind == "f":
        vals = raw.astype(np.float64)
        if xf32:  # round to 10 mantissa bits (nearest even)
            f32 = raw.astype(np.float32).view(np.uint32).astype(np.uint64)
            lsb = (f32 >> 13) & 1
            f32 = ((f32 + 0xFFF + lsb) & ~np.uint64(0x1FFF)).astype(np.uint32)
            vals = f32.view(np.float32).astype(np.float64)
        return vals
    return raw.astype(np.int64)


# waves per chunk of an MFMA evaluation: all waves at one PC run together, but the float64 temporaries of 1024
# waves (8 MB for a 32x32 product) fall out of the CPU caches; chunks of ~1 MB of product stay in L2 (3x faster)
_CHUNK_VALUES = 1 << 17


def mfma(shape: MfmaShape, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray,
         cbsz: int = 0, abid: int = 0, blgp: int = 0) -> np.ndarray:
    """D registers (G, 64, c_regs) uint32 from A, B, C registers (G, 64, regs) uint32 (lane-major)."""
    g = a_bits.shape[0]
    c = np.broadcast_to(c_bits, (g, WAVE, shape.c_regs))
    out = mfma_registers(shape, np.swapaxes(a_bits, 1, 2), np.swapaxes(b_bits, 1, 2), np.swapaxes(c, 1, 2),
                         cbsz, abid, blgp)
    return np.swapaxes(out, 1, 2)


def mfma_registers(shape: MfmaShape, a_regs: np.ndarray, b_regs: np.ndarray, c_regs: np.ndarray,
                   cbsz: int = 0, abid: int = 0, blgp: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """D (G, c_regs, 64) uint32 from A, B, C in the register file's layout (G, regs, 64) uint32, evaluated a
    chunk of waves at a time; `out` may be the destination registers themselves (C may alias them: each
    element of C is read before the same element of D is written)."""
    g = a_regs.shape[0]
    if shape.acc.kind == "f" and shape.acc.bits == 64:
        c = np.broadcast_to(c_regs, (g, shape.c_regs, WAVE))
        d = np.swapaxes(_dgemm(shape, np.swapaxes(a_regs, 1, 2), np.swapaxes(b_regs, 1, 2), np.swapaxes(c, 1, 2),
                               blgp), 1, 2)
        if out is None:
            return np.ascontiguousarray(d)
        out[...] = d
        return out
    if out is None:
        out = np.empty((g, shape.c_regs, WAVE), np.uint32)
    step = max(1, _CHUNK_VALUES // (shape.c_regs * WAVE))
    for lo in range(0, g, step):
        hi = min(g, lo + step)
        _mfma_chunk(shape, a_regs[lo:hi], b_regs[lo:hi], c_regs[lo:hi], cbsz, abid, blgp, out[lo:hi])
    return out


def _mfma_chunk(shape: MfmaShape, a_regs, b_regs, c_regs, cbsz: int, abid: int, blgp: int, out) -> None:
    g = a_regs.shape[0]
    m, n, kper, blocks = shape.m, shape.n, shape.kper, shape.blocks
    groups = WAVE // m
    a_bits = np.swapaxes(a_regs, 1, 2)   # (G, 64, regs): _elements copies it contiguous
    b_bits = np.swapaxes(b_regs, 1, 2)
    if blgp:
        b_bits = b_bits[:, _BLGP[blgp]]
    a = _elements(a_bits, shape.a, shape.xf32).reshape(g, groups, m, kper)
    b = _elements(b_bits, shape.b, shape.xf32).reshape(g, groups, n, kper)
    if blocks == 1:
        a_mat = a.transpose(0, 2, 1, 3).reshape(g, 1, m, groups * kper)
        b_mat = b.transpose(0, 1, 3, 2).reshape(g, 1, groups * kper, n)
    else:
        a_mat = a
        b_mat = b.transpose(0, 1, 3, 2)
        if cbsz:
            size = 1 << cbsz
            src = (np.arange(blocks) // size) * size + abid
            a_mat = a_mat[:, np.minimum(src, blocks - 1)]
    prod = np.matmul(a_mat, b_mat)  # (G, blocks, M, N)
    # D's layout (_d_layout) as a view of the product: row = q*4*groups + 4*h + s of block b lands in register
    # b*per_block + q*4 + s of lane h*N + col
    per_block = m * n // WAVE
    d_view = prod.reshape(g, blocks, per_block // 4, groups, 4, n).transpose(0, 1, 2, 4, 3, 5)
    shape6 = (g, blocks, per_block // 4, 4, groups, n)
    c6 = np.broadcast_to(c_regs, (g, shape.c_regs, WAVE)).reshape(shape6)
    o6 = out.reshape(shape6)
    if shape.acc.kind == "f":
        np.add(d_view, c6.view(np.float32), out=o6.view(np.float32), dtype=np.float64, casting="unsafe")
    else:
        np.add(d_view, c6.view(np.int32), out=o6.view(np.int32), dtype=np.int64, casting="unsafe")


def _dgemm(shape: MfmaShape, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray, blgp: int) -> np.ndarray:
    """An f64 MFMA (one block): BLGP bits negate A, B, C; D items are register pairs in the H = 1 layout."""
    if shape.blocks != 1:
        raise MfmaShapeError(f"{shape.name}: multi-block f64 MFMAs are not modelled")
    g, m, n, kper = a_bits.shape[0], shape.m, shape.n, shape.kper
    groups = WAVE // m
    sign = [-1.0 if blgp >> i & 1 else 1.0 for i in range(3)]
    a = _elements(a_bits, shape.a, False).reshape(g, groups, m, kper).transpose(0, 2, 1, 3).reshape(g, m, -1)
    b = _elements(b_bits, shape.b, False).reshape(g, groups, n, kper).transpose(0, 1, 3, 2).reshape(g, -1, n)
    prod = np.matmul(a * sign[0], b * sign[1])
    gathered = np.take(prod.reshape(g, -1), _d_flat(m, n, 1, 1), axis=1)           # (G, 64, items)
    c = np.ascontiguousarray(np.broadcast_to(c_bits, (g, WAVE, 2 * gathered.shape[2])), np.uint32)
    d = gathered + sign[2] * c.view(np.float64)
    return np.ascontiguousarray(d).view(np.uint32)
