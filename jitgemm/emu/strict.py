"""Strict mode: the emulator checks what hardware does not forgive.

The plain emulator completes every memory operation the moment it issues and ignores wait states, so a kernel
that forgets an `s_waitcnt`, an `s_barrier` or the wait states after an MFMA still gives the right answer
there. `Strict` follows each wave through the ISA's rules and raises `StrictViolation` on the first break:

- Outstanding memory operations (CDNA3 ISA guide, "Data Dependency Resolution" / S_WAITCNT; AMDGPUUsage,
  "Memory Model GFX942"). Every VMEM/FLAT/SMEM/LDS operation leaves its destination registers pending on the
  counters the target profile's `wait_counters` table gives its encoding. vmcnt returns in issue order, so
  `vmcnt(N)` completes all but the newest N; LDS returns in order among LDS operations, but SMEM (and FLAT,
  which may reach LDS) return out of order, so only `lgkmcnt(0)` guarantees them. Reading or overwriting a
  pending destination is a violation; so is touching LDS bytes a pending buffer load-to-LDS writes.
  S_ENDPGM implicitly executes S_WAITCNT 0 (its description in the CDNA3 ISA guide), so vector stores may be
  in flight at the end; scalar stores need S_DCACHE_WB first (AMDGPUUsage, scalar memory stores).
- LDS races: within a workgroup, bytes written by one wave and read or written by another with no
  `s_barrier` between them in both waves' program order. A wave's barrier orders only its LDS operations
  that have completed (AMDGPUUsage "Memory Model GFX942": LDS operations of different waves may be reordered,
  `s_waitcnt lgkmcnt(0)` is required before the barrier), so a store still pending at the barrier belongs
  to the epoch after it.
- Hazards: the target profile's `hazards` table (writer class, reader class, wait states, optional register
  file / operand field / MFMA pass-count terms), checked per register with a wait-state clock per wave:
  every instruction is one wait state, `s_nop N` is N + 1, and an MFMA issues no earlier than the matrix pipe
  takes it: its wave's previous MFMA's passes after that one issued (the profile's `mfma.next_issue`, with its
  evidence), so an independent MFMA between a writer and its reader counts the stall it takes.
- Uninitialized reads: registers and LDS bytes read before any write, other than what the launch ABI
  initializes (AMDGPUUsage "Initial Kernel Execution State"), are warnings, or violations with `strict="all"`.

Randomized schedules (`schedule="random"`) are the independent check: each load's register result is held
back for a random number of the wave's issue slots (never past the `s_waitcnt` that covers it) and the waves
run in a random interleaving, so a kernel that depends on timing gives a different answer under some seed.

Everything here is vectorized over the waves that run an instruction together, as the engine is.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jitgemm.isa import hazards as hz
from jitgemm.isa.hazards import HWREG_READERS, HWREG_WRITERS, HazardRule, emit_facts, hazard_gap, mfma_timing
from jitgemm.isa.instruction import Counters, Imm, Reg, SrcMods

from .errors import EmulatorError
from .state import WAVE

SGPR_SLOTS = 128
HWREG_SLOTS = 64      # pseudo registers for s_setreg/s_getreg hazards (one per HW_REG id)
VREG_BASE = SGPR_SLOTS + HWREG_SLOTS
NEVER = -(1 << 40)
ALL_LANES = np.uint64(0xFFFFFFFFFFFFFFFF)


class StrictViolation(EmulatorError):
    """A kernel broke a rule hardware relies on (a missing wait, barrier or wait state)."""

    def __init__(self, kernel: str, rule: str, wave: int, lanes: int, where: str, first: tuple[int, str] | None,
                 second: tuple[int, str], detail: str) -> None:
        self.kernel, self.rule, self.wave, self.lanes, self.where = kernel, rule, wave, lanes, where
        self.first, self.second, self.detail = first, second, detail
        before = f"\n  first:  PC 0x{first[0]:x}  {first[1]}" if first else ""
        super().__init__(f"strict: kernel {kernel!r}, wave {wave}, lanes 0x{lanes:016x}: {rule} on {where}: {detail}"
                         f"{before}\n  second: PC 0x{second[0]:x}  {second[1]}")


class StrictWarning(UserWarning):
    """An uninitialized read (a violation only with strict='all')."""


# --- the profile's tables ---------------------------------------------------------------------------------

# --- facts of one instruction ------------------------------------------------------------------------------

@dataclass
class Facts:
    """What strict mode needs of one instruction, made once per program from the spec's operand descriptions
    (registers read and written as indices into one per-wave register space, memory roles, counters, classes)."""

    pc: int
    text: str
    reads: np.ndarray                 # register indices (SGPR slot / VREG_BASE + v / hwreg pseudo)
    writes: np.ndarray
    reads_by_field: dict[str, np.ndarray] = field(default_factory=dict)
    reads_by_format: dict[str, np.ndarray] = field(default_factory=dict)   # read registers by ISA data format
    classes: frozenset = frozenset()
    counters: tuple[str, ...] = ()    # vmcnt / lgkmcnt it increments
    lgkm_any_order: bool = False      # SMEM / FLAT: only lgkmcnt(0) guarantees it
    store_data: np.ndarray | None = None
    wide_store: bool = False
    lds_write: bool = False
    lds_read: bool = False
    lds_atomic: bool = False
    to_lds: bool = False              # buffer load straight to LDS (LDS DMA)
    scalar_store: bool = False
    waitcnt: tuple[int | None, int | None] | None = None
    nop: int = 0                      # wait states an s_nop adds beyond its own
    barrier: bool = False
    endpgm: bool = False
    dcache_wb: bool = False
    pending_dst: np.ndarray | None = None   # registers a memory op leaves pending
    passes: int = 0
    mfma_kind: str = ""
    pipe_busy: int = 0                # MFMA: wait states the matrix pipe holds it (0: back-pressure not modelled)
    need: np.ndarray | None = None    # (rules,) wait states this op's writes require before each rule's reader
    fid: int = 0                      # index into the program's per-writer tables (0: never written, 1: the ABI)
    hz_k: np.ndarray | None = None    # the hazard rules this instruction is a reader of, one per register in
    hz_regs: np.ndarray | None = None  # hz_regs (registers read, or written for WAW/WAR rules)
    war_k: int = -1                   # the wide-store WAR rule, when this instruction writes VGPRs
    war_regs: np.ndarray | None = None


def _regs_of(op, size: int, ops) -> list[int]:
    if isinstance(op, SrcMods):
        op = op.operand
    if not isinstance(op, Reg):
        return []
    if op.kind in ("v", "a"):
        n = op.count   # the syntax spells every register a VGPR operand covers (v[0:1] for 64 bits)
        base = VREG_BASE + (ops.agpr_base if op.kind == "a" else 0) + op.index
        return list(range(base, base + n))
    if op.kind.startswith("src_") or op.kind in ("scc", "execz", "vccz"):
        return []
    slot = ops.sgpr_slot(op)
    if slot is None:
        return []
    n = op.count
    return [slot + i for i in range(n) if slot + i < SGPR_SLOTS]


def _hwreg_id(op) -> int | None:
    if isinstance(op, Imm) and isinstance(op.value, int):
        return op.value & 0x3F
    return None


def instruction_facts(d, ops, facts, profile, rules: Sequence[HazardRule]) -> Facts:
    """What strict mode needs of one decoded instruction, from the spec's operand descriptions; its counters and
    hazard classes are the direct generator's emitter's (`facts`, isa.hazards.EmitFacts)."""
    inst = d.spec_inst
    f = Facts(d.pc, d.text, np.zeros(0, np.int64), np.zeros(0, np.int64))
    if inst is None or d.inst is None:
        return f
    name = inst.name.upper()
    group = (inst.functional_group or "").upper()
    reads: list[int] = []
    writes: list[int] = []
    by_field: dict[str, list[int]] = {}
    by_format: dict[str, list[int]] = {}
    data: list[int] = []
    data_bits = 0
    for o, a in d.operand_pairs():
        if isinstance(a, Counters):
            parts = dict(a.parts)
            f.waitcnt = (parts.get("vmcnt"), parts.get("lgkmcnt"))
            continue
        ot = (o.operand_type or "").upper()
        if name in HWREG_WRITERS | HWREG_READERS and ot == "OPR_SIMM16":
            hw = _hwreg_id(a)
            if hw is not None:
                (writes if name in HWREG_WRITERS else reads).append(SGPR_SLOTS + hw)
            continue
        regs = _regs_of(a, o.size or 32, ops)
        if o.output:
            writes += regs
        # both for an operand the spec says is read and written: the permlane swaps' two VGPRs, a sparse MFMA's VDST
        # (also its C, CDNA 3/4 ISA guide "Sparse Matrices"), a returning atomic's data
        if o.input or not o.output:
            reads += regs
            if o.field_name:
                by_field.setdefault(o.field_name.upper(), []).extend(regs)
            by_format.setdefault(o.data_format or "", []).extend(regs)
            if o.field_name in ("DATA", "VDATA", "DATA0", "DATA1") and group in ("VMEM", "SMEM"):
                data += regs
                data_bits += o.size or 32
    gpumem_out = any((o.operand_type or "") == "OPR_GPUMEM" and o.output for o in d.implicit_operands())
    dsmem_out = any((o.operand_type or "") == "OPR_DSMEM" and o.output for o in d.implicit_operands())
    dsmem_in = any((o.operand_type or "") == "OPR_DSMEM" and not o.output for o in d.implicit_operands())
    for o in d.implicit_operands():
        if (o.operand_type or "") == "OPR_SDST_EXEC":
            (writes if o.output else reads).extend([ops.slots["exec_lo"], ops.slots["exec_lo"] + 1])
    f.reads = np.array(sorted(set(reads)), np.int64)
    f.writes = np.array(sorted(set(writes)), np.int64)
    f.reads_by_field = {k: np.array(sorted(set(v)), np.int64) for k, v in by_field.items()}
    f.reads_by_format = {k: np.array(sorted(set(v)), np.int64) for k, v in by_format.items()}
    classes = set(facts.classes_of(inst))
    if "valu" in classes and writes_part_of_vgpr(d):
        classes.add("dst_sel")
    if "mfma" in classes:
        formats = (int(d.modifier("cbsz", 0) or 0), int(d.modifier("blgp", 0) or 0))
        f.passes, f.mfma_kind = mfma_timing(inst, profile, formats)
        f.pipe_busy = hz.mfma_pipe_busy(f.passes, f.mfma_kind, profile)
    f.classes = frozenset(classes)
    f.counters = facts.counters_of(inst)
    if f.counters:
        f.lgkm_any_order = "lgkmcnt" in f.counters and (group == "SMEM" or "vmcnt" in f.counters)
        f.to_lds = bool(d.modifier("lds"))
        if gpumem_out:
            f.store_data = np.array(sorted(set(data)), np.int64)
            # LLVM createsVALUHazard: MUBUF/MTBUF/FLAT stores of more than 64 bits; a MUBUF/MTBUF store whose
            # SOFFSET is a register has no hazard ("this hazard only exists if the instruction is not using a
            # register in the soffset field"), as AMD's hand-written aiter GEMM epilogues rely on
            f.wide_store = "vmem" in classes and data_bits > 64 and not len(by_field.get("SOFFSET", ()))
            f.scalar_store = group == "SMEM"
        f.lds_write = dsmem_out or f.to_lds
        f.lds_read = dsmem_in
        f.lds_atomic = dsmem_in and dsmem_out
        pend = [r for r in f.writes if r >= VREG_BASE or r < SGPR_SLOTS]
        if "ATOMIC" in name and not (d.modifier("sc0") or d.modifier("glc")):
            # an atomic without SC0/GLC returns nothing (semantics.buffer._atomic): its data registers are only
            # read, as a store's, and may be rewritten after issue (the store-data wait states still apply)
            quiet = set(data)
            pend = [r for r in pend if r not in quiet]
            f.writes = np.array([r for r in f.writes if r not in quiet], np.int64)
        f.pending_dst = np.array(pend, np.int64)
    if name == "S_NOP":
        imm = d.inst.operands[0] if d.inst.operands else Imm(0)
        f.nop = int(imm.value) & 0xF if isinstance(imm, Imm) and isinstance(imm.value, int) else 0
    f.barrier = name == "S_BARRIER"
    f.endpgm = bool(inst.is_program_terminator)
    f.dcache_wb = name == "S_DCACHE_WB"
    # the wait states later readers need after this instruction's writes, one per rule
    need = np.zeros(len(rules), np.int64)
    for i, r in enumerate(rules):
        if r.writer in classes and r.writer != "wide_store":
            need[i] = r.required(f.passes, f.mfma_kind)
    f.need = need
    return f


def writes_part_of_vgpr(d) -> bool:
    """Whether a decoded VALU writes only a part of its destination VGPR other than what a plain write covers,
    the producers of LLVM's dst-sel forwarding hazard (GCNHazardRecognizer getDstSelForwardingOperand: SDWA with
    dst_sel != DWORD; a VOP3 whose op_sel destination bit picks the high half; a conversion writing the byte
    op_sel[3:2] selects with op_sel[2] set; CDNA 4 ISA guide 7.3: these conversions "do not support 4-cycle
    forwarding ... the user must insert a NOP or instruction writing some other destination VREG"). The part is
    the spec's: a destination operand narrower than 32 bits (8: a byte, 16: a half). The fp4 stochastic-rounding
    conversions, which LLVM treats as producers for every op_sel, are not singled out (the emulator refuses them)."""
    dst_sel = d.modifier("dst_sel")
    if dst_sel is not None:
        return str(dst_sel).upper() != "DWORD"
    op_sel = tuple(int(x) for x in (d.modifier("op_sel") or ()))
    if not op_sel:
        return False
    pairs = d.operand_pairs()
    dst = next((o for o, _a in pairs if o.output and o.field_name == "VDST"), None)
    if dst is None or (dst.size or 32) >= 32:
        return False
    sources = sum(1 for o, _a in pairs if not o.output)
    if len(op_sel) == sources + 1 and op_sel[-1]:
        return True                                  # the destination bit: the high half (or byte 2/3)
    return (dst.size or 32) == 8 and len(op_sel) > 2 and bool(op_sel[2])   # a byte select's low bit


def _file_mask(regs: np.ndarray, kind: str) -> np.ndarray:
    if kind == "vgpr":
        return regs >= VREG_BASE
    if kind == "sgpr":
        return regs < SGPR_SLOTS
    if kind == "hwreg":
        return (regs >= SGPR_SLOTS) & (regs < VREG_BASE)
    return np.ones(len(regs), np.bool_)


def _where(reg: int, ops) -> str:
    if reg >= VREG_BASE:
        i = reg - VREG_BASE
        return f"a{i - ops.agpr_base}" if i >= ops.agpr_base else f"v{i}"
    if reg >= SGPR_SLOTS:
        return f"hwreg {reg - SGPR_SLOTS}"
    for name, slot in ops.slots.items():
        if slot == reg and not name.endswith("_hi"):
            return name
    return f"s{reg}"


# --- the checker ------------------------------------------------------------------------------------------

class Strict:
    """Per-launch strict state. The engine calls `before(facts, w)` ahead of running an instruction for waves
    `w`, `after(facts, w)` once it ran, and `lds(...)` for every LDS access."""

    def __init__(self, prog, ctx, *, level: str = "on", schedule: str = "lockstep", seed: int = 0,
                 initialized_sgprs: int = 0) -> None:
        self.prog = prog
        self.ctx = ctx
        self.kernel = ctx.kernel
        self.level = level                 # "on", "all" (uninitialized reads refused) or "off" (schedule only)
        self.checking = level != "off"
        self.random = schedule == "random"
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.facts, self.rules, self.ops, self.texts, self.hazard_gap = program_facts(prog)
        if self.hazard_gap and self.checking:
            text = f"strict: kernel {self.kernel!r}: hazards NOT checked: {self.hazard_gap}"
            self.warnings_first = [text]
            warnings.warn(text, StrictWarning, stacklevel=4)
        else:
            self.warnings_first = []
        st = ctx.st
        n = st.count
        regs = VREG_BASE + st.v.shape[1]
        self.n, self.regs = n, regs
        # memory counters: issue numbers, and what is known complete
        self.vm_issued = np.zeros(n, np.int64)
        self.vm_done = np.zeros(n, np.int64)
        self.lds_issued = np.zeros(n, np.int64)
        self.lds_done = np.zeros(n, np.int64)
        self.vm_seq = np.full((n, regs), -1, np.int64)
        self.lds_seq = np.full((n, regs), -1, np.int64)
        self.any_pend = np.zeros((n, regs), np.bool_)
        self.any_count = np.zeros(n, np.int64)
        self.pend_lanes = np.zeros((n, regs), np.uint64)
        self.pend_pc = np.full((n, regs), -1, np.int64)
        # hazards
        self.ws = np.zeros(n, np.int64)
        self.pipe_free = np.full(n, NEVER, np.int64)         # first wait state the matrix pipe takes a new MFMA
        self.pipe_stalls = np.zeros(n, np.int64)             # wait states each wave stalled for the matrix pipe
        self.w_ws = np.full((n, regs), NEVER, np.int64)
        self.w_id = np.zeros((n, regs), np.int32)            # last writer's fid (0: none, 1: the launch ABI)
        ids = len(self.facts) + 2
        self.need_of = np.zeros((max(len(self.rules), 1), ids), np.int64)   # (rule, writer fid) -> wait states
        self.pc_of = np.full(ids, -1, np.int64)
        for fx in self.facts.values():
            if len(self.rules) and fx.need is not None:   # None: a data word in the code (never run)
                self.need_of[:, fx.fid] = fx.need
            self.pc_of[fx.fid] = fx.pc
        self.any_wide_store = False
        self.pending = np.zeros((n, regs), np.bool_)         # some memory result for the register is outstanding
        self.all_waves = np.arange(n)
        self.war_ws = np.full((n, regs), NEVER, np.int64)   # wide store data reads (WAR)
        self.war_pc = np.full((n, regs), -1, np.int64)
        self.war_rules = [i for i, r in enumerate(self.rules) if r.writer == "wide_store"]
        self.scalar_stores = np.zeros(n, np.int64)
        # LDS
        self.epoch = np.zeros(n, np.int64)
        size = (ctx.lds.data.size + 3) // 4 if hasattr(ctx.lds, "data") else 0   # dwords of LDS
        self.lds_wr_wave = np.full(size, -1, np.int32)
        self.lds_wr_epoch = np.full(size, -1, np.int32)
        self.lds_wr_pc = np.full(size, -1, np.int32)
        self.lds_wr_mask = np.zeros(size, np.int8)
        self.lds_rd_wave = np.full(size, -1, np.int32)
        self.lds_rd_epoch = np.full(size, -1, np.int32)
        self.lds_rd_pc = np.full(size, -1, np.int32)
        # every reader of a dword per wave of its workgroup (the PC and epoch of its last read), so a write after
        # a read knows which waves' reads it races with and which registers they loaded
        self.wpg = int(st.wave_in_group.max()) + 1 if n else 1
        self.lds_rd_pcw = np.full((size, self.wpg), -1, np.int32)
        self.lds_rd_epw = np.full((size, self.wpg), -1, np.int32)
        # LDS read results: a race matters only when the value read is used (see `_write_after_read`)
        self.track_values = any(fx.lds_read and not fx.lds_write for fx in self.facts.values())
        self.val_pc = np.full((n, regs), -1, np.int32)      # the LDS read whose result the register holds
        self.val_used = np.zeros((n, regs), np.bool_)       # ... read by a later instruction since
        self.val_dead = np.full((n, regs), -1, np.int32)    # the last LDS read whose result was overwritten unused
        self.taint = np.zeros((n, regs), np.bool_)          # holds a value an LDS race may have changed
        self.taint_info: dict[tuple[int, int], tuple[int, int, str]] = {}   # (wave, reg) -> (PC, other wave, what)
        self.any_taint = False
        self._staged: list[tuple[int, np.ndarray, tuple[int, int, str]]] = []
        self.lds_dma_wave = np.full(size, -1, np.int32)
        self.lds_dma_seq = np.full(size, -1, np.int64)
        self.lds_dma_epoch = np.full(size, -1, np.int64)    # the issuing wave's barrier epoch at issue
        self.lds_dma_pc = np.full(size, -1, np.int64)       # the load-to-LDS's PC (for the message)
        self.lds_init = np.zeros(size, np.int8)
        self.any_dma = False
        self.pending_lds_writes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []   # (waves, seqs, bytes)
        self.warned: set[tuple[int, int]] = set()
        self.warnings: list[str] = []
        # delayed results (random schedules): per wave, [(due, counter, seq, regs, values)]
        self.delayed: list[list] = [[] for _ in range(n)] if self.random else []
        self.cur_facts: Facts | None = None
        self.mark_initialized(initialized_sgprs)

    # ----- setup -----------------------------------------------------------------------------------------
    def mark_initialized(self, sgprs: int) -> None:
        """What the launch wrote before the first instruction: user/system SGPRs, EXEC, v0 (work-item ids)."""
        self.w_id[:, :sgprs] = 1
        ex = self.ops.slots["exec_lo"]
        self.w_id[:, [ex, ex + 1]] = 1
        self.w_id[:, VREG_BASE] = 1
        self.w_id[:, SGPR_SLOTS:VREG_BASE] = 1   # hardware registers always hold a value

    # ----- helpers -----------------------------------------------------------------------------------------
    def _waves(self, w) -> np.ndarray:
        return self.all_waves[w] if isinstance(w, slice) else np.asarray(w)

    def _exec(self, waves) -> np.ndarray:
        return self.ctx.st.exec64(waves)

    def _fail(self, rule: str, wave: int, lanes: int, reg: int | None, first_pc: int, second: Facts, detail: str,
              where: str | None = None):
        if not self.checking:
            return
        first = (first_pc, self.texts.get(first_pc, "?")) if first_pc >= 0 else None
        raise StrictViolation(self.kernel, rule, int(wave), int(lanes), where or _where(reg, self.ops), first,
                              (second.pc, second.text), detail)

    # ----- one instruction ------------------------------------------------------------------------------------
    def step(self, op, w) -> None:
        """Check, run and account one instruction for waves `w` (the engine's hook)."""
        f = self.facts[op.pc]
        waves = self._waves(w)
        self.before(f, waves)
        ex = self.ctx.st.exec64(waves).copy() if f.counters else None
        hold = self.random and f.counters and f.pending_dst is not None and len(f.pending_dst) > 0
        old = self.snapshot(f, waves) if hold else None
        op.run(self.ctx, w)
        if hold:
            self.hold_results(f, waves, old)
        self.after(f, waves, ex)

    def before(self, f: Facts, waves: np.ndarray) -> None:
        self.cur_facts = f
        if f.pipe_busy:   # the wave stalls until the matrix pipe takes this MFMA (profile mfma.next_issue)
            stall = np.maximum(self.pipe_free[waves] - self.ws[waves], 0)
            self.pipe_stalls[waves] += stall
            self.ws[waves] += stall
        if self.random:
            self._deliver_due(waves)
        if not self.checking:
            if f.waitcnt is not None:
                self._waitcnt(waves, *f.waitcnt)
            if f.endpgm:
                self._waitcnt(waves, 0, 0)
            return
        if f.waitcnt is not None:
            self._waitcnt(waves, *f.waitcnt)
        if f.endpgm:
            self._waitcnt(waves, 0, 0)
            if self.scalar_stores[waves].any():
                i = int(np.argmax(self.scalar_stores[waves] > 0))
                self._fail("scalar store not written back at the end", waves[i], ALL_LANES, None, -1, f,
                           "S_ENDPGM with scalar stores not followed by S_DCACHE_WB (AMDGPUUsage: scalar memory "
                           "stores must be written back before the kernel ends)", where="scalar cache")
        if f.dcache_wb:
            self.scalar_stores[waves] = 0
        if f.barrier:
            self._barrier(waves)
        wi = waves[:, None]
        if len(f.reads) and self.pending[wi, f.reads].any():
            self._check_pending(waves, f.reads, self._exec(waves), f,
                                "reads a register a memory operation has not returned yet")
        if len(f.writes) and self.pending[wi, f.writes].any():
            self._check_pending(waves, f.writes, self._exec(waves), f, "overwrites a register a memory operation "
                                "has not returned yet (the late result would land on top)", writing=True)
        if self.track_values and len(f.reads):
            if self.any_taint and self.taint[wi, f.reads].any():
                self._use_of_raced_value(waves, f)
            self.val_used[wi, f.reads] = True
        if len(f.hz_regs):
            self._check_hazards(waves, f)
        if f.war_k >= 0 and self.any_wide_store and len(f.war_regs):
            self._check_war(waves, f)
        if len(f.reads) and not self.w_id[wi, f.reads].all():
            self._check_init(waves, f)

    def _check_pending(self, waves, regs, ex, f: Facts, what: str, writing: bool = False) -> None:
        vm = self.vm_seq[waves[:, None], regs] >= self.vm_done[waves, None]
        lg = self.lds_seq[waves[:, None], regs] >= self.lds_done[waves, None]
        pend = vm | lg | self.any_pend[waves[:, None], regs]
        if not pend.any():
            return
        if writing and f.counters:
            # a later load on the same in-order counter lands after the earlier one: no WAW hazard
            same = np.zeros_like(pend)
            other = self.any_pend[waves[:, None], regs]
            if "vmcnt" in f.counters and not f.lgkm_any_order:
                same |= vm & ~lg & ~other
            elif "lgkmcnt" in f.counters and not f.lgkm_any_order:   # LDS after LDS: in order too
                same |= lg & ~vm & ~other
            pend &= ~same
        lanes = self.pend_lanes[waves[:, None], regs] & (ex[:, None] if not (regs < VREG_BASE).all() else ALL_LANES)
        lanes = np.where(regs[None, :] >= VREG_BASE, lanes, self.pend_lanes[waves[:, None], regs])
        hit = pend & (lanes != 0)
        if hit.any():
            i, j = np.argwhere(hit)[0]
            r = int(regs[j])
            self._fail("missing s_waitcnt", waves[i], int(lanes[i, j]), r, int(self.pend_pc[waves[i], r]), f, what)

    def _check_hazards(self, waves, f: Facts) -> None:
        wi = waves[:, None]
        ids = self.w_id[wi, f.hz_regs]
        need = self.need_of[f.hz_k[None, :], ids]
        if not need.any():
            return
        gap = self.ws[waves, None] - self.w_ws[wi, f.hz_regs] - 1
        bad = gap < need
        if bad.any():
            i, j = np.argwhere(bad)[0]
            reg = int(f.hz_regs[j])
            r = self.rules[int(f.hz_k[j])]
            self._fail("hazard", waves[i], int(self._exec(waves)[i]), reg, int(self.pc_of[ids[i, j]]), f,
                       f"{r.writer} -> {r.reader} {r.access} needs {int(need[i, j])} wait states, "
                       f"{int(gap[i, j])} given{self._stall_note(waves[i])} ({r.source})")

    def _stall_note(self, wave) -> str:
        return " (an MFMA's matrix-pipe stall counted, mfma.next_issue)" if self.pipe_stalls[int(wave)] else ""

    def _check_war(self, waves, f: Facts) -> None:
        r = self.rules[f.war_k]
        regs = f.war_regs
        gap = self.ws[waves, None] - self.war_ws[waves[:, None], regs] - 1
        bad = gap < r.wait_states
        if bad.any():
            i, j = np.argwhere(bad)[0]
            reg = int(regs[j])
            self._fail("hazard", waves[i], int(self._exec(waves)[i]), reg, int(self.war_pc[waves[i], reg]), f,
                       f"a store with more than 64 bits of data still reads its data registers: {r.wait_states} "
                       f"wait states required, {int(gap[i, j])} given ({r.source})")

    def _check_init(self, waves, f: Facts) -> None:
        ok = self.w_id[waves[:, None], f.reads] != 0
        if ok.all():
            return
        i, j = np.argwhere(~ok)[0]
        reg = int(f.reads[j])
        msg = f"reads {_where(reg, self.ops)} before anything wrote it"
        if self.level == "all":
            self._fail("uninitialized read", waves[i], int(self._exec(waves)[i]), reg, -1, f, msg)
        key = (f.pc, reg)
        if key not in self.warned:
            self.warned.add(key)
            text = f"strict: kernel {self.kernel!r}, wave {int(waves[i])}: PC 0x{f.pc:x} {f.text}: {msg}"
            self.warnings.append(text)
            warnings.warn(text, StrictWarning, stacklevel=4)

    # ----- counters ---------------------------------------------------------------------------------------
    def _waitcnt(self, waves, vm: int | None, lgkm: int | None) -> None:
        if vm is not None:
            self.vm_done[waves] = np.maximum(self.vm_done[waves], self.vm_issued[waves] - vm)
        if lgkm is not None:
            self.lds_done[waves] = np.maximum(self.lds_done[waves], self.lds_issued[waves] - lgkm)
            if lgkm == 0:
                zero = waves[self.any_count[waves] > 0]
                if len(zero):
                    self.any_pend[zero] = False
                    self.any_count[zero] = 0
        self.pending[waves] = ((self.vm_seq[waves] >= self.vm_done[waves, None])
                               | (self.lds_seq[waves] >= self.lds_done[waves, None]) | self.any_pend[waves])
        if self.random:
            self._deliver_covered(waves)
        if self.pending_lds_writes:
            self._retire_lds_writes()

    def _barrier(self, waves) -> None:
        # LDS stores still pending belong to the epoch after the barrier (nothing orders them yet)
        if self.pending_lds_writes:
            keep = []
            for pw, seqs, offs in self.pending_lds_writes:
                here = np.isin(pw, waves) & (seqs >= self.lds_done[pw])
                if here.any():
                    sel = offs[here].ravel()
                    self.lds_wr_epoch[sel] = np.maximum(self.lds_wr_epoch[sel], self.epoch[pw[here]].repeat(
                        offs.shape[1]) + 1)
                keep.append((pw, seqs, offs))
            self.pending_lds_writes = keep
        self.epoch[waves] += 1

    def _retire_lds_writes(self) -> None:
        keep = []
        for pw, seqs, offs in self.pending_lds_writes:
            alive = seqs >= self.lds_done[pw]
            if alive.any():
                keep.append((pw[alive], seqs[alive], offs[alive]))
        self.pending_lds_writes = keep

    # ----- after an instruction ran ---------------------------------------------------------------------------
    def after(self, f: Facts, waves, ex: np.ndarray) -> None:
        n_writes = len(f.writes)
        if f.counters and not f.endpgm:
            seq_vm = self.vm_issued[waves]
            seq_lds = self.lds_issued[waves]
            if "vmcnt" in f.counters:
                self.vm_issued[waves] += 1
            if "lgkmcnt" in f.counters and not f.lgkm_any_order:
                self.lds_issued[waves] += 1
            dst = f.pending_dst
            if dst is not None and len(dst):
                wi = waves[:, None]
                if "vmcnt" in f.counters:
                    self.vm_seq[wi, dst] = seq_vm[:, None]
                elif not f.lgkm_any_order:
                    self.lds_seq[wi, dst] = seq_lds[:, None]
                if f.lgkm_any_order:
                    self.any_pend[wi, dst] = True
                    self.any_count[waves] += 1
                lanes = np.where(dst[None, :] >= VREG_BASE, ex[:, None], ALL_LANES)
                self.pend_lanes[wi, dst] = lanes
                self.pend_pc[wi, dst] = f.pc
                self.pending[wi, dst] = True
            elif f.lgkm_any_order:
                self.any_count[waves] += 1
            if f.scalar_store:
                self.scalar_stores[waves] += 1
            if f.store_data is not None and f.wide_store and len(f.store_data):
                self.any_wide_store = True
                self.war_ws[waves[:, None], f.store_data] = self.ws[waves, None]
                self.war_pc[waves[:, None], f.store_data] = f.pc
        if self.track_values and (n_writes or self._staged):
            self._track_values(f, waves)
        if n_writes:
            wi = waves[:, None]
            self.w_ws[wi, f.writes] = self.ws[waves, None]
            self.w_id[wi, f.writes] = f.fid
        if f.pipe_busy:
            self.pipe_free[waves] = self.ws[waves] + f.pipe_busy
        self.ws[waves] += 1 + f.nop

    # ----- LDS ----------------------------------------------------------------------------------------------
    def lds(self, waves_sel: np.ndarray, lanes_sel: np.ndarray, offs: np.ndarray, nbytes: int, d) -> None:
        """An LDS access by (wave, lane) pairs at byte offsets `offs` into the launch's LDS store.

        The shadow state is kept per dword with a mask of the bytes each record covers, so a dword-aligned access
        of 4, 8 or 16 bytes costs one entry per dword; other accesses take one entry per byte."""
        self._lanes = (np.asarray(waves_sel, np.int64), np.asarray(lanes_sel, np.int64))
        f = self.cur_facts
        if f is None or f.pc != d.pc:
            f = self.facts[d.pc]
        offs = np.asarray(offs, np.int64)
        if not offs.size:   # no lane enabled (a random schedule may run a group whose EXEC is empty): no access
            return
        lane_wave = np.asarray(waves_sel, np.int64)
        if nbytes % 4 == 0 and not (offs & 3).any():
            per = nbytes // 4
            unit = ((offs >> 2)[:, None] + np.arange(per)).ravel() if per > 1 else offs >> 2
            mask = np.int8(0xF)
        else:
            per = nbytes
            byte = ((offs)[:, None] + np.arange(nbytes)).ravel()
            unit = byte >> 2
            mask = (np.int8(1) << (byte & 3)).astype(np.int8)
        wave = np.repeat(lane_wave, per) if per > 1 else lane_wave
        ep = np.repeat(self.epoch[lane_wave], per) if per > 1 else self.epoch[lane_wave]
        if self.any_dma:   # dwords a pending load-to-LDS of some wave still has to write
            dma = self.lds_dma_wave[unit]
            has = dma >= 0
            if has.any():
                pend = has & (self.lds_dma_seq[unit] >= self.vm_done[np.where(has, dma, 0)])
                own = pend & (dma == wave)
                if f.to_lds and own.any():
                    # a load-to-LDS after the same wave's pending one: vmcnt returns in issue order (CDNA3 ISA
                    # guide 4.4, VM_CNT "Memory reads and writes return in the order they were issued"), and LLVM's
                    # SIInsertWaitcnts puts no wait there ("No need to wait before load from VMEM to LDS")
                    pend &= ~own
                elif f.lds_write and not f.lds_read and pend.any():
                    pend &= ~self._late_dma_overwrite(unit, wave, pend, f)
                elif f.lds_read and not f.lds_write and pend.any():
                    # the bytes read may be the load's or the older ones: as an LDS race, a violation only if the
                    # value is used (`_use_of_raced_value`); the 192x128 I8gemm's epilogue reads staged rows past M
                    # this way and never stores them
                    for wv in np.unique(wave[pend]):
                        i = int(np.argmax(pend & (wave == wv)))
                        self._staged.append((int(wv), f.pending_dst if f.pending_dst is not None else f.writes,
                                             (-1, int(dma[i]), f"reads LDS byte 0x{int(unit[i]) * 4:x} that a buffer "
                                              f"load-to-LDS of wave {int(dma[i])} has not written yet (vmcnt; PC "
                                              f"0x{f.pc:x} {f.text})")))
                    pend[:] = False
                if pend.any():
                    i = int(np.argmax(pend))
                    u, src = int(unit[i]), int(dma[i])
                    same = "" if self.epoch[int(wave[i])] > self.lds_dma_epoch[u] else ", no s_barrier between"
                    self._fail("missing s_waitcnt", wave[i], self._lane_mask(wave[i]), None, int(self.lds_dma_pc[u]), f,
                               f"touches LDS bytes a buffer load-to-LDS of wave {src} has not written yet (no "
                               f"s_waitcnt vmcnt covers it{same}: it may land after this access)",
                               where=f"LDS byte 0x{u * 4:x}")
                if f.lds_write:   # a read leaves the load pending: a later write over it is still checked
                    self.lds_dma_wave[unit[has]] = -1
        if f.lds_atomic:
            self._or_mask(self.lds_init, unit, mask)
            return
        if not f.lds_write:
            # a read of bytes another wave wrote in the same barrier epoch. Two waves writing the same bytes is
            # not flagged by itself: Triton stores replicated values from several waves; a later read by a wave
            # that did not write them is, and a randomized schedule exposes writes that differ.
            wr = self.lds_wr_wave[unit]
            clash = (self.lds_wr_epoch[unit] >= ep) & (wr != wave) & ((self.lds_wr_mask[unit] & mask) != 0)
            if clash.any():
                # the value read may be the other wave's or the older one: a race only if this wave uses it
                for wv in np.unique(wave[clash]):
                    i = int(np.argmax(clash & (wave == wv)))
                    self._staged.append((int(wv), f.pending_dst if f.pending_dst is not None else f.writes,
                                         (int(self.lds_wr_pc[unit[i]]), int(wr[i]),
                                          f"reads LDS byte 0x{int(unit[i]) * 4:x} wave {int(wr[i])} wrote with no "
                                          f"s_barrier between (PC 0x{f.pc:x} {f.text})")))
            lw = self.ctx.st.wave_in_group[wave]
            self.lds_rd_pcw[unit, lw] = f.pc
            self.lds_rd_epw[unit, lw] = ep
            prev = self.lds_rd_wave[unit]
            many = (self.lds_rd_epoch[unit] >= ep) & (prev != wave) & (prev != -1)
            self.lds_rd_wave[unit] = np.where(many, -2, wave)
            self.lds_rd_epoch[unit] = ep
            self.lds_rd_pc[unit] = f.pc
            init = self.lds_init[unit]
            if ((init & mask) != mask).any():
                i = int(np.argmax((init & mask) != mask))
                self._uninit_lds(wave[i], int(unit[i]) * 4, f)
            return
        rd = self.lds_rd_wave[unit]
        clash = (self.lds_rd_epoch[unit] >= ep) & (rd != wave) & (rd != -1)
        if clash.any():
            self._write_after_read(unit[clash], wave[clash], ep[clash], f)
        self.lds_wr_wave[unit] = wave
        self.lds_wr_epoch[unit] = ep
        self.lds_wr_pc[unit] = f.pc
        if isinstance(mask, np.ndarray):   # several entries per dword: the masks accumulate
            self.lds_wr_mask[unit] = 0
            np.bitwise_or.at(self.lds_wr_mask, unit, mask)
        else:
            self.lds_wr_mask[unit] = mask
        self._or_mask(self.lds_init, unit, mask)
        if f.to_lds:
            self.any_dma = True
            self.lds_dma_wave[unit] = wave
            self.lds_dma_seq[unit] = self.vm_issued[wave]
            self.lds_dma_epoch[unit] = self.epoch[wave]
            self.lds_dma_pc[unit] = f.pc
        elif "lgkmcnt" in f.counters:
            self.pending_lds_writes.append((lane_wave, self.lds_issued[lane_wave].copy(),
                                            unit.reshape(len(offs), -1)))

    def _late_dma_overwrite(self, unit: np.ndarray, wave: np.ndarray, pend: np.ndarray, f: Facts) -> np.ndarray:
        """Which of `pend` (dwords a pending load-to-LDS of a wave of this workgroup still has to write, now
        overwritten by a DS write of `wave`) are accepted with a warning rather than refused.

        The ISA orders neither way: LLVM's SIInsertWaitcnts waits vmcnt before any LDS access a pending LDS DMA
        may alias ("MUBUF and FLAT LDS DMA operations need a wait on vmcnt before LDS written can be accessed"), so
        a late-landing load could overwrite the DS write. AMD's production aiter GEMMs for gfx942 (I8gemm
        perTokenI8, gemm_a8w8_m128) do exactly this on every launch: the K loop's last iteration prefetches a tile
        to LDS that nobody reads, and the epilogue stages C through the same bytes with no vmcnt wait, hundreds
        of issue slots and one or more s_barriers later. That is a timing assumption, not an ISA guarantee: it is
        accepted (with a StrictWarning naming it) only when an s_barrier lies between the load's issue and the
        overwrite in both waves' program order (the writer's barrier epoch is past the issuer's at issue; the
        192x128 I8gemm's epilogue overwrites another wave's prefetch that way); an overwrite in the same barrier
        epoch and any read of the bytes stay violations."""
        old = pend & (self.epoch[wave] > self.lds_dma_epoch[unit])
        if old.any():
            i = int(np.argmax(old))
            key = (f.pc, -2)
            if key not in self.warned:
                self.warned.add(key)
                text = (f"strict: kernel {self.kernel!r}, wave {int(wave[i])}: PC 0x{f.pc:x} {f.text}: overwrites LDS "
                        f"byte 0x{int(unit[i]) * 4:x} that a buffer load-to-LDS issued before an s_barrier may "
                        "still write (no s_waitcnt vmcnt): accepted as a timing assumption (LLVM would wait)")
                self.warnings.append(text)
                warnings.warn(text, StrictWarning, stacklevel=4)
        return old

    # ----- LDS races on values ----------------------------------------------------------------------------
    # Two waves touching the same LDS bytes with no s_barrier between them (a write and a read, in either order)
    # race: the reader may get the old bytes or the new ones. That changes the kernel's result only when the
    # reader uses the value: a register an LDS read filled and that is overwritten before any instruction reads
    # it cannot reach memory or another register (a load's result is only its destination registers; CDNA3 ISA
    # guide, "Data Share Operations"). AMD's hand-written aiter GEMMs (I8gemm, gemm_a8w8) rely on it: the main
    # loop's last iteration reads the next K tile from LDS speculatively, the values are dead when the loop exits,
    # and the epilogue stages C through the same bytes with no barrier between. So a race taints the reader's
    # destination registers, and the violation is raised when a tainted register is read (`_use_of_raced_value`).
    def _write_after_read(self, units: np.ndarray, writers: np.ndarray, eps: np.ndarray, f: Facts) -> None:
        """A write of LDS dwords `units` by waves `writers` that other waves read in the same barrier epoch."""
        st = self.ctx.st
        base = writers - st.wave_in_group[writers]
        rd_ep = self.lds_rd_epw[units]                          # (k, waves per group)
        lws = np.arange(self.wpg)
        racy = (rd_ep >= eps[:, None]) & (lws[None, :] != st.wave_in_group[writers][:, None]) & (rd_ep >= 0)
        if not racy.any():
            return
        k, lw = np.nonzero(racy)
        readers = base[k] + lw
        pcs = self.lds_rd_pcw[units[k], lw]
        seen = set()
        for j in range(len(k)):
            key = (int(readers[j]), int(pcs[j]))
            if key in seen:
                continue
            seen.add(key)
            reader, pc = key
            rf = self.facts.get(pc)
            regs = rf.pending_dst if rf is not None and rf.pending_dst is not None else np.zeros(0, np.int64)
            writer = int(writers[k[j]])
            byte = f"LDS byte 0x{int(units[k[j]]) * 4:x}"
            what = (f"wave {writer} overwrote {byte} it read with no s_barrier between "
                    f"(PC 0x{f.pc:x} {f.text})")
            live = self.val_pc[reader, regs] == pc
            used = live & self.val_used[reader, regs]
            dead = ~live & (self.val_dead[reader, regs] == pc)
            if used.any() or not (live | dead).all():
                self._fail("LDS race", reader, ALL_LANES, None, pc, f,
                           f"wave {writer} overwrites LDS bytes wave {reader} read (and used) with no "
                           "s_barrier between", where=byte)
            if live.any():
                self._taint(reader, regs[live], (pc, writer, what))

    def _taint(self, wave: int, regs: np.ndarray, info: tuple[int, int, str]) -> None:
        self.taint[wave, regs] = True
        self.any_taint = True
        for r in regs.tolist():
            self.taint_info[(wave, int(r))] = info

    def _track_values(self, f: Facts, waves: np.ndarray) -> None:
        """After an instruction: the registers it wrote hold an LDS read's result (or no longer do; an unused one
        is remembered as dead); then the taints this instruction's racing LDS reads staged."""
        if len(f.writes):
            wi = waves[:, None]
            regs = f.writes
            # a VGPR write under a partial EXEC leaves the other lanes' values: not an overwrite
            full = self._exec(waves) == ALL_LANES
            over = np.where(regs[None, :] >= VREG_BASE, full[:, None], True)
            cur = self.val_pc[wi, regs]
            unused = over & (cur >= 0) & ~self.val_used[wi, regs]
            self.val_dead[wi, regs] = np.where(unused, cur, self.val_dead[wi, regs])
            new = f.pc if (f.lds_read and not f.lds_write) else -1
            self.val_pc[wi, regs] = np.where(over | (new >= 0), new, cur)
            self.val_used[wi, regs] &= ~over
            if self.any_taint:
                self.taint[wi, regs] &= ~over
        staged, self._staged = self._staged, []
        for wv, regs, info in staged:
            if len(regs):
                self._taint(wv, regs, info)

    def _use_of_raced_value(self, waves: np.ndarray, f: Facts) -> None:
        hit = self.taint[waves[:, None], f.reads]
        i, j = np.argwhere(hit)[0]
        wave, reg = int(waves[i]), int(f.reads[j])
        first_pc, other, what = self.taint_info.get((wave, reg), (-1, -1, "an LDS race"))
        self._fail("LDS race", wave, ALL_LANES, reg, first_pc, f,
                   f"uses a value wave {wave} loaded from LDS in a race with wave {other}: {what}")

    @staticmethod
    def _or_mask(arr: np.ndarray, unit: np.ndarray, mask) -> None:
        if isinstance(mask, np.ndarray):
            np.bitwise_or.at(arr, unit, mask)
        else:
            arr[unit] |= mask

    def _lane_mask(self, wave: int) -> int:
        waves, lanes = self._lanes
        bits = 0
        for ln in lanes[waves == wave]:
            bits |= 1 << int(ln)
        return bits

    def _uninit_lds(self, wave: int, byte: int, f: Facts) -> None:
        msg = f"reads LDS byte 0x{byte:x} before anything wrote it"
        if self.level == "all":
            self._fail("uninitialized read", wave, self._lane_mask(wave), None, -1, f, msg,
                       where=f"LDS byte 0x{byte:x}")
        key = (f.pc, -1)
        if key not in self.warned:
            self.warned.add(key)
            text = f"strict: kernel {self.kernel!r}, wave {wave}: PC 0x{f.pc:x} {f.text}: {msg}"
            self.warnings.append(text)
            warnings.warn(text, StrictWarning, stacklevel=4)

    # ----- randomized schedules: delayed load results ---------------------------------------------------------
    def hold_results(self, f: Facts, waves, old: np.ndarray) -> None:
        """Move the registers a load just wrote back to `old` and queue the new values for later delivery."""
        st = self.ctx.st
        dst = f.pending_dst
        vregs = dst[dst >= VREG_BASE] - VREG_BASE
        sregs = dst[dst < SGPR_SLOTS]
        counter = "vmcnt" if "vmcnt" in f.counters else ("any" if f.lgkm_any_order else "lds")
        for i, wv in enumerate(waves):
            wv = int(wv)
            new_v = st.v[wv, vregs].copy() if len(vregs) else None
            new_s = st.s[wv, sregs].copy() if len(sregs) else None
            ov, os_ = old[0][i], old[1][i]
            if len(vregs):
                st.v[wv, vregs] = ov
            if len(sregs):
                st.s[wv, sregs] = os_
            seq = self.vm_issued[wv] if counter == "vmcnt" else self.lds_issued[wv] if counter == "lds" else -1
            queue = self.delayed[wv]
            due = int(self.ws[wv]) + int(self.rng.integers(1, 40))
            if counter != "any":   # in-order counters deliver in issue order
                due = max([due] + [q[0] for q in queue if q[1] == counter])
            queue.append((due, counter, seq, vregs, new_v, sregs, new_s))

    def snapshot(self, f: Facts, waves) -> tuple:
        st = self.ctx.st
        dst = f.pending_dst
        vregs = dst[dst >= VREG_BASE] - VREG_BASE
        sregs = dst[dst < SGPR_SLOTS]
        return (st.v[np.ix_(waves, vregs)].copy() if len(vregs) else [None] * len(waves),
                st.s[np.ix_(waves, sregs)].copy() if len(sregs) else [None] * len(waves))

    def _deliver(self, wv: int, keep) -> None:
        st = self.ctx.st
        out = []
        for item in self.delayed[wv]:
            if keep(item):
                out.append(item)
                continue
            _, _, _, vregs, new_v, sregs, new_s = item
            if new_v is not None:
                st.v[wv, vregs] = new_v
            if new_s is not None:
                st.s[wv, sregs] = new_s
        self.delayed[wv] = out

    def _deliver_due(self, waves) -> None:
        for wv in waves:
            wv = int(wv)
            if self.delayed[wv]:
                now = int(self.ws[wv])
                self._deliver(wv, lambda it, now=now: it[0] > now)

    def _deliver_covered(self, waves) -> None:
        for wv in waves:
            wv = int(wv)
            if not self.delayed[wv]:
                continue
            vm_done, lds_done, any_clear = self.vm_done[wv], self.lds_done[wv], self.any_count[wv] == 0

            def keep(it, vm_done=vm_done, lds_done=lds_done, any_clear=any_clear):
                counter, seq = it[1], it[2]
                if counter == "vmcnt":
                    return seq >= vm_done
                if counter == "lds":
                    return seq >= lds_done
                return not any_clear
            self._deliver(wv, keep)

    def finish(self, stats) -> None:
        if self.random:
            for wv in range(self.n):
                if self.delayed[wv]:
                    self._deliver(wv, lambda it: False)
        stats.warnings = self.warnings_first + list(self.warnings)
        if self.checking:
            stats.strict = (f"strict ({self.level}): passed; {len(self.warnings)} warning(s)"
                            + (f", schedule random seed {self.seed}" if self.random else "")
                            + (f"; hazards NOT checked ({self.hazard_gap})" if self.hazard_gap else ""))

    # ----- random interleaving ----------------------------------------------------------------------------
    def pick(self, running: np.ndarray, pcs: np.ndarray):
        """A random group to run next: one PC among the running waves', and a random non-empty subset of the
        waves there."""
        idx = np.flatnonzero(running)
        choice = int(self.rng.choice(idx))
        p = int(pcs[choice])
        at = idx[pcs[idx] == p]
        take = at[self.rng.random(len(at)) < 0.5]
        if not len(take):
            take = np.array([choice])
        return p, take


def strict_level(strict: bool | str, schedule: str) -> str | None:
    """The checker's level for `emulate(strict=..., schedule=...)`; None: no checker at all (plain run)."""
    if schedule not in ("lockstep", "random"):
        raise EmulatorError(f"schedule={schedule!r}: expected 'lockstep' or 'random'")
    if strict is True or strict == "on":
        return "on"
    if strict == "all":
        return "all"
    if strict is False or strict is None or strict == "off":
        return "off" if schedule == "random" else None
    raise EmulatorError(f"strict={strict!r}: expected True, False or 'all'")


def _reader_tables(f: Facts, rules: Sequence[HazardRule]) -> None:
    """The (rule, register) pairs an instruction must be checked on as a reader, flattened for one gather."""
    ks: list[int] = []
    regs: list[int] = []
    f.war_regs = np.zeros(0, np.int64)
    for k, r in enumerate(rules):
        if r.reader not in f.classes:
            continue
        if r.writer == "wide_store":
            if r.access == "write" and len(f.writes):
                f.war_k = k
                f.war_regs = f.writes[_file_mask(f.writes, r.regs)]
            continue
        if r.access == "write":
            cand = f.writes
        elif r.fields:
            parts = [f.reads_by_field[x] for x in r.fields if x in f.reads_by_field]
            cand = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        else:
            cand = f.reads
        if r.except_formats and len(cand):
            # registers read only through operands of the excepted formats (a lane mask) leave the rule
            only = {x for fmt, regs in f.reads_by_format.items() if fmt in r.except_formats for x in regs.tolist()}
            other = {x for fmt, regs in f.reads_by_format.items() if fmt not in r.except_formats for x in regs.tolist()}
            cand = np.array([x for x in cand.tolist() if x not in only or x in other], np.int64)
        cand = cand[_file_mask(cand, r.regs)] if len(cand) else cand
        ks += [k] * len(cand)
        regs += [int(x) for x in cand]
    f.hz_k = np.array(ks, np.int64)
    f.hz_regs = np.array(regs, np.int64)


def program_facts(prog) -> tuple[dict[int, Facts], tuple[HazardRule, ...], object, dict[int, str], str | None]:
    """The facts of every instruction of a program, made once per program (cached on it), by the target
    profile of the program's spec: its hazard table, wait counters and MFMA passes; the last item says why the
    hazard table is left out (`hazard_gap`), or is None."""
    cached = getattr(prog, "_strict_facts", None)
    if cached is not None:
        return cached
    from jitgemm.isa.spec.targets import target_of_spec, target_profile

    from .operands import Operands

    profile = target_profile(target_of_spec(prog.spec))
    gap = hazard_gap(profile)
    rules = () if gap else profile.hazard_rules
    ops = Operands(prog.spec, prog.slots, prog.vgprs)
    emit = emit_facts(prog.spec, profile)
    facts = {d.pc: instruction_facts(d, ops, emit, profile, rules) for d in prog.decoded}
    for i, f in enumerate(facts.values()):
        f.fid = i + 2
        _reader_tables(f, rules)
    texts = {d.pc: d.text for d in prog.decoded}
    prog._strict_facts = (facts, rules, ops, texts, gap)
    return prog._strict_facts


__all__ = ["Strict", "StrictViolation", "StrictWarning", "WAVE", "instruction_facts", "mfma_timing"]
