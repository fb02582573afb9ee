"""`jitgemm emulate FILE.co`: run a kernel of a gfx942/gfx950 code object in the ISA emulator, or (`--check`) list every
instruction the emulator cannot run before running anything.

Run mode takes the launch on the command line: `--grid`/`--block` as X[,Y,Z], and one `--arg` per kernel
argument in order: `null`, a scalar `i32:5` / `u32:7` / `i64:-1` / `f32:1.5` / `f16:0.5`, or a buffer
`TYPE:SHAPE:FILL` such as `f32:1024:zeros`, `bf16:256x256:rand`, `f32:100:ones` (fills: zeros, ones, rand
(standard normal, seed 0), iota). It prints the run statistics and a checksum of every buffer.

`jitgemm emulate --where NAME` (no file) prints, as `file:line: ...` lines, the code that implements an
instruction in the emulator: its named entry, or the alu_statements statement and the family path that runs it
(jitgemm/emu/registry.py). Exit status 1 when the instruction has no semantics, 2 when no spec knows the name
(the closest names are listed).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from jitgemm.cli import CliError, read_code_object

_TYPES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16", "fp8": "float8_e4m3fnuz",
          "bf8": "float8_e5m2fnuz", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32",
          "u32": "uint32", "i64": "int64", "u64": "uint64"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("emulate", help="run a gfx942/gfx950 kernel in the ISA emulator, or check it can be run",
                              description="Run a kernel of an AMDGPU code object on the CPU (ISA emulator), or "
                              "with --check list the instructions the emulator has no semantics for, or with "
                              "--where NAME print where an instruction's semantics are implemented.")
    p.add_argument("file", metavar="FILE.co", nargs="?", help="code object (ELF); not with --where")
    p.add_argument("--where", metavar="NAME", help="print file:line of the emulator code that implements "
                   "instruction NAME (any case; the --arch/--spec target's, default every bundled target's) and exit")
    p.add_argument("--check", action="store_true", help="list unsupported instructions of every kernel and exit "
                   "(status 1 when any)")
    p.add_argument("--kernel", metavar="NAME", help="kernel to run or check (default: the only one / all)")
    p.add_argument("--grid", default="1", metavar="X[,Y,Z]", help="workgroups per dimension (default 1)")
    p.add_argument("--block", default="64", metavar="X[,Y,Z]", help="work-items per workgroup (default 64)")
    p.add_argument("--arg", action="append", default=[], metavar="SPEC",
                   help="one kernel argument, in order: null, TYPE:VALUE (scalar) or TYPE:SHAPE:FILL (buffer)")
    p.add_argument("--lds", type=int, default=0, metavar="BYTES", help="dynamic LDS bytes (sharedMemBytes)")
    p.add_argument("--max-steps", type=int, default=None, metavar="N", help="scheduler step limit")
    p.add_argument("--spec", metavar="PATH", help="ISA spec XML (default: the --arch target's)")
    p.add_argument("--arch", help="target id whose spec and rules to use (default: the code object's, from its "
                                  "ELF e_flags)")
    p.add_argument("--json", action="store_true", help="print the result (run statistics, buffer checksums, "
                   "unsupported instructions) or the error as JSON")
    p.add_argument("--strict", nargs="?", const="on", default=False, choices=["on", "all"],
                   help="check s_waitcnt, s_barrier and wait states as hardware needs them (exit 1 on a violation); "
                   "--strict=all also refuses uninitialized reads (otherwise warnings)")
    p.add_argument("--schedule", default="lockstep", choices=["lockstep", "random"],
                   help="random: delay load results and interleave waves at random (with --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of --schedule random (default 0)")
    p.add_argument("--poison", action="store_true", help="fill LDS and the registers the launch ABI leaves undefined "
                   "with a NaN pattern instead of zeros (what the anti-cheat battery runs with)")
    p.set_defaults(func=_emulate)


def _dims(text: str, what: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise CliError(f"--{what} {text!r}: expected X[,Y,Z] positive integers") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise CliError(f"--{what} {text!r}: expected 1 to 3 positive integers")
    return dims


def _buffer_bytes(text: str) -> int:
    """Bytes the buffer argument `TYPE:SHAPE:FILL` will take (0 for scalars and for text parse_arg refuses)."""
    import numpy as np

    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in _TYPES:
        return 0
    try:
        count = math.prod(int(x) for x in parts[1].split("x"))
    except ValueError:
        return 0
    bits = 16 if parts[0] == "bf16" else 8 if parts[0] in ("fp8", "bf8") else np.dtype(_TYPES[parts[0]]).itemsize * 8
    return max(0, count) * bits // 8


def parse_arg(text: str, index: int):
    """A kernel argument from its command-line spelling (see the module docstring)."""
    import ml_dtypes
    import numpy as np

    where = f"--arg #{index + 1} {text!r}"
    if text == "null":
        return None
    parts = text.split(":")
    if len(parts) < 2 or parts[0] not in _TYPES:
        raise CliError(f"{where}: expected null, TYPE:VALUE or TYPE:SHAPE:FILL with TYPE one of "
                       f"{', '.join(_TYPES)}")
    name = _TYPES[parts[0]]
    dtype = np.dtype(getattr(ml_dtypes, name) if hasattr(ml_dtypes, name) and not hasattr(np, name)
                     else getattr(np, name))
    second = parts[1]
    if len(parts) == 2:
        try:
            value = float(second) if dtype.kind == "f" else int(second, 0)
        except ValueError:
            raise CliError(f"{where}: {second!r} is not a {parts[0]} value") from None
        if parts[0] in ("f32", "f16", "f64", "i32", "u32", "i64", "u64", "i16", "u16", "i8", "u8"):
            return np.array(value).astype(dtype)[()]
        raise CliError(f"{where}: scalar arguments take f16/f32/f64 or an integer type")
    if len(parts) != 3:
        raise CliError(f"{where}: a buffer is TYPE:SHAPE:FILL (e.g. f32:256x256:rand)")
    fill = parts[2]
    try:
        shape = tuple(int(x) for x in second.split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise CliError(f"{where}: shape {second!r} must be N or NxM... of positive integers")
    count = int(np.prod(shape))
    if fill == "zeros":
        arr = np.zeros(shape, dtype)
    elif fill == "ones":
        arr = np.ones(shape, np.float32).astype(dtype)
    elif fill == "rand":
        arr = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    elif fill == "iota":
        arr = np.arange(count).reshape(shape).astype(dtype)
    else:
        raise CliError(f"{where}: fill {fill!r} is not one of zeros, ones, rand, iota")
    return arr


def _where(args: argparse.Namespace) -> int:
    """`--where NAME`: the implementation of an instruction, from the registry (see the module docstring)."""
    import difflib

    from jitgemm import isa
    from jitgemm.emu.registry import names as registered
    from jitgemm.emu.where import where, why_not
    from jitgemm.isa.spec.targets import known_targets

    if args.file is not None:
        raise CliError(f"--where takes an instruction name, not a code object ({args.file!r} given as well)")
    name = args.where.strip().upper()
    if args.spec or args.arch:
        specs = [(args.arch or args.spec, isa.load_spec(args.spec or args.arch))]
    else:
        specs = []
        for target in known_targets():
            try:
                specs.append((target, isa.load_spec(target)))
            except isa.SpecError:   # not bundled and not fetched: not a target to look in
                continue
    for target, spec in specs:
        places = where(name, spec)
        if places:
            print(f"{name} ({target}, {spec.architecture.name}):")
            for place in places:
                print(f"  {place}")
            return 0
    for _target, spec in specs:
        if spec.find_instruction(name) is not None:
            print(why_not(name, spec), file=sys.stderr)
            return 1
    looked = ", ".join(f"{t} ({spec.architecture.name})" for t, spec in specs)
    elsewhere = [t for t in known_targets() if t not in {t for t, _ in specs} and _has(t, name)]
    if elsewhere:
        raise CliError(f"--where {args.where!r}: no instruction of that name in {looked}; {', '.join(elsewhere)} "
                       f"has it (--arch {elsewhere[0]})")
    known = sorted({i.name.upper() for _, spec in specs for i in spec.instructions} | set(registered()))
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
    raise CliError(f"--where {args.where!r}: no instruction of that name in {looked}; "
                   + (f"closest: {', '.join(close)}" if close else "no close name"))


def _has(target: str, name: str) -> bool:
    """Whether the spec of `target` (bundled or fetched) has instruction `name`."""
    from jitgemm import isa

    try:
        return isa.load_spec(target).find_instruction(name) is not None
    except isa.SpecError:
        return False


def _emulate(args: argparse.Namespace) -> int:
    if args.where is not None:
        return _where(args)
    if args.file is None:
        raise CliError("emulate needs FILE.co (or --where NAME)")
    if not getattr(args, "json", False):
        return _run(args)
    from jitgemm.cli import _user_errors
    from jitgemm.commands.json_output import failure

    try:
        return _run(args)
    except _user_errors() as exc:
        return failure("emulate", exc, file=args.file)


def _run(args: argparse.Namespace) -> int:
    from jitgemm import isa
    from jitgemm.emu import check, engine

    data, co = read_code_object(args.file)
    arch = args.arch or co.processor
    spec = isa.load_spec(args.spec or arch) if (args.spec or arch) else None
    if args.check and spec is not None:
        print(f"{args.file}: target {arch or co.processor or '?'}, spec {spec.architecture.name} ({spec.source})")
    if args.check:
        missing = check(co, args.kernel, spec=spec)
        if args.json:
            from jitgemm.commands.json_output import emit

            emit({"command": "emulate --check", "ok": not any(missing.values()), "file": args.file,
                  "kernels": {name: [{"pc": op.pc, "text": op.text, "problem": op.problem} for op in ops]
                              for name, ops in missing.items()}})
            return 1 if any(missing.values()) else 0
        bad = 0
        for name, ops in missing.items():
            if not ops:
                print(f"kernel {name}: every instruction has emulator semantics")
                continue
            bad += len(ops)
            print(f"kernel {name}: {len(ops)} instruction(s) without emulator semantics:")
            for op in ops:
                print(f"  0x{op.pc:04x}  {op.text:<48}  {op.problem}")
        return 1 if bad else 0
    from jitgemm.util import progress
    from jitgemm.util.memory_budget import check_fits, emulation_bytes

    grid, block = _dims(args.grid, "grid"), _dims(args.block, "block")
    from jitgemm.emu.state import WAVE

    waves = math.prod(grid) * -(-math.prod(block) // WAVE)
    check_fits(emulation_bytes(sum(_buffer_bytes(text) for text in args.arg), waves),   # before allocating
               f"emulating {waves} waves with these buffers")
    values = [parse_arg(text, i) for i, text in enumerate(args.arg)]
    t0 = time.perf_counter()
    kwargs = {"max_steps": args.max_steps} if args.max_steps else {}
    import warnings

    from jitgemm.emu.strict import StrictViolation, StrictWarning

    warnings.simplefilter("ignore", StrictWarning)   # printed below, once, without a Python traceback line
    try:
        with progress.task(f"emulating {args.kernel or 'the kernel'}: {waves} waves (Ctrl-C stops)"):
            stats = engine.emulate(co, args.kernel, grid=grid, block=block, args=values, lds_bytes=args.lds,
                                   spec=spec, strict=args.strict or False, schedule=args.schedule, seed=args.seed,
                                   poison=args.poison,
                                   **kwargs)
    except StrictViolation as exc:
        if args.json:
            from jitgemm.commands.json_output import emit

            emit({"command": "emulate", "ok": False, "file": args.file, "strict": {
                "rule": exc.rule, "kernel": exc.kernel, "wave": exc.wave, "lanes": f"0x{exc.lanes:016x}",
                "where": exc.where, "first": None if exc.first is None else {"pc": exc.first[0], "text": exc.first[1]},
                "second": {"pc": exc.second[0], "text": exc.second[1]}, "detail": exc.detail},
                "diagnostics": [{"severity": "error", "message": str(exc)}]})
        else:
            print(str(exc), file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    if args.json:
        import numpy as np

        from jitgemm.commands.json_output import emit

        emit({"command": "emulate", "ok": True, "file": args.file, "kernel": stats.kernel, "waves": stats.waves,
              "steps": stats.steps, "wave_instructions": stats.wave_instructions,
              "lane_instructions": stats.lane_instructions, "seconds": stats.seconds, "wall_seconds": wall,
              "strict": stats.strict or None, "warnings": list(stats.warnings),
              "buffers": [{"arg": i, "dtype": str(v.dtype), "shape": list(v.shape),
                           "sum": float(v.astype(np.float64).sum()),
                           "abs_max": float(np.abs(v.astype(np.float64)).max())}
                          for i, v in enumerate(values) if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0]})
        return 0
    print(f"kernel {stats.kernel}: {stats.waves} waves, {stats.steps} steps, {stats.wave_instructions} "
          f"wave-instructions, {stats.lane_instructions} lane-instructions in {stats.seconds:.3f} s "
          f"({stats.lane_instructions_per_second / 1e6:.1f} M lane-instr/s; {wall:.3f} s with setup)")
    if stats.strict:
        print(f"  {stats.strict}")
    for text in stats.warnings:
        print(f"  warning: {text}")
    for i, v in enumerate(values):
        if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0:
            import numpy as np

            f = v.astype(np.float64)
            print(f"  arg {i}: {v.dtype}{list(v.shape)} sum={f.sum():.6g} abs-max={np.abs(f).max():.6g}")
    sys.stdout.flush()
    return 0
