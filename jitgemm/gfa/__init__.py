"""hipBLASLt's Gemm-From-Anywhere (GFA) contract, both ways: `custom.config` (in a `.s` or a code object's
`.amdgpu_metadata`, completed by a Tensile test YAML's CustomKernel/ProblemType) -> jitgemm's contract
(`read_kernel`), and any kernel jitgemm holds -> a GFA `.s` with a complete `custom.config` plus its manifest entry
(`export`). What each GFA name means is data: specs/gfa.yaml."""

from __future__ import annotations

from .reader import to_contract
from .source import GfaError, GfaKernel, assembly_target, read_kernel, target_of

__all__ = ["GfaError", "GfaKernel", "assembly_target", "read_kernel", "target_of", "to_contract"]
