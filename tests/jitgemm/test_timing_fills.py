"""Issue 31: the timing model's L2-fill count (`jitgemm.timing.model._fills`) is counted per dispatch round, not
per workgroup; it must equal the per-workgroup sets it replaced (a reference here) for every grid shape, split
count, round size and XCD count -- including grids whose rounds cut rows and slices anywhere."""

from __future__ import annotations

import random

import pytest

from jitgemm.timing.model import _fills


def reference(tiles_m: int, tiles_n: int, slices: int, slots: int, xcds: int) -> tuple[int, int, int]:
    """Each workgroup visited: the (round, XCD, slice, A tile) and (round, XCD, slice, B tile) sets."""
    total = tiles_m * tiles_n * slices
    a_set, b_set = set(), set()
    for i in range(total):
        key = (i // slots, i % xcds, i // (tiles_n * tiles_m))
        a_set.add((*key, (i // tiles_n) % tiles_m))
        b_set.add((*key, i % tiles_n))
    return len(a_set), len(b_set), -(-total // slots)


@pytest.mark.parametrize("seed", range(6))
def test_fills_equal_the_per_workgroup_sets(seed):
    rng = random.Random(seed)
    for _ in range(60):
        args = (rng.randint(1, 40), rng.randint(1, 40), rng.choice([1, 1, 2, 3, 4, 8]), rng.randint(1, 700),
                rng.choice([1, 2, 3, 4, 6, 8, 16, 38]))
        assert _fills(*args) == reference(*args), args


def test_fills_of_a_large_grid():
    """4096^3 with 64x64 tiles on MI300X-like rounds (8 XCDs), split 1 and 4."""
    for slices in (1, 4):
        args = (64, 64, slices, 304 * 2, 8)
        assert _fills(*args) == reference(*args)
