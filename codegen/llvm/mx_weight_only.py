"""LLVM IR of weight-only MX GEMMs on gfx950: a bf16/fp16 activation A times an MX weight B (fp4, fp6, fp8 with
E8M0 block scales), D = sum over 32-K blocks of (A_blk @ codes(B)_blk) * scale(B)_blk.

Lowering, and why: each lane's B elements are converted to A's 16-bit type with gfx950's
`llvm.amdgcn.cvt.scalef32.pk.{bf16,f16}.{fp4,fp8,bf8}` / `pk32.*.{fp6,bf6}` at scale 1.0 and multiplied on the
16x16x32 bf16/f16 MFMA, whose K is one scale block; the block's scale (a power of two per output column) is then
applied to the fp32 partial product by one fma into the accumulator. Unscaled codes are exact in bf16 and fp16
(every MX element format fits both), so this is exact for every E8M0 scale, while folding the scale into the
conversion would overflow or flush fp16 (2^127 and 2^-127 are outside its range) and round bf16's subnormals.
The price is 4 fmas per MFMA and a fresh MFMA accumulator per block.

Lane layouts: the 16x16x32 16-bit MFMA (CDNA 4 ISA guide, matrix-core chapter; the emulator's mfma.py): lane l
holds row (A) / column (B) l % 16 and 8 consecutive K, k = 8 (l // 16) + j; C/D lane l holds column l % 16, so
the lane's scale is the one of its output column. E8M0 -> f32 exactly: code c is bits c << 23 (c = 1..254),
2^-127 is the subnormal 0x00400000 for c = 0, and 0xFF is NaN.
"""

from __future__ import annotations

from llvmlite import ir

from .intrinsics import BF16, F16, F32, I1, I8, I32, mfma_acc_type
from .ir_builder import c32
from .mx_builder import NO_SCALE, MxGemmIRBuilder

_CVT_NAME = {"fp8_e4m3": "fp8", "fp8_e5m2": "bf8", "fp4": "fp4", "fp6_e2m3": "fp6", "fp6_e3m2": "bf6"}
ONE = 0x3F800000


class WeightOnlyIRBuilder(MxGemmIRBuilder):
    """A 16-bit A (global -> registers, 16 bytes per lane and MFMA) times an MX B dequantized in registers."""

    def _lanes(self) -> None:
        super()._lanes()
        self.side["b"]["sbases"] = [None] * self.blocks_n      # the weight-only scales are addressed per block

    def _operand(self, x: str, blk: int, sub: int, kt: ir.Value, masked: bool) -> ir.Value:
        """This lane's 8 consecutive K elements (k = kt + 32 sub + 8 g) as raw dwords."""
        b, s = self.b, self.side[x]
        dt, g = s["dt"], s["g"]
        first = b.add(kt, b.add(b.mul(g, c32(8)), c32(32 * sub)))
        nbytes = 8 * dt.bits // 8
        soffset = b.lshr(b.mul(kt, c32(dt.bits)), c32(3))
        start = b.add(b.mul(g, c32(nbytes)), c32(32 * sub * dt.bits // 8))
        words = self._load_bytes(self.rsrc[x], b.add(s["bases"][blk], start), soffset, nbytes, masked)
        if masked:
            words = self._mask_run(words, first, 8, dt.bits)
        return self._vector(words)

    def _scale(self, x: str, blk: int, sub: int, kt: ir.Value, masked: bool) -> tuple[ir.Value, int]:
        """B's scale of this lane's output column (col0 + wcol + 16 blk + l % 16) and block kt/32 + sub, as an
        f32 power of two; blocks at or past ceil(k/32) scale by 1 in the masked step."""
        if x == "a":
            return c32(NO_SCALE), 0
        b, a = self.b, self.args
        col = b.add(b.add(b.add(self.col0, self.wcol), c32(16 * blk)), b.and_(self.lane, c32(15)))
        block = b.add(b.lshr(kt, c32(5)), c32(sub))
        ld = a["ld_b_scale"]
        if self.p.b_scale == "plain":
            offset = b.add(b.mul(col, ld), block)
        else:   # jitgemm.mx.shuffle_scales: see mx_builder's docstring
            group = b.add(b.mul(b.lshr(col, c32(5)), b.lshr(ld, c32(3))), b.lshr(block, c32(3)))
            dword = b.add(b.mul(group, c32(64)), b.add(b.mul(b.and_(block, c32(3)), c32(16)), b.and_(col, c32(15))))
            byte = b.add(b.mul(b.and_(b.lshr(block, c32(2)), c32(1)), c32(2)), b.and_(b.lshr(col, c32(4)), c32(1)))
            offset = b.add(b.mul(dword, c32(4)), byte)
        offset = b.select(b.icmp_unsigned("<", col, a["n"]), offset, c32(0x80000000))
        code = b.zext(self.call(self.intr.buffer_load(I8), self.rsrc["b_scale"], offset, c32(0), c32(0)), I32)
        if masked:
            nblocks = b.lshr(b.add(a["k"], c32(31)), c32(5))
            code = b.select(b.icmp_unsigned("<", block, nblocks), code, c32(NO_SCALE))
        return code, 0

    def _f32_scale(self, code: ir.Value) -> ir.Value:
        b = self.b
        bits = b.select(b.icmp_unsigned("==", code, c32(0)), c32(0x00400000),
                        b.select(b.icmp_unsigned("==", code, c32(0xFF)), c32(0x7FC00000), b.shl(code, c32(23))))
        return b.bitcast(bits, F32)

    def _dequantize(self, words: ir.Value) -> ir.Value:
        """8 MX codes (packed dwords) -> <8 x bf16/f16> at scale 1.0."""
        b, intr, dt = self.b, self.intr, self.p.b
        out = "bf16" if self.p.a.name == "bf16" else "f16"
        elem = BF16 if out == "bf16" else F16
        fmt = _CVT_NAME[dt.name]
        one = ir.Constant(F32, 1.0)
        pairs: list[ir.Value] = []
        if dt.bits == 6:     # no two-value fp6 conversion: the 48 bits as the first 8 of 32 (the rest 0)
            six = ir.Constant(ir.VectorType(I32, 6), None)
            for w in range(6):
                six = b.insert_element(six, b.extract_element(words, c32(w)) if w < 2 else c32(0), c32(w))
            full = self.call(intr.cvt_scalef32_pk32(out, fmt), six, one)
            return b.shuffle_vector(full, full, ir.Constant(ir.VectorType(I32, 8), list(range(8))))
        for w in range(dt.bits // 4):
            word = b.extract_element(words, c32(w))
            if dt.bits == 4:
                pairs += [self.call(intr.cvt_scalef32_pk(out, fmt), word, one, c32(sel)) for sel in range(4)]
            else:
                pairs += [self.call(intr.cvt_scalef32_pk(out, fmt), word, one, ir.Constant(I1, sel))
                          for sel in range(2)]
        vec = ir.Constant(ir.VectorType(elem, 8), None)
        for i, pair in enumerate(pairs):
            for h in range(2):
                vec = b.insert_element(vec, b.extract_element(pair, c32(h)), c32(2 * i + h))
        return vec

    def _mfmas(self, step: dict, accs: list[list[ir.Value]]) -> list[list[ir.Value]]:
        b, m = self.b, self.mfma
        fn = self.intr.mfma(m)
        in_type = ir.VectorType(BF16 if self.p.a.name == "bf16" else F16, 8)
        zero = ir.Constant(mfma_acc_type(m), None)
        for s in range(self.substeps):
            a_ops = [b.bitcast(step["a"][i][s][0], in_type) for i in range(self.blocks_m)]
            b_ops = [self._dequantize(step["b"][j][s][0]) for j in range(self.blocks_n)]
            scales = [self._f32_scale(step["b"][j][s][1][0]) for j in range(self.blocks_n)]
            new = []
            for i in range(self.blocks_m):
                row = []
                for j in range(self.blocks_n):
                    part = self.call(fn, a_ops[i], b_ops[j], zero, c32(0), c32(0), c32(0))
                    acc = accs[i][j]
                    for r in range(m.acc_regs):   # acc += partial * scale of the lane's column
                        x = self.call(self.intr.fma(), b.extract_element(part, c32(r)), scales[j],
                                      b.extract_element(acc, c32(r)))
                        acc = b.insert_element(acc, x, c32(r))
                    row.append(acc)
                new.append(row)
            accs = new
        return accs

