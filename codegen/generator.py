"""The generator interface and its registry: a generator is one object with a name, a version, a config
chooser, a plan and an ordered stage table, as Triton's backends declare theirs in `add_stages`. Adding a
generator adds a registry entry; nothing outside this module asks which generator it is.

    direct:  ir -> asm -> co          (codegen/direct_generator.py: lowering, encoder, code-object writer)
    llvm:    ir -> llir -> co         (codegen/llvm/llvm_generator.py: llvmlite IR, LLVM's AMDGPU backend, linker)
             + amdgcn on demand       (LLVM's assembly text: another backend run, for people)

Every stage reads the `Build` (problem, config, plan, spec, target) and the texts of the stages before it
and returns its own text (`co`: the code object's bytes). `compile` runs them in order and keeps every text.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .gemm_config import default_config
from .gemm_ir import GemmConfig, GemmProblem, IRError
from .gemm_plan import GemmPlan, validate_config
from .kernel_abi import LoweredKernel, kernel_name


def target_id(profile: TargetProfile, xnack: str = "any", sramecc: str = "any") -> str:
    """The target id a kernel carries (`gfx942`, `gfx942:sramecc+:xnack-`), spelled as LLVM spells it."""
    from . import codeobj

    return codeobj.target_id(codeobj.targets.target(profile.target), xnack, sramecc).split("--", 1)[1]


@dataclass
class Build:
    """One compile in progress: the inputs every stage reads, the texts made so far, and what a stage leaves
    for later ones (`lowered`, `contract`, `code`)."""

    problem: GemmProblem          # the kernel class
    config: GemmConfig
    plan: GemmPlan
    spec: Spec
    profile: TargetProfile
    name: str
    xnack: str = "any"
    sramecc: str = "any"
    embed_contract: bool = True
    texts: dict[str, str | bytes] = field(default_factory=dict)
    lowered: LoweredKernel | None = None
    contract: dict | None = None
    code: bytes = b""
    offsets: tuple[int, ...] = ()
    extra: dict = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def target_id(self) -> str:
        return target_id(self.profile, self.xnack, self.sramecc)


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Build], str | bytes]
    on_demand: bool = False       # a view for people that no later stage reads: made when first asked for


@dataclass(frozen=True)
class CompiledKernel:
    """What every generator's compile returns: the code object, its contract, the plan it followed, the
    lowering's resource figures and each stage's text."""

    problem: GemmProblem          # the kernel class it was compiled for
    config: GemmConfig
    plan: GemmPlan
    name: str
    generator: str
    code_object: bytes
    code: bytes                   # the kernel's machine code
    contract: dict
    lowered: LoweredKernel
    stages: dict = field(compare=False)
    offsets: tuple[int, ...] = ()  # byte offset of each lowered item (direct generator)
    relocatable: bytes | None = None   # LLVM's ET_REL object before the contract was added and it was linked
    seconds: dict = field(default_factory=dict, compare=False)

    @property
    def ir_text(self) -> str:
        return self.stages["ir"]

    @property
    def llir(self) -> str:
        return self.stages["llir"]

    @property
    def vgprs(self) -> int:
        return self.lowered.next_free_vgpr

    @property
    def agprs(self) -> int:
        return self.lowered.next_free_agpr

    @property
    def sgprs(self) -> int:
        return self.lowered.next_free_sgpr

    @property
    def lds_bytes(self) -> int:
        return self.lowered.lds_bytes

    @property
    def spills(self) -> bool:
        """The kernel keeps registers in scratch memory (slow): reported by compile/run, ranked last."""
        return self.lowered.scratch_bytes > 0


class Generator:
    """Base of the project's generators. Subclasses set `option`, `name`, `suffix` and the stage table, and may
    add their own limits in `accept`."""

    option = ""                   # how users name it: jitgemm.compile(generator=...), --generator
    name = ""                     # what its contracts carry as identity.generator
    suffix = ""                   # appended to the shared kernel name
    title = ""                    # for messages: "the direct generator"
    # The selector's pre-rank (jitgemm.selector `Selector._prerank`): how far below the plan's estimate
    # (jitgemm.timing.model.plan_estimate) this generator's kernel may still come out when timed, and up to how
    # many main-loop iterations (K / depth_k) it is worth lowering at all once another kernel has been timed
    # (None: any). A kernel outside that reach is not lowered for the ranking.
    prerank_margin = 0.05
    prerank_iterations: int | None = None

    def version(self) -> str:
        raise NotImplementedError

    def available(self) -> tuple[bool, str]:
        """(usable here, why not)."""
        return True, ""

    def accept(self, plan: GemmPlan) -> None:
        """IRError for a plan this generator cannot lower (beyond the shared checks of validate_config)."""

    split_batches = True    # a split-K partial kernel runs batch entries too (z = entry x split_k + range)

    def split_refusal(self, problem: GemmProblem, mode: str) -> str | None:
        """Why this generator has no split-K kernel of `mode` ("partial", "atomic", "streamk") for `problem`
        (None: it has one; jitgemm.api.split_launch asks before compiling)."""
        return None

    def stages(self) -> tuple[Stage, ...]:
        raise NotImplementedError

    def plan(self, problem: GemmProblem, config: GemmConfig, spec: Spec, profile: TargetProfile) -> GemmPlan:
        plan = validate_config(problem, config, spec, profile)
        self.accept(plan)
        return plan

    def choose_config(self, problem: GemmProblem, spec: Spec, profile: TargetProfile) -> GemmConfig:
        """The default config for the problem that this generator takes (gemm_config.default_config)."""
        return default_config(problem, spec, profile, accept=self.accept)

    def kernel_name(self, problem: GemmProblem, config: GemmConfig) -> str:
        return kernel_name(problem, config, self.suffix)

    def planned_resources(self, plan: GemmPlan, profile: TargetProfile) -> dict[str, int]:
        """Register and LDS figures of the kernel before it is compiled, for its contract ("tile": vgprs,
        agprs, sgprs, lds)."""
        raise NotImplementedError

    def compile(self, problem: GemmProblem, config: GemmConfig | None = None, *, spec: Spec | None = None,
                target: str = "gfx942", xnack: str = "any", sramecc: str = "any", name: str | None = None,
                embed_contract: bool = True, **options) -> CompiledKernel:
        """Run the stage table for the kernel class of `problem` (without a config: `choose_config`)."""
        from jitgemm import isa

        ok, why = self.available()
        if not ok:
            raise IRError(f"generator {self.option!r} is not available: {why}")
        spec = spec or isa.load_spec(target)
        profile = isa.target_profile(target)
        if config is None:
            config = self.choose_config(problem, spec, profile)
        cls = problem.kernel_class()
        build = Build(cls, config, self.plan(cls, config, spec, profile), spec, profile,
                      name or self.kernel_name(problem, config), xnack, sramecc, embed_contract, extra=dict(options))
        start = time.perf_counter()
        lazy = {}
        for stage in self.stages():
            if stage.on_demand:
                lazy[stage.name] = stage
                continue
            t0 = time.perf_counter()
            build.texts[stage.name] = stage.run(build)
            build.seconds[stage.name] = time.perf_counter() - t0
        build.seconds["total"] = time.perf_counter() - start
        assert build.lowered is not None and build.contract is not None, "the stages left no kernel"
        return CompiledKernel(cls, config, build.plan, build.name, self.name, build.texts["co"], build.code,  # type: ignore[arg-type]
                              build.contract, build.lowered, _LazyStages(build.texts, lazy, build),
                              build.offsets, build.extra.get("relocatable"), build.seconds)


class _LazyStages(dict):
    """Stage texts by name; on-demand stages are made on first access."""

    def __init__(self, texts: dict, lazy: dict[str, Stage], build: Build) -> None:
        super().__init__(texts)
        self._lazy, self._build = lazy, build

    def __missing__(self, key: str):
        stage = self._lazy.get(key)
        if stage is None:
            raise KeyError(f"no stage {key!r}; this kernel has: {', '.join([*self, *self._lazy])}")
        self[key] = stage.run(self._build)
        return self[key]

    def names(self) -> tuple[str, ...]:
        return (*self.keys(), *(k for k in self._lazy if k not in self))


# option -> (module, class): imported on first use (the LLVM generator needs llvmlite)
_REGISTRY: dict[str, tuple[str, str]] = {
    "asm": ("jitgemm.codegen.direct_generator", "DirectGenerator"),
    "llvm": ("jitgemm.codegen.llvm.llvm_generator", "LlvmGenerator"),
}
_instances: dict[str, Generator] = {}


def generator_options() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def generator(option: str) -> Generator:
    """The generator registered as `option` ("asm", "llvm"); IRError listing the options otherwise."""
    if option not in _REGISTRY:
        raise IRError(f"generator={option!r}; accepted: {', '.join(_REGISTRY)}")
    if option not in _instances:
        module, cls = _REGISTRY[option]
        _instances[option] = getattr(importlib.import_module(module), cls)()
    return _instances[option]


def by_name(name: str) -> Generator | None:
    """The registered generator whose contracts carry identity.generator == `name`, if any."""
    for option in _REGISTRY:
        try:
            gen = generator(option)
        except ImportError:
            continue
        if gen.name == name:
            return gen
    return None


def stage_text(gen: Generator, stage_name: str, problem: GemmProblem, config: GemmConfig, spec: Spec,
               profile: TargetProfile, name: str) -> str:
    """One stage's text made again for a kernel that came from a cache: the stages before it are run (never
    `co`, which is the cached code object)."""
    cls = problem.kernel_class()
    build = Build(cls, config, gen.plan(cls, config, spec, profile), spec, profile, name)
    for stage in gen.stages():
        if stage.name == "co" or (stage.on_demand and stage.name != stage_name):
            continue
        build.texts[stage.name] = stage.run(build)
        if stage.name == stage_name:
            return build.texts[stage.name]  # type: ignore[return-value]
    raise KeyError(f"no stage {stage_name!r} in generator {gen.option!r}")
