"""The `jitgemm` command line. Each sub-command lives in its own module under `jitgemm.commands`.

Errors the user can act on (`isa.errors.IsaError` and friends, `CliError`) print as one line on stderr
and exit with status 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Sub-command modules, in the order `jitgemm --help` lists them.
COMMAND_MODULES = (
    "jitgemm.commands.spec",
    "jitgemm.commands.codeobj",
    "jitgemm.commands.gemm",
    "jitgemm.commands.select",
    "jitgemm.commands.asm", "jitgemm.commands.disasm",
    "jitgemm.commands.emulate",
    "jitgemm.commands.sweep",
)


class CliError(Exception):
    """A mistake in the command line or its inputs; printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jitgemm", description="JIT compiler for AMD GPUs driven by AMD's "
                                     "machine-readable ISA specification.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _user_errors() -> tuple[type[BaseException], ...]:
    from jitgemm.isa.errors import IsaError

    errors: list[type[BaseException]] = [CliError, IsaError]
    try:  # code-object errors are user errors too, when that package is present
        from jitgemm.codegen.codeobj import CodeObjectError  # type: ignore[attr-defined]

        errors.append(CodeObjectError)
    except ImportError:
        pass
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except _user_errors() as exc:
        print(f"jitgemm {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
