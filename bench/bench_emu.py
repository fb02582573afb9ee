"""ISA emulator throughput on Triton's bf16 GEMM (BLOCK 128x128x64, 4 warps, fp32 output) for gfx942, beside
numpy computing the same product (float64 BLAS matmul: the reference the tests compare against).

Columns: emulation time (the scheduler loop), wall time of the whole `emulate()` call (argument packing,
memory, decode cache hit), scheduler steps, wave- and lane-instructions (64 per vector/memory wave-instruction,
1 per scalar one) and lane-instructions per second; numpy's matmul time and the emulator/numpy ratio.
Goals on the 2-core machine: 256^3 under 1 s, 1024^3 under 20 s.

    python bench/bench_emu.py [SIZE ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_emu_triton import compile_kernel, launch, matmul_kernel  # noqa: E402

BLOCK = (128, 128, 64)


def main(sizes: list[int]) -> None:
    sig = (("a_ptr", "*bf16"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"),
           *((n, "i32") for n in ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    t0 = time.perf_counter()
    kernel = compile_kernel(matmul_kernel, sig, (("BM", BLOCK[0]), ("BN", BLOCK[1]), ("BK", BLOCK[2]),
                                                 ("IEEE", False), ("INT", False)))
    print(f"Triton compile (gfx942, bf16 {BLOCK[0]}x{BLOCK[1]}x{BLOCK[2]}): {time.perf_counter() - t0:.2f} s; "
          f"{kernel[1]} bytes of LDS, {kernel[2]} warps\n")
    head = (f"{'size':>6} {'emulate s':>10} {'wall s':>8} {'steps':>7} {'wave-instr':>11} {'lane-instr':>12} "
            f"{'M lane-instr/s':>15} {'numpy s':>8} {'emu/numpy':>10} {'max |err|':>10}")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        c = np.zeros((n, n), np.float32)
        grid = -(-n // BLOCK[0]) * -(-n // BLOCK[1])
        t0 = time.perf_counter()
        stats = launch(kernel, grid, [a, b, c, n, n, n, n, 1, n, 1, n, 1], strict=False)
        wall = time.perf_counter() - t0
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        t0 = time.perf_counter()
        ref = a64 @ b64
        t_np = time.perf_counter() - t0
        err = float(np.abs(c - ref).max())
        print(f"{n:>6} {stats.seconds:>10.3f} {wall:>8.3f} {stats.steps:>7} {stats.wave_instructions:>11} "
              f"{stats.lane_instructions:>12} {stats.lane_instructions_per_second / 1e6:>15.1f} {t_np:>8.4f} "
              f"{stats.seconds / t_np:>10.0f} {err:>10.2e}")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [256, 512, 1024])
