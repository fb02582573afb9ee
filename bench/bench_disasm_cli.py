"""`jitgemm disasm` as a user runs it (a new process per command) beside llvm-objdump on the same files.

Rows: one of our kernels in a new process (best of N), and a batch of AMD's aiter code objects: ours in one
`jitgemm disasm A.co B.co ...` process, llvm-objdump once over the same list, and llvm-objdump once per file.
The decode index is cached on disk (isa/decode_index.py); the first row after a change to isa/ rebuilds it, so
one warm-up run precedes the timings.

    python bench/bench_disasm_cli.py [N_FILES]
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# As a user's Python: modules byte-compiled once (see bench_compile.py), not compiled from source every process.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _children_cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def best(cmd: list[str], runs: int, env: dict) -> tuple[float, float]:
    """Best (wall, CPU) seconds of `runs` new processes (CPU is less sensitive to a busy machine)."""
    walls, cpus = [], []
    for _ in range(runs):
        c, t = _children_cpu(), time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
        walls.append(time.perf_counter() - t)
        cpus.append(_children_cpu() - c)
    return min(walls), min(cpus)


def main() -> None:
    sys.path.insert(0, REPO)
    from tests.aiter_corpus import aiter_objects

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    objdump = shutil.which("llvm-objdump-22") or shutil.which("llvm-objdump")
    if objdump is None:
        sys.exit("llvm-objdump-22 not found")
    tmp = tempfile.mkdtemp(prefix="jitgemm-bench-disasm-")
    env = dict(os.environ, PYTHONPATH=REPO, JITGEMM_CACHE_DIR=os.path.join(tmp, "cache"))
    ours = [sys.executable, "-m", "jitgemm", "disasm"]
    kernel = os.path.join(tmp, "k.co")
    subprocess.run([*ours[:-1], "compile", "--m", "256", "--n", "256", "--k", "256", "-o", kernel], check=True,
                   env=env, capture_output=True)
    files = [str(p) for p in aiter_objects("gfx942")]
    files = random.Random(1).sample(files, min(count, len(files)))
    subprocess.run([*ours, kernel], env=env, capture_output=True, check=True)   # warm: parsed spec, decode index
    theirs = [objdump, "-d", "--mcpu=gfx942"]
    one_ours, one_theirs = best([*ours, kernel], 5, env), best([*theirs, kernel], 10, env)
    batch_ours, batch_theirs = best([*ours, *files], 2, env), best([*theirs, *files], 3, env)
    c, t = _children_cpu(), time.perf_counter()
    for f in files:
        subprocess.run([*theirs, f], stdout=subprocess.DEVNULL, check=False)
    per_file_theirs = (time.perf_counter() - t, _children_cpu() - c)
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"{'jitgemm disasm, new process (best)':<48} {'jitgemm':>16} {'llvm-objdump':>16} {'ours/theirs':>12}  goal")
    print(f"{'':<48} {'wall':>8}{'cpu':>8} {'wall':>8}{'cpu':>8} {'wall':>6}{'cpu':>6}")
    rows = [("one kernel (ours, 256^3 bf16)", one_ours, one_theirs, "<= 8x"),
            (f"batch: {len(files)} aiter objects ({mb:.1f} MB), one process", batch_ours, batch_theirs, "< 1x"),
            ("batch vs llvm-objdump once per file", batch_ours, per_file_theirs, "< 1x")]
    for label, (aw, ac), (bw, bc), goal in rows:
        print(f"{label:<48} {aw:7.3f}s{ac:7.3f}s {bw:7.3f}s{bc:7.3f}s {aw / bw:5.1f}x{ac / bc:5.1f}x  {goal}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
