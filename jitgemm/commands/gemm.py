"""`jitgemm compile`, `jitgemm run` and `jitgemm inspect`: the GEMM generator from the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jitgemm.cli import CliError, problem_args, read_input


def _dims(text: str, option: str, count: int, example: str) -> tuple[int, ...]:
    """`AxB[xC]` of positive integers, as --tile and --waves take them."""
    parts = text.lower().split("x")
    try:
        dims = tuple(int(x, 10) for x in parts)
    except ValueError:
        dims = ()
    if len(dims) != count or min(dims) < 1:
        raise CliError(f"{option} {text!r}: expected {count} positive integers joined by 'x', such as {example}")
    return dims


def _problem_args(p: argparse.ArgumentParser) -> None:
    problem_args(p)
    p.add_argument("--tile", help="MT_MxMT_NxDEPTH_K, e.g. 128x128x32 (default: chosen for the problem)")
    p.add_argument("--waves", default=None, help="waves per workgroup, e.g. 2x2 (with --tile)")
    p.add_argument("--mfma", default=None, help="MFMA instruction (with --tile; default: largest for the dtype)")
    p.add_argument("--alpha", type=float, default=1.0, help="D = alpha * A @ B + beta * C (default 1)")
    p.add_argument("--beta", type=float, default=0.0, help="scale of C; 0 (default) reads no C")
    p.add_argument("--bias", choices=("none", "m", "n"), default="none",
                   help="add a bias vector along M or N (default none)")
    p.add_argument("--act", choices=("none", "relu", "gelu"), default="none",
                   help="activation applied to the result (default none)")


def scale_fields(args: argparse.Namespace) -> dict:
    """GemmProblem fields of the shared --scale-mode / --a-scale-order / --b-scale-order options."""
    return {"scale_mode": args.scale_mode, "a_scale_order": args.a_scale_order, "b_scale_order": args.b_scale_order}


def _problem_and_config(args: argparse.Namespace):
    from jitgemm import isa
    from jitgemm.codegen.gemm_config import default_config
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
    from jitgemm.codegen.gemm_text import parse_dtype_list
    from jitgemm.codegen.generator import generator
    from jitgemm.codegen.mfma_catalog import mfmas_for

    try:
        da, db = parse_dtype_list(args.dtype)
        problem = GemmProblem.make(args.m, args.n, args.k, da, db, args.out_dtype,
                                   c="fp32" if args.beta and (da.kind == "float" or args.scale_mode != "none") else
                                   ("int32" if args.beta else None),
                                   layout=args.layout, batch=args.batch, alpha=args.alpha, beta=args.beta,
                                   bias=args.bias, activation=args.act, **scale_fields(args))
    except (IRError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if args.spec:
        isa.spec.sources.use_spec_file(args.arch, args.spec)
    spec = isa.load_spec(args.arch)
    profile = isa.target_profile(args.arch)
    if not args.tile:
        if args.waves or args.mfma:
            raise CliError("--waves and --mfma go with --tile")
        try:
            return problem, generator(args.generator or "asm").choose_config(problem, spec, profile), spec
        except IRError as exc:
            raise CliError(str(exc)) from None
    tm, tn, tk = _dims(args.tile, "--tile", 3, "128x128x32 (MT_MxMT_NxDEPTH_K)")
    base = default_config(problem, spec, profile)
    mfma = args.mfma.upper() if args.mfma else None
    if mfma is None:
        fitting = [x for x in mfmas_for(spec, problem.a, problem.b) if tm % x.m == 0 and tn % x.n == 0]
        mfma = fitting[0].name if fitting else base.mfma
    wm, wn = (2, 2) if args.waves is None else _dims(args.waves, "--waves", 2, "2x2 (WAVES_MxWAVES_N)")
    return problem, GemmConfig(tm, tn, tk, wm, wn, mfma, lds_pad=0, prefetch=2), spec


def _compile(args: argparse.Namespace):
    import jitgemm
    from jitgemm.codegen.gemm_ir import IRError

    problem, config, _ = _problem_and_config(args)
    try:
        return problem, jitgemm.compile(problem, config, arch=args.arch, generator=args.generator)
    except IRError as exc:
        raise CliError(str(exc)) from None


def spill_note(contract: dict) -> str:
    """A line for kernels that keep registers in scratch memory (empty for those that do not)."""
    scratch = int(contract.get("tile", {}).get("scratch", 0) or 0)
    return (f"warning: the kernel spills registers ({scratch} bytes of scratch per work-item); it runs slower, "
            f"and the selector ranks it below kernels that do not\n") if scratch else ""


def _cmd_compile(args: argparse.Namespace) -> int:
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.codegen.generator import generator, generator_options

    try:
        gen = generator(args.generator)
    except IRError as exc:
        raise CliError(f"--generator: {exc}") from None
    if args.print_llir and "llir" not in [s.name for s in gen.stages()]:
        makers = [o for o in generator_options() if "llir" in [s.name for s in generator(o).stages()]]
        raise CliError(f"--print-llir goes with --generator {' or '.join(makers)} (the {gen.title} generator makes "
                       f"no LLVM IR)")
    t0 = time.perf_counter()
    _, kernel = _compile(args)
    elapsed = time.perf_counter() - t0
    out = Path(args.output)
    try:
        out.write_bytes(kernel.code_object)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(kernel.stages["ir"])
    tile = kernel.contract["tile"]
    code = codeobj.read(kernel.code_object).kernel(kernel.name).code
    print(f"kernel {kernel.name}: {len(code)} bytes of code, {tile['vgprs']} VGPRs, {tile['agprs']} AGPRs, "
          f"{tile['lds']} B LDS; wrote {out} ({len(kernel.code_object)} bytes) in {elapsed * 1e3:.1f} ms")
    sys.stdout.write(spill_note(kernel.contract))
    if args.print_llir:
        print(kernel.stages["llir"], end="")
    if args.print_asm:
        print(kernel.asm, end="")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    import jitgemm
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.reference import operands, reference, stored_scales
    from jitgemm.util import progress
    from jitgemm.util.memory_budget import check_fits, gemm_run_bytes

    p, config, _ = _problem_and_config(args)
    if args.backend != "hip":   # checked before the operands exist: say what it needs, do not die allocating
        check_fits(gemm_run_bytes(p, config.tile_m, config.tile_n, config.waves_m * config.waves_n),
                   f"emulating m={p.m} n={p.n} k={p.k} batch={p.batch}")
    a, b, c, bias = operands(p, args.seed)
    scales = stored_scales(p, args.seed)      # block scales stored as --a/b-scale-order say
    t0 = time.perf_counter()
    try:
        with progress.task(f"running m={p.m} n={p.n} k={p.k} {p.a.name} on {args.backend} (Ctrl-C stops)"):
            d = _run_kernel(args, p, config, a, b, c, bias, scales)
    except IRError as exc:
        raise CliError(str(exc)) from None
    elapsed = time.perf_counter() - t0
    ref = reference(p, a, b, c, bias, *scales)
    err = float(np.max(np.abs(d.astype(np.float64) - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    rec = jitgemm.last_launch()
    print(f"{rec.problem}: kernel {rec.kernel} ({rec.kernel_source}) on {rec.backend}, grid {rec.grid}, "
          f"block {rec.block}")
    print(f"max relative error vs numpy (float64): {err:.3e}; time {elapsed:.3f} s")
    sys.stdout.write(spill_note({"tile": {"scratch": rec.scratch_bytes}}))
    return 0


def _run_kernel(args: argparse.Namespace, p, config, a, b, c, bias, scales=(None, None)):
    """D for the problem: that generator's kernel for the config (--generator/--tile), else the selector's."""
    import jitgemm

    scaled = (*scales, p.scale_mode) if p.scale_mode != "none" else None
    if not (args.generator or args.tile) and scaled:
        from jitgemm import api

        call = api.prepare(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                           activation=p.activation, scales=scaled)
        blob, name, contract, source = api._choose(call.problem, call.align, args.arch)
        return api.launch(call, blob, name, contract, backend=api._backend(args.backend), source=source)
    if not (args.generator or args.tile):
        return jitgemm.matmul(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                              activation=p.activation, arch=args.arch, backend=args.backend)
    from jitgemm import api
    from jitgemm.contract import Contract

    generator = args.generator or "asm"
    kernel = jitgemm.compile(p, config, arch=args.arch, generator=generator)
    call = api.prepare(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias, activation=p.activation,
                       scales=scaled)
    return api.launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract),
                      backend=api._backend(args.backend), source=f"{kernel.generator}:{generator}")


def _cmd_inspect(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.listing import annotated_listing

    blob = read_input(args.file)
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
    p.add_argument("--generator", default="asm",
                   help="asm: the direct generator (default); llvm: LLVM IR through llvmlite and LLVM's backend")
    p.add_argument("--print-llir", action="store_true", help="print the LLVM IR (with --generator llvm)")
    p.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile and run a GEMM on random inputs; compare with numpy")
    _problem_args(r)
    r.add_argument("--backend", default="emu", choices=("auto", "emu", "hip"),
                   help="emu: the ISA emulator (default); hip: an AMD GPU through hip-python; auto: hip if present")
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    r.add_argument("--generator", default=None,
                   help="run this generator's kernel for the config (default: the selector's choice)")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("inspect", help="a code object's kernels, annotated from the ISA spec")
    i.add_argument("file", help="code object (.co/.hsaco) to list")
    i.add_argument("--arch", default=None, help="target id whose spec annotates (default: the code object's, from "
                   "its ELF e_flags)")
    i.add_argument("--spec", help="spec file to annotate from (default: the target's)")
    i.set_defaults(func=_cmd_inspect)
