"""The direct generator's gfx950 MX GEMMs, statically: compile time, registers, LDS, and the main loop under
`llvm-mca-22 -mcpu=gfx950` (instructions and cycles per MFMA), beside Triton 3.9's gfx950 `tl.dot_scaled` kernel
for the same formats (tests/test_emu_gfx950_kernels.mx_kernel, compiled on the CPU with GPUTarget("hip", "gfx950",
64)). The main loop is the backward branch with the most MFMAs (codegen/pipeline_model.main_loop); for the direct
kernels it holds two K tiles (one per fragment set). llvm-mca's figure is issue throughput with every load hitting
(it models no memory latency), so it says how much of the loop is MFMA time: the 16x16x128 f8f6f4 MFMA and the
16x16x32 bf16 one take 4 cycles of throughput on gfx950, 32x32x64 takes 8 (llvm-mca-22 -instruction-info);
cyc/16x16x128 counts cycles per 16x16x128 MFMA's work (4 is MFMA-bound; a 16x16x32 bf16 MFMA is a quarter).

    python3 bench/bench_mx_direct.py            (about a minute; Triton columns are empty without triton)
"""

from __future__ import annotations

import os
import time

from jitgemm.codegen import codeobj
from jitgemm.codegen.gemm_compile import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.pipeline_model import llvm_mca, main_loop
from jitgemm.isa.mfma import parse_mfma_name
from jitgemm.isa.printer import format_instruction

from jitgemm import isa
from tests.oracles import find_tool

CASES = [
    ("mxfp4 x mxfp4, shuffled scales", dict(a="fp4", b="fp4", a_scale="shuffled", b_scale="shuffled"),
     ("e2m1", "e2m1")),
    ("mxfp4 x mxfp4, plain scales, B pre-shuffled", dict(a="fp4", b="fp4", a_scale="plain", b_scale="plain",
                                                         b_preshuffle="16x16"), ("e2m1", "e2m1")),
    ("mxfp8 x mxfp8, plain scales", dict(a="fp8_e4m3", b="fp8_e4m3", a_scale="plain", b_scale="plain"),
     ("e4m3", "e4m3")),
    ("mxfp4 x mxfp8, shuffled scales", dict(a="fp4", b="fp8_e4m3", a_scale="shuffled", b_scale="shuffled"),
     ("e2m1", "e4m3")),
    ("mxfp6 x mxfp6, plain scales", dict(a="fp6_e2m3", b="fp6_e2m3", a_scale="plain", b_scale="plain"), None),
    ("bf16 x mxfp4 weight-only", dict(a="bf16", b="fp4", b_scale="plain", d="bf16"), None),
]
SIZE = 4096


def loop_figures(code: bytes, spec) -> dict:
    body = main_loop(code, spec)
    lines = [format_instruction(d.instruction) for d in body]
    shapes = [parse_mfma_name(x.split()[0].upper().replace("V_MFMA_SCALE_", "V_MFMA_")) for x in lines
              if x.startswith("v_mfma")]
    mfmas = len(shapes)
    units = sum(x.m * x.n * x.k for x in shapes) / (16 * 16 * 128)    # in 16x16x128 MFMAs' work
    tool = find_tool("llvm-mca")
    cycles = llvm_mca(lines, tool, mcpu="gfx950").cycles_per_iteration if tool and lines else float("nan")
    return {"insts": len(lines), "mfmas": mfmas, "cycles": cycles,
            "per_mfma": cycles / mfmas if mfmas else float("nan"),
            "per_unit": cycles / units if units else float("nan"),
            "insts_per_mfma": len(lines) / mfmas if mfmas else float("nan")}


def direct(kw: dict) -> dict:
    isa.load_spec("gfx950")             # the spec load once, outside the timed compile
    kw = dict(kw)
    p = GemmProblem.make(SIZE, SIZE, SIZE, kw.pop("a"), kw.pop("b"), **kw)
    t0 = time.perf_counter()
    k = compile_gemm(p, target="gfx950")
    seconds = time.perf_counter() - t0
    c = k.config
    return {"compile": seconds, "tile": f"{c.tile_m}x{c.tile_n}x{c.depth_k} {c.waves_m}x{c.waves_n}w p{c.prefetch}",
            "mfma": c.mfma, "vgpr": k.vgprs, "agpr": k.agprs, "sgpr": k.sgprs, "lds": k.lds_bytes,
            **loop_figures(k.code, isa.load_spec("gfx950"))}


def triton(formats) -> dict | None:
    if formats is None:
        return None
    try:
        from tests.test_emu_gfx950_kernels import _MX, compile950, mx_kernel
    except Exception:           # no triton here
        return None
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"   # time Triton's compile, not its on-disk cache
    af, bf = formats
    (_, apk, apt), (_, bpk, bpt) = _MX[af], _MX[bf]
    sig = (("a_ptr", apt), ("as_ptr", "*u8"), ("b_ptr", bpt), ("bs_ptr", "*u8"), ("c_ptr", "*fp32"), ("M", "i32"),
           ("N", "i32"), ("K", "i32"), *((n, "constexpr") for n in ("BM", "BN", "BK", "AF", "BF", "APK", "BPK")))
    consts = (("BM", 128), ("BN", 128), ("BK", 128), ("AF", af), ("BF", bf), ("APK", apk), ("BPK", bpk))
    compile950.cache_clear()            # time a compile, not the cache
    t0 = time.perf_counter()
    hsaco, lds, warps, _ = compile950(mx_kernel, sig, consts, (("num_warps", 4),))
    seconds = time.perf_counter() - t0
    obj = codeobj.read(hsaco)
    kernel = obj.kernel(next(iter(k.name for k in obj.kernels)))
    meta = kernel.metadata
    agpr = int(meta.get(".agpr_count", 0))
    return {"compile": seconds, "tile": f"128x128x128 {warps}w", "mfma": "", "vgpr": int(meta.get(".vgpr_count", 0))
            - agpr, "agpr": agpr, "sgpr": int(meta.get(".sgpr_count", 0)), "lds": lds,
            **loop_figures(kernel.code, isa.load_spec("gfx950"))}


def main() -> None:
    print(f"M = N = K = {SIZE}, gfx950; cycles: llvm-mca-22 -mcpu=gfx950 per loop iteration")
    head = f"{'case':46} {'who':7} {'compile s':>9} {'tile':>22} {'vgpr':>5} {'agpr':>5} {'sgpr':>5} {'lds':>6} " \
           f"{'loop':>5} {'mfma':>5} {'cyc':>7} {'cyc/mfma':>8} {'cyc/16x16x128':>13} {'inst/mfma':>9}"
    print(head)
    for name, kw, formats in CASES:
        for who, row in (("direct", direct(kw)), ("triton", triton(formats))):
            if row is None:
                continue
            print(f"{name:46} {who:7} {row['compile']:9.3f} {row['tile']:>22} {row['vgpr']:5d} {row['agpr']:5d} "
                  f"{row['sgpr']:5d} {row['lds']:6d} {row['insts']:5d} {row['mfmas']:5d} {row['cycles']:7.1f} "
                  f"{row['per_mfma']:8.2f} {row['per_unit']:13.2f} {row['insts_per_mfma']:9.2f}")


if __name__ == "__main__":
    main()
