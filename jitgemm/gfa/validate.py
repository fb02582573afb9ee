"""hipBLASLt's own rules for a GFA kernel's custom.config, restated (CustomKernels/README.md "Validation rules" @
3b85eda1 in ROCm/rocm-libraries projects/hipblaslt/tensilelite/Tensile; Tensile.ValidateMetadata @ 89041967 calls
CustomKernels.validateCustomKernelMetadata): a Tensile-generated kernel (no Source) needs
InternalSupportParams.KernArgsVersion; an external one (Source) also Source.Origin, a Features mapping, Version,
ProblemType, MatrixInstruction and CustomKernel with args/macrotile/threads/grid. On top of the presence checks,
every argument's type and semantic must be one hipBLASLt's CustomKernel record knows (specs/gfa.yaml: the
semantics jitgemm maps or refuses, and CustomKernels.py's metadata-name table @ 0132ec78).

TensileLite's validator itself is not run: Tensile.CustomKernels imports Tensile.Common.ValidParameters, which
needs the compiled rocisa extension (not buildable here from public source without its C++ toolchain)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .source import gfa_data


def _get(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def validate(config: Mapping[str, Any]) -> list[str]:
    """The rules a custom.config breaks (empty: it passes), each naming the key path."""
    if not isinstance(config, Mapping):
        return ["custom.config: not a mapping"]
    problems = []
    external = "Source" in config
    required = gfa_data()["required_external"] if external else ["InternalSupportParams.KernArgsVersion"]
    for path in required:
        if _get(config, path) is None:
            problems.append(f"custom.config.{path}: missing (required for "
                            f"{'an external' if external else 'a Tensile-generated'} kernel)")
    if external and not isinstance(config.get("Features"), Mapping):
        problems.append("custom.config.Features: must be a mapping")
    ck = config.get("CustomKernel")
    data = gfa_data()
    known = set(data["semantics"]) | set(data["refused_semantics"])
    for i, arg in enumerate((ck or {}).get("args") or [] if isinstance(ck, Mapping) else []):
        if not isinstance(arg, Mapping):
            problems.append(f"custom.config.CustomKernel.args.{i}: not a mapping")
            continue
        if arg.get("type") not in data["types"]:
            problems.append(f"custom.config.CustomKernel.args.{i}.type: {arg.get('type')!r} is not one of "
                            f"{', '.join(data['types'])}")
        if arg.get("semantic") not in known:
            problems.append(f"custom.config.CustomKernel.args.{i}.semantic: {arg.get('semantic')!r} is not a "
                            f"CustomArgSemantic hipBLASLt knows")
    if isinstance(ck, Mapping):
        for i, g in enumerate(ck.get("grid") or []):
            if g not in data["grid"] and g not in data["refused_grid"]:
                problems.append(f"custom.config.CustomKernel.grid.{i}: {g!r} is not a CustomGridSize")
        if not (isinstance(ck.get("macrotile"), list) and len(ck["macrotile"]) == 3):
            problems.append("custom.config.CustomKernel.macrotile: must be [MT0, MT1, DepthU]")
        if not (isinstance(ck.get("threads"), list) and len(ck["threads"]) == 3):
            problems.append("custom.config.CustomKernel.threads: must be [x, y, z]")
    return problems
