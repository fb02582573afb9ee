"""`jitgemm select` (which kernel the selector would run, and why) and `jitgemm qualify DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from jitgemm.cli import CliError, positive_int, problem_args, problems_from_args, use_spec_option


def _folder(text: str, option: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise CliError(f"{option} {text}: {what} (expected a folder of code objects, *.co or *.hsaco, with "
                       f"embedded jitgemm contracts)")
    return path


def _selector(args: argparse.Namespace):
    from jitgemm.selector import Selector, default_suppliers
    from jitgemm.suppliers import PrebuiltSupplier, TritonSupplier
    from jitgemm.tuned_supplier import TunedSupplier
    from jitgemm.tuning_db import TuningDB

    db = TuningDB(args.db) if args.db else TuningDB()
    # what matmul's selectors offer (the tuned variants read from this command's database), plus its options
    suppliers = [s for s in default_suppliers() if not isinstance(s, TunedSupplier)] + [TunedSupplier(db)]
    prebuilt = []
    for folder in args.prebuilt or ():
        sup = PrebuiltSupplier(_folder(folder, "--prebuilt"), name=f"prebuilt:{folder}")
        suppliers.append(sup)
        prebuilt.append(sup)
    if args.triton:
        if not TritonSupplier.available():
            raise CliError("--triton: Triton is not installed (pip install triton)")
        suppliers = [s for s in suppliers if not isinstance(s, TritonSupplier)] + [TritonSupplier()]
    return Selector(suppliers, target=args.arch, tuning=db), prebuilt


def _cmd_select(args: argparse.Namespace) -> int:
    from jitgemm.selector import SelectionError

    (problem,) = problems_from_args(args, lda=args.lda, ldb=args.ldb)
    use_spec_option(args)
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
    from jitgemm.isa import progress
    from jitgemm.qualify import qualify_candidate
    from jitgemm.selector import Quarantine
    from jitgemm.suppliers import PrebuiltSupplier

    sup = PrebuiltSupplier(_folder(args.dir, "qualify"))
    entries = sup._scan()
    as_json = getattr(args, "json", False)
    for err in sup.errors if not as_json else ():
        print(f"refused: {err}")
    if not entries and not sup.errors:
        raise CliError(f"{args.dir}: no code objects (*.co, *.hsaco) or assembly files (*.s) found")
    verdicts = []
    quarantine = Quarantine()
    failed = 0
    from jitgemm.codegen.gemm_ir import GemmProblem

    dummy = GemmProblem.make(1, 1, 1, "fp32")
    cands = list(sup.candidates(dummy, args.arch))
    if args.ray:
        from jitgemm.sweep import SweepError, ray_map

        jobs = [(args.dir, i, args.arch, args.cases, args.seed, args.strict) for i in range(len(cands))]
        try:
            outcomes = dict(ray_map(_qualify_task, jobs, args.ray, args.workers))
        except SweepError as exc:
            raise CliError(str(exc)) from None
    else:
        outcomes = {}
        with progress.task(f"qualifying {len(cands)} kernel(s) in the emulator", total=len(cands)) as advance:
            for i, cand in enumerate(cands):
                result = qualify_candidate(cand, cases=args.cases, seed=args.seed, strict=args.strict)
                outcomes[i] = (result.failure, result.cases)
                advance(1)
    mode = f"strict={args.strict}" if args.strict else "not strict"
    checks = "waits, barriers and hazards checked" if args.strict else "waits/barriers/hazards NOT checked"
    for i, cand in enumerate(cands):
        failure, cases = outcomes[i]
        verdicts.append({"label": cand.label, "kernel": cand.contract.kernel, "strict": args.strict or False,
                         "verdict": "quarantined" if failure else "ok", "cases": cases, "failure": failure})
        if failure:
            quarantine.add(cand.key, failure)
            failed += 1
            if not as_json:
                print(f"QUARANTINED {cand.label} ({mode}): {failure}")
        elif not as_json:
            print(f"ok          {cand.label}: {cases} random legal problems match numpy ({mode}: {checks})")
    if as_json:
        from jitgemm.commands.json_output import emit

        emit({"command": "qualify", "ok": not failed and not sup.errors, "dir": str(args.dir),
              "refused": [{"severity": "error", "message": e} for e in sup.errors], "kernels": verdicts})
    if not as_json and sup.errors and not cands:
        print(f"nothing qualified: every kernel in {args.dir} was refused")
    # 1: a kernel was quarantined or refused (nothing or not everything in DIR qualified), as the JSON's "ok"
    return 1 if failed or sup.errors else 0


def _qualify_task(job: tuple) -> tuple[str | None, int]:
    """One kernel of a prebuilt folder qualified in a Ray worker (the folder is read there: code objects
    travel as paths, not bytes)."""
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.qualify import qualify_candidate
    from jitgemm.suppliers import PrebuiltSupplier

    folder, index, arch, cases, seed, strict = job
    cand = PrebuiltSupplier(folder).candidates(GemmProblem.make(1, 1, 1, "fp32"), arch)[index]
    result = qualify_candidate(cand, cases=cases, seed=seed, strict=strict)
    return result.failure, result.cases


def register(sub) -> None:
    p = sub.add_parser("select", help="which kernel the selector picks for a problem (--explain: every candidate)")
    problem_args(p)
    p.add_argument("--lda", type=positive_int, help="leading dimension of A in elements (default: packed)")
    p.add_argument("--ldb", type=positive_int, help="leading dimension of B in elements (default: packed)")
    p.add_argument("--align", type=positive_int, default=256, help="byte alignment of the A and B pointers")
    p.add_argument("--prebuilt", action="append", metavar="DIR", help="folder of code objects with contracts")
    p.add_argument("--triton", action="store_true", help="also offer Triton-compiled kernels (block-scaled "
                   "problems see Triton's tl.dot_scaled kernels without it)")
    p.add_argument("--explain", action="store_true", help="list every candidate with why it was kept or dropped")
    p.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")
    p.set_defaults(func=_cmd_select)

    q = sub.add_parser("qualify", help="run every kernel in DIR in the emulator on legal random problems")
    q.add_argument("dir", help="folder of code objects (*.co, *.hsaco) with embedded jitgemm contracts, or "
                   "assembly files (*.s) with their contracts")
    q.add_argument("--cases", type=positive_int, default=3,
                   help="random legal problems per kernel, each checked against numpy (default 3, at least 1)")
    q.add_argument("--seed", type=int, default=0, help="seed of the problems and inputs (default 0)")
    q.add_argument("--arch", default="gfx942", help="target id (default gfx942)")
    q.add_argument("--json", action="store_true", help="print per-kernel verdicts and refusals as JSON")
    q.add_argument("--ray", metavar="ADDRESS", help="qualify on a Ray cluster ('local' starts one here)")
    q.add_argument("--workers", type=positive_int, default=2, help="Ray CPUs with --ray local (default 2)")
    q.add_argument("--strict", nargs="?", const="on", default="on", choices=["on", "all"],
                   help="strict emulation (the default): missing s_waitcnt, s_barrier or wait states quarantine "
                   "the kernel; 'all' also refuses uninitialized reads")
    q.add_argument("--no-strict", dest="strict", action="store_const", const=False,
                   help="plain emulation: only the numbers are compared")
    q.set_defaults(func=_cmd_qualify)
