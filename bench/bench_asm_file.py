"""`.s` file -> loadable code object: jitgemm in-process (assemble_source: front end, encoder, relocatable
writer, linker) beside llvm-mc-22 -filetype=obj + ld.lld-22 -shared as processes, on the same files: the
complete assembly text of Triton kernels (the tests' add, softmax, bf16/f16/fp8 GEMMs), clang-22 -S of the
OpenCL test kernels, and tests/data/handwritten_kernel.s. Each row is the best of --repeat runs.

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
        from tests.test_emu_clang import SOURCE

        (folder / "k.cl").write_text(SOURCE)
        subprocess.run([_tool("clang"), "-x", "cl", "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx942",
                        "-nogpulib", "-O2", "-Wno-everything", "-S", str(folder / "k.cl"), "-o",
                        str(folder / "k.s")], check=True)
        out.append(("clang -S (10 OpenCL kernels)", (folder / "k.s").read_text(), None))
    except (ImportError, subprocess.CalledProcessError) as exc:
        print(f"(no clang input: {exc})")
    try:
        from tests import test_disasm_triton_support as kernels

        for path in kernels.build_all(folder):
            out.append((f"triton {path.stem}", path.with_suffix(".s").read_text(), None))
    except ImportError as exc:
        print(f"(no Triton input: {exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm import isa

    mc, lld = _tool("llvm-mc"), _tool("ld.lld")
    spec = isa.load_spec("gfx942")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = []
        for name, text, include in _inputs(folder):
            src = folder / "in.s"
            src.write_text(re.sub(r'"amdgpu9\.42-amd-amdhsa-unknown-gfx942"', '"amdgcn-amd-amdhsa--gfx942"', text))
            ours = theirs = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                assemble_source(text, file=name, spec=spec)
                ours = min(ours, time.perf_counter() - t)
                t = time.perf_counter()
                subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                                *(["-I", str(include)] if include else []), str(src), "-o", str(folder / "o.o")],
                               check=True)
                subprocess.run([lld, "-shared", str(folder / "o.o"), "-o", str(folder / "o.co")], check=True)
                theirs = min(theirs, time.perf_counter() - t)
            rows.append((name, text.count("\n"), ours, theirs))
    print(f"{'input':34} {'lines':>7} {'jitgemm ms':>11} {'llvm-mc+ld.lld ms':>18} {'speed-up':>9}")
    for name, lines, ours, theirs in rows:
        name = Path(name).name if name.endswith(".s") else name
        print(f"{name:34} {lines:7d} {ours * 1e3:11.1f} {theirs * 1e3:18.1f} {theirs / ours:8.1f}x")
    total_ours, total_theirs = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{'total':34} {sum(r[1] for r in rows):7d} {total_ours * 1e3:11.1f} {total_theirs * 1e3:18.1f} "
          f"{total_theirs / total_ours:8.1f}x")


if __name__ == "__main__":
    main()
