"""`jitgemm compile`, `jitgemm run` and `jitgemm inspect`: the GEMM generator from the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jitgemm.cli import CliError, check_output_path, problem_args, problems_from_args, read_code_object, use_spec_option


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


def finite_float(text: str) -> float:
    """argparse type: a finite real number (alpha, beta); nan and inf are refused, naming what is accepted."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not finite; a finite real number is accepted")
    return value


def _problem_args(p: argparse.ArgumentParser) -> None:
    problem_args(p)
    p.add_argument("--tile", help="MT_MxMT_NxDEPTH_K, e.g. 128x128x32 (default: the selector's choice, the "
                   "kernel jitgemm.matmul runs)")
    p.add_argument("--waves", default=None, help="waves per workgroup, e.g. 2x2 (with --tile)")
    p.add_argument("--mfma", default=None, help="MFMA instruction (with --tile; default: largest for the dtype)")
    p.add_argument("--alpha", type=finite_float, default=1.0, help="D = alpha * A @ B + beta * C (default 1)")
    p.add_argument("--beta", type=finite_float, default=0.0, help="scale of C; 0 (default) reads no C")
    p.add_argument("--bias", choices=("none", "m", "n"), default="none",
                   help="add a bias vector along M or N (default none)")
    p.add_argument("--act", choices=("none", "relu", "gelu"), default="none",
                   help="activation applied to the result (default none)")


def _problem(args: argparse.Namespace):
    """The problem the options name (the shared options, `cli.problems_from_args`, plus the epilogue)."""
    from jitgemm.codegen.gemm_text import parse_dtype_list

    try:
        kind = parse_dtype_list(args.dtype)[0].kind
    except ValueError as exc:
        raise CliError(str(exc)) from None
    c = ("fp32" if kind == "float" or args.scale_mode != "none" else "int32") if args.beta else None
    (problem,) = problems_from_args(args, c=c, alpha=args.alpha, beta=args.beta, bias=args.bias,
                                    activation=args.act)
    use_spec_option(args)
    return problem


def _explicit_config(args: argparse.Namespace, problem):
    """The config `--tile` (with `--waves`, `--mfma`) names, or None without --tile (the selector chooses)."""
    from jitgemm import isa
    from jitgemm.codegen.gemm_config import default_config
    from jitgemm.codegen.gemm_ir import GemmConfig
    from jitgemm.codegen.mfma_catalog import mfmas_for

    if not args.tile:
        if args.waves or args.mfma:
            raise CliError("--waves and --mfma go with --tile")
        return None
    spec = isa.load_spec(args.arch)
    profile = isa.target_profile(args.arch)
    tm, tn, tk = _dims(args.tile, "--tile", 3, "128x128x32 (MT_MxMT_NxDEPTH_K)")
    base = default_config(problem, spec, profile)
    mfma = args.mfma.upper() if args.mfma else None
    if mfma is None:
        fitting = [x for x in mfmas_for(spec, problem.a, problem.b) if tm % x.m == 0 and tn % x.n == 0]
        mfma = fitting[0].name if fitting else base.mfma
    wm, wn = (2, 2) if args.waves is None else _dims(args.waves, "--waves", 2, "2x2 (WAVES_MxWAVES_N)")
    return GemmConfig(tm, tn, tk, wm, wn, mfma, lds_pad=0, prefetch=2)


def _compile(args: argparse.Namespace):
    """(problem, kernel): `--tile`'s config through `--generator` (default asm), else the kernel the selector
    ranks first (`jitgemm.compile(problem)`, what `matmul` and `select` choose), narrowed by `--generator`."""
    import jitgemm
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.selector import SelectionError

    problem = _problem(args)
    config = _explicit_config(args, problem)
    try:
        return problem, jitgemm.compile(problem, config, arch=args.arch, generator=args.generator)
    except (IRError, SelectionError) as exc:
        raise CliError(str(exc)) from None


def spill_note(contract: dict) -> str:
    """A line for kernels that keep registers in scratch memory (empty for those that do not)."""
    scratch = int(contract.get("tile", {}).get("scratch", 0) or 0)
    return (f"warning: the kernel spills registers ({scratch} bytes of scratch per work-item); it runs slower, "
            f"and the selector ranks it below kernels that do not\n") if scratch else ""


def resources_line(kernel) -> str:
    """The kernel's register and LDS use, each count named for what it counts: the contract's architectural
    VGPRs and AGPRs (what the kernel allocates of each file) and the metadata's `.vgpr_count` (the unified
    register file's total, AGPRs after the VGPRs at a 4-register boundary: what limits occupancy)."""
    from jitgemm.codegen import codeobj

    tile = kernel.contract["tile"]
    k = codeobj.read(kernel.code_object).kernel(kernel.name)
    unified = k.metadata.get(".vgpr_count")
    total = f" = {unified} in the unified register file (metadata .vgpr_count)" if unified is not None else ""
    return (f"{len(k.code)} bytes of code, {tile['vgprs']} arch VGPRs + {tile['agprs']} AGPRs{total}, "
            f"{tile['lds']} B LDS")


def _cmd_compile(args: argparse.Namespace) -> int:
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.codegen.generator import generator, generator_options

    check_output_path(args.output, "-o")
    gen = None
    if args.generator is not None:
        try:
            gen = generator(args.generator)
        except IRError as exc:
            raise CliError(f"--generator: {exc}") from None
    if args.print_llir and (gen is None or "llir" not in [s.name for s in gen.stages()]):
        makers = [o for o in generator_options() if "llir" in [s.name for s in generator(o).stages()]]
        what = f"the {gen.title} generator makes no LLVM IR" if gen else "the selector may choose another generator"
        raise CliError(f"--print-llir goes with --generator {' or '.join(makers)} ({what})")
    t0 = time.perf_counter()
    _, kernel = _compile(args)
    elapsed = time.perf_counter() - t0
    out = Path(args.output)
    try:
        out.write_bytes(kernel.code_object)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(kernel.ir)
    how = "--tile" if args.tile else "the selector's choice, as jitgemm.matmul and jitgemm select make it"
    print(f"kernel {kernel.name} ({kernel.generator}, {how}): {resources_line(kernel)}; wrote {out} "
          f"({len(kernel.code_object)} bytes) in {elapsed * 1e3:.1f} ms")
    sys.stdout.write(spill_note(kernel.contract))
    if args.print_llir:
        print(kernel.stages["llir"], end="")
    if args.print_asm:
        print(kernel.asm, end="")
    return 0


def _mx_operands(p, seed: int):
    """Random MX operands of a block-scaled problem as `matmul` takes them (an MXTensor for each scaled side,
    stored as the problem says: plain or shuffled scales, B's bytes plain or 16x16 pre-shuffled) and their
    values in float64 (`MXTensor.dequantize`), the reference's inputs."""
    import numpy as np

    import jitgemm
    from jitgemm import mx

    rng = np.random.default_rng(seed)
    if p.a_scale != "none" or p.a.microscaling:
        a = jitgemm.quantize_mx(rng.standard_normal((p.m, p.k)), p.a.name)
        a = a.shuffle() if p.a_scale == "shuffled" else a
        a64 = a.dequantize()
    else:
        a = (rng.standard_normal((p.m, p.k)) * 1.5).astype(np.float32).astype(p.a.numpy)
        a64 = a.astype(np.float64)
    b = mx.weights(rng.standard_normal((p.n, p.k)), p.b.name)
    if p.b_scale == "shuffled" or p.b_preshuffle != "none":
        b = b.shuffle(scales=p.b_scale == "shuffled", weight=p.b_preshuffle != "none")
    return a, b, a64, b.dequantize()


def _split_count(text: str):
    """--split-k: "auto" or a positive integer."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}; accepted: auto or a positive integer (K ranges or stream-K "
                                         "workgroups)")
    return value


def _cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    import jitgemm
    from jitgemm.codegen.gemm_ir import IRError
    from jitgemm.reference import Mismatch, check, operands, reference, stored_scales
    from jitgemm.util import progress
    from jitgemm.util.memory_budget import check_fits, gemm_run_bytes

    p = _problem(args)
    if args.backend != "hip":   # checked before anything is chosen or allocated: say what it needs, do not die
        from jitgemm import isa
        from jitgemm.codegen.generator import generator

        config = _explicit_config(args, p) or generator(args.generator or "asm").choose_config(
            p, isa.load_spec(args.arch), isa.target_profile(args.arch))
        check_fits(gemm_run_bytes(p, config.tile_m, config.tile_n, config.waves_m * config.waves_n),
                   f"emulating m={p.m} n={p.n} k={p.k} batch={p.batch}")
    _, kernel = _compile(args)      # the kernel that runs: --tile's, else the selector's (matmul's) choice
    scales = (None, None)
    if p.scaled:
        a, b, a64, b64 = _mx_operands(p, args.seed)
        c = bias = None
    else:
        a, b, c, bias = operands(p, args.seed)
        scales = stored_scales(p, args.seed)      # fp32 scales of --scale-mode, stored as --a/b-scale-order say
    t0 = time.perf_counter()
    try:
        with progress.task(f"running m={p.m} n={p.n} k={p.k} {p.a.name} on {args.backend} (Ctrl-C stops)"):
            d = _run_kernel(args, p, kernel, a, b, c, bias, scales)
    except IRError as exc:
        raise CliError(str(exc)) from None
    elapsed = time.perf_counter() - t0
    ref = p.alpha * (a64 @ b64) if p.scaled else reference(p, a, b, c, bias, *scales)
    err = float(np.max(np.abs(d.astype(np.float64) - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    rec = jitgemm.last_launch()
    print(f"{rec.problem}: kernel {rec.kernel} ({rec.kernel_source}) on {rec.backend}, grid {rec.grid}, "
          f"block {rec.block}")
    clock = "emulation wall time (the ISA emulator on this CPU, not kernel time)" if rec.backend == "emu" \
        else "host wall time of one launch (with the launch overhead)"
    print(f"max relative error vs numpy (float64): {err:.3e}; {clock}: {elapsed:.3f} s")
    predicted = _predicted(p, args.arch, kernel, rec.kernel)
    if predicted:
        print(predicted)
    sys.stdout.write(spill_note({"tile": {"scratch": rec.scratch_bytes}}))
    try:
        check(p, d, ref)
    except Mismatch as exc:
        print(f"jitgemm run: FAILED: the result differs from numpy beyond the {p.d.name} tolerance: {exc}",
              file=sys.stderr)
        return 1
    return 0


def _predicted(problem, arch: str, kernel, ran: str) -> str:
    """The predicted kernel time of the kernel that ran, labelled with where it comes from: the timing model
    (`jitgemm.timing.predict`, on the target's default device) for the compiled kernel, else the score the
    selector ranked that kernel by (a Triton or prebuilt kernel matmul chose); empty when neither knows it."""
    if kernel.name == ran:
        from jitgemm.timing import TimingError, predict

        try:
            pred = predict(kernel, problem)
            return (f"predicted kernel time on {pred.device}: {pred.us:.2f} us ({pred.tflops:.1f} TFLOP/s, "
                    f"{pred.bound}-bound; jitgemm.timing model)")
        except (TimingError, ValueError, KeyError):
            pass
    from jitgemm.selector import default_selector

    for v in default_selector(arch).evaluate(problem, {x: 256 for x in ("a", "b", "c", "bias")}):
        if v.legal and v.score and v.candidate.contract.kernel == ran:
            flops = 2.0 * problem.m * problem.n * problem.k * problem.batch
            basis = {"tuning": "measured, tuning database", "sweep": "sweep's model, tuning database",
                     "model": "selector's cost model"}.get(v.basis, v.basis)
            return (f"predicted kernel time on {arch}: {flops / (v.score * 1e12) * 1e6:.2f} us "
                    f"({v.score:.1f} TFLOP/s, {basis})")
    return ""


def _run_kernel(args: argparse.Namespace, p, kernel, a, b, c, bias, scales=(None, None)):
    """D for the problem: the selector's kernel (through `matmul`, or for --scale-mode the same selector on the
    scaled call; split-K / stream-K as --split-k and --split-mode say), or the kernel --tile/--generator named."""
    import jitgemm
    from jitgemm.api import MatmulError

    scaled = (*scales, p.scale_mode) if p.scale_mode != "none" else None
    split_k, split_mode = getattr(args, "split_k", "auto"), getattr(args, "split_mode", "auto")
    if (args.generator or args.tile) and (split_k != "auto" or split_mode != "auto"):
        raise CliError("--split-k/--split-mode run the direct generator's split-K kernels; --tile and --generator "
                       "name one kernel: give one or the other")
    if not (args.generator or args.tile) and scaled:
        from jitgemm import api

        call = api.prepare(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                           activation=p.activation, scales=scaled)
        blob, name, contract, source = api._choose(call.problem, call.align, args.arch)
        try:
            ours, mode = api._our_split(call.problem, args.arch, contract, blob, split_k, split_mode)
            if ours > 1:
                return api.split_launch(call, args.arch, ours, backend=api._backend(args.backend), mode=mode)
        except api.MatmulError as exc:
            raise CliError(str(exc)) from None
        return api.launch(call, blob, name, contract, backend=api._backend(args.backend), source=source)
    if not (args.tile or args.generator):
        out_dtype = p.d.numpy if not p.scaled else None
        try:
            return jitgemm.matmul(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=out_dtype, bias=bias,
                                  activation=p.activation, arch=args.arch, backend=args.backend, split_k=split_k,
                                  split_mode=split_mode)
        except MatmulError as exc:
            raise CliError(str(exc)) from None
    from jitgemm import api
    from jitgemm.contract import Contract

    call = api.prepare(a, b, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias, activation=p.activation,
                       scales=scaled)
    return api.launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract),
                      backend=api._backend(args.backend), source=f"{kernel.generator}:{args.generator or 'asm'}")


def _cmd_inspect(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.codegen.codeobj import CodeObjectError
    from jitgemm.listing import annotated_listing

    blob, co = read_code_object(args.file)
    arch = args.arch
    if not args.spec and not arch:
        arch = co.processor or "gfx942"
    spec = isa.load_spec(args.spec or arch)
    try:
        sys.stdout.write(annotated_listing(blob, spec))
    except CodeObjectError as exc:
        raise CliError(f"{args.file}: {exc}") from None
    return 0


def register(sub) -> None:
    p = sub.add_parser("compile", help="compile a GEMM kernel to a code object")
    _problem_args(p)
    p.add_argument("-o", "--output", required=True, help="code object file to write")
    p.add_argument("--print-asm", action="store_true", help="print the annotated instructions")
    p.add_argument("--generator", default=None,
                   help="asm: the direct generator; llvm: LLVM IR through llvmlite and LLVM's backend (default: "
                   "the selector's choice among them; with --tile, asm)")
    p.add_argument("--print-llir", action="store_true", help="print the LLVM IR (with --generator llvm)")
    p.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="compile and run a GEMM on random inputs; compare with numpy")
    _problem_args(r)
    r.add_argument("--backend", default="auto", choices=("auto", "emu", "hip"),
                   help="auto: an AMD GPU when hip-python finds one, else the emulator (default, as "
                   "jitgemm.matmul); emu: the ISA emulator; hip: an AMD GPU through hip-python")
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    r.add_argument("--generator", default=None,
                   help="narrow the selector's choice to this generator's kernels (with --tile: the generator "
                   "of that config, default asm)")
    r.add_argument("--split-k", default="auto", type=_split_count,
                   help="auto (default, as matmul: the timing model decides for M <= 64, K >= 1024) or a count: K "
                   "ranges, or stream-K workgroups (jitgemm/split_k.py)")
    r.add_argument("--split-mode", default="auto", choices=("auto", "partial", "atomic", "streamk"),
                   help="partial: K ranges + a deterministic reduction; atomic: fp32/int32 atomics into a zeroed D; "
                   "streamk: equal shares of tiles x K steps (default auto: the model's pick, partial for a count)")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("inspect", help="a code object's kernels, annotated from the ISA spec")
    i.add_argument("file", help="code object (.co/.hsaco) to list")
    i.add_argument("--arch", default=None, help="target id whose spec annotates (default: the code object's, from "
                   "its ELF e_flags)")
    i.add_argument("--spec", help="spec file to annotate from (default: the target's)")
    i.set_defaults(func=_cmd_inspect)
