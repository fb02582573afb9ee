"""gfx950 beside gfx942: disassembler decode rate and emulator throughput.

1. Decode: every instruction of a Triton mxfp4 x mxfp4 kernel (tl.dot_scaled, gfx950) and of Triton's bf16 GEMM
   for gfx942, decoded with this package's decoder (the code object's own spec), beside llvm-objdump-22 on the
   same object (its whole run, process start included).
2. Emulator: the same two kernels on a 256x256x256 problem; scheduler seconds, lane-instructions and
   lane-instructions per second, beside numpy's float64 matmul of the same product.

    python bench/bench_gfx950.py [SIZE]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.emu.test_emu_gfx950_kernels import _MX, compile950, mx_kernel  # noqa: E402
from tests.emu.test_emu_triton import compile_kernel, launch, matmul_kernel  # noqa: E402


def _kernels():
    sig = (("a_ptr", "*u8"), ("as_ptr", "*u8"), ("b_ptr", "*u8"), ("bs_ptr", "*u8"), ("c_ptr", "*fp32"),
           ("M", "i32"), ("N", "i32"), ("K", "i32"), *((n, "constexpr") for n in ("BM", "BN", "BK", "AF", "BF",
                                                                                   "APK", "BPK")))
    mx = compile950(mx_kernel, sig, (("BM", 64), ("BN", 64), ("BK", 128), ("AF", "e2m1"), ("BF", "e2m1"),
                                     ("APK", 2), ("BPK", 2)))
    sig = (("a_ptr", "*bf16"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"),
           *((n, "i32") for n in ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    bf16 = compile_kernel(matmul_kernel, sig, (("BM", 64), ("BN", 64), ("BK", 64), ("IEEE", False), ("INT", False)))
    return {"gfx950 mxfp4 (dot_scaled)": mx, "gfx942 bf16 (tl.dot)": bf16}


def _decode_rate(name: str, hsaco: bytes) -> str:
    from jitgemm.codegen.codeobj.reader import read
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.spec.forms import forms_of

    from jitgemm import isa

    co = read(hsaco)
    forms = forms_of(isa.load_spec(co.processor))
    code = co.kernels[0].code
    decode(code, forms)  # warm the decode index
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        decoded = decode(code, forms)
    t = (time.perf_counter() - t0) / reps
    objdump = shutil.which("llvm-objdump-22")
    t_obj = float("nan")
    if objdump:
        with tempfile.NamedTemporaryFile(suffix=".co") as f:
            f.write(hsaco)
            f.flush()
            t0 = time.perf_counter()
            subprocess.run([objdump, "-d", f"--mcpu={co.processor}", f.name], capture_output=True, check=True)
            t_obj = time.perf_counter() - t0
    return (f"{name:28} {len(decoded):>8} {len(code):>8} {len(decoded) / t / 1e3:>12.0f} {len(code) / t / 1e6:>8.2f} "
            f"{t * 1e3:>9.2f} {t_obj * 1e3:>12.1f}")


def _emulate(name: str, compiled, n: int) -> str:
    rng = np.random.default_rng(0)
    c = np.zeros((n, n), np.float32)
    if "mxfp4" in name:
        dt = _MX["e2m1"][0]
        ac = rng.standard_normal((n, n)).astype(dt).view(np.uint8) & 0xF
        bc = rng.standard_normal((n, n)).astype(dt).view(np.uint8) & 0xF
        a = (ac[:, 0::2] | (ac[:, 1::2] << 4)).astype(np.uint8)
        b = (bc[0::2, :] | (bc[1::2, :] << 4)).astype(np.uint8)
        sa = rng.integers(124, 130, (n, n // 32)).astype(np.uint8)
        sb = rng.integers(124, 130, (n, n // 32)).astype(np.uint8)
        args = [a, sa, b, sb, c, n, n, n]
        a64 = ac.view(dt).astype(np.float64) * np.repeat(np.ldexp(1.0, sa.astype(int) - 127), 32, axis=1)
        b64 = bc.view(dt).astype(np.float64) * np.repeat(np.ldexp(1.0, sb.astype(int) - 127), 32, axis=1).T
    else:
        a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        args = [a, b, c, n, n, n, n, 1, n, 1, n, 1]
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
    stats = launch(compiled, -(-n // 64) * -(-n // 64), args)
    t0 = time.perf_counter()
    ref = a64 @ b64
    t_np = time.perf_counter() - t0
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    return (f"{name:28} {stats.seconds:>10.3f} {stats.lane_instructions:>12} "
            f"{stats.lane_instructions_per_second / 1e6:>15.1f} {t_np:>8.4f} {stats.seconds / t_np:>10.0f} {err:>9.1e}")


def main(n: int) -> None:
    kernels = _kernels()
    head = (f"{'kernel':28} {'instr':>8} {'bytes':>8} {'k instr/s':>12} {'MB/s':>8} {'decode ms':>9} "
            f"{'objdump ms':>12}")
    print("decode (this package) beside llvm-objdump-22 (whole process)\n" + head + "\n" + "-" * len(head))
    for name, compiled in kernels.items():
        print(_decode_rate(name, compiled[0]))
    head = (f"{'kernel':28} {'emulate s':>10} {'lane-instr':>12} {'M lane-instr/s':>15} {'numpy s':>8} "
            f"{'emu/numpy':>10} {'rel err':>9}")
    print(f"\nemulator, {n}x{n}x{n}, beside numpy float64 matmul\n" + head + "\n" + "-" * len(head))
    for name, compiled in kernels.items():
        print(_emulate(name, compiled, n))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
