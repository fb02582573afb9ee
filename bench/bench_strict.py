"""Strict emulation against plain emulation on Triton's bf16 GEMM (BLOCK 128x128x64, 4 warps, fp32 output) for
gfx942: the same launch run plain, then with `strict=True` (pending memory results, LDS races, the hazard table
checked per register), side by side. Goal: strict costs at most 2x plain. Both runs must give the same C.

Columns: plain and strict emulation time (the scheduler loop), their ratio, scheduler steps, wave-instructions,
and whether the two outputs are bit-identical.

    python bench/bench_strict.py [SIZE ...]      (default 256 1024)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.emu.test_emu_triton import compile_kernel, launch, matmul_kernel  # noqa: E402

BLOCK = (128, 128, 64)


def main(sizes: list[int]) -> None:
    sig = (("a_ptr", "*bf16"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"),
           *((n, "i32") for n in ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    kernel = compile_kernel(matmul_kernel, sig, (("BM", BLOCK[0]), ("BN", BLOCK[1]), ("BK", BLOCK[2]),
                                                 ("IEEE", False), ("INT", False)))
    head = (f"{'size':>6} {'plain s':>9} {'strict s':>9} {'strict/plain':>13} {'steps':>7} {'wave-instr':>11} "
            f"{'same C':>7}")
    print(f"Triton bf16 GEMM {BLOCK[0]}x{BLOCK[1]}x{BLOCK[2]}, {kernel[2]} warps\n")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        grid = -(-n // BLOCK[0]) * -(-n // BLOCK[1])
        out = {}
        for mode in (False, True):
            c = np.zeros((n, n), np.float32)
            t0 = time.perf_counter()
            stats = launch(kernel, grid, [a, b, c, n, n, n, n, 1, n, 1, n, 1], strict=mode)
            out[mode] = (stats, c, time.perf_counter() - t0)
        plain, strict = out[False][0], out[True][0]
        same = np.array_equal(out[False][1], out[True][1])
        print(f"{n:>6} {plain.seconds:>9.3f} {strict.seconds:>9.3f} {strict.seconds / plain.seconds:>13.2f} "
              f"{plain.steps:>7} {plain.wave_instructions:>11} {str(same):>7}")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [256, 1024])
