"""The machine facts the direct generator's emitter (codegen/asm_emit.py) and strict emulation
(jitgemm/emu/strict.py) share, in one place so the two classify an instruction one way.

- The hazard table's rows (`HazardRule`, read from the target profile's `hazards:` by `hazard_rule`): wait states
  the hardware does not interlock between a writer class and a reader class.
- `EmitFacts`: what the spec and the target profile say about an instruction by name: the operands it writes, its
  hazard classes (from the spec's functional group/subgroup and operand types, plus the profile's named
  `hazard_classes`), the wait counters it increments (profile `wait_counters` by encoding), the largest
  `s_waitcnt` counts (fields of OPR_WAITCNT) and the inline integer constants (OPR_SRC's integer-named values).
- The register keys a register operand covers, and the hardware-register moves by spec name.
- MFMA timing: an MFMA's pass count and kind (xdl / smfma / dgemm) from the profile, and whether a profile's
  hazard table can be checked per pass count (`hazard_gap`); the matrix pipe's back-pressure, how long an MFMA
  holds its wave's next MFMA (`mfma_pipe_busy`, the profile's `mfma.next_issue`).

The numbers are data (specs/targets/<arch>.yaml, each row with its source); this module is their typed reader.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any

from jitgemm.isa.errors import SpecError
from jitgemm.isa.instruction import Reg, SrcMods

# One row of the `hazards` table: key -> (accepted types, default; ... = required). `regs` names the register
# file the rule is about, `access` whether the reader reads (RAW) or overwrites (WAW/WAR) the register, `fields`
# narrows the reader to some operand fields, `passes_plus` makes the requirement MFMA passes + N per MFMA kind
# (xdl / smfma / dgemm; for dgemm a {passes: wait states} map), `emitter: false` rows are for the checker only,
# `except_formats` leaves out the reader's operands of those ISA data formats (e.g. FMT_NUM_M64: a lane mask, read
# per lane as carry-in or v_cndmask's select, not as a constant).
_HAZARD_KEYS: dict[str, tuple[tuple[type, ...], Any]] = {
    "writer": ((str,), ...), "reader": ((str,), ...), "wait_states": ((int,), ...), "regs": ((str,), "any"),
    "access": ((str,), "read"), "fields": ((list,), []), "passes_plus": ((dict, type(None)), None),
    "emitter": ((bool,), True), "source": ((str,), ""), "except_formats": ((list,), []),
}
_HAZARD_CHOICES = {"regs": ("any", "vgpr", "sgpr", "hwreg"), "access": ("read", "write")}

@dataclass(frozen=True)
class HazardRule:
    """One row of the profile's hazard table: `wait_states` (each instruction is one, `s_nop N` is N + 1)
    required between an instruction of class `writer` writing a register and a later one of class `reader`
    touching it. The direct generator's emitter inserts s_nop from the rows with `emitter` set; strict
    emulation (jitgemm/emu/strict.py) checks every row, with the MFMA pass-count terms."""

    writer: str
    reader: str
    wait_states: int
    regs: str = "any"
    access: str = "read"
    fields: tuple[str, ...] = ()
    passes_plus: dict | None = None
    emitter: bool = True
    source: str = ""
    except_formats: tuple[str, ...] = ()

    def required(self, passes: int, kind: str) -> int:
        """Wait states after an MFMA of `passes` passes and kind xdl/smfma/dgemm (the row's worst case when
        the row has no term for the kind or the passes are unknown)."""
        if self.passes_plus and passes and kind in self.passes_plus:
            plus = self.passes_plus[kind]
            if isinstance(plus, dict):   # DGEMM: wait states by pass count, not a sum
                return int(plus.get(passes, self.wait_states))
            return passes + int(plus)
        return self.wait_states


def hazard_rule(row: dict, where: str = "hazards") -> HazardRule:
    """A hazard-table row checked for its keys, their types and values (SpecError naming `where` and the key,
    and what is accepted)."""
    if isinstance(row, HazardRule):
        return row
    if not isinstance(row, dict):
        raise SpecError(f"{where} is {row!r}; accepted: a mapping with keys {', '.join(_HAZARD_KEYS)}")
    unknown = sorted(set(row) - set(_HAZARD_KEYS))
    if unknown:
        raise SpecError(f"{where} has unknown keys {', '.join(unknown)}; accepted: {', '.join(_HAZARD_KEYS)}")
    values = {}
    for key, (types, default) in _HAZARD_KEYS.items():
        if key not in row:
            if default is ...:
                raise SpecError(f"{where} lacks {key!r}")
            values[key] = copy.deepcopy(default)
            continue
        value = row[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            accepted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise SpecError(f"{where}.{key} is {value!r}; accepted: {accepted}")
        if key in _HAZARD_CHOICES and value not in _HAZARD_CHOICES[key]:
            raise SpecError(f"{where}.{key} is {value!r}; accepted: {', '.join(_HAZARD_CHOICES[key])}")
        values[key] = value
    values["fields"] = tuple(values["fields"])
    values["except_formats"] = tuple(values["except_formats"])
    return HazardRule(**values)



RegKey = tuple[str, int]
SALU = frozenset({"salu"})
# The hardware-register moves, by spec instruction name: the spec gives their register id no operand type of its
# own (it is an OPR_SIMM16 as s_movk's), so the hazard classes setreg/getreg name them (CDNA3 ISA guide 4.5).
HWREG_WRITERS = frozenset({"S_SETREG_B32", "S_SETREG_IMM32_B32"})
HWREG_READERS = frozenset({"S_GETREG_B32"})


def reg_keys(operand) -> set[RegKey]:
    """The (kind, index) pairs a numbered register operand covers; named registers count as themselves."""
    if isinstance(operand, SrcMods):
        operand = operand.operand
    if not isinstance(operand, Reg):
        return set()
    return {(operand.kind, operand.index + i) for i in range(operand.count)}



class EmitFacts:
    """The spec's and the target profile's answers the emitter needs, per mnemonic (cached)."""

    def __init__(self, spec, profile) -> None:
        from jitgemm.isa.spec.forms import forms_of

        self.spec = spec
        self._forms = forms_of(spec)
        self._wait_table = profile.wait_counters
        known = {name.upper() for name, _aliases, _opcodes in spec.instructions.heads}   # names: builds none
        self._named_class: dict[str, str] = {}
        for cls, names in profile.hazard_classes.items():
            for name in names:
                if str(name).upper() not in known:
                    raise ValueError(f"specs/targets/{profile.target}.yaml: hazard_classes.{cls}: {name} is not an "
                                     f"instruction of {spec.architecture.name}")
                self._named_class[str(name).upper()] = cls
        waitcnt = spec.operand_types.get("OPR_WAITCNT")
        fields = {f.name: f.width for f in waitcnt.fields} if waitcnt is not None else {}
        missing = [f for f in ("VM", "LGKM") if f not in fields]
        if missing:
            raise ValueError(f"the spec's OPR_WAITCNT has no field {', '.join(missing)}: s_waitcnt cannot be built")
        self.max_count = {"vmcnt": (1 << fields["VM"]) - 1, "lgkmcnt": (1 << fields["LGKM"]) - 1}
        src = spec.operand_types.get("OPR_SRC")
        ints = set()
        for value_name, _value, _doc in (src.raw_values if src is not None else ()):
            try:
                ints.add(int(value_name))
            except ValueError:
                continue
        self.inline_ints = frozenset(ints)      # the integers a source operand encodes without a literal
        self._counters = functools.cache(self._counters_of)
        self._classes = functools.cache(self._classes_of)
        self._writes = functools.cache(self._writes_of)
        self._sgpr_only = functools.cache(self._sgpr_only_of)

    def __call__(self, name: str) -> tuple[str, ...]:
        return self._counters(name)

    def counters(self, name: str) -> tuple[str, ...]:
        """The wait counters `name` increments (target profile `wait_counters`, by the spec's encoding)."""
        return self._counters(name)

    def instruction(self, name: str):
        """The spec's instruction an LLVM mnemonic (with or without an encoding suffix such as _e64) names."""
        first = next(self._forms.iter_forms(name) or iter(()), None)     # only the first form is built
        if first is None:
            raise ValueError(f"{name}: not an instruction of {self.spec.architecture.name}")
        return first.spec_inst

    def _counters_of(self, name: str) -> tuple[str, ...]:
        return self.counters_of(self.instruction(name))

    def counters_of(self, inst) -> tuple[str, ...]:
        """The wait counters a spec instruction increments (the first of its encodings the profile lists)."""
        for ie in inst.encodings:
            if ie.encoding_name in self._wait_table:
                return tuple(self._wait_table[ie.encoding_name])
        return ()

    def scalar_memory(self, name: str) -> bool:
        """Scalar memory returns out of order (a pending one forces lgkmcnt(0))."""
        return self.instruction(name).functional_group == "SMEM"

    def hazard_classes(self, name: str) -> frozenset[str]:
        """The classes of the target profile's hazard table `name` belongs to (see `classes_of`)."""
        return self._classes(name)

    def _classes_of(self, name: str) -> frozenset[str]:
        return self.classes_of(self.instruction(name))

    def classes_of(self, inst) -> frozenset[str]:
        """The hazard-table classes of a spec instruction (`_group_classes_of`), plus the class the target
        profile's `hazard_classes` names it in (one the functional groups cannot tell apart, e.g. gfx950's
        v_permlane*_swap)."""
        named = self._named_class.get(inst.name.upper())
        classes = self._group_classes_of(inst)
        return classes | {named} if named else classes

    def _group_classes_of(self, inst) -> frozenset[str]:
        """The hazard-table classes of a spec instruction, from the spec alone (one instruction may be in several):
        `mfma` (functional subgroup MFMA); `valu` (group VALU) plus `trans` (subgroup TRANSCENDENTAL) or
        `valu_nontrans`, plus `readlane` for a VALU whose result is a 32-bit value of an SGPR-only operand type
        (v_readlane, v_readfirstlane) and `lanesel` for one whose SRC1 is SGPR-only (the lane select of
        v_readlane/v_writelane); `memory` (group VMEM, LDS included) plus `vmem` outside subgroup DATA_SHARE;
        `smem`; `setreg`/`getreg` beside `salu` for the hardware-register moves; `salu` for the rest."""
        group = (inst.functional_group or "").upper()
        sub = {x.upper() for x in inst.functional_subgroups}
        if "MFMA" in sub:
            return frozenset({"mfma"})
        if group == "VALU":
            out = {"valu", "trans" if "TRANSCENDENTAL" in sub else "valu_nontrans"}
            for ie in inst.encodings:
                for o in ie.operands:
                    if o.implicit or not self._sgpr_only(o.operand_type):
                        continue
                    if o.output and o.size == 32:
                        out.add("readlane")      # a VALU result in an SGPR: v_readlane, v_readfirstlane
                    elif not o.output and o.field_name == "SRC1":
                        out.add("lanesel")       # an SGPR lane select: v_readlane, v_writelane
            return frozenset(out)
        if group == "VMEM":
            return frozenset({"memory"} if "DATA_SHARE" in sub else {"memory", "vmem"})
        if group == "SMEM":
            return frozenset({"smem"})
        name = inst.name.upper()
        if name in HWREG_WRITERS:
            return frozenset({"salu", "setreg"})
        if name in HWREG_READERS:
            return frozenset({"salu", "getreg"})
        return SALU

    def _sgpr_only_of(self, operand_type: str | None) -> bool:
        """An operand type that names SGPRs (s0) but no VGPR (v0)."""
        t = self.spec.operand_types.get(operand_type or "")
        return t is not None and t.value_of("s0") is not None and t.value_of("v0") is None

    def written(self, name: str, count: int) -> tuple[int, ...]:
        """Positions (in syntax order) of the operands `name` writes when written with `count` operands."""
        return self._writes(name, count)

    def _writes_of(self, name: str, count: int) -> tuple[int, ...]:
        for form in self._forms.iter_forms(name) or ():     # built up to the first that fits (issue 31)
            visible = sorted((o for o in form.ie.operands if not o.implicit), key=lambda o: o.order)
            if len(visible) == count:
                return tuple(i for i, o in enumerate(visible) if o.output)
        forms = self._forms.forms_for(name)
        if not forms:
            raise ValueError(f"{name}: not an instruction of {self.spec.architecture.name}")
        counts = sorted({len([o for o in f.ie.operands if not o.implicit]) for f in forms})
        raise ValueError(f"{name} takes {' or '.join(map(str, counts))} operands, not {count}")


def emit_facts(spec, profile) -> EmitFacts:
    """The emitter's facts for a spec and target, made once per pair (the forms are the spec's own cache)."""
    key = (id(spec), profile.target)
    hit = _FACTS.get(key)
    if hit is None or hit.spec is not spec:
        hit = _FACTS[key] = EmitFacts(spec, profile)
    return hit


_FACTS: dict[tuple, EmitFacts] = {}


def mfma_timing(spec_inst, profile, formats: tuple[int, int] | None = None) -> tuple[int, str]:
    """(passes, kind) of an MFMA: passes from the profile's `mfma.passes` (0 when it has none: the rule's
    worst case applies), kind `dgemm` for f64 inputs, `smfma` for the profile's non-XDL input formats (f32),
    else `xdl` (LLVM SIInstrInfo::isXDL, GCNHazardRecognizer for gfx940).

    `formats`: the instruction's (CBSZ, BLGP); for gfx950's f8f6f4 MFMAs, whose A and B formats they are, an
    FP8/BF8 operand (code 0 or 1) takes the profile's `mfma.fp8_operand_passes` (CDNA 4 ISA guide 7.1.2: "Larger
    cycle count if either matrix A or B is F8"); unknown formats take that, the larger, count."""
    name = spec_inst.name.upper()
    passes = int(profile.mfma_passes.get(name, 0))
    if name in profile.mfma_fp8_operand_passes and (formats is None or min(formats) < 2):
        passes = int(profile.mfma_fp8_operand_passes[name])
    src = next((o for ie in spec_inst.encodings for o in ie.operands if o.field_name == "SRC0"), None)
    fmt = (src.data_format or "") if src is not None else ""
    if fmt.endswith("_F64"):
        return passes, "dgemm"
    return passes, "smfma" if fmt in profile.smfma_input_formats else "xdl"


def mfma_pipe_busy(passes: int, kind: str, profile) -> int:
    """Wait states after an MFMA's issue before its wave can issue another MFMA (the matrix pipe holds it for
    its passes: the profile's `mfma.next_issue`, whose comment cites the evidence); 0 when the profile states no
    back-pressure, the kind is not listed or the passes are unknown (then every MFMA is one wait state)."""
    rule = profile.mfma_next_issue
    if rule is None or not passes or kind not in rule[1]:
        return 0
    return passes + rule[0]


def hazard_gap(profile) -> str | None:
    """Why the profile's hazard table cannot be checked dynamically, or None when it can.

    The table's MFMA rows are `passes + N` by the writer's pass count, so checking them needs the profile's
    `mfma.passes`; without it every MFMA would be held to the row's worst case and correct compiler output
    refused. Such a profile gets waits, barriers, LDS races and uninitialized reads checked, and strict mode
    says that hazards were not (`RunStats.strict`, a StrictWarning). gfx942 and gfx950 have their tables (gfx950's
    with its own GCNHazardRecognizer terms and the f8f6f4 MFMAs' format-dependent passes, `mfma_timing`)."""
    if profile.hazard_rules and not profile.mfma_passes:
        return (f"specs/targets/{profile.target}.yaml has no mfma.passes, so its MFMA hazard rows cannot be checked "
                "per pass count")
    return None
