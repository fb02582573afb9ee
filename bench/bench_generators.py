"""The two jitgemm generators beside Triton for the same GEMM tiles (NT layout, 4 waves; bf16 and fp8): compile
time per kernel, and a static look at each main loop; plus the direct generator's own default config for a
4096^3 problem ("direct*" rows, config printed below the table) and the LLVM generator's default.

Compile time: the median of REPS compiles in a warm process (spec loaded, LLVM/Triton imported, one warm-up
compile); Triton compiles `jitgemm/triton_gemm.py:gemm_kernel` with BLOCK_M/N/K = the tile and num_warps=4
into a fresh cache directory each time. The LLVM column is split into building the IR and LLVM's O3
pipeline plus AMDGPU code generation (which runs in a forked child; its fork is included).

Main loop: the instructions between the target of the kernel's backward branch and that branch (the body
holding the most MFMAs; the direct generator's body holds two K tiles with lds_buffers=2), as llvm-objdump
lists them; instructions per MFMA; VGPR/AGPR/SGPR counts, scratch and LDS bytes from each code object's
metadata; `llvm-mca -mcpu=gfx942` cycles per iteration of that body and per MFMA (branch removed; llvm-mca's
gfx942 model knows issue latencies, not memory latency, waits or LDS bank conflicts).

    python bench/bench_generators.py [--reps N] [--no-triton]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jitgemm.codegen import codeobj  # noqa: E402
from jitgemm.codegen.direct_generator import compile_gemm  # noqa: E402
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem  # noqa: E402
from jitgemm.codegen.gemm_text import format_config  # noqa: E402

LLVM_VERSION = 22
BF16 = GemmProblem.make(4096, 4096, 4096, "bf16", layout="NT")
FP8 = GemmProblem.make(4096, 4096, 4096, "fp8", d="bf16", layout="NT")
# (label, problem, config); config None: each generator's own default for the problem
CASES = [
    ("bf16 128x128x32", BF16, GemmConfig(128, 128, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2, vec_a=8, vec_b=8)),
    # 64 KiB of LDS: no room for padding or a second buffer
    ("bf16 256x256x64", BF16, GemmConfig(256, 256, 64, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=1, vec_a=8, vec_b=8)),
    ("fp8 128x128x64", FP8, GemmConfig(128, 128, 64, 2, 2, "V_MFMA_F32_32X32X16_FP8_FP8", prefetch=2, vec_a=16,
                                       vec_b=16)),
    ("fp8 256x256x128", FP8, GemmConfig(256, 256, 128, 2, 2, "V_MFMA_F32_32X32X16_FP8_FP8", prefetch=1, vec_a=16,
                                        vec_b=16)),
    ("bf16 default", BF16, None),
    ("fp8 default", FP8, None),
]
_TRITON_TYPES = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp8": "fp8e4b8", "bf8": "fp8e5b16"}
_LINE = re.compile(r"^\s+(.*?)\s*//\s*([0-9A-Fa-f]+):\s*((?:[0-9A-Fa-f]{8}\s?)+)")
_BRANCH = re.compile(r"^(s_cbranch_\w+|s_branch)\s+(\S+)")


def tool(name: str) -> str:
    path = shutil.which(f"{name}-{LLVM_VERSION}") or shutil.which(name)
    if path is None:
        raise SystemExit(f"{name}-{LLVM_VERSION} not found (apt-get install llvm-{LLVM_VERSION})")
    return path


def timed(fn, reps: int) -> tuple[float, object]:
    fn()  # warm-up
    times, result = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# --- the three compilers ------------------------------------------------------------------------------------
def direct(problem: GemmProblem, config: GemmConfig | None):
    c = compile_gemm(problem, config)
    return c.code_object, c.name, {}, c.config


def llvm(problem: GemmProblem, config: GemmConfig | None):
    from jitgemm.codegen.llvm import compile_gemm_llvm

    c = compile_gemm_llvm(problem, config)
    return c.code_object, c.name, c.seconds, c.config


def triton(problem: GemmProblem, config: GemmConfig | None):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile

    from jitgemm.triton_gemm import gemm_kernel

    if config is None:
        raise ValueError("no default config (Triton compiles the tiles it is given)")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitgemm-bench-triton-")
    sig = {"a_ptr": "*" + _TRITON_TYPES[problem.a.name], "b_ptr": "*" + _TRITON_TYPES[problem.b.name],
           "d_ptr": "*" + _TRITON_TYPES[problem.d.name]}
    sig.update({n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_dm")})
    sig.update({n: "constexpr" for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "ACC_INT")})
    src = ASTSource(gemm_kernel, sig, constexprs={"BLOCK_M": config.tile_m, "BLOCK_N": config.tile_n,
                                                  "BLOCK_K": config.depth_k, "ACC_INT": False})
    k = triton_compile(src, target=GPUTarget("hip", "gfx942", 64),
                       options={"num_warps": config.workgroup_size // 64})
    return k.asm["hsaco"], k.metadata.name, {"dynamic_lds": int(k.metadata.shared)}, config


# --- the static view ----------------------------------------------------------------------------------------
def main_loop(blob: bytes, tmp: Path, mcpu: str = "gfx942") -> list[str]:
    path = tmp / "k.co"
    path.write_bytes(blob)
    out = subprocess.run([tool("llvm-objdump"), "-d", f"--mcpu={mcpu}", str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = [(int(m.group(2), 16), " ".join(m.group(1).split())) for m in map(_LINE.match, out.splitlines()) if m]
    best: list[str] = []
    for i, (offset, text) in enumerate(rows):
        m = _BRANCH.match(text)
        if not m or not re.fullmatch(r"-?\d+", m.group(2)):
            continue
        simm = int(m.group(2)) & 0xFFFF
        target = offset + 4 + 4 * (simm - 0x10000 if simm & 0x8000 else simm)   # SOPP branch: PC + 4 + 4*simm16
        if target < offset:
            body = [t for off, t in rows[:i] if off >= target]
            if sum(t.startswith("v_mfma") for t in body) > sum(t.startswith("v_mfma") for t in best):
                best = body
    return best


def mca_cycles(body: list[str], mcpu: str = "gfx942") -> tuple[float | None, int]:
    """(cycles per iteration, instructions llvm-mca's assembler refused and left out)."""
    if not body:
        return None, 0
    iterations = 50
    cmd = [tool("llvm-mca"), "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", f"-iterations={iterations}"]
    text = "\n".join(body) + "\n"
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
    dropped = 0
    if proc.returncode:   # keep going without the lines LLVM's assembler rejects, and say how many
        dropped = len(re.findall(r"^<stdin>:\d+:\d+: error", proc.stderr, re.M))
        proc = subprocess.run(cmd + ["-skip-unsupported-instructions=parse-failure"], input=text,
                              capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", proc.stdout)
    return (int(m.group(1)) / iterations if m else None), dropped


def static_view(blob: bytes, name: str, tmp: Path, lds: int | None = None, mcpu: str = "gfx942") -> dict:
    meta = codeobj.read(blob).kernel(name).metadata
    body = main_loop(blob, tmp, mcpu)
    cycles, dropped = mca_cycles(body, mcpu)
    mfmas = sum(t.startswith("v_mfma") for t in body)
    agprs = int(meta.get(".agpr_count", 0))
    total = int(meta.get(".vgpr_count", 0))
    return {"loop": len(body), "mfma": mfmas, "per_mfma": len(body) / mfmas if mfmas else float("nan"),
            "vgpr": total - agprs if agprs else total, "agpr": agprs, "sgpr": int(meta.get(".sgpr_count", 0)),
            "scratch": int(meta.get(".private_segment_fixed_size", 0)),
            "lds": int(meta.get(".group_segment_fixed_size", 0)) + (lds or 0), "cycles": cycles, "dropped": dropped,
            "accmov": sum(t.startswith("v_accvgpr_mov") for t in body)}


def _mfmas_per_tile(problem: GemmProblem, config: GemmConfig) -> int:
    """MFMAs one wave issues per K tile of the config."""
    from jitgemm.codegen.gemm_plan import resources

    from jitgemm import isa

    mfma = resources(problem, config, isa.load_spec("gfx942")).mfma
    wave_m, wave_n = config.wave_tile
    return (wave_m // mfma.m) * (wave_n // mfma.n) * (config.depth_k // mfma.k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-triton", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    tmp = Path(tempfile.mkdtemp(prefix="jitgemm-bench-"))
    os.environ["JITGEMM_CACHE_DIR"] = str(tmp / "cache")
    generators = [("direct", direct), ("llvm", llvm)]
    if not args.no_triton:
        try:
            import triton as _triton  # noqa: F401

            generators.append(("triton", triton))
        except ImportError:
            print("Triton not installed: its column is left out")
    header = (f"{'case':<17}{'generator':<9}{'compile ms':>11}{'x direct':>9}{'loop instr':>11}{'MFMA':>6}"
              f"{'tiles':>6}{'instr/MFMA':>11}{'acc movs':>9}{'VGPR':>6}{'AGPR':>6}{'SGPR':>6}{'scratch B':>10}"
              f"{'LDS B':>7}{'mca cyc/iter':>13}{'cyc/MFMA':>9}")
    lines, notes = [header, "-" * len(header)], []
    for case, problem, config in CASES:
        base = None
        for label, fn in generators:
            if config is None and label == "triton":
                continue
            try:
                seconds, (blob, name, parts, used) = timed(
                    lambda fn=fn, problem=problem, config=config: fn(problem, config), args.reps)
            except Exception as exc:  # noqa: BLE001 - a failing competitor is a row, not the end of the table
                lines.append(f"{case:<17}{label:<9}  failed: {type(exc).__name__}: {str(exc)[:80]}")
                continue
            base = base or seconds
            s = static_view(blob, name, tmp, parts.pop("dynamic_lds", None))
            cyc, mfma = s["cycles"], s["mfma"]
            tiles = mfma / _mfmas_per_tile(problem, used) if mfma else float("nan")
            cycles = (f"{cyc:.0f}" + ("*" if s["dropped"] else "")) if cyc else "n/a"
            if s["dropped"]:
                notes.append(f"{case} {label}: * llvm-mca's assembler refused {s['dropped']} loop instruction(s) "
                             "(constant bus restriction); cycles are without them")
            per = f"{cyc / mfma:.1f}" if cyc and mfma else "n/a"
            tag = label + ("*" if config is None else "")
            lines.append(f"{case:<17}{tag:<9}{seconds * 1e3:>11.1f}{seconds / base:>9.2f}{s['loop']:>11}"
                         f"{s['mfma']:>6}{tiles:>6.0f}{s['per_mfma']:>11.2f}{s['accmov']:>9}{s['vgpr']:>6}"
                         f"{s['agpr']:>6}{s['sgpr']:>6}{s['scratch']:>10}{s['lds']:>7}{cycles:>13}{per:>9}")
            if config is None:
                notes.append(f"{case} {label}* config: {format_config(used)}")
            if parts and label == "llvm":
                notes.append(f"{case} llvm: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in parts.items()))
    print("\n".join(lines))
    print("\n".join(notes))
    print("tiles: K tiles per loop iteration (MFMAs in the loop / MFMAs per wave and K tile). acc movs: "
          "v_accvgpr_mov in the loop (accumulators shuffled between registers).")


if __name__ == "__main__":
    main()
