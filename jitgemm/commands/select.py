"""`jitgemm select` (which kernel the selector would run, and why) and `jitgemm qualify DIR`."""

from __future__ import annotations

import argparse

from jitgemm.cli import CliError


def _selector(args: argparse.Namespace):
    from jitgemm.selector import Selector
    from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier, PrebuiltSupplier, TritonSupplier

    suppliers = [DirectAsmSupplier(), LlvmSupplier()]
    prebuilt = []
    for folder in args.prebuilt or ():
        sup = PrebuiltSupplier(folder, name=f"prebuilt:{folder}")
        suppliers.append(sup)
        prebuilt.append(sup)
    if args.triton:
        if not TritonSupplier.available():
            raise CliError("--triton: Triton is not installed (pip install triton)")
        suppliers.append(TritonSupplier())
    return Selector(suppliers, target=args.arch), prebuilt


def _cmd_select(args: argparse.Namespace) -> int:
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError
    from jitgemm.codegen.gemm_text import parse_dtype_list
    from jitgemm.selector import SelectionError

    try:
        da, db = parse_dtype_list(args.dtype)
        problem = GemmProblem.make(args.m, args.n, args.k, da, db, args.out_dtype, layout=args.layout,
                                   batch=args.batch, lda=args.lda, ldb=args.ldb)
    except (IRError, ValueError) as exc:
        raise CliError(str(exc)) from None
    selector, prebuilt = _selector(args)
    align = {"a": args.align, "b": args.align}
    for sup in prebuilt:
        sup.candidates(problem, args.arch)
        for err in sup.errors:
            print(f"refused: {err}")
    if args.explain:
        print(selector.explain(problem, align), end="")
        return 0
    try:
        cand = selector.select(problem, align)
    except SelectionError as exc:
        raise CliError(str(exc)) from None
    print(f"{cand.supplier}:{cand.label} kernel {cand.contract.kernel}")
    return 0


def _cmd_qualify(args: argparse.Namespace) -> int:
    from jitgemm.qualify import qualify_candidate
    from jitgemm.selector import Quarantine
    from jitgemm.suppliers import PrebuiltSupplier

    sup = PrebuiltSupplier(args.dir)
    entries = sup._scan()
    for err in sup.errors:
        print(f"refused: {err}")
    if not entries and not sup.errors:
        raise CliError(f"{args.dir}: no code objects (*.co, *.hsaco) found")
    quarantine = Quarantine()
    failed = 0
    from jitgemm.codegen.gemm_ir import GemmProblem

    dummy = GemmProblem.make(1, 1, 1, "fp32")
    for cand in sup.candidates(dummy, args.arch):
        result = qualify_candidate(cand, cases=args.cases, seed=args.seed, quarantine=quarantine,
                                   strict=args.strict)
        mode = f"strict={args.strict}" if args.strict else "not strict"
        if result.failure:
            failed += 1
            print(f"QUARANTINED {cand.label} ({mode}): {result.failure}")
        else:
            checks = "waits, barriers and hazards checked" if args.strict else "waits/barriers/hazards NOT checked"
            print(f"ok          {cand.label} ({mode}): {result.cases} random legal problems match numpy; {checks}")
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("select", help="which kernel the selector picks for a problem (--explain: every candidate)")
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--out-dtype")
    p.add_argument("--layout", default="NN")
    p.add_argument("--lda", type=int)
    p.add_argument("--ldb", type=int)
    p.add_argument("--align", type=int, default=256, help="byte alignment of the A and B pointers")
    p.add_argument("--arch", default="gfx942")
    p.add_argument("--prebuilt", action="append", metavar="DIR", help="folder of code objects with contracts")
    p.add_argument("--triton", action="store_true", help="also offer Triton-compiled kernels")
    p.add_argument("--explain", action="store_true")
    p.set_defaults(func=_cmd_select)

    q = sub.add_parser("qualify", help="run every kernel in DIR in the emulator on legal random problems")
    q.add_argument("dir")
    q.add_argument("--cases", type=int, default=3)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--arch", default="gfx942")
    q.add_argument("--strict", nargs="?", const="on", default="on", choices=["on", "all"],
                   help="strict emulation (the default): missing s_waitcnt, s_barrier or wait states quarantine "
                   "the kernel; 'all' also refuses uninitialized reads")
    q.add_argument("--no-strict", dest="strict", action="store_const", const=False,
                   help="plain emulation: only the numbers are compared")
    q.set_defaults(func=_cmd_qualify)
