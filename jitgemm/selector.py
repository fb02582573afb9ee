"""The shared selector: many suppliers, one legality check, one ranking.

`select(problem)` first asks every candidate's contract whether the problem is legal — never by trying the
kernel — then ranks the legal ones: measured results from the tuning database when there are some for the
problem class, else the one timing model (`jitgemm.timing.predict`: the kernel's own instructions, occupancy,
rounds over the CUs, the memory hierarchy; on the target's default device). Ties break on the kernel's
identity, so the choice is deterministic. The direct generator's fallback kernel (scalar loads) is legal for
every shape and alignment, so selection never comes back empty for a supported dtype pair.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from jitgemm import isa
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.gemm_text import format_problem
from jitgemm.isa.spec.cache import cache_root
from jitgemm.util.files import read_sealed, write_sealed

from .contract import Contract
from .suppliers import Candidate, DirectAsmSupplier, LlvmSupplier, Refusal, Supplier
from .tuning_db import Row, TuningDB


class SelectionError(ValueError):
    """No legal kernel: the message lists each candidate and the clause that rejected it."""


@dataclass
class Verdict:
    candidate: Candidate
    legal: bool
    reason: str
    score: float | None = None      # predicted or measured TFLOP/s; higher is better
    basis: str = ""                 # "tuning" (measured), "sweep" (the database's static model) or "model"
    row: Row | None = None          # the tuning-database row that decided the score
    predicted_us: float | None = None   # the timing model's time of one launch (basis "model")


def _json_load(path: Path) -> dict:
    """A sealed JSON cache file (tuning, quarantine); absent, corrupt or oversized reads as empty."""
    raw = read_sealed(path)
    try:
        data = json.loads(raw) if raw is not None else {}
        return data if isinstance(data, dict) else {}
    except ValueError:
        return {}


def _json_store(path: Path, data: dict) -> None:
    write_sealed(path, json.dumps(data, indent=1, sort_keys=True).encode())


class Quarantine:
    """Kernels that failed qualification, with the failing case; never selected."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_root() / "quarantine.json"

    def reason(self, kernel_key: str) -> str | None:
        value = _json_load(self.path).get(kernel_key)
        return str(value) if value else None

    def add(self, kernel_key: str, case: str) -> None:
        data = _json_load(self.path)
        data[kernel_key] = case
        _json_store(self.path, data)


def predicted(candidate: Candidate, problem: GemmProblem, target: str):
    """The timing model's prediction for a candidate on the target's default device, at the split-K count the
    model finds fastest for a kernel that splits K (`jitgemm.timing.best_split`), or the reason it has none (a
    kernel the model cannot time: no MFMA loop, no tile in its contract)."""
    from jitgemm.timing import TimingError, best_split
    from jitgemm.timing.pipeline import PipelineModelError

    try:
        return best_split(candidate, problem)
    except (TimingError, PipelineModelError, isa.IsaError) as exc:
        return f"model: {exc}"


# The scalar-load fallback's estimate counts too few issue slots and waits (it was timed 1.08-2.4x its estimate
# on the sample of tests/jitgemm/test_prerank.py's notes): it is timed only when its estimate beats the best time
# by this much (a negative margin).
FALLBACK_MARGIN = -0.05


def estimated(candidate: Candidate, problem: GemmProblem, target: str) -> tuple[float, float, int | None, int] | None:
    """The pre-rank's view of a candidate one of this project's generators compiles from its config: (the plan
    estimate in us, `jitgemm.timing.model.plan_estimate`, at the best split the contract allows; its generator's
    `prerank_margin`; its `prerank_iterations`; the main loop's iterations for this K). None: no plan to estimate
    from (a prebuilt, Triton or aiter kernel) or the estimate failed -- such a candidate is timed."""
    from jitgemm.codegen.generator import by_name
    from jitgemm.timing import TimingError
    from jitgemm.timing.model import SPLITS, plan_estimate
    from jitgemm.timing.pipeline import PipelineModelError

    if candidate.config is None or candidate.contract is None:
        return None
    gen = by_name(str(candidate.contract.data.get("identity", {}).get("generator", "")))
    if gen is None:
        return None
    try:
        plan = gen.plan(problem.kernel_class(), candidate.config, isa.load_spec(target), isa.target_profile(target))
        refusal = candidate.contract.split_refusal
        splits = tuple(s for s in SPLITS if s == 1 or refusal(problem.k, s) is None)
        us = plan_estimate(plan, problem, target, candidate.contract.data.get("tile", {}), splits=splits)
    except (TimingError, PipelineModelError, isa.IsaError, IRError, KeyError, ValueError):
        return None
    return us, gen.prerank_margin, gen.prerank_iterations, -(-problem.k // max(1, candidate.config.depth_k))


def spills(candidate: Candidate) -> bool:
    """The candidate's contract says it keeps registers in scratch memory (tile.scratch > 0)."""
    return int(candidate.contract.data.get("tile", {}).get("scratch", 0) or 0) > 0


# where a legal candidate's score came from, best evidence first: a measured row of the tuning database, a
# sweep's modelled row, the built-in cost model, the pre-rank's plan estimate (a kernel the model did not time)
_BASIS_ORDER = {"tuning": 0, "sweep": 1, "model": 2, "estimate": 3}


def rank_key(verdict: Verdict) -> tuple:
    """The ranking of legal candidates, best first -- the one place that orders them: kernels that spill
    after those that do not; then the basis (`_BASIS_ORDER`); then the score; then `tie_key` (the one
    tie-break, which the sweep's "best" uses too); then the supplier's identity, so the choice is deterministic."""
    c = verdict.candidate
    return (spills(c), _BASIS_ORDER.get(verdict.basis, 9), -(verdict.score or 0.0), *tie_key(c.contract.data),
            c.supplier, c.label, c.key)


def tie_key(contract: dict) -> tuple:
    """The one tie-break between kernels of equal score, from their contracts (the selector's `rank_key` and
    `SweepReport.best` both end with it): the wider sure loads first (`load_width`), then the kernel's name."""
    return (-load_width(contract), str(contract.get("identity", {}).get("kernel", "")))


def load_width(contract: dict) -> int:
    """The narrowest pointer alignment a contract demands (its widest sure vector loads); among equal scores
    the more specialized kernel wins, as Triton's launcher picks its tt.divisibility 16 variant."""
    need = contract.get("legality", {}).get("align_bytes", {})
    sure = min((need.get(x, 1) for x in ("a", "b")), default=1)
    # a kernel whose loads are wide whatever the alignment says so itself (tile.load_bytes)
    return max(sure, int(contract.get("tile", {}).get("load_bytes", 1)))


def _load_width(candidate: Candidate) -> int:
    return load_width(candidate.contract.data)


class Selector:
    """Candidates from a list of suppliers for one target: legality from each contract, then `rank_key`. It
    keeps the loaded winner per (problem, alignment), forgotten when a supplier is added."""

    def __init__(self, suppliers: list[Supplier] | None = None, target: str = "gfx942",
                 tuning: TuningDB | None = None, quarantine: Quarantine | None = None) -> None:
        self.target = target
        self.suppliers: list[Supplier] = list(suppliers) if suppliers is not None else [DirectAsmSupplier()]
        self.tuning = tuning or TuningDB()
        self.quarantine = quarantine or Quarantine()
        self._chosen: dict[tuple, tuple[tuple[bytes, str, Contract, str], str | None]] = {}
        self._lock = threading.Lock()

    def register(self, supplier: Supplier) -> None:
        self.suppliers.append(supplier)
        self.forget()

    def forget(self) -> None:
        """New suppliers can change the winner: the memo of chosen kernels starts over."""
        with self._lock:
            self._chosen.clear()

    def choose(self, problem: GemmProblem, align: dict[str, int] | None = None) -> tuple[bytes, str, Contract, str]:
        """The winner for this exact problem and alignment, loaded: (code object, kernel name, contract,
        "supplier:label"). Memoized per selector (and per supplier list, should it change)."""
        return self.choose_with_key(problem, align)[0]

    def choose_with_key(self, problem: GemmProblem, align: dict[str, int] | None = None
                        ) -> tuple[tuple[bytes, str, Contract, str], str | None]:
        """`choose`, and the kernel-cache key of the winner when a generator of this project compiled it (None
        for a prebuilt, Triton or aiter kernel): what jitgemm/warm.py remembers for `matmul`."""
        key = (problem, tuple(sorted((align or {}).items())), tuple(id(s) for s in self.suppliers))
        hit = self._chosen.get(key)
        if hit is not None:
            return hit
        hit = self._choose_cached(problem, align)
        if hit is None:
            cand = self.select(problem, align)
            blob, name = cand.load()
            made = (blob, name, cand.contract, f"{cand.supplier}:{cand.label}")
            hit = (made, self._kernel_key(problem, cand))
            self._remember(problem, align, cand, made[3])
        with self._lock:      # a choice from the disk cache too: the next call neither ranks nor re-keys
            if len(self._chosen) > 4096:
                self._chosen.clear()
            self._chosen[key] = hit
        return hit

    def _kernel_key(self, problem: GemmProblem, cand: Candidate) -> str | None:
        """The kernel-cache key of a candidate a generator of this project compiles (its `load` compiled it through
        the kernel cache: this is that compile's in-memory hit); None otherwise."""
        option = _generator_option(cand)
        if option is None:
            return None
        from jitgemm.kernel import compile as jit_compile

        return jit_compile(problem, cand.config, arch=self.target, generator=option).cache_key or None

    def _choose_cached(self, problem: GemmProblem, align: dict[str, int] | None
                       ) -> tuple[tuple[bytes, str, Contract, str], str | None] | None:
        """The winner from the on-disk choice cache (`jitgemm.choice_cache`: keyed by everything the ranking
        reads), compiled through the kernel cache as the candidate's own `load` would; None on a miss."""
        from . import choice_cache

        entry = choice_cache.load(choice_cache.choice_key(self, "choose", problem, align))
        config = _config_of(entry)
        if config is None or not isinstance(entry.get("contract"), dict) or not isinstance(entry.get("source"), str):
            return None
        from jitgemm.kernel import compile as jit_compile

        kernel = jit_compile(problem, config, arch=self.target, generator=entry["generator"])
        contract = Contract(entry["contract"], str(entry.get("contract_source", "")))
        return (kernel.code_object, kernel.name, contract, entry["source"]), kernel.cache_key or None

    def _remember(self, problem: GemmProblem, align: dict[str, int] | None, cand: Candidate, source: str) -> None:
        """Store a winner the choice cache can give back: one a generator of this project compiles from its
        config (a prebuilt, aiter or Triton kernel is ranked again in a new process)."""
        option = _generator_option(cand)
        if option is None:
            return
        from . import choice_cache

        choice_cache.store(choice_cache.choice_key(self, "choose", problem, align),
                           {"config": _config_fields(cand.config), "generator": option,
                            "contract": cand.contract.data, "source": source,
                            "contract_source": cand.contract.source})

    def evaluate(self, problem: GemmProblem, align: dict[str, int] | None = None,
                 prerank: bool = False) -> list[Verdict]:
        """Every candidate of every supplier with its verdict: legal ones ranked best first, then the rest.
        `prerank`: time with the model only the candidates the plan estimate makes contenders (`_prerank`), as
        `select`, `selected_config` and `explain` do; the others are kept, ranked after the timed ones."""
        verdicts = []
        modelled: list[Candidate] = []
        base = isa.spec.targets.base_target(self.target)
        for supplier in self.suppliers:
            try:
                cands = supplier.candidates(problem, self.target)
            except Refusal as exc:
                verdicts.append(Verdict(Candidate(supplier.name, "(no kernel)", None, lambda: (b"", "")),  # type: ignore[arg-type]
                                        False, f"refused: {exc}"))
                continue
            except Exception as exc:  # a broken supplier must not take the others down
                verdicts.append(Verdict(Candidate(supplier.name, "(supplier failed)", None, lambda: (b"", "")),  # type: ignore[arg-type]
                                        False, f"supplier error: {exc}"))
                continue
            for cand in cands:
                if isa.spec.targets.base_target(cand.contract.target) != base:
                    verdicts.append(Verdict(cand, False, f"identity.target: kernel is for {cand.contract.target}, "
                                                         f"selecting for {self.target}"))
                    continue
                quarantined = self.quarantine.reason(cand.key)
                if quarantined:
                    verdicts.append(Verdict(cand, False, f"quarantined: failed qualification ({quarantined})"))
                    continue
                ok, why = cand.contract.admits(problem, align)
                if not ok:
                    verdicts.append(Verdict(cand, False, why))
                    continue
                verdict = self._measured(cand, problem)
                if verdict is None:
                    modelled.append(cand)
                else:
                    verdicts.append(verdict)
        if prerank:
            verdicts += self._prerank(modelled, problem)
        else:
            verdicts += [self._modelled(cand, problem) for cand in modelled]
        legal = sorted((v for v in verdicts if v.legal), key=rank_key)
        return legal + [v for v in verdicts if not v.legal]

    def _measured(self, cand: Candidate, problem: GemmProblem) -> Verdict | None:
        """The verdict from the tuning database's deciding row for this kernel and problem
        (`TuningDB.deciding_row`), or None: the timing model ranks it."""
        row = self.tuning.deciding_row(self.target, problem, cand.key, cand.contract.data)
        if row is not None and row.metric == "seconds":
            flops = 2.0 * problem.m * problem.n * problem.k * problem.batch
            return Verdict(cand, True, "", flops / row.value / 1e12, "tuning", row)
        if row is not None:
            return Verdict(cand, True, "", row.value, "sweep", row)
        return None

    def _ranked(self, cand: Candidate, problem: GemmProblem) -> Verdict:
        """Ranking hook: the tuning database's deciding row when it has one, else the built-in cost model."""
        return self._measured(cand, problem) or self._modelled(cand, problem)

    def _modelled(self, cand: Candidate, problem: GemmProblem) -> Verdict:
        pred = predicted(cand, problem, self.target)
        if isinstance(pred, str):
            return Verdict(cand, True, pred, 0.0, "model")
        return Verdict(cand, True, f"split_k={pred.split_k}" if pred.split_k > 1 else "", pred.tflops, "model",
                       predicted_us=pred.us)

    def _prerank(self, cands: list[Candidate], problem: GemmProblem) -> list[Verdict]:
        """Time only the contenders (issue 31: the model lowers and traces each kernel it times). Every candidate
        one of this project's generators plans gets `estimated` (the plan's estimate, no lowering); they are timed
        best estimate first, and one is timed only while its estimate, less its generator's `prerank_margin`, is
        within the best time so far (and its loop within the generator's `prerank_iterations`); kernels that
        spill only while no kernel that does not has been timed. Kernels without a plan (prebuilt, Triton,
        aiter) are always timed. The rest are kept with basis "estimate", ranked after every timed kernel."""
        out: list[Verdict] = []
        planned = []
        for cand in cands:
            est = estimated(cand, problem, self.target)
            if est is None:
                out.append(self._modelled(cand, problem))
            else:
                if cand.fallback:     # scalar loads: more issue and waits than the estimate counts
                    est = (est[0], FALLBACK_MARGIN, *est[2:])
                planned.append((spills(cand), est[0], cand, est))
        best = min((v.predicted_us for v in out if v.predicted_us and not spills(v.candidate)), default=None)
        # kernels that do not spill, then those within their generator's reach, best estimate first
        planned.sort(key=lambda x: (x[0], x[3][2] is not None and x[3][3] > x[3][2], x[1],
                                    *tie_key(x[2].contract.data), x[2].label))
        for spill, us, cand, (_, margin, reach, iterations) in planned:
            flops = 2.0 * problem.m * problem.n * problem.k * problem.batch
            if best is not None and (spill or us * (1 - margin) > best or (reach is not None and iterations > reach)):
                why = (f"pre-rank: plan estimate {us:.1f} us, best timed {best:.1f} us"
                       + (f", {iterations} loop iterations > {reach}" if reach is not None and iterations > reach
                          else "") + "; not lowered")
                out.append(Verdict(cand, True, why, flops / us / 1e6, "estimate", predicted_us=us))
                continue
            verdict = self._modelled(cand, problem)
            out.append(verdict)
            if verdict.predicted_us and not spill:
                best = verdict.predicted_us if best is None else min(best, verdict.predicted_us)
        return out

    def select(self, problem: GemmProblem, align: dict[str, int] | None = None) -> Candidate:
        verdicts = self.evaluate(problem, align, prerank=True)
        if verdicts and verdicts[0].legal:
            return verdicts[0].candidate
        lines = "; ".join(f"{v.candidate.supplier}:{v.candidate.label}: {v.reason}" for v in verdicts)
        raise SelectionError(f"no legal kernel for {format_problem(problem)} on {self.target}: "
                             f"{lines or 'no candidates'}")

    def explain(self, problem: GemmProblem, align: dict[str, int] | None = None) -> str:
        verdicts = self.evaluate(problem, align, prerank=True)
        rows = [("#", "supplier", "kernel", "verdict", "score", "why")]
        rank = 0
        for v in verdicts:
            if v.legal:
                rank += 1
            rows.append((str(rank) if v.legal else "-", v.candidate.supplier, v.candidate.label,
                         "kept" if v.legal else "rejected",
                         (f"{v.score:.1f} TF/s" + (f" {v.predicted_us:.1f} us" if v.predicted_us else "")
                          + f" ({v.basis})") if v.score is not None else "",
                         v.reason or ("selected" if v.legal and rank == 1 else "")
                         + (f" [{v.row.describe()}]" if v.row is not None else "")))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        out = [f"problem: {format_problem(problem)}  target: {self.target}"]
        for r in rows:
            out.append("  ".join(r[i].ljust(widths[i]) for i in range(5)) + "  " + r[5])
        return "\n".join(out) + "\n"


_suppliers: list[Supplier] | None = None
_selectors: dict[str, Selector] = {}
_registry_lock = threading.Lock()
_built: tuple[list[Supplier], tuple[int, ...]] | None = None   # the list default_suppliers made, and its members
_widened = False     # use_triton() widened the default Triton supplier


def default_suppliers() -> list[Supplier]:
    """The one supplier list every target's default selector reads: the direct generator, the LLVM generator
    (when llvmlite is installed), the tuning database's variants (what `jitgemm sweep` found, so `matmul`
    can choose the sweep's best), Triton's tl.dot_scaled kernels for block-scaled problems (when Triton is
    installed; `use_triton()` widens it to every problem), and whatever `register_supplier` added."""
    global _suppliers, _built, _widened
    with _registry_lock:
        if _suppliers is None:
            from .suppliers import TritonSupplier
            from .tuned_supplier import TunedSupplier

            _suppliers = [DirectAsmSupplier(), LlvmSupplier(), TunedSupplier(TuningDB()),
                          TritonSupplier(scope="mx")]
            from .aiter.registry import registered_suppliers  # releases `jitgemm aiter import` registered

            _suppliers += registered_suppliers()
            _built, _widened = (_suppliers, tuple(map(id, _suppliers))), False
        return _suppliers


def default_selector(target: str = "gfx942") -> Selector:
    """The process-wide selector for a target (`matmul(..., arch=target)`), built from `default_suppliers()`:
    every target sees the same suppliers."""
    base = isa.spec.targets.base_target(target)
    suppliers = default_suppliers()
    with _registry_lock:
        sel = _selectors.get(base)
        if sel is None:
            sel = Selector([], target=base)
            sel.suppliers = suppliers          # shared, not copied: a registration reaches every target
            _selectors[base] = sel
    return sel


def forget_choices() -> None:
    """Every default selector chooses afresh (the tuning database learnt something: a sweep, a tune)."""
    from . import warm

    for sel in list(_selectors.values()):
        sel.forget()
    warm.forget()


def warm_ready(db: str, quarantine: str) -> bool:
    """The default suppliers and selectors are as a new process makes them (or not made yet): the suppliers
    `default_suppliers` built, none added or widened, every default selector sharing them and reading the tuning
    database `db` and the `quarantine` file (the paths a new process would read). jitgemm/warm.py serves
    remembered kernels only then."""
    if _suppliers is None:
        return not _selectors
    if _widened or _built is None or _built[0] is not _suppliers or _built[1] != tuple(map(id, _suppliers)):
        return False
    from .tuned_supplier import TunedSupplier

    return [str(s.db.path) for s in _suppliers if isinstance(s, TunedSupplier)] == [db] and all(
        sel.suppliers is _suppliers and str(sel.tuning.path) == db and str(sel.quarantine.path) == quarantine
        for sel in list(_selectors.values()))


def register_supplier(supplier: Supplier) -> None:
    """Offer a supplier's kernels to `matmul` on every target."""
    default_suppliers().append(supplier)
    for sel in list(_selectors.values()):
        sel.forget()


def explain(problem: GemmProblem, align: dict[str, int] | None = None, arch: str = "gfx942") -> str:
    """The default selector's table for a problem: every candidate, kept or rejected (and the clause), with
    the ranking scores; then the split-K decision `matmul` takes for it (`split_k_clause`)."""
    return default_selector(arch).explain(problem, align) + split_k_clause(problem, arch)


def split_k_clause(problem: GemmProblem, arch: str = "gfx942") -> str:
    """The split-K line of `explain`: the clause that keeps matmul's split_k="auto" from splitting, or the timing
    model's split count with the predicted times (jitgemm/split_k.py). Grouped problems: the group table."""
    if problem.grouped:
        return ("grouped: one launch, z = group (batch role = G groups), rows from group_offsets[g]..[g+1] "
                f"(operation.grouped); m={problem.m} is the largest group; split-K: no (grouped); ranked above: "
                "both generators' grouped kernels and Triton's grouped_gemm_kernel (jitgemm/triton_gemm.py)\n")
    if problem.k_split != "none":
        return ""
    if problem.scaled:
        return "split-K: no (split_k.partial_problem: fp32 tensor/rowcol/block scales split, MX does not)\n"
    if problem.m > 64 or problem.k < 1024:
        return (f"split-K: no (matmul split_k='auto' considers M <= 64 and K >= 1024; m={problem.m}, "
                f"k={problem.k}; matmul(split_k=n) forces n)\n")
    from .kernel import compile as compile_config
    from .split_k import choose_split, streamk_choice

    config, gen = selected_config(problem, arch)
    c = choose_split(problem, arch, chosen=compile_config(problem, config, arch=arch, generator=gen))
    if c.mode == "streamk":
        return (f"split-K: yes, stream-K over {c.split_k} workgroups (launch.split_k.stream_k, per-tile slots in "
                f"a workspace, reduction kernel applies the epilogue): {c.reason}\n")
    sk = streamk_choice(problem, arch, None, c.us_plain, margin=float("inf")) if c.us_plain == c.us_plain else None
    other = (f"; stream-K candidate {sk.us_split:.2f} us ({sk.split_k} workgroups)" if sk is not None else "")
    if c.split_k > 1:
        return (f"split-K: yes, split_k={c.split_k} (launch.split_k.partials, workspace {4 * c.split_k}*m*n bytes, "
                f"reduction kernel applies the epilogue): {c.reason}{other}\n")
    return f"split-K: no ({c.reason}{other})\n"


def selected_config(problem: GemmProblem, arch: str = "gfx942", generator: str | None = None,
                    align: dict[str, int] | None = None) -> tuple[GemmConfig, str]:
    """(config, generator option) of the kernel the default selector ranks first for `problem` among the
    candidates a generator of this project compiles (its own suppliers and the tuning database's variants; a
    prebuilt or Triton kernel has no config to compile), optionally only `generator`'s. `align`: the operands'
    pointer alignment (default 256 bytes, what numpy's large allocations and `select --align` give). One
    ranking (`selector.rank_key`) decides for `compile`, `matmul`, `select` and `explain`."""
    from jitgemm.codegen.generator import by_name
    from jitgemm.codegen.generator import generator as registered

    if generator is not None:          # a misspelt or unavailable generator is named before any work
        ok, why = registered(generator).available()
        if not ok:
            raise SelectionError(f"generator={generator!r} is not available: {why}")
    from . import choice_cache

    selector = default_selector(arch)
    align = align or {x: 256 for x in ("a", "b", "c", "bias")}
    key = choice_cache.choice_key(selector, f"selected_config generator={generator}", problem, align)
    entry = choice_cache.load(key)
    config = _config_of(entry)
    if config is not None:
        return config, entry["generator"]
    verdicts = selector.evaluate(problem, align, prerank=True)
    for v in verdicts:
        if not v.legal:
            break
        made_by = by_name(str(v.candidate.contract.data.get("identity", {}).get("generator", "")))
        if v.candidate.config is None or made_by is None or (generator is not None and made_by.option != generator):
            continue
        choice_cache.store(key, {"config": _config_fields(v.candidate.config), "generator": made_by.option})
        return v.candidate.config, made_by.option
    why = "; ".join(f"{v.candidate.supplier}:{v.candidate.label}: {v.reason}" for v in verdicts if not v.legal)
    raise SelectionError(f"no {generator or 'jitgemm'} kernel is legal for this problem on {arch}: "
                         f"{why or 'no candidates'}")


def _generator_option(cand: Candidate) -> str | None:
    """The registered generator option that compiles a candidate from its config (None: it has no config, or
    its contract names no generator of this project)."""
    from jitgemm.codegen.generator import by_name

    if cand.config is None or cand.contract is None:
        return None
    made_by = by_name(str(cand.contract.data.get("identity", {}).get("generator", "")))
    return made_by.option if made_by is not None else None


def _config_fields(config: GemmConfig) -> dict:
    from .warm import config_fields

    return config_fields(config)


def _config_of(entry: dict | None) -> GemmConfig | None:
    """The config of a cached choice (None: no entry, or one this version cannot read back exactly)."""
    if entry is None or not isinstance(entry.get("generator"), str):
        return None
    from .warm import config_of

    return config_of(entry.get("config"))


def use_prebuilt(folder: str, custom_yaml: str | None = None) -> list[str]:
    """Offer the code objects in `folder` (or the one kernel file `folder` names) to `matmul`: kernels with
    embedded or sidecar contracts, and hipBLASLt GFA kernels (`.s` or `.co` with a custom.config), completed by
    `custom_yaml` (a Tensile test YAML with their CustomKernel/ProblemType) when given; returns the reasons any
    kernel there was refused (a folder with no kernel file at all says so: nothing was offered). A path that
    does not exist is a SelectionError naming it (a typo must not pass as "nothing refused")."""
    from .suppliers import PrebuiltSupplier

    path = Path(folder).expanduser()
    if not path.exists():
        raise SelectionError(f"use_prebuilt({str(folder)!r}): no such folder or file; expected a folder of code "
                             f"objects (*.co, *.hsaco) or assembly files (*.s) with jitgemm contracts")
    supplier = PrebuiltSupplier(folder, name=f"prebuilt:{folder}", custom_yaml=custom_yaml)
    entries = supplier._scan()
    register_supplier(supplier)
    if not entries and not supplier.errors:
        return [f"{folder}: no code objects (*.co, *.hsaco) or assembly files (*.s); nothing was offered"]
    return list(supplier.errors)


def use_triton() -> str:
    """Offer Triton-compiled GEMMs to `matmul` for every problem (Triton must be installed: a SelectionError
    says how to get it; block-scaled problems see Triton's kernels without this call). Returns what was done,
    with Triton's version."""
    from .suppliers import TritonSupplier

    if not TritonSupplier.available():
        raise SelectionError("use_triton(): Triton is not installed (pip install triton); the selector keeps "
                             "offering the project's own kernels")
    import triton

    global _widened
    done = f"Triton {getattr(triton, '__version__', '?')} kernels are offered to matmul for every problem"
    for supplier in default_suppliers():
        if isinstance(supplier, TritonSupplier):    # the MX-only default one: one Triton supplier, widened
            supplier.scope = "all"
            _widened = True
            for sel in list(_selectors.values()):
                sel.forget()
            return done
    register_supplier(TritonSupplier())
    return done
