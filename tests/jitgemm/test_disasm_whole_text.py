"""`jitgemm disasm` on a clang object with f64 math, atomics and a second (non-kernel) function lists the
whole .text exactly as llvm-objdump does: every function, padding included."""

from __future__ import annotations

import subprocess

from jitgemm.cli import main
from tests.fixtures.asm_support import objdump_instruction_lines
from tests.fixtures.oracles import REPO, require_tool

SOURCE = REPO / "tests" / "data" / "mixed_ops.cl"




def test_whole_text_matches_objdump(tmp_path, capsys):
    clang, lld, objdump = require_tool("clang"), require_tool("ld.lld"), require_tool("llvm-objdump")
    obj, co = tmp_path / "k.o", tmp_path / "k.co"
    subprocess.run([clang, "-x", "cl", "-cl-std=CL2.0", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-nogpulib",
                    "-O3", "-c", str(SOURCE), "-o", str(obj)], check=True, capture_output=True)
    subprocess.run([lld, "-shared", str(obj), "-o", str(co)], check=True, capture_output=True)
    theirs = objdump_instruction_lines(subprocess.run(
        [objdump, "-d", "--mcpu=gfx942", str(co)], capture_output=True, text=True, check=True).stdout.splitlines())
    assert main(["disasm", str(co)]) == 0
    ours = objdump_instruction_lines(capsys.readouterr().out.splitlines())
    assert sum(1 for line in theirs if line.endswith(">:")) == 2     # the kernel and clang's callable body
    assert ours == theirs


def test_emulator_runs_the_f64_kernel(tmp_path):
    """The same clang object in the emulator: f64 sqrt/fma/division and f32 floor match numpy."""
    import numpy as np

    import jitgemm

    clang, lld = require_tool("clang"), require_tool("ld.lld")
    obj, co = tmp_path / "k.o", tmp_path / "k.co"
    subprocess.run([clang, "-x", "cl", "-cl-std=CL2.0", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-nogpulib",
                    "-O3", "-c", str(SOURCE), "-o", str(obj)], check=True, capture_output=True)
    subprocess.run([lld, "-shared", str(obj), "-o", str(co)], check=True, capture_output=True)
    n = 200
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 4, size=n)
    b = rng.uniform(-2, 2, size=n).astype(np.float32)
    c = rng.integers(0, 1000, size=n).astype(np.int32)
    h = rng.integers(-100, 100, size=n).astype(np.int16)
    a0, b0 = a.copy(), b.copy()
    jitgemm.emulate(co.read_bytes(), "mix", grid=(4, 1, 1), block=(64, 1, 1), args=[a, b, c, h, n], strict=True)
    ref_a = np.sqrt(a0) * (a0 * 2 + 1) / (a0 + 3)
    assert np.max(np.abs(a - ref_a) / np.abs(ref_a)) < 4 * np.finfo(np.float64).eps   # a few ulp of f64
    assert np.array_equal(b, np.floor(b0 * np.float32(3.5)) + a0.astype(np.float32))
