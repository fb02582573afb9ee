"""Building instruction lists for the direct generator: register allocation and `s_waitcnt` insertion.

The emitter records, for every memory instruction, which counter it uses (vmcnt for vector memory,
lgkmcnt for LDS and scalar memory; which encoding counts where comes from the target profile) and which
registers it will write. Before an instruction reads or overwrites such a register, the smallest wait that
guarantees the value has arrived is inserted: vector memory and LDS return in order, scalar memory does not
(so a pending scalar load forces lgkmcnt(0)). Generators never write `s_waitcnt` by hand except at
barriers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jitgemm.isa.instruction import AsmInstruction, Counters, Imm, Label, LabelDef, Reg, SrcMods

# Largest counts the gfx9 s_waitcnt fields hold (vmcnt 6 bits, lgkmcnt 4 bits; OPR_WAITCNT in the spec).
MAX_COUNT = {"vmcnt": 63, "lgkmcnt": 15}

RegKey = tuple[str, int]


def reg_keys(operand) -> set[RegKey]:
    """The (kind, index) pairs a numbered register operand covers; named registers count as themselves."""
    if isinstance(operand, SrcMods):
        operand = operand.operand
    if not isinstance(operand, Reg):
        return set()
    return {(operand.kind, operand.index + i) for i in range(operand.count)}


class RegisterFileFull(ValueError):
    pass


@dataclass
class RegAlloc:
    """A bump allocator per register file with aligned ranges (64-bit pairs even, 128-bit by 4)."""

    limits: dict[str, int]
    next: dict[str, int] = field(default_factory=lambda: {"s": 0, "v": 0, "a": 0})
    names: dict[str, Reg] = field(default_factory=dict)
    high: dict[str, int] = field(default_factory=lambda: {"s": 0, "v": 0, "a": 0})

    def take(self, kind: str, count: int = 1, *, align: int | None = None, name: str | None = None) -> Reg:
        align = align or (4 if count >= 4 and kind == "s" else 2 if count >= 2 else 1)
        start = -(-self.next[kind] // align) * align
        if start + count > self.limits[kind]:
            raise RegisterFileFull(f"out of {kind.upper()}GPRs: need {start + count}, the target has "
                                   f"{self.limits[kind]}")
        self.next[kind] = start + count
        self.high[kind] = max(self.high[kind], self.next[kind])
        reg = Reg(kind, start, count)
        if name:
            self.names[name] = reg
        return reg

    def at(self, kind: str, index: int, count: int = 1) -> Reg:
        """A fixed register (hardware-initialised ones such as s[0:1] or v0); moves the bump pointer past it."""
        self.next[kind] = max(self.next[kind], index + count)
        self.high[kind] = max(self.high[kind], self.next[kind])
        return Reg(kind, index, count)

    def release(self, kind: str, mark: int) -> None:
        """Registers from `mark` on are dead: later takes reuse them (`high` keeps the most ever in use)."""
        self.next[kind] = min(self.next[kind], mark)


@dataclass
class _Pending:
    regs: set[RegKey]
    scalar: bool = False


def counter_lookup(spec, profile) -> Callable[[str], tuple[str, ...]]:
    """`name -> counters` from the spec (which encoding an instruction has) and the target profile's
    `wait_counters` (which counter each memory encoding uses)."""
    table = profile.get("wait_counters") or {}

    @functools.cache
    def counters(name: str) -> tuple[str, ...]:
        inst = spec.find_instruction(name)
        if inst is None:
            return ()
        for ie in inst.encodings:
            if ie.encoding_name in table:
                return tuple(table[ie.encoding_name])
        return ()

    return counters


_INLINE_FLOATS = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 0.15915494309189535}


def scalar_sources(operands, written: set[RegKey]) -> set:
    """The distinct SGPRs, special registers and literals a VALU instruction reads (its constant-bus uses)."""
    uses = set()
    for op in operands:
        if isinstance(op, SrcMods):
            op = op.operand
        if isinstance(op, Reg):
            if op.kind == "v" or op.kind == "a":
                continue
            keys = reg_keys(op)
            if keys and keys <= written and op is operands[0]:
                continue    # the destination (an SGPR mask written by a VOP3 compare)
            uses.add((op.kind, op.index))
        elif isinstance(op, Imm):
            v = op.value
            inline = (-16 <= v <= 64) if isinstance(v, int) else (float(v) in _INLINE_FLOATS or v == 0.0)
            if not inline:
                uses.add(("literal", v))
    return uses


def hazard_class(name: str) -> str:
    """The class an instruction belongs to for the hazard table (LLVM mnemonic spelling); the fallback of
    `class_lookup` for names the spec does not have."""
    if name.startswith("v_mfma"):
        return "mfma"
    if name.startswith(("v_readfirstlane", "v_readlane")):
        return "readlane"
    if name.startswith(("buffer_", "global_", "flat_", "scratch_", "ds_")):
        return "memory"
    if name.startswith("v_"):
        return "valu"
    return "salu"


SALU = frozenset({"salu"})


def hazard_classes(inst) -> frozenset[str]:
    """The hazard-table classes of a spec instruction, from the spec alone (one classification for the emitter
    and for strict emulation): `mfma` (functional subgroup MFMA); `valu` (group VALU) plus `trans` (subgroup
    TRANSCENDENTAL) or `valu_nontrans`, plus `readlane` for a VALU whose result is one 32-bit SGPR
    (v_readlane, v_readfirstlane) and `lanesel` for one whose SRC1 is an SGPR lane select (v_readlane,
    v_writelane); `memory` (group VMEM, LDS included) plus `vmem` when not DATA_SHARE; `smem`;
    `setreg` / `getreg` (the hardware-register moves); `salu` for everything else."""
    group = (inst.functional_group or "").upper()
    sub = {x.upper() for x in inst.functional_subgroups}
    name = inst.name.upper()
    if "MFMA" in sub:
        return frozenset({"mfma"})
    if group == "VALU":
        out = {"valu", "trans" if "TRANSCENDENTAL" in sub else "valu_nontrans"}
        if any(o.output and (o.operand_type or "").startswith(("OPR_SDST", "OPR_SREG")) and o.size == 32
               for ie in inst.encodings for o in ie.operands):
            out.add("readlane")
        if any(o.field_name == "SRC1" and o.operand_type == "OPR_SSRC_NOLIT" for ie in inst.encodings
               for o in ie.operands):
            out.add("lanesel")    # an SGPR lane select (v_readlane, v_writelane)
        return frozenset(out)
    if group == "VMEM":
        return frozenset({"memory"} if "DATA_SHARE" in sub else {"memory", "vmem"})
    if group == "SMEM":
        return frozenset({"smem"})
    if name.startswith("S_SETREG"):
        return frozenset({"salu", "setreg"})
    if name == "S_GETREG_B32":
        return frozenset({"salu", "getreg"})
    return SALU


def class_lookup(spec) -> Callable[[str], frozenset[str]]:
    """`name -> hazard classes` (see `hazard_classes`); names the spec lacks fall back to `hazard_class`."""

    @functools.cache
    def classes(name: str) -> frozenset[str]:
        inst = spec.find_instruction(name)
        if inst is None:   # LLVM's encoding suffixes name the same spec instruction
            for suffix in ("_e32", "_e64", "_sdwa", "_dpp"):
                if name.endswith(suffix):
                    inst = spec.find_instruction(name[: -len(suffix)])
                    break
        return hazard_classes(inst) if inst is not None else frozenset({hazard_class(name)})

    return classes


def _in_file(keys: set[RegKey], regs: str) -> set[RegKey]:
    """The keys of one register file, for a hazard-table row's `regs` (vgpr: v and a; sgpr: every other)."""
    if regs == "vgpr":
        return {k for k in keys if k[0] in ("v", "a")}
    if regs == "sgpr":
        return {k for k in keys if k[0] not in ("v", "a")}
    return keys


class Emitter:
    """An instruction list with automatic waits. `counter_of(name)` gives the counters an instruction
    increments (see `counter_lookup`); `hazards` is the target's table of (writer class, reader class,
    wait states) for data hazards the hardware does not interlock — `s_nop` is inserted to cover them."""

    def __init__(self, counter_of, hazards: Iterable[dict] = (), classes_of=None) -> None:
        self.code: list = []
        self._counter_of = counter_of
        self._classes_of = classes_of or (lambda name: frozenset({hazard_class(name)}))
        self._queues: dict[str, list[_Pending]] = {"vmcnt": [], "lgkmcnt": []}
        self._rules = [(h["writer"], h["reader"], int(h["wait_states"]), h.get("regs", "any"))
                       for h in hazards if h.get("emitter", True)]
        self._horizon = max([r[2] for r in self._rules] + [0])
        self._recent: list[tuple[str, set[RegKey], int]] = []   # (class, written, wait states it covers)
        self._log: list[tuple[str, set[RegKey], set[RegKey], int]] = []   # every item: class, read, written, covers
        self._labels: dict[str, int] = {}
        self._label_queues: dict[str, dict] = {}
        self._forward: dict[str, list[tuple[list, dict]]] = {}   # label -> (hazard history, queues) per branch

    def _cover_hazards(self, cls: frozenset[str], read: set[RegKey]) -> None:
        need = 0
        for writer, reader, states, regs in self._rules:
            if reader not in cls:
                continue
            keys = _in_file(read, regs)
            elapsed = 0
            for wcls, written, covers in reversed(self._recent):
                if elapsed >= states:
                    break
                if writer in wcls and written & keys:
                    need = max(need, states - elapsed)
                    break
                elapsed += covers
        while need > 0:
            n = min(need, 8)
            self.code.append(AsmInstruction("s_nop", (Imm(n - 1),)))
            self._note(SALU, set(), n)
            need -= n

    def _note(self, cls: frozenset[str], written: set[RegKey], covers: int = 1,
              read: set[RegKey] | None = None) -> None:
        self._log.append((cls, read or set(), written, covers))
        self._recent.append((cls, written, covers))
        total, keep = 0, 0
        for _, _, c in reversed(self._recent):
            total += c
            keep += 1
            if total > self._horizon:
                break
        del self._recent[: len(self._recent) - keep]

    # --- waits -------------------------------------------------------------------------------------
    def _wait_for(self, keys: set[RegKey]) -> None:
        if not keys:
            return
        parts = []
        for counter, queue in self._queues.items():
            last = -1
            for i, entry in enumerate(queue):
                if entry.regs & keys:
                    last = i
            if last < 0:
                continue
            if counter == "lgkmcnt" and any(e.scalar for e in queue):
                allowed = 0
                del queue[:]
            else:
                allowed = len(queue) - 1 - last
                del queue[: last + 1]
            parts.append((counter, min(allowed, MAX_COUNT[counter])))
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    def wait(self, *, vmcnt: int | None = None, lgkmcnt: int | None = None) -> None:
        """An explicit wait (before barriers and at the end), keeping the bookkeeping exact."""
        parts = []
        for counter, value in (("vmcnt", vmcnt), ("lgkmcnt", lgkmcnt)):
            if value is None:
                continue
            queue = self._queues[counter]
            if len(queue) > value:
                del queue[: len(queue) - value]
                parts.append((counter, value))
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    # --- emission ----------------------------------------------------------------------------------
    def emit(self, name: str, *operands, writes: Iterable = (), reads: Iterable | None = None,
             **modifiers) -> AsmInstruction:
        """Append one instruction. `writes` are its destination operands (the generator knows them);
        every other register operand is a source. Memory instructions are queued on their counter."""
        written: set[RegKey] = set()
        for w in writes:
            written |= reg_keys(w)
        read: set[RegKey] = set()
        for op in (operands if reads is None else reads):
            read |= reg_keys(op)
        self._wait_for(read | written)
        cls = self._classes_of(name)
        if cls & {"valu", "mfma"} and not name.startswith(("v_readlane", "v_writelane")):
            uses = scalar_sources([_operand(o) for o in operands], written)
            if len(uses) > 1:
                raise ValueError(f"{name} would read {len(uses)} scalar values ({sorted(map(str, uses))}); "
                                 "gfx9 VALU instructions may read one SGPR or literal (constant bus)")
        self._cover_hazards(cls, read)
        mods = tuple((k, v) for k, v in modifiers.items() if v is not False and v is not None)
        inst = AsmInstruction(name, tuple(_operand(o) for o in operands), mods)
        self.code.append(inst)
        self._note(cls, written, read=read)
        for counter in self._counter_of(name):
            self._queues[counter].append(_Pending(written, scalar=name.startswith("s_")))
        return inst

    # --- control flow ------------------------------------------------------------------------------
    def _queue_state(self) -> dict:
        return {c: [(frozenset(e.regs), e.scalar) for e in q] for c, q in self._queues.items()}

    def _settle(self, *others: dict) -> None:
        """Make the pending-operation queues valid for other paths reaching the same point: a counter whose
        queue differs between the paths is waited for completely."""
        parts = []
        for counter, queue in self._queues.items():
            mine = [(frozenset(e.regs), e.scalar) for e in queue]
            if any(mine != other.get(counter, []) for other in others):
                parts.append((counter, 0))
                del queue[:]
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    @staticmethod
    def _distances(recent: list) -> list[tuple[int, str, set[RegKey], int]]:
        out, elapsed = [], 0
        for cls, written, covers in reversed(recent):
            out.append((elapsed, cls, written, covers))
            elapsed += covers
        return out

    def _merge_hazards(self, histories: list[list]) -> None:
        """The hazard history after a join: every write of every incoming path at its distance (the nearest
        writer decides, so the union is the conservative history)."""
        entries = sorted((x for h in histories for x in self._distances(h)), key=lambda x: x[0])
        merged = []
        for k, (dist, cls, written, covers) in enumerate(entries):
            nxt = entries[k + 1][0] if k + 1 < len(entries) else dist + covers
            merged.append((cls, written, nxt - dist))
        self._recent = list(reversed(merged))

    def label(self, name: str) -> None:
        """A branch target. Fall-through keeps the hazard history; forward branches to it join theirs (hazards
        from every incoming path are covered, pending-counter queues that differ are waited for); a backward
        branch to it checks the loop's tail against its head (see `branch`)."""
        self.code.append(LabelDef(name))
        incoming = self._forward.pop(name, [])
        if incoming:
            self._merge_hazards([self._recent] + [h for h, _ in incoming])
            self._settle(*(queues for _, queues in incoming))
        self._labels[name] = len(self._log)
        self._label_queues[name] = self._queue_state()

    def branch(self, name: str, target: str) -> None:
        """A branch; when it goes back to a label already emitted, the instructions at the label follow this
        branch too, so hazards from the tail into the head are covered with s_nop before the branch."""
        if target in self._labels:
            self._settle(self._label_queues[target])
            head = self._log[self._labels[target]:]
            saved = list(self._recent)
            self._note(SALU, set())           # the branch itself is one wait state
            need = 0
            elapsed_head = 0
            for cls, read, _written, covers in head:
                if elapsed_head >= self._horizon:
                    break
                for writer, reader, states, regs in self._rules:
                    if reader not in cls:
                        continue
                    keys = _in_file(read, regs)
                    elapsed = elapsed_head
                    for wcls, written, c in reversed(self._recent):
                        if elapsed >= states:
                            break
                        if writer in wcls and written & keys:
                            need = max(need, states - elapsed)
                            break
                        elapsed += c
                elapsed_head += covers
            self._recent = saved
            del self._log[-1]
            while need > 0:
                n = min(need, 8)
                self.code.append(AsmInstruction("s_nop", (Imm(n - 1),)))
                self._note(SALU, set(), n)
                need -= n
        self.code.append(AsmInstruction(name, (Label(target),)))
        self._note(SALU, set())
        if target not in self._labels:
            self._forward.setdefault(target, []).append((list(self._recent), self._queue_state()))

    def raw(self, inst: AsmInstruction) -> None:
        self.code.append(inst)


def _operand(o):
    if isinstance(o, bool):
        raise TypeError("boolean operand")
    if isinstance(o, (int, float)):
        return Imm(o, hex=isinstance(o, int) and (o > 64 or o < -16))
    return o
