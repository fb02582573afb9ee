"""The direct generator: the tiled GEMM IR lowered to AMDGPU instructions (codegen/gemm_asm.py), encoded
from the spec and written into a code object with computed descriptor, metadata and embedded kernel
contract. Stages: ir -> asm -> co."""

from __future__ import annotations

import hashlib

from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .gemm_contract import gemm_contract
from .gemm_ir import GemmConfig, GemmProblem, IRError
from .gemm_plan import GemmPlan, ds_offset_limit
from .gemm_text import format_ir
from .generator import Build, CompiledKernel, Generator, Stage
from .kernel_abi import kernargs

__all__ = ["DirectGenerator", "compile_gemm"]

VERSION = "0.2.1"  # 0.2.1: s_nop for the hazards strict emulation found (asm_emit.py, gfx942.yaml hazards)


def _ir(build: Build) -> str:
    return format_ir(build.problem, build.config)


def _asm(build: Build) -> str:
    """Lower the plan to instructions; the stage text is their listing (LLVM's syntax, one per line)."""
    from jitgemm.isa.disasm.printer import format_item

    from .gemm_asm import lower_gemm
    from .gemm_asm_mx import lower_mx_gemm

    lower = lower_mx_gemm if build.problem.scaled else lower_gemm     # block-scaled, sub-byte, weight-only
    build.lowered = lower(build.problem, build.config, build.spec, build.profile, build.name)
    texts: dict[int, str] = {}     # the emitter hands out one object per repeated instruction: print it once
    lines = []
    for item in build.lowered.instructions:
        text = texts.get(id(item))
        if text is None:
            text = texts[id(item)] = format_item(item) + "\n"
        lines.append(text)
    return "".join(lines)


def _co(build: Build) -> bytes:
    """Encode, then write the code object: descriptor from the lowering's registers, metadata, contract."""
    from jitgemm.isa.asm.encoder import encode

    from . import codeobj

    lowered, cls = build.lowered, build.problem
    assert lowered is not None
    assembled = encode(lowered.instructions, build.spec)
    build.code, build.offsets = assembled.code, assembled.offsets
    from .generator import generator

    gen = generator("asm")
    build.contract = gemm_contract(cls, build.config, lowered, build.target_id, hashlib.sha256(build.code).hexdigest(),
                                   generator=gen.name, version=gen.version())
    integer = cls.acc.kind == "int"
    args = []
    for arg_name, offset, size, kind in kernargs(cls):
        if kind == "ptr":
            args.append(codeobj.KernelArg.buffer(arg_name, type_name="void*"))
        else:
            tname = "int" if kind == "i32" or integer else "float"
            args.append(codeobj.KernelArg(arg_name, size, "by_value", offset=offset, type_name=tname))
    desc = codeobj.KernelDescription(
        name=build.name, code=build.code, args=args, group_segment_size=lowered.lds_bytes,
        next_free_vgpr=max(1, lowered.next_free_vgpr), next_free_sgpr=lowered.next_free_sgpr,
        next_free_agpr=lowered.next_free_agpr, workgroup_id=(True, True, True), workitem_id=0,
        float_denorm_mode_32=3,  # keep fp32 denormals (IEEE results, as LLVM's compute kernels do)
        max_flat_workgroup_size=lowered.workgroup_size, contract=build.contract if build.embed_contract else None,
    )
    return codeobj.write(desc, build.profile.target, xnack=build.xnack, sramecc=build.sramecc)


class DirectGenerator(Generator):
    """Direct assembly: every instruction chosen and scheduled here, registers allocated by the lowering (it
    never spills: a config over the register budget is refused by the plan)."""

    option = "asm"
    title = "direct"
    name = "jitgemm-asm"

    def version(self) -> str:
        return VERSION

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("ir", _ir), Stage("asm", _asm), Stage("co", _co))

    def plan(self, problem: GemmProblem, config: GemmConfig, spec: Spec, profile: TargetProfile) -> GemmPlan:
        """The shared plan, and the limit of this lowering's LDS writes: each write's place in the tile rides in
        the DS instruction's offset field (the second buffer gets a base register of its own when it must), so
        one buffer's writes must fit the field (LLVM's lowering adds base registers itself)."""
        plan = super().plan(problem, config, spec, profile)
        limit = ds_offset_limit(spec)
        for st in (plan.a, plan.b):
            if st is not None and st.max_write_offset > limit:
                raise IRError(f"the LDS tile of {st.name.upper()} spans {st.max_write_offset} bytes past a "
                              f"work-item's write base; DS instruction offsets reach {limit}: use a smaller tile, "
                              "depth_k or lds_pad")
        return plan

    def planned_resources(self, plan: GemmPlan, profile: TargetProfile) -> dict[str, int]:
        """The plan's resource model is this lowering's upper bound (tests/codegen/test_gemm_config.py)."""
        return {"vgprs": plan.vgprs, "agprs": plan.agprs, "sgprs": 0, "lds": plan.lds_bytes, "scratch": 0}


def compile_gemm(problem: GemmProblem, config: GemmConfig | None = None, *, spec: Spec | None = None,
                 target: str = "gfx942", xnack: str = "any", sramecc: str = "any",
                 name: str | None = None, embed_contract: bool = True) -> CompiledKernel:
    """Compile the kernel class of `problem` with the direct generator. Without a config: the default for the
    dtypes and size. `embed_contract=False` leaves the contract out of the metadata (for a sidecar file)."""
    from .generator import generator

    return generator("asm").compile(problem, config, spec=spec, target=target, xnack=xnack, sramecc=sramecc,
                                    name=name, embed_contract=embed_contract)
