"""`jitgemm sweep` (research kernel variants), `jitgemm tune` (time the selector's candidates on a GPU) and
`jitgemm tuning` (the tuning database: show, import, export). Every command that reads or writes the
database takes `--db PATH` (default `$JITGEMM_TUNING_DB`, else `~/.cache/jitgemm/tuning.db`)."""

from __future__ import annotations

import argparse
import sys

from jitgemm.cli import CliError, check_output_path, problem_args, problems_from_args, use_spec_option


def _sizes(text: str, name: str) -> list[int]:
    try:
        values = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise CliError(f"--{name} {text!r}: expected an integer or a comma-separated list such as 64,128") from None
    if not values or any(v < 1 for v in values):
        raise CliError(f"--{name} {text!r}: sizes must be positive integers")
    return values


def _waves(text: str) -> list[tuple[int, int]]:
    try:
        out = [tuple(int(x) for x in w.lower().split("x")) for w in text.split(",") if w.strip()]
    except ValueError:
        out = []
    if not out or any(len(w) != 2 or min(w) < 1 for w in out):
        raise CliError(f"--waves {text!r}: expected WMxWN pairs such as 1x1,2x2,4x1")
    return out  # type: ignore[return-value]


def _problems(args: argparse.Namespace) -> list:
    """Every problem the shared problem options name (`cli.problems_from_args`: the defaults of run, compile,
    select and the API)."""
    problems = problems_from_args(args)
    use_spec_option(args)
    return problems


def _db(args: argparse.Namespace, write: bool = True):
    """The tuning database the command names, opened now: a `--db` that cannot take the command's rows
    (`write`) is reported before any work; reading a damaged or unusable one never fails (a cache)."""
    from jitgemm.tuning_db import TuningDB, TuningDBError

    db = TuningDB(args.db) if args.db else TuningDB()
    if not args.db or not write:
        return db          # the default database is a cache: unusable, it is said once and the work goes on
    try:
        db.check_writable()
    except TuningDBError as exc:
        raise CliError(f"--db: {exc}" if args.db else str(exc)) from None
    return db


def _cmd_sweep(args: argparse.Namespace) -> int:
    from rich.console import Console

    from jitgemm.sweep import TILES, WAVES, SweepError, check_ray, results_json, sweep

    if args.plot:
        check_output_path(args.plot, "--plot", (".png", ".svg", ".pdf"))
    if args.json:
        check_output_path(args.json, "--json")
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit {args.limit}: at least 1")
    problems = _problems(args)
    tiles = _sizes(args.tiles, "tiles") if args.tiles else TILES
    waves = _waves(args.waves) if args.waves else WAVES
    db = _db(args)
    try:
        if args.ray:
            check_ray()       # before the database is opened or a variant is chosen
        report = sweep(problems, arch=args.arch, generators=args.generator or ("asm",), search=args.search,
                       limit=args.limit, seed=args.seed, workers=args.workers, ray=args.ray, db=db,
                       emulate=not args.no_emulate, progress=not args.quiet, tiles=tiles, waves=waves)
    except SweepError as exc:
        raise CliError(str(exc)) from None
    console = Console(width=200) if sys.stdout.isatty() else Console(width=200, force_terminal=False)
    console.print(report.table(args.top))
    best = report.best
    if best is not None:
        console.print(f"best: #{best.index} {best.generator} {best.kernel} {best.predicted_tflops:.3g} TFLOP/s "
                      f"predicted, {best.cycles_per_mfma:.1f} clocks/MFMA, emulator ok")
        split = report.split_choice()
        if split is not None:
            console.print(f"split-K against it: {split.reason}" if split.split_k > 1 else
                          f"split-K against it: no ({split.reason})")
    elif args.no_emulate:
        console.print("no emulator check (--no-emulate): no variant is verified, none is called best")
    console.print(f"{len(report.results)} variants in {report.seconds:.1f} s ({report.variants_per_second:.2f} "
                  f"variants/s, {report.workers} {report.engine} worker(s)); results in {db.path}")
    if args.plot:
        report.plot(args.plot)
        console.print(f"plot: {args.plot}")
    if args.json:
        try:
            with open(args.json, "w") as f:
                f.write(results_json(report))
        except OSError as exc:
            raise CliError(f"--json {args.json}: cannot write ({exc.strerror or exc})") from None
    return 0 if best is not None or args.no_emulate else 1


def _cmd_tune(args: argparse.Namespace) -> int:
    from jitgemm.selector import Selector
    from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier
    from jitgemm.tuned_supplier import TunedSupplier
    from jitgemm.tuning import TuneError, tune

    if args.backend != "hip":
        raise CliError(f"--backend {args.backend}: only 'hip' times kernels (the emulator has no clock)")
    db = _db(args)
    selector = Selector([DirectAsmSupplier(), LlvmSupplier(), TunedSupplier(db)], target=args.arch, tuning=db)
    failed = 0
    for problem in _problems(args):
        try:
            timings = tune(selector, problem, top=args.top, iterations=args.iterations)
        except TuneError as exc:
            raise CliError(str(exc)) from None
        for t in timings:
            status = f"{t.seconds * 1e6:10.2f} us" if t.error is None else f"failed: {t.error}"
            failed += t.error is not None
            print(f"{t.label:<40} {status}")
    return 1 if failed else 0


def _cmd_tuning(args: argparse.Namespace) -> int:
    from jitgemm.tuning_db import TuningDBError

    db = _db(args, write=args.action == "import")
    try:
        if args.action == "import":
            if not args.file:
                raise CliError("tuning import FILE: which CSV file?")
            print(f"{db.import_csv(args.file, target=args.target, layout=args.layout)} rows imported into {db.path}")
        elif args.action in _FOREIGN:
            _foreign_file(args, db)
        elif args.action == "export":
            if not args.file:
                raise CliError("tuning export FILE: where to write the CSV?")
            print(f"{db.export_csv(args.file)} rows written to {args.file}")
        else:
            rows = db.rows(target=args.target)
            print(f"{db.path}: {len(rows)} rows")
            for r in rows[-args.last:]:
                print(f"  {r.id:6d} {r.target} {r.kernel[:48]:<48} {r.metric:<16} {r.value:<12.6g} {r.source:<9} "
                      f"{r.origin}")
    except TuningDBError as exc:
        raise CliError(str(exc)) from None
    return 0


_FOREIGN = ("import-tunableop", "export-tunableop", "import-hipblaslt")


def _foreign_file(args: argparse.Namespace, db) -> None:
    """PyTorch TunableOp / hipBLASLt override files (jitgemm/tuning_files.py)."""
    from jitgemm import tuning_files

    if not args.file:
        raise CliError(f"tuning {args.action} FILE: which file?")
    if args.action == "export-tunableop":
        print(f"{tuning_files.export_tunableop(db, args.file, target=args.target)} TunableOp rows written to "
              f"{args.file}")
        return
    if args.action == "import-tunableop":
        report = tuning_files.import_tunableop(args.file, db, target=args.target,
                                               accept_mismatch=args.accept_validator_mismatch)
    else:
        if not args.target:
            raise CliError("tuning import-hipblaslt FILE: --target (the GPU it was tuned on) is required")
        report = tuning_files.import_hipblaslt(args.file, db, target=args.target,
                                               hipblaslt_version=args.hipblaslt_version,
                                               accept_mismatch=args.accept_validator_mismatch)
    for check in report.checks:
        print(f"validator {check.describe()}")
    for line in report.skipped:
        print(f"skipped (not a GEMM jitgemm expresses): {line}")
    note = " (validator mismatch accepted by --accept-validator-mismatch)" if report.accepted_mismatch else ""
    print(f"{report.rows} rows imported into {db.path}{note}")


def _problem_args(p: argparse.ArgumentParser) -> None:
    problem_args(p, lists=True)
    p.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")


def register(sub) -> None:
    p = sub.add_parser("sweep", help="compile, model and check many kernel variants; results into the tuning db")
    _problem_args(p)
    p.add_argument("--generator", action="append",
                   help="a registered generator (asm, llvm; checked by the registry); repeatable (default: asm)")
    p.add_argument("--search", choices=("grid", "random"), default="grid",
                   help="grid: every config, cut to --limit evenly; random: a seeded sample of --limit (default grid)")
    p.add_argument("--tiles", help="macro-tile extents to try for M and N (default 32,64,128,256)")
    p.add_argument("--waves", help="waves_m x waves_n pairs to try (default 1x1,2x1,1x2,2x2,4x1,1x4,4x2,2x4)")
    p.add_argument("--limit", type=int, help="at most this many variants (grid: spread evenly; random: sampled)")
    p.add_argument("--seed", type=int, default=0, help="seed of --search random (default 0)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (or Ray CPUs with --ray local)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster ('local' starts one here)")
    p.add_argument("--no-emulate", action="store_true", help="skip the emulator check")
    p.add_argument("--top", type=int, default=20, help="rows of the table")
    p.add_argument("--plot", metavar="FILE.png", help="predicted TFLOP/s by tile and the occupancy/cycles Pareto")
    p.add_argument("--json", metavar="FILE", help="every variant's results as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)

    t = sub.add_parser("tune", help="time the selector's best candidates on the GPU (hip events) into the tuning db")
    _problem_args(t)
    t.add_argument("--backend", default="hip", help="hip (the only backend with a clock)")
    t.add_argument("--top", type=int, default=8, help="how many of the best-ranked legal candidates")
    t.add_argument("--iterations", type=int, default=20, help="timed launches per candidate (after one warm-up)")
    t.set_defaults(func=_cmd_tune)

    d = sub.add_parser("tuning", help="the tuning database: show, import CSV (ours or aiter's), export CSV")
    d.add_argument("action", choices=("show", "import", "export") + _FOREIGN,
                   help="show the newest rows, import a CSV file, or export every row to one; import/export a "
                        "PyTorch TunableOp file, import a hipBLASLt override file (HIPBLASLT_TUNING_OVERRIDE_FILE)")
    d.add_argument("file", nargs="?", help="the CSV file to import or export")
    d.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")
    d.add_argument("--target", help="import: the GPU a foreign table was measured on; show: filter")
    d.add_argument("--layout", default="NT", help="import of a foreign table: how its A and B are stored")
    d.add_argument("--last", type=int, default=20, help="show: the newest N rows")
    d.add_argument("--accept-validator-mismatch", action="store_true",
                   help="import a TunableOp/hipBLASLt file whose versions differ from this environment's anyway")
    d.add_argument("--hipblaslt-version", help="import-hipblaslt: the running hipBLASLt git version to check against")
    d.set_defaults(func=_cmd_tuning)
