"""Lowering the tiled GEMM IR to LLVM IR (llvmlite.ir) for the AMDGPU backend: the LLVM generator.

The kernel does what the direct generator's does (codegen/gemm_asm.py, whose docstring is the reference for
the tiling, the MFMA lane layouts and the edge handling), so the two can be checked against each other:

- the same `amdgpu_kernel` argument list (kernel_abi.kernargs(problem): same names, types and offsets), grid
  (ceil(n/TILE_N), ceil(m/TILE_M), batch) and workgroup (WAVES_M*WAVES_N*64 work-items in x);
- buffer resources per matrix with num_records exactly its bytes, and every out-of-range element given the
  offset 0x80000000 so that the hardware reads 0 and drops the store (ragged M, N and K);
- A and B tiles in LDS (address space 3), K contiguous, rows padded by LDS_PAD, fenced
  `llvm.amdgcn.s.barrier` between writing and reading them;
- one `llvm.amdgcn.mfma.*` per MFMA block and K slice, accumulators carried around the K loop;
- the same epilogue (alpha, beta*C, bias, relu/gelu, conversion) in the same order of operations.

What LLVM decides on its own: register allocation (asked to keep the accumulators in AGPRs with
`amdgpu-agpr-alloc`), instruction selection, scheduling (fenced per K slice with `llvm.amdgcn.sched.barrier`,
so that only one slice's MFMA fragments are live at a time) and the waits.
"""

from __future__ import annotations

import math

from jitgemm.codegen.gemm_ir import GemmConfig
from jitgemm.codegen.gemm_plan import GemmPlan, Staging, log2_exact
from jitgemm.codegen.kernel_abi import OOB, RSRC_WORD3, kernargs, matrix_extent
from jitgemm.isa.spec.mfma import WAVE64
from llvmlite import ir

from .intrinsics import (
    F16,
    F32,
    I8,
    I16,
    I32,
    I64,
    LDS,
    PTR_GLOBAL,
    PTR_LDS,
    Intrinsics,
    mfma_acc_type,
    mfma_operand_type,
)
from .scale_builder import ScaleIRMixin

TRIPLE = "amdgcn-amd-amdhsa"
CODE_OBJECT_VERSION = 500          # module flag amdhsa_code_object_version (AMDGPUUsage): v5


def amdgpu_module(name: str, data_layout: str) -> ir.Module:
    """An empty module for the AMDGPU HSA target: triple, the target's data layout, the code-object version flag
    (every kernel module the LLVM generator builds: GEMM, split-K reduction)."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = data_layout
    flags = module.add_metadata([c32(1), "amdhsa_code_object_version", c32(CODE_OBJECT_VERSION)])
    module.add_named_metadata("llvm.module.flags").add(flags)
    return module
LDS_SYMBOL = "jitgemm.lds"
SIMDS_PER_CU = 4


def c32(value: int) -> ir.Constant:
    """An i32 constant; values of 2**31 and above are written as the negative number with the same bits."""
    value &= 0xFFFFFFFF
    return ir.Constant(I32, value - (1 << 32) if value >= 1 << 31 else value)


class _KernelAttributes(ir.values.FunctionAttributes):
    """Function attributes including LLVM's string attributes ("key"="value"), which llvmlite's own
    attribute set does not take."""

    def __init__(self, strings: dict[str, str]) -> None:
        super().__init__()
        self.strings = dict(strings)

    def __bool__(self) -> bool:
        return bool(self.strings) or super().__len__() > 0

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + [f'"{k}"="{v}"' if v else f'"{k}"' for k, v in self.strings.items()]


def kernel_attributes(config: GemmConfig, accumulators: int) -> dict[str, str]:
    """Workgroup size, waves per EU (every wave of a workgroup must fit on the CU's SIMDs at once), AGPRs for
    the accumulators (without it LLVM splits them between VGPRs and AGPRs and shuffles them around the loop
    when they fill a register file), and the hardware-initialised inputs the kernel does not use, so that only
    the kernarg pointer, the workgroup ids and workitem id X are set up (as in the direct generator)."""
    threads = config.workgroup_size
    waves = threads // WAVE64
    attrs = {
        "amdgpu-flat-work-group-size": f"{threads},{threads}",
        "amdgpu-waves-per-eu": f"{max(1, math.ceil(waves / SIMDS_PER_CU))}",
        "amdgpu-agpr-alloc": f"{accumulators}",
        "uniform-work-group-size": "true",
    }
    for unused in ("workitem-id-y", "workitem-id-z", "dispatch-ptr", "queue-ptr", "dispatch-id", "implicitarg-ptr",
                   "hostcall-ptr", "heap-ptr", "multigrid-sync-arg", "default-queue", "completion-action",
                   "lds-kernel-id", "flat-scratch-init", "cluster-id-x", "cluster-id-y", "cluster-id-z"):
        attrs[f"amdgpu-no-{unused}"] = ""
    return attrs


# --- the kernel ----------------------------------------------------------------------------------------------
class GemmIRBuilder(ScaleIRMixin):
    """Builds one kernel class's LLVM module. `data_layout` is the target machine's (LLVM needs it to size
    pointers of each address space). Scale modes: codegen/llvm/scale_builder.py."""

    OOB = OOB

    def __init__(self, plan: GemmPlan, name: str = "jitgemm_gemm", data_layout: str = "") -> None:
        self.plan = plan
        self.p, self.c, self.name = plan.problem, plan.config, name
        self.mfma = plan.mfma
        self.A, self.B, self.lds_bytes = plan.a, plan.b, plan.buffer_bytes
        self.threads = plan.workgroup_size
        self.integer = not self.p.epilogue_float      # the epilogue's arithmetic (a scaled int8 GEMM's is fp32)
        self.data_layout = data_layout
        self.blocks_m, self.blocks_n = plan.blocks_m, plan.blocks_n
        self.grid = plan.grid

    # --- module and function -------------------------------------------------------------------------------
    def build(self) -> ir.Module:
        module = amdgpu_module(self.name, self.data_layout)
        self.intr = Intrinsics(module)
        arg_types = []
        layout = kernargs(self.p)
        for _name, _offset, _size, kind in layout:
            arg_types.append(PTR_GLOBAL if kind == "ptr" else I32 if kind == "i32" or self.integer else F32)
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), arg_types), self.name)
        fn.calling_convention = "amdgpu_kernel"
        fn.attributes = _KernelAttributes(kernel_attributes(self.c, self.blocks_m * self.blocks_n * self.mfma.acc_regs))
        self.args = {}
        for arg, (arg_name, _offset, _size, _kind) in zip(fn.args, layout, strict=True):
            arg.name = arg_name
            self.args[arg_name] = arg
        if self.lds_bytes:
            lds_type = ir.ArrayType(I8, self.lds_bytes)
            self.lds = ir.GlobalVariable(module, lds_type, LDS_SYMBOL, addrspace=LDS)
            self.lds.linkage = "internal"
            self.lds.initializer = ir.Constant(lds_type, ir.Undefined)
            self.lds.align = 16
            self.lds.type = PTR_LDS   # refer to it as an opaque pointer (llvmlite would give a typed one)
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self._prologue()
        self._main_loop()
        self._epilogue()
        self.b.ret_void()
        return module

    def call(self, fn: ir.Function, *args, name: str = "") -> ir.Value:
        return self.b.call(fn, list(args), name=name)

    # --- prologue: ids, wave position, batch offsets, buffer resources ---------------------------------------
    def _prologue(self) -> None:
        b, c, intr = self.b, self.c, self.intr
        tid = self.call(intr.workitem_id("x"), name="tid")
        self.tid = tid
        self.lane = b.and_(tid, c32(WAVE64 - 1), name="lane")
        wave = self.call(intr.readfirstlane(), b.lshr(tid, c32(6)), name="wave")
        wave_m, wave_n = c.wave_tile
        self.wrow = b.mul(b.lshr(wave, c32(log2_exact(c.waves_n, "waves_n"))), c32(wave_m), name="wrow")
        self.wcol = b.mul(b.and_(wave, c32(c.waves_n - 1)), c32(wave_n), name="wcol")
        gx = self.call(intr.workgroup_id("x"), name="wg.x")
        gy = self.call(intr.workgroup_id("y"), name="wg.y")
        gz = self.call(intr.workgroup_id("z"), name="wg.z")
        self.row0 = b.mul(gy, c32(c.tile_m), name="row0")
        self.col0 = b.mul(gx, c32(c.tile_n), name="col0")
        self.batch_id = gz
        self.args = dict(self.args)   # `k` / `m` may be narrowed to this workgroup's K range / group rows
        self.moved: dict[str, ir.Value] = {}     # extra element offsets of matrices (K range, group rows)
        if self.p.k_split == "partial":          # z is a K range, not a batch entry (codegen/gemm_split.py)
            self._k_range(gz)
        if self.p.grouped:                       # z is a group: its rows of A, C, D (codegen/gemm_group.py)
            self._group_rows(gz)
        self._resources()

    def _k_range(self, gz: ir.Value) -> None:
        """The direct generator's `emit_k_range` (codegen/gemm_split.py): ranges of per = ceil(tiles / split)
        whole depth_k tiles (split in the batch slot, a power of two), range z starts at k0 = z * per and has
        min(K - k0, per) elements; A and B start at element k0 of K."""
        b, a, p, c = self.b, self.args, self.p, self.c
        log_split = self.call(self.intr.cttz(), a["batch"], ir.Constant(ir.IntType(1), 1), name="split.log2")
        tiles = b.lshr(b.add(a["k"], c32(c.depth_k - 1)), c32(log2_exact(c.depth_k, "depth_k")))
        per = b.shl(b.lshr(b.sub(b.add(tiles, a["batch"]), c32(1)), log_split),
                    c32(log2_exact(c.depth_k, "depth_k")), name="k.per")
        k0 = b.mul(gz, per, name="k.first")
        rest = b.sub(a["k"], k0)
        a["k"] = b.select(b.icmp_signed("<", rest, per), rest, per, name="k.range")
        self.moved["a"] = b.zext(b.mul(k0, a["lda"]), I64) if p.a_transposed else b.zext(k0, I64)
        self.moved["b"] = b.zext(k0, I64) if p.b_transposed else b.zext(b.mul(k0, a["ldb"]), I64)

    def _group_rows(self, gz: ir.Value) -> None:
        """The direct generator's `emit_group_rows` (codegen/gemm_group.py): this group's rows are
        offsets[z] .. offsets[z + 1]; a workgroup whose first row is past them ends at once (an empty group
        touches no memory); A, C, D (and a per-row bias) start at the group's first row."""
        b, a, p = self.b, self.args, self.p
        table = a["group_offsets"]
        start = b.load(b.gep(table, [gz], source_etype=I32), typ=I32, align=4, name="group.start")
        end = b.load(b.gep(table, [b.add(gz, c32(1))], source_etype=I32), typ=I32, align=4, name="group.end")
        for value in (start, end):          # the table is read-only: a scalar load
            value.set_metadata("invariant.load", self.fn.module.add_metadata([]))
        a["m"] = b.sub(end, start, name="group.rows")
        work = self.fn.append_basic_block("group.work")
        idle = self.fn.append_basic_block("group.done")
        b.cbranch(b.icmp_unsigned(">=", self.row0, a["m"]), idle, work)
        b.position_at_end(idle)
        b.ret_void()
        b.position_at_end(work)
        first = b.zext(start, I64)
        self.moved["a"] = b.mul(first, b.zext(a["lda"], I64))
        self.moved["d"] = b.mul(first, b.zext(a["ldd"], I64))
        if p.c is not None:
            self.moved["c"] = b.mul(first, b.zext(a["ldc"], I64))
        if p.bias == "m":
            self.moved["bias"] = first
        elif p.bias == "n":             # a column bias per group (stride_bias elements apart; 0: one for all)
            self.moved["bias"] = b.mul(b.zext(gz, I64), b.zext(a["stride_bias"], I64))

    def _resources(self) -> None:
        """Buffer resources of this workgroup's batch entry of every matrix."""
        b, gz = self.b, self.batch_id
        p, a = self.p, self.args
        sizes = {"a": p.a.bytes, "b": p.b.bytes, "d": p.d.bytes}
        if p.c is not None:
            sizes["c"] = p.c.bytes
        base = {}
        batch = b.zext(gz, I64)
        # a partial kernel's z moves only D (the workspace slice), a grouped kernel's only B (the group's weight)
        strided = {"d"} if p.k_split == "partial" else {"b"} if p.grouped else set(sizes)
        for x, eb in sizes.items():   # ptr_X + wg_z * stride_X * bytes, in 64 bits
            if x not in strided:
                base[x] = b.gep(a[x], [b.mul(self.moved[x], ir.Constant(I64, eb))], source_etype=I8,
                                name=f"{x}.moved") if x in self.moved else a[x]
                continue
            elems = b.mul(batch, b.zext(a[f"stride_{x}"], I64))
            base[x] = b.gep(a[x], [b.mul(elems, ir.Constant(I64, eb))], source_etype=I8, name=f"{x}.batch")
        self.rsrc = {x: self._resource(x, base[x]) for x in sizes}
        if p.bias != "none":
            bias = a["bias"]
            if "bias" in self.moved:
                bias = b.gep(bias, [b.mul(self.moved["bias"], ir.Constant(I64, 4))], source_etype=I8,
                             name="bias.moved")
            self.rsrc["bias"] = self._resource("bias", bias)
        self._scale_resources(batch)

    def _resource(self, x: str, ptr: ir.Value) -> ir.Value:
        """A raw buffer resource over matrix `x` whose num_records is exactly its bytes ((rows-1)*ld + cols
        elements), so that anything past the end reads 0 and is not written."""
        b, a, p = self.b, self.args, self.p
        if x == "bias":
            count = a["m"] if p.bias == "m" else a["n"]
            records = b.shl(count, c32(2))
        else:
            rows, cols, ld, eb = matrix_extent(p, x)
            elems = b.add(b.mul(b.sub(a[rows], c32(1)), a[ld]), a[cols])
            records = b.mul(elems, c32(eb))
        return self.call(self.intr.make_buffer_rsrc(), ptr, ir.Constant(I16, 0), b.zext(records, I64),
                         c32(RSRC_WORD3), name=f"{x}.rsrc")

    # --- global -> LDS ---------------------------------------------------------------------------------------
    def _plan_slots(self, op: Staging) -> dict:
        """This work-item's load slots. Slot i covers tile vector tid + i*THREADS; since both the threads and
        the vectors per row are powers of two, its row and column are slot 0's plus constants, so every slot
        is slot 0's registers plus a uniform (scalar) global offset and a constant LDS offset."""
        b = self.b
        ld = self.args[f"ld{op.name}"]
        per_row = op.cols_t // op.vec
        origin = self.row0 if op.name == "a" else self.col0
        r0 = b.lshr(self.tid, c32(log2_exact(per_row, "vectors per row")))
        col0 = b.mul(b.and_(self.tid, c32(per_row - 1)), c32(op.vec))
        k0, fix0 = (col0, r0) if op.k_is_col else (r0, col0)
        grow, gcol = (b.add(origin, r0), col0) if op.k_is_col else (r0, b.add(origin, col0))
        off0 = b.mul(b.add(b.mul(grow, ld), gcol), c32(op.eb), name=f"{op.name}.off")
        lds0 = b.add(b.add(b.mul(fix0, c32(op.lds_row)), b.mul(k0, c32(op.eb))), c32(op.lds_base),
                     name=f"{op.name}.lds")
        slots = []
        for i in range(op.slots):
            first = i * self.threads
            dr, dc = first // per_row, first % per_row * op.vec
            dk, dfix = (dc, dr) if op.k_is_col else (dr, dc)
            # global offset of slot i minus slot 0's: (dr * ld + dc) elements
            delta = b.mul(b.add(b.mul(ld, c32(dr)), c32(dc)), c32(op.eb)) if first else c32(0)
            lds = b.add(lds0, c32(dfix * op.lds_row + dk * op.eb)) if first else lds0
            slots.append({"dk": dk, "dfix": dfix, "delta": delta, "lds": lds})
        bound = self.args["m"] if op.name == "a" else self.args["n"]
        return {"op": op, "slots": slots, "rem_fix": b.sub(bound, origin, name=f"{op.name}.rem"), "ld": ld,
                "k0": k0, "fix0": fix0, "off0": off0}

    def _load_type(self, op: Staging) -> ir.Type:
        nbytes = op.load_bytes
        return ir.IntType(nbytes * 8) if nbytes <= 4 else ir.VectorType(I32, nbytes // 4)

    def _below(self, value: ir.Value, bound: ir.Value, minus: int) -> ir.Value:
        """value + minus < bound, for a uniform bound: value < max(bound - minus, 0)."""
        b = self.b
        if minus:
            bound = b.select(b.icmp_unsigned(">", bound, c32(minus)), b.sub(bound, c32(minus)), c32(0))
        return b.icmp_unsigned("<", value, bound)

    def _issue_loads(self, plan: dict, kt: ir.Value) -> list[ir.Value]:
        """This work-item's part of the tile at k = kt; elements outside the matrix read as 0."""
        b, op = self.b, plan["op"]
        k = self.args["k"]
        rem_k = b.select(b.icmp_unsigned("<", kt, k), b.sub(k, kt), c32(0))   # uniform: stays scalar
        if op.k_is_col:
            advance = b.mul(kt, c32(op.eb))
        else:
            advance = b.mul(b.mul(kt, plan["ld"]), c32(op.eb))
        ty = self._load_type(op)
        values = []
        for slot in plan["slots"]:
            inside = b.and_(self._below(plan["fix0"], plan["rem_fix"], slot["dfix"]),
                            self._below(plan["k0"], rem_k, slot["dk"]))
            offset = b.select(inside, b.add(plan["off0"], b.add(slot["delta"], advance)), c32(OOB))
            values.append(self.call(self.intr.buffer_load(ty), self.rsrc[op.name], offset, c32(0), c32(0)))
        return values

    def _lds_ptr(self, offset: ir.Value) -> ir.Value:
        return self.b.gep(self.lds, [offset], source_etype=I8)

    def _write_lds(self, plan: dict, values: list[ir.Value]) -> None:
        b, op = self.b, plan["op"]
        for slot, value in zip(plan["slots"], values, strict=True):
            if op.k_is_col or op.vec == 1:      # the vector is contiguous in LDS too
                b.store(value, self._lds_ptr(slot["lds"]), align=op.load_bytes)
                continue
            elems = b.bitcast(value, ir.VectorType(ir.IntType(op.eb * 8), op.vec))
            for e in range(op.vec):             # scatter: element e belongs to the next LDS row
                where = b.add(slot["lds"], c32(e * op.lds_row)) if e else slot["lds"]
                b.store(b.extract_element(elems, c32(e)), self._lds_ptr(where), align=op.eb)

    def _barrier(self) -> None:
        """__syncthreads: LDS writes before the barrier are visible to every wave after it."""
        self.b.fence("release", "workgroup")
        self.call(self.intr.barrier())
        self.b.fence("acquire", "workgroup")

    # --- MFMA steps -----------------------------------------------------------------------------------------------
    def _fragment_bases(self) -> dict[str, ir.Value]:
        """Per-lane LDS byte offset of this wave's first A and B fragment: lane l reads row (l % M) of its block
        at k offset kpl * (l // M)."""
        b, m = self.b, self.mfma
        bases = {}
        for op, dim, wpos in ((self.A, m.m, self.wrow), (self.B, m.n, self.wcol)):
            kpl = m.k * dim // WAVE64
            idx = b.add(wpos, b.and_(self.lane, c32(dim - 1)))
            kk = b.mul(b.lshr(self.lane, c32(log2_exact(dim, "mfma dim"))), c32(kpl * op.eb))
            bases[op.name] = b.add(b.add(b.mul(idx, c32(op.lds_row)), kk), c32(op.lds_base), name=f"{op.name}.frag")
        return bases

    def _mfma_step(self, accs: list[list[ir.Value]], bases: dict[str, ir.Value]) -> list[list[ir.Value]]:
        b, m = self.b, self.mfma
        ta, tb = mfma_operand_type(m.a, m.a_regs), mfma_operand_type(m.b, m.b_regs)
        mfma = self.intr.mfma(m)
        zero = c32(0)
        for kk in range(0, self.c.depth_k, m.k):
            frag_a = [b.load(self._lds_ptr(b.add(bases["a"], c32(i * m.m * self.A.lds_row + kk * self.A.eb))),
                             typ=ta, align=m.a_regs * 4) for i in range(self.blocks_m)]
            frag_b = [b.load(self._lds_ptr(b.add(bases["b"], c32(j * m.n * self.B.lds_row + kk * self.B.eb))),
                             typ=tb, align=m.b_regs * 4) for j in range(self.blocks_n)]
            accs = [[self.call(mfma, frag_a[i], frag_b[j], accs[i][j], zero, zero, zero)
                     for j in range(self.blocks_n)] for i in range(self.blocks_m)]
            self.call(self.intr.sched_barrier(), zero)
        return accs

    def _main_loop(self) -> None:
        b, c = self.b, self.c
        plans = [self._plan_slots(self.A), self._plan_slots(self.B)]
        bases = self._fragment_bases()
        prefetch = c.prefetch == 2
        first = [self._issue_loads(plan, c32(0)) for plan in plans] if prefetch else None
        entry = b.block
        loop = self.fn.append_basic_block("k.loop")
        done = self.fn.append_basic_block("k.done")
        b.branch(loop)
        b.position_at_end(loop)
        kt = b.phi(I32, name="kt")
        kt.add_incoming(c32(0), entry)
        acc_type = mfma_acc_type(self.mfma)
        block = self.p.scale_mode == "block"     # K blocks' partials from zero, scaled into fp32 sums
        sum_type = ir.VectorType(ir.FloatType(), self.mfma.acc_regs) if block else acc_type
        acc_phis = [[b.phi(sum_type, name=f"acc.{i}.{j}") for j in range(self.blocks_n)]
                    for i in range(self.blocks_m)]
        for row in acc_phis:
            for phi in row:
                phi.add_incoming(ir.Constant(sum_type, None), entry)
        if prefetch:
            staged = []
            for values in first:
                phis = []
                for v in values:
                    phi = b.phi(v.type)
                    phi.add_incoming(v, entry)
                    phis.append(phi)
                staged.append(phis)
        else:
            staged = [self._issue_loads(plan, kt) for plan in plans]
        for plan, values in zip(plans, staged, strict=True):
            self._write_lds(plan, values)
        self._barrier()
        kt_next = b.add(kt, c32(c.depth_k), name="kt.next")
        if prefetch:   # the next step's tile is in flight while this one is multiplied
            upcoming = [self._issue_loads(plan, kt_next) for plan in plans]
        if block:
            zero = ir.Constant(acc_type, None)
            partial = self._mfma_step([[zero] * self.blocks_n for _ in range(self.blocks_m)], bases)
            accs = self._block_flush(partial, acc_phis, kt)
        else:
            accs = self._mfma_step([list(row) for row in acc_phis], bases)
        self._barrier()
        latch = b.block
        kt.add_incoming(kt_next, latch)
        for i, row in enumerate(acc_phis):
            for j, phi in enumerate(row):
                phi.add_incoming(accs[i][j], latch)
        if prefetch:
            for phis, values in zip(staged, upcoming, strict=True):
                for phi, v in zip(phis, values, strict=True):
                    phi.add_incoming(v, latch)
        b.cbranch(b.icmp_unsigned("<", kt_next, self.args["k"]), loop, done)
        b.position_at_end(done)
        self.accs = accs

    # --- epilogue ------------------------------------------------------------------------------------------------
    def _epilogue(self) -> None:
        b, m, a = self.b, self.mfma, self.args
        groups = WAVE64 // m.n
        rbase = b.add(b.add(b.shl(b.lshr(self.lane, c32(log2_exact(m.n, "mfma n"))), c32(2)), self.wrow), self.row0,
                      name="d.row")
        cbase = b.add(b.add(b.and_(self.lane, c32(m.n - 1)), self.wcol), self.col0, name="d.col")
        for i in range(self.blocks_m):
            for j in range(self.blocks_n):
                col = b.add(cbase, c32(j * m.n)) if j else cbase
                col_in = b.icmp_unsigned("<", col, a["n"])
                sb = self._scale_column(col, col_in)
                for r in range(m.acc_regs):
                    drow = i * m.m + (r // 4) * 4 * groups + r % 4
                    row = b.add(rbase, c32(drow)) if drow else rbase
                    inside = b.and_(b.icmp_unsigned("<", row, a["m"]), col_in)
                    x = b.extract_element(self.accs[i][j], c32(r))
                    x = self._scale_value(x, row, inside, sb)
                    x = self._epilogue_value(x, row, col, inside)
                    self._store(x, row, col, inside)

    def _masked_offset(self, row: ir.Value, col: ir.Value, ld: ir.Value, eb: int, inside: ir.Value) -> ir.Value:
        b = self.b
        return b.select(inside, b.mul(b.add(b.mul(row, ld), col), c32(eb)), c32(OOB))

    def _load_element(self, x: str, offset: ir.Value, dt) -> ir.Value:
        """One element as f32 (or i32 for integer GEMMs)."""
        b = self.b
        raw = self.call(self.intr.buffer_load(ir.IntType(dt.bits)), self.rsrc[x], offset, c32(0), c32(0))
        if dt.name == "bf16":
            return b.bitcast(b.shl(b.zext(raw, I32), c32(16)), F32)
        if dt.name == "fp16":
            return b.fpext(b.bitcast(raw, F16), F32)
        return raw if self.integer else b.bitcast(raw, F32)

    def _epilogue_value(self, x: ir.Value, row: ir.Value, col: ir.Value, inside: ir.Value) -> ir.Value:
        b, p, a, intr = self.b, self.p, self.args, self.intr
        integer = self.integer
        if p.alpha != 1.0:
            x = b.mul(x, a["alpha"]) if integer else b.fmul(x, a["alpha"])
        if p.c is not None and p.beta != 0.0:
            cval = self._load_element("c", self._masked_offset(row, col, a["ldc"], p.c.bytes, inside), p.c)
            x = b.add(x, b.mul(cval, a["beta"])) if integer else self.call(intr.fma(), cval, a["beta"], x)
        if p.bias != "none":
            index = row if p.bias == "m" else col
            offset = b.select(inside, b.shl(index, c32(2)), c32(OOB))
            raw = self.call(intr.buffer_load(I32), self.rsrc["bias"], offset, c32(0), c32(0))
            x = b.add(x, raw) if integer else b.fadd(x, b.bitcast(raw, F32))
        if p.activation == "relu":
            x = self.call(intr.smax(), x, c32(0)) if integer else self.call(intr.maxnum(), x, ir.Constant(F32, 0.0))
        elif p.activation == "gelu":
            # gelu(x) ~= x * (0.5 + 0.5 tanh(y)), y = sqrt(2/pi) (x + 0.044715 x^3) (arXiv:1606.08415, section 2),
            # tanh(y) = 1 - 2 / (1 + 2^(2 y log2 e)); the direct generator's sequence, operation for operation
            # (no fast-math flags: LLVM keeps the order; the fp16 store's fence keeps the last rounding, `_store`)
            f = lambda v: ir.Constant(F32, v)  # noqa: E731
            t = b.fmul(x, x)
            t = self.call(intr.fma(), t, f(0.044715), f(1.0))
            t = b.fmul(t, x)
            t = b.fmul(f(0.7978845608028654 * 2.0 * math.log2(math.e)), t)
            t = self.call(intr.exp2(), t)
            t = b.fadd(f(1.0), t)
            t = self.call(intr.rcp(), t)
            t = self.call(intr.fma(), t, f(-2.0), f(1.0))
            t = self.call(intr.fma(), t, f(0.5), f(0.5))
            x = b.fmul(x, t)
        return x

    def _store(self, x: ir.Value, row: ir.Value, col: ir.Value, inside: ir.Value) -> None:
        b, p = self.b, self.p
        if self.integer:
            value = x
        elif p.d.name == "bf16":
            # round to nearest even; NaN stays NaN (quiet 0x7fc0)
            bits = b.bitcast(x, I32)
            rounded = b.lshr(b.add(b.add(bits, b.and_(b.lshr(bits, c32(16)), c32(1))), c32(0x7FFF)), c32(16))
            value = b.trunc(b.select(b.fcmp_unordered("uno", x, x), c32(0x7FC0), rounded), I16)
        elif p.d.name == "fp16":
            # fp32 first, then one v_cvt_f16_f32, as the direct generator rounds: without the fence LLVM folds
            # fptrunc(fmul/fma) into one v_fma_mixlo_f16 (llvm/test/CodeGen/AMDGPU/mad-mix-lo.ll, `mixlo_simple`),
            # rounding once instead of twice and turning fmul's -0 into fma(x, y, +0) = +0: gelu of a large
            # negative x, alpha or beta * C as the last step, gave different bits from the two generators. Only
            # such a last step is fenced (a fence moves LLVM's schedule: other kernels stay as they were)
            if _fusable(x):
                x = self.call(self.intr.arithmetic_fence(), x)
            value = b.bitcast(b.fptrunc(x, F16), I16)
        else:
            value = b.bitcast(x, I32)
        offset = self._masked_offset(row, col, self.args["ldd"], p.d.bytes, inside)
        self.call(self.intr.buffer_store(value.type), value, self.rsrc["d"], offset, c32(0), c32(0))


def _fusable(x: ir.Value) -> bool:
    """An fp32 multiply or multiply-add whose fptrunc to f16 LLVM may select as one v_fma_mixlo_f16."""
    if isinstance(x, ir.CallInstr):
        return getattr(x.callee, "name", "") in ("llvm.fma.f32", "llvm.fmuladd.f32")
    return isinstance(x, ir.Instruction) and x.opname == "fmul"     # (an fadd stays fadd + v_cvt_f16_f32)


def build_module(plan: GemmPlan, name: str = "jitgemm_gemm", data_layout: str = "") -> tuple[ir.Module, GemmIRBuilder]:
    """The LLVM module of one planned GEMM kernel, and the builder."""
    builder = GemmIRBuilder(plan, name, data_layout)
    return builder.build(), builder
