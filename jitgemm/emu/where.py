"""Where an instruction's emulator semantics are implemented: the file:line of its named entry's builder, or of
its alu_statements statement and the family path that runs it (`jitgemm emulate --where NAME`). Importing this
module imports the semantics package, so every semantics module has registered (registry.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jitgemm.emu.semantics.alu_statements import statement_source
from jitgemm.isa.spec.mfma import parse_mfma_name

from . import semantics  # noqa: F401 - every semantics module registers on import
from .registry import family_entry, family_of_spec, location, named, source_of

if TYPE_CHECKING:
    from jitgemm.isa.spec.model import Instruction, Spec


@dataclass(frozen=True)
class Place:
    """One line of `where`: the code at path:line and what it does for the instruction."""

    path: str
    line: int
    what: str
    function: str = ""   # the builder's name, when the line is its `def`
    statement: str = ""  # the statement text, when the line is a alu_statements table entry

    def __str__(self) -> str:
        return f"{location(self.path, self.line)}: {self.what}"


def where(name: str, spec: Spec) -> list[Place]:
    """Which code implements instruction `name` (spec spelling, any case) when the emulator runs it with `spec`:
    the named entry's builder, or the statement table entry and the family path that runs it, one per family
    among the instruction's encodings. Empty when it has no semantics (`why_not` says why)."""
    key = name.upper()
    inst = spec.find_instruction(key)
    if inst is None:
        return []
    entry = named(key)
    if entry is not None:
        path, line = source_of(entry.build)
        how = f"pattern {entry.key!r}" if entry.kind == "pattern" else "named entry"
        note = f" ({entry.note})" if entry.note else ""
        return [Place(path, line, f"{key}: {how}, builder {entry.build.__name__}{note}", entry.build.__name__)]
    out: list[Place] = []
    for fam in _families(inst, spec):
        path_entry = family_entry(fam)
        if path_entry is None or fam == "mfma" and parse_mfma_name(key) is None:
            continue
        if fam in ("salu", "valu", "packed"):
            found = next((statement_source(n) for n in (inst.name.upper(), *(a.upper() for a in inst.aliases))
                          if statement_source(n) is not None), None)
            if found is None:
                continue
            out.append(Place(found[0], found[1], f"{key}: statement {found[2]!r} (alu_statements)", statement=found[2]))
        path, line = source_of(path_entry.build)
        out.append(Place(path, line, f"{key}: run by the {fam} path, builder {path_entry.build.__name__} "
                         f"({path_entry.note})", path_entry.build.__name__))
    return out


def why_not(name: str, spec: Spec) -> str:
    """Why `where` finds nothing for an instruction of the spec."""
    inst = spec.find_instruction(name.upper())
    if inst is None:
        return f"{name.upper()} is not an instruction of {spec.architecture.name}"
    if named(inst.name) is not None:
        return f"{inst.name}: named entry {named(inst.name).build.__name__}"
    fams = _families(inst, spec)
    reasons = []
    for fam in fams:
        if family_entry(fam) is None:
            reasons.append(f"the {fam} family has named entries only and {inst.name} is not one")
        elif fam == "mfma":
            reasons.append(f"the mfma path takes V_MFMA_<acc>_<M>X<N>X<K>[_<B>B]_<types> shapes and {inst.name} is "
                           "not one")
        else:
            reasons.append(f"the {fam} path needs a statement in alu_statements.SEMANTICS and {inst.name} has none")
    return f"{inst.name}: no emulator semantics: " + "; ".join(reasons or ["no encoding"])


def _families(inst: Instruction, spec: Spec) -> list[str]:
    fams: list[str] = []
    for ie in inst.encodings:
        fam = family_of_spec(inst, spec.encoding(ie.encoding_name))
        if fam not in fams:
            fams.append(fam)
    return fams
