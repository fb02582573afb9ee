"""MX (block-scaled) GEMMs on gfx950: jitgemm's generators beside Triton's tl.dot_scaled for the same problems.

1. Compile time: the median of REPS compiles in a warm process (spec loaded, LLVM/Triton imported, one warm-up).
   jitgemm's generators compile their default config for the problem (`Generator.compile`, target gfx950);
   Triton compiles `jitgemm/triton_gemm.py:mx_gemm_kernel` (the Triton supplier's kernel) into a fresh cache
   directory each time. A generator that does not lower block-scaled problems yet prints "not available".
2. Static main loop: the loop body holding the most MFMAs (bench_generators.main_loop, llvm-objdump-22
   --mcpu=gfx950), instructions per MFMA, registers and LDS from the metadata, `llvm-mca-22 -mcpu=gfx950` cycles
   per iteration and per MFMA (issue latencies only: no memory latency, waits or bank conflicts). Triton's
   kernel is shown as the supplier compiles it for any problem ("triton") and with the specializations its
   launcher applies to a 4096^3 call ("triton+spec": pointers, sizes and A/B/D leading dimensions divisible by
   16, `tt.divisibility` 16; the supplier's "div16" variant), as a deployed Triton kernel would be.

    python bench/bench_mx.py [--reps N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_generators import static_view  # noqa: E402
from jitgemm.codegen.gemm_ir import GemmProblem  # noqa: E402

TARGET = "gfx950"
SIZE = 4096
CASES = [
    ("mxfp4 x mxfp4", GemmProblem.make(SIZE, SIZE, SIZE, "fp4", "fp4", a_scale="plain", b_scale="plain")),
    ("mxfp8 x mxfp4", GemmProblem.make(SIZE, SIZE, SIZE, "fp8_e4m3", "fp4", a_scale="plain", b_scale="plain")),
    ("mxfp8 x mxfp8 shuf", GemmProblem.make(SIZE, SIZE, SIZE, "fp8_e4m3", "fp8_e4m3", a_scale="shuffled",
                                            b_scale="shuffled")),
    ("mxfp4 shuf, 16x16 B", GemmProblem.make(SIZE, SIZE, SIZE, "fp4", "fp4", a_scale="shuffled", b_scale="shuffled",
                                             b_preshuffle="16x16")),
    ("mxfp6 x mxfp6", GemmProblem.make(SIZE, SIZE, SIZE, "fp6_e2m3", "fp6_e2m3", a_scale="plain", b_scale="plain")),
    ("bf16 x mxfp4", GemmProblem.make(SIZE, SIZE, SIZE, "bf16", "fp4", d="bf16", b_scale="plain")),
]
TRITON_BLOCK = (128, 128, 128)   # BLOCK_M, BLOCK_N, BLOCK_K with num_warps=4 (Triton's MX tutorials' choice)


def timed(fn, reps: int) -> tuple[float, object]:
    result = fn()   # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def generator_compile(option: str):
    """jitgemm's generator `option` for a problem, or the reason it has no kernel for it."""
    from jitgemm.codegen.generator import generator

    from jitgemm.suppliers import block_scaled_refusal

    gen = generator(option)

    def run(problem: GemmProblem):
        why = block_scaled_refusal(option, problem, TARGET)
        if why is not None:
            raise LookupError(f"not available: {why}")
        k = gen.compile(problem, target=TARGET)
        return k.code_object, k.name, None
    return run


def triton_compile(specialize: bool):
    """Triton's tl.dot_scaled kernel for a problem, compiled from scratch (fresh cache directory)."""
    def run(problem: GemmProblem):
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler import compile as compile_

        from jitgemm.suppliers import TritonSupplier
        from jitgemm.triton_gemm import mx_gemm_kernel

        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitgemm-bench-mx-triton-")
        sig, consts = TritonSupplier.mx_signature(problem, TRITON_BLOCK)
        # Triton's launcher marks arguments divisible by 16 (tt.divisibility) and compiles that specialization:
        # the Triton supplier's "div16" variant
        attrs = TritonSupplier.mx_div16_attrs() if specialize else None
        src = ASTSource(mx_gemm_kernel, sig, constexprs=consts, attrs=attrs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k = compile_(src, target=GPUTarget("hip", TARGET, 64), options={"num_warps": 4})
        return k.asm["hsaco"], k.metadata.name, int(k.metadata.shared)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jitgemm-bench-mx-"))
    os.environ["JITGEMM_CACHE_DIR"] = str(tmp / "cache")
    try:
        import triton  # noqa: F401
    except ImportError:
        raise SystemExit("Triton is not installed: nothing to compare with (pip install triton)") from None
    compilers = [("direct", generator_compile("asm")), ("llvm", generator_compile("llvm")),
                 ("triton", triton_compile(False)), ("triton+spec", triton_compile(True))]
    header = (f"{'case':<20}{'compiler':<13}{'compile ms':>11}{'Triton/x':>9}{'loop instr':>11}{'MFMA':>6}"
              f"{'instr/MFMA':>11}{'VGPR':>6}{'AGPR':>6}{'SGPR':>6}{'scratch B':>10}{'LDS B':>8}"
              f"{'mca cyc/iter':>13}{'cyc/MFMA':>9}")
    lines = [f"compile time and static main loop, target {TARGET}, {SIZE}^3 (kernels are size-generic)", header,
             "-" * len(header)]
    for case, problem in CASES:
        seconds, built = {}, {}
        for label, fn in compilers:
            try:
                seconds[label], built[label] = timed(lambda fn=fn, problem=problem: fn(problem), args.reps)
            except LookupError as exc:
                lines.append(f"{case:<20}{label:<13}  {exc}")
            except Exception as exc:  # noqa: BLE001 - a failing compiler is a row, not the end of the table
                lines.append(f"{case:<20}{label:<13}  failed: {type(exc).__name__}: {str(exc)[:90]}")
        triton_s = seconds.get("triton")
        for label in built:
            blob, name, lds = built[label]
            s = static_view(blob, name, tmp, lds, mcpu=TARGET)
            cyc, mfma = s["cycles"], s["mfma"]
            ratio = f"{triton_s / seconds[label]:.1f}x" if triton_s else ""
            lines.append(f"{case:<20}{label:<13}{seconds[label] * 1e3:>11.1f}{ratio:>9}{s['loop']:>11}{mfma:>6}"
                         f"{s['per_mfma']:>11.2f}{s['vgpr']:>6}{s['agpr']:>6}{s['sgpr']:>6}{s['scratch']:>10}"
                         f"{s['lds']:>8}{(f'{cyc:.0f}' if cyc else 'n/a'):>13}"
                         f"{(f'{cyc / mfma:.1f}' if cyc and mfma else 'n/a'):>9}")
    print("\n".join(lines))
    print(f"Triton/x: Triton's (unspecialized) compile time over this compiler's (goal >= 10x for jitgemm's "
          f"generators). triton: the supplier's kernel as the selector compiles it; triton+spec: with the launch "
          f"specializations. Triton tile {'x'.join(map(str, TRITON_BLOCK))}, 4 waves.")


if __name__ == "__main__":
    main()
