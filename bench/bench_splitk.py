"""Split-K for decode shapes: for every low-M shape (M <= 64) of the pinned aiter wheel's tuned tables
(`jitgemm.aiter.inventory(wheel).tuned_rows`), the timing model's predicted time of our kernel without split-K
(the selector's choice for the shape, `jitgemm.compile`) and with the direct generator's split-K pair
(`jitgemm.split_k.choose_split`: partial kernel at the best power-of-two split + the reduction), side by side with
the time aiter measured for its tuned winner (and its split count), on the row's device, with the stream-K
candidate's prediction (`jitgemm.split_k.streamk_choice`) beside; then aiter's splitK > 1 rows, the model at the
row's split vs measured (`split_rows_check`); then compile time per mode (partial / stream-K / atomic kernel via
the direct generator + the LLVM reduction kernel, scaled modes too) beside Triton's GEMM.

Scaled rows (a8w8 rowcol / blockscale, MX fp4) are predicted as they are (split-K and stream-K take fp32 and MX
scales); rows with pre-shuffled B on B's plain layout, marked `proxy`. Predictions, not measurements: no GPU here.

    python3 bench/bench_splitk.py [wheel] [--limit N] [--rows]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def proxy(problem):
    """The problem our split-K can take: the row's own problem (fp32 tensor/rowcol/block scales and MX split too),
    with B's pre-shuffled layout replaced by the plain one (marked `proxy`; our split-K refuses pre-shuffled MX
    weights and the direct generator reads scaled 8-bit B plain)."""
    from dataclasses import replace

    p = problem
    if p.b_preshuffle == "none":
        return p, ""
    try:
        q = replace(p, b_preshuffle="none")
        q.validate()
    except ValueError:
        return None, "-"
    return q, "proxy"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", nargs="?")
    ap.add_argument("--limit", type=int, default=0, help="first N shapes only")
    ap.add_argument("--rows", action="store_true", help="print every shape, not only the summary")
    args = ap.parse_args(argv)
    from jitgemm.aiter import inventory
    from jitgemm.api import compile as api_compile
    from jitgemm.split_k import choose_split, streamk_choice

    if args.wheel:
        wheel = Path(args.wheel)
    else:
        from tests.fixtures.aiter_corpus import aiter_wheel

        wheel = aiter_wheel()
    print(f"load average before: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
    inv = inventory(wheel)
    seen, rows = set(), []
    for r in inv.tuned_rows:
        if r.m > 64 or r.problem is None:
            continue
        key = (r.arch, r.device, r.problem_text)
        if key in seen:
            continue
        seen.add(key)
        rows.append(r)
    if args.limit:
        rows = rows[:args.limit]
    chosen: dict = {}
    stats: dict = {}
    start = time.perf_counter()
    if args.rows:
        print(f"{'table':40} {'arch':6} {'device':7} {'m':>3} {'n':>6} {'k':>6} {'aiter us':>9} {'sk':>3} "
              f"{'ours us':>8} {'ours+sk us':>10} {'s':>3} {'ours/aiter':>10} {'ours+sk/aiter':>13} "
              f"{'stream-K':>9}")
    for r in rows:
        arch = r.arch
        q, mark = proxy(r.problem)
        if q is not None and arch == "gfx950" and q.a.name in ("fp8", "bf8"):
            q, mark = replace(q, a=_ocp(q.a), b=_ocp(q.b)), "proxy"
        if q is None:
            stats["no proxy"] = stats.get("no proxy", 0) + 1
            continue
        cls = (arch, q.kernel_class())
        try:
            if cls not in chosen:
                chosen[cls] = api_compile(q, arch=arch)
            c = choose_split(q, arch, device=r.device, chosen=chosen[cls], streamk=False)
            sk = streamk_choice(q, arch, r.device, c.us_plain, margin=float("inf"))
        except Exception as exc:   # a shape our generators refuse: counted, named once
            stats.setdefault("refused", []).append(f"{r.table}:{r.line}: {str(exc).splitlines()[0][:100]}")
            continue
        s = stats.setdefault((r.table, arch), {"n": 0, "plain": [], "split": [], "splits": 0, "sk": [],
                                                "sk_wins": 0})
        s["n"] += 1
        s["plain"].append(c.us_plain / r.us)
        s["split"].append(c.us_split / r.us)
        s["splits"] += c.split_k > 1
        sk_us = sk.us_split if sk is not None else float("nan")
        s["sk"].append(sk_us / r.us)
        s["sk_wins"] += sk is not None and sk_us < min(c.us_split, 0.9 * c.us_plain)
        if args.rows:
            print(f"{r.table[-40:]:40} {arch:6} {r.device or '-':7} {r.m:3} {r.n:6} {r.k:6} {r.us:9.2f} "
                  f"{r.split_k or 0:3} "
                  f"{c.us_plain:8.2f} {c.us_split:10.2f} {c.split_k:3} {c.us_plain / r.us:10.2f} "
                  f"{c.us_split / r.us:13.2f} {sk_us:9.2f} {mark}")
    print(f"\n{len(rows)} low-M shapes (M <= 64) of aiter {inv.version}'s tuned tables; predicted in "
          f"{time.perf_counter() - start:.1f} s")
    print("(sk = split-K: the partial kernel at the best power-of-two split + the reduction; stream-K: a persistent "
          "grid of CUs x 1/2/4/occupancy workgroups + the per-tile reduction)")
    print(f"{'table':52} {'arch':6} {'shapes':>6} {'split wins':>10} {'median ours/aiter':>17} "
          f"{'median ours+sk/aiter':>20} {'stream-K wins':>13} {'median stream-K/aiter':>21}")
    for (table, arch), s in sorted((k, v) for k, v in stats.items() if isinstance(k, tuple)):
        finite = [x for x in s["sk"] if x == x]
        print(f"{table[-52:]:52} {arch:6} {s['n']:6} {s['splits']:10} {statistics.median(s['plain']):17.2f} "
              f"{statistics.median(s['split']):20.2f} {s['sk_wins']:13} "
              f"{statistics.median(finite) if finite else float('nan'):21.2f}")
    print(f"shapes without a problem our generators take: {stats.get('no proxy', 0)}")
    for line in stats.get("refused", [])[:5]:
        print("refused:", line)
    if stats.get("refused"):
        print(f"refused: {len(stats['refused'])} shapes")
    split_rows_check(inv)
    compile_times()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


def split_rows_check(inv) -> None:
    """The split-K part of the timing model against measurements: every row of aiter's tuned tables whose winner
    ran with splitK > 1 (aiter's assembly kernels add their K slices into D, `zero_output`: the model's split
    slices read-modify-write D, the cost our reduction kernel pays as a separate pass, `split_k.reduce_us`),
    predicted at the row's split and at split 1 beside the measured time; and our reduction's bandwidth estimate
    for the same shape and split (what a deterministic workspace reduction would add)."""
    from jitgemm.split_k import reduce_us
    from jitgemm.timing import validation

    rows = [c for c in validation.cases(inv) if (c.row.split_k or 1) > 1]
    if not rows:
        print("\nno aiter row with splitK > 1 has a kernel the model can predict")
        return
    at_split = validation.predict_cases(rows)
    plain = validation.predict_cases([validation.Case(dataclasses.replace(c.row, split_k=1), c.kernel, c.half)
                                      for c in rows])
    groups: dict = {}
    for c, ps, p1 in zip(rows, at_split, plain, strict=True):
        g = groups.setdefault((c.row.arch, c.row.family), {"n": 0, "ratio": [], "err": [], "gain": [], "red": []})
        g["n"] += 1
        g["ratio"].append(ps / c.row.us)
        g["err"].append(abs(ps - c.row.us) / c.row.us)
        g["gain"].append(p1 / ps)
        g["red"].append(reduce_us(c.row.problem, c.row.split_k, c.row.arch, c.row.device) / c.row.us)
    print("\naiter rows with splitK > 1 (measured on the row's device), the model at the row's split:")
    print(f"{'arch':6} {'family':34} {'rows':>4} {'median pred/meas':>16} {'median |err|':>12} "
          f"{'model split gain':>16} {'our reduction / meas':>20}")
    for (arch, fam), g in sorted(groups.items()):
        print(f"{arch:6} {fam[-34:]:34} {g['n']:4} {statistics.median(g['ratio']):16.2f} "
              f"{statistics.median(g['err']):12.2f} {statistics.median(g['gain']):16.2f} "
              f"{statistics.median(g['red']):20.2f}")


def _ocp(dt):
    from jitgemm.codegen.dtypes import dtype

    return dtype("fp8_e4m3" if dt.name == "fp8" else "fp8_e5m2")


def compile_times() -> None:
    """Fresh compiles: our split-K pair (direct generator partial kernel + LLVM reduction) vs Triton's GEMM."""
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.codegen.generator import generator

    print(f"\n{'compile (fresh)':28} {'mode':8} {'ours kernel ms':>14} {'ours reduce ms':>14} {'triton ms':>9} "
          f"{'triton/ours':>11}")
    _compile_rows(GemmProblem, generator)


def _compile_rows(GemmProblem, generator) -> None:
    from jitgemm.codegen.gemm_plan import clear_plans
    from jitgemm.codegen.gemm_split import partial_problem
    from jitgemm.codegen.llvm.backend import data_layout, run_backend
    from jitgemm.codegen.llvm.split_reduce import reduce_llir

    from jitgemm import isa
    from jitgemm.suppliers import TritonSupplier

    rows = [("gfx942", "bf16", {}, "partial"), ("gfx942", "bf16", {}, "streamk"),
            ("gfx942", "bf16", {"d": "fp32"}, "atomic"), ("gfx942", "fp16", {}, "partial"),
            ("gfx950", "bf16", {}, "streamk"),
            ("gfx942", "int8", {"scale_mode": "rowcol", "d": "bf16"}, "partial"),
            ("gfx950", "fp8_e4m3", {"scale_mode": "block", "d": "bf16"}, "streamk")]
    for arch, dt, extra, mode in rows:
        p = GemmProblem.make(16, 4096, 8192, dt, layout="NT", **extra)
        q = partial_problem(p, mode)
        gen = generator("asm")
        config = gen.choose_config(q, isa.load_spec(arch), isa.target_profile(arch))
        clear_plans()
        t0 = time.perf_counter()
        gen.compile(q, config, target=arch)
        ours = (time.perf_counter() - t0) * 1e3
        red = 0.0
        if mode != "atomic":
            tiles = (config.tile_m, config.tile_n) if mode == "streamk" else None
            t0 = time.perf_counter()
            run_backend(reduce_llir(p, "r", data_layout(arch, ""), tiles), cpu=arch, output="object", kernel="r")
            red = (time.perf_counter() - t0) * 1e3
        tri = float("nan")
        if TritonSupplier.available() and p.scale_mode == "none":
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                t0 = time.perf_counter()
                TritonSupplier()._compile(p, arch, (64, 64, 32))
                tri = (time.perf_counter() - t0) * 1e3
        label = f"{arch} {dt}{' ' + extra['scale_mode'] if 'scale_mode' in extra else ''} 16x4096x8192"
        print(f"{label:28} {mode:8} {ours:14.1f} {red:14.1f} {tri:9.1f} {tri / (ours + red):11.1f}")

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
