"""The split-K reduction kernel (LLVM IR through llvmlite): D = epilogue(sum over z of W[z]) for the workspace W
of split_k x M x N raw partial sums that a partial kernel (codegen/gemm_split.py) wrote.

One work-item per element of D: x over ceil(N / 256) workgroups of 256 work-items, y over the M rows, z over the
batch entries (entry e's split_k slices are workspace slices e * split_k ..; C and D move by stride_c / stride_d,
scales by their batch strides; bias is shared). The sum runs
z = 0, 1, ..., split_k - 1 in that order (deterministic: the same bits every launch, whatever order the partial
kernel's workgroups ran in), then the GEMM epilogue of the LLVM generator (codegen/llvm/ir_builder.py
`_epilogue_value` / `_store`, alpha, beta * C, bias, activation, the output cast) runs once per element.

Arguments: the GEMM kernel ABI (codegen/kernel_abi.KERNARGS) of the problem, read as: `a` = the workspace, `batch`
slot = split_k, `lda` = the workspace's row length (N), `stride_a` = its slice stride (M * N elements). A tensor or
rowcol scaled problem (fp32 scales) takes the scale arguments too: the partials are unscaled sums (int32 for int8,
summed exactly), scaled once here as the unsplit kernel's epilogue does (codegen/llvm/scale_builder.py).

Stream-K (codegen/gemm_streamk.py, `tiles` = the partial kernel's tile_m x tile_n): element (row, col) lies in tile
t = (row // tile_m) * ceil(N / tile_n) + col // tile_n, whose segments wrote slots 0 .. count(t) - 1, count(t) =
((t + 1) * iters - 1) // share - t * iters // share + 1; `ldb` carries share and `stride_b` iters (B is unused).
"""

from __future__ import annotations

from types import SimpleNamespace

from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.kernel_abi import OOB, RSRC_WORD3, kernargs
from llvmlite import ir

from .intrinsics import F32, I8, I16, I32, I64, PTR_GLOBAL, Intrinsics
from .ir_builder import GemmIRBuilder, _KernelAttributes, amdgpu_module, c32

THREADS = 256


class SplitReduceBuilder(GemmIRBuilder):
    """Reuses the GEMM builder's epilogue and stores; no tiles, no LDS, no MFMAs."""

    def __init__(self, problem: GemmProblem, name: str, data_layout: str = "",  # noqa: D107
                 tiles: tuple[int, int] | None = None) -> None:
        self.p, self.name, self.data_layout, self.tiles = problem, name, data_layout, tiles
        self.integer = not problem.epilogue_float
        # int8 partials sum exactly, also under tensor/rowcol scales; block partials are scaled fp32 sums
        self.sum_int = problem.acc.kind == "int" and problem.scale_mode != "block"
        self.mfma = SimpleNamespace(acc=problem.acc)     # what the scale mixin asks of the accumulator

    def build(self) -> ir.Module:
        module = amdgpu_module(self.name, self.data_layout)
        self.intr = Intrinsics(module)
        layout = kernargs(self.p)
        types = [PTR_GLOBAL if kind == "ptr" else I32 if kind == "i32" or self.integer else F32
                 for _n, _o, _s, kind in layout]
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), types), self.name)
        fn.calling_convention = "amdgpu_kernel"
        fn.attributes = _KernelAttributes({"amdgpu-flat-work-group-size": f"1,{THREADS}"})
        self.args = {}
        for arg, (arg_name, *_rest) in zip(fn.args, layout, strict=True):
            arg.name = arg_name
            self.args[arg_name] = arg
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._reduce()
        self.b.ret_void()
        return module

    def _reduce(self) -> None:
        b, a, p, intr = self.b, self.args, self.p, self.intr
        tid = self.call(intr.workitem_id("x"), name="tid")
        col = b.add(b.mul(self.call(intr.workgroup_id("x")), c32(THREADS)), tid, name="col")
        row = self.call(intr.workgroup_id("y"), name="row")
        inside = b.and_(b.icmp_unsigned("<", col, a["n"]), b.icmp_unsigned("<", row, a["m"]), name="inside")
        split, slice_ = a["batch"], a["stride_a"]
        entry64 = b.zext(self.call(intr.workgroup_id("z"), name="entry"), I64)     # the batch entry
        # this entry's split_k slices start at entry * split_k * slice (elements), in 64 bits
        ws = b.gep(a["a"], [b.mul(b.mul(entry64, b.zext(b.mul(split, slice_), I64)), ir.Constant(I64, 4))],
                   source_etype=I8, name="w.entry")
        records = b.mul(b.zext(b.mul(split, slice_), I64), ir.Constant(I64, 4))
        self.rsrc = {"w": self.call(intr.make_buffer_rsrc(), ws, ir.Constant(I16, 0), records, c32(RSRC_WORD3),
                                    name="w.rsrc")}
        for x in ("c", "d") if p.c is not None else ("d",):
            offset = b.mul(b.mul(entry64, b.zext(a[f"stride_{x}"], I64)), ir.Constant(I64, getattr(p, x).bytes))
            self.rsrc[x] = self._resource(x, b.gep(a[x], [offset], source_etype=I8, name=f"{x}.entry"))
        if p.bias != "none":
            self.rsrc["bias"] = self._resource("bias", a["bias"])
        first = b.add(b.mul(row, a["lda"]), col, name="w.elem")
        if self.tiles:                             # stream-K: this element's tile's slot count
            tm, tn = self.tiles
            tiles_n = b.udiv(b.add(a["n"], c32(tn - 1)), c32(tn))
            t = b.add(b.mul(b.udiv(row, c32(tm)), tiles_n), b.udiv(col, c32(tn)), name="tile")
            share, iters = a["ldb"], a["stride_b"]
            start = b.mul(t, iters)
            last = b.udiv(b.sub(b.add(start, iters), c32(1)), share)
            count = b.add(b.sub(last, b.udiv(start, share)), c32(1))
            split = b.select(inside, count, c32(1), name="slots")
        zero = c32(0) if self.sum_int else ir.Constant(F32, 0.0)
        entry = b.block
        loop = self.fn.append_basic_block("sum")
        done = self.fn.append_basic_block("summed")
        b.branch(loop)
        b.position_at_end(loop)
        z = b.phi(I32, name="z")
        acc = b.phi(zero.type, name="acc")
        z.add_incoming(c32(0), entry)
        acc.add_incoming(zero, entry)
        elem = b.add(b.mul(z, slice_), first)
        offset = b.select(inside, b.shl(elem, c32(2)), c32(OOB))
        raw = self.call(intr.buffer_load(I32), self.rsrc["w"], offset, c32(0), c32(0))
        total = b.add(acc, raw) if self.sum_int else b.fadd(acc, b.bitcast(raw, F32))
        znext = b.add(z, c32(1))
        z.add_incoming(znext, loop)
        acc.add_incoming(total, loop)
        b.cbranch(b.icmp_unsigned("<", znext, split), loop, done)
        b.position_at_end(done)
        if p.scale_mode in ("tensor", "rowcol"):    # the scales once, on the summed partials (split_k.py)
            self._scale_resources(entry64)
            total = self._scale_value(total, row, inside, self._scale_column(col, inside))
        x = self._epilogue_value(total, row, col, inside)
        self._store(x, row, col, inside)


def reduce_llir(problem: GemmProblem, name: str, data_layout: str = "", tiles: tuple[int, int] | None = None) -> str:
    """The reduction kernel's LLVM IR text for `problem` (its epilogue and output type); `tiles` (tile_m, tile_n):
    the stream-K variant."""
    return str(SplitReduceBuilder(problem, name, data_layout, tiles).build())
