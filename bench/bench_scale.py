"""Compile time of each scale mode (issue 26): jitgemm's direct and LLVM generators beside Triton compiling its
explicit-multiply peer (jitgemm/triton_gemm.py scaled_gemm_kernel, the kernel `explain` ranks beside ours), for
the same problem class on each target, in one process with the spec loaded. Every compile is a fresh one: our
plan memo is cleared and Triton gets a new cache folder each time (TRITON_CACHE_DIR, TRITON_ALWAYS_COMPILE).
Median of --repeat runs; the load average is printed because the machine is shared.

    python bench/bench_scale.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASES = [  # (mode, target, A/B dtype, D dtype)
    ("tensor", "gfx942", "fp8", "bf16"), ("rowcol", "gfx942", "fp8", "bf16"), ("block", "gfx942", "fp8", "bf16"),
    ("rowcol", "gfx942", "int8", "bf16"), ("block", "gfx942", "int8", "fp16"),
    ("tensor", "gfx950", "fp8_e4m3", "bf16"), ("rowcol", "gfx950", "fp8_e4m3", "bf16"),
    ("block", "gfx950", "fp8_e4m3", "bf16"),
]


def _ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.codegen.gemm_plan import clear_plans
    from jitgemm.codegen.generator import generator

    from jitgemm import isa
    from jitgemm.suppliers import TritonSupplier

    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    for arch in ("gfx942", "gfx950"):
        isa.load_spec(arch)
    print(f"load average before: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
    print(f"{'mode':7} {'target':7} {'dtype':9} {'asm ms':>8} {'llvm ms':>8} {'triton ms':>9} "
          f"{'triton/asm':>10} {'triton/llvm':>11}")
    for mode, arch, dt, d in CASES:
        p = GemmProblem.make(4096, 4096, 4096, dt, d=d, layout="NT", scale_mode=mode)
        times = {}
        for option in ("asm", "llvm"):
            gen = generator(option)

            def ours(gen=gen, p=p, arch=arch):
                clear_plans()
                gen.compile(p, target=arch)
            times[option] = _ms(ours, args.repeat)

        def triton(p=p, arch=arch, mode=mode):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                sup = TritonSupplier(scope="mx")
                block = (64, 64, 128 if mode == "block" else 32)
                sup.compile_scaled(p, arch, block)
        times["triton"] = _ms(triton, args.repeat)
        print(f"{mode:7} {arch:7} {dt:9} {times['asm']:8.1f} {times['llvm']:8.1f} {times['triton']:9.1f} "
              f"{times['triton'] / times['asm']:10.1f} {times['triton'] / times['llvm']:11.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
