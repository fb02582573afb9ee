"""The full hostile-input fuzz run (issue 27), beside the outside authorities; the test suite runs seeded samples
of the same drivers (tests/isa/test_asm_mutations.py, test_asm_expr_llvm.py, test_gfx950_modifiers.py,
tests/emu/test_emu_descriptor_fuzz.py). Prints, per driver, how many cases ran and how many differ from llvm-mc-22
(or end in a traceback), with the rate.

    python3 bench/fuzz_hostile.py [--lines 20000] [--exprs 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=20000, help="mutated assembly lines (default 20000)")
    ap.add_argument("--exprs", type=int, default=20000, help="random expressions (default 20000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from tests.fixtures.oracles import find_tool

    mc = find_tool("llvm-mc")
    if mc is None:
        print("llvm-mc-22 is not installed: nothing to compare against")
        return 1
    print(f"{'driver':<34} {'cases':>8} {'differ':>8} {'rate':>7} {'seconds':>8}")

    from tests.fixtures.asm_mutation_fuzz import EXCEPTIONS, base_lines, differences, excepted, mutated_lines
    t0 = time.perf_counter()
    pairs = mutated_lines(base_lines(), args.lines, args.seed)
    bad = differences([line for _, line in pairs], mc)
    kinds = {line: kind for kind, line in pairs}
    _row("asm: mutated lines vs llvm-mc", len(pairs), len(bad), t0)
    named = collections.Counter(next(n for n in EXCEPTIONS if line.split()[0].lower().startswith(n))
                                for _, line in pairs if line.strip() and excepted(line))
    for name, n in sorted(named.items()):
        print(f"    not compared (asm_mutation_fuzz.EXCEPTIONS) {name:<18} {n:>6} lines")
    for (kind, verdict), n in sorted(collections.Counter(
            (kinds[line], "traceback" if ours.startswith("TRACEBACK") else "llvm refuses" if theirs.startswith(
                "refused") else "we refuse / bytes") for line, theirs, ours in bad).items(), key=lambda kv: -kv[1]):
        print(f"    {kind:<18} {verdict:<18} {n:>6}")

    from tests.fixtures.expr_fuzz import expression
    from tests.isa.test_asm_expr_llvm import _overflows, llvm_fold, ours
    t0 = time.perf_counter()
    rng = random.Random(args.seed)
    lines = []
    while len(lines) < args.exprs:
        text = expression(rng)
        if not _overflows(text):
            lines.append(text)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        theirs = llvm_fold(lines, Path(tmp))
    differ = sum(ours(t) != v for t, v in zip(lines, theirs, strict=True))
    _row("expressions: value vs llvm-mc", len(lines), differ, t0)

    from tests.fixtures.gfx950_modifiers import compare, gfx950_only_lines
    t0 = time.perf_counter()
    lines = gfx950_only_lines()
    _row("gfx950-only x modifiers vs llvm-mc", len(lines), len(compare(lines, mc)), t0)
    return 0


def _row(name: str, cases: int, differ: int, t0: float) -> None:
    print(f"{name:<34} {cases:>8} {differ:>8} {100 * differ / max(cases, 1):>6.2f}% {time.perf_counter() - t0:>8.1f}")


if __name__ == "__main__":
    sys.exit(main())
