"""Emulator semantics of the CDNA 4 (gfx950) instructions that the generic statement table cannot express:
the f8f6f4 and block-scaled MFMAs, v_bitop3 (its truth table is a modifier), the permlane swaps (two
destinations across lanes).

Lane layouts of the f8f6f4 MFMAs (CDNA 4 ISA guide, matrix-core chapter; exercised by the Triton-compiled
gfx950 GEMMs of tests/emu/test_emu_gfx950_kernels.py and the llvmlite-built kernels there):
- A (M x K, K = 128 for 16x16, 64 for 32x32): lane l holds row i = l % M and 32 elements packed from bit 0 of
  its first register (8 registers for fp8/bf8, 6 for fp6/bf6, 4 for fp4); which K they are is
  `k_of_element`. B (K x N) the same with column n = l % N. C/D as the other MFMAs (mfma.py).
- CBSZ selects A's format and BLGP B's (mx_formats.matrix_format); here they are not broadcast controls.
- Scaled forms: lane l's SCALE_SRC0 register holds the E8M0 scale of K block l // M (32 elements) of row
  l % M of A, in the byte op_sel[0] (low bit) and op_sel_hi[0] (high bit) select; B likewise with
  op_sel[1]/op_sel_hi[1] and SCALE_SRC1. An E8M0 byte 0 is 2^-127 and 0xFF NaN (mx_formats.e8m0_values).
  A scale that is an inline constant (or an SGPR) is its bits [30:23], the f32 exponent, whatever op_sel says
  (CDNA 4 ISA guide 7.2.1: "Inline constants (floats, using only the exponent portion)"; LLVM
  VOP3PInstructions.td, MAIInst scale operands: "For all Inline/SGPR constants, SP HW use bits [30:23] as the
  scale", why LLVM 22 accepts only VGPRs there).
- The load-scale half: the 128-bit scaled MFMA is v_mfma_ld_scale_b32 followed by the f8f6f4 MFMA with ABID[0]
  set (CDNA 4 ISA guide 7.2.1, 7.1.5 "Scale": "ABID[0] = 1'b0 : forces all scales into the ALU as 1.0f"; "The
  scale value is used just for one instruction and does not carry forward into non-scale MFMA ops"). So a
  v_mfma_ld_scale_b32 that is not fused with the MFMA after it changes nothing a later instruction can see
  (`mfma_ld_scale`), and the unscaled MFMA after it runs with scale 1.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..mfma import WAVE, _d_layout
from ..mx_formats import decode_elements, e8m0_values, element_codes, matrix_format, pack_elements, scale_byte
from ..registry import register, register_pattern

if TYPE_CHECKING:
    from ..ops import Builder, RunFn
    from ..program import Decoded

_SHAPES = {"16X16X128": (16, 128), "32X32X64": (32, 64)}


class NoGfx950Semantics(Exception):
    pass


def k_of_element(bits: int, m: int, k: int) -> np.ndarray:
    """K index of element j (0..31) of lane l of an f8f6f4 A (or B) operand: (64, 32) int array.

    8-bit formats: the lane's first 16 elements are k = g*16 + j, the next 16 are k = K/2 + g*16 + (j-16),
    g = l // M (two halves of K, 16 consecutive per lane group in each); 4- and 6-bit: 32 consecutive,
    k = g*32 + j (CDNA 4 ISA guide 7.1.5.1 "Dense Matrix Layouts: 8-bit and Smaller": the FP8 tables put
    k = 0-15 in v0-v3 and k = 64-79 in v4-v7 of lanes 0-15; the FP4 tables k = 0-31 in v0-v3; the FP6 tables
    k = 0-15 in v0-v2 and k = 16-31 in v3-v5, i.e. 32 consecutive).
    Which K a lane holds is invisible to an unscaled GEMM (A and B are permuted alike) but decides which
    elements a block scale multiplies; Triton's gfx950 tl.dot_scaled kernels (mxfp8, mxfp4, mixed) fix it for
    8 and 4 bits, and LLVM 22's mfma.scale intrinsics with fp6/bf6 operands and per-block random scales
    (tests/emu/test_emu_gfx950_rules.py) check the guide's 6-bit order (Triton 3.9's dot_scaled rejects e2m3/e3m2,
    "NYI", so no second compiler produces them)."""
    lane = np.arange(WAVE)[:, None]
    j = np.arange(32)[None, :]
    g = lane // m
    if bits == 8:
        return np.where(j < 16, g * 16 + j, k // 2 + g * 16 + (j - 16))
    return np.broadcast_to(g * 32 + j, (WAVE, 32))


def f8f6f4_mfma(a_words: np.ndarray, b_words: np.ndarray, c: np.ndarray, m: int, k: int, cbsz: int, blgp: int,
                a_scale: np.ndarray | None = None, b_scale: np.ndarray | None = None) -> np.ndarray:
    """D (G, 64, regs) float32 of an f8f6f4 MFMA from A/B registers (G, 64, n) uint32 and C (G, 64, regs) f32.

    `a_scale`/`b_scale`: (G, 64) float64, lane l's value scaling the 32-element K block l // M of row
    (column) l % M (None: unscaled). Reusable by issue 15's MX GEMM reference: float64 over exactly decoded
    elements, one rounding to f32 at the end."""
    g = a_words.shape[0]
    lane = np.arange(WAVE)
    mats = []
    for words, code, scale in ((a_words, cbsz, a_scale), (b_words, blgp, b_scale)):
        fmt = matrix_format(code)
        vals = decode_elements(words, fmt, 32)                       # (G, 64, 32)
        full = np.zeros((g, m, k))
        full[:, (lane % m)[:, None], k_of_element(fmt.bits, m, k)] = vals
        if scale is not None:  # lane (block * M + row) holds the scale of that row's K block
            per_block = scale.reshape(g, k // 32, m).transpose(0, 2, 1)    # (G, M, K/32)
            full = full * np.repeat(per_block, 32, axis=2)
        mats.append(full)
    with np.errstate(invalid="ignore", over="ignore"):
        prod = np.matmul(mats[0], mats[1].transpose(0, 2, 1))        # (G, M, N): A rows x B columns
        _block, row, col = _d_layout(m, m, 1)
        out = prod[:, row, col] + c.astype(np.float64)
        return out.astype(np.float32)  # beyond the f32 range: +-inf, as the hardware's f32 accumulator


def mfma_f8f6f4(b: Builder, d: Decoded) -> RunFn:
    from ..errors import NoSemantics

    shape = next((v for key, v in _SHAPES.items() if f"_{key}_" in d.name), None)
    pairs = d.operand_pairs()
    scaled = "SCALE" in d.name
    if shape is None or len(pairs) != (6 if scaled else 4):
        raise NoSemantics(f"{d.name}: not an f8f6f4 MFMA shape the emulator knows ({', '.join(_SHAPES)})")
    m, k = shape
    (od, opd), (oa, opa), (ob, opb), (oc, opc) = pairs[:4]
    cbsz, blgp = (int(d.modifier(x, 0) or 0) for x in ("cbsz", "blgp"))
    try:
        a_regs, b_regs = matrix_format(cbsz).registers(32), matrix_format(blgp).registers(32)
    except ValueError as exc:
        raise NoSemantics(str(exc)) from None
    c_regs = od.size // 32
    dst = b.ops.dst(opd, od.size)
    a_src, b_src, c_src = b.ops.src(opa, 32 * a_regs), b.ops.src(opb, 32 * b_regs), b.ops.src(opc, oc.size)
    sel = (0, 0)
    scale_srcs = ()
    if not scaled and int(d.modifier("abid", 0) or 0) & 1:
        raise NoSemantics(f"unsupported: {d.name} with ABID[0] = 1 takes its scales from a load-scale half "
                          "(v_mfma_ld_scale_b32 fused before it), and this one has none (CDNA 4 ISA guide 7.1.5)")
    if scaled:
        op_sel = tuple(d.modifier("op_sel") or (0, 0, 0)) + (0, 0)
        op_sel_hi = tuple(d.modifier("op_sel_hi") or (0, 0, 0)) + (0, 0)
        sel = (int(op_sel[0]) | int(op_sel_hi[0]) << 1, int(op_sel[1]) | int(op_sel_hi[1]) << 1)
        scale_srcs = (b.ops.src(pairs[4][1], 32), b.ops.src(pairs[5][1], 32))

    def regs(src, st, w, count):
        bits = np.asarray(src.read(st, w))
        if src.uniform:
            bits = np.broadcast_to(bits.astype(np.uint32).reshape(-1, 1, 1), (bits.shape[0], 64, count))
        return np.asarray(bits, np.uint32).reshape(bits.shape[0], 64, count)

    def lane_scale(src, st, w, which):
        bits = np.asarray(src.read(st, w)).astype(np.uint32)
        if src.uniform:   # inline constant / SGPR: the exponent field, not an op_sel byte (module docstring)
            bits = np.broadcast_to(bits.reshape(-1, 1), (bits.shape[0], 64))
            return _exponent_scale(bits)
        return e8m0_values(scale_byte(bits, sel[which]))

    def run(ctx, w):
        st = ctx.st
        c = regs(c_src, st, w, c_regs).view(np.float32)
        sa = lane_scale(scale_srcs[0], st, w, 0) if scaled else None
        sb = lane_scale(scale_srcs[1], st, w, 1) if scaled else None
        out = f8f6f4_mfma(regs(a_src, st, w, a_regs), regs(b_src, st, w, b_regs), c, m, k, cbsz, blgp, sa, sb)
        dst.write(st, w, out.view(np.uint32))
    return run


def bitop3(a, b, c, table: int):
    """Each result bit is bit (a<<2 | b<<1 | c) of the 8-bit truth table (LLVM AMDGPU, V_BITOP3: the
    instruction selector's encoding of f(a, b, c) as a truth table, a the most significant index bit)."""
    a, b, c = (np.asarray(x, np.uint32) for x in (a, b, c))
    out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
    for i in range(8):
        if table >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out


def v_bitop3(b: Builder, d: Decoded) -> RunFn:
    from ..errors import NoSemantics

    pairs = d.operand_pairs()
    if len(pairs) != 4:
        raise NoSemantics("v_bitop3 without its four operands")
    table = d.modifier("bitop3", 0)
    table = int(getattr(table, "value", table) or 0)
    width = 16 if d.name.endswith("_B16") else 32
    op_sel = tuple(d.modifier("op_sel") or ()) + (0, 0, 0, 0)
    dst = b.ops.dst(pairs[0][1], 32)
    srcs = [b.ops.src(p[1], 32) for p in pairs[1:]]
    mask = np.uint32((1 << width) - 1)

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        vals = []
        for i, s in enumerate(srcs):
            v = np.asarray(s.read(st, w)).astype(np.uint32)
            if s.uniform:
                v = np.broadcast_to(v.reshape(-1, 1), lanes.shape)
            if width == 16 and op_sel[i]:
                v = v >> np.uint32(16)
            vals.append(v)
        res = bitop3(*vals, table) & mask
        if width == 16:
            old = np.asarray(dst.read_old(st, w)).astype(np.uint32)
            res = (old & np.uint32(0x0000FFFF)) | (res << np.uint32(16)) if op_sel[3] else \
                (old & np.uint32(0xFFFF0000)) | res
        dst.write(st, w, res, lanes)
    return run


def permlane_swap(b: Builder, d: Decoded) -> RunFn:
    """v_permlane32_swap: VDST lanes 32-63 and SRC0 lanes 0-31 trade places; v_permlane16_swap: the odd
    16-lane rows of VDST trade with the even rows of SRC0 (LLVM IntrinsicsAMDGPU.td, llvm.amdgcn.permlane32.swap:
    "rows 2 and 3 of the first operand are swapped with rows 0 and 1 of the second operand", permlane16.swap: "odd
    rows of the first operand are swapped with even rows of the second operand"; tests/emu/test_emu_gfx950_llvm.py)."""
    from ..errors import NoSemantics

    pairs = d.operand_pairs()
    if len(pairs) != 2:
        raise NoSemantics("permlane swap without its two operands")
    a_dst, b_dst = b.ops.dst(pairs[0][1], 32), b.ops.dst(pairs[1][1], 32)
    lane = np.arange(WAVE)
    if "PERMLANE32" in d.name:
        a_lanes, b_lanes = lane[32:], lane[:32]
    else:
        row = lane // 16
        a_lanes, b_lanes = lane[row % 2 == 1], lane[row % 2 == 0]

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        va = np.asarray(a_dst.read_old(st, w)).astype(np.uint32).copy()
        vb = np.asarray(b_dst.read_old(st, w)).astype(np.uint32).copy()
        na, nb = va.copy(), vb.copy()
        na[:, a_lanes] = vb[:, b_lanes]
        nb[:, b_lanes] = va[:, a_lanes]
        a_dst.write(st, w, na, lanes)
        b_dst.write(st, w, nb, lanes)
    return run


def transpose_bits(name: str) -> int | None:
    """Element width of a transposing LDS read (DS_READ_B64_TR_B16 -> 16, DS_READ_B96_TR_B6 -> 6), else None."""
    m = re.search(r"_TR_B(\d+)$", name)
    return int(m.group(1)) if m and name.startswith("DS_READ_") else None


def lds_transpose(words: np.ndarray, bits: int) -> np.ndarray:
    """The registers a transposing LDS read returns, from what each lane's plain read would return
    (words (G, 64, regs) uint32). Within each 16-lane row the 16 lanes' data form an E x 16 tile of
    `bits`-bit elements (E elements per lane, 16/E lanes per tile row) and lane i receives column i
    (CDNA 4 ISA guide, "LDS transpose loads"; LLVM llvm.amdgcn.ds.read.tr{4,6,8,16}.b{64,96}; exercised by
    Triton's gfx950 bf16 / fp8 GEMMs, tests/emu/test_emu_gfx950_kernels.py):
    out[lane i][j] = in[lane 16*(i // 16) + j * (16 // E) + (i % 16) // E][(i % 16) % E]."""
    g, lanes, regs = words.shape
    count = regs * 32 // bits
    codes = element_codes(words, bits, count)                        # (G, 64, E)
    i = np.arange(WAVE)[:, None]
    j = np.arange(count)[None, :]
    row, col = i // 16, i % 16
    src_lane = 16 * row + j * (16 // count) + col // count
    src_elem = np.broadcast_to(col % count, src_lane.shape)
    moved = codes[:, src_lane, src_elem]
    return pack_elements(moved, bits, regs)


_UP = re.compile(r"^V_CVT_SCALEF32_(?P<pk>PK32_|PK_)?(?P<out>F32|F16|BF16)_(?P<fmt>FP4|FP8|BF8|FP6|BF6)$")
_ELEMENT = {"FP4": 4, "FP8": 0, "BF8": 1, "FP6": 2, "BF6": 3}    # as CBSZ codes (mx_formats.matrix_format)


def cvt_scale_up(b: Builder, d: Decoded) -> RunFn:
    """v_cvt_scalef32_[pk_|pk32_]<f32|f16|bf16>_<fp4|fp8|bf8|fp6|bf6>: narrow values times the scale the
    second source's exponent gives (`_exponent_scale`). pk_*_fp4 take the byte op_sel[0] | op_sel[1] << 1
    selects (two values, low nibble first), pk_*_fp8/bf8 the 16-bit word op_sel[0] selects, the scalar forms the
    byte op_sel[0] | op_sel[1] << 1, pk32 all 32 values of 6 registers. f16/bf16 results are rounded to nearest
    even and packed low value first (LLVM llvm.amdgcn.cvt.scalef32.*; the bf16/fp4 form is Triton's gfx950
    mxfp4 x bf16 upcast, tests/emu/test_emu_gfx950_kernels.py)."""
    import ml_dtypes

    from ..errors import NoSemantics

    m = _UP.match(d.name)
    pairs = d.operand_pairs()
    if m is None or len(pairs) != 3:
        raise NoSemantics(f"{d.name}: not a scaled up-conversion the emulator knows")
    pk, out_t, fmt_name = m.group("pk"), m.group("out"), m.group("fmt")
    fmt = matrix_format(_ELEMENT[fmt_name])
    count = 32 if pk == "PK32_" else 2 if pk else 1
    op_sel = tuple(d.modifier("op_sel") or ()) + (0, 0, 0, 0)
    if count == 32:
        shift = 0
    elif fmt.bits == 8 and count == 2:
        shift = 16 * int(op_sel[0])
    else:
        shift = 8 * (int(op_sel[0]) | int(op_sel[1]) << 1)
    in_bits = count * fmt.bits
    out_dtype = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}[out_t]
    out_bits = count * np.dtype(out_dtype).itemsize * 8
    (od, opd), (oa, opa), (_os, ops_) = pairs
    dst = b.ops.dst(opd, max(32, out_bits))
    src = b.ops.src(opa, max(32, 32 * -(-in_bits // 32)))
    scale_src = b.ops.src(ops_, 32)
    in_regs = max(1, -(-in_bits // 32))
    out_regs = max(1, out_bits // 32)
    high_half = count == 1 and out_t != "F32" and bool(op_sel[3])

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        bits = np.asarray(src.read(st, w)).astype(np.uint32)
        if src.uniform:
            bits = np.broadcast_to(bits.reshape(-1, 1), lanes.shape)
        bits = bits.reshape(lanes.shape + (in_regs,))
        if shift:
            bits = bits >> np.uint32(shift)
        scale = np.asarray(scale_src.read(st, w)).astype(np.uint32)
        if scale_src.uniform:
            scale = np.broadcast_to(scale.reshape(-1, 1), lanes.shape)
        scale = _exponent_scale(scale)
        with np.errstate(invalid="ignore", over="ignore"):
            vals = (decode_elements(bits, fmt, count) * scale[..., None]).astype(np.float32).astype(out_dtype)
        raw = np.ascontiguousarray(vals).view(np.uint16 if out_t != "F32" else np.uint32).astype(np.uint32)
        if out_t != "F32":
            if count == 1:
                old = np.asarray(dst.read_old(st, w)).astype(np.uint32)
                word = raw[..., 0]
                res = (old & np.uint32(0xFFFF)) | (word << np.uint32(16)) if high_half else \
                    (old & np.uint32(0xFFFF0000)) | word
                dst.write(st, w, res, lanes)
                return
            raw = raw[..., 0::2] | (raw[..., 1::2] << np.uint32(16))
        out = raw.reshape(lanes.shape + (out_regs,))
        dst.write(st, w, out if out_regs > 1 else out[..., 0], lanes)
    return run


_DOWN = re.compile(r"^V_CVT_SCALEF32_PK_(?P<fmt>FP4|FP8|BF8)_(?P<src>F32|F16|BF16)$")


def _exponent_scale(bits: np.ndarray) -> np.ndarray:
    """The scale an f32 scale operand means: 2^(its exponent field - 127), NaN for an all-ones exponent (AMD's
    cdna4 descriptions: "scale ... using the exponent provided by the ... input"; Triton and CK pass E8M0 << 23,
    so E8M0 0 = f32 0.0 -> 2^-127, as for the MFMA scales)."""
    return e8m0_values(((np.asarray(bits, np.uint32) >> np.uint32(23)) & np.uint32(0xFF)).astype(np.uint8))


def cvt_scale_down(b: Builder, d: Decoded) -> RunFn:
    """v_cvt_scalef32_pk_{fp4,fp8,bf8}_{f32,f16,bf16}: two values divided by the scale, rounded to nearest even
    and saturated to the format's largest finite value (CK's non-gfx950 path for the same builtin:
    sat_convert_to_type<f4_t>(x / scale)), written into the byte (fp4: op_sel[2] | op_sel[3] << 1) or 16-bit
    word (fp8/bf8: the destination op_sel bit) of the old destination (AMD cdna4 descriptions, "store the result
    into 8 bits of a vector register using OPSEL[3:2]")."""
    import ml_dtypes

    from ..errors import NoSemantics

    m = _DOWN.match(d.name)
    pairs = d.operand_pairs()
    src_t = m.group("src") if m else ""
    if m is None or len(pairs) != (4 if src_t == "F32" else 3):
        raise NoSemantics(f"{d.name}: not a scaled down-conversion the emulator knows")
    fmt = matrix_format(_ELEMENT[m.group("fmt")])
    op_sel = tuple(int(x) for x in (d.modifier("op_sel") or ()))
    if fmt.bits == 4:
        padded = op_sel + (0, 0, 0, 0)
        shift, width = 8 * (padded[2] | padded[3] << 1), 8
    else:
        shift, width = 16 * (op_sel[-1] if op_sel else 0), 16
    dst = b.ops.dst(pairs[0][1], 32)
    srcs = [b.ops.src(p[1], 32) for p in pairs[1:]]
    half = {"F16": np.float16, "BF16": ml_dtypes.bfloat16}.get(src_t)
    limit = float(ml_dtypes.finfo(fmt.dtype).max)

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        vals = []
        for sv in srcs:
            v = np.asarray(sv.read(st, w)).astype(np.uint32)
            vals.append(np.broadcast_to(v.reshape(-1, 1), lanes.shape) if sv.uniform else v)
        if half is None:
            x = np.stack([vals[0].view(np.float32), vals[1].view(np.float32)], axis=-1).astype(np.float64)
        else:
            pair = np.stack([vals[0] & np.uint32(0xFFFF), vals[0] >> np.uint32(16)], axis=-1).astype(np.uint16)
            x = pair.view(half).astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            q = x / _exponent_scale(vals[-1])[..., None]
            q = np.where(np.isnan(q), q, np.clip(q, -limit, limit)).astype(np.float32).astype(fmt.dtype)
        codes = q.view(np.uint8).astype(np.uint32) & np.uint32((1 << fmt.bits) - 1)
        packed = codes[..., 0] | (codes[..., 1] << np.uint32(fmt.bits))
        old = np.asarray(dst.read_old(st, w)).astype(np.uint32)
        keep = ~np.uint32(((1 << width) - 1) << shift)
        dst.write(st, w, (old & keep) | (packed << np.uint32(shift)), lanes)
    return run


def ashr_pk(b: Builder, d: Decoded) -> RunFn:
    """v_ashr_pk_{i8,u8}_i32: SRC0 and SRC1 shifted right arithmetically by SRC2, each saturated to [-128, 127]
    (u8: [0, 255]) and packed as bytes 0 (SRC0) and 1 (SRC1) of a 16-bit result (AMD's cdna4 XML description: "Given
    two signed 32-bit integers and a shift count, calculate the arithmetic shift right ... saturate the two results
    in the signed 8-bit interval [-128, 127], pack the bytes"). The shift count is SRC2[4:0], the rule of every
    32-bit VALU shift; the result goes to the half op_sel[3] picks and the other half is kept (llvm-mc-22 writes
    the destination as a 32-bit VGPR with op_sel:[0,0,0,1] for the high half), as for v_bitop3_b16."""
    from ..errors import NoSemantics

    pairs = d.operand_pairs()
    if len(pairs) != 4:
        raise NoSemantics(f"{d.name} without its four operands")
    lo, hi = (0, 255) if "_U8_" in d.name else (-128, 127)
    op_sel = tuple(int(x) for x in (d.modifier("op_sel") or ())) + (0, 0, 0, 0)
    shift = 16 if op_sel[3] else 0
    dst = b.ops.dst(pairs[0][1], 32)
    srcs = [b.ops.src(p[1], 32) for p in pairs[1:]]

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        vals = []
        for s in srcs:
            v = np.asarray(s.read(st, w)).astype(np.uint32)
            vals.append(np.broadcast_to(v.reshape(-1, 1), lanes.shape) if s.uniform else v)
        count = (vals[2] & np.uint32(31)).astype(np.int64)
        a, c = (np.clip(v.view(np.int32).astype(np.int64) >> count, lo, hi) & 0xFF for v in vals[:2])
        packed = (a | c << 8).astype(np.uint32)
        old = np.asarray(dst.read_old(st, w)).astype(np.uint32)
        keep = ~np.uint32(0xFFFF << shift)
        dst.write(st, w, (old & keep) | (packed << np.uint32(shift)), lanes)
    return run


def cvt_sr_bf16(b: Builder, d: Decoded) -> RunFn:
    """v_cvt_sr_bf16_f32: f32 to bf16 with stochastic rounding. The CDNA 4 ISA guide ("Convert instructions":
    "Stochastic Round - one source has the number to convert and the other has a random number used in rounding
    - these ops add a random value from the specified VGPR and then truncate to the smaller result data type",
    using only the random bits below the result's precision): the 16 low bits of SRC1 are added to the f32 bit
    pattern and the high 16 bits kept, so x rounds away from zero with probability (its dropped bits) / 2^16 and
    overflow goes to infinity; a NaN stays a (quiet) NaN. The result goes to the half the destination op_sel bit
    picks, the other half is kept (AMD's cdna4 description: "using OPSEL to determine which word of the
    destination to overwrite")."""
    from ..errors import NoSemantics

    pairs = d.operand_pairs()
    if len(pairs) != 3:
        raise NoSemantics(f"{d.name} without its three operands")
    op_sel = tuple(int(x) for x in (d.modifier("op_sel") or ()))
    shift = 16 * (op_sel[-1] if op_sel else 0)
    dst = b.ops.dst(pairs[0][1], 32)
    srcs = [b.ops.src(p[1], 32) for p in pairs[1:]]

    def run(ctx, w):
        st = ctx.st
        lanes = st.exec_lanes(w)
        x, rnd = (np.broadcast_to(np.asarray(s.read(st, w)).astype(np.uint32).reshape(-1, 1), lanes.shape)
                  if s.uniform else np.asarray(s.read(st, w)).astype(np.uint32) for s in srcs)
        nan = (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
        rounded = (x.astype(np.uint64) + (rnd & np.uint32(0xFFFF))) >> np.uint64(16)
        res = np.where(nan, (x >> np.uint32(16)) | np.uint32(0x40), rounded.astype(np.uint32)) & np.uint32(0xFFFF)
        old = np.asarray(dst.read_old(st, w)).astype(np.uint32)
        keep = ~np.uint32(0xFFFF << shift)
        dst.write(st, w, (old & keep) | (res << np.uint32(shift)), lanes)
    return run


def mfma_ld_scale(b: Builder, d: Decoded) -> RunFn:
    """v_mfma_ld_scale_b32 not fused with the MFMA after it (the decoder fuses it with an f8f6f4 MFMA that has
    ABID[0] set into the 128-bit scaled MFMA, as LLVM does): it writes no register, and the scales it loads do
    not carry forward into a non-scale MFMA (CDNA 4 ISA guide 7.2.1; 7.1.5: ABID[0] = 0 runs the MFMA with
    scale 1.0), so nothing later can observe it. Its two scale sources are still bound, so a malformed one is
    refused when the program is built."""
    from ..errors import NoSemantics

    pairs = d.operand_pairs()
    if len(pairs) != 2:
        raise NoSemantics(f"{d.name} without its two scale sources")
    for _o, op in pairs:
        b.ops.src(op, 32)

    def run(ctx, w):
        return None
    return run


# Stochastic-rounding conversions and the PRNG whose rounding rule no authority here states: refused with the
# reason rather than run by a guess (the rule v_cvt_sr_bf16_f32 uses is stated for bf16 only: cvt_sr_bf16).
_NO_RULE = {
    "V_PRNG_B32": "AMD's CDNA 4 description says only 'a pseudorandom number using an LFSR seeded with the vector "
                  "input' (no polynomial or taps), and LLVM 22 does not fold llvm.amdgcn.prng.b32",
    "V_CVT_SR_F16_F32": "which random bits are added for an f16 result (13 dropped mantissa bits for normals, more "
                        "for f16 denormals) and the overflow rule are not stated by the CDNA 4 ISA guide (7.3: 'add a "
                        "random value ... then truncate') or AMD's XML, and LLVM 22 does not fold "
                        "llvm.amdgcn.cvt.sr.f16.f32",
    "V_CVT_SR_FP8_F32": "the guide (7.3) says the random bits are added 'with attention to not use msbs of src1 "
                        "mantissa based on opcode and dependent on the F8 data type' without saying which, nor how "
                        "FP16_OVFL saturation meets the carry",
    "V_CVT_SR_BF8_F32": "as v_cvt_sr_fp8_f32: which src1 bits the stochastic add uses for bf8 is not stated "
                        "(guide 7.3)",
}
_SCALED_SR = re.compile(r"^V_CVT_SCALEF32_SR_")


def refuse_without_rule(b: Builder, d: Decoded) -> RunFn:
    """Raise the emulator's 'unsupported: <why>' for an instruction whose rule no authority states (the engine
    names the instruction and PC when a wave reaches it; `jitgemm emulate --check` lists it)."""
    from ..errors import NoSemantics

    why = _NO_RULE.get(d.name) or (
        "the scaled stochastic-rounding conversions add src1's random bits before the scale and rounding, and for "
        "the multi-pass fp4/fp6 forms 'an updated random number is generated every pass ... internally via "
        "V_PRNG_B32' (CDNA 4 ISA guide 7.3), whose LFSR is not stated")
    raise NoSemantics(f"unsupported: {why}")


# --- registration (jitgemm/emu/registry.py): instruction names -> builders -------------------------------------

register(("V_MFMA_F32_16X16X128_F8F6F4", "V_MFMA_F32_32X32X64_F8F6F4", "V_MFMA_SCALE_F32_16X16X128_F8F6F4",
          "V_MFMA_SCALE_F32_32X32X64_F8F6F4"), mfma_f8f6f4)
register(("V_BITOP3_B32", "V_BITOP3_B16"), v_bitop3)
register(("V_PERMLANE16_SWAP_B32", "V_PERMLANE32_SWAP_B32"), permlane_swap)
register(("V_ASHR_PK_I8_I32", "V_ASHR_PK_U8_I32"), ashr_pk)
register("V_CVT_SR_BF16_F32", cvt_sr_bf16)
register_pattern(_UP, cvt_scale_up)
register_pattern(_DOWN, cvt_scale_down)
register("V_MFMA_LD_SCALE_B32", mfma_ld_scale)
register(sorted(_NO_RULE), refuse_without_rule)
register_pattern(_SCALED_SR, refuse_without_rule)
