"""The instructions of a spec, each built from its plain-data record the first time someone asks for it.

A new process that disassembles one kernel meets a few dozen of the spec's 1,150 instructions, yet building every
`Instruction` (and, from the parsed-spec cache, unpacking every record with its long description) cost about
30 ms of each `jitgemm disasm FILE.co`. The table keeps, per instruction, only its head, what the spec's look-ups
need without building it (name, aliases, the (encoding, opcode) pairs), and builds the rest on first access.
Iterating the table builds everything, so code that walks all instructions sees exactly what it saw before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:   # the model makes tables (Spec.__init__); a table only holds what the model built
    from .model import Instruction

# What the spec's look-up tables need of an instruction without building it:
# (name, aliases, ((encoding name, opcode), ...)).
Head = tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]


def head_of(inst: Instruction) -> Head:
    """The head of an instruction already built."""
    return inst.name, tuple(inst.aliases), tuple((e.encoding_name, e.opcode) for e in inst.encodings)


class InstructionTable(Sequence):
    """A read-only sequence of the spec's instructions, in spec order, built lazily from `records`.

    `build(record)` makes one Instruction; `heads[i]` is record i's head (see `Head`), which must agree with
    what `build` makes of it (both come from one cache entry or one parse). Building the same index twice from
    two threads keeps the first object, so every caller sees one Instruction per index."""

    __slots__ = ("_records", "_build", "_built", "heads")

    def __init__(self, records: Sequence, build: Callable[[object], Instruction], heads: Sequence[Head]) -> None:
        if len(records) != len(heads):
            raise ValueError(f"{len(records)} instruction records but {len(heads)} heads")
        self._records = records
        self._build = build
        self._built: dict[int, Instruction] = {}
        self.heads = tuple(heads)

    @classmethod
    def of(cls, instructions: Sequence[Instruction]) -> InstructionTable:
        """A table of instructions that are already built (a spec made in code, e.g. by tests)."""
        built = tuple(instructions)
        table = cls(built, lambda inst: inst, [head_of(i) for i in built])
        table._built.update(enumerate(built))
        return table

    def __len__(self) -> int:
        return len(self.heads)

    @overload
    def __getitem__(self, index: int) -> Instruction: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Instruction, ...]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        inst = self._built.get(index)
        if inst is None:
            if not 0 <= index < len(self.heads):
                raise IndexError("instruction index out of range")
            inst = self._built.setdefault(index, self._build(self._records[index]))
        return inst

    def __iter__(self) -> Iterator[Instruction]:
        for i in range(len(self.heads)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (InstructionTable, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None   # type: ignore[assignment]   # compares by content, like a list

    def __repr__(self) -> str:
        return f"<InstructionTable: {len(self)} instructions, {len(self._built)} built>"
