"""Emulator semantics in one registry keyed by instruction name, and the family paths behind it.

How an instruction finds its semantics (`resolve`), in this order:

1. A named entry: `register(names, build)` or `@semantics(*names)` on a builder, for instructions whose
   behaviour is their own (branches, lane reads and writes, saturating conversions, the gfx950 MFMAs, ...).
   Names are the spec's instruction names, upper case. `register_pattern(regex, build)` covers names a regex
   matches at their start (gfx950's V_CVT_SCALEF32_* conversions) and is tried after the exact names.
2. Otherwise the generic path of the instruction's family. The family comes from the spec form the word was
   decoded with, never from the spelling of a name: the MR-ISA's functional group and subgroups (SALU, SMEM,
   VALU and its MFMA subgroup, VMEM with DATA_SHARE / FLAT / TEXTURE, MESSAGE, WAVE_CONTROL) and, for VALU,
   whether the encoding has an OP_SEL_HI field (packed math selects each source's two components).
   `@family_path(family)` registers a family's generic builder.

A builder takes (Builder, Decoded) and returns the op's `run(ctx, w)`, or raises NoSemantics saying why not.
where.py says which code implements an instruction (file:line), for `jitgemm emulate --where NAME`.

Registration rule for semantics modules (semantics/gfx950.py): put `register(("V_NAME", ...), builder)` (or
`register_pattern(REGEX, builder)`) beside the builder, and import the module in semantics/__init__.py so that it
runs before the first build (the engine and where.py import that package). A name registered twice is a programming
error and raises at import.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jitgemm.isa.spec.forms import Form
    from jitgemm.isa.spec.model import Encoding, Instruction

Build = Callable[[Any, Any], Any]   # (Builder, Decoded) -> run(ctx, w)


@dataclass(frozen=True)
class Entry:
    """One registered builder: for instruction `key` (a name, a regex or a family)."""

    key: str
    build: Build
    kind: str      # "name", "pattern" or "family"
    note: str = ""


_NAMED: dict[str, Entry] = {}
_PATTERNS: list[tuple[re.Pattern[str], Entry]] = []
_FAMILIES: dict[str, Entry] = {}

# Families whose instructions run on all 64 lanes (vector ALU, matrix, vector memory): the rate statistics count
# 64 lane-instructions per wave for them, and GPR indexing applies to the vector ALU ones.
VECTOR_FAMILIES = frozenset({"valu", "packed", "mfma", "ds", "flat", "buffer"})
INDEXABLE_FAMILIES = frozenset({"valu", "packed"})

FAMILY_TITLES = {
    "salu": "SALU: the statement of alu_statements.SEMANTICS, operands typed by the spec's data formats",
    "valu": "VALU: the statement of alu_statements.SEMANTICS with DPP/SDWA/op_sel/omod/clamp, operands typed by "
            "the spec's data formats",
    "packed": "VALU packed math (encoding with OP_SEL_HI): the statement on each source's op_sel/op_sel_hi "
              "components",
    "mfma": "MFMA: D = A x B + C over the lanes, shape from the spec name and operand formats (mfma.py)",
    "smem": "SMEM: scalar memory loads, stores and atomics",
    "ds": "DS: LDS loads, stores and atomics",
    "flat": "FLAT/GLOBAL/SCRATCH: flat-address loads, stores and atomics",
    "buffer": "MUBUF/MTBUF: buffer-resource loads, stores and atomics",
    "control": "program control (MESSAGE / WAVE_CONTROL): named entries only",
}


def register(names: Iterable[str] | str, build: Build, note: str = "") -> Build:
    """Register `build` for each instruction name (spec spelling, any case; stored upper case)."""
    for name in [names] if isinstance(names, str) else names:
        key = name.upper()
        if key in _NAMED and _NAMED[key].build is not build:
            raise ValueError(f"emulator semantics for {key} registered twice: {_describe(_NAMED[key].build)} and "
                             f"{_describe(build)}")
        _NAMED[key] = Entry(key, build, "name", note)
    return build


def semantics(*names: str, note: str = "") -> Callable[[Build], Build]:
    """Decorator form of `register`."""
    def deco(build: Build) -> Build:
        return register(names, build, note)
    return deco


def register_pattern(pattern: re.Pattern[str] | str, build: Build, note: str = "") -> Build:
    """Register `build` for every instruction name the regex matches at its start (`re.match`, as the semantics
    modules' own name tests do: end it with `$` for whole names). Tried after exact names, in registration order."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    _PATTERNS.append((rx, Entry(rx.pattern, build, "pattern", note)))
    return build


def family_path(family: str) -> Callable[[Build], Build]:
    """Decorator: the generic builder of a family (see `family_of`)."""
    if family not in FAMILY_TITLES:
        raise ValueError(f"unknown emulator family {family!r}; known: {', '.join(FAMILY_TITLES)}")

    def deco(build: Build) -> Build:
        _FAMILIES[family] = Entry(family, build, "family", FAMILY_TITLES[family])
        return build
    return deco


def family_of(form: Form) -> str:
    """The emulator family of a spec form, from the functional group/subgroups of its instruction and the fields
    of its encoding; "other" when the spec assigns none the emulator models (e.g. a synthetic spec)."""
    return family_of_spec(form.spec_inst, form.enc)


def family_of_spec(inst: Instruction, enc: Encoding) -> str:
    """`family_of` for a spec instruction and one of its encodings."""
    group = (inst.functional_group or "").upper()
    subgroups = {s.upper() for s in inst.functional_subgroups}
    if group == "VALU":
        if "MFMA" in subgroups:
            return "mfma"
        return "packed" if "OP_SEL_HI" in enc.fields else "valu"
    if group == "SALU":
        return "salu"
    if group == "SMEM":
        return "smem"
    if group == "VMEM":
        for sub, fam in (("DATA_SHARE", "ds"), ("FLAT", "flat"), ("TEXTURE", "buffer")):
            if sub in subgroups:
                return fam
    if group in ("MESSAGE", "WAVE_CONTROL"):
        return "control"
    return "other"


def named(name: str) -> Entry | None:
    """The named (or pattern) entry of an instruction name, or None."""
    key = name.upper()
    entry = _NAMED.get(key)
    if entry is not None:
        return entry
    for rx, e in _PATTERNS:
        if rx.match(key):
            return e
    return None


def family_entry(family: str) -> Entry | None:
    return _FAMILIES.get(family)


def resolve(name: str, form: Form) -> tuple[Entry | None, str]:
    """(the entry that builds this instruction, its family): a named entry first, else the family's path."""
    fam = family_of(form)
    return named(name) or _FAMILIES.get(fam), fam


def names() -> list[str]:
    """Every exactly registered instruction name."""
    return sorted(_NAMED)


# --- where: file:line of an implementation ------------------------------------------------------------------

def source_of(fn: Callable) -> tuple[str, int]:
    """(file, line of the `def`) of a builder (decorators skipped)."""
    fn = inspect.unwrap(fn)
    path = inspect.getsourcefile(fn) or "?"
    first = fn.__code__.co_firstlineno
    lines = Path(path).read_text().splitlines() if path != "?" else []
    for i in range(first - 1, min(len(lines), first + 40)):
        if re.match(rf"\s*(async\s+)?def\s+{re.escape(fn.__name__)}\b", lines[i]):
            return path, i + 1
    return path, first


def location(path: str, line: int) -> str:
    """`path:line` relative to the repository when inside it."""
    root = Path(__file__).resolve().parents[2]
    p = Path(path).resolve()
    try:
        return f"{p.relative_to(root)}:{line}"
    except ValueError:
        return f"{p}:{line}"


def _describe(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__} ({location(*source_of(fn))})"
