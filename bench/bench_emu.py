"""ISA emulator throughput, beside numpy computing the same product (float64 BLAS matmul: the reference the tests
compare against), in two tables:

1. jitgemm's own kernels (the selector's choice for the problem, as `matmul(..., backend="emu")` runs it):
   bf16 1024^3, fp32 1024^3 and bf16 2048^3 (issue 17's goals on the 2-core machine: < 3 s, < 10 s, < 20 s).
   With `--base REV` the same rows are measured again in that git revision of this repository (exported to a
   temporary folder, same interpreter), side by side.
2. Triton's bf16 GEMM (BLOCK 128x128x64, 4 warps, fp32 output) for gfx942 at 256^3, 512^3, 1024^3.

Columns: emulation time (the scheduler loop), wall time of the whole `emulate()` call (argument packing,
memory, decode cache hit), scheduler steps, wave- and lane-instructions (64 per vector/memory wave-instruction,
1 per scalar one) and lane-instructions per second; numpy's matmul time and the emulator/numpy ratio; the
largest error relative to the largest |reference| value.

    python bench/bench_emu.py [--base REV] [--own-only | --triton-only] [--sizes N ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BLOCK = (128, 128, 64)
OWN = (("bf16", 1024), ("fp32", 1024), ("bf16", 2048))

# one own-kernel row, run in a subprocess so that `--base` measures another revision the same way
MEASURE = r"""
import json, sys, time
import ml_dtypes, numpy as np
from jitgemm import api
from jitgemm.emu import emulate
from jitgemm.packing import packed_segment
dtype, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
np_type = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
a = rng.standard_normal((n, n)).astype(np_type)
b = rng.standard_normal((n, n)).astype(np_type)
call = api.prepare(a, b)
blob, name, contract, _ = api._choose(call.problem, call.align, "gfx942")
p = call.problem
t0 = time.perf_counter()
stats = emulate(blob, name, grid=contract.grid(p.m, p.n, p.k, p.batch), block=contract.workgroup,
                args=[packed_segment(contract, call.values)], lds_bytes=contract.lds_bytes)
wall = time.perf_counter() - t0
a64, b64 = a.astype(np.float64), b.astype(np.float64)
t0 = time.perf_counter()
ref = a64 @ b64
t_np = time.perf_counter() - t0
err = float(np.abs(call.d.astype(np.float64) - ref).max() / np.abs(ref).max())
print(json.dumps({"kernel": name, "seconds": stats.seconds, "wall": wall, "steps": stats.steps,
                  "wave": stats.wave_instructions, "lane": stats.lane_instructions, "numpy": t_np, "err": err}))
"""


def _measure(root: Path, dtype: str, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", MEASURE, dtype, str(n)], cwd=root, env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise SystemExit(f"measuring {dtype} {n}^3 in {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(label: str, r: dict) -> str:
    rate = r["lane"] / r["seconds"] / 1e6 if r["seconds"] else 0.0
    return (f"{label:<22} {r['seconds']:>10.3f} {r['wall']:>8.3f} {r['steps']:>7} {r['wave']:>11} {r['lane']:>12} "
            f"{rate:>15.1f} {r['numpy']:>8.4f} {r['seconds'] / r['numpy']:>10.0f} {r['err']:>10.2e}")


HEAD = (f"{'problem':<22} {'emulate s':>10} {'wall s':>8} {'steps':>7} {'wave-instr':>11} {'lane-instr':>12} "
        f"{'M lane-instr/s':>15} {'numpy s':>8} {'emu/numpy':>10} {'rel err':>10}")


def own(base: str | None) -> None:
    print("jitgemm's own kernels (selector's choice, gfx942), beside numpy float64 matmul")
    roots = [("", REPO)]
    tmp = None
    if base:
        tmp = tempfile.TemporaryDirectory()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", base], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
        roots.append((f" @{base}", Path(tmp.name)))
    print(HEAD)
    print("-" * len(HEAD))
    for dtype, n in OWN:
        for tag, root in roots:
            r = _measure(root, dtype, n)
            print(_row(f"{dtype} {n}^3{tag}", r), flush=True)
    print()
    if tmp is not None:
        tmp.cleanup()


def triton(sizes: list[int]) -> None:
    from tests.fixtures.triton_kernels import compile_triton, gemm_kernel, launch

    sig = (("a_ptr", "*bf16"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"),
           *((n, "i32") for n in ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    t0 = time.perf_counter()
    kernel = compile_triton(gemm_kernel, sig, (("BM", BLOCK[0]), ("BN", BLOCK[1]), ("BK", BLOCK[2]),
                                               ("IEEE", False), ("INT", False)))
    print(f"Triton compile (gfx942, bf16 {BLOCK[0]}x{BLOCK[1]}x{BLOCK[2]}): {time.perf_counter() - t0:.2f} s; "
          f"{kernel[1]} bytes of LDS, {kernel[2]} warps")
    print(HEAD)
    print("-" * len(HEAD))
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
        print(_row(f"triton bf16 {n}^3", {"seconds": stats.seconds, "wall": wall, "steps": stats.steps,
                                          "wave": stats.wave_instructions, "lane": stats.lane_instructions,
                                          "numpy": t_np, "err": float(np.abs(c - ref).max() / np.abs(ref).max())}),
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", metavar="REV", help="also measure jitgemm's own kernels in this git revision")
    ap.add_argument("--own-only", action="store_true", help="only the table of jitgemm's own kernels")
    ap.add_argument("--triton-only", action="store_true", help="only the table of Triton's kernel")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024], help="sizes of the Triton table")
    args = ap.parse_args()
    if not args.triton_only:
        own(args.base)
    if not args.own_only:
        triton(args.sizes)


if __name__ == "__main__":
    main()
