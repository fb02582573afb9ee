"""LLVM IR of block-scaled (MX) GEMMs for gfx950: every lane loads its own MFMA operands and scales from global
memory (raw buffer loads) and calls `llvm.amdgcn.mfma.scale.f32.{16x16x128,32x32x64}.f8f6f4`; the epilogue is
the LLVM generator's (ir_builder.GemmIRBuilder).

Lane layouts (CDNA 4 ISA guide, matrix-core chapter, f8f6f4 operands; the same facts the emulator states in
jitgemm/emu/semantics_gfx950.py, proven there on Triton- and LLVM-compiled kernels):
- A (M x K step): lane l holds row l % M and 32 elements; 8-bit formats two runs of 16 consecutive K
  (k = 16g + j and K/2 + 16g + j, g = l // M), 4- and 6-bit formats one run of 32 consecutive K (k = 32g + j),
  packed from bit 0 of the first dword. B the same with column l % N (= row of the N x K stored B).
- Scales: lane l's scale operand holds the E8M0 scale of K block l // M (32 elements) of row l % M, in the byte
  opsel picks (LLVM's opsel_a/opsel_b = op_sel | op_sel_hi << 1).
- Pre-shuffled scales (jitgemm.mx.shuffle_scales, aiter's e8m0_shuffle): entry (r, c) of the plain [rows, cols]
  array is byte (c // 4 % 2) * 2 + (r // 16 % 2) of dword (((r // 32) * (cols / 8) + c // 8) * 4 + c % 4) * 16
  + r % 16. For the 16x16x128 MFMA at K block c = 4s + l // 16 of row R + l % 16 this is dword
  (R // 32 * cols/8 + s // 2) * 64 + l: one coalesced dword per lane serves two 16-row blocks (op_sel) and two
  K steps (op_sel_hi). For 32x32x64 the lane's row half (l % 32 // 16) is shifted into place first.
- Pre-shuffled weights (jitgemm.mx.shuffle_weight, aiter's 16x16 shuffle_weight): byte kb of row n of the
  [N, Kb] weight is at ((n // 16 * Kb/32 + kb // 32) * 2 + kb // 16 % 2) * 256 + n % 16 * 16 + kb % 16; a
  16-byte piece at a 16-aligned kb stays contiguous and a K step of 32*t bytes moves the address by 512*t.

Edges: rows past M / N read through the out-of-range offset (0); the loop runs over whole K steps unmasked and a
last, masked step covers K % step: its elements at or past K are 0 (byte loads, so a dword that crosses the end
of the buffer still reads its bytes inside) and the scales of blocks at or past ceil(K/32) are 1 (127), while a
real block's NaN scale (0xFF) still reaches the MFMA.
"""

from __future__ import annotations

from jitgemm.codegen.gemm_plan import GemmPlan, log2_exact
from jitgemm.codegen.kernel_abi import OOB, RSRC_WORD3
from llvmlite import ir

from .intrinsics import F32, I8, I16, I32, I64
from .ir_builder import GemmIRBuilder, c32

NO_SCALE = 127          # E8M0 2^0: a side without scales, and the blocks past K in the masked step
UNSCALED = 0            # both scale operands constant 0: LLVM selects the unscaled f8f6f4 MFMA (the plan's, when
                        # neither side has scales; llc-22 -mcpu=gfx950, tests/codegen/test_llvm_mx.py)


class MxGemmIRBuilder(GemmIRBuilder):
    """Builds one MX kernel class's LLVM module (see the module docstring) from the shared plan (`GemmPlan` with
    its `mx` part; codegen/llvm/mx_plan.py says what this lowering accepts of it)."""

    def __init__(self, plan: GemmPlan, name: str = "jitgemm_mx", data_layout: str = "") -> None:
        assert plan.mx is not None, "an MX builder needs an MX plan"
        self.plan = plan
        self.p, self.c, self.name = plan.problem, plan.config, name
        self.mfma = plan.mfma
        self.substeps = plan.config.depth_k // plan.mfma.k     # MFMA K steps per loop iteration
        self.lds_bytes = 0
        self.threads = plan.workgroup_size
        self.integer = False
        self.data_layout = data_layout
        self.blocks_m, self.blocks_n = plan.blocks_m, plan.blocks_n
        self.grid = plan.grid

    # --- resources ---------------------------------------------------------------------------------------------
    def _resources(self) -> None:
        b, a, p = self.b, self.args, self.p
        batch = b.zext(self.batch_id, I64)
        self.rsrc = {}
        for x in ("a", "b"):
            dt = getattr(p, x)
            # the batch entry starts stride_x elements further: stride * bits / 8 bytes (rows start on a byte)
            offset = b.lshr(b.mul(b.mul(batch, b.zext(a[f"stride_{x}"], I64)), ir.Constant(I64, dt.bits)),
                            ir.Constant(I64, 3))
            base = b.gep(a[x], [offset], source_etype=I8, name=f"{x}.batch")
            rows = a["m"] if x == "a" else a["n"]
            elems = b.add(b.mul(b.zext(b.sub(rows, c32(1)), I64), b.zext(a[f"ld{x}"], I64)), b.zext(a["k"], I64))
            records = b.lshr(b.add(b.mul(elems, ir.Constant(I64, dt.bits)), ir.Constant(I64, 7)),
                             ir.Constant(I64, 3))
            self.rsrc[x] = self._rsrc(base, records, x)
            layout = getattr(p, f"{x}_scale")
            if layout == "none":
                continue
            ld = a[f"ld_{x}_scale"]
            sbase = b.gep(a[f"{x}_scale"], [b.mul(batch, b.zext(a[f"stride_{x}_scale"], I64))], source_etype=I8,
                          name=f"{x}_scale.batch")
            if layout == "plain":     # [rows, ceil(k/32)] with leading dimension ld
                blocks = b.lshr(b.add(a["k"], c32(31)), c32(5))
                srec = b.add(b.mul(b.zext(b.sub(rows, c32(1)), I64), b.zext(ld, I64)), b.zext(blocks, I64))
            else:                     # rows padded to 256, ld = padded columns
                padded = b.and_(b.add(rows, c32(255)), c32(~255))
                srec = b.mul(b.zext(padded, I64), b.zext(ld, I64))
            self.rsrc[f"{x}_scale"] = self._rsrc(sbase, srec, f"{x}_scale")
        base = {}
        for x in ("c", "d") if p.c is not None else ("d",):
            eb = getattr(p, x).bytes
            elems = b.mul(batch, b.zext(a[f"stride_{x}"], I64))
            base[x] = b.gep(a[x], [b.mul(elems, ir.Constant(I64, eb))], source_etype=I8, name=f"{x}.batch")
            self.rsrc[x] = self._resource(x, base[x])
        if p.bias != "none":
            self.rsrc["bias"] = self._resource("bias", a["bias"])

    def _rsrc(self, ptr: ir.Value, records: ir.Value, name: str) -> ir.Value:
        return self.call(self.intr.make_buffer_rsrc(), ptr, ir.Constant(I16, 0), records, c32(RSRC_WORD3),
                         name=f"{name}.rsrc")

    # --- per-lane, loop-invariant addressing ------------------------------------------------------------------
    def _lanes(self) -> None:
        """Row (A) / column (B) of every MFMA block this lane feeds, its K group and base byte offsets."""
        b, a, p, m = self.b, self.args, self.p, self.mfma
        self.side = {}
        for x, size, origin, wpos, count, bound in (("a", m.m, self.row0, self.wrow, self.blocks_m, a["m"]),
                                                    ("b", m.n, self.col0, self.wcol, self.blocks_n, a["n"])):
            dt = getattr(p, x)
            shift = log2_exact(size, "mfma dim")
            g = b.lshr(self.lane, c32(shift), name=f"{x}.g")
            ld_bytes = b.lshr(b.mul(a[f"ld{x}"], c32(dt.bits)), c32(3), name=f"{x}.ldb")
            first = b.add(origin, wpos)
            rows, bases, sbases = [], [], []
            for i in range(count):
                idx = b.add(b.add(first, c32(i * size)), b.and_(self.lane, c32(size - 1)), name=f"{x}.row{i}")
                inside = b.icmp_unsigned("<", idx, bound)
                if x == "b" and p.b_preshuffle == "16x16":
                    groups = b.mul(b.lshr(idx, c32(4)), b.mul(b.lshr(ld_bytes, c32(5)), c32(512)))
                    off = b.add(groups, b.mul(b.and_(idx, c32(15)), c32(16)))
                else:
                    off = b.mul(idx, ld_bytes)
                rows.append(idx)
                bases.append(b.select(inside, off, c32(OOB), name=f"{x}.base{i}"))
                sbases.append(self._scale_base(x, idx, inside, first, i, size))
            self.side[x] = {"dt": dt, "g": g, "rows": rows, "bases": bases, "sbases": sbases, "size": size}

    def _scale_base(self, x: str, idx: ir.Value, inside: ir.Value, first: ir.Value, i: int, size: int):
        b, a, p = self.b, self.args, self.p
        layout = getattr(p, f"{x}_scale")
        if layout == "none":
            return None
        ld = a[f"ld_{x}_scale"]
        g = b.lshr(self.lane, c32(log2_exact(size, "mfma dim")))
        if layout == "plain":        # byte [row, block]: row * ld + the lane's block in the step
            return b.select(inside, b.add(b.mul(idx, ld), g), c32(OOB))
        # shuffled: dword (R // 32 * ld/8) * 64 + lane part; R = the 32-row group of this block
        group = b.lshr(b.add(first, c32(i * size)), c32(5))
        lanes = self.lane if size == 16 else b.add(b.mul(b.lshr(self.lane, c32(5)), c32(16)),
                                                   b.and_(self.lane, c32(15)))
        dword = b.add(b.mul(b.mul(group, b.lshr(ld, c32(3))), c32(64)), lanes)
        return b.mul(dword, c32(4))

    # --- one K step's operands --------------------------------------------------------------------------------
    def _runs(self, dt, sub: int) -> list[tuple[int, int, int]]:
        """(K of the run's first element relative to the step for g = 0, K advance per g, elements) of one lane's
        operand in substep `sub` (CDNA 4 f8f6f4 lane layout)."""
        mk = self.mfma.k
        if dt.bits == 8:
            return [(sub * mk, 16, 16), (sub * mk + mk // 2, 16, 16)]
        return [(sub * mk, 32, 32)]

    def _load_bytes(self, rsrc: ir.Value, voffset: ir.Value, soffset: ir.Value, nbytes: int,
                    masked: bool) -> list[ir.Value]:
        """`nbytes` (even) at voffset + soffset as i32 words (a last half word zero-extended): wide loads, or byte
        loads in the masked step (a dword crossing the end of the buffer would read 0 as a whole)."""
        b, intr = self.b, self.intr
        whole = nbytes // 4
        if not masked:
            out = []
            if whole:
                ty = I32 if whole == 1 else ir.VectorType(I32, whole)
                v = self.call(intr.buffer_load(ty), rsrc, voffset, soffset, c32(0))
                out = [v] if whole == 1 else [b.extract_element(v, c32(w)) for w in range(whole)]
            if nbytes % 4:
                half = self.call(intr.buffer_load(I16), rsrc, b.add(voffset, c32(4 * whole)), soffset, c32(0))
                out.append(b.zext(half, I32))
            return out
        out = []
        for w in range(-(-nbytes // 4)):
            word = None
            for j in range(min(4, nbytes - 4 * w)):
                off = b.add(voffset, c32(4 * w + j))
                byte = b.zext(self.call(intr.buffer_load(I8), rsrc, off, soffset, c32(0)), I32)
                byte = b.shl(byte, c32(8 * j)) if j else byte
                word = byte if word is None else b.or_(word, byte)
            out.append(word)
        return out

    def _mask_run(self, words: list[ir.Value], first: ir.Value, count: int, bits: int) -> list[ir.Value]:
        """Zero the elements of a run of `count` `bits`-bit elements starting at K index `first` that lie at or
        past K."""
        b, intr = self.b, self.intr
        valid = self.call(intr.smin(), self.call(intr.smax(), b.sub(self.args["k"], first), c32(0)), c32(count))
        nbits = b.mul(valid, c32(bits))
        out = []
        for w, word in enumerate(words):
            nb = b.sub(nbits, c32(32 * w))
            low = b.sub(b.shl(c32(1), self.call(intr.smin(), self.call(intr.smax(), nb, c32(0)), c32(31))), c32(1))
            mask = b.select(b.icmp_signed(">=", nb, c32(32)), c32(-1),
                            b.select(b.icmp_signed("<=", nb, c32(0)), c32(0), low))
            out.append(b.and_(word, mask))
        return out

    def _operand(self, x: str, blk: int, sub: int, kt: ir.Value, masked: bool) -> ir.Value:
        """This lane's <regs x i32> operand of block `blk` for substep `sub` of the step at K = kt."""
        b, p, s = self.b, self.p, self.side[x]
        dt, g = s["dt"], s["g"]
        shuffled = x == "b" and p.b_preshuffle == "16x16"
        kt_bytes = b.lshr(b.mul(kt, c32(dt.bits)), c32(3))
        soffset = b.mul(kt_bytes, c32(16)) if shuffled else kt_bytes
        piece = 8 if dt.bits == 6 else 16
        words: list[ir.Value] = []
        for k0, per_g, count in self._runs(dt, sub):
            start_bytes = k0 * dt.bits // 8
            lane_bytes = b.mul(g, c32(per_g * dt.bits // 8))
            run_words = []
            for pc in range(0, count * dt.bits // 8, piece):
                kb = b.add(lane_bytes, c32(start_bytes + pc))
                if shuffled:
                    kb = b.add(b.add(b.mul(b.lshr(kb, c32(5)), c32(512)), b.mul(b.and_(b.lshr(kb, c32(4)), c32(1)),
                                                                                 c32(256))), b.and_(kb, c32(15)))
                run_words += self._load_bytes(self.rsrc[x], b.add(s["bases"][blk], kb), soffset, piece, masked)
            if masked:   # elements at or past K are 0
                first = b.add(kt, b.add(b.mul(g, c32(per_g)), c32(k0)))
                run_words = self._mask_run(run_words, first, count, dt.bits)
            words += run_words
        return self._vector(words)

    def _vector(self, words: list[ir.Value]) -> ir.Value:
        vec = ir.Constant(ir.VectorType(I32, len(words)), None)
        for w, word in enumerate(words):
            vec = self.b.insert_element(vec, word, c32(w))
        return vec

    def _scale(self, x: str, blk: int, sub: int, kt: ir.Value, masked: bool) -> tuple[ir.Value, int]:
        """(scale register, opsel) of block `blk` in substep `sub` of the step at K = kt."""
        b, p, s = self.b, self.p, self.side[x]
        layout = getattr(p, f"{x}_scale")
        if layout == "none":
            return c32(NO_SCALE if self.mfma.scaled else UNSCALED), 0
        rsrc, base, size = self.rsrc[f"{x}_scale"], s["sbases"][blk], s["size"]
        per_sub = self.mfma.k // 32                      # scale blocks per MFMA step
        if layout == "plain":
            v = b.zext(self.call(self.intr.buffer_load(I8), rsrc, b.add(base, c32(sub * per_sub)),
                                 b.lshr(kt, c32(5)), c32(0)), I32)
            sel = 0
        else:
            if size == 16:   # dword (group * ld/8 + s // 2) * 64 + l; byte (s % 2) * 2 + blk % 2
                voff, soff = base, b.add(kt, c32(256 * (sub // 2)))
                sel = (sub % 2) * 2 + blk % 2
            else:            # c2 = 2 (s % 2) + l // 32 -> +32 dwords for odd s; byte (s // 2 % 2) * 2 + row half
                voff, soff = b.add(base, c32(128 * (sub % 2))), b.add(kt, c32(256 * (sub // 4)))
                sel = (sub // 2 % 2) * 2
            v = self.call(self.intr.buffer_load(I32), rsrc, voff, soff, c32(0))
            if size == 32:
                v = b.lshr(v, b.mul(b.and_(b.lshr(self.lane, c32(4)), c32(1)), c32(8)))
        if masked:   # blocks at or past ceil(k/32) scale by 1; a real block keeps its scale (NaN too)
            if sel:
                v = b.lshr(v, c32(8 * sel))
                sel = 0
            v = b.and_(v, c32(0xFF))
            block = b.add(b.lshr(kt, c32(5)), b.add(b.lshr(self.lane, c32(log2_exact(size, "mfma dim"))),
                                                   c32(sub * per_sub)))
            nblocks = b.lshr(b.add(self.args["k"], c32(31)), c32(5))
            v = b.select(b.icmp_unsigned("<", block, nblocks), v, c32(NO_SCALE))
        return v, sel

    def _load_step(self, kt: ir.Value, masked: bool) -> dict:
        steps = self.substeps
        return {x: [[(self._operand(x, i, s, kt, masked), self._scale(x, i, s, kt, masked)) for s in range(steps)]
                    for i in range(self.blocks_m if x == "a" else self.blocks_n)] for x in ("a", "b")}

    @staticmethod
    def _flatten(step: dict) -> list[ir.Value]:
        return [v for x in ("a", "b") for blk in step[x] for op, (sc, _sel) in blk for v in (op, sc)]

    @staticmethod
    def _rebuild(step: dict, values: list[ir.Value]) -> dict:
        it = iter(values)
        return {x: [[(next(it), (next(it), sel)) for _op, (_sc, sel) in blk] for blk in step[x]] for x in ("a", "b")}

    def _mfmas(self, step: dict, accs: list[list[ir.Value]]) -> list[list[ir.Value]]:
        m = self.mfma
        fn = self.intr.mfma_scale(m.m, m.n, m.k, m.a_regs, m.b_regs, m.acc_regs)
        cbsz, blgp = c32(m.cbsz), c32(m.blgp)       # the catalog's format codes (codegen/mfma_catalog.py)
        for s in range(self.substeps):
            accs = [[self.call(fn, step["a"][i][s][0], step["b"][j][s][0], accs[i][j], cbsz, blgp,
                               c32(step["a"][i][s][1][1]), step["a"][i][s][1][0],
                               c32(step["b"][j][s][1][1]), step["b"][j][s][1][0])
                     for j in range(self.blocks_n)] for i in range(self.blocks_m)]
        return accs

    # --- the K loop -------------------------------------------------------------------------------------------
    def _phis(self, values: list[ir.Value], block: ir.Block) -> list[ir.PhiInstr]:
        phis = [self.b.phi(v.type) for v in values]
        for phi, v in zip(phis, values, strict=True):
            phi.add_incoming(v, block)
        return phis

    def _main_loop(self) -> None:
        """Whole K steps unmasked, then one masked step for K % step. With prefetch=2 the loop is unrolled twice
        over two register sets (ping-pong): the odd step's operands load while the even step multiplies and the
        next even step's load into the registers the even step has just released, so no operand is copied
        around the loop and every load has one step of MFMAs to arrive in."""
        b, fn = self.b, self.fn
        self._lanes()
        step = self.c.depth_k
        k = self.args["k"]
        full = b.lshr(k, c32(log2_exact(step, "depth_k")), name="k.steps")
        acc_type = ir.VectorType(F32, self.mfma.acc_regs)
        zero = [ir.Constant(acc_type, None)] * (self.blocks_m * self.blocks_n)
        entry = b.block
        names = ("k.pre", "k.loop", "k.after", "k.odd", "k.join", "k.tail", "k.done")
        pre, loop, after, odd, join, tail, done = (fn.append_basic_block(n) for n in names)
        b.cbranch(b.icmp_unsigned(">", full, c32(0)), pre, join)
        incoming: list[tuple[list[ir.Value], ir.Block]] = [(zero, entry)]   # accumulators reaching k.join

        def flat(accs):
            return [x for row in accs for x in row]

        def grid(values):
            values = list(values)
            return [values[i * self.blocks_n:(i + 1) * self.blocks_n] for i in range(self.blocks_m)]

        b.position_at_end(pre)
        if self.c.prefetch == 2:
            first = self._load_step(c32(0), False)
            b.cbranch(b.icmp_unsigned(">", full, c32(1)), loop, after)
            b.position_at_end(loop)
            it = b.phi(I32, name="it")
            it.add_incoming(c32(0), pre)
            accs = self._phis(zero, pre)
            ops = self._phis(self._flatten(first), pre)
            second = self._load_step(b.mul(b.add(it, c32(1)), c32(step)), False)
            acc1 = self._mfmas(self._rebuild(first, ops), grid(accs))
            again = self._load_step(b.mul(b.add(it, c32(2)), c32(step)), False)
            acc2 = flat(self._mfmas(second, acc1))
            it2 = b.add(it, c32(2), name="it.next")
            it.add_incoming(it2, loop)
            for phi, v in zip(accs, acc2, strict=True):
                phi.add_incoming(v, loop)
            for phi, v in zip(ops, self._flatten(again), strict=True):
                phi.add_incoming(v, loop)
            b.cbranch(b.icmp_unsigned("<", b.add(it2, c32(1)), full), loop, after)
            b.position_at_end(after)       # an odd number of whole steps leaves one prefetched step
            it_a = b.phi(I32)
            it_a.add_incoming(c32(0), pre)
            it_a.add_incoming(it2, loop)
            acc_a = self._phis(zero, pre)
            ops_a = self._phis(self._flatten(first), pre)
            for phi, v in zip(acc_a, acc2, strict=True):
                phi.add_incoming(v, loop)
            for phi, v in zip(ops_a, self._flatten(again), strict=True):
                phi.add_incoming(v, loop)
            incoming.append((acc_a, after))
            b.cbranch(b.icmp_unsigned("<", it_a, full), odd, join)
            b.position_at_end(odd)
            incoming.append((flat(self._mfmas(self._rebuild(first, ops_a), grid(acc_a))), odd))
            b.branch(join)
        else:
            b.branch(loop)
            b.position_at_end(loop)
            it = b.phi(I32, name="it")
            it.add_incoming(c32(0), pre)
            accs = self._phis(zero, pre)
            out = flat(self._mfmas(self._load_step(b.mul(it, c32(step)), False), grid(accs)))
            nxt = b.add(it, c32(1), name="it.next")
            it.add_incoming(nxt, loop)
            for phi, v in zip(accs, out, strict=True):
                phi.add_incoming(v, loop)
            b.cbranch(b.icmp_unsigned("<", nxt, full), loop, after)
            b.position_at_end(after)
            b.branch(join)
            incoming.append((out, after))
            odd.parent.blocks.remove(odd)
        b.position_at_end(join)
        joined = [b.phi(acc_type) for _ in zero]
        for values, block in incoming:
            for phi, v in zip(joined, values, strict=True):
                phi.add_incoming(v, block)
        b.cbranch(b.icmp_unsigned("!=", b.and_(k, c32(step - 1)), c32(0)), tail, done)
        b.position_at_end(tail)
        tail_accs = flat(self._mfmas(self._load_step(b.mul(full, c32(step)), True), grid(joined)))
        tail_end = b.block
        b.branch(done)
        b.position_at_end(done)
        out_phis = [b.phi(acc_type) for _ in zero]
        for phi, x, y in zip(out_phis, joined, tail_accs, strict=True):
            phi.add_incoming(x, join)
            phi.add_incoming(y, tail_end)
        self.accs = grid(out_phis)
