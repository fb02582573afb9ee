"""`jitgemm aiter import|qualify` (AMD's aiter GEMM kernels as jitgemm kernels, from data) and `jitgemm inventory`
(what the selector holds per target)."""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

from jitgemm.cli import CliError, positive_int


def _inventory(path: str | None):
    from jitgemm.aiter import AiterSourceError, default_wheel, inventory

    try:
        return inventory(path if path else default_wheel())
    except AiterSourceError as exc:
        raise CliError(str(exc)) from None


def _db(args):
    from jitgemm.tuning_db import TuningDB

    return TuningDB(args.db) if getattr(args, "db", None) else TuningDB()


def _cmd_import(args: argparse.Namespace) -> int:
    from jitgemm.aiter.registry import register
    from jitgemm.aiter.tuned import import_rows

    inv = _inventory(args.release)
    added = 0 if args.no_tuning else import_rows(inv, _db(args))
    register(inv.source)
    if args.json:
        from .json_output import emit

        emit({"ok": True, "release": inv.source, "version": inv.version, "tuning_rows_added": added,
              "kernels": [_kernel_json(k, {}) for k in inv.kernels], "tables": inv.tables})
        return 0
    print(f"aiter {inv.version or '?'} from {inv.source}: {len(inv.admitted())} kernels admitted, "
          f"{len(inv.refused())} refused; {added} measured rows added to the tuning database")
    counts = Counter((k.arch, k.family or "(no family)", k.admitted) for k in inv.kernels)
    for (arch, fam) in sorted({(a, f) for a, f, _ in counts}):
        print(f"  {arch} {fam}: {counts[(arch, fam, True)]} admitted, {counts[(arch, fam, False)]} refused")
    for k in inv.refused():
        print(f"  refused {k.label}: {k.refusal}")
    for table, what in sorted(inv.tables.items()):
        print(f"  table {table}: {what}")
    print("registered: matmul / select now offer these kernels (jitgemm inventory lists them)")
    return 0


def _cmd_qualify(args: argparse.Namespace) -> int:
    from jitgemm.aiter.qualify import qualify, save_verdicts

    inv = _inventory(args.release)
    kernels = [k for k in inv.admitted(args.arch) if not args.family or k.family == args.family]
    if args.kernel:
        kernels = [k for k in kernels if args.kernel in k.label]
    if not kernels:
        raise CliError("no admitted aiter kernel matches (see jitgemm inventory for the labels)")
    verdicts = []
    for k in kernels:
        v = qualify(k, cases=args.cases, seed=args.seed)
        verdicts.append(v)
        if not args.json:
            print(f"{'qualified' if v.ok else 'QUARANTINED':11s} {k.label}  {v.seconds:.1f}s  "
                  f"{'; '.join(v.cases)}{'  ' + v.failure if v.failure else ''}", flush=True)
    save_verdicts(verdicts)
    if args.json:
        from dataclasses import asdict

        from .json_output import emit

        emit({"ok": all(v.ok for v in verdicts), "verdicts": [asdict(v) | {"ok": v.ok} for v in verdicts]})
    else:
        print(f"{sum(v.ok for v in verdicts)} qualified, {sum(not v.ok for v in verdicts)} quarantined")
    return 0 if all(v.ok for v in verdicts) else 1


def _kernel_json(k, verdicts: dict) -> dict:
    from jitgemm.aiter.qualify import candidate_key

    v = verdicts.get(candidate_key(k)) if k.admitted else None
    op = k.contract.data["operation"] if k.admitted else {}
    status = "refused" if not k.admitted else "unqualified" if v is None else "qualified" if v["ok"] else \
        "quarantined"
    return {"label": k.label, "arch": k.arch, "family": k.family, "kernel": k.name, "file": k.file,
            "tile": list(k.tile) if k.tile else None, "split_k": k.split_k, "preshuffle": k.preshuffle,
            "status": status, "reason": k.refusal or (v or {}).get("failure"), "cases": (v or {}).get("cases", []),
            "dtypes": f"{op.get('a')}x{op.get('b')}->{op.get('d')}" if op else None,
            "scale": _scale_of(op) if op else None}


def _scale_of(op: dict) -> str:
    if op.get("a_scale", "none") != "none" or op.get("b_scale", "none") != "none":
        return f"mx{op.get('scale_block', 32)} ({op.get('a_scale')}/{op.get('b_scale')})"
    return op.get("scale_mode", "none")


def _cmd_inventory(args: argparse.Namespace) -> int:
    from jitgemm.aiter.qualify import load_verdicts
    from jitgemm.aiter.registry import registered
    from jitgemm.isa.spec.targets import base_target
    from jitgemm.selector import default_suppliers

    archs = [base_target(args.arch)] if args.arch else ["gfx942", "gfx950"]
    if args.arch:
        from jitgemm.isa.errors import IsaError
        from jitgemm.isa.spec.targets import target_profile

        try:
            target_profile(archs[0])
        except (IsaError, KeyError, ValueError, OSError) as exc:
            raise CliError(f"--arch {args.arch}: {exc}") from None
    verdicts = load_verdicts()
    releases = args.release and [args.release] or registered()
    invs = [_inventory(p) for p in releases]
    db = _db(args)
    doc: dict = {"ok": True, "targets": {}}
    for arch in archs:
        sups = [s.name for s in default_suppliers()]
        if invs and "aiter" not in sups:
            sups.append("aiter")
        kernels = [_kernel_json(k, verdicts) for inv in invs for k in inv.kernels if k.arch == arch]
        fams: dict = defaultdict(Counter)
        for k in kernels:
            fams[k["family"] or "(no family)"][k["status"]] += 1
        rows = db.rows(target=arch, metric="seconds", source="hardware")
        by_gen = Counter(r.generator.split("@")[0] or "?" for r in rows)
        covered = sorted({(k["dtypes"], k["scale"]) for k in kernels if k["status"] in ("qualified", "unqualified")})
        doc["targets"][arch] = {"suppliers": sups, "families": {f: dict(c) for f, c in sorted(fams.items())},
                                "kernels": kernels, "covered": [f"{d} scale={s}" for d, s in covered],
                                "measured_rows": {"total": len(rows), "by_generator": dict(by_gen)}}
    if args.json:
        from .json_output import emit

        emit(doc)
        return 0
    if not invs:
        print("no aiter release imported (jitgemm aiter import WHEEL_OR_DIR)")
    for arch, t in doc["targets"].items():
        print(f"{arch}: suppliers {', '.join(t['suppliers'])}")
        for fam, c in t["families"].items():
            print(f"  {fam}: " + ", ".join(f"{n} {s}" for s, n in sorted(c.items())))
        for k in t["kernels"]:
            if k["status"] in ("refused", "quarantined"):
                print(f"    {k['status']} {k['label']}: {k['reason']}")
        print("  covered: " + ("; ".join(t["covered"]) or "none"))
        m = t["measured_rows"]
        print(f"  measured rows: {m['total']} (" + ", ".join(f"{g} {n}" for g, n in sorted(m["by_generator"].items()))
              + ")")
    return 0


def register(sub) -> None:
    p = sub.add_parser("aiter", help="AMD's aiter GEMM kernels: import a release, qualify its kernels")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    imp = verbs.add_parser("import", help="contracts for every GEMM kernel of an amd-aiter wheel or folder, its "
                                          "tuning tables into the tuning database; offered to the selector")
    imp.add_argument("release", metavar="WHEEL_OR_DIR", help="amd-aiter wheel, unpacked wheel or aiter_meta/hsa")
    imp.add_argument("--db", help="tuning database file (default: $JITGEMM_TUNING_DB or ~/.cache/jitgemm/tuning.db)")
    imp.add_argument("--no-tuning", action="store_true", help="do not import the tuning tables")
    imp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    imp.set_defaults(func=_cmd_import)
    q = verbs.add_parser("qualify", help="run admitted kernels in strict emulation against numpy; quarantine failures")
    q.add_argument("release", metavar="WHEEL_OR_DIR", nargs="?", help="default: the pinned wheel in the corpus cache")
    q.add_argument("--arch", help="only this target's kernels")
    q.add_argument("--family", help="only this family")
    q.add_argument("--kernel", help="only kernels whose label contains this")
    q.add_argument("--cases", type=positive_int, default=2, help="problems per kernel (default 2)")
    q.add_argument("--seed", type=int, default=0, help="seed of the sampled problems (default 0)")
    q.add_argument("--json", action="store_true", help="one JSON document on stdout")
    q.set_defaults(func=_cmd_qualify)
    inv = sub.add_parser("inventory", help="what the selector holds per target: suppliers, aiter families and "
                                           "kernels (qualified, quarantined, refused), coverage, measured rows")
    inv.add_argument("--arch", help="one target (default: gfx942 and gfx950)")
    inv.add_argument("--release", help="an aiter wheel or folder (default: the releases `aiter import` registered)")
    inv.add_argument("--db", help="tuning database file")
    inv.add_argument("--json", action="store_true", help="one JSON document on stdout")
    inv.set_defaults(func=_cmd_inventory)
