"""Planning cost before and after "one plan" (issue 16), side by side in one run: the first `matmul` of a new
problem in a fresh process (empty kernel cache; the spec loaded before the clock starts): selection,
planning and compiling alone, and a whole first matmul of another problem class including the emulator run;
`Selector.evaluate` (the direct and LLVM suppliers, no compiling) cold
and again. The "before" side is a git revision of this repository exported to a temporary folder (default:
the commit before the plan work), run with the same interpreter, one subprocess per measurement.

    python bench/bench_plan.py [--base REV] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, sys, time
import numpy as np, ml_dtypes
from jitgemm import isa
isa.load_spec("gfx942")
ts = time.perf_counter()                                 # imports count: each side imports what it needs
import jitgemm
from jitgemm import api
rng = np.random.default_rng(0)
a = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
b = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
call = api.prepare(a, b)
api._choose(call.problem, call.align, "gfx942")       # what a first matmul does before the emulator runs
tc = time.perf_counter()
a2 = rng.standard_normal((64, 96)).astype(ml_dtypes.bfloat16)
b2 = rng.standard_normal((96, 64)).astype(ml_dtypes.bfloat16)
t0 = time.perf_counter()
jitgemm.matmul(a2, b2, backend="emu")                  # a new problem class (K=96: other tiles and waves)
t1 = time.perf_counter()
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.selector import Selector
from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier
problems = [GemmProblem.make(m, n, k, dt, layout=lay) for m, n, k, dt, lay in
            ((4096, 4096, 4096, "bf16", "NT"), (1000, 3000, 257, "fp16", "NN"), (64, 64, 64, "bf16", "NN"),
             (8192, 512, 1024, "fp8", "TN"), (777, 333, 99, "int8", "TT"), (2048, 2048, 2048, "fp32", "NT"))]
t2 = time.perf_counter()
for p in problems:
    Selector([DirectAsmSupplier(), LlvmSupplier()]).evaluate(p)
t3 = time.perf_counter()
for p in problems:
    Selector([DirectAsmSupplier(), LlvmSupplier()]).evaluate(p)
t4 = time.perf_counter()
print(json.dumps({"choose": tc - ts, "matmul": t1 - t0, "evaluate_cold": (t3 - t2) / len(problems),
                  "evaluate_again": (t4 - t3) / len(problems)}))
"""


def _measure(tree: Path) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=str(tree), JITGEMM_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", MEASURE], env=env, cwd=tree, capture_output=True, text=True,
                             check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="895e9d5", help="git revision measured as 'before'")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side (the best is shown)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as base:
        archive = subprocess.run(["git", "archive", args.base], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        sides = {"before": Path(base), "after": REPO}
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.repeat):
            for side, tree in sides.items():
                got = _measure(tree)
                best[side] = {k: min(v, best.get(side, {}).get(k, v)) for k, v in got.items()}
    rows = (("first matmul 64x64x64 bf16: import + select + compile, s", "choose"),
            ("first matmul 64x96x64 bf16, whole (emu), s", "matmul"),
            ("Selector.evaluate, cold, s per problem", "evaluate_cold"),
            ("Selector.evaluate, again, s per problem", "evaluate_again"))
    print(f"{'':56} {'before ' + args.base:>16} {'after':>10} {'speed-up':>9}")
    for label, key in rows:
        b, a = best["before"][key], best["after"][key]
        print(f"{label:56} {b:>16.4f} {a:>10.4f} {b / a:>8.1f}x")


if __name__ == "__main__":
    main()
