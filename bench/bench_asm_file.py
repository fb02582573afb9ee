"""`.s` file -> loadable code object: jitgemm in-process (assemble_source: front end, encoder, relocatable
writer, linker) beside llvm-mc-22 -filetype=obj + ld.lld-22 -shared as processes, on the same files: the
complete assembly text of Triton kernels (the tests' add, softmax, bf16/f16/fp8 GEMMs), clang-22 -S of the
OpenCL test kernels, and tests/data/handwritten_kernel.s. "cold" is our first assembly of that text in the
process (after the spec and imports are loaded; the spec's forms for mnemonics not seen before are built then),
"warm" the best of --repeat runs with the parser's and encoder's per-line caches emptied before each (a
long-running process assembling new text), LLVM's the best of --repeat runs of both processes.

    python bench/bench_asm_file.py [--repeat N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _tool(name: str) -> str:
    path = shutil.which(f"{name}-22") or shutil.which(name)
    if path is None:
        sys.exit(f"{name} is needed for the comparison")
    return path


def _inputs(folder: Path) -> list[tuple[str, str, Path | None]]:
    out = [(str(REPO / "tests/data/handwritten_kernel.s"), (REPO / "tests/data/handwritten_kernel.s").read_text(),
            REPO / "tests/data")]
    try:
        from tests.emu.test_emu_clang import SOURCE

        (folder / "k.cl").write_text(SOURCE)
        subprocess.run([_tool("clang"), "-x", "cl", "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx942",
                        "-nogpulib", "-O2", "-Wno-everything", "-S", str(folder / "k.cl"), "-o",
                        str(folder / "k.s")], check=True)
        out.append(("clang -S (10 OpenCL kernels)", (folder / "k.s").read_text(), None))
    except (ImportError, subprocess.CalledProcessError) as exc:
        print(f"(no clang input: {exc})")
    try:
        from tests.fixtures import triton_kernels as kernels

        for path in kernels.build_all(folder):
            out.append((f"triton {path.stem}", path.with_suffix(".s").read_text(), None))
    except ImportError as exc:
        print(f"(no Triton input: {exc})")
    return out


def _forget_lines(spec) -> None:
    """Empty the parser's line cache and the encoder's per-instruction cache (the spec's instruction forms stay
    built): "warm" is a long-running process assembling text it has not seen, with mnemonics it has."""
    from jitgemm.isa.asm import fastpath as asm_fastpath
    from jitgemm.isa.spec.forms import forms_of

    asm_fastpath._LINES.clear()
    forms_of(spec).encode_cache.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm import isa

    mc, lld = _tool("llvm-mc"), _tool("ld.lld")
    spec = isa.load_spec("gfx942")
    assemble_source((REPO / "tests/data/handwritten_kernel.s").read_text(), file=str(REPO / "tests/data/h.s"),
                    spec=spec)  # imports and the spec's encoder tables, once per process
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = []
        for name, text, include in _inputs(folder):
            src = folder / "in.s"
            src.write_text(re.sub(r'"amdgpu9\.42-amd-amdhsa-unknown-gfx942"', '"amdgcn-amd-amdhsa--gfx942"', text))
            t = time.perf_counter()
            assemble_source(text, file=name, spec=spec)
            cold = time.perf_counter() - t  # the first time this text is seen (no line cache hits)
            ours = theirs = float("inf")
            for _ in range(args.repeat):
                _forget_lines(spec)
                t = time.perf_counter()
                assemble_source(text, file=name, spec=spec)
                ours = min(ours, time.perf_counter() - t)
                t = time.perf_counter()
                subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                                *(["-I", str(include)] if include else []), str(src), "-o", str(folder / "o.o")],
                               check=True)
                subprocess.run([lld, "-shared", str(folder / "o.o"), "-o", str(folder / "o.co")], check=True)
                theirs = min(theirs, time.perf_counter() - t)
            rows.append((name, text.count("\n"), cold, ours, theirs))
    print(f"{'input':30} {'lines':>6} {'jitgemm cold ms':>15} {'warm ms':>8} {'llvm-mc+ld.lld ms':>18} "
          f"{'speed-up cold':>13} {'warm':>6}")
    for name, lines, cold, ours, theirs in rows:
        name = Path(name).name if name.endswith(".s") else name
        print(f"{name:30} {lines:6d} {cold * 1e3:15.1f} {ours * 1e3:8.1f} {theirs * 1e3:18.1f} "
              f"{theirs / cold:12.1f}x {theirs / ours:5.1f}x")
    tc, tw, tl = (sum(r[i] for r in rows) for i in (2, 3, 4))
    print(f"{'total':30} {sum(r[1] for r in rows):6d} {tc * 1e3:15.1f} {tw * 1e3:8.1f} {tl * 1e3:18.1f} "
          f"{tl / tc:12.1f}x {tl / tw:5.1f}x")


if __name__ == "__main__":
    main()
