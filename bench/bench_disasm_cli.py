"""`jitgemm disasm` as a user runs it (a new process per command) beside llvm-objdump on the same files.

Rows, each with llvm-objdump-22 timed in the same run and the ratio (ours / theirs; goal in the last column):
- one file in a new process (best of N): one of our kernels, and one of AMD's aiter objects; with byte-compiled
  modules (what a user's installed wheel or a checkout after its first run has) and, as these machines set
  PYTHONDONTWRITEBYTECODE=1, with every module compiled from source in every process;
- a batch of AMD's aiter code objects: ours in one `jitgemm disasm A.co B.co ...` process (one worker, then
  `--jobs 2`: forked workers, same output) against llvm-objdump once over the same list, and once per file.
CPU seconds are listed beside wall seconds: on a shared 2-core machine they are the steadier number, and a
`--jobs` row spends more CPU to take less wall time.

The decode index is cached on disk (isa/disasm/decode_index.py); the first run after a change to isa/ rebuilds it, so
one warm-up run precedes the timings. Each process gets the same fresh JITGEMM_CACHE_DIR (specs load from the
pre-parsed files beside the bundled XML, see tools/spec_preparse/build.py).

    python bench/bench_disasm_cli.py [N_FILES]     # default 300, the set issue 17 measured
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


def _children_cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def best(cmd: list[str], runs: int, env: dict) -> tuple[float, float]:
    """Best (wall, CPU) seconds of `runs` new processes (CPU is less sensitive to a busy machine)."""
    walls, cpus = [], []
    for _ in range(runs):
        c, t = _children_cpu(), time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env,
                       cwd=tempfile.gettempdir())   # with -m the current folder comes first on sys.path
        walls.append(time.perf_counter() - t)
        cpus.append(_children_cpu() - c)
    return min(walls), min(cpus)


def main() -> None:
    sys.path.insert(0, REPO)
    from tests.fixtures.aiter_corpus import aiter_objects

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    objdump = shutil.which("llvm-objdump-22") or shutil.which("llvm-objdump")
    if objdump is None:
        sys.exit("llvm-objdump-22 not found")
    tmp = tempfile.mkdtemp(prefix="jitgemm-bench-disasm-")
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = dict(base, PYTHONPATH=REPO, JITGEMM_CACHE_DIR=os.path.join(tmp, "cache"))
    # a copy of the tree without __pycache__, run with PYTHONDONTWRITEBYTECODE=1: every process compiles the
    # project's modules from source (the standard library and site-packages keep their .pyc), as on these machines
    tree = shutil.copytree(REPO, os.path.join(tmp, "tree"), ignore=shutil.ignore_patterns(
        "__pycache__", ".git", "build", "dist", "*.egg-info", ".pytest_cache", ".ruff_cache", "notebooks", "bench"))
    no_pyc = dict(env, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=tree)
    ours = [sys.executable, "-m", "jitgemm", "disasm"]
    kernel = os.path.join(tmp, "k.co")
    subprocess.run([*ours[:-1], "compile", "--m", "256", "--n", "256", "--k", "256", "-o", kernel], check=True,
                   env=env, capture_output=True)
    files = [str(p) for p in aiter_objects("gfx942")]
    files = random.Random(1).sample(files, min(count, len(files)))
    aiter_one = files[0]
    subprocess.run([*ours, kernel], env=env, capture_output=True, check=True)   # warm: .pyc, decode index
    theirs = [objdump, "-d", "--mcpu=gfx942"]
    rows = []
    for label, path in (("ours, 256^3 bf16", kernel), ("aiter " + os.path.basename(aiter_one), aiter_one)):
        them = best([*theirs, path], 10, env)
        rows.append((f"one file, new process: {label}", best([*ours, path], 5, env), them, "<= 8x"))
        rows.append(("  same, no .pyc (PYTHONDONTWRITEBYTECODE=1)", best([*ours, path], 3, no_pyc), them, "-"))
    batch_theirs = best([*theirs, *files], 3, env)
    c, t = _children_cpu(), time.perf_counter()
    for f in files:
        subprocess.run([*theirs, f], stdout=subprocess.DEVNULL, check=False)
    per_file_theirs = (time.perf_counter() - t, _children_cpu() - c)
    batch_ours = best([*ours, *files], 2, env)
    batch_jobs = best([*ours, "--jobs", "2", *files], 2, env)
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    rows += [(f"batch: {len(files)} aiter objects ({mb:.1f} MB), one process", batch_ours, batch_theirs, "< 1x"),
             ("  same, --jobs 2 (forked workers)", batch_jobs, batch_theirs, "< 1x"),
             ("batch vs llvm-objdump once per file", batch_ours, per_file_theirs, "< 1x")]
    print(f"{'jitgemm disasm (best of runs)':<52} {'jitgemm':>16} {'llvm-objdump':>16} {'ours/theirs':>12}  goal")
    print(f"{'':<52} {'wall':>8}{'cpu':>8} {'wall':>8}{'cpu':>8} {'wall':>6}{'cpu':>6}")
    for label, (aw, ac), (bw, bc), goal in rows:
        ratios = f"{aw / bw:5.1f}x{ac / max(bc, 1e-3):5.1f}x"
        print(f"{label:<52} {aw:7.3f}s{ac:7.3f}s {bw:7.3f}s{bc:7.3f}s {ratios}  {goal}")
    print(f"(machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
