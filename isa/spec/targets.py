"""Target profiles: per-architecture facts that are not in the ISA XML (wave size, register budgets, LDS,
peak rates, which spec file pairs with the target). They live as YAML in `specs/targets/` so adding an
architecture means adding data, not code.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from jitgemm.isa.errors import SpecError
from jitgemm.isa.hazards import HazardRule, hazard_rule

# The profile's schema: key -> (accepted types, default when the key is absent). Keys without a default are
# required. `None` in the accepted types means the YAML may say `null` (a number this target does not have,
# such as AGPRs or a register granule on RDNA). Unknown keys are kept in `values` for their readers.
_NUM = (int, float)
_SCHEMA: dict[str, tuple[tuple[type, ...], Any]] = {
    "target": ((str,), ...),
    "family": ((str,), ...),
    "spec_file": ((str,), ...),
    "legacy_spec_files": ((list,), ...),
    "bundled_spec": ((str, type(None)), ...),
    "spec_release": ((str, type(None)), ...),
    "wavefront_size": ((int,), ...),
    "vgprs": ((int, type(None)), ...),
    "arch_vgprs": ((int, type(None)), ...),
    "agprs": ((int,), ...),
    "sgprs": ((int,), ...),
    "lds_bytes_per_workgroup": ((int,), ...),
    "max_workgroup_size": ((int,), ...),
    "compute_units": ((int,), ...),
    "lds_banks": ((int, type(None)), None),          # None: the LDS bank model does not know this target
    "peak_matrix_tflops": ((dict,), ...),
    "hbm_bandwidth_gbs": (_NUM + (type(None),), ...),
    "hazards": ((list,), []),                         # no table: the emitter inserts no wait states
    "mfma": ((dict,), {}),                            # MFMA timing (passes, SMFMA input formats); see below
    "hazard_classes": ((dict,), {}),                  # class -> instructions in it, before the group rule
    "wait_counters": ((dict,), {}),
    "unprinted_modifiers": ((dict,), {}),             # {encoding: [modifier, ...]} a listing leaves out
    "code_object": ((dict, type(None)), None),       # None: no code objects are written for this target
    "fp8_flavour": ((str, type(None)), None),         # "fnuz" | "ocp": the 8-bit float encoding its MFMAs read;
                                                      # None: the target has no fp8 matrix instructions
}
_CODE_OBJECT_KEYS = {"elf_mach": int, "architected_flat_scratch": bool, "vgpr_encoding_granule": int,
                     "sgpr_encoding_granule": int, "max_user_sgprs": int}


@dataclass(frozen=True)
class CodeObjectFacts:
    """What the code-object writer needs beyond the register and LDS budgets (AMDGPUUsage: "AMDGPU ELF
    Header" machine numbers, kernel descriptor granules, user SGPRs, architected flat scratch)."""

    elf_mach: int
    architected_flat_scratch: bool
    vgpr_encoding_granule: int
    sgpr_encoding_granule: int
    max_user_sgprs: int


_MFMA_KEYS = {"passes": dict, "smfma_input_formats": list, "fp8_operand_passes": dict, "next_issue": dict}
_NEXT_ISSUE_KINDS = ("xdl", "smfma", "dgemm")

# One row of the `devices` table: key -> accepted types (all required but `assumed`). The profile's
# single-device keys are derived from the first device (`_DERIVED`), so a profile with devices must not state them.
_DEVICE_KEYS: dict[str, tuple[type, ...]] = {
    "name": (str,), "cu_num": (int,), "xcds": (int,), "clock_mhz": _NUM, "hbm_gbs": _NUM, "l2_bytes": (int,),
    "mall_bytes": (int,), "mall_gbs": _NUM, "peak_matrix_tflops": (dict,), "sources": (dict,), "assumed": (list,),
}
_DERIVED = {"compute_units": "cu_num", "clock_mhz": "clock_mhz", "hbm_bandwidth_gbs": "hbm_gbs",
            "last_level_cache_bytes": "mall_bytes", "last_level_cache_gbs": "mall_gbs",
            "peak_matrix_tflops": "peak_matrix_tflops"}


@dataclass(frozen=True)
class Device:
    """One product of a target (MI300X, MI308X, ... of gfx942): what the timing model needs to know about the
    machine a kernel runs on. `l2_bytes` is per XCD; `mall` is the Infinity Cache shared by all XCDs; `sources`
    cites each number; `assumed` names the numbers without a public AMD figure."""

    name: str
    cu_num: int
    xcds: int
    clock_mhz: float
    hbm_gbs: float
    l2_bytes: int
    mall_bytes: int
    mall_gbs: float
    peak_matrix_tflops: dict[str, float]
    sources: dict[str, str]
    assumed: tuple[str, ...] = ()

    @property
    def cus_per_xcd(self) -> int:
        return self.cu_num // self.xcds


def _device(row: Any, where: str) -> Device:
    """A `devices` row checked for its keys and types (SpecError naming the row and key, and what is accepted)."""
    if not isinstance(row, dict):
        raise SpecError(f"{where} is {row!r}; accepted: a mapping with keys {', '.join(_DEVICE_KEYS)}")
    unknown = sorted(set(row) - set(_DEVICE_KEYS))
    if unknown:
        raise SpecError(f"{where} has unknown keys {', '.join(unknown)}; accepted: {', '.join(_DEVICE_KEYS)}")
    for key, types in _DEVICE_KEYS.items():
        if key not in row:
            if key == "assumed":
                continue
            raise SpecError(f"{where} lacks {key!r}")
        value = row[key]
        if not isinstance(value, types) or isinstance(value, bool):
            raise SpecError(f"{where}.{key} is {value!r}; accepted: {' or '.join(t.__name__ for t in types)}")
    missing = sorted(set(_DEVICE_KEYS) - {"name", "sources", "assumed"} - set(row["sources"]))
    if missing:
        raise SpecError(f"{where}.sources lacks {', '.join(missing)}; every number cites its source")
    unknown = sorted(set(row.get("assumed", ())) - set(_DEVICE_KEYS))
    if unknown:
        raise SpecError(f"{where}.assumed names unknown keys {', '.join(unknown)}")
    if row["cu_num"] < 1 or row["xcds"] < 1 or row["cu_num"] % row["xcds"]:
        raise SpecError(f"{where}: cu_num {row['cu_num']} is not a positive multiple of xcds {row['xcds']}")
    return Device(**{**row, "assumed": tuple(row.get("assumed", ())),
                     "peak_matrix_tflops": {k: float(v) for k, v in row["peak_matrix_tflops"].items()}})


@dataclass(frozen=True)
class TargetProfile:
    """One target's facts, typed and checked when the YAML is read: code asks the attribute, never a
    `.get(key, default)` with a default of its own (two defaults of one number disagree sooner or later)."""

    target: str
    family: str
    spec_file: str
    legacy_spec_files: tuple[str, ...]
    bundled_spec: str | None
    spec_release: str | None
    wavefront_size: int
    values: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        """A number of the profile the typed attributes below do not cover (clock_mhz, fp8_flavour, ...)."""
        return self.values.get(key, default)

    @property
    def fp8_flavour(self) -> str | None:
        """Which 8-bit float encoding the matrix instructions read: "fnuz" (gfx942) or "ocp" (gfx950)."""
        return self.values["fp8_flavour"]

    @property
    def arch_vgprs(self) -> int:
        """v0..v(N-1): the VGPRs a kernel addresses (0 where the profile has no number)."""
        return self.values["arch_vgprs"] or 0

    @property
    def agprs(self) -> int:
        """AccVGPRs (a0..): 256 on CDNA 3/4, 0 on RDNA."""
        return self.values["agprs"]

    @property
    def sgprs(self) -> int:
        return self.values["sgprs"]

    @property
    def lds_bytes_per_workgroup(self) -> int:
        return self.values["lds_bytes_per_workgroup"]

    @property
    def lds_banks(self) -> int | None:
        return self.values["lds_banks"]

    @property
    def max_workgroup_size(self) -> int:
        return self.values["max_workgroup_size"]

    @property
    def compute_units(self) -> int:
        """Compute units of the target's reference product (MI300X: 304), for occupancy and tile choice."""
        return self.values["compute_units"]

    @property
    def peak_matrix_tflops(self) -> dict[str, float]:
        return self.values["peak_matrix_tflops"]

    @property
    def hbm_bandwidth_gbs(self) -> float | None:
        return self.values["hbm_bandwidth_gbs"]

    @property
    def devices(self) -> tuple[Device, ...]:
        """The target's products, the default (the single-device numbers' source) first; empty when the profile
        lists none."""
        return self.values["devices"]

    def device(self, name_or_cu_num: str | int | None = None) -> Device:
        """A device by name (case-insensitive, "MI300X") or by CU count (aiter's `cu_num`: the first device with
        it); None: the default device. SpecError listing the devices when none matches."""
        if not self.devices:
            raise SpecError(f"target {self.target} lists no devices")
        if name_or_cu_num is None:
            return self.devices[0]
        for dev in self.devices:
            if isinstance(name_or_cu_num, int) and not isinstance(name_or_cu_num, bool):
                if dev.cu_num == name_or_cu_num:
                    return dev
            elif str(name_or_cu_num).strip().lower() in (dev.name.lower(), str(dev.cu_num)):
                return dev
        known = ", ".join(f"{d.name} ({d.cu_num} CUs)" for d in self.devices)
        raise SpecError(f"target {self.target} has no device {name_or_cu_num!r}; accepted: {known}")

    @property
    def hazards(self) -> tuple[dict, ...]:
        return tuple(self.values["hazards"])

    @property
    def hazard_rules(self) -> tuple[HazardRule, ...]:
        """The hazard table as typed rows (checked when the profile was read)."""
        return self.values["hazard_rules"]

    @property
    def mfma_passes(self) -> dict[str, int]:
        """Passes (4 clocks each) of each MFMA, by spec instruction name: the one source of MFMA timing for the
        hazard checks and the pipeline model (empty when the profile has no table)."""
        return self.values["mfma"].get("passes", {})

    @property
    def mfma_fp8_operand_passes(self) -> dict[str, int]:
        """Passes of the MFMAs whose time depends on their operand formats (gfx950's f8f6f4) when A or B is an
        8-bit float (CBSZ/BLGP 0 or 1); `mfma_passes` holds their count otherwise (empty: no such MFMA)."""
        return self.values["mfma"].get("fp8_operand_passes", {})

    @property
    def mfma_next_issue(self) -> tuple[int, frozenset[str]] | None:
        """(plus, kinds): a wave's next MFMA issues no earlier than the previous MFMA's passes + `plus` wait states
        after it, when the previous one is of a kind in `kinds` (the matrix pipe accepts no new MFMA while it is
        busy: the profile's `mfma.next_issue`, with its sources); None: not stated, every MFMA is one wait state."""
        row = self.values["mfma"].get("next_issue")
        if not row:
            return None
        return int(row["plus"]), frozenset(row["kinds"])

    @property
    def smfma_input_formats(self) -> frozenset[str]:
        """Input data formats whose MFMAs take the non-XDL (SMFMA) path (LLVM SIInstrInfo::isXDL)."""
        return frozenset(self.values["mfma"].get("smfma_input_formats", ()))

    @property
    def hazard_classes(self) -> dict[str, list[str]]:
        """Hazard classes the target profile names instructions for (a class the functional groups cannot tell
        apart, e.g. gfx950's v_permlane*_swap readers), checked against the spec by codegen/asm_emit.py."""
        return self.values["hazard_classes"]

    @property
    def wait_counters(self) -> dict[str, list[str]]:
        return self.values["wait_counters"]

    @property
    def unprinted_modifiers(self) -> dict[str, frozenset[str]]:
        """Per encoding, the modifiers whose bits this target's listings do not show (the decoded instruction
        still carries them, so re-encoding it is exact): what LLVM's disassembler leaves out for the target."""
        return {enc: frozenset(names) for enc, names in self.values["unprinted_modifiers"].items()}

    @property
    def vgprs(self) -> int:
        """The unified VGPR + AGPR file (512 on gfx90a and later CDNA; 0 where the profile has no number)."""
        return self.values["vgprs"] or 0

    @property
    def code_object(self) -> CodeObjectFacts | None:
        return self.values["code_object"]


def device_for(arch: str, cu_num: int) -> Device:
    """The device an (arch, cu_num) pair names, as aiter's tuned-table rows do (gfx942 + 80 -> MI308X)."""
    return target_profile(arch).device(int(cu_num))


def base_target(target_id: str) -> str:
    """`gfx942:sramecc+:xnack-` -> `gfx942` (features do not change which profile applies)."""
    return target_id.split(":", 1)[0].strip().lower()


def known_targets() -> tuple[str, ...]:
    folder = resources.files("jitgemm.specs.targets")
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")))


@functools.cache
def target_profile(target_id: str) -> TargetProfile:
    """Profile of a target id; SpecError listing the known targets when there is none."""
    name = base_target(target_id)
    res = resources.files("jitgemm.specs.targets").joinpath(f"{name}.yaml")
    if not res.is_file():
        raise SpecError(f"unknown target {target_id!r}; known targets: {', '.join(known_targets())}")
    shipped = resources.files("jitgemm.specs.targets").joinpath(f"{name}.yaml.parsed")
    return parse_profile(res.read_text(encoding="utf-8"), f"specs/targets/{name}.yaml", shipped)


PARSED_MAGIC = "jitgemm-parsed-profile"


def preparsed_document(text: str, shipped: Any) -> Any | None:
    """The document of a profile's YAML text from the pre-parsed file the source tree ships beside it
    (`<name>.yaml.parsed`, tools/spec_preparse/build.py), or None when it is absent, damaged or made from another
    text (sealed, and naming the sha256 of the text it was parsed from: a stale one is never used). A fully cold
    process then imports no PyYAML (issue 31)."""
    import hashlib

    from jitgemm.util.files import read_sealed

    from .cache import unpack

    try:
        raw = read_sealed(shipped) if shipped is not None and shipped.is_file() else None
        entry = unpack(raw) if raw is not None else None
    except Exception:   # msgpack's several error types, an unreadable file: parsed from the YAML instead
        return None
    if not isinstance(entry, dict) or entry.get("magic") != PARSED_MAGIC \
            or entry.get("sha256") != hashlib.sha256(text.encode()).hexdigest():
        return None
    return entry.get("document")


def write_preparsed_profile(yaml_path: Any) -> Any:
    """Write `<name>.yaml.parsed` beside a profile's YAML (what `preparsed_document` reads); ValueError when the
    document is not plain data msgpack gives back unchanged."""
    import hashlib
    import os
    from pathlib import Path

    from jitgemm.util.files import atomic_write, seal
    from jitgemm.util.safe_yaml import load_yaml

    from .cache import pack, unpack

    path = Path(yaml_path)
    text = path.read_text(encoding="utf-8")
    document = load_yaml(text)
    if unpack(pack(document)) != document:
        raise ValueError(f"{path}: the profile is not plain data (msgpack does not give it back unchanged)")
    out = path.with_name(path.name + ".parsed")
    atomic_write(out, seal(pack({"magic": PARSED_MAGIC, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                                 "document": document})))
    os.chmod(out, 0o644)   # shipped data, read by every user
    return out


def _yaml_document(text: str, where: str, shipped: Any = None) -> Any:
    """The YAML document of a profile's text. Importing PyYAML and parsing the profiles is a tenth of a new
    `jitgemm disasm` process, so the document of each text is kept in the cache (`target-profiles/`, keyed by the
    text's sha256, sealed like every cache entry: a damaged one is parsed again); validation always runs."""
    import hashlib

    from jitgemm.util.files import read_sealed, write_sealed

    from .cache import cache_root, pack, unpack

    path = cache_root() / "target-profiles" / f"{hashlib.sha256(text.encode()).hexdigest()}.msgpack"
    raw = read_sealed(path)
    if raw is not None:
        try:
            return unpack(raw)
        except Exception:   # msgpack's several error types: a corrupt entry, parsed again below
            pass
    document = preparsed_document(text, shipped)    # the source tree's pre-parsed file (a fresh cache folder)
    if document is not None:
        return document
    import yaml

    try:   # libyaml's parser when PyYAML has it (30x faster)
        from jitgemm.util.safe_yaml import load_yaml

        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(f"malformed target profile: {exc}", path=where,
                        line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None) from None
    try:
        if unpack(pack(data)) == data:   # only documents plain data survives unchanged (no dates, no sets)
            write_sealed(path, pack(data))
    except (OSError, TypeError, ValueError):
        pass
    return data


def parse_profile(text: str, where: str, shipped: Any = None) -> TargetProfile:
    """A profile from its YAML text, every known key checked for presence and type (SpecError naming the file
    and key, and what is accepted); `shipped`: the pre-parsed file beside it (`preparsed_document`)."""
    data = _yaml_document(text, where, shipped)
    if not isinstance(data, dict):
        raise SpecError("target profile is not a mapping", path=where)
    values = dict(data)
    rows = values.get("devices", [])
    if not isinstance(rows, list):
        raise SpecError(f"target profile key 'devices' is {rows!r}; accepted: a list of devices", path=where)
    values["devices"] = tuple(_device(row, f"{where}: devices[{i}]") for i, row in enumerate(rows))
    if values["devices"]:
        stated = sorted(set(_DERIVED) & set(data))
        if stated:
            raise SpecError(f"target profile states {', '.join(stated)} beside `devices`; they are derived from the "
                            f"first device (one home per fact)", path=where)
        first = values["devices"][0]
        for key, attr in _DERIVED.items():
            values[key] = getattr(first, attr)
    for key, (types, default) in _SCHEMA.items():
        if key not in values:
            if default is ...:
                raise SpecError(f"target profile lacks {key!r}", path=where)
            values[key] = copy.deepcopy(default)
        value = values[key]
        if not isinstance(value, types) or isinstance(value, bool):
            accepted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise SpecError(f"target profile key {key!r} is {value!r}; accepted: {accepted}", path=where)
    if values["fp8_flavour"] not in ("fnuz", "ocp", None):
        raise SpecError(f"target profile key 'fp8_flavour' is {values['fp8_flavour']!r}; accepted: fnuz, ocp, null",
                        path=where)
    if values["code_object"] is not None:
        facts = values["code_object"]
        for key, kind in _CODE_OBJECT_KEYS.items():
            if not isinstance(facts.get(key), kind) or (kind is int and isinstance(facts.get(key), bool)):
                raise SpecError(f"target profile key 'code_object.{key}' is {facts.get(key)!r}; accepted: "
                                f"{kind.__name__}", path=where)
        unknown = sorted(set(facts) - set(_CODE_OBJECT_KEYS))
        if unknown:
            raise SpecError(f"target profile key 'code_object' has unknown keys {', '.join(unknown)}; accepted: "
                            f"{', '.join(_CODE_OBJECT_KEYS)}", path=where)
        values["code_object"] = CodeObjectFacts(**facts)
    values["hazard_rules"] = tuple(hazard_rule(row, f"{where}: hazards[{i}]")
                                   for i, row in enumerate(values["hazards"]))
    mfma = values["mfma"]
    unknown = sorted(set(mfma) - set(_MFMA_KEYS))
    if unknown:
        raise SpecError(f"target profile key 'mfma' has unknown keys {', '.join(unknown)}; accepted: "
                        f"{', '.join(_MFMA_KEYS)}", path=where)
    for key, kind in _MFMA_KEYS.items():
        if key in mfma and not isinstance(mfma[key], kind):
            raise SpecError(f"target profile key 'mfma.{key}' is {mfma[key]!r}; accepted: {kind.__name__}", path=where)
    for table in ("passes", "fp8_operand_passes"):
        for name, passes in mfma.get(table, {}).items():
            if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
                raise SpecError(f"target profile key 'mfma.{table}.{name}' is {passes!r}; accepted: a positive int",
                                path=where)
    nxt = mfma.get("next_issue")
    if nxt is not None:
        plus, kinds = nxt.get("plus"), nxt.get("kinds")
        if (set(nxt) != {"plus", "kinds"} or not isinstance(plus, int) or isinstance(plus, bool) or plus < 0
                or not isinstance(kinds, list) or not kinds or not set(kinds) <= set(_NEXT_ISSUE_KINDS)):
            raise SpecError(f"target profile key 'mfma.next_issue' is {nxt!r}; accepted: {{plus: an int >= 0, "
                            f"kinds: a non-empty list of {', '.join(_NEXT_ISSUE_KINDS)}}}", path=where)
    return TargetProfile(
        target=values["target"], family=values["family"], spec_file=values["spec_file"],
        legacy_spec_files=tuple(values["legacy_spec_files"]), bundled_spec=values["bundled_spec"],
        spec_release=values["spec_release"], wavefront_size=values["wavefront_size"], values=values,
    )


def target_for_architecture(architecture_name: str) -> str | None:
    """The target whose profile's `family` is a spec's ArchitectureName ("AMD CDNA 4" -> gfx950), or None.

    A spec file names its architecture, not a processor; the profiles say which processor each family is, so
    tools that need a target for a spec (llvm-mc's -mcpu, the emulator's numeric rules) ask here."""
    wanted = architecture_name.strip().lower().removeprefix("amd ").strip()
    hits = [t for t in known_targets() if target_profile(t).family.strip().lower() == wanted]
    return hits[0] if len(hits) == 1 else None


_SPEC_TARGETS: dict[int, tuple[Any, str]] = {}    # id(spec) -> (spec, the target it was loaded for)


def note_spec_target(spec: Any, target: str) -> None:
    """Remember the target a spec was loaded for, whose profile's family is the spec's ArchitectureName
    (isa/spec/sources.py): `target_of_spec` then answers without parsing every other profile (a YAML parse
    each in a new process, issue 31)."""
    _SPEC_TARGETS[id(spec)] = (spec, target)


def target_of_spec(spec: Any, default: str = "gfx942") -> str:
    """The target a loaded Spec describes (by its ArchitectureName), else `default`."""
    known = _SPEC_TARGETS.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    arch = getattr(getattr(spec, "architecture", None), "name", None)
    return (target_for_architecture(arch) if arch else None) or default
