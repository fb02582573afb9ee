"""`jitgemm select` (which kernel the selector would run, and why) and `jitgemm qualify DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from jitgemm.cli import CliError, positive_int, problem_args, problems_from_args, use_spec_option


def _folder(text: str, option: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir() and not (path.is_file() and path.suffix in (".s", ".co", ".hsaco")):
        what = "is not a folder or a kernel file" if path.exists() else "does not exist"
        raise CliError(f"{option} {text}: {what} (expected a folder of code objects, *.co or *.hsaco, or assembly "
                       f"*.s, with embedded or sidecar jitgemm contracts or hipBLASLt GFA custom.config; or one such "
                       f"file)")
    return path


def _custom_yaml(args: argparse.Namespace) -> str | None:
    text = getattr(args, "custom_yaml", None)
    if text is not None and not Path(text).expanduser().exists():
        raise CliError(f"--custom-yaml {text}: no such file or folder (expected a Tensile test YAML with the "
                       f"kernel's CustomKernel and ProblemType, e.g. Tensile/Tests/custom/custom_aiter_bf16.yaml, or "
                       f"a folder of them)")
    return text


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
        sup = PrebuiltSupplier(_folder(folder, "--prebuilt"), name=f"prebuilt:{folder}", custom_yaml=_custom_yaml(args))
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
    from jitgemm.qualify import qualify_candidate
    from jitgemm.selector import Quarantine
    from jitgemm.suppliers import PrebuiltSupplier
    from jitgemm.util import progress

    sup = PrebuiltSupplier(_folder(args.dir, "qualify"), custom_yaml=_custom_yaml(args))
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

        jobs = [(args.dir, i, args.arch, args.cases, args.seed, args.strict, _custom_yaml(args))
                for i in range(len(cands))]
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
    proofs = {i: _abi(cand, args.seed) for i, cand in enumerate(cands)} if args.abi else {}
    for i, cand in enumerate(cands):
        failure, cases = outcomes[i]
        verdicts.append({"label": cand.label, "kernel": cand.contract.kernel, "strict": args.strict or False,
                         "verdict": "quarantined" if failure else "ok", "cases": cases, "failure": failure})
        if i in proofs:
            proof = proofs[i]
            verdicts[-1]["abi"] = {"ok": proof.ok, "loads": len(proof.reads), "problems": proof.problems,
                                   "findings": [vars(f) for f in proof.findings]}
            if not proof.ok:
                failed += 1
            if not as_json:
                print(f"abi {'ok' if proof.ok else 'FAILED'}      {cand.label}: {proof.summary()}")
                for f in proof.findings:
                    print(f"    {f}")
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
    # 1: a kernel was quarantined, or nothing in DIR qualified (every file refused); refusals beside qualified
    # kernels are listed above and leave the status 0
    return 1 if failed or not cands else 0


def _abi(cand, seed: int):
    """jitgemm.abi_proof.prove on one candidate, on two problems drawn from its contract."""
    import random

    from jitgemm.abi_proof import Finding, Proof, prove
    from jitgemm.qualify import draw_problems

    blob, name = cand.load()
    problems = draw_problems(cand.contract, 2, random.Random(seed))
    if not problems:
        return Proof(name, [], [Finding("run_failed", "error", "(none)", None,
                                        "its contract admits no problem that could be drawn")], [])
    return prove(cand.contract, blob, name, problems, seed=seed)


def _qualify_task(job: tuple) -> tuple[str | None, int]:
    """One kernel of a prebuilt folder qualified in a Ray worker (the folder is read there: code objects
    travel as paths, not bytes)."""
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.qualify import qualify_candidate
    from jitgemm.suppliers import PrebuiltSupplier

    folder, index, arch, cases, seed, strict, custom_yaml = job
    cand = PrebuiltSupplier(folder, custom_yaml=custom_yaml).candidates(GemmProblem.make(1, 1, 1, "fp32"), arch)[index]
    result = qualify_candidate(cand, cases=cases, seed=seed, strict=strict)
    return result.failure, result.cases


def register(sub) -> None:
    p = sub.add_parser("select", help="which kernel the selector picks for a problem (--explain: every candidate)")
    problem_args(p)
    p.add_argument("--lda", type=positive_int, help="leading dimension of A in elements (default: packed)")
    p.add_argument("--ldb", type=positive_int, help="leading dimension of B in elements (default: packed)")
    p.add_argument("--align", type=positive_int, default=256, help="byte alignment of the A and B pointers")
    p.add_argument("--prebuilt", action="append", metavar="DIR", help="folder of code objects with contracts (or "
                   "one kernel file); hipBLASLt GFA kernels (.s/.co with custom.config) are read directly")
    p.add_argument("--custom-yaml", metavar="YAML", help="a Tensile test YAML with the CustomKernel/ProblemType of "
                   "the GFA kernels given with --prebuilt")
    p.add_argument("--triton", action="store_true", help="also offer Triton-compiled kernels (block-scaled "
                   "problems see Triton's tl.dot_scaled kernels without it)")
    p.add_argument("--explain", action="store_true", help="list every candidate with why it was kept or dropped")
    p.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")
    p.set_defaults(func=_cmd_select)

    q = sub.add_parser("qualify", help="run every kernel in DIR in the emulator on legal random problems")
    q.add_argument("dir", help="folder of code objects (*.co, *.hsaco) with embedded jitgemm contracts, or "
                   "assembly files (*.s) with their contracts, or hipBLASLt GFA kernels; or one such file")
    q.add_argument("--custom-yaml", metavar="YAML", help="a Tensile test YAML with the CustomKernel/ProblemType of "
                   "the GFA kernels in DIR (merged on top of their custom.config, as hipBLASLt does)")
    q.add_argument("--abi", action="store_true", help="also prove each kernel's argument ABI: trace which kernarg "
                   "bytes it reads in the emulator and compare with its contract (jitgemm.abi_proof)")
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
