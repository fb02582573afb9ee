"""Compile latency of jitgemm's direct generator beside Triton compiling a comparable gfx942 GEMM.

Rows: first call for a new bf16 problem in-process (spec already loaded); the first-ever compile in a fresh
environment with no caches at all: from this source tree (the bundled specs ship pre-parsed beside their XML,
tools/spec_preparse/build.py), from a fresh copy of the tree that has no byte-compiled modules yet (a new clone:
Python compiles every module it imports on this first run), from the source tree with the spec XML parsed (a spec
folder without the pre-parsed file, as an official spec from `jitgemm spec fetch` is on its first use), and from an
installed wheel (pre-parsed at build time, see setup.py); a cold process (import + cached spec + compile); a
disk-cache hit in a new process; an in-memory hit. Triton: a bf16 GEMM with the same tile (128x128x32) compiled
for gfx942 on the CPU (fresh cache dir: its first compile, import included, from its installed, byte-compiled
wheel), and its in-process cache hit.

    python bench/bench_compile.py                 # everything
    python bench/bench_compile.py --kernels       # only the default-kernel rows (fast)
    python bench/bench_compile.py --base main     # the same rows in another revision beside this tree's
    python bench/bench_compile.py --hits --base 8260297   # only the warm rows (disk and in-memory hits), vs a rev

Decisions are taken on CPU seconds (time.process_time, resource usage of child processes): this machine is
shared, and wall time measures the load. Every table says the load average it was measured under.

Default-kernel rows (issue 31): every default kernel of gfx942 and gfx950 (bf16, fp16, fp8, int8, MX) at
4096^3 and the 128x128x32-tile bf16 kernel, compiled in-process with the spec loaded (best of 3 CPU seconds),
beside Triton's first compile of its bf16 GEMM (CPU seconds, import excluded), and the emitter's cost per
instruction of the largest one (CPU microseconds of the lowering / instructions emitted); and per kernel the
fully cold compile: a new process with an empty cache folder that imports jitgemm from the tree and runs
`jitgemm.compile(problem, arch=...)` (the selector ranks, then compiles its choice), beside Triton's new process
(import + first compile, CPU). `--base REV` runs the same measurements in a temporary worktree of REV (as
bench/bench_emu.py does), so a regression is a ratio.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A user's Python has byte-compiled modules (pip compiles a wheel's at install; a checkout writes __pycache__ on
# first import), and so do Triton's: do not let PYTHONDONTWRITEBYTECODE time our source compile instead.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

COLD = r"""
import json, sys, time
t0 = time.perf_counter()
import jitgemm
from jitgemm.codegen.gemm_ir import GemmProblem
t1 = time.perf_counter()
k = jitgemm.compile(GemmProblem.make(int(sys.argv[1]), 512, 512, "bf16", layout="NT"))
t2 = time.perf_counter()
import resource
cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for f in ("ru_utime", "ru_stime"))
print(json.dumps({"import": t1 - t0, "compile": t2 - t1, "total": t2 - t0, "source": k.from_cache, "cpu": cpu}))
"""

COLD_KERNEL = r"""
import json, sys, time
import resource
import jitgemm
from jitgemm.codegen.gemm_ir import GemmProblem
k = jitgemm.compile(GemmProblem.make(**json.loads(sys.argv[1])), arch=sys.argv[2])
cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for f in ("ru_utime", "ru_stime"))     # children: LLVM's backend runs in one when it is ranked
print(json.dumps({"cpu": cpu, "kernel": k.name, "source": k.from_cache}))
"""

TRITON = r"""
import json, sys, time, os
t0 = time.perf_counter()
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def gemm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0); pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = (k0 + rk)[None, :]
        kb = (k0 + rk)[:, None]
        x = tl.load(a + rm[:, None] * sam + ka * sak, mask=(rm[:, None] < M) & (ka < K), other=0.0)
        y = tl.load(b + kb * sbk + rn[None, :] * sbn, mask=(kb < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

t1 = time.perf_counter()
sig = {"a": "*bf16", "b": "*bf16", "c": "*bf16", "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sak": "i32",
       "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
src = ASTSource(gemm, sig, constexprs={"BM": 128, "BN": 128, "BK": 32})
c1 = time.process_time()
k = triton.compile(src, target=GPUTarget("hip", "gfx942", 64))
c2 = time.process_time()
t2 = time.perf_counter()
k2 = triton.compile(src, target=GPUTarget("hip", "gfx942", 64))
t3 = time.perf_counter()
import resource
cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for f in ("ru_utime", "ru_stime"))   # up to the first compile's end would be fairer; the hit is ~0
print(json.dumps({"import": t1 - t0, "compile": t2 - t1, "total": t2 - t0, "hit": t3 - t2, "cpu": cpu,
                  "compile_cpu": c2 - c1,
                  "bytes": len(k.asm["hsaco"])}))
"""


# (arch, label, GemmProblem.make arguments): the default kernel of each
KERNELS = [
    *((arch, f"{a} 4096^3 NT", dict(m=4096, n=4096, k=4096, a=a, layout="NT"))
      for arch, fp8 in (("gfx942", "fp8"), ("gfx950", "fp8_e4m3")) for a in ("bf16", "fp16", fp8, "int8")),
    ("gfx950", "MX fp8 4096^3", dict(m=4096, n=4096, k=4096, a="fp8_e4m3", b="fp8_e4m3", a_scale="plain",
                                    b_scale="plain")),
    ("gfx950", "MX fp4 4096^3", dict(m=4096, n=4096, k=4096, a="fp4", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx942", "bf16 128x128x32 tile (256x512x512)", dict(m=256, n=512, k=512, a="bf16", layout="NT")),
]

KERNEL_ROWS = r"""
import json, sys, time
kernels = json.loads(sys.argv[1])
from jitgemm import isa
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.generator import generator
out = []
specs = {}
for arch, label, args in kernels:
    if arch not in specs:
        specs[arch] = isa.load_spec(arch)
        compile_gemm(GemmProblem.make(64, 64, 64, "bf16"), spec=specs[arch], target=arch)   # warm its tables
    p = GemmProblem.make(**args)
    cpu = []
    for _ in range(3):
        t = time.process_time()
        k = compile_gemm(p, spec=specs[arch], target=arch)
        cpu.append(time.process_time() - t)
    n = len(k.lowered.instructions)
    gen, profile = generator("asm"), isa.target_profile(arch)
    cls = p.kernel_class()
    config = gen.choose_config(p, specs[arch], profile)
    if p.scaled:
        from jitgemm.codegen.gemm_asm_mx import lower_mx_gemm as lower
    else:
        from jitgemm.codegen.gemm_asm import lower_gemm as lower
    low = []
    for _ in range(3):
        t = time.process_time()
        lower(cls, config, specs[arch], profile, "k")
        low.append(time.process_time() - t)
    out.append({"arch": arch, "label": label, "cpu": min(cpu), "lower": min(low), "instructions": n})
print(json.dumps(out))
"""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def base_tree(rev: str, tmp: str) -> str:
    """A temporary worktree of `rev` (removed at exit by the caller's cleanup)."""
    path = os.path.join(tmp, "base")
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", path, rev], check=True, capture_output=True)
    return path


def kernel_rows(tree: str, env: dict) -> list[dict]:
    return run(KERNEL_ROWS, json.dumps(KERNELS), env={**env, "PYTHONPATH": tree})


def cold_kernel_rows(tree: str, tmp: str, label: str, runs: int = 2) -> list[float]:
    """Per default kernel: CPU seconds of a new process, nothing cached (a fresh cache folder), that imports
    jitgemm from `tree` and runs `jitgemm.compile(problem, arch=...)` -- the selector's choice, ranked and compiled
    (interpreter start-up included, as in Triton's column); the best of `runs`."""
    out = []
    for i, (arch, _label, args) in enumerate(KERNELS):
        cpus = []
        for r in range(runs):
            env = dict(os.environ, PYTHONPATH=tree, JITGEMM_CACHE_DIR=os.path.join(tmp, f"cold-{label}-{i}-{r}"))
            cpus.append(run(COLD_KERNEL, json.dumps(args), arch, env=env)["cpu"])
        out.append(min(cpus))
    return out


def triton_cpu(tmp: str, runs: int = 3) -> dict:
    """Triton's first compile of its bf16 GEMM in a new process with a fresh cache (median of `runs`)."""
    script = os.path.join(tmp, "triton_gemm.py")   # Triton reads the kernel's source from its file
    with open(script, "w") as fh:
        fh.write(TRITON)
    tris = []
    for i in range(runs):     # a fresh Triton cache each time: its first compile
        tri_env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, f"triton-cold-{i}"))
        out = subprocess.run([sys.executable, script], capture_output=True, text=True, env=tri_env, check=True)
        tris.append(json.loads(out.stdout.strip().splitlines()[-1]))
    tri = {key: statistics.median(t[key] for t in tris) for key in ("import", "compile", "total", "hit", "cpu",
                                                                      "compile_cpu")}
    tri["bytes"] = tris[0]["bytes"]
    return tri


def hit_cpu(tree: str, tmp: str, label: str, runs: int = 3, **extra: str) -> float:
    """Median CPU seconds of a new process whose compile is a disk-cache hit (interpreter start included). Filled
    by two processes: the first creates the tuning database (a change jitgemm/warm.py's stamps see), the second
    compiles with everything settled and remembers the request."""
    env = dict(os.environ, PYTHONPATH=tree, JITGEMM_CACHE_DIR=os.path.join(tmp, f"hit-{label}"), **extra)
    for _ in range(2):
        run(COLD, "256", env=env)    # fill
    return statistics.median(run(COLD, "256", env=env)["cpu"] for _ in range(runs))


BARE = r"""
import json, resource
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": r.ru_utime + r.ru_stime}))
"""

MEMORY_HIT = r"""
import json, sys, time
import jitgemm
from jitgemm.codegen.gemm_ir import GemmProblem
p = GemmProblem.make(256, 512, 512, "bf16", layout="NT")
jitgemm.compile(p)
n = int(sys.argv[1])
t = time.process_time()
for _ in range(n):
    jitgemm.compile(p)
t_compile = (time.process_time() - t) / n
from jitgemm import api      # matmul's choice for 256-byte aligned operands (what matmul asks per call)
align = {x: 256 for x in ("a", "b", "c", "bias")}
api._choose(p, align, "gfx942")
t = time.process_time()
for _ in range(n):
    api._choose(p, align, "gfx942")
print(json.dumps({"cpu": t_compile, "choose": (time.process_time() - t) / n}))
"""


def bare_cpu(runs: int = 5, **extra: str) -> float:
    """Median CPU seconds of `python -c` running nothing: the interpreter's own start-up on this machine (site,
    .pth files), the floor under every new-process row."""
    env = dict(os.environ, **extra)
    return statistics.median(run(BARE, env=env)["cpu"] for _ in range(runs))


def hits_table(tmp: str, base: str | None) -> None:
    """Issue 31's warm rows: a disk-cache hit in a new process (with and without byte-code files) beside the bare
    interpreter, and a repeated `jitgemm.compile` in one process; `--base REV` adds the same rows of REV."""
    print(f"warm paths, CPU seconds; {load()}")
    trees = [("this tree", REPO)] + ([(f"base {base}", base_tree(base, tmp))] if base else [])
    bare = {b: bare_cpu(9, **({"PYTHONDONTWRITEBYTECODE": "1"} if b else {})) for b in (False, True)}
    print(f"{'row':<58} {'.pyc':>9} {'no .pyc':>9}")
    print(f"{'bare interpreter (python -c pass-like), new process':<58} {bare[False] * 1e3:7.1f}ms "
          f"{bare[True] * 1e3:7.1f}ms")
    memory = {}
    for label, tree in trees:
        hits = {b: hit_cpu(tree, tmp, f"w-{label}-{b}", runs=7, **({"PYTHONDONTWRITEBYTECODE": "1"} if b else {}))
                for b in (False, True)}
        print(f"{'disk-cache hit, new process, ' + label:<58} {hits[False] * 1e3:7.1f}ms {hits[True] * 1e3:7.1f}ms"
              f"  (goal <= 60 ms; above the bare interpreter: {(hits[False] - bare[False]) * 1e3:.1f} / "
              f"{(hits[True] - bare[True]) * 1e3:.1f} ms)")
        env = dict(os.environ, PYTHONPATH=tree, JITGEMM_CACHE_DIR=os.path.join(tmp, f"w-{label}-False"))
        memory[label] = run(MEMORY_HIT, "2000", env=env)
    for label, cpu in memory.items():
        print(f"{'in-memory hit, jitgemm.compile(problem) again, ' + label:<58} {cpu['cpu'] * 1e6:7.1f}us")
        print(f"{'in-memory hit, matmul choice (api._choose) again, ' + label:<58} {cpu['choose'] * 1e6:7.1f}us")


def kernels_table(tmp: str, base: str | None) -> None:
    env = dict(os.environ, JITGEMM_CACHE_DIR=os.path.join(tmp, "kernels"))
    print(f"default kernels, in-process compile, CPU seconds (best of 3); {load()}")
    tri = triton_cpu(tmp)
    ours = kernel_rows(REPO, env)
    theirs = kernel_rows(base_tree(base, tmp), env) if base else None
    cold = cold_kernel_rows(REPO, tmp, "this")
    cold_base = cold_kernel_rows(os.path.join(tmp, "base"), tmp, "base") if base else None
    head = f"{'kernel':<44} {'jitgemm':>9} {'xTriton':>8}"
    if theirs:
        head += f" {'base ' + base:>14} {'base/this':>9}"
    head += f" {'fully cold':>10} {'xTriton':>8}" + (f" {'base cold':>10} {'base/this':>9}" if cold_base else "")
    print(head + "  goal")
    for i, row in enumerate(ours):
        line = (f"{row['arch'] + ' ' + row['label']:<44} {row['cpu'] * 1e3:7.1f}ms "
                f"{tri['compile_cpu'] / row['cpu']:7.1f}x")
        if theirs:
            line += f" {theirs[i]['cpu'] * 1e3:12.1f}ms {theirs[i]['cpu'] / row['cpu']:8.2f}x"
        line += f" {cold[i] * 1e3:8.0f}ms {tri['cpu'] / cold[i]:7.1f}x"
        if cold_base:
            line += f" {cold_base[i] * 1e3:8.0f}ms {cold_base[i] / cold[i]:8.2f}x"
        goal = "<= 25 ms" if "128x128" in row["label"] else "<= 50 ms, >= 20x Triton"
        print(f"{line}  {goal}; fully cold >= 5x Triton")
    big = max(range(len(ours)), key=lambda i: ours[i]["instructions"])
    row = ours[big]
    line = (f"{'emit cost, ' + row['arch'] + ' ' + row['label']:<44} "
            f"{row['lower'] / row['instructions'] * 1e6:7.1f}us per instruction ({row['instructions']} instructions)")
    if theirs:
        t = theirs[big]
        line += f"; base {t['lower'] / t['instructions'] * 1e6:.1f}us ({t['instructions']})"
    print(line)
    print(f"(Triton: first compile of the bf16 128x128x32 GEMM {tri['compile_cpu'] * 1e3:.0f} ms CPU without its "
          f"import, {tri['cpu'] * 1e3:.0f} ms with it; xTriton = Triton CPU / jitgemm CPU. jitgemm: the default "
          f"config compiled in-process, spec loaded; fully cold: a new process with no cache at all importing "
          f"jitgemm and compiling the selector's choice (ranking included), against Triton's new process)")
    trees = [("this tree", REPO)] + ([(f"base {base}", os.path.join(tmp, "base"))] if base else [])
    for label, tree in trees:
        hits = {b: hit_cpu(tree, tmp, f"{label}-{b}", **({"PYTHONDONTWRITEBYTECODE": "1"} if b else {}))
                for b in (False, True)}
        print(f"disk-cache hit, new process, {label}: {hits[False] * 1e3:.0f} ms CPU (.pyc written), "
              f"{hits[True] * 1e3:.0f} ms CPU (PYTHONDONTWRITEBYTECODE=1); goal <= 60 ms")


def run(code: str, *args: str, env: dict) -> dict:
    """Run `code` in a new process from a neutral folder (with `-c` the current folder is on sys.path, and a
    source checkout there would shadow an installed wheel); its last stdout line is JSON."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir())
    if out.returncode:
        sys.exit(f"bench_compile: a measuring process failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def installed_wheel(tmp: str) -> str:
    """Build this tree's wheel and install it as pip would (unpack, byte-compile); returns that folder."""
    import glob
    import zipfile

    dist = os.path.join(tmp, "dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist,
                    REPO], check=True, capture_output=True)
    site = os.path.join(tmp, "site")
    zipfile.ZipFile(glob.glob(os.path.join(dist, "jitgemm-*.whl"))[0]).extractall(site)
    subprocess.run([sys.executable, "-m", "compileall", "-q", site], check=True, capture_output=True)  # as pip does
    return site


def fully_cold(tmp: str, label: str, runs: int, trees: list[str] | None = None, **env: str) -> tuple[float, float]:
    """Median (wall, CPU) seconds of the first compile of a new process with an empty cache folder each time
    (nothing cached anywhere), import included; run i imports jitgemm from `trees[i]` when given."""
    results = []
    for i in range(runs):
        env_i = {**os.environ, "PYTHONPATH": trees[i] if trees else REPO,
                 "JITGEMM_CACHE_DIR": os.path.join(tmp, f"fully-cold-{label}-{i}"), **env}
        results.append(run(COLD, "256", env=env_i))
    return statistics.median(r["total"] for r in results), statistics.median(r["cpu"] for r in results)


def fresh_copies(tmp: str, n: int) -> list[str]:
    """`n` copies of this tree's files as a new clone has them: no __pycache__, no build output."""
    ignore = shutil.ignore_patterns("__pycache__", ".git", "build", "dist", "*.egg-info", ".pytest_cache",
                                    ".ruff_cache", ".hypothesis", "notebooks", "tests", "bench")
    return [shutil.copytree(REPO, os.path.join(tmp, f"clone-{i}"), ignore=ignore) for i in range(n)]


def xml_only_spec_dir(tmp: str) -> str:
    """A spec folder holding the bundled gfx942 XML under its official name and nothing beside it: the loader
    must parse it (then caches it in the user cache, which each fully cold run starts without)."""
    from jitgemm.isa.spec import sources as spec_sources

    folder = os.path.join(tmp, "xml-only-specs")
    os.makedirs(folder)
    shutil.copy(spec_sources.locate_spec("gfx942").path, os.path.join(folder, "amdgpu_isa_cdna3.xml"))
    return folder


def main() -> None:
    import argparse
    import atexit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", metavar="REV", help="also measure the default-kernel rows in this git revision")
    ap.add_argument("--kernels", action="store_true", help="only the default-kernel rows")
    ap.add_argument("--hits", action="store_true", help="only the warm rows: disk-cache hit in a new process beside "
                    "the bare interpreter, in-memory hit")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jitgemm-bench-")

    def cleanup() -> None:
        if os.path.isdir(os.path.join(tmp, "base")):
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", os.path.join(tmp, "base")],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(cleanup)
    if args.hits:
        hits_table(tmp, args.base)
        return
    kernels_table(tmp, args.base)
    if args.kernels:
        return
    print()
    from jitgemm.codegen.direct_generator import compile_gemm
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm
    from jitgemm import isa

    env = dict(os.environ, JITGEMM_CACHE_DIR=os.path.join(tmp, "jit"), PYTHONPATH=REPO)   # this tree
    os.environ["JITGEMM_CACHE_DIR"] = env["JITGEMM_CACHE_DIR"]
    spec = isa.load_spec("gfx942")
    compile_gemm(GemmProblem.make(64, 64, 64, "bf16"), spec=spec)  # warm the spec's encoding tables
    firsts = []
    for i in range(5):
        p = GemmProblem.make(256 + 64 * i, 512, 512, "bf16", layout="NT" if i % 2 else "NN", alpha=1.0 + i)
        t = time.perf_counter()
        compile_gemm(p, spec=spec)
        firsts.append(time.perf_counter() - t)
    first = statistics.median(firsts)
    run(COLD, "256", env=env)  # fill the parsed-spec cache
    colds = []
    for i in range(3):   # new problem classes each time: compiled, with the spec from its cache
        env_i = dict(env, JITGEMM_CACHE_DIR=os.path.join(tmp, f"cold{i}"))
        run(COLD, "256", env=env_i)  # parsed spec cached for this dir; kernel cache filled
        shutil.rmtree(os.path.join(tmp, f"cold{i}", "kernels"))   # keep the parsed spec, drop the kernels
        colds.append(run(COLD, "256", env=env_i))
    cold = statistics.median(r["total"] for r in colds)
    hits = [run(COLD, "256", env=env) for _ in range(3)]
    disk = statistics.median(r["total"] for r in hits)
    assert all(r["source"] == "disk" for r in hits)
    p = GemmProblem.make(256, 512, 512, "bf16", layout="NT")
    jitgemm.compile(p)
    n = 20000
    t = time.perf_counter()
    for _ in range(n):
        jitgemm.compile(p)
    mem = (time.perf_counter() - t) / n

    script = os.path.join(tmp, "triton_gemm.py")   # Triton reads the kernel's source from its file
    with open(script, "w") as fh:
        fh.write(TRITON)
    tris = []
    for i in range(3):     # a fresh Triton cache each time: its first compile
        tri_env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, f"triton-cold-{i}"))
        out = subprocess.run([sys.executable, script], capture_output=True, text=True, env=tri_env, check=True)
        tris.append(json.loads(out.stdout.strip().splitlines()[-1]))
    tri = {key: statistics.median(t[key] for t in tris) for key in ("import", "compile", "total", "hit", "cpu")}
    tri["bytes"] = tris[0]["bytes"]
    cold_source = fully_cold(tmp, "source", 3)
    cold_clone = fully_cold(tmp, "clone", 3, trees=fresh_copies(tmp, 3))
    cold_xml = fully_cold(tmp, "xml", 3, JITGEMM_ISA_SPEC_DIR=xml_only_spec_dir(tmp))
    site = installed_wheel(tmp)
    cold_wheel = fully_cold(tmp, "wheel", 3, PYTHONPATH=site)
    rows = [
        ("first call, in-process (spec loaded)", first, tri["compile"], "< 50 ms"),
        ("fully cold, source tree (pre-parsed spec)", cold_source[0], tri["total"], ">= 3x Triton"),
        ("fully cold, new clone (no .pyc yet)", cold_clone[0], tri["total"], "-"),
        ("fully cold, spec XML parsed (no pre-parsed)", cold_xml[0], tri["total"], "-"),
        ("fully cold, installed wheel (pre-parsed spec)", cold_wheel[0], tri["total"], ">= 3x Triton"),
        ("cold process: import + cached spec + compile", cold, tri["total"], "< 400 ms"),
        ("disk-cache hit, new process", disk, None, "< 100 ms"),
        ("in-memory hit (jitgemm.compile)", mem, tri["hit"], "< 20 us"),
    ]
    print(f"{'bf16 GEMM 128x128x32 tile, gfx942':<46} {'jitgemm':>11} {'Triton':>11} {'ratio':>8}  goal")
    for label, ours, theirs, goal in rows:
        ratio = f"{theirs / ours:7.1f}x" if theirs else "      -"
        theirs_s = f"{theirs * 1e3:9.2f}ms" if theirs else "          -"
        print(f"{label:<46} {ours * 1e3:9.3f}ms {theirs_s} {ratio}  {goal}")
    print(f"(Triton: import {tri['import'] * 1e3:.0f} ms, hsaco {tri['bytes']} bytes; ratio = Triton / jitgemm)")
    print("CPU seconds of the fully cold processes (less sensitive to a busy machine), Triton "
          f"{tri['cpu']:.3f} s:")
    for label, (_wall, cpu) in (("source tree", cold_source), ("new clone", cold_clone), ("XML parsed", cold_xml),
                                ("installed wheel", cold_wheel)):
        print(f"  {label:<16} {cpu:.3f} s  ({tri['cpu'] / cpu:.1f}x)")


if __name__ == "__main__":
    main()
