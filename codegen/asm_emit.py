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
from jitgemm.isa.instruction import AsmInstruction, Counters, Imm, Label, LabelDef, Reg, SrcMods


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


_NO_KEYS: frozenset = frozenset()
_KEYS: dict[Reg, frozenset] = {}     # register operand -> its keys (the same few hundred registers recur)


def _keys_of(operand) -> frozenset:
    """`reg_keys(operand)` once per register: the emitter asks for the keys of every operand of every
    instruction, and a kernel names a few hundred distinct registers."""
    if type(operand) is Reg:
        hit = _KEYS.get(operand)
        if hit is None:
            hit = _KEYS[operand] = frozenset(reg_keys(operand))
        return hit
    if isinstance(operand, (Reg, SrcMods)):
        return frozenset(reg_keys(operand))
    return _NO_KEYS


_FILES: dict[tuple[str, frozenset], frozenset] = {}


def _in_file(keys, regs: str) -> frozenset:
    """The keys of one register file, for a hazard row's `regs` (vgpr: v and a; sgpr: every other register;
    hwreg: none, the emitter tracks no hardware registers; any: all). Cached: an operand's keys recur."""
    hit = _FILES.get((regs, keys))
    if hit is None:
        if len(_FILES) > 100_000:
            _FILES.clear()
        hit = _FILES[(regs, keys)] = _file_keys(keys, regs)
    return hit


def _file_keys(keys, regs: str) -> frozenset:
    if regs == "vgpr":
        return frozenset(k for k in keys if k[0] in ("v", "a"))
    if regs == "sgpr":
        return frozenset(k for k in keys if k[0] not in ("v", "a"))
    if regs == "hwreg":
        return _NO_KEYS
    return frozenset(keys)


class _Counter:
    """One wait counter's pending operations, in issue order, with an index from register to the youngest
    pending operation that writes it, so a wait is found without scanning the queue.

    Operation `seq` (0, 1, ...) is pending while `seq >= done`; `entries[seq]` is its (written keys, scalar)."""

    __slots__ = ("entries", "done", "youngest", "last_scalar")

    def __init__(self, entries: Iterable[tuple[frozenset, bool]] = ()) -> None:
        self.entries: list[tuple[frozenset, bool]] = []
        self.done = 0
        self.youngest: dict[RegKey, int] = {}
        self.last_scalar = -1
        for regs, scalar in entries:
            self.push(regs, scalar)

    def push(self, regs: frozenset, scalar: bool) -> None:
        seq = len(self.entries)
        self.entries.append((regs, scalar))
        youngest = self.youngest
        for k in regs:
            youngest[k] = seq
        if scalar:
            self.last_scalar = seq

    def __len__(self) -> int:
        return len(self.entries) - self.done

    def pending(self) -> list[tuple[frozenset, bool]]:
        return self.entries[self.done:]


class Emitter:
    """An instruction list with automatic waits. `facts` answers what the spec says about an instruction
    (`emit_facts`); `hazards` is the target's table (`TargetProfile.hazards` rows or `HazardRule`s) of data
    hazards the hardware does not interlock — `s_nop` is inserted to cover the rows meant for the emitter, at
    each row's worst-case `wait_states`, on the registers of its `regs` file.

    The cost of an instruction does not grow with the code before it (issue 31): each counter keeps, per
    register, its youngest pending write (`_Counter`); the hazard state keeps, per register and writer class,
    the time (in wait states since the last join) at which the last such write ended (`_written`), so a rule is
    checked by a few dictionary reads, not by walking the recent instructions."""

    def __init__(self, facts: EmitFacts, hazards: Iterable[dict | HazardRule] = ()) -> None:
        self.code: list = []
        self.facts = facts
        self._queues: dict[str, _Counter] = {"vmcnt": _Counter(), "lgkmcnt": _Counter()}
        rules = [hazard_rule(h, f"hazards[{i}]") for i, h in enumerate(hazards)]
        self._rules = [(r.writer, r.reader, r.wait_states, r.regs, r.access) for r in rules if r.emitter]
        self._horizon = max([r[2] for r in self._rules] + [0])
        self._writers = frozenset(r[0] for r in self._rules)          # classes whose writes are remembered
        self._rules_for: dict[frozenset[str], tuple] = {}             # reader classes -> the rules they meet
        # the hazard history: (classes, written, wait states covered), the latest ones spanning the horizon
        # (kept for joins and back edges); `_time` wait states since it began; `_written[key][writer class]` the
        # time at which the youngest write of `key` by that class ended
        self._recent: list[tuple[frozenset[str], frozenset, int]] = []
        self._recent_total = 0
        self._time = 0
        self._written: dict[RegKey, dict[str, int]] = {}
        self._class_time: dict[str, int] = {}                         # writer class -> its youngest write's end
        self._log: list[tuple[frozenset[str], frozenset, frozenset, int]] = []   # classes, read, written, covers
        self._labels: dict[str, int] = {}
        self._label_queues: dict[str, dict] = {}
        self._forward: dict[str, list[tuple[list, dict]]] = {}   # label -> (hazard history, queues) per branch
        self._dead = False                                        # after an unconditional branch
        self._memo: dict[tuple, tuple] = {}                       # emit's arguments -> `_plan`
        self._recording: list[tuple] | None = None                # `record`: the plans emitted meanwhile

    def _rules_of(self, cls: frozenset[str]) -> tuple:
        hit = self._rules_for.get(cls)
        if hit is None:
            hit = self._rules_for[cls] = tuple(r for r in self._rules if r[1] in cls)
        return hit

    def _needed(self, cls: frozenset[str], read, written, elapsed_before: int = 0) -> int:
        """Wait states still missing before an instruction of classes `cls` reading `read` and writing `written`,
        with `elapsed_before` wait states already between it and the end of the hazard history: per rule, the
        youngest write of one of its registers by its writer class decides."""
        need = 0
        now = self._time + elapsed_before
        table = self._written
        latest = self._class_time
        for writer, _reader, states, regs, access in self._rules_of(cls):
            if now - latest.get(writer, -states) >= states:
                continue                      # no write of this class at all within the rule's reach
            keys = read if access == "read" else written
            if regs != "any":
                keys = _in_file(keys, regs)
            youngest = -1
            for k in keys:
                t = table.get(k)
                if t is not None:
                    t = t.get(writer, -1)
                    if t > youngest:
                        youngest = t
            if youngest >= 0 and now - youngest < states:
                need = max(need, states - (now - youngest))
        return need

    def _nops(self, need: int) -> None:
        while need > 0:
            n = min(need, 8)
            self.code.append(AsmInstruction("s_nop", (Imm(n - 1),)))
            self._note(SALU, _NO_KEYS, n)
            need -= n

    def _note(self, cls: frozenset[str], written, covers: int = 1, read=_NO_KEYS) -> None:
        self._log.append((cls, read, written, covers))
        self._push_recent(cls, written, covers)

    def _push_recent(self, cls: frozenset[str], written, covers: int) -> None:
        recent = self._recent
        recent.append((cls, written, covers))
        self._recent_total += covers
        # keep the shortest tail of the history longer than the horizon (older writes cannot matter)
        while len(recent) > 1 and self._recent_total - recent[0][2] > self._horizon:
            self._recent_total -= recent.pop(0)[2]       # a short list: the horizon is a few dozen wait states
        self._time += covers
        if written:
            mine = cls & self._writers
            if mine:
                now, table = self._time, self._written
                for c in mine:
                    self._class_time[c] = now
                for k in written:
                    row = table.get(k)
                    if row is None:
                        row = table[k] = {}
                    for c in mine:
                        row[c] = now

    def _set_history(self, recent: list) -> None:
        """Replace the hazard history (after a join) and rebuild the per-register index from it."""
        self._recent, self._recent_total, self._time, self._written, self._class_time = [], 0, 0, {}, {}
        for cls, written, covers in recent:
            self._push_recent(cls, written, covers)

    # --- waits -------------------------------------------------------------------------------------
    def _wait_for(self, keys) -> None:
        if not keys:
            return
        parts = []
        for counter, queue in self._queues.items():
            done = queue.done
            if len(queue.entries) == done:
                continue
            youngest = queue.youngest
            last = -1
            for k in keys:
                i = youngest.get(k, -1)
                if i > last:
                    last = i
            if last < done:
                continue
            if counter == "lgkmcnt" and queue.last_scalar >= done:
                allowed = 0
                queue.done = len(queue.entries)
            else:
                allowed = len(queue.entries) - 1 - last
                queue.done = last + 1
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
                queue.done = len(queue.entries) - value
                parts.append((counter, value))
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    # --- emission ----------------------------------------------------------------------------------
    def emit(self, name: str, *operands, reads: Iterable | None = None, **modifiers) -> AsmInstruction:
        """Append one instruction. The operands the spec marks as outputs are its destinations; every register
        operand counts as read. Memory instructions are queued on their counter."""
        key = None
        if reads is None:     # an epilogue repeats the same instructions: what they read and write is worked out once
            types = tuple(map(type, operands))
            mtypes = tuple(map(type, modifiers.values())) if modifiers else ()
            if float not in types and float not in mtypes:    # 1 == 1.0 and 0.0 == -0.0: not one instruction
                key = (name, operands, types, tuple(modifiers.items()) if modifiers else (), mtypes)
                try:
                    hit = self._memo.get(key)
                except TypeError:        # an unhashable operand or modifier value
                    key = hit = None
                if hit is not None:
                    return self._append(*hit)
        plan = self._plan(name, operands, reads, modifiers)
        if key is not None:
            self._memo[key] = plan
        return self._append(*plan)

    def _plan(self, name: str, operands: tuple, reads, modifiers: dict) -> tuple:
        """What `emit` needs of one instruction, independent of the code before it."""
        facts = self.facts
        keys = [_keys_of(o) for o in operands]          # each operand's registers, once
        written = _NO_KEYS
        for i in facts.written(name, len(operands)):
            if keys[i]:
                written = keys[i] if not written else written | keys[i]
        if reads is not None:
            keys = [_keys_of(o) for o in reads]
        read = _NO_KEYS
        for k in keys:
            if k:
                read = k if not read else read | k
        cls = facts.hazard_classes(name)
        mods = tuple((k, v) for k, v in modifiers.items() if v is not False and v is not None) if modifiers else ()
        inline = facts.inline_ints
        inst = AsmInstruction(name, tuple([_operand(o, inline) for o in operands]), mods)
        counters = facts.counters(name)
        scalar = facts.scalar_memory(name) if counters else False
        return inst, read, written, read | written if written else read, cls, counters, scalar

    def record(self, plans: list[tuple] | None) -> None:
        """Start (a list) or stop (None) collecting the plan of every instruction `emit` appends, for `replay`."""
        self._recording = plans

    def replay(self, plans: list[tuple]) -> None:
        """Append recorded instructions again, in order, as `emit` would (waits and hazard nops worked out against
        the code as it is now): a sequence the epilogue repeats for every accumulator is planned once."""
        for plan in plans:
            self._append(*plan)

    def _append(self, inst: AsmInstruction, read, written, both, cls, counters, scalar) -> AsmInstruction:
        if self._recording is not None:
            self._recording.append((inst, read, written, both, cls, counters, scalar))
        if both:
            self._wait_for(both)
        need = self._needed(cls, read, written)
        if need:
            self._nops(need)
        self.code.append(inst)
        self._note(cls, written, read=read)
        for counter in counters:
            self._queues[counter].push(written, scalar)
        return inst

    # --- control flow ------------------------------------------------------------------------------
    def _queue_state(self) -> dict:
        return {c: q.pending() for c, q in self._queues.items()}

    def _settle(self, *others: dict) -> None:
        """Make the pending-operation queues valid for other paths reaching the same point: a counter whose
        queue differs between the paths is waited for completely."""
        parts = []
        for counter, queue in self._queues.items():
            mine = queue.pending()
            if any(mine != other.get(counter, []) for other in others):
                parts.append((counter, 0))
                queue.done = len(queue.entries)
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    @staticmethod
    def _distances(recent: list) -> list[tuple[int, str, frozenset, int]]:
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
        self._set_history(list(reversed(merged)))

    def label(self, name: str) -> None:
        """A branch target. Fall-through keeps the hazard history; forward branches to it join theirs (hazards
        from every incoming path are covered, pending-counter queues that differ are waited for); a backward
        branch to it checks the loop's tail against its head (see `branch`)."""
        self.code.append(LabelDef(name))
        incoming = self._forward.pop(name, [])
        if incoming and self._dead:
            # nothing falls through (an unconditional branch came before): only the branches' states count
            first = incoming[0][1]
            self._queues = {c: _Counter(q) for c, q in first.items()}
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
            self._time += 1                   # the branch itself is one wait state (it writes nothing)
            need = 0
            elapsed_head = 0
            for cls, read, written, covers in head:
                if elapsed_head >= self._horizon:
                    break
                need = max(need, self._needed(cls, read, written, elapsed_head))
                elapsed_head += covers
            self._time -= 1
            self._nops(need)
        self.code.append(AsmInstruction(name, (Label(target),)))
        self._note(SALU, _NO_KEYS)
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
