"""The LLVM generator: the tiled GEMM IR built as LLVM IR with llvmlite, run through the O3 pipeline and the
AMDGPU backend to a relocatable object, the kernel contract put into its metadata and the object linked with
the project's own linker. Stages: ir -> llir -> co, and amdgcn (LLVM's assembly text) on demand. The
counterpart of codegen/direct_generator.py; both follow the same plan (codegen/gemm_plan.py) and ABI
(codegen/kernel_abi.py)."""

from __future__ import annotations

import hashlib
import time

from jitgemm.codegen import codeobj
from jitgemm.codegen.codeobj.annotate import set_kernel_metadata
from jitgemm.codegen.gemm_contract import gemm_contract
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_plan import GemmPlan
from jitgemm.codegen.gemm_text import format_ir
from jitgemm.codegen.generator import Build, CompiledKernel, Generator, Stage
from jitgemm.codegen.kernel_abi import LoweredKernel, kernargs
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .backend import data_layout as target_data_layout
from .backend import run_backend
from .mx_plan import accept_mx

GENERATOR = "jitgemm-llvm"
VERSION = "0.2.0"


def llvm_features(xnack: str = "any", sramecc: str = "any") -> str:
    """LLVM's -mattr string for a target id's feature settings ("any" leaves a feature unset)."""
    feats = []
    for name, value in (("xnack", xnack), ("sramecc", sramecc)):
        if value not in ("any", "on", "off"):
            raise IRError(f"{name}={value!r}; accepted: any, on, off")
        if value != "any":
            feats.append(("+" if value == "on" else "-") + name)
    return ",".join(feats)


def _cpu(build: Build) -> str:
    return codeobj.targets.target(build.profile.target).name


def _check_abi(name: str, meta: dict, problem: GemmProblem) -> None:
    """LLVM laid the arguments out itself: they must be exactly the kernel ABI's (kernel_abi.kernargs)."""
    explicit = [a for a in meta.get(".args", []) if not str(a.get(".value_kind", "")).startswith("hidden_")]
    got = [(a.get(".name"), a.get(".offset"), a.get(".size"), a.get(".value_kind")) for a in explicit]
    want = [(n, off, size, "global_buffer" if kind == "ptr" else "by_value")
            for n, off, size, kind in kernargs(problem)]
    if got != want:
        raise IRError(f"kernel {name}: LLVM laid out the kernel arguments as {got}, the kernel ABI is {want}")


def _ir(build: Build) -> str:
    return format_ir(build.problem, build.config)


def _llir(build: Build) -> str:
    from .ir_builder import build_module

    features = llvm_features(build.xnack, build.sramecc)
    layout = target_data_layout(_cpu(build), features)
    if build.plan.mx is not None:
        mx = mx_ir_builder(build.plan, build.name, layout)
        module, builder = mx.build(), mx
    else:
        module, builder = build_module(build.plan, build.name, layout)
    build.extra["integer"] = builder.integer
    return str(module)


def mx_ir_builder(plan: GemmPlan, name: str, data_layout: str = ""):
    """The LLVM IR builder of an MX plan: weight-only (mx_weight_only.py) or block-scaled / sub-byte
    (mx_builder.py). Chosen here so that neither builder module imports the other's subclass."""
    from .mx_builder import MxGemmIRBuilder
    from .mx_weight_only import WeightOnlyIRBuilder

    assert plan.mx is not None, "an MX builder needs an MX plan"
    return (WeightOnlyIRBuilder if plan.mx.weight_only else MxGemmIRBuilder)(plan, name, data_layout)


def _amdgcn(build: Build) -> str:
    """LLVM's assembly for the same IR (`emit_assembly` after the same O3 pipeline as the object)."""
    return run_backend(build.texts["llir"], cpu=_cpu(build), features=llvm_features(build.xnack, build.sramecc),
                       output="assembly", kernel=build.name).data  # type: ignore[return-value]


def _co(build: Build) -> bytes:
    """LLVM's object; the contract (with the registers LLVM allocated) into its metadata; linked."""
    from jitgemm.codegen.generator import generator

    gen, name = generator("llvm"), build.name
    result = run_backend(build.texts["llir"], cpu=_cpu(build), features=llvm_features(build.xnack, build.sramecc),
                         output="object", kernel=name, isolate=build.extra.get("isolate", True))
    obj: bytes = result.data  # type: ignore[assignment]
    build.seconds.update(result.seconds)
    t0 = time.perf_counter()
    kernel = codeobj.read(obj).kernel(name)
    meta = kernel.metadata
    _check_abi(name, meta, build.problem)
    agprs = int(meta[".agpr_count"]) if ".agpr_count" in meta else 0
    vgprs = int(meta[".vgpr_count"]) - agprs if agprs else int(meta[".vgpr_count"])
    scratch = int(meta[".private_segment_fixed_size"]) if ".private_segment_fixed_size" in meta else 0
    build.lowered = LoweredKernel(name, (), int(meta[".group_segment_fixed_size"]), vgprs, int(meta[".sgpr_count"]),
                                  agprs, build.plan.workgroup_size, build.plan.grid, scratch)
    build.code = kernel.code
    build.contract = gemm_contract(build.problem, build.config, build.lowered, build.target_id,
                                   hashlib.sha256(kernel.code).hexdigest(), generator=gen.name, version=gen.version())
    build.extra["relocatable"] = obj
    contract = build.contract if build.embed_contract else {}
    blob = codeobj.link(set_kernel_metadata(obj, name, {codeobj.CONTRACT_KEY: contract} if contract else {}),
                        names=[f"{name}.o"])
    build.seconds["contract_link"] = time.perf_counter() - t0
    return blob


class LlvmGenerator(Generator):
    """LLVM's AMDGPU backend does instruction selection, scheduling, waits and register allocation (so a kernel
    may spill: its contract says so, and the selector ranks it below kernels that do not)."""

    option = "llvm"
    title = "LLVM"
    name = GENERATOR
    suffix = "_llvm"
    # The plan estimate is fitted to the direct generator's code; LLVM's main loops timed 2-11x it at 4096^3
    # (bf16/fp16/fp8/int8, gfx942/gfx950) and its shorter prologue/epilogue came out up to 13% under it where the
    # loop runs a few times (64^3, 100x70x40, 777x1280x640: at most 20 iterations): lowered for the ranking only
    # in that reach (24 iterations).
    prerank_margin = 0.15
    prerank_iterations = 24

    def version(self) -> str:
        """Including the llvmlite release, which bundles the LLVM that compiles for it (a different LLVM makes
        different code: part of every cache key). Read from the package, not from LLVM itself, so that offering
        a candidate does not load LLVM's library."""
        import llvmlite

        return f"{VERSION}+llvmlite{llvmlite.__version__}"

    def available(self) -> tuple[bool, str]:
        try:
            import llvmlite  # noqa: F401
        except ImportError:
            return False, "llvmlite is not installed (pip install llvmlite)"
        return True, ""

    split_batches = False   # its partial kernel takes one GEMM (grid z = split_k)

    def split_refusal(self, problem: GemmProblem, mode: str) -> str | None:
        p = problem
        if mode != "partial" or p.batch != 1 or p.scaled or p.scale_mode == "block":
            return (f"generator={self.option!r}: the LLVM generator's split-K is the partial mode of one unscaled or "
                    f"tensor/rowcol-scaled GEMM (batch 1); mode={mode!r}, batch={p.batch}, scales "
                    f"{'MX' if p.scaled else p.scale_mode}: use generator='asm'")
        return None

    def accept(self, plan: GemmPlan) -> None:
        """One LDS buffer, and K-contiguous vectors written whole (the IR builder stores each loaded vector
        with one LDS store). Block-scaled and sub-byte plans (plan.mx): the MX lowering's limits
        (codegen/llvm/mx_plan.py)."""
        if plan.mx is not None:
            accept_mx(plan)
            return
        if plan.config.lds_buffers != 1:
            raise IRError(f"lds_buffers={plan.config.lds_buffers}: the LLVM generator stages through one LDS "
                          f"buffer (the double buffer is the direct generator's); use lds_buffers=1")
        for st in (plan.a, plan.b):
            if st.k_is_col and st.lds_row % st.load_bytes:
                raise IRError(f"LDS row of {st.name.upper()} is {st.lds_row} bytes (depth_k + lds_pad elements); "
                              f"it must be a multiple of {st.load_bytes}: choose lds_pad accordingly")

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("ir", _ir), Stage("llir", _llir), Stage("amdgcn", _amdgcn, on_demand=True), Stage("co", _co))

    def planned_resources(self, plan: GemmPlan, profile: TargetProfile) -> dict[str, int]:
        """Before LLVM has run, its figures are the bounds it is given: the accumulators in AGPRs
        (`amdgpu-agpr-alloc`) and every architected VGPR (`amdgpu-waves-per-eu` lets it use them); scratch is
        unknown until compiled (0 here; the compiled kernel's contract says)."""
        return {"vgprs": profile.arch_vgprs, "agprs": plan.agprs, "sgprs": 0,
                "lds": plan.lds_bytes, "scratch": 0}




def compile_gemm_llvm(problem: GemmProblem, config: GemmConfig | None = None, *, spec: Spec | None = None,
                      target: str = "gfx942", xnack: str = "any", sramecc: str = "any", name: str | None = None,
                      isolate: bool = True) -> CompiledKernel:
    """Compile the kernel class of `problem` through LLVM. Without a config: the generator's choose_config.
    LLVM errors are LLVMCompileError (an IRError) naming the line of the generated IR."""
    from jitgemm.codegen.generator import generator

    return generator("llvm").compile(problem, config, spec=spec, target=target, xnack=xnack, sramecc=sramecc,
                                     name=name, isolate=isolate)
