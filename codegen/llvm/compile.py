"""From a GEMM problem to a code object through LLVM: choose a config, build LLVM IR with llvmlite, run the
O3 pipeline and the AMDGPU backend (gfx942) to a relocatable object, put the kernel contract into its
metadata and link it with the project's own linker. The counterpart of codegen/gemm_compile.py."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from jitgemm.isa.model import Spec
from jitgemm.isa.targets import TargetProfile

from jitgemm import isa

from .. import codeobj
from ..codeobj.annotate import set_kernel_metadata
from ..gemm_asm import KERNARGS, LoweredKernel
from ..gemm_compile import kernel_name as direct_kernel_name
from ..gemm_compile import widest_vectors
from ..gemm_config import default_config, fit_vectors, validate_config
from ..gemm_contract import GENERATOR_VERSION, gemm_contract
from ..gemm_ir import GemmConfig, GemmProblem, IRError
from ..gemm_text import format_ir
from .backend import data_layout as target_data_layout
from .backend import llvm_version, run_backend
from .ir_builder import build_module

GENERATOR = "jitgemm-llvm"


@dataclass(frozen=True)
class CompiledLLVMGemm:
    problem: GemmProblem          # the kernel class it was compiled for
    config: GemmConfig
    name: str
    code_object: bytes
    code: bytes                   # the kernel's machine code as LLVM emitted it
    contract: dict
    llir: str                     # the LLVM IR the generator built (before LLVM's optimisation)
    relocatable: bytes            # LLVM's ET_REL object, before the contract was added and it was linked
    ir_text: str
    lds_bytes: int
    vgprs: int
    agprs: int
    sgprs: int
    cpu: str = "gfx942"
    features: str = ""
    seconds: dict = field(default_factory=dict, compare=False)

    def assembly(self) -> str:
        """LLVM's assembly text for the same IR (`emit_assembly`; another backend run)."""
        return run_backend(self.llir, cpu=self.cpu, features=self.features, output="assembly",
                           kernel=self.name).data  # type: ignore[return-value]


def llvm_features(xnack: str = "any", sramecc: str = "any") -> str:
    """LLVM's -mattr string for a target id's feature settings ("any" leaves a feature unset)."""
    feats = []
    for name, value in (("xnack", xnack), ("sramecc", sramecc)):
        if value not in ("any", "on", "off"):
            raise IRError(f"{name}={value!r}; accepted: any, on, off")
        if value != "any":
            feats.append(("+" if value == "on" else "-") + name)
    return ",".join(feats)


def kernel_name(problem: GemmProblem, config: GemmConfig) -> str:
    """The direct generator's name for the same kernel class and config, marked as LLVM's."""
    return direct_kernel_name(problem, config) + "_llvm"


def choose_config(problem: GemmProblem, spec: Spec, target: TargetProfile) -> GemmConfig:
    """The default config for the dtypes and size with the widest vector loads the problem allows and this
    generator's staging accepts (the same rules as the direct generator's, so both choose alike)."""
    cfg = widest_vectors(problem, default_config(problem, spec, target))
    validate_config(problem, cfg, spec, target)
    return fit_vectors(problem, cfg, spec)


def _check_abi(name: str, meta: dict, integer: bool) -> None:
    """LLVM laid the arguments out itself: they must be exactly the direct generator's (gemm_asm.KERNARGS)."""
    explicit = [a for a in meta.get(".args", []) if not str(a.get(".value_kind", "")).startswith("hidden_")]
    got = [(a.get(".name"), a.get(".offset"), a.get(".size"), a.get(".value_kind")) for a in explicit]
    want = [(n, off, size, "global_buffer" if kind == "ptr" else "by_value") for n, off, size, kind in KERNARGS]
    if got != want:
        raise IRError(f"kernel {name}: LLVM laid out the kernel arguments as {got}, the kernel ABI is {want}")


def _build(problem: GemmProblem, config: GemmConfig, spec: Spec, profile: TargetProfile, name: str, cpu: str,
           features: str):
    module, builder = build_module(problem, config, spec, profile, name, target_data_layout(cpu, features))
    return str(module), builder


def build_llir(problem: GemmProblem, config: GemmConfig, *, name: str, target: str = "gfx942", xnack: str = "any",
               sramecc: str = "any", spec: Spec | None = None) -> str:
    """The LLVM IR text of a kernel class (what `compile_gemm_llvm` hands to LLVM), without compiling it."""
    spec = spec or isa.load_spec(target)
    profile = isa.target_profile(target)
    cpu = codeobj.targets.target(profile.target).name
    return _build(problem.kernel_class(), config, spec, profile, name, cpu, llvm_features(xnack, sramecc))[0]


def assembly_text(llir: str, *, target: str = "gfx942", xnack: str = "any", sramecc: str = "any",
                  kernel: str | None = None) -> str:
    """LLVM's assembly for generated IR (`emit_assembly` after the same O3 pipeline as the object)."""
    cpu = codeobj.targets.target(isa.target_profile(target).target).name
    return run_backend(llir, cpu=cpu, features=llvm_features(xnack, sramecc), output="assembly",
                       kernel=kernel).data  # type: ignore[return-value]


def compile_gemm_llvm(problem: GemmProblem, config: GemmConfig | None = None, *, spec: Spec | None = None,
                      target: str = "gfx942", xnack: str = "any", sramecc: str = "any", name: str | None = None,
                      isolate: bool = True) -> CompiledLLVMGemm:
    """Compile the kernel class of `problem` through LLVM. Without a config: `choose_config`. LLVM errors are
    LLVMCompileError (an IRError) naming the line of the generated IR."""
    t0 = time.perf_counter()
    spec = spec or isa.load_spec(target)
    profile = isa.target_profile(target)
    if config is None:
        config = choose_config(problem, spec, profile)
    validate_config(problem, config, spec, profile)
    if config.lds_buffers != 1:
        raise IRError(f"lds_buffers={config.lds_buffers}: the LLVM generator stages through one LDS buffer "
                      f"(the double buffer is the direct generator's); use lds_buffers=1")
    cls = problem.kernel_class()
    name = name or kernel_name(problem, config)
    cpu = codeobj.targets.target(profile.target).name
    features = llvm_features(xnack, sramecc)
    llir, builder = _build(cls, config, spec, profile, name, cpu, features)
    t1 = time.perf_counter()
    result = run_backend(llir, cpu=cpu, features=features, output="object", kernel=name, isolate=isolate)
    obj: bytes = result.data  # type: ignore[assignment]
    t2 = time.perf_counter()
    kernel = codeobj.read(obj).kernel(name)
    meta = kernel.metadata
    _check_abi(name, meta, builder.integer)
    agprs = int(meta.get(".agpr_count", 0))
    vgprs = int(meta.get(".vgpr_count", 0)) - agprs if agprs else int(meta.get(".vgpr_count", 0))
    sgprs = int(meta.get(".sgpr_count", 0))
    lds = int(meta.get(".group_segment_fixed_size", builder.lds_bytes))
    lowered = LoweredKernel(name, (), lds, vgprs, sgprs, agprs, builder.threads, builder.grid)
    target_id = codeobj.target_id(codeobj.targets.target(profile.target), xnack, sramecc).split("--", 1)[1]
    contract = gemm_contract(cls, config, lowered, target_id, hashlib.sha256(kernel.code).hexdigest(),
                             generator=GENERATOR)
    contract["identity"]["generator_version"] = generator_version()
    blob = codeobj.link(set_kernel_metadata(obj, name, {codeobj.CONTRACT_KEY: contract}), names=[f"{name}.o"])
    t3 = time.perf_counter()
    seconds = {"build_ir": t1 - t0, **result.seconds, "contract_link": t3 - t2, "total": t3 - t0}
    return CompiledLLVMGemm(cls, config, name, blob, kernel.code, contract, llir, obj, format_ir(cls, config),
                            lds, vgprs, agprs, sgprs, cpu, features, seconds)


def generator_version() -> str:
    """This generator's version including the LLVM that compiled for it (a different LLVM makes different
    code: part of every cache key)."""
    return f"{GENERATOR_VERSION}+llvm{llvm_version()}"
