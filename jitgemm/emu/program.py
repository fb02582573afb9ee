"""A kernel's code decoded for the emulator: the disassembler's instruction objects, each paired with the spec
operands of the form it was decoded from (the thin adapter this package needs on top of `isa.disasm.decoder`)."""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.instruction import AsmInstruction
from jitgemm.isa.spec.forms import Form, forms_of
from jitgemm.isa.spec.model import Instruction as SpecInstruction
from jitgemm.isa.spec.model import Operand, Spec


@dataclass(frozen=True)
class Decoded:
    """One instruction at `pc` (byte offset in the kernel's code)."""

    pc: int
    size: int
    inst: AsmInstruction | None  # None: a word no instruction of the spec matches
    form: Form | None
    word: int = 0

    @property
    def spec_inst(self) -> SpecInstruction | None:
        return self.form.spec_inst if self.form is not None else None

    @property
    def encoding(self) -> str:
        return self.form.enc.name if self.form is not None else ""

    @property
    def name(self) -> str:
        """The spec's instruction name (upper case), or the raw word for undecodable code."""
        if self.form is not None:
            return self.form.spec_inst.name
        return f".long 0x{self.word:08x}"

    @property
    def text(self) -> str:
        return str(self.inst) if self.inst is not None else self.name

    def visible_operands(self) -> list[Operand]:
        """The spec operands the syntax writes, in syntax order."""
        if self.form is None:
            return []
        return sorted((o for o in self.form.ie.operands if not o.implicit), key=lambda o: o.order)

    def implicit_operands(self) -> list[Operand]:
        if self.form is None:
            return []
        return [o for o in self.form.ie.operands if o.implicit]

    def operand_pairs(self) -> list[tuple[Operand, object]]:
        """(spec operand, assembly operand) in syntax order. Forms whose syntax leaves an operand out (the
        VDATA of an LDS-direct buffer load, the VDST of an atomic that returns nothing) are matched by
        dropping that spec operand."""
        spec_ops = self.visible_operands()
        ops = list(self.inst.operands) if self.inst is not None else []
        if len(spec_ops) != len(ops):
            for drop in ("VDATA", "VDST"):
                trimmed = [o for o in spec_ops if o.field_name != drop]
                if len(trimmed) == len(ops):
                    spec_ops = trimmed
                    break
        return list(zip(spec_ops, ops, strict=False))

    def by_field(self) -> dict[str, object]:
        return {o.field_name: op for o, op in self.operand_pairs() if o.field_name}

    def modifier(self, name: str, default=None):
        return self.inst.modifier(name, default) if self.inst is not None else default


def _form_of(forms, inst: AsmInstruction, encoding: str | None) -> Form | None:
    candidates = forms.forms_for(inst.name) or []
    for form in candidates:
        if form.enc.name == encoding:
            return form
    return candidates[0] if candidates else None


def decode_kernel(code: bytes, spec: Spec) -> list[Decoded]:
    """Every instruction of a kernel's code, in order."""
    forms = forms_of(spec)
    out = []
    for d in decode(code, forms):
        word = int.from_bytes(d.raw[:4].ljust(4, b"\0"), "little")
        if d.instruction is None:
            out.append(Decoded(d.offset, d.size or 4, None, None, word))
            continue
        out.append(Decoded(d.offset, d.size, d.instruction, _form_of(forms, d.instruction, d.encoding), word))
    return out
