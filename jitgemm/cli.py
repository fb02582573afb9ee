"""The `jitgemm` command line. Each sub-command lives in its own module under `jitgemm.commands`.

Errors the user can act on (`isa.errors.IsaError` and friends, `CliError`) print as one line on stderr
and exit with status 2; they never show a traceback. Ctrl-C prints one line and exits with 130 (128 + SIGINT,
as shells report it); running out of memory is one line too, and long work checks what it needs first.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Sub-command modules, in the order `jitgemm --help` lists them, with the commands each registers. A command line
# that names one of these commands imports only its module (`jitgemm disasm X.co` never loads the compiler);
# tests/jitgemm/test_cold_start.py checks that every module registers exactly the commands listed here.
COMMANDS = {
    "jitgemm.commands.spec": ("spec",),
    "jitgemm.commands.codeobj": ("readobj", "contract"),
    "jitgemm.commands.gemm": ("compile", "run", "inspect"),
    "jitgemm.commands.select": ("select", "qualify"),
    "jitgemm.commands.asm": ("asm",), "jitgemm.commands.disasm": ("disasm",),
    "jitgemm.commands.emulate": ("emulate",),
    "jitgemm.commands.sweep": ("sweep", "tune", "tuning"),
    "jitgemm.commands.mcp": ("mcp", "agent-eval"),
    "jitgemm.commands.aiter": ("aiter", "inventory"),
    "jitgemm.commands.gfa": ("gfa",),
    "jitgemm.commands.profile": ("profile",),
}
COMMAND_MODULES = tuple(COMMANDS)


class CliError(Exception):
    """A mistake in the command line or its inputs; printed without a traceback."""


EXIT_INTERRUPTED = 130


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (a size, a count); the error names what is accepted."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer (>= 1)")
    return value


MAX_INPUT_BYTES = 512 << 20   # code objects and assembly sources are megabytes; /dev/zero is not an input


def sizes_arg(text: str) -> list[int]:
    """argparse type of a size that may be a comma-separated list (sweep and tune take several problems)."""
    values = []
    for part in str(text).split(","):
        if part.strip():
            values.append(positive_int(part.strip()))
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer or a comma-separated list of them")
    return values


def problem_args(p: argparse.ArgumentParser, *, lists: bool = False) -> None:
    """The options that name a GEMM problem and its target, shared by every command that takes one (compile,
    run, select, sweep, tune), so their spelling, defaults and help are one; `problems_from_args` turns them
    into problems with `GemmProblem.make`'s defaults (the API's). `lists`: M, N and K may be comma-separated
    lists (every combination is a problem)."""
    size = sizes_arg if lists else positive_int
    several = " (or a comma-separated list)" if lists else ""
    p.add_argument("--m", type=size, required=True, help="rows of A and D" + several)
    p.add_argument("--n", type=size, required=True, help="columns of B and D" + several)
    p.add_argument("--k", type=size, required=True,
                   help="the reduction dimension (columns of A, rows of B)" + several)
    p.add_argument("--batch", type=positive_int, default=1, help="independent GEMMs in one launch (default 1)")
    p.add_argument("--dtype", default="bf16",
                   help="A (and B) dtype, or A,B (default bf16): fp32 fp16 bf16 int8; fp8 bf8 (FNUZ, gfx942); "
                        "fp8_e4m3 fp8_e5m2 (OCP, gfx950); fp6_e2m3 fp6_e3m2 fp4 (MX, gfx950, with "
                        "--a-scale/--b-scale)")
    p.add_argument("--out-dtype",
                   help="D dtype (default: A's for 16/32-bit, fp32 for 8-bit and narrower floats, int32 for int8)")
    p.add_argument("--layout", help="NN, NT, TN or TT (T: operand stored transposed; default NN, NT for "
                                    "block-scaled and sub-byte problems, which are stored K-contiguous)")
    for side in ("a", "b"):
        p.add_argument(f"--{side}-scale", choices=("none", "plain", "shuffled"), default="none",
                       help=f"{side.upper()}'s E8M0 block scales (MX dtypes fp4 fp6_e2m3 fp6_e3m2 fp8_e4m3 "
                       f"fp8_e5m2): plain [rows, K/32] or shuffled (jitgemm.mx.shuffle_scales); default none")
    p.add_argument("--b-preshuffle", choices=("none", "16x16", "32x16"), default="none",
                   help="B's bytes in the 16x16 pre-shuffled weight layout (jitgemm.mx.shuffle_weight; default none)")
    p.add_argument("--arch", default="gfx942", help="target id (default gfx942)")
    p.add_argument("--scale-mode", choices=("none", "tensor", "rowcol", "block"), default="none",
                   help="fp32 scales of an fp8/int8 product: tensor (one each), rowcol (A per row [M,1] x B per "
                        "column [1,N]), block (A 1x128 [M,ceil(K/128)] x B 128x128 [ceil(N/128),ceil(K/128)]); "
                        "default none")
    for side, shape in (("a", "[M,KB]"), ("b", "[NB,KB]")):
        p.add_argument(f"--{side}-scale-order", choices=("row", "col"), default="row",
                       help=f"with --scale-mode block: {side.upper()}'s {shape} scales row-major (default) or "
                            f"column-major (stored transposed, as aiter's asm kernels read them)")
    p.add_argument("--spec", metavar="PATH",
                   help="spec XML file (or a folder holding one) to use for --arch instead of the default")


def problems_from_args(args: argparse.Namespace, **fields) -> list:
    """The GEMM problems the shared problem options name (one, or every combination of listed sizes), made by
    `GemmProblem.make` with its defaults, as the API makes them; `fields` adds the command's own (epilogue,
    leading dimensions). A problem the options cannot make is a CliError naming the reason."""
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError
    from jitgemm.codegen.gemm_text import parse_dtype_list

    def listed(value) -> list[int]:
        return list(value) if isinstance(value, (list, tuple)) else [value]

    try:
        da, db = parse_dtype_list(args.dtype)
        mx = dict(a_scale=args.a_scale, b_scale=args.b_scale, b_preshuffle=args.b_preshuffle)
        return [GemmProblem.make(m, n, k, da, db, args.out_dtype, layout=args.layout, batch=args.batch, **mx,
                                 **scale_fields(args), **fields)
                for m in listed(args.m) for n in listed(args.n) for k in listed(args.k)]
    except (IRError, ValueError) as exc:
        raise CliError(str(exc)) from None


def scale_fields(args: argparse.Namespace) -> dict:
    """GemmProblem fields of the shared --scale-mode / --a-scale-order / --b-scale-order options."""
    return {"scale_mode": args.scale_mode, "a_scale_order": args.a_scale_order, "b_scale_order": args.b_scale_order}


def use_spec_option(args: argparse.Namespace) -> None:
    """`--spec PATH`: the spec file to use for `--arch` in this process."""
    if getattr(args, "spec", None):
        from jitgemm import isa

        isa.spec.sources.use_spec_file(args.arch, args.spec)


def check_output_path(path: str, option: str, suffixes: tuple[str, ...] = ()) -> str:
    """Refuse an output file before any work starts (a sweep, a compile): a folder, a missing or unwritable
    folder, an unwritable file, or a name without one of `suffixes` (a plot named `DIR` must not become
    `DIR.png`). Returns the path; CliError naming the option, the path and what is accepted otherwise."""
    import os
    from pathlib import Path

    p = Path(path).expanduser()
    if p.is_dir():
        raise CliError(f"{option} {path}: is a folder; expected a file name" +
                       (f" ending in {' or '.join(suffixes)}" if suffixes else ""))
    if suffixes and p.suffix.lower() not in suffixes:
        raise CliError(f"{option} {path}: expected a file name ending in {' or '.join(suffixes)}")
    parent = p.parent
    if not parent.is_dir():
        raise CliError(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise CliError(f"{option} {path}: cannot write there (permission denied)")
    return path


def read_input(path: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file named on the command line, refused by size or type before reading (a device,
    a FIFO, a folder, a file over `limit`): CliError naming the file and the reason."""
    from jitgemm.util.files import read_bounded

    try:
        return read_bounded(path, limit)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or str(exc).split(': ', 1)[-1]}") from None


def read_code_object(path: str):
    """(bytes, parsed code object) of a code object named on the command line; a file that is not one (text, a
    truncated ELF) is a CliError that names the file first, as `readobj` and `disasm` say it."""
    from jitgemm.codegen.codeobj import CodeObjectError, read

    blob = read_input(path)
    try:
        return blob, read(blob)
    except CodeObjectError as exc:
        raise CliError(f"{path}: {exc}") from None


def _command_module(argv: list[str]) -> str | None:
    """The one module that registers the command `argv` names (its first word that is not an option), or None
    when it names none (`--help`, a misspelt command: then every command is registered, for the full help)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return next((module for module, names in COMMANDS.items() if word in names), None)
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or, given the command line, with only the command it names (the others'
    modules are not imported: a short command starts as fast as its own imports allow)."""
    from jitgemm import __version__

    parser = argparse.ArgumentParser(prog="jitgemm", description="JIT compiler for AMD GPUs driven by AMD's "
                                     "machine-readable ISA specification.")
    parser.add_argument("--version", action="version", version=f"jitgemm {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = _command_module(argv) if argv is not None else None
    for name in (only,) if only else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _user_errors() -> tuple[type[BaseException], ...]:
    from jitgemm.isa.errors import IsaError
    from jitgemm.util.memory_budget import OutOfMemory

    errors: list[type[BaseException]] = [CliError, IsaError, OutOfMemory]
    for module, name in (("jitgemm.api", "MatmulError"), ("jitgemm.codegen.gemm_ir", "IRError"),
                         ("jitgemm.emu.errors", "EmulatorError"), ("jitgemm.hip_runtime", "HipError"),
                         ("jitgemm.selector", "SelectionError"), ("jitgemm.contract", "ContractError")):
        cls = getattr(sys.modules.get(module), name, None)   # only modules this run imported can have raised
        if isinstance(cls, type):
            errors.append(cls)
    try:  # code-object errors are user errors too, when that package is present
        from jitgemm.codegen.codeobj import CodeObjectError  # type: ignore[attr-defined]

        errors.append(CodeObjectError)
    except ImportError:
        pass
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"jitgemm {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:   # memory_budget.OutOfMemory says how much was needed before allocating it
        print(f"jitgemm {args.command}: error: {exc}" if str(exc) else f"jitgemm {args.command}: error: out of "
              f"memory (the problem or its buffers are too large for this machine)", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print(f"jitgemm {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
