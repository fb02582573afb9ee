"""The on-disk cache of the selector's choice (jitgemm/choice_cache.py): consulted before the ranking, it gives
the same kernel the selector ranks first, and a new tuning row, a new supplier or a changed quarantine is a new
key (a miss). Whether the ranking ran is seen by counting the selector's `jitgemm.timing` predictions."""

from __future__ import annotations

import random

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import choice_cache, selector
from jitgemm.selector import Quarantine, Selector
from jitgemm.suppliers import DirectAsmSupplier, Supplier
from jitgemm.tuning_db import TuningDB


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "tuning.db"))
    return tmp_path


@pytest.fixture
def predictions(monkeypatch):
    """Counts the selector's timing-model predictions (`selector.predicted`, jitgemm.timing per candidate: the
    ranking's cost a cached choice skips)."""
    calls = []
    real = selector.predicted

    def counted(candidate, problem, target):
        calls.append(problem)
        return real(candidate, problem, target)

    monkeypatch.setattr(selector, "predicted", counted)
    return calls


def _problem() -> GemmProblem:
    rng = random.Random()
    return GemmProblem.make(rng.choice((64, 96, 128, 160)), rng.choice((64, 128, 192)), rng.choice((64, 128)),
                            "bf16", layout="NT")


def _selector(tmp_path, *suppliers: Supplier) -> Selector:
    return Selector(list(suppliers) or [DirectAsmSupplier()], target="gfx942", tuning=TuningDB(tmp_path / "t.db"),
                    quarantine=Quarantine(tmp_path / "quarantine.json"))


def test_choose_is_cached_and_equals_the_ranking(cache, predictions):
    p = _problem()
    align = {x: 256 for x in ("a", "b", "c", "bias")}
    first = _selector(cache).choose(p, align)
    assert predictions, "the first choice ranks the candidates"
    ranked = _selector(cache).select(p, align)           # the ranking itself, never the cache
    predictions.clear()
    again = _selector(cache).choose(p, align)            # a new selector: only the disk knows the choice
    assert not predictions, "a cached choice must not rank again"
    assert again[0] == first[0] and again[1] == first[1]
    assert again[3] == first[3] == f"{ranked.supplier}:{ranked.label}"
    assert again[2].data == first[2].data == ranked.contract.data


def test_selected_config_is_cached_and_equals_the_ranking(cache, predictions):
    p = _problem()
    config, option = selector.selected_config(p, "gfx942")
    assert predictions
    predictions.clear()
    assert selector.selected_config(p, "gfx942") == (config, option)
    assert not predictions, "the second selected_config must come from the choice cache"
    # the cache is consulted first by jitgemm.compile(problem): same kernel, no ranking
    import jitgemm

    kernel = jitgemm.compile(p)
    assert not predictions
    assert kernel.config == config
    # without the cache (its folder gone) the same choice is ranked again
    monkey_dir = choice_cache.choice_dir()
    for f in monkey_dir.iterdir():
        f.unlink()
    assert selector.selected_config(p, "gfx942") == (config, option)
    assert predictions


def test_a_tuning_row_changes_the_key_and_the_choice(cache, predictions):
    p = _problem()
    sel = _selector(cache)
    align = {x: 256 for x in ("a", "b", "c", "bias")}
    verdicts = sel.evaluate(p, align)
    legal = [v for v in verdicts if v.legal]
    assert len(legal) >= 2
    sel.choose(p, align)
    loser = legal[-1].candidate
    key_before = choice_cache.choice_key(sel, "choose", p, align)
    # a measured row makes the last-ranked kernel the fastest: the cached choice must not survive it
    sel.tuning.record("gfx942", p, loser.key, 1e-9, contract=loser.contract.data)
    assert choice_cache.choice_key(sel, "choose", p, align) != key_before
    fresh = _selector(cache)
    chosen = fresh.choose(p, align)
    assert chosen[3] == f"{loser.supplier}:{loser.label}" == \
        f"{fresh.select(p, align).supplier}:{fresh.select(p, align).label}"


def test_a_new_supplier_or_quarantine_invalidates(cache, predictions):
    p = _problem()
    align = {x: 256 for x in ("a", "b", "c", "bias")}
    base = _selector(cache)
    key = choice_cache.choice_key(base, "choose", p, align)
    assert key is not None

    class Custom(Supplier):
        name = "custom"

        def candidates(self, problem, target):
            return []

    assert choice_cache.choice_key(_selector(cache, DirectAsmSupplier(), Custom()), "choose", p, align) is None
    from jitgemm.suppliers import LlvmSupplier

    assert choice_cache.choice_key(_selector(cache, DirectAsmSupplier(), LlvmSupplier()), "choose", p, align) != key
    Quarantine(cache / "quarantine.json").add("some-kernel", "case 3")
    assert choice_cache.choice_key(_selector(cache), "choose", p, align) != key
    # a stampless supplier: the choice is ranked every time, never stored
    sel = _selector(cache, DirectAsmSupplier(), Custom())
    sel.choose(p, align)
    predictions.clear()
    _selector(cache, DirectAsmSupplier(), Custom()).choose(p, align)
    assert predictions


def test_problem_and_alignment_are_in_the_key(cache):
    p = _problem()
    sel = _selector(cache)
    a256 = {x: 256 for x in ("a", "b", "c", "bias")}
    keys = {choice_cache.choice_key(sel, "choose", p, a256),
            choice_cache.choice_key(sel, "choose", p, {**a256, "a": 2}),
            choice_cache.choice_key(sel, "choose", GemmProblem.make(p.m + 1, p.n, p.k, "bf16", layout="NT"), a256),
            choice_cache.choice_key(sel, "selected_config generator=None", p, a256)}
    assert len(keys) == 4


def test_corrupt_or_unwritable_cache_degrades(cache, predictions, monkeypatch):
    p = _problem()
    align = {x: 256 for x in ("a", "b", "c", "bias")}
    first = _selector(cache).choose(p, align)
    for f in choice_cache.choice_dir().iterdir():
        f.write_bytes(f.read_bytes()[:-3] + b"xyz")       # breaks the seal
    predictions.clear()
    assert _selector(cache).choose(p, align)[3] == first[3]
    assert predictions, "a corrupt entry is a miss"
    blocker = cache / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setattr(choice_cache, "choice_dir", lambda: blocker / "choices")
    predictions.clear()
    q = GemmProblem.make(p.m + 32, p.n, p.k, "bf16", layout="NT")
    one = _selector(cache).choose(q, align)
    two = _selector(cache).choose(q, align)
    assert one[3] == two[3] and predictions
    n = len(predictions)
    _selector(cache).choose(q, align)
    assert len(predictions) > n, "nothing was cached: every selector ranks"
