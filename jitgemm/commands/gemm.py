"""`jitgemm compile`, `jitgemm run` and `jitgemm inspect`: the GEMM generator from the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jitgemm.cli import CliError


def _problem_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", default="bf16", help="A (and B) dtype, or A,B: fp32 fp16 bf16 fp8 bf8 int8")
    p.add_argument("--out-dtype", help="D dtype (default: A's for 16/32-bit, fp32 for fp8, int32 for int8)")
    p.add_argument("--layout", default="NN", help="NN, NT, TN or TT (T: operand stored transposed)")
    p.add_argument("--tile", help="MT_MxMT_NxDEPTH_K, e.g. 128x128x32 (default: chosen for the problem)")
    p.add_argument("--waves", default=None, help="waves per workgroup, e.g. 2x2 (with --tile)")
    p.add_argument("--mfma", default=None, help="MFMA instruction (with --tile; default: largest for the dtype)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--bias", choices=("none", "m", "n"), default="none")
    p.add_argument("--act", choices=("none", "relu", "gelu"), default="none")
    p.add_argument("--arch", default="gfx942")


def _problem_and_config(args: argparse.Namespace):
    from jitgemm import isa
    from jitgemm.codegen.gemm_compile import choose_config
    from jitgemm.codegen.gemm_config import default_config
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
    from jitgemm.codegen.gemm_text import parse_dtype_list
    from jitgemm.codegen.mfma_catalog import mfmas_for

    try:
        da, db = parse_dtype_list(args.dtype)
        problem = GemmProblem.make(args.m, args.n, args.k, da, db, args.out_dtype,
                                   c="fp32" if args.beta and da.kind == "float" else
                                   ("int32" if args.beta else None),
                                   layout=args.layout, batch=args.batch, alpha=args.alpha, beta=args.beta,
                                   bias=args.bias, activation=args.act)
    except (IRError, ValueError) as exc:
        raise CliError(str(exc)) from None
    spec = isa.load_spec(args.arch)
    profile = isa.target_profile(args.arch)
    if not args.tile:
        if args.waves or args.mfma:
            raise CliError("--waves and --mfma go with --tile")
        return problem, choose_config(problem, spec, profile), spec
    try:
        tm, tn, tk = (int(x) for x in args.tile.lower().split("x"))
    except ValueError:
        raise CliError(f"--tile {args.tile!r}: expected MT_MxMT_NxDEPTH_K such as 128x128x32") from None
    base = default_config(problem, spec, profile)
    mfma = args.mfma.upper() if args.mfma else None
    if mfma is None:
        fitting = [x for x in mfmas_for(spec, problem.a, problem.b) if tm % x.m == 0 and tn % x.n == 0]
        mfma = fitting[0].name if fitting else base.mfma
    wm, wn = (2, 2) if args.waves is None else (int(x) for x in args.waves.lower().split("x"))
    return problem, GemmConfig(tm, tn, tk, wm, wn, mfma, lds_pad=0, prefetch=2), spec


def _compile(args: argparse.Namespace):
    from jitgemm.codegen.gemm_compile import compile_gemm
    from jitgemm.codegen.gemm_ir import IRError

    problem, config, spec = _problem_and_config(args)
    try:
        if args.generator == "llvm":
            from jitgemm.codegen.llvm import compile_gemm_llvm

            return problem, compile_gemm_llvm(problem, config, spec=spec, target=args.arch)
        return problem, compile_gemm(problem, config, spec=spec, target=args.arch)
    except IRError as exc:
        raise CliError(str(exc)) from None


def _cmd_compile(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.inspect import annotated_listing

    if args.print_llir and args.generator != "llvm":
        raise CliError("--print-llir goes with --generator llvm (the direct generator makes no LLVM IR)")
    t0 = time.perf_counter()
    _, compiled = _compile(args)
    elapsed = time.perf_counter() - t0
    out = Path(args.output)
    try:
        out.write_bytes(compiled.code_object)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"{compiled.ir_text}")
    if args.generator == "llvm":
        vgprs, agprs, lds = compiled.vgprs, compiled.agprs, compiled.lds_bytes
    else:
        vgprs, agprs, lds = compiled.lowered.next_free_vgpr, compiled.lowered.next_free_agpr, compiled.lowered.lds_bytes
    print(f"kernel {compiled.name}: {len(compiled.code)} bytes of code, {vgprs} VGPRs, {agprs} AGPRs, {lds} B LDS; "
          f"wrote {out} ({len(compiled.code_object)} bytes) in {elapsed * 1e3:.1f} ms")
    if args.print_llir:
        print(compiled.llir, end="")
    if args.print_asm:
        print(annotated_listing(compiled.code_object, isa.load_spec(args.arch)), end="")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    import jitgemm
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.reference import operands, reference

    p, config, _ = _problem_and_config(args)
    a, b, c, bias = operands(p, args.seed)
    t0 = time.perf_counter()
    try:
        if args.generator or args.tile:   # that generator's kernel for the config, not the selector's choice
            from jitgemm import api
            from jitgemm.contract import Contract

            generator = args.generator or "asm"
            kernel = jitgemm.compile(p, config, arch=args.arch, generator=generator)
            call = api.prepare(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                               activation=p.activation)
            d = api.launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract),
                           backend=api._backend(args.backend), source=f"{kernel.generator}:{generator}")
        else:
            d = jitgemm.matmul(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                               activation=p.activation, arch=args.arch, backend=args.backend)
    except IRError as exc:
        raise CliError(str(exc)) from None
    elapsed = time.perf_counter() - t0
    ref = reference(p, a, b, c, bias)
    err = float(np.max(np.abs(d.astype(np.float64) - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    rec = jitgemm.last_launch()
    print(f"{rec.problem}: kernel {rec.kernel} ({rec.kernel_source}) on {rec.backend}, grid {rec.grid}, "
          f"block {rec.block}")
    print(f"max relative error vs numpy (float64): {err:.3e}; time {elapsed:.3f} s")
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.inspect import annotated_listing

    try:
        blob = Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    arch = args.arch
    if not args.spec and not arch:
        from jitgemm.codegen.codeobj import read

        arch = read(blob).processor or "gfx942"
    spec = isa.load_spec(args.spec or arch)
    sys.stdout.write(annotated_listing(blob, spec))
    return 0


def register(sub) -> None:
    p = sub.add_parser("compile", help="compile a GEMM kernel to a code object")
    _problem_args(p)
    p.add_argument("-o", "--output", required=True, help="code object file to write")
    p.add_argument("--print-asm", action="store_true", help="print the annotated instructions")
    p.add_argument("--generator", choices=("asm", "llvm"), default="asm",
                   help="asm: the direct generator (default); llvm: LLVM IR through llvmlite and LLVM's backend")
    p.add_argument("--print-llir", action="store_true", help="print the LLVM IR (with --generator llvm)")
    p.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile and run a GEMM on random inputs; compare with numpy")
    _problem_args(r)
    r.add_argument("--backend", default="emu", choices=("auto", "emu", "hip"))
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--generator", choices=("asm", "llvm"), default=None,
                   help="run this generator's kernel for the config (default: the selector's choice)")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("inspect", help="a code object's kernels, annotated from the ISA spec")
    i.add_argument("file")
    i.add_argument("--arch", default=None, help="target id (default: the code object's, from its ELF e_flags)")
    i.add_argument("--spec", help="spec file to annotate from (default: the target's)")
    i.set_defaults(func=_cmd_inspect)
