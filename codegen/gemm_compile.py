"""From a GEMM problem to a code object with the direct generator: choose a config, lower, encode, write the
code object with computed descriptor, metadata and embedded kernel contract."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from jitgemm.isa.model import Spec
from jitgemm.isa.targets import TargetProfile

from jitgemm import isa

from .gemm_asm import KERNARGS, LoweredKernel, lower_gemm
from .gemm_config import default_config, fit_vectors, validate_config, widest_vectors
from .gemm_contract import gemm_contract
from .gemm_ir import GemmConfig, GemmProblem
from .gemm_text import format_ir

__all__ = ["CompiledGemm", "choose_config", "compile_gemm", "kernel_name", "widest_vectors"]


@dataclass(frozen=True)
class CompiledGemm:
    problem: GemmProblem          # the kernel class it was compiled for
    config: GemmConfig
    name: str
    code_object: bytes
    code: bytes
    contract: dict
    lowered: LoweredKernel
    offsets: tuple[int, ...]      # byte offset of each lowered item
    ir_text: str


def kernel_name(problem: GemmProblem, config: GemmConfig) -> str:
    p = problem
    tail = f"{p.layout}_{config.tile_m}x{config.tile_n}x{config.depth_k}"
    digest = hashlib.sha256(format_ir(p.kernel_class(), config).encode()).hexdigest()[:8]
    return f"jitgemm_{p.a.name}_{p.b.name}_{p.d.name}_{tail}_{digest}"


def choose_config(problem: GemmProblem, spec: Spec, target: TargetProfile) -> GemmConfig:
    """The default config for the dtypes and size (gemm_config.default_config: tile, waves, MFMA, prefetch,
    LDS buffers, the widest vector loads the problem allows, the LDS padding with the fewest bank conflicts)."""
    from .gemm_asm import GemmLowering

    return fit_vectors(problem, widest_vectors(problem, default_config(problem, spec, target)), spec,
                       accept=lambda c: GemmLowering(problem, c, spec, target))


def compile_gemm(problem: GemmProblem, config: GemmConfig | None = None, *, spec: Spec | None = None,
                 target: str = "gfx942", xnack: str = "any", sramecc: str = "any",
                 name: str | None = None, embed_contract: bool = True) -> CompiledGemm:
    """Compile the kernel class of `problem`. Without a config: the default for the dtypes and size, with the
    widest vector loads the problem allows. `embed_contract=False` leaves the contract out of the metadata
    (for a sidecar file instead)."""
    from jitgemm.isa.encoder import encode

    from . import codeobj

    spec = spec or isa.load_spec(target)
    profile = isa.target_profile(target)
    if config is None:
        config = choose_config(problem, spec, profile)
    validate_config(problem, config, spec, profile)
    cls = problem.kernel_class()
    name = name or kernel_name(problem, config)
    lowered = lower_gemm(cls, config, spec, profile, name)
    assembled = encode(lowered.instructions, spec)
    code = assembled.code
    target_id = codeobj.target_id(codeobj.targets.target(profile.target), xnack, sramecc).split("--", 1)[1]
    contract = gemm_contract(cls, config, lowered, target_id, hashlib.sha256(code).hexdigest())
    integer = cls.acc.kind == "int"
    args = []
    for arg_name, offset, size, kind in KERNARGS:
        if kind == "ptr":
            args.append(codeobj.KernelArg.buffer(arg_name, type_name="void*"))
        else:
            tname = "int" if kind == "i32" or integer else "float"
            args.append(codeobj.KernelArg(arg_name, size, "by_value", offset=offset, type_name=tname))
    desc = codeobj.KernelDescription(
        name=name, code=code, args=args, group_segment_size=lowered.lds_bytes,
        next_free_vgpr=max(1, lowered.next_free_vgpr), next_free_sgpr=lowered.next_free_sgpr,
        next_free_agpr=lowered.next_free_agpr, workgroup_id=(True, True, True), workitem_id=0,
        float_denorm_mode_32=3,  # keep fp32 denormals (IEEE results, as LLVM's compute kernels do)
        max_flat_workgroup_size=lowered.workgroup_size, contract=contract if embed_contract else None,
    )
    blob = codeobj.write(desc, profile.target, xnack=xnack, sramecc=sramecc)
    return CompiledGemm(cls, config, name, blob, code, contract, lowered, assembled.offsets,
                        format_ir(cls, config))
