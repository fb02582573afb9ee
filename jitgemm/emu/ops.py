"""Executable ops: `Op` (one decoded instruction with its `run(ctx, w)`), `RunFn`, and the `Builder` that makes an
op from a decoded instruction by its semantics in the registry (registry.py: a named entry, else its family's path,
the family taken from the spec form). The semantics modules (semantics/) import this module; it imports none of
them, so the type-only circle between the builder and the semantics is gone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitgemm.isa.spec.model import Spec

from . import registry
from .errors import NoSemantics
from .operands import Operands
from .program import Decoded
from .registry import INDEXABLE_FAMILIES, VECTOR_FAMILIES
from .state import WAVE
from .values import Fmt, operand_fmt

RunFn = Callable[["object", object], None]


@dataclass
class Op:
    """One executable instruction. `run(ctx, w)` executes it for waves `w` (the engine has already moved
    their PC to `next_pc`; branches overwrite it)."""

    pc: int
    size: int
    name: str
    text: str
    run: RunFn | None
    problem: str = ""  # why `run` is None
    lane_ops: int = 1  # lane-instructions per wave execution (for the rate statistics)

    @property
    def next_pc(self) -> int:
        return self.pc + self.size


class Builder:
    """Builds ops for one program: holds the spec, the register-slot map and the kernel name."""

    def __init__(self, spec: Spec, operands: Operands, kernel: str, code_address: int = 0,
                 code_size: int = 0) -> None:
        self.spec = spec
        self.ops = operands
        self.kernel = kernel
        self.code_address = code_address  # where the kernel's first byte is loaded (its PC 0)
        self.code_size = code_size

    def indexable(self, d: Decoded) -> bool:
        """GPR indexing (S_SET_GPR_IDX_ON) renumbers the VGPR operands of VALU instructions only."""
        return d.inst is not None and d.form is not None and registry.family_of(d.form) in INDEXABLE_FAMILIES

    def build(self, d: Decoded) -> Op:
        if d.inst is None:
            return Op(d.pc, d.size, d.name, d.text, None,
                      f"no instruction of the loaded spec ({self.spec.source or self.spec.architecture.name}) "
                      "matches this word; a subset spec may lack it (`jitgemm spec fetch` gets AMD's full file)")
        if d.form is None:
            return Op(d.pc, d.size, d.name, d.text, None, "no spec form matches the decoded instruction")
        entry, fam = registry.resolve(d.name, d.form)
        if entry is None:
            return Op(d.pc, d.size, d.name, d.text, None, f"no semantics: no named entry and no path for the {fam} "
                      "family (jitgemm/emu/registry.py)")
        try:
            run = entry.build(self, d)
        except NoSemantics as exc:
            return Op(d.pc, d.size, d.name, d.text, None, str(exc))
        if run is None:
            return Op(d.pc, d.size, d.name, d.text, None, f"no semantics: {entry.build.__name__} built nothing")
        op = Op(d.pc, d.size, d.name, d.text, run)
        if fam in VECTOR_FAMILIES:
            op.lane_ops = WAVE
        return op

    def fmt(self, o) -> Fmt:
        return operand_fmt(self.spec, o.data_format, o.size)
