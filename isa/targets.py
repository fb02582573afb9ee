"""Target profiles: per-architecture facts that are not in the ISA XML (wave size, register budgets, LDS,
peak rates, which spec file pairs with the target). They live as YAML in `specs/targets/` so adding an
architecture means adding data, not code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from .errors import SpecError

_REQUIRED = ("target", "family", "spec_file", "wavefront_size")


@dataclass(frozen=True)
class TargetProfile:
    target: str
    family: str
    spec_file: str
    legacy_spec_files: tuple[str, ...]
    bundled_spec: str | None
    spec_release: str | None
    wavefront_size: int
    values: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        """Any other number of the profile (vgprs, lds_bytes_per_workgroup, peak_matrix_tflops, ...)."""
        return self.values.get(key, default)


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
    where = f"specs/targets/{name}.yaml"
    try:
        data = yaml.safe_load(res.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(f"malformed target profile: {exc}", path=where,
                        line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise SpecError("target profile is not a mapping", path=where)
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise SpecError(f"target profile lacks {', '.join(missing)}", path=where)
    return TargetProfile(
        target=str(data["target"]), family=str(data["family"]), spec_file=str(data["spec_file"]),
        legacy_spec_files=tuple(data.get("legacy_spec_files") or ()), bundled_spec=data.get("bundled_spec"),
        spec_release=data.get("spec_release"), wavefront_size=int(data["wavefront_size"]), values=dict(data),
    )


def target_for_architecture(architecture_name: str) -> str | None:
    """The target whose profile's `family` is a spec's ArchitectureName ("AMD CDNA 4" -> gfx950), or None.

    A spec file names its architecture, not a processor; the profiles say which processor each family is, so
    tools that need a target for a spec (llvm-mc's -mcpu, the emulator's numeric rules) ask here."""
    wanted = architecture_name.strip().lower().removeprefix("amd ").strip()
    hits = [t for t in known_targets() if target_profile(t).family.strip().lower() == wanted]
    return hits[0] if len(hits) == 1 else None


def target_of_spec(spec: Any, default: str = "gfx942") -> str:
    """The target a loaded Spec describes (by its ArchitectureName), else `default`."""
    arch = getattr(getattr(spec, "architecture", None), "name", None)
    return (target_for_architecture(arch) if arch else None) or default
