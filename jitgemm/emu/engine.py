"""Running a launch: initial wave state from the kernel descriptor, the scheduler, and `emulate()`.

All waves of the grid are resident at once. Each step picks the lowest PC among the running waves and
executes that instruction for every running wave at that PC in one vectorized call (waves of different
workgroups that run the same code therefore move in lockstep); divergence inside a wave is EXEC's business.
A wave at `s_barrier` waits until every wave of its workgroup has arrived or ended.

Initial state follows AMDGPUUsage "Initial Kernel Execution State" for GFX9 (gfx90a/gfx942): user SGPRs in
the order private segment buffer, dispatch ptr, queue ptr, kernarg segment ptr, dispatch id, flat scratch
init, private segment size, then preloaded kernarg dwords; system SGPRs workgroup id X/Y/Z and workgroup
info after the user SGPRs; work-item ids packed in v0 (X [9:0], Y [19:10], Z [29:20]). A kernel that
preloads kernargs starts 256 bytes into its code, as on firmware that supports preloading (the first 256
bytes are the compatibility prologue that loads the same values).

PCs are the code's addresses in the loaded object (the ELF's virtual addresses + CODE_BASE): s_getpc_b64 reads
them, s_setpc_b64/s_swappc_b64 outside the kernel's code fault at once; the scheduler keeps offsets into the
kernel, memory faults print both. Every PT_LOAD segment of the object is mapped at CODE_BASE + its virtual
address (memory.GlobalMemory.map_image), so .rodata/.data reached PC-relatively are there. Private (scratch)
memory is one region of WAVE * private_segment_fixed_size bytes per wave (semantics.memory.private_pieces). The
default step limit stops a runaway kernel within seconds and names the PC range its last steps stayed in.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jitgemm.codegen.codeobj.launch import LaunchDescription, LaunchError, pack_kernargs

from . import (
    kernarg_trace,
    semantics,  # noqa: F401 - registers every instruction's semantics
)
from .errors import EmulatorError, MemoryFault, StepLimitExceeded, UnsupportedInstruction
from .memory import CODE_BASE, ByteStore, GlobalMemory, lds_limit
from .modes import indexed, run_modal
from .operands import PRIVATE_APERTURE_HI, SHARED_APERTURE_HI, Operands, register_slots
from .ops import Builder, Op
from .program import Decoded, decode_kernel
from .provenance import UNKNOWN, Provenance, flow_of
from .state import AT_BARRIER, DONE, RUNNING, SGPR_SLOTS, WAVE, Waves

DEFAULT_MAX_STEPS = 500_000  # seconds of a runaway loop; the project's largest test kernel takes ~5,000
PRELOAD_ENTRY = 256
DYNAMIC_STACK = 16 * 1024  # private bytes per work-item added for a kernel with a dynamic stack (calls)
USER_SGPR_LIMIT = 32  # user SGPRs a descriptor can ask for (compute_pgm_rsrc2.USER_SGPR is 5 bits, AMDGPUUsage)
MAX_CODE_OBJECT_BYTES = 512 << 20  # a code object read from a path (as the CLI bounds its inputs)


@dataclass
class RunStats:
    """What a run cost: scheduler steps (one instruction for one group of waves), wave-instructions,
    lane-instructions (64 per wave-instruction of a vector/memory op, 1 per scalar one) and wall time."""

    kernel: str
    waves: int
    steps: int = 0
    wave_instructions: int = 0
    lane_instructions: int = 0
    seconds: float = 0.0
    per_op: dict[str, int] = field(default_factory=dict)
    strict: str = ""  # strict mode's summary ("" when the run was not strict)
    warnings: list[str] = field(default_factory=list)  # strict mode's warnings (uninitialized reads)

    @property
    def lane_instructions_per_second(self) -> float:
        return self.lane_instructions / self.seconds if self.seconds else 0.0


class Program:
    """A kernel decoded and compiled to ops once; reusable across launches."""

    def __init__(self, kernel, spec, *, build: bool = True) -> None:
        self.kernel = kernel
        self.spec = spec
        self.decoded: list[Decoded] = decode_kernel(kernel.code, spec)
        slots = register_slots(spec)
        scan = Operands(spec, slots, 0)
        for d in self.decoded:
            if d.inst is not None:
                for op in d.inst.operands:
                    scan.note_regs(op)
        self.vgprs = max(scan.max_vgpr + 1, 1)
        self.agprs = max(scan.max_agpr + 1, 0)
        if any(d.name == "S_SET_GPR_IDX_ON" for d in self.decoded):  # indexed operands reach past the scan
            desc = kernel.descriptor
            allocated = desc.accum_offset_registers if self.agprs else (desc.granulated_workitem_vgpr_count + 1) * 8
            self.vgprs = max(self.vgprs, min(allocated, 512))
        self.slots = slots
        # the kernel's code lives at its address in the object, loaded at CODE_BASE: s_getpc_b64 reads it
        self.code_address = CODE_BASE + kernel.code_address
        self.builder = Builder(spec, Operands(spec, slots, self.vgprs), kernel.name, self.code_address,
                                         len(kernel.code))
        self.ops: dict[int, Op] = {d.pc: self._build(d) for d in self.decoded} if build else {}
        self._by_pc: dict[int, Decoded] | None = None
        self._indexed: dict[tuple[int, int, int], Op] = {}
        self._flows: dict | None = None

    @property
    def flows(self) -> dict:
        """pc -> provenance.Flow of the instructions that write registers or access memory through a base."""
        if self._flows is None:
            ops = self.builder.ops
            self._flows = {d.pc: f for d in self.decoded if (f := flow_of(d, ops)) is not None}
        return self._flows

    def _build(self, d: Decoded) -> Op:
        try:
            return self.builder.build(d)
        except EmulatorError as exc:
            return Op(d.pc, d.size, d.name, d.text, None, str(exc))
        except (KeyError, IndexError, ValueError, TypeError) as exc:  # operands of a shape not modelled
            return Op(d.pc, d.size, d.name, d.text, None, f"operands not understood ({exc!r})")

    def check_unsupported(self) -> list[Op]:
        """`unsupported()` without building every op: whether an instruction has semantics depends on its
        bytes only, so each distinct encoding is built once (hand-written kernels repeat a few thousand
        encodings tens of thousands of times)."""
        code = self.kernel.code
        verdict: dict[bytes, str | None] = {}
        out = []
        for d in self.decoded:
            key = code[d.pc:d.pc + d.size]
            if key not in verdict:
                op = self._build(d)
                verdict[key] = None if op.run is not None else op.problem
            if verdict[key] is not None:
                out.append(Op(d.pc, d.size, d.name, d.text, None, verdict[key]))
        return out

    def indexable(self, pc: int) -> bool:
        """Whether GPR indexing applies to the instruction at `pc` (VALU instructions)."""
        return self.builder.indexable(self._decoded_at(pc))

    def indexed_op(self, pc: int, index: int, mode: int) -> Op:
        """The op at `pc` with GPR indexing (index, mode) applied to its VGPR operands; built once."""
        key = (pc, index, mode)
        op = self._indexed.get(key)
        if op is None:
            op = self._indexed[key] = self.builder.build(indexed(self._decoded_at(pc), index, mode, self.vgprs))
            if op.run is None:
                raise UnsupportedInstruction(op.text, pc, self.kernel.name, op.problem)
        return op

    def _decoded_at(self, pc: int) -> Decoded:
        if self._by_pc is None:
            self._by_pc = {d.pc: d for d in self.decoded}
        return self._by_pc[pc]

    def unsupported(self) -> list[Op]:
        """Ops the emulator cannot run (no semantics, or undecodable words), in code order."""
        return [op for op in self.ops.values() if op.run is None]


class Context:
    """What ops see while running: register state, memories, the kernel's name."""

    def __init__(self, st: Waves, mem: GlobalMemory, lds: ByteStore, lds_size: int, kernel: str,
                 workgroups: int) -> None:
        self.st = st
        self.mem = mem
        self.lds = lds
        self.lds_size = lds_size
        self.kernel = kernel
        self.workgroups = workgroups
        self.modes = False  # some wave has VSKIP or GPR indexing on (see modes.py)
        self.scratch_address = 0  # the private segment: WAVE * private_size bytes per wave, in wave order
        self.private_size = 0
        self.code_address = 0  # where the kernel's PC 0 is loaded (fault messages print loaded PCs)
        self.strict = None  # a strict.Strict checker, in strict mode or under randomized schedules
        self.prov: Provenance | None = None  # pointer provenance: accesses checked against their base's buffer

    def group_size(self, w) -> int:
        return self.st.count if isinstance(w, slice) else len(w)

    def lds_offsets(self, w, sel, addr: np.ndarray, nbytes: int, d: Decoded) -> np.ndarray:
        """Byte offsets into the LDS store of lanes `sel` (indices into the (G, 64) group) accessing
        workgroup-relative `addr` (taken modulo 2**32, as the hardware adds ADDR and offset); a fault for
        accesses outside the workgroup's allocation."""
        waves = (np.arange(self.st.count)[w] if isinstance(w, slice) else np.asarray(w))[sel[0]]
        addr = np.asarray(addr, np.int64) & 0xFFFFFFFF  # LDS addresses are 32-bit sums (ADDR + offset wraps)
        bad = (addr < 0) | (addr + nbytes > self.lds_size)
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryFault(f"LDS access outside the workgroup's {self.lds_size} bytes ({d.text})",
                              int(addr[i]) & 0xFFFFFFFF, d.pc, int(waves[i]), int(sel[1][i]), self.kernel,
                              code_address=self.code_address)
        offsets = self.st.workgroup[waves] * self.lds_size + addr
        if self.strict is not None:
            self.strict.lds(waves, sel[1], offsets, nbytes, d)
        return offsets

    def release_barriers(self) -> None:
        st = self.st
        waiting = st.status == AT_BARRIER
        if not waiting.any():
            return
        running = np.bincount(st.workgroup[st.status == RUNNING], minlength=self.workgroups)
        release = waiting & (running[st.workgroup] == 0)
        st.status[release] = RUNNING


def _load_code_object(code_object) -> Any:
    from jitgemm.codegen.codeobj.reader import CodeObject, read

    if isinstance(code_object, CodeObject):
        return code_object
    if isinstance(code_object, (str, os.PathLike)):
        from jitgemm.util.files import read_bounded

        path = Path(code_object)
        try:
            data = read_bounded(path, MAX_CODE_OBJECT_BYTES)
        except OSError as exc:
            raise EmulatorError(f"cannot read code object {path}: "
                                f"{exc.strerror or str(exc).split(': ', 1)[-1]}") from None
        return read(data)
    if isinstance(code_object, (bytes, bytearray, memoryview)):
        return read(bytes(code_object))
    raise EmulatorError(f"code_object must be bytes, a path or a CodeObject, got {type(code_object).__name__}")


def _pick_kernel(co, name: str | None):
    if name is None:
        if len(co.kernels) != 1:
            raise EmulatorError(f"the code object has {len(co.kernels)} kernels; name one of: "
                                f"{', '.join(k.name for k in co.kernels)}")
        return co.kernels[0]
    return co.kernel(name)


_PROGRAMS: dict[tuple[bytes, int], Program] = {}


def program_for(kernel, spec) -> Program:
    key = (kernel.code, id(spec))
    prog = _PROGRAMS.get(key)
    if prog is None:
        if len(_PROGRAMS) > 32:
            _PROGRAMS.clear()
        prog = _PROGRAMS[key] = Program(kernel, spec)
    return prog


def _default_spec(co=None):
    """The spec of the code object's own target (its ELF e_flags / amdhsa.target), else gfx942's."""
    from jitgemm import isa
    from jitgemm.isa.spec.targets import base_target

    target = getattr(co, "processor", None) or getattr(co, "target", None)
    if target:
        target = base_target(str(target).rsplit("-", 1)[-1])
    return isa.load_spec(target or "gfx942")


def private_segment_buffer(scratch_address: int) -> np.ndarray:
    """The private segment V# the user SGPRs s[0:3] receive: base = the dispatch's scratch, ADD_TID_ENABLE,
    SWIZZLE_ENABLE, element size 4, index stride 64, num_records = all (AMDGPUUsage "Private Segment Buffer";
    LLVM's SIInstrInfo.h RSRC_* fields), so `buffer_store_dword v, off, s[0:3], <wave offset>` lands where the
    wave's flat scratch accesses do (see semantics.memory.private_pieces)."""
    word1 = ((scratch_address >> 32) & 0xFFFF) | (1 << 31)
    word3 = (1 << 23) | (3 << 21) | (1 << 19) | (4 << 15) | (7 << 12)
    return np.array([scratch_address & 0xFFFFFFFF, word1, 0xFFFFFFFF, word3], np.uint32)


def _dispatch_packet(launch: LaunchDescription, group_size: int, kernarg_address: int) -> bytes:
    """An AQL kernel dispatch packet (hsa_kernel_dispatch_packet_t) for the dispatch-ptr user SGPRs."""
    (bx, by, bz), (gx, gy, gz) = launch.block, launch.grid
    dims = 3 if gz * bz > 1 else 2 if gy * by > 1 else 1
    return struct.pack("<HHHHHHIIIIIQQQQ", 2 | (1 << 8), dims, bx, by, bz, 0, gx * bx, gy * by, gz * bz, 0,
                       group_size, 0, kernarg_address, 0, 0)


def emulate(code_object, kernel: str | None = None, grid: int | Sequence[int] = 1, block: int | Sequence[int] = WAVE,
            args: Sequence[Any] = (), *, lds_bytes: int = 0, spec=None, max_steps: int = DEFAULT_MAX_STEPS,
            strict: bool | str = False, schedule: str = "lockstep", seed: int = 0, poison: bool = False) -> RunStats:
    """Run one kernel of a code object on the CPU, with the spec and rules of its own target (ELF e_flags)
    unless `spec` says otherwise.

    `grid` counts workgroups, `block` work-items per workgroup; `args` are numpy arrays (global buffers,
    written back in place), Python/numpy scalars, and None for a null pointer, packed by the kernel's
    metadata `.args`. `lds_bytes` adds dynamic LDS (as `sharedMemBytes` of `hipModuleLaunchKernel`).

    `strict=True` checks waits, barriers and wait states as hardware needs them and raises `StrictViolation`
    on the first break (`strict="all"` also refuses uninitialized reads, otherwise warnings);
    `schedule="random"` with a `seed` delays load results and interleaves waves at random (see emu/strict.py).
    `poison=True` fills LDS and every register the launch ABI does not initialize with POISON instead of zeros, so
    a kernel that reads what it never wrote gives a visibly wrong answer (the anti-cheat battery, jitgemm/battery.py).
    """
    co = _load_code_object(code_object)
    k = _pick_kernel(co, kernel)
    launch = LaunchDescription.make(k.name, grid, block, args, lds_bytes)
    spec = spec if spec is not None else _default_spec(co)
    prog = program_for(k, spec)
    return run_program(prog, k, launch, max_steps=max_steps, strict=strict, schedule=schedule, seed=seed,
                       poison=poison)


POISON = 0x7FBADBAD  # a (signalling) NaN as f32, odd values as f16/bf16 halves: uninitialized state used by poison=True


def run_program(prog: Program, k, launch: LaunchDescription, *, max_steps: int = DEFAULT_MAX_STEPS,
                strict: bool | str = False, schedule: str = "lockstep", seed: int = 0,
                poison: bool = False) -> RunStats:
    from .strict import strict_level

    level = strict_level(strict, schedule)
    desc = k.descriptor
    meta = k.metadata
    wg_size = launch.workgroup_size
    max_wg = int(meta.get(".max_flat_workgroup_size", 1024) or 1024)
    if wg_size > max_wg:
        raise LaunchError(f"kernel {k.name!r}: block {launch.block} has {wg_size} work-items; the kernel allows "
                          f"at most {max_wg} (.max_flat_workgroup_size)")
    if desc.enable_wavefront_size32:
        raise LaunchError(f"kernel {k.name!r} is compiled for wave32; the emulator runs wave{WAVE} (gfx9) code")
    from jitgemm.isa.spec.targets import target_of_spec, target_profile

    target = target_of_spec(prog.spec)
    if target is not None and target_profile(target).wavefront_size != WAVE:
        raise LaunchError(f"kernel {k.name!r}: {target} runs wave{target_profile(target).wavefront_size} (its target "
                          f"profile); the emulator runs wave{WAVE} code")
    # private (scratch) memory per work-item: the descriptor's fixed size, plus a stack for calls
    private = desc.private_segment_fixed_size + (DYNAMIC_STACK if desc.uses_dynamic_stack else 0)
    private = -(-private // 4) * 4
    lds_size = desc.group_segment_fixed_size + launch.lds_bytes
    limit = lds_limit(prog.spec)
    if lds_size > limit:
        from jitgemm.isa.spec.targets import target_of_spec

        raise LaunchError(f"kernel {k.name!r}: {desc.group_segment_fixed_size} bytes of static LDS + "
                          f"{launch.lds_bytes} dynamic = {lds_size} exceed the {limit} bytes of a "
                          f"{target_of_spec(prog.spec)} workgroup")

    # --- memory: checked against what the machine has before anything is allocated ----------------------
    from jitgemm.util.memory_budget import check_fits, emulation_bytes

    waves_total = launch.workgroup_count * -(-wg_size // WAVE)
    buffer_bytes = sum(a.nbytes for a in launch.args if isinstance(a, np.ndarray))
    check_fits(emulation_bytes(buffer_bytes, waves_total) + waves_total * WAVE * private
               + launch.workgroup_count * lds_size, f"emulating {k.name!r} with {waves_total} waves")

    # --- memory: buffers, kernarg segment, dispatch packet -------------------------------------------
    mem = GlobalMemory()
    names = {}
    for a in meta.get(".args", []):
        if not str(a.get(".value_kind", "")).startswith("hidden_"):
            names[len(names)] = a.get(".name") or f"argument {len(names)}"

    def pointer_of(value, index):
        if isinstance(value, np.ndarray):
            return mem.map(f"{names.get(index, f'argument {index}')} ({value.dtype}{list(value.shape)})", value,
                           target=value)
        raise LaunchError(f"kernel {k.name!r} argument {names.get(index, index)}: the emulator takes numpy arrays "
                          f"for buffers (device addresses are for the hip runtime)")

    segment = int(meta.get(".kernarg_segment_size", desc.kernarg_size) or desc.kernarg_size)
    kernargs = pack_kernargs(meta.get(".args", []), launch, segment_size=segment, pointer_of=pointer_of,
                             hidden={"hidden_shared_base": SHARED_APERTURE_HI,
                                     "hidden_private_base": PRIVATE_APERTURE_HI})
    kernarg_address = mem.map("kernarg segment", bytes(kernargs) + bytes(-len(kernargs) % 4), writable=False)
    kernarg_trace.attach(mem, kernarg_address, len(kernargs))
    packet_address = mem.map("dispatch packet", _dispatch_packet(launch, lds_size, kernarg_address), writable=False)
    waves_per_wg = -(-wg_size // WAVE)
    n_wg = launch.workgroup_count
    n = n_wg * waves_per_wg
    wave_scratch = WAVE * private  # bytes of one wave's private memory
    scratch_address = mem.map("private segment (scratch)", np.zeros(n * wave_scratch, np.uint8)) if private else 0
    mem.map_image(k.image)  # the code object's PT_LOAD segments at CODE_BASE + p_vaddr
    mem.freeze()

    # --- waves ---------------------------------------------------------------------------------------
    st = Waves(n, prog.vgprs, prog.agprs, prog.slots)
    wave_ids = np.arange(n)
    st.workgroup[:] = wave_ids // waves_per_wg
    st.wave_in_group[:] = wave_ids % waves_per_wg
    item0 = st.wave_in_group * WAVE
    items = item0[:, None] + np.arange(WAVE)[None, :]
    active = items < wg_size
    exec_bits = np.packbits(active, axis=1, bitorder="little").view("<u8")[:, 0]
    st.set_exec64(slice(None), exec_bits)
    bx, by, _ = launch.block
    tx, ty, tz = items % bx, (items // bx) % by, items // (bx * by)
    vid = desc.enable_vgpr_workitem_id
    v0 = tx.astype(np.uint32)
    if vid >= 1:
        v0 |= ty.astype(np.uint32) << 10
    if vid >= 2:
        v0 |= tz.astype(np.uint32) << 20
    st.v[:, 0, :] = np.where(active, v0, 0)

    s = 0
    def put64(value):
        nonlocal s
        st.s[:, s] = value & 0xFFFFFFFF
        st.s[:, s + 1] = value >> 32
        s += 2
    if desc.enable_sgpr_private_segment_buffer:
        st.s[:, s:s + 4] = private_segment_buffer(scratch_address)
        s += 4
    if desc.enable_sgpr_dispatch_ptr:
        put64(packet_address)
    if desc.enable_sgpr_queue_ptr:
        put64(0)
    if desc.enable_sgpr_kernarg_segment_ptr:
        put64(kernarg_address)
    if desc.enable_sgpr_dispatch_id:
        put64(0)
    if desc.enable_sgpr_flat_scratch_init:
        put64(0)
    if desc.enable_sgpr_private_segment_size:
        s += 1
    entry = 0
    pre, preload = s, (0, 0)   # where the preloaded kernarg dwords start, (first dword, count)
    if desc.kernarg_preload_spec_length:
        words = np.frombuffer(bytes(kernargs) + bytes(4 * 64), np.uint32)
        first = desc.kernarg_preload_spec_offset
        count = desc.kernarg_preload_spec_length
        if s + count > USER_SGPR_LIMIT or first + count > len(words):
            raise LaunchError(f"kernel {k.name!r}: the descriptor preloads {count} kernarg dwords from dword {first} "
                              f"into user SGPRs s{s}..s{s + count - 1}; the kernarg segment has {len(kernargs)} "
                              f"bytes and a wave at most {USER_SGPR_LIMIT} user SGPRs (kernarg_preload_spec_length/"
                              f"_offset)")
        st.s[:, s:s + count] = words[first:first + count]
        preload = (first, count)
        kernarg_trace.preloaded(mem, 4 * first, 4 * count)
        s += count
        entry = PRELOAD_ENTRY
    s = max(s, desc.user_sgpr_count)
    gx, gy, _ = launch.grid
    wg = st.workgroup
    for enabled, value in ((desc.enable_sgpr_workgroup_id_x, wg % gx),
                           (desc.enable_sgpr_workgroup_id_y, (wg // gx) % gy),
                           (desc.enable_sgpr_workgroup_id_z, wg // (gx * gy))):
        if enabled:
            st.s[:, s] = value
            s += 1
    if desc.enable_sgpr_workgroup_info:
        s += 1
    if desc.enable_private_segment:  # private segment wave byte offset (AMDGPUUsage, after workgroup info)
        st.s[:, s] = (wave_ids * wave_scratch).astype(np.uint32)
        s += 1
    st.pc[:] = entry
    if entry not in prog.ops:
        raise EmulatorError(f"kernel {k.name!r}: entry PC 0x{entry:x} is not the start of an instruction")

    lds = ByteStore(np.zeros(max(4, n_wg * lds_size + (-(n_wg * lds_size) % 4)), np.uint8))
    if poison:  # everything the ABI leaves undefined: VGPRs/AGPRs past v0, SGPRs past the initialized ones, LDS
        st.v[:, 1:, :] = POISON
        st.s[:, s:target_profile(target).sgprs if target else 102] = POISON
        lds.words[:] = POISON
    ctx = Context(st, mem, lds, lds_size, k.name, n_wg)
    ctx.scratch_address, ctx.private_size = scratch_address, private
    ctx.code_address = prog.code_address
    if level is not None:
        from .strict import Strict

        ctx.strict = Strict(prog, ctx, level=level, schedule=schedule, seed=seed, initialized_sgprs=s)
    ctx.prov = Provenance(mem, st, prog.flows)
    ctx.prov.held = ctx.strict is not None and ctx.strict.random
    ctx.prov.root(st.s[:, :pre], range(pre), True)   # the kernarg segment pointer, the dispatch packet's
    if preload[1]:                                    # and pointer arguments among the preloaded kernargs
        ctx.prov.root(st.s[:, pre:pre + preload[1]], range(pre, pre + preload[1]), True, preload[0] & 1)
    stats = RunStats(k.name, n)
    t0 = time.perf_counter()
    _schedule(prog, ctx, stats, max_steps)
    stats.seconds = time.perf_counter() - t0
    if ctx.strict is not None:
        ctx.strict.finish(stats)
    mem.write_back()
    return stats


def _schedule(prog: Program, ctx: Context, stats: RunStats, max_steps: int) -> None:
    st = ctx.st
    ops = prog.ops
    n = st.count
    everyone = slice(None)
    steps = wave_instr = lane_instr = 0
    status = st.status
    pcs = st.pc
    recent = [0] * 1024  # the last PCs run, to name a runaway loop's range
    watch = ctx.strict
    shuffle = watch is not None and watch.random
    prov = ctx.prov
    flows = prov.flows if prov is not None else {}
    while True:
        running = status == RUNNING
        if running.all():
            p = int(pcs.min())
            at = pcs == p
            if at.all():
                w = everyone
                g = n
            else:
                w = np.flatnonzero(at)
                g = len(w)
        else:
            if not running.any():
                if (status == AT_BARRIER).any():
                    stuck = np.flatnonzero(status == AT_BARRIER)
                    raise EmulatorError(f"kernel {ctx.kernel!r}: waves {stuck[:8].tolist()} wait at s_barrier "
                                        "for waves of their workgroup that ended")
                break
            p = int(pcs[running].min())
            w = np.flatnonzero(running & (pcs == p))
            g = len(w)
        if shuffle:
            p, w = watch.pick(running, pcs)
            g = len(w)
        op = ops.get(p)
        if op is None:
            raise EmulatorError(f"kernel {ctx.kernel!r}: wave {int(np.arange(n)[w][0])} jumped to PC 0x{p:x}, "
                                "which is not the start of an instruction of the kernel")
        if op.run is None:
            raise UnsupportedInstruction(op.name if op.name.startswith(".long") else op.text, op.pc, ctx.kernel,
                                         op.problem)
        steps += 1
        recent[steps & 1023] = p
        if steps > max_steps:
            lo, hi = min(recent), max(recent)
            last = ops[hi]
            raise StepLimitExceeded(f"kernel {ctx.kernel!r} ran past the step limit of {max_steps} scheduler steps "
                                    f"(at PC 0x{p:x}: {op.text}); its last 1024 steps stayed in PC 0x{lo:x}-"
                                    f"0x{hi + last.size - 1:x} ({last.text} ends the range): a loop that does not "
                                    "end? Raise max_steps if the kernel is meant to run this long")
        wave_instr += g
        lane_instr += g * op.lane_ops
        pcs[w] = p + op.size
        try:
            if ctx.modes and op.lane_ops == WAVE:
                # waves in VSKIP or GPR-indexing mode run here; strict mode does not see these (its facts are
                # per PC, and an indexed instruction's registers depend on M0): it checks the waves left
                w = run_modal(prog, ctx, op, w)
                if prov is not None:   # indexed operands write other registers than the op names: unknown
                    prov.tags[SGPR_SLOTS:] = [UNKNOWN] * (len(prov.tags) - SGPR_SLOTS)
                if not len(w):
                    continue
            if watch is None:
                op.run(ctx, w)
            else:
                watch.step(op, w)
            flow = flows.get(p)
            if flow is not None and flow.dsts:
                prov.after(flow, st, w, n if isinstance(w, slice) else len(w), DONE)
        except EmulatorError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, ArithmeticError) as exc:
            raise EmulatorError(f"kernel {ctx.kernel!r}: the emulator failed on {op.text} at PC 0x{p:x} "
                                f"({type(exc).__name__}: {exc}); please report it with the code object") from exc
    stats.steps = steps
    stats.wave_instructions = wave_instr
    stats.lane_instructions = lane_instr


def check(code_object, kernel: str | None = None, *, spec=None) -> dict[str, list[Op]]:
    """The instructions of each kernel (or one) that the emulator cannot run, before running anything."""
    co = _load_code_object(code_object)
    spec = spec if spec is not None else _default_spec(co)
    kernels = [_pick_kernel(co, kernel)] if kernel is not None else list(co.kernels)
    out = {}
    for k in kernels:
        prog = _PROGRAMS.get((k.code, id(spec)))
        out[k.name] = prog.unsupported() if prog is not None else Program(k, spec, build=False).check_unsupported()
    return out

