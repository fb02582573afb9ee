"""The LLVM generator's MX kernels on gfx950 beside Triton's `tl.dot_scaled` kernels for the same problem:
compile time and the static main loop (`llvm-mca-22 -mcpu=gfx950`: cycles per iteration and per MFMA, instructions
per MFMA, and cycles per 65536 flops = one 16x16x128 MFMA's work, to compare kernels on different MFMA shapes).
Triton compiles with a fresh cache directory each time (no cache hit), its launch specializations as
`tests/test_emu_gfx950_kernels.py` uses them (64x64x128 tile, 4 warps).

    python bench/bench_llvm_mx.py [REPS]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem  # noqa: E402
from jitgemm.codegen.pipeline_model import llvm_mca, main_loop  # noqa: E402

CASES = [  # (label, A, B, a_scale, b_scale, b_preshuffle, config or None, Triton formats or None)
    ("mxfp4 x mxfp4", "fp4", "fp4", "plain", "plain", "none", None, ("e2m1", "e2m1")),
    ("mxfp8 x mxfp4", "fp8_e4m3", "fp4", "plain", "plain", "none", None, ("e4m3", "e2m1")),
    ("mxfp8 x mxfp8", "fp8_e4m3", "fp8_e4m3", "plain", "plain", "none", None, ("e4m3", "e4m3")),
    ("mxfp4 shuffled, B 16x16", "fp4", "fp4", "shuffled", "shuffled", "16x16", None, None),
    ("mxfp6 x mxfp4 32x32x64", "fp6_e2m3", "fp4", "plain", "plain", "none",
     GemmConfig(64, 64, 128, 2, 2, "V_MFMA_SCALE_F32_32X32X64_F8F6F4", prefetch=2), None),
    ("bf16 x mxfp4 (weight-only)", "bf16", "fp4", "none", "plain", "none", None, None),
]


def _loop_text(code: bytes, spec) -> tuple[list[str], int]:
    from jitgemm.isa.printer import format_instruction

    body = main_loop(code, spec)
    lines = [format_instruction(d.instruction) for d in body if d.instruction is not None]
    return lines, [line.split()[0] for line in lines if line.strip() and "mfma" in line.split()[0]]


def _static(code: bytes, spec, mca: str | None) -> str:
    from jitgemm.isa.mfma import parse_mfma_name

    lines, names = _loop_text(code, spec)
    if not names:
        return f"{'no MFMA loop':>32}"
    mfmas = len(names)
    shapes = [parse_mfma_name(n.upper().replace("_SCALE_", "_")) for n in names]   # shape only
    flops = sum(2 * x.m * x.n * x.k for x in shapes if x is not None)
    if mca is None:
        return f"{len(lines):>6} instr {mfmas:>3} MFMA   (llvm-mca-22 missing)"
    rep = llvm_mca(lines, mca, mcpu="gfx950")
    shape = "/".join(sorted({f"{x.m}x{x.n}x{x.k}" for x in shapes if x is not None}))
    return (f"{len(lines):>6}{mfmas:>6}{len(lines) / mfmas:>9.1f}{rep.cycles_per_iteration:>10.1f}"
            f"{rep.cycles_per_iteration / mfmas:>9.1f}{rep.cycles_per_iteration * 65536 / flops:>10.1f}  {shape}"
            + (f"  ({rep.skipped} refused)" if rep.skipped else ""))


def _ours(problem: GemmProblem, config, reps: int):
    from jitgemm.codegen.llvm import compile_gemm_llvm

    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        kernel = compile_gemm_llvm(problem, config, target="gfx950")
        times.append(time.perf_counter() - t0)
    return kernel, statistics.median(times)


_TRITON_CHILD = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from tests.test_emu_gfx950_kernels import _MX, compile950, mx_kernel
af, bf = sys.argv[2], sys.argv[3]
(_, apk, apt), (_, bpk, bpt) = _MX[af], _MX[bf]
sig = (("a_ptr", apt), ("as_ptr", "*u8"), ("b_ptr", bpt), ("bs_ptr", "*u8"), ("c_ptr", "*fp32"), ("M", "i32"),
       ("N", "i32"), ("K", "i32"), *((n, "constexpr") for n in ("BM", "BN", "BK", "AF", "BF", "APK", "BPK")))
def consts(bn):
    return (("BM", 64), ("BN", bn), ("BK", 128), ("AF", af), ("BF", bf), ("APK", apk), ("BPK", bpk))
compile950(mx_kernel, sig, consts(32))          # warm-up: Triton's one-time initialisation is not counted
t0 = time.perf_counter()
blob = compile950(mx_kernel, sig, consts(64))[0]
seconds = time.perf_counter() - t0
open(sys.argv[4], "wb").write(blob)
print(seconds)
"""


def _triton(formats, reps: int):
    """Triton's compile of the 64x64x128 dot_scaled kernel, in a child process with an empty cache directory
    (Triton keeps compiled kernels in memory and on disk: either would be a cache hit)."""
    import subprocess

    root = str(Path(__file__).resolve().parents[1])
    times, blob = [], b""
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "k.hsaco"
            env = dict(os.environ, TRITON_CACHE_DIR=str(Path(tmp) / "cache"))
            proc = subprocess.run([sys.executable, "-c", _TRITON_CHILD, root, *formats, str(out)], env=env,
                                  capture_output=True, text=True, check=True)
            times.append(float(proc.stdout.split()[-1]))
            blob = out.read_bytes()
    return blob, statistics.median(times)


def main() -> None:
    from jitgemm.codegen import codeobj

    from jitgemm import isa

    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    spec = isa.load_spec("gfx950")
    mca = shutil.which("llvm-mca-22")
    try:
        import triton  # noqa: F401
        have_triton = True
    except ImportError:
        have_triton = False
    print(f"gfx950 MX GEMM kernels, median of {reps} compiles; static main loop by llvm-mca-22 -mcpu=gfx950")
    print(f"{'problem':<28}{'kernel':<10}{'compile s':>10}{'VGPR':>6}{'AGPR':>6}{'scr':>5}"
          f"{'instr':>6}{'MFMA':>6}{'instr/MF':>9}{'cyc/iter':>10}{'cyc/MF':>9}{'cyc/64Kfl':>10}  MFMA")
    for label, a, b, sa, sb, pre, config, formats in CASES:
        problem = GemmProblem.make(4096, 4096, 4096, a, b, "fp32", a_scale=sa, b_scale=sb, b_preshuffle=pre)
        kernel, seconds = _ours(problem, config, reps)
        print(f"{label:<28}{'llvm':<10}{seconds:>10.3f}{kernel.vgprs:>6}{kernel.agprs:>6}"
              f"{kernel.lowered.scratch_bytes:>5}{_static(kernel.code, spec, mca)}")
        if formats and have_triton:
            blob, tseconds = _triton(formats, reps)
            k = codeobj.read(blob).kernels[0]
            meta = k.metadata
            agpr = int(meta.get(".agpr_count", 0))
            print(f"{'':<28}{'triton':<10}{tseconds:>10.3f}{int(meta['.vgpr_count']) - agpr:>6}{agpr:>6}"
                  f"{int(meta.get('.private_segment_fixed_size', 0)):>5}{_static(k.code, spec, mca)}"
                  f"   compile {tseconds / seconds:.1f}x ours")


if __name__ == "__main__":
    main()
