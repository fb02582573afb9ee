"""`jitgemm disasm` beside `llvm-objdump-22 -d` on AMD's hand-written kernels: every gfx942 code object of
the pinned amd-aiter wheel (about 1,300 objects, 6.3 M instructions; tests/fixtures/aiter_corpus.py fetches it).

Rows: llvm-objdump over the whole set (one process per batch of files, output discarded), and ours in one
process (ELF read, decode, print every line, as the CLI does per file), cold (decode tables and line cache
empty) and warm. A third row is the CLI as a user runs it, one process per file, on a sample.

    python bench/bench_disasm_aiter.py [--limit N] [--cli-sample N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N objects (default: all)")
    ap.add_argument("--cli-sample", type=int, default=20, help="objects for the one-process-per-file row")
    args = ap.parse_args(argv)

    from jitgemm.isa.spec.forms import forms_of

    from jitgemm import isa
    from jitgemm.commands import disasm
    from tests.fixtures.aiter_corpus import aiter_objects

    objdump = shutil.which("llvm-objdump-22") or shutil.which("llvm-objdump")
    paths = aiter_objects("gfx942")
    if args.limit:
        paths = paths[: args.limit]
    spec = isa.load_spec("gfx942")

    def ours() -> int:
        forms = forms_of(spec)
        lines = 0
        for path in paths:
            sections, _processor = disasm.text_sections(path.read_bytes())
            lines += len(disasm.listing(sections, forms).lines)
        return lines

    t = time.perf_counter()
    n_lines = ours()
    t_cold = time.perf_counter() - t
    t = time.perf_counter()
    ours()
    t_warm = time.perf_counter() - t
    t_llvm = None
    if objdump:
        t = time.perf_counter()
        for i in range(0, len(paths), 100):
            subprocess.run([objdump, "-d", *map(str, paths[i:i + 100])], check=True, stdout=subprocess.DEVNULL)
        t_llvm = time.perf_counter() - t
    sample = paths[: args.cli_sample]
    t = time.perf_counter()
    for path in sample:
        subprocess.run([sys.executable, "-m", "jitgemm", "disasm", str(path)], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    t_cli = (time.perf_counter() - t) / max(1, len(sample))
    t_obj_one = None
    if objdump:
        t = time.perf_counter()
        for path in sample:
            subprocess.run([objdump, "-d", str(path)], check=True, stdout=subprocess.DEVNULL)
        t_obj_one = (time.perf_counter() - t) / max(1, len(sample))

    print(f"aiter gfx942: {len(paths)} objects, {n_lines} listing lines; llvm-objdump: {objdump}")
    print(f"{'task':58} {'ours':>9} {'llvm-objdump':>13} {'ours/LLVM':>10}")
    for what, mine, theirs in (
            ("whole set, one process, cold caches (s)", t_cold, t_llvm),
            ("whole set, one process, warm caches (s)", t_warm, t_llvm),
            (f"CLI, one process per object, mean of {len(sample)} (s)", t_cli, t_obj_one)):
        ratio = f"{mine / theirs:9.1f}x" if theirs else "      n/a"
        print(f"{what:58} {mine:9.2f} {theirs if theirs is not None else float('nan'):13.2f} {ratio:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
