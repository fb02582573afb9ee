"""`jitgemm.compile`: a GEMM problem to a `Kernel`, through the in-memory and on-disk caches."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from jitgemm import isa  # its names load on first use
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError

from . import kernel_cache

if TYPE_CHECKING:
    from jitgemm.codegen.generator import Generator

# The generators, the IR's text form and the contract load inside the functions that use them: a kernel found in
# the disk cache is a `Kernel` made from the cached record (jitgemm/warm.py), without them.


@dataclass(frozen=True)
class Kernel:
    """A compiled GEMM kernel: its code object (which describes itself), contract and how it was made."""

    name: str
    code_object: bytes
    contract: dict
    config: GemmConfig
    problem: GemmProblem          # the kernel class (sizes normalised away)
    target: str
    generator: str = "jitgemm-asm"
    from_cache: str = "compiled"  # "compiled", "disk"
    _asm: list = field(default_factory=list, compare=False, repr=False)
    _stages: dict = field(default_factory=dict, compare=False, repr=False)   # stage texts known at compile time
    made_for: GemmProblem | None = field(default=None, compare=False, repr=False)   # the problem compiled for
    cache_key: str = field(default="", compare=False, repr=False)   # its kernel-cache entry (jitgemm/warm.py)

    @property
    def ir(self) -> str:
        """The IR of the problem the kernel was asked for, with a first line saying that the kernel is
        size-generic (the kernel class, `problem`, is what shaped the binary: `stages["ir"]`)."""
        from jitgemm.codegen.gemm_text import format_ir

        if self.made_for is None:
            return format_ir(self.problem, self.config)
        return ("# size-generic kernel: m, n, k, batch, leading dimensions, alpha and beta are runtime "
                "arguments; made for the sizes below\n" + format_ir(self.made_for, self.config))

    @property
    def asm(self) -> str:
        """The kernel's instructions, annotated from the spec (see `jitgemm inspect`)."""
        if not self._asm:
            from jitgemm.listing import annotated_listing

            self._asm.append(annotated_listing(self.code_object, isa.load_spec(self.target)))
        return self._asm[0]

    @property
    def spills(self) -> bool:
        """The kernel keeps registers in scratch memory (its contract's tile.scratch > 0)."""
        return int(self.contract.get("tile", {}).get("scratch", 0) or 0) > 0

    @property
    def stages(self) -> Mapping[str, str]:
        """The inspectable stages of the generator's stage table (`co` is `code_object`), each text as the
        compile made it or, for a kernel from the disk cache, made again on first access; every kernel also
        has "asm" (for the direct generator its own listing, else the annotated instructions)."""
        from jitgemm.codegen.gemm_text import format_ir
        from jitgemm.codegen.generator import by_name

        gen = by_name(self.generator)
        producers: dict[str, Callable[[], str]] = {}
        if gen is not None:
            from jitgemm.codegen.generator import stage_text

            for stage in gen.stages():
                if stage.name != "co":
                    producers[stage.name] = lambda s=stage.name, g=gen: stage_text(
                        g, s, self.problem, self.config, isa.load_spec(self.target), isa.target_profile(self.target),
                        self.name)
        producers.setdefault("ir", lambda: format_ir(self.problem, self.config))
        producers.setdefault("asm", lambda: self.asm)
        return _Stages(producers, self._stages)

    def grid(self, m: int, n: int, batch: int = 1) -> tuple[int, int, int]:
        from jitgemm.contract import Contract

        return Contract(self.contract).grid(m, n, 1, batch)

    @property
    def block(self) -> tuple[int, int, int]:
        return tuple(self.contract["launch"]["workgroup"])  # type: ignore[return-value]


class _Stages(Mapping):
    """A read-only mapping whose values are produced on first access and kept (in the kernel's cache)."""

    def __init__(self, producers: dict[str, Callable[[], str]], cache: dict) -> None:
        self._producers = producers
        self._cache = cache

    def __getitem__(self, key: str) -> str:
        if key not in self._producers:
            raise KeyError(f"no stage {key!r}; this kernel has: {', '.join(self._producers)}")
        if key not in self._cache:
            self._cache[key] = self._producers[key]()
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._producers)

    def __len__(self) -> int:
        return len(self._producers)


_memory: dict[tuple, Kernel] = {}        # by kernel class (+ the facts the default config depends on)
# machine code -> (instruction items, byte offset of each) of the kernels this process lowered itself: the timing
# model traces them from the generator's own instruction objects instead of decoding the bytes (issue 31)
_lowered: dict[bytes, tuple[tuple, tuple[int, ...]]] = {}
_LOWERED_LIMIT = 64


def lowered_items(code: bytes) -> tuple[tuple, tuple[int, ...]] | None:
    """The instruction items and their byte offsets that encoded to `code` (a kernel's machine code), when this
    process lowered that kernel (the direct generator); None otherwise (LLVM's, a disk-cache hit, a file)."""
    return _lowered.get(code)
_by_problem: dict[tuple, Kernel] = {}    # by the exact problem: the hot path of repeated calls
_lock = threading.Lock()


def compile(problem: GemmProblem | str, config: GemmConfig | None = None, *, arch: str = "gfx942",
            use_disk_cache: bool = True, generator: str = "asm") -> Kernel:
    """Compile (or fetch from cache) one generator's kernel for a problem's class: the suppliers' and the
    sweep's way in (`jitgemm.compile`, in jitgemm/api.py, is the public one: without a config it compiles the
    selector's choice). `problem` may be the IR text form; without a `config`, the generator's own default
    (`Generator.choose_config`). `generator`: a registered generator ("asm": the direct generator; "llvm": LLVM
    IR through llvmlite and LLVM's AMDGPU backend); its stage table runs and every stage's text is kept in
    `Kernel.stages`."""
    from jitgemm.codegen.gemm_text import format_ir, parse

    gen = _generator(generator)
    if isinstance(problem, str):
        problem, parsed_config = parse(problem)
        config = config or parsed_config
    fast = _by_problem.get((problem, config, arch, generator))
    if fast is not None:
        return fast
    asked = config
    spec = isa.load_spec(arch)
    if config is None:   # the default depends on the problem's sizes; the cache keys on what was chosen
        config = gen.choose_config(problem, spec, isa.target_profile(arch))
    ir_text = format_ir(problem.kernel_class(), config)
    key_mem = (ir_text, spec.sha256, arch, generator)
    with _lock:
        hit = _memory.get(key_mem)
        if hit is not None:
            hit = replace(hit, made_for=problem)       # the same binary, told which sizes it was asked for
            _by_problem[(problem, asked, arch, generator)] = hit
    if hit is not None:
        return hit
    disk_key = kernel_cache.cache_key(ir_text, spec.sha256, arch, gen.name, gen.version())
    kernel = None
    if use_disk_cache:
        entry = kernel_cache.load(disk_key)
        if entry is not None:
            blob, record = entry
            kernel = Kernel(record["name"], blob, record["contract"], config, problem.kernel_class(), arch,
                            generator=gen.name, from_cache="disk", cache_key=disk_key)
    if kernel is None:
        c = gen.compile(problem, config, spec=spec, target=arch)
        if c.lowered.instructions and c.offsets:
            with _lock:
                if len(_lowered) >= _LOWERED_LIMIT:
                    _lowered.clear()
                _lowered[c.code] = (tuple(c.lowered.instructions), tuple(c.offsets))
        texts = {k: v for k, v in c.stages.items() if isinstance(v, str)}
        kernel = Kernel(c.name, c.code_object, c.contract, c.config, c.problem, arch, generator=gen.name,
                        _stages=texts, cache_key=disk_key)
        if use_disk_cache:
            kernel_cache.store(disk_key, kernel.code_object, {"name": kernel.name, "contract": kernel.contract,
                                                               "ir": ir_text, "target": arch,
                                                               "config": _config_data(config)})
    with _lock:
        _memory[key_mem] = kernel
        if len(_by_problem) > 4096:
            _by_problem.clear()
        kernel = replace(kernel, made_for=problem)
        _by_problem[(problem, asked, arch, generator)] = kernel
    return kernel


def _generator(option: str) -> Generator:
    from jitgemm.codegen.generator import generator

    gen = generator(option)
    ok, why = gen.available()
    if not ok:
        raise IRError(f"generator={option!r} is not available: {why}")
    return gen


def _config_data(config: GemmConfig) -> dict:
    from dataclasses import asdict

    data = asdict(config)
    data.pop("extras", None)
    return data


_clear_hooks: list[Callable[[], None]] = []     # other in-process memos of kernels (jitgemm/warm.py registers)


def on_clear_memory_cache(hook: Callable[[], None]) -> None:
    """Run `hook` whenever `clear_memory_cache` runs (a module above this one that keeps kernels in memory)."""
    if hook not in _clear_hooks:
        _clear_hooks.append(hook)


def clear_memory_cache() -> None:
    """Forget every kernel this process holds (the warm path's memo too: the next compile reads the disk cache)."""
    with _lock:
        _memory.clear()
        _by_problem.clear()
        _lowered.clear()
    for hook in _clear_hooks:
        hook()
