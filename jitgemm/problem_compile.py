"""`jitgemm.compile(problem)`: the kernel `matmul` would run for a problem, compiled or fetched from the caches.
Its own module, apart from jitgemm/api.py, so that a process which only compiles (or finds its kernel in the disk
cache) never imports numpy and the launch machinery `matmul` needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem

    from .kernel import Kernel


def compile(problem: GemmProblem | str, config: GemmConfig | None = None, *, arch: str = "gfx942",
            use_disk_cache: bool = True, generator: str | None = None) -> Kernel:
    """Compile (or fetch from cache) the kernel for a problem's class. `problem` may be the IR text form.
    Without a `config`, the kernel is the one `matmul` runs for the problem (packed operands, 256-byte aligned):
    the default selector's best candidate among the project's generators (`selector.selected_config`), so the
    API, the CLI and `matmul` agree on one kernel per problem. `generator`: a registered generator ("asm": the
    direct generator; "llvm": LLVM IR through llvmlite and LLVM's AMDGPU backend), which narrows that choice to
    its candidates (with a `config` it defaults to "asm"). Its stage table runs and every stage's text is kept in
    `Kernel.stages`.

    A repeated request (in this process, or one an earlier process made) is answered from jitgemm/warm.py while
    nothing the choice and the kernel depend on has changed (sources, tuning database, quarantine, suppliers,
    specs); otherwise the kernel is chosen afresh: the tuning database may have learnt something since."""
    from . import warm

    if isinstance(problem, str):
        from jitgemm.codegen.gemm_text import parse

        problem, parsed = parse(problem)
        config = config or parsed
    if use_disk_cache:
        hit = warm.kernel(problem, config, arch, generator)
        if hit is not None:
            return hit
    from .kernel import compile as compile_config
    from .selector import selected_config

    state = warm.before() if use_disk_cache else None
    chosen, option = config, generator
    if chosen is None:
        chosen, option = selected_config(problem, arch, generator)
    made = compile_config(problem, chosen, arch=arch, use_disk_cache=use_disk_cache, generator=option or "asm")
    warm.remember(problem, config, arch, generator, made, state)
    return made
