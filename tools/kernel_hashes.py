"""The sha256 of the code object of every default kernel (gfx942 and gfx950; bf16, fp16, fp8, int8, fp32, MX and
weight-only; the direct and the LLVM generator) and of a fixed sample of sweep-grid configs, so that a change that
should not change what the generators emit (a module move, a rename, a refactor) is checked to be byte-identical.

    python3 tools/kernel_hashes.py --write hashes.json     # before the change
    python3 tools/kernel_hashes.py --check hashes.json     # after it: exit 1 and a line per kernel that differs

Uses the public API only (`jitgemm.compile`, `jitgemm.GemmProblem`, `jitgemm.sweep.config_space`), so it runs
unchanged on both sides of a move. A problem a generator refuses is recorded by its error text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jitgemm  # noqa: E402
from jitgemm import GemmProblem  # noqa: E402

# (arch, label, problem arguments)
PROBLEMS: list[tuple[str, str, dict]] = [
    ("gfx942", "fp32", dict(m=128, n=128, k=64, a="fp32")),
    ("gfx942", "fp16", dict(m=256, n=256, k=128, a="fp16")),
    ("gfx942", "fp16-tt-bias-relu", dict(m=200, n=96, k=72, a="fp16", layout="TT", bias="n", activation="relu",
                                         beta=0.5, c="fp16")),
    ("gfx942", "bf16", dict(m=256, n=256, k=128, a="bf16")),
    ("gfx942", "bf16-nt-gelu", dict(m=100, n=70, k=40, a="bf16", layout="NT", activation="gelu", bias="m")),
    ("gfx942", "fp8", dict(m=256, n=256, k=256, a="fp8")),
    ("gfx942", "fp8xbf8", dict(m=128, n=64, k=128, a="fp8", b="bf8", layout="TN")),
    ("gfx942", "int8", dict(m=256, n=256, k=256, a="int8")),
    ("gfx942", "batched-fp16", dict(m=64, n=64, k=64, a="fp16", batch=3)),
    ("gfx950", "fp32", dict(m=128, n=128, k=64, a="fp32")),
    ("gfx950", "bf16", dict(m=256, n=256, k=128, a="bf16")),
    ("gfx950", "fp16", dict(m=256, n=256, k=128, a="fp16", layout="NT")),
    ("gfx950", "fp8", dict(m=256, n=256, k=256, a="fp8")),
    ("gfx950", "int8", dict(m=256, n=256, k=256, a="int8")),
    ("gfx950", "mx-fp4", dict(m=64, n=64, k=256, a="fp4", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx950", "mx-fp4xfp8-shuffled", dict(m=100, n=90, k=256, a="fp4", b="fp8_e4m3", a_scale="plain",
                                           b_scale="shuffled")),
    ("gfx950", "mx-fp8", dict(m=64, n=64, k=128, a="fp8_e4m3", b="fp8_e4m3", a_scale="plain", b_scale="plain")),
    ("gfx950", "mx-fp6xfp4", dict(m=64, n=64, k=128, a="fp6_e2m3", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx950", "wo-bf16xfp4", dict(m=40, n=48, k=256, a="bf16", b="fp4", b_scale="plain")),
    ("gfx950", "wo-fp16xfp8-pre", dict(m=40, n=48, k=256, a="fp16", b="fp8_e4m3", b_scale="plain",
                                       b_preshuffle="16x16")),
]
GENERATORS = ("asm", "llvm")
SWEEP_SAMPLE = [("gfx942", "fp16", dict(m=512, n=512, k=256, a="fp16")),
                ("gfx942", "fp8", dict(m=512, n=512, k=512, a="fp8")),
                ("gfx950", "bf16", dict(m=512, n=512, k=256, a="bf16"))]
SWEEP_SAMPLES = 24        # configs per grid, spread evenly over it (MFMA, tile, waves, depth, prefetch, ...)


def _one(problem, config, arch: str, gen: str) -> str:
    try:
        kernel = jitgemm.compile(problem, config, arch=arch, use_disk_cache=False, generator=gen)
    except Exception as exc:   # a refusal is part of what must not change
        return f"error: {type(exc).__name__}: {exc}"
    return hashlib.sha256(kernel.code_object).hexdigest()


def hashes(progress: bool = False) -> dict[str, str]:
    from jitgemm.sweep import config_space

    out: dict[str, str] = {}
    for arch, label, args in PROBLEMS:
        problem = GemmProblem.make(**args)
        for gen in GENERATORS:
            out[f"{arch}/{label}/{gen}/default"] = _one(problem, None, arch, gen)
            if progress:
                print(f"{arch}/{label}/{gen}", file=sys.stderr)
    for arch, label, args in SWEEP_SAMPLE:
        problem = GemmProblem.make(**args)
        for gen in GENERATORS:
            space = config_space(problem, arch, gen)
            for i in sorted({len(space) * j // SWEEP_SAMPLES for j in range(SWEEP_SAMPLES)}):
                out[f"{arch}/{label}/{gen}/grid{i}of{len(space)}"] = _one(problem, space[i], arch, gen)
            if progress:
                print(f"{arch}/{label}/{gen} grid of {len(space)}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write the hashes to this JSON file")
    group.add_argument("--check", type=Path, help="compare with the hashes in this JSON file")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    now = hashes(args.progress)
    if args.write:
        args.write.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} kernels hashed -> {args.write}")
        return 0
    before = json.loads(args.check.read_text())
    bad = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for k in bad:
        print(f"{k}: {before.get(k)} -> {now.get(k)}")
    print(f"{len(now)} kernels hashed, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
