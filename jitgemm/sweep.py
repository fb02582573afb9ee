"""`jitgemm.sweep`: research kernel variants at scale — a grid or random search over configs (tile, waves, MFMA,
K depth, prefetch, LDS buffers and padding, vector widths) x generators x problems, each variant compiled,
measured statically and checked in the emulator, the results written to the tuning database.

Per variant: compile time; resources from the code object's metadata (VGPR/AGPR/SGPR, LDS, scratch, spills)
and occupancy (waves per SIMD, from registers, LDS and the workgroup's waves); the main loop's passes per
iteration and clocks per MFMA from the static pipeline model (`jitgemm.timing.pipeline`); whether the kernel
matches numpy in the emulator on a small problem (one tile, two K tiles); and predicted TFLOP/s for the
full problem (below). Variants run in local worker processes (`workers`) or as Ray tasks (`ray`): the same
evaluation function, results in the variant order, identical apart from the measured compile time.

Predicted TFLOP/s: `jitgemm.timing.predict` on the target's default device -- the one timing model the
selector, `explain` and `profile` read too (its module docstring says what it models).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from jitgemm.codegen.gemm_ir import BLOCK_SCALE_K, GemmConfig, GemmProblem, IRError
from jitgemm.isa.errors import IsaError

if TYPE_CHECKING:
    from jitgemm.codegen.generator import Generator
    from jitgemm.isa.spec.targets import TargetProfile

TILES = (32, 64, 128, 256)
WAVES = ((1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (4, 2), (2, 4))


class SweepError(IRError):
    """A sweep that cannot start (bad problem, generator, search or worker option); the message says which."""


@dataclass(frozen=True)
class Variant:
    """One point of the search: a problem, a generator option ("asm" or "llvm") and a config."""

    index: int
    problem: GemmProblem
    generator: str
    config: GemmConfig


@dataclass
class Result:
    """What a sweep learned about one variant (`error` set when it did not compile or failed the check)."""

    index: int
    problem: str
    generator: str
    config: dict
    kernel: str = ""
    code_sha256: str = ""
    compile_seconds: float = 0.0
    vgprs: int = 0
    agprs: int = 0
    sgprs: int = 0
    lds_bytes: int = 0
    scratch_bytes: int = 0
    spills: int = 0
    waves_per_simd: int = 0
    loop_instructions: int = 0
    loop_mfmas: int = 0
    passes_per_iteration: float = 0.0
    cycles_per_mfma: float = 0.0
    mfma_utilisation: float = 0.0
    bound: str = ""
    emulator_ok: bool = False
    emulator_problem: str = ""
    predicted_tflops: float = 0.0
    error: str = ""
    contract: dict = field(default_factory=dict, repr=False)
    loop_text: list = field(default_factory=list, repr=False)

    @property
    def tile(self) -> str:
        c = self.config
        return f"{c['tile_m']}x{c['tile_n']}x{c['depth_k']}"

    def comparable(self) -> dict:
        """Everything but the measured compile time (what two runs of the same sweep must agree on)."""
        data = asdict(self)
        data.pop("compile_seconds")
        return data


@dataclass
class SweepReport:
    problem: GemmProblem
    target: str
    results: list[Result]
    seconds: float
    workers: int
    engine: str

    @property
    def ok(self) -> list[Result]:
        return [r for r in self.results if not r.error and r.emulator_ok]

    @property
    def best(self) -> Result | None:
        """The emulator-verified variant the selector would rank first among them: kernels that spill last,
        then the highest predicted TFLOP/s, then the selector's one tie-break (`selector.tie_key`)."""
        from .selector import tie_key

        ok = self.ok
        return min(ok, key=lambda r: (r.scratch_bytes > 0, -r.predicted_tflops, *tie_key(r.contract), r.index)) \
            if ok else None

    def split_choice(self):
        """The split-K / stream-K decision against the best variant (`jitgemm.split_k.choose_split`: the timing
        model's partial-kernel splits and stream-K grid, each with its reduction) for a problem matmul's
        split_k="auto" considers (M <= 64, K >= 1024); None for other problems or without a verified best."""
        best, p = self.best, self.problem
        if best is None or p.m > 64 or p.k < 1024 or p.k_split != "none" or p.grouped:
            return None
        from .kernel import compile as jit_compile
        from .split_k import choose_split

        kernel = jit_compile(p, GemmConfig(**best.config), arch=self.target, generator=best.generator,
                             use_disk_cache=False)
        return choose_split(p, self.target, chosen=kernel)

    @property
    def variants_per_second(self) -> float:
        return len(self.results) / self.seconds if self.seconds else 0.0

    def table(self, top: int = 20):
        """A rich table of the best `top` variants (and the failures' count in the caption)."""
        from rich.table import Table

        t = Table(title=f"{len(self.results)} variants of {_short(self.problem)} on {self.target} "
                        f"({self.seconds:.1f} s, {self.workers} {self.engine} worker(s))")
        for col in ("#", "gen", "tile", "waves", "mfma", "pf", "lds buf", "pad", "vec", "VGPR", "AGPR", "SGPR",
                    "LDS", "waves/SIMD", "clk/MFMA", "bound", "emu", "predicted TFLOP/s"):
            t.add_column(col, justify="right" if col not in ("gen", "mfma", "bound") else "left")
        ranked = sorted((r for r in self.results if not r.error), key=lambda r: -r.predicted_tflops)
        for r in ranked[:top]:
            c = r.config
            t.add_row(str(r.index), r.generator, r.tile, f"{c['waves_m']}x{c['waves_n']}",
                      c["mfma"].lower().replace("v_mfma_", ""), str(c["prefetch"]), str(c["lds_buffers"]),
                      str(c["lds_pad"]), f"{c['vec_a']}x{c['vec_b']}", str(r.vgprs), str(r.agprs), str(r.sgprs),
                      str(r.lds_bytes), str(r.waves_per_simd), f"{r.cycles_per_mfma:.1f}", r.bound,
                      "ok" if r.emulator_ok else "FAIL" if r.emulator_problem else "not run",
                      f"{r.predicted_tflops:.3g}")
        failed = [r for r in self.results if r.error]
        if failed:
            t.caption = f"{len(failed)} variant(s) failed; first: #{failed[0].index}: {failed[0].error[:100]}"
        return t

    def plot(self, path: str | None = None):
        """Two panels: predicted TFLOP/s by macro tile, and occupancy against clocks per MFMA (the Pareto front
        marked). Saved to `path` (PNG, SVG or PDF by its suffix) when given; returns the matplotlib figure, which a
        notebook shows when a cell ends with it. The figure is made without pyplot, so no backend is switched
        and no window opens (a notebook's inline display keeps working)."""
        from matplotlib.figure import Figure

        rows = [r for r in self.results if not r.error]
        fig = Figure(figsize=(13, 5))
        left, right = fig.subplots(1, 2)
        tiles = sorted({f"{r.config['tile_m']}x{r.config['tile_n']}" for r in rows},
                       key=lambda s: tuple(int(x) for x in s.split("x")))
        for gen, marker in (("asm", "o"), ("llvm", "s")):
            pts = [(tiles.index(f"{r.config['tile_m']}x{r.config['tile_n']}"), r.predicted_tflops,
                    r.emulator_ok) for r in rows if r.generator == gen]
            if pts:
                left.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, alpha=0.6, label=gen,
                             c=["tab:blue" if p[2] else "tab:red" for p in pts])
        left.set_xticks(range(len(tiles)), tiles, rotation=45)
        left.set_xlabel("macro tile (M x N)")
        left.set_ylabel("predicted TFLOP/s")
        left.set_title(f"{_short(self.problem)} on {self.target}")
        left.legend()
        xs = [r.cycles_per_mfma for r in rows]
        ys = [r.waves_per_simd for r in rows]
        right.scatter(xs, ys, alpha=0.5, c=[r.predicted_tflops for r in rows], cmap="viridis")
        front = pareto_front(rows)
        right.plot([r.cycles_per_mfma for r in front], [r.waves_per_simd for r in front], "r-o", label="Pareto front")
        right.set_xlabel("clocks per MFMA in the main loop (static model)")
        right.set_ylabel("occupancy (waves per SIMD)")
        right.set_title("occupancy vs cycles")
        right.legend()
        fig.tight_layout()
        if path:
            fig.savefig(path, dpi=100)
        return fig


def pareto_front(rows: Sequence[Result]) -> list[Result]:
    """Variants no other variant beats on both fewer clocks per MFMA and more waves per SIMD."""
    front = []
    for r in sorted(rows, key=lambda r: (r.cycles_per_mfma, -r.waves_per_simd)):
        if not front or r.waves_per_simd > front[-1].waves_per_simd:
            front.append(r)
    return front


def _short(problem: GemmProblem) -> str:
    return f"{problem.a.name} {problem.m}x{problem.n}x{problem.k} {problem.layout}"


# --- the search space ------------------------------------------------------------------------------------------
def config_space(problem: GemmProblem, target: str = "gfx942", generator: str = "asm",
                 tiles: Sequence[int] = TILES, waves: Sequence[tuple[int, int]] = WAVES) -> list[GemmConfig]:
    """Every config of the grid that the target and the generator accept for the problem, in a fixed order:
    MFMA x macro tile x waves x K depth x prefetch x LDS buffers (`grid_points`, cheap) x vector widths (the
    widest the problem allows, and half of it) x LDS padding (none, or the fewest bank conflicts)
    (`point_configs`, the costly part). A config is kept when the generator plans it (`Generator.plan`: the
    shared `validate_config` and the generator's own `accept`)."""
    key = (problem, target, generator, tuple(tiles), tuple(waves))
    if key in _SPACES:
        return list(_SPACES[key])
    out: list[GemmConfig] = []
    seen: set[GemmConfig] = set()
    for point in grid_points(problem, target, generator, tiles, waves):
        for cand in point_configs(problem, point, target, generator):
            if cand not in seen:
                seen.add(cand)
                out.append(cand)
    _SPACES[key] = tuple(out)
    return out


_SPACES: dict[tuple, tuple[GemmConfig, ...]] = {}     # config_space per process (the grid is pure)


def grid_points(problem: GemmProblem, target: str = "gfx942", generator: str = "asm",
                tiles: Sequence[int] = TILES, waves: Sequence[tuple[int, int]] = WAVES) -> list[GemmConfig]:
    """The grid's points before vector widths and LDS padding are fitted: MFMA x macro tile x waves x K depth x
    prefetch x LDS buffers, those whose tile the waves' MFMAs divide. Cheap (no plan is made), so a sweep with
    `limit` picks its points here and fits only those (`point_configs`)."""
    from jitgemm import isa
    from jitgemm.codegen.mfma_catalog import mfmas_for

    _generator(generator)
    spec = isa.load_spec(target)
    out = []
    for mfma in mfmas_for(spec, problem.a, problem.b):
        depths = [mfma.k * f for f in (1, 2, 4, 8) if mfma.k * f * problem.a.bytes <= 256]
        if problem.scale_mode == "block":      # one K tile per 128-element scale block (codegen/gemm_plan.py)
            depths = [BLOCK_SCALE_K] if BLOCK_SCALE_K % mfma.k == 0 else []
        for tm, tn, (wm, wn), depth, prefetch, buffers in itertools.product(tiles, tiles, waves, depths, (1, 2),
                                                                             (1, 2)):
            if tm % (wm * mfma.m) or tn % (wn * mfma.n):
                continue
            out.append(GemmConfig(tm, tn, depth, wm, wn, mfma.name, prefetch=prefetch, lds_buffers=buffers))
    return out


def point_configs(problem: GemmProblem, point: GemmConfig, target: str = "gfx942",
                  generator: str = "asm") -> list[GemmConfig]:
    """The configs of one grid point the generator plans: the widest vectors the problem allows and half of
    them, each with no LDS padding and with the padding of fewest bank conflicts (`best_lds_pad`)."""
    from jitgemm import isa
    from jitgemm.codegen.gemm_config import best_lds_pad, fit_vectors, widest_vectors

    spec, profile = isa.load_spec(target), isa.target_profile(target)
    gen = _generator(generator)
    try:
        wide = fit_vectors(problem, widest_vectors(problem, point), spec, profile, gen.accept)
    except IRError:
        return []
    vectors = [wide]
    if wide.vec_a > 1 or wide.vec_b > 1:
        vectors.append(replace(wide, vec_a=max(1, wide.vec_a // 2), vec_b=max(1, wide.vec_b // 2)))
    out = []
    for cfg in vectors:
        try:      # the best padding does not depend on prefetch (best_lds_pad remembers it per config)
            pad = best_lds_pad(problem, replace(cfg, prefetch=1), spec, profile)
        except IRError:
            pad = 0
        for lds_pad in sorted({0, pad}):
            cand = replace(cfg, lds_pad=lds_pad)
            try:
                gen.plan(problem, cand, spec, profile)
            except IRError:
                continue
            if cand not in out:
                out.append(cand)
    return out


def _generator(option: str) -> Generator:
    """The registered generator `option` (codegen.generator), SweepError naming the options otherwise."""
    from jitgemm.codegen.generator import generator

    try:
        return generator(option)
    except IRError as exc:
        raise SweepError(str(exc)) from None


def variants(problems: Iterable[GemmProblem], target: str = "gfx942", generators: Sequence[str] = ("asm",),
             search: str = "grid", limit: int | None = None, seed: int = 0, tiles: Sequence[int] = TILES,
             waves: Sequence[tuple[int, int]] = WAVES) -> list[Variant]:
    """The variants of a sweep: every config of every problem x generator (`config_space`), or, with a `limit`
    below the grid's size, `limit` of them without fitting the whole grid (the fitting is the costly part):
    `search="grid"` takes grid points spread evenly over the grid (`grid_points`), `"random"` a seeded random
    sample of them; each chosen point gives one of its configs (`point_configs`), a point that gives none is
    replaced by the next one."""
    if search not in ("grid", "random"):
        raise SweepError(f"search={search!r}; accepted: grid, random")
    for g in generators:
        _generator(g)
    if limit is not None and limit < 1:
        raise SweepError(f"limit={limit}; it must be at least 1")
    problems = list(problems)
    grid = [(p, g, point) for p in problems for g in generators for point in grid_points(p, target, g, tiles, waves)]
    if limit is None or limit >= len(grid):
        points = [(p, g, c) for p in problems for g in generators for c in config_space(p, target, g, tiles, waves)]
        if limit is not None and limit < len(points):
            if search == "random":
                points = random.Random(seed).sample(points, limit)
            else:
                step = len(points) / limit
                points = [points[int(i * step)] for i in range(limit)]
        return [Variant(i, p, g, c) for i, (p, g, c) in enumerate(points)]
    rng = random.Random(seed)
    if search == "random":
        order = rng.sample(range(len(grid)), len(grid))
    else:
        step = len(grid) / limit
        spread = [int(i * step) for i in range(limit)]
        chosen = set(spread)
        order = spread + [i for i in range(len(grid)) if i not in chosen]
    picked: dict[int, GemmConfig] = {}
    seen: set[tuple] = set()
    for i in order:
        if len(picked) == limit:
            break
        p, g, point = grid[i]
        configs = [c for c in point_configs(p, point, target, g) if (p, g, c) not in seen]
        if not configs:
            continue
        cfg = rng.choice(configs) if search == "random" else configs[len(picked) % len(configs)]
        seen.add((p, g, cfg))
        picked[i] = cfg
    keep = sorted(picked) if search == "grid" else list(picked)
    return [Variant(n, grid[i][0], grid[i][1], picked[i]) for n, i in enumerate(keep)]


# --- one variant -----------------------------------------------------------------------------------------------
def occupancy(vgprs: int, agprs: int, lds_bytes: int, workgroup: int, profile: TargetProfile) -> int:
    """Waves per SIMD the registers, LDS and workgroup shape allow. AGPRs follow the ArchVGPRs at a 4-register
    aligned offset (AMDGPUUsage, `compute_pgm_rsrc3.ACCUM_OFFSET`); the unified file holds `vgprs` registers
    per lane in `vgpr_granule` blocks; a CU's LDS is shared by its workgroups; a workgroup's waves spread over
    the CU's SIMDs."""
    granule = int(profile.get("vgpr_granule", 8) or 8)
    total = (-(-vgprs // 4) * 4 + agprs) if agprs else vgprs
    total = max(granule, -(-total // granule) * granule)
    max_waves = int(profile.get("max_waves_per_simd", 8) or 8)
    by_regs = min(max_waves, profile.vgprs // total)
    simds = int((profile.get("pipeline") or {}).get("simds_per_cu", 4))
    waves_per_wg = max(1, workgroup // profile.wavefront_size)
    per_simd_per_wg = -(-waves_per_wg // simds)
    wgs = by_regs // per_simd_per_wg
    if lds_bytes:
        wgs = min(wgs, profile.lds_bytes_per_workgroup // lds_bytes)
    return max(0, wgs * per_simd_per_wg if wgs else 0)


def check_problem(problem: GemmProblem, config: GemmConfig) -> GemmProblem:
    """The small problem a variant is checked on in the emulator: one macro tile of M x N and two K tiles
    (so the main loop runs and its prefetch and LDS buffers turn over), same dtypes, layout and epilogue."""
    p = problem
    return GemmProblem.make(min(p.m, config.tile_m), min(p.n, config.tile_n), min(p.k, 2 * config.depth_k),
                            p.a.name, p.b.name, p.d.name, c=p.c.name if p.c else None, layout=p.layout,
                            alpha=p.alpha, beta=p.beta, bias=p.bias, activation=p.activation,
                            scale_mode=p.scale_mode, a_scale_order=p.a_scale_order, b_scale_order=p.b_scale_order)


def evaluate(variant: Variant, target: str = "gfx942", emulate: bool = True) -> Result:
    """Compile, measure and check one variant; never raises for the variant's own failures (they are the
    result's `error`)."""
    from jitgemm import isa
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.gemm_text import format_problem
    from jitgemm.timing.pipeline import PipelineModelError, model_kernel

    from .kernel import compile as jit_compile

    cfg = variant.config
    res = Result(variant.index, format_problem(variant.problem), variant.generator, _config_dict(cfg))
    spec, profile = isa.load_spec(target), isa.target_profile(target)
    try:
        start = time.perf_counter()
        kernel = jit_compile(variant.problem, cfg, arch=target, generator=variant.generator, use_disk_cache=False)
        res.compile_seconds = time.perf_counter() - start
    except (IRError, isa.IsaError) as exc:
        res.error = f"compile: {exc}"
        return res
    k = codeobj.read(kernel.code_object).kernel(kernel.name)
    meta = k.metadata
    res.kernel, res.code_sha256, res.contract = kernel.name, hashlib.sha256(k.code).hexdigest(), kernel.contract
    res.agprs = int(meta.get(".agpr_count", 0))
    res.vgprs = int(meta.get(".vgpr_count", 0)) - res.agprs if res.agprs else int(meta.get(".vgpr_count", 0))
    res.sgprs = int(meta.get(".sgpr_count", 0))
    res.lds_bytes = int(meta.get(".group_segment_fixed_size", 0)) + int(kernel.contract["launch"].get("lds_bytes", 0))
    res.scratch_bytes = int(meta.get(".private_segment_fixed_size", 0))
    res.spills = int(meta.get(".vgpr_spill_count", 0)) + int(meta.get(".sgpr_spill_count", 0))
    res.waves_per_simd = occupancy(res.vgprs, res.agprs, res.lds_bytes, cfg.workgroup_size, profile)
    try:
        loop = model_kernel(k.code, spec, profile)
    except PipelineModelError as exc:
        res.error = f"static model: {exc}"
        return res
    res.loop_instructions, res.loop_mfmas = len(loop.instructions), loop.mfmas
    res.passes_per_iteration, res.cycles_per_mfma = loop.passes_per_iteration, loop.cycles_per_mfma
    res.mfma_utilisation, res.bound, res.loop_text = loop.mfma_utilisation, loop.bound, loop.instructions
    from jitgemm.timing import predict

    res.predicted_tflops = predict(kernel, variant.problem).tflops   # the one timing model (selector's too)
    if res.waves_per_simd == 0:
        res.error = "occupancy: the kernel's registers or LDS do not fit one workgroup on a compute unit"
    if emulate:
        small = check_problem(variant.problem, cfg)
        res.emulator_problem = format_problem(small)
        failure = emulator_check(kernel, small)
        res.emulator_ok = failure is None
        if failure:
            res.error = res.error or f"emulator: {failure}"
    return res


def emulator_check(kernel, problem: GemmProblem, seed: int = 0) -> str | None:
    """Run a compiled kernel on `problem` in the emulator against the float64 numpy reference (tolerance per
    output dtype, `reference.OUT_RTOL`); None when it matches, else what went wrong."""
    from .api import MatmulError, launch
    from .contract import Contract
    from .emu import EmulatorError
    from .qualify import problem_call
    from .reference import Mismatch, check

    call, want = problem_call(problem, seed)       # operands, scales of the problem's scale mode, reference
    try:
        d = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu")
        check(problem, d, want)
    except (Mismatch, EmulatorError, MatmulError) as exc:
        return str(exc)[:300]
    return None


def _config_dict(config: GemmConfig) -> dict:
    data = asdict(config)
    data.pop("extras", None)
    return data


def _evaluate_task(args: tuple) -> Result:
    variant, target, emulate = args
    return evaluate(variant, target, emulate)


# --- running a sweep -------------------------------------------------------------------------------------------
def run_variants(tasks: list[Variant], target: str = "gfx942", workers: int = 1, ray: str | None = None,
                 emulate: bool = True, progress: bool = True, bar: _progress | None = None
                 ) -> tuple[list[Result], str]:
    """Evaluate variants in this process (workers=1), in `workers` local processes, or as Ray tasks on the
    cluster at `ray` ("local" starts one here with `workers` CPUs). Results come back in the variant order.
    `bar`: a progress bar already showing (the sweep's), else one is made when `progress`."""
    if workers < 1:
        raise SweepError(f"workers={workers}; it must be at least 1")
    jobs = [(v, target, emulate) for v in tasks]
    results: list[Result | None] = [None] * len(jobs)
    with (bar if bar is not None else _progress(len(jobs), progress)) as shown:
        advance = shown.advance
        if ray:
            for i, r in ray_map(_evaluate_task, jobs, ray, workers):
                results[i] = r
                advance()
            engine = "ray"
        elif workers == 1:
            for i, job in enumerate(jobs):
                results[i] = _evaluate_task(job)
                advance()
            engine = "local"
        else:
            import concurrent.futures as cf
            import multiprocessing

            with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                futures = {pool.submit(_evaluate_task, job): i for i, job in enumerate(jobs)}
                for fut in cf.as_completed(futures):
                    results[futures[fut]] = fut.result()
                    advance()
            engine = "process"
    return [r for r in results if r is not None], engine


def ray_map(fn: Callable, jobs: list, address: str, workers: int):
    """(index, fn(job)) for every job, run as Ray tasks; `address` "local" starts a local Ray with `workers`
    CPUs (Ray is the optional extra `ray`: pip install 'jitgemm[ray]')."""
    try:
        import ray
    except ImportError:
        raise SweepError("--ray needs Ray (pip install 'jitgemm[ray]')") from None
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = {remote.remote(job): i for i, job in enumerate(jobs)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        if started and address == "local":
            ray.shutdown()


class _progress:
    """A rich progress bar (or nothing) as a context manager yielding `advance()`. It shows from the start of
    the sweep (`describe` says what is being done before the variants are known); `start(total)` turns it into
    the variants' bar."""

    def __init__(self, total: int | None, show: bool, describe: str = "sweep") -> None:
        self.total, self.show, self.bar, self.describe, self.task = total, show, None, describe, None

    def __enter__(self) -> _progress:
        if self.show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn())
            self.bar.start()
            self.task = self.bar.add_task(self.describe, total=self.total)
        return self

    def start(self, total: int, describe: str = "sweep") -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=total, completed=0, description=describe)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def record(db, report: SweepReport) -> int:
    """Write a sweep's results to the tuning database: per variant `tflops`, `cycles_per_mfma` and
    `occupancy` (source model), `emulator_ok` (emulator) and `compile_seconds` (host); the config and the
    contract travel with the `tflops` row. Returns the number of rows."""
    from jitgemm import __version__

    from .tuning_db import contract_identity

    stamp = time.time()
    rows = []
    for r in report.results:
        if not r.kernel:
            continue
        _, generator, _ = contract_identity(r.contract)
        common = {"target": report.target, "problem": r.problem, "kernel": r.kernel, "generator": generator,
                  "code_sha256": r.code_sha256, "time": stamp, "origin": f"sweep variant {r.index}",
                  "tools": {"jitgemm": __version__, "model": "jitgemm.timing.pipeline"}}
        rows.append({**common, "metric": "tflops", "value": r.predicted_tflops, "source": "model",
                     "config": r.config, "contract": r.contract})
        rows.append({**common, "metric": "cycles_per_mfma", "value": r.cycles_per_mfma, "source": "model"})
        rows.append({**common, "metric": "occupancy", "value": r.waves_per_simd, "source": "model"})
        rows.append({**common, "metric": "compile_seconds", "value": r.compile_seconds, "source": "host"})
        if r.emulator_problem:
            rows.append({**common, "metric": "emulator_ok", "value": 1.0 if r.emulator_ok else 0.0,
                         "source": "emulator", "origin": f"sweep variant {r.index}: {r.emulator_problem}"})
    added = db.add(rows) if rows else 0
    from .selector import forget_choices

    forget_choices()          # matmul's memo of chosen kernels: the database now ranks differently
    return added


def sweep(problems: GemmProblem | Sequence[GemmProblem], *, arch: str = "gfx942",
          generators: Sequence[str] = ("asm",), search: str = "grid", limit: int | None = None, seed: int = 0,
          workers: int = 1, ray: str | None = None, db=None, emulate: bool = True, progress: bool = False,
          tiles: Sequence[int] = TILES, waves: Sequence[tuple[int, int]] = WAVES) -> SweepReport:
    """Search kernel variants for one problem or several (see the module docstring); results go to the tuning
    database `db` (a `TuningDB`, a path, or None for the default database; False: not recorded). For
    several problems the report holds every variant; `best` is over all of them. `tiles` and `waves` narrow
    the grid (macro-tile extents, waves_m x waves_n pairs)."""
    from .tuning_db import TuningDB

    plist = [problems] if isinstance(problems, GemmProblem) else list(problems)
    if not plist:
        raise SweepError("no problem to sweep")
    if workers < 1:
        raise SweepError(f"workers={workers}; it must be at least 1")
    from jitgemm import isa
    from jitgemm.timing.pipeline import PipelineModelError, rates

    try:
        rates(isa.load_spec(arch), isa.target_profile(arch))
    except PipelineModelError as exc:
        raise SweepError(f"{arch}: {exc}") from None
    if ray:
        check_ray()
    store = None if db is False else db if isinstance(db, TuningDB) else TuningDB(db)
    if store is not None and db is not None:
        try:                                  # a database the results cannot go to is said before the work
            store.check_writable()
        except IsaError as exc:
            raise SweepError(str(exc)) from None
    with _progress(None, progress, f"choosing variants of {_short(plist[0])}") as bar:
        tasks = variants(plist, arch, generators, search, limit, seed, tiles, waves)
        if not tasks:
            raise SweepError(f"no config of the grid fits {arch} for {_short(plist[0])}")
        bar.start(len(tasks))
        start = time.perf_counter()
        results, engine = run_variants(tasks, arch, workers, ray, emulate, progress, bar=bar)
    report = SweepReport(plist[0], arch, results, time.perf_counter() - start, workers, engine)
    if store is not None:
        record(store, report)
    return report


def check_ray() -> None:
    """Ray is importable (the optional extra `ray`), else SweepError at once, before any variant is made."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise SweepError("--ray needs Ray (pip install 'jitgemm[ray]')")


def results_json(report: SweepReport) -> str:
    """The report's results as JSON (what `jitgemm sweep --json` writes)."""
    return json.dumps([r.comparable() | {"compile_seconds": r.compile_seconds} for r in report.results], indent=1,
                      default=str)
