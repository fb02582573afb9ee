"""`jitgemm select` (which kernel the selector would run, and why) and `jitgemm qualify DIR`."""

from __future__ import annotations

import argparse

from jitgemm.cli import CliError


def _selector(args: argparse.Namespace):
    from jitgemm.selector import Selector
    from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier, PrebuiltSupplier, TritonSupplier
    from jitgemm.tuned_supplier import TunedSupplier
    from jitgemm.tuning_db import TuningDB

    db = TuningDB(args.db) if args.db else TuningDB()
    suppliers = [DirectAsmSupplier(), LlvmSupplier(), TunedSupplier(db)]
    prebuilt = []
    for folder in args.prebuilt or ():
        sup = PrebuiltSupplier(folder, name=f"prebuilt:{folder}")
        suppliers.append(sup)
        prebuilt.append(sup)
    if args.triton:
        if not TritonSupplier.available():
            raise CliError("--triton: Triton is not installed (pip install triton)")
        suppliers.append(TritonSupplier())
    return Selector(suppliers, target=args.arch, tuning=db), prebuilt


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
    cands = sup.candidates(dummy, args.arch)
    if args.ray:
        from jitgemm.sweep import SweepError, ray_map

        jobs = [(args.dir, i, args.arch, args.cases, args.seed) for i in range(len(cands))]
        try:
            outcomes = dict(ray_map(_qualify_task, jobs, args.ray, args.workers))
        except SweepError as exc:
            raise CliError(str(exc)) from None
    else:
        outcomes = {}
        for i, cand in enumerate(cands):
            result = qualify_candidate(cand, cases=args.cases, seed=args.seed)
            outcomes[i] = (result.failure, result.cases)
    for i, cand in enumerate(cands):
        failure, cases = outcomes[i]
        if failure:
            quarantine.add(cand.key, failure)
            failed += 1
            print(f"QUARANTINED {cand.label}: {failure}")
        else:
            print(f"ok          {cand.label}: {cases} random legal problems match numpy")
    return 1 if failed else 0


def _qualify_task(job: tuple) -> tuple[str | None, int]:
    """One kernel of a prebuilt folder qualified in a Ray worker (the folder is read there: code objects
    travel as paths, not bytes)."""
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.qualify import qualify_candidate
    from jitgemm.suppliers import PrebuiltSupplier

    folder, index, arch, cases, seed = job
    cand = PrebuiltSupplier(folder).candidates(GemmProblem.make(1, 1, 1, "fp32"), arch)[index]
    result = qualify_candidate(cand, cases=cases, seed=seed)
    return result.failure, result.cases


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
    p.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")
    p.set_defaults(func=_cmd_select)

    q = sub.add_parser("qualify", help="run every kernel in DIR in the emulator on legal random problems")
    q.add_argument("dir")
    q.add_argument("--cases", type=int, default=3)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--arch", default="gfx942")
    q.add_argument("--ray", metavar="ADDRESS", help="qualify on a Ray cluster ('local' starts one here)")
    q.add_argument("--workers", type=int, default=2, help="Ray CPUs with --ray local")
    q.set_defaults(func=_cmd_qualify)
