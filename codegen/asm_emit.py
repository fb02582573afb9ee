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

from isa.instruction import Counters, Imm, Instruction, Label, LabelDef, Reg, SrcMods

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

    def take(self, kind: str, count: int = 1, *, align: int | None = None, name: str | None = None) -> Reg:
        align = align or (4 if count >= 4 and kind == "s" else 2 if count >= 2 else 1)
        start = -(-self.next[kind] // align) * align
        if start + count > self.limits[kind]:
            raise RegisterFileFull(f"out of {kind.upper()}GPRs: need {start + count}, the target has "
                                   f"{self.limits[kind]}")
        self.next[kind] = start + count
        reg = Reg(kind, start, count)
        if name:
            self.names[name] = reg
        return reg

    def at(self, kind: str, index: int, count: int = 1) -> Reg:
        """A fixed register (hardware-initialised ones such as s[0:1] or v0); moves the bump pointer past it."""
        self.next[kind] = max(self.next[kind], index + count)
        return Reg(kind, index, count)


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


class Emitter:
    """An instruction list with automatic waits. `counter_of(name)` gives the counters an instruction
    increments (see `counter_lookup`)."""

    def __init__(self, counter_of) -> None:
        self.code: list = []
        self._counter_of = counter_of
        self._queues: dict[str, list[_Pending]] = {"vmcnt": [], "lgkmcnt": []}

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
            self.code.append(Instruction("s_waitcnt", (Counters(tuple(parts)),)))

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
            self.code.append(Instruction("s_waitcnt", (Counters(tuple(parts)),)))

    # --- emission ----------------------------------------------------------------------------------
    def emit(self, name: str, *operands, writes: Iterable = (), reads: Iterable | None = None,
             **modifiers) -> Instruction:
        """Append one instruction. `writes` are its destination operands (the generator knows them);
        every other register operand is a source. Memory instructions are queued on their counter."""
        written: set[RegKey] = set()
        for w in writes:
            written |= reg_keys(w)
        read: set[RegKey] = set()
        for op in (operands if reads is None else reads):
            read |= reg_keys(op)
        self._wait_for(read | written)
        mods = tuple((k, v) for k, v in modifiers.items() if v is not False and v is not None)
        inst = Instruction(name, tuple(_operand(o) for o in operands), mods)
        self.code.append(inst)
        for counter in self._counter_of(name):
            self._queues[counter].append(_Pending(written, scalar=name.startswith("s_")))
        return inst

    def label(self, name: str) -> None:
        self.code.append(LabelDef(name))

    def branch(self, name: str, target: str) -> None:
        self.code.append(Instruction(name, (Label(target),)))

    def raw(self, inst: Instruction) -> None:
        self.code.append(inst)


def _operand(o):
    if isinstance(o, bool):
        raise TypeError("boolean operand")
    if isinstance(o, (int, float)):
        return Imm(o, hex=isinstance(o, int) and (o > 64 or o < -16))
    return o
