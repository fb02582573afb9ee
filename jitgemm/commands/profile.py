"""`jitgemm profile`: what the timing model (jitgemm.timing) predicts for one kernel on one or many problems --
rocprof-style counters (instructions by class, bytes and transactions per level, occupancy, LDS bank conflicts),
the stall estimate by cause, and the predicted time beside the roofline bound.

The kernel is a code object with an embedded jitgemm contract (`K.co`), or `--kernel NAME`, a kernel the default
selector holds for the problem (its label or kernel name, e.g. `default`, `64x64`, an aiter kernel admitted by
`use_aiter()`). Problems are `--m/--n/--k [--split-k]` or `--shapes FILE.csv` (columns M,N,K and optionally
split_k; for an aiter kernel the value of its tuned table's splitK column, as aiter's host code passes it).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from jitgemm.cli import CliError, positive_int, read_input


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("profile", help="predicted time and counters of a kernel on problems (timing model)",
                              description=__doc__.split("\n\n", 1)[0])
    p.add_argument("code_object", nargs="?", metavar="K.co", help="code object with an embedded jitgemm contract")
    p.add_argument("--kernel", metavar="NAME",
                   help="a kernel the selector holds (label or kernel name) instead of K.co")
    p.add_argument("--m", type=positive_int, help="rows of A and D")
    p.add_argument("--n", type=positive_int, help="columns of B and D")
    p.add_argument("--k", type=positive_int, help="the reduction dimension")
    p.add_argument("--batch", type=positive_int, default=1, help="independent GEMMs in one launch (default 1)")
    p.add_argument("--split-k", type=positive_int, default=1, help="K slices per output tile (default 1)")
    p.add_argument("--shapes", metavar="FILE.csv", help="problems to predict: columns M,N,K[,split_k]")
    p.add_argument("--dtype", default="bf16", help="A (and B) dtype, or A,B, for --kernel (K.co: its contract's)")
    p.add_argument("--out-dtype", help="D dtype for --kernel (default as `jitgemm compile`)")
    p.add_argument("--layout", help="NN, NT, TN or TT for --kernel (K.co: its contract's)")
    p.add_argument("--arch", default="gfx942", help="target id for --kernel (default gfx942; K.co: its own)")
    p.add_argument("--device", help="device of the target: a name (MI300X, MI308X, MI355X, ...) or a CU count "
                                    "(default: the target's first device)")
    p.add_argument("--emulate", action="store_true",
                   help="measure LDS bank conflicts and global transactions from the lanes' addresses: one macro "
                        "tile of the kernel in the emulator (ours; seconds)")
    p.add_argument("--json", action="store_true", help="one JSON document: an object per problem")
    p.add_argument("--plot", metavar="FILE.png", help="draw where the time goes, per problem")
    p.set_defaults(func=_cmd_profile)


def _shapes(args: argparse.Namespace) -> list[tuple[int, int, int, int]]:
    if args.shapes:
        if any(getattr(args, x) is not None for x in ("m", "n", "k")):
            raise CliError("--shapes and --m/--n/--k name the problems twice; give one of them")
        text = read_input(args.shapes).decode("utf-8", "replace")
        rows = list(csv.reader(line for line in text.splitlines() if line.strip() and not line.startswith("#")))
        if rows and not rows[0][0].strip().isdigit():
            rows = rows[1:]
        out = []
        for i, row in enumerate(rows, 2 if text.split("\n", 1)[0][:1].isalpha() else 1):
            try:
                vals = [int(x) for x in row[:4] if x.strip()]
            except ValueError:
                vals = []
            if len(vals) < 3 or min(vals[:3]) < 1 or (len(vals) == 4 and vals[3] < 0):
                raise CliError(f"{args.shapes}:{i}: {','.join(row)!r} is not a problem; accepted: M,N,K[,split_k] "
                               "positive integers (split_k 0 or more; 0 means 1)")
            out.append((vals[0], vals[1], vals[2], max(1, vals[3]) if len(vals) == 4 else args.split_k))
        if not out:
            raise CliError(f"{args.shapes}: no problems (expected rows M,N,K[,split_k])")
        return out
    missing = [f"--{x}" for x in ("m", "n", "k") if getattr(args, x) is None]
    if missing:
        raise CliError(f"{', '.join(missing)} missing; accepted: --m M --n N --k K, or --shapes FILE.csv")
    return [(args.m, args.n, args.k, args.split_k)]


def _problem(m: int, n: int, k: int, batch: int, op: dict, args: argparse.Namespace):
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError
    from jitgemm.codegen.gemm_text import parse_dtype_list

    try:
        if op:
            extra = {key: op[key] for key in ("a_scale", "b_scale", "b_preshuffle", "scale_mode") if op.get(key)}
            if op.get("scale") not in (None, "none") and "a_scale" not in extra:
                extra.update(a_scale="plain", b_scale="plain")
            return GemmProblem.make(m, n, k, op["a"], op["b"], op.get("d"), layout=op.get("layout"), batch=batch,
                                    **extra)
        da, db = parse_dtype_list(args.dtype)
        return GemmProblem.make(m, n, k, da, db, args.out_dtype, layout=args.layout, batch=batch)
    except (IRError, ValueError, TypeError) as exc:
        raise CliError(f"problem {m}x{n}x{k}: {exc}") from None


def _kernel(args: argparse.Namespace, first):
    """(kernel object for timing.predict, its contract's operation or {}, its name)."""
    if bool(args.code_object) == bool(args.kernel):
        raise CliError("name one kernel: a code object K.co, or --kernel NAME (a kernel the selector holds)")
    if args.code_object:
        from jitgemm.codegen import codeobj
        from jitgemm.contract import Contract

        blob = read_input(args.code_object)
        co = codeobj.read(blob)
        with_contract = [k for k in co.kernels if k.contract is not None]
        if not with_contract:
            raise CliError(f"{args.code_object}: no embedded jitgemm contract (the model needs the macro tile and "
                           "workgroup); accepted: a code object `jitgemm compile` wrote, or --kernel NAME")
        k = with_contract[0]
        contract = Contract.load(k.contract, args.code_object)
        return (contract, blob), dict(contract.data.get("operation", {})), k.name
    from jitgemm.selector import default_selector

    problem = _problem(first[0], first[1], first[2], args.batch, {}, args)
    verdicts = default_selector(args.arch).evaluate(problem)
    names = []
    for v in verdicts:
        c = v.candidate
        if c.contract is None:
            continue
        names.append(c.label)
        if args.kernel in (c.label, c.contract.kernel, f"{c.supplier}:{c.label}"):
            return c, {}, c.contract.kernel
    raise CliError(f"--kernel {args.kernel}: the selector holds no such kernel for {args.arch}; accepted: "
                   f"{', '.join(sorted(set(names))) or 'none'}")


def _cmd_profile(args: argparse.Namespace) -> int:
    from jitgemm.timing import TimingError, predict
    from jitgemm.timing.pipeline import PipelineModelError

    shapes = _shapes(args)
    kernel, op, name = _kernel(args, shapes[0])
    measured = _measured(kernel, op, name, shapes[0], args) if args.emulate else None
    device: Any = args.device
    if device is not None and device.isdigit():
        device = int(device)
    preds = []
    for m, n, k, split in shapes:
        problem = _problem(m, n, k, args.batch, op, args)
        try:
            preds.append(predict(kernel, problem, device, split_k=split, measured=measured))
        except (TimingError, PipelineModelError) as exc:
            raise CliError(f"{name}: {exc}") from None
    if args.json:
        print(json.dumps({"command": "profile", "ok": True, "kernel": name,
                          "problems": [p.as_dict() for p in preds]}, indent=1, default=str))
    else:
        for p in preds:
            print(_report(p))
    if args.plot:
        _plot(preds, Path(args.plot))
    return 0


def _measured(kernel, op: dict, name: str, first, args: argparse.Namespace):
    """The emulator's counters for the kernel (jitgemm.timing.emu_counters), or CliError saying why not."""
    from types import SimpleNamespace

    from jitgemm.timing.emu_counters import emu_counters

    if isinstance(kernel, tuple):
        contract, blob = kernel
    else:
        contract, blob = kernel.contract, kernel.load()[0]
    problem = _problem(first[0], first[1], first[2], 1, op, args)
    if problem.a.microscaling or problem.b.microscaling or getattr(problem, "scale_mode", "none") != "none":
        raise CliError(f"--emulate: {name} is a scaled or MX GEMM; the emulator counters take plain operands")
    from jitgemm.codegen import codeobj

    kname = next((k.name for k in codeobj.read(blob).kernels if k.contract is not None), contract.kernel)
    return emu_counters(SimpleNamespace(problem=problem, contract=contract, code_object=blob, name=kname))


def _report(p) -> str:
    c = p.counters
    occ = c["occupancy"]
    lines = [f"{p.kernel} on {p.device}: m={p.m} n={p.n} k={p.k} split_k={p.split_k}",
             f"  predicted {p.us:.2f} us  {p.tflops:.1f} TFLOP/s   roofline {p.roofline_us:.2f} us   bound: {p.bound}",
             f"  workgroups {c['workgroups']} in {c['rounds']} round(s) (wave quantization "
             f"{c['wave_quantization']:.2f});"
             f" {occ['workgroups_per_cu']} per CU, {occ['waves_per_simd']} waves/SIMD (limited by "
             f"{occ['limited_by']}); VGPRs {c['vgprs']} LDS {c['lds_bytes_per_workgroup']} B",
             f"  loop: K {c['k_per_iteration']} per iteration x {c['iterations_per_workgroup']}; "
             f"{c['loop']['clocks_per_iteration']} clocks/iteration; MFMA utilisation {c['mfma_utilisation']:.0%}",
             "  instructions: " + "  ".join(f"{k} {v:,}" for k, v in c["instructions"].items()),
             "  bytes: " + "  ".join(f"{k} {v:,}" for k, v in c["bytes"].items())
             + f"   L2->CU 64B transactions {c['transactions']['l2_to_cu_64B']:,}",
             "  LDS bank conflicts: " + ("not modelled (static trace; --emulate measures them)"
                                         if c["lds_bank_conflicts"] is None
                                         else f"{c['lds_bank_conflicts']:,} cycles (emulated addresses)"),
             "  time by cause (us): " + "  ".join(f"{k} {v:.2f}" for k, v in p.stalls_us.items())]
    return "\n".join(lines)


def _plot(preds: list, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install matplotlib)") from None
    causes = sorted({k for p in preds for k in p.stalls_us})
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(preds) + 3), 4))
    bottom = [0.0] * len(preds)
    labels = [f"{p.m}x{p.n}x{p.k}" for p in preds]
    for cause in causes:
        vals = [p.stalls_us.get(cause, 0.0) for p in preds]
        ax.bar(labels, vals, bottom=bottom, label=cause)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.plot(labels, [p.us for p in preds], "k_", markersize=20, label="predicted")
    ax.set_ylabel("us")
    ax.set_title(f"{preds[0].kernel} on {preds[0].device}: where the time goes")
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=45, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
