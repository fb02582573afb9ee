"""Building instruction lists for the direct generator: register allocation and `s_waitcnt` insertion.

The emitter records, for every memory instruction, which counter it uses (vmcnt for vector memory,
lgkmcnt for LDS and scalar memory; which encoding counts where comes from the target profile) and which
registers it will write. Before an instruction reads or overwrites such a register, the smallest wait that
guarantees the value has arrived is inserted: vector memory and LDS return in order, scalar memory does not
(so a pending scalar load forces lgkmcnt(0)). Generators never write `s_waitcnt` by hand except at
barriers.

What it knows about an instruction it asks the spec (`EmitFacts`), never the mnemonic's spelling: which
operands it writes (the encoding's `<Operand>` output flags, in syntax order), its hazard classes (functional
group and subgroup, operand types; see `EmitFacts.classes_of`) and the largest counts of `s_waitcnt` (the bit
fields of OPR_WAITCNT) and the inline integer constants (the integer-named predefined values of OPR_SRC). The
same facts drive strict emulation (jitgemm/emu/strict.py), so the emitter and the checker classify an
instruction one way. The constant bus is the encoder's to check: one way for generated and hand-written code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from jitgemm.isa.hazards import SALU, EmitFacts, HazardRule, RegKey, hazard_rule, reg_keys
from jitgemm.isa.instruction import AsmInstruction, Counters, Imm, Label, LabelDef, Reg


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


def _in_file(keys: set[RegKey], regs: str) -> set[RegKey]:
    """The keys of one register file, for a hazard row's `regs` (vgpr: v and a; sgpr: every other register;
    hwreg: none, the emitter tracks no hardware registers; any: all)."""
    if regs == "vgpr":
        return {k for k in keys if k[0] in ("v", "a")}
    if regs == "sgpr":
        return {k for k in keys if k[0] not in ("v", "a")}
    if regs == "hwreg":
        return set()
    return keys


class Emitter:
    """An instruction list with automatic waits. `facts` answers what the spec says about an instruction
    (`emit_facts`); `hazards` is the target's table (`TargetProfile.hazards` rows or `HazardRule`s) of data
    hazards the hardware does not interlock — `s_nop` is inserted to cover the rows meant for the emitter, at
    each row's worst-case `wait_states`, on the registers of its `regs` file."""

    def __init__(self, facts: EmitFacts, hazards: Iterable[dict | HazardRule] = ()) -> None:
        self.code: list = []
        self.facts = facts
        self._queues: dict[str, list[_Pending]] = {"vmcnt": [], "lgkmcnt": []}
        rules = [hazard_rule(h, f"hazards[{i}]") for i, h in enumerate(hazards)]
        self._rules = [(r.writer, r.reader, r.wait_states, r.regs, r.access) for r in rules if r.emitter]
        self._horizon = max([r[2] for r in self._rules] + [0])
        self._recent: list[tuple[frozenset[str], set[RegKey], int]] = []   # (classes, written, wait states covered)
        self._log: list[tuple[frozenset[str], set[RegKey], set[RegKey], int]] = []   # classes, read, written, covers
        self._labels: dict[str, int] = {}
        self._label_queues: dict[str, dict] = {}
        self._forward: dict[str, list[tuple[list, dict]]] = {}   # label -> (hazard history, queues) per branch
        self._dead = False                                        # after an unconditional branch

    def _needed(self, cls: frozenset[str], read: set[RegKey], written: set[RegKey], elapsed_before: int = 0) -> int:
        """Wait states still missing before an instruction of classes `cls` reading `read` and writing `written`,
        with `elapsed_before` wait states already between it and the end of the hazard history."""
        need = 0
        for writer, reader, states, regs, access in self._rules:
            if reader not in cls:
                continue
            keys = _in_file(read if access == "read" else written, regs)
            if not keys:
                continue
            elapsed = elapsed_before
            for wcls, wrote, covers in reversed(self._recent):
                if elapsed >= states:
                    break
                if writer in wcls and wrote & keys:
                    need = max(need, states - elapsed)
                    break
                elapsed += covers
        return need

    def _nops(self, need: int) -> None:
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
            parts.append((counter, min(allowed, self.facts.max_count[counter])))
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
    def emit(self, name: str, *operands, reads: Iterable | None = None, **modifiers) -> AsmInstruction:
        """Append one instruction. The operands the spec marks as outputs are its destinations; every register
        operand counts as read. Memory instructions are queued on their counter."""
        written: set[RegKey] = set()
        for i in self.facts.written(name, len(operands)):
            written |= reg_keys(operands[i])
        read: set[RegKey] = set()
        for op in (operands if reads is None else reads):
            read |= reg_keys(op)
        self._wait_for(read | written)
        cls = self.facts.hazard_classes(name)
        self._nops(self._needed(cls, read, written))
        mods = tuple((k, v) for k, v in modifiers.items() if v is not False and v is not None)
        inst = AsmInstruction(name, tuple(_operand(o, self.facts.inline_ints) for o in operands), mods)
        self.code.append(inst)
        self._note(cls, written, read=read)
        for counter in self.facts.counters(name):
            self._queues[counter].append(_Pending(written, scalar=self.facts.scalar_memory(name)))
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
        if incoming and self._dead:
            # nothing falls through (an unconditional branch came before): only the branches' states count
            first = incoming[0][1]
            self._queues = {c: [_Pending(set(regs), scalar) for regs, scalar in q] for c, q in first.items()}
            self._merge_hazards([h for h, _ in incoming])
            self._settle(*(queues for _, queues in incoming[1:]))
        elif incoming:
            self._merge_hazards([self._recent] + [h for h, _ in incoming])
            self._settle(*(queues for _, queues in incoming))
        self._dead = False
        self._labels[name] = len(self._log)
        self._label_queues[name] = self._queue_state()

    def jump(self, target: str) -> None:
        """An unconditional branch (s_branch): the code after it is reached only through labels, whose state is
        then that of the branches to them."""
        self.branch("s_branch", target)
        self._dead = True

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
            for cls, read, written, covers in head:
                if elapsed_head >= self._horizon:
                    break
                need = max(need, self._needed(cls, read, written, elapsed_head))
                elapsed_head += covers
            self._recent = saved
            del self._log[-1]
            self._nops(need)
        self.code.append(AsmInstruction(name, (Label(target),)))
        self._note(SALU, set())
        if target not in self._labels:
            self._forward.setdefault(target, []).append((list(self._recent), self._queue_state()))

    def raw(self, inst: AsmInstruction) -> None:
        self.code.append(inst)


def _operand(o, inline_ints: frozenset[int]):
    if isinstance(o, bool):
        raise TypeError("boolean operand")
    if isinstance(o, (int, float)):     # LLVM prints integers beyond the inline constants in hex
        return Imm(o, hex=isinstance(o, int) and o not in inline_ints)
    return o
