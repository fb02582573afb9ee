"""Compile time of each scale mode (issue 26): jitgemm's direct and LLVM generators beside Triton compiling its
explicit-multiply peer (jitgemm/triton_gemm.py scaled_gemm_kernel, the kernel `explain` ranks beside ours), for
the same problem class on each target, in one process with the spec loaded. Ours twice: the default config of a
4096^3 problem (up to 256x256 tiles) and Triton's tile (64x64, 4 waves; K tile 128 for block scales, else 32 for
Triton and ours' default depth). Every compile is a fresh one: our
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
from dataclasses import replace

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
    print(f"{'mode':7} {'target':7} {'dtype':9} {'tile':>7} {'asm ms':>8} {'llvm ms':>8} {'asm64 ms':>8} "
          f"{'llvm64 ms':>9} {'triton64 ms':>11} {'triton/asm64':>12} {'triton/llvm64':>13}")
    for mode, arch, dt, d in CASES:
        p = GemmProblem.make(4096, 4096, 4096, dt, d=d, layout="NT", scale_mode=mode)
        times = {}
        for option in ("asm", "llvm"):
            gen = generator(option)
            spec, profile = isa.load_spec(arch), isa.target_profile(arch)
            base = gen.choose_config(p, spec, profile)
            small = replace(base, tile_m=64, tile_n=64, waves_m=2, waves_n=2)
            for label, config in (("", base), ("64", small)):
                def ours(gen=gen, p=p, arch=arch, config=config):
                    clear_plans()
                    gen.compile(p, config, target=arch)
                times[option + label] = _ms(ours, args.repeat)

        def triton(p=p, arch=arch, mode=mode):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                sup = TritonSupplier(scope="mx")
                block = (64, 64, 128 if mode == "block" else 32)
                sup.compile_scaled(p, arch, block)
        times["triton"] = _ms(triton, args.repeat)
        tile = f"{base.tile_m}x{base.tile_n}"
        print(f"{mode:7} {arch:7} {dt:9} {tile:>7} {times['asm']:8.1f} {times['llvm']:8.1f} {times['asm64']:8.1f} "
              f"{times['llvm64']:9.1f} {times['triton']:11.1f} {times['triton'] / times['asm64']:12.1f} "
              f"{times['triton'] / times['llvm64']:13.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
