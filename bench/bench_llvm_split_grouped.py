"""Compile time of the kernel classes the LLVM generator gained in issue 26 -- the split-K partial kernel and the
grouped (MoE) kernel -- beside the direct generator's kernel of the same class and Triton's peer (Triton's GEMM for
the partial, `triton_gemm.grouped_gemm_kernel` for grouped), each a fresh compile (no disk cache, a new Triton
cache folder), with the ratios and the machine's load. Then the predicted time (`jitgemm.timing.predict`, no GPU
here) of each generator's grouped kernel on a MoE-like layer, as the selector ranks them.

    python3 bench/bench_llvm_split_grouped.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _fresh(fn, repeat: int) -> float:
    """Median milliseconds of `repeat` fresh calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _triton(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["TRITON_CACHE_DIR"] = cache
            from jitgemm.suppliers import TritonSupplier

            sup = TritonSupplier()                  # its own memo: a new one compiles again
            t0 = time.perf_counter()
            fn(sup)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.codegen.gemm_plan import clear_plans
    from jitgemm.codegen.gemm_split import partial_problem
    from jitgemm.codegen.generator import generator

    from jitgemm import isa
    from jitgemm.suppliers import TritonSupplier

    print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    have_triton = TritonSupplier.available()
    rows = []
    for arch, dt in (("gfx942", "bf16"), ("gfx942", "fp8"), ("gfx950", "bf16")):
        base = GemmProblem.make(16, 4096, 8192, dt, d="bf16", layout="NT")
        grouped = GemmProblem.make(64, 2048, 1024, dt, d="bf16", batch=8, grouped=True)
        for label, p, peer in (("split-K partial", partial_problem(base), lambda s, p=base, a=arch: s._compile(
                                   p, a, (64, 64, 32))),
                               ("grouped G=8", grouped, lambda s, p=grouped, a=arch: s.compile_grouped(p, a))):
            spec, profile = isa.load_spec(arch), isa.target_profile(arch)
            ms = {}
            for gen_name in ("asm", "llvm"):
                gen = generator(gen_name)
                config = gen.choose_config(p, spec, profile)

                def once(gen=gen, config=config, p=p, arch=arch):
                    clear_plans()
                    gen.compile(p, config, target=arch)
                ms[gen_name] = _fresh(once, args.repeat)
            tri = _triton(peer, args.repeat) if have_triton else float("nan")
            rows.append((f"{arch} {dt} {label}", ms["asm"], ms["llvm"], tri))
    print(f"\n{'compile (fresh, median ms)':34} {'direct':>8} {'LLVM':>8} {'Triton':>8} {'Triton/direct':>13} "
          f"{'Triton/LLVM':>11}")
    for name, asm, llvm, tri in rows:
        print(f"{name:34} {asm:8.1f} {llvm:8.1f} {tri:8.1f} {tri / asm:13.1f} {tri / llvm:11.1f}")

    from jitgemm.kernel import compile as jit_compile
    from jitgemm.timing import predict

    print(f"\n{'grouped, predicted (model)':34} {'direct us':>9} {'LLVM us':>9}")
    for arch, dt in (("gfx942", "bf16"), ("gfx950", "fp8_e4m3")):
        p = GemmProblem.make(64, 4096, 7168, dt, d="bf16", batch=16, grouped=True)
        us = [predict(jit_compile(p, None, arch=arch, generator=g), p).us for g in ("asm", "llvm")]
        print(f"{arch + ' ' + dt + ' G=16 64x4096x7168':34} {us[0]:9.1f} {us[1]:9.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
