"""`jitgemm asm FILE.s`: assemble LLVM-syntax AMDGPU assembly with the spec-driven assembler.

`--show-encoding` prints every instruction as llvm-mc does (`<text> ; encoding: [0x..,...]`), the text
being the canonical form of the encoded bytes; `-o` writes the `.text` bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitgemm.cli import CliError, read_input


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help="assemble AMDGPU assembly (LLVM syntax) to machine code",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="assembly source (.s); '-' reads standard input")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--arch", default="gfx942", help="target id whose spec to use (default gfx942)")
    src.add_argument("--spec", metavar="PATH", help="a spec XML file to use instead")
    p.add_argument("-o", "--output", metavar="OUT", help="write the machine code (raw .text bytes) here")
    p.add_argument("--show-encoding", action="store_true",
                   help="print each instruction with its encoding, as llvm-mc -show-encoding does")
    p.set_defaults(func=run)


def load_spec(args: argparse.Namespace):
    """The spec named by --spec or --arch (shared with `jitgemm disasm`)."""
    from jitgemm import isa
    return isa.load_spec(args.spec if getattr(args, "spec", None) else args.arch)


def encoding_line(text: str, data: bytes) -> str:
    """`\\t<text> ; encoding: [0x..,...]` laid out like llvm-mc."""
    return f"\t{text:<39} ; encoding: [{','.join(f'0x{b:02x}' for b in data)}]"


def run(args: argparse.Namespace) -> int:
    from jitgemm.isa.assembler import assemble_program
    from jitgemm.isa.decoder import decode
    from jitgemm.isa.forms import forms_of
    from jitgemm.isa.printer import format_instruction

    if args.file == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        try:
            text = read_input(args.file).decode()
        except UnicodeDecodeError as exc:
            raise CliError(f"{args.file} is not a text file ({exc.reason} at byte {exc.start})") from None
        name = args.file
    spec = load_spec(args)
    forms = forms_of(spec)
    program = assemble_program(text, forms, file=name)
    if args.show_encoding:
        labels = {}
        for label, addr in program.symbols.items():
            labels.setdefault(addr, []).append(label)
        for _line, _inst, offset, size in program.lines:
            for label in labels.pop(offset, ()):
                print(f"{label}:")
            data = program.code[offset:offset + size]
            decoded = decode(data, forms)
            canon = "; ".join(format_instruction(d.instruction) if d.instruction else "<undecodable>"
                              for d in decoded)
            print(encoding_line(canon, data))
        for addr in sorted(labels):
            for label in labels[addr]:
                print(f"{label}:")
    if args.output:
        try:
            Path(args.output).write_bytes(program.code)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    if not args.show_encoding and not args.output:
        print(f"{name}: {len(program.lines)} instructions, {len(program.code)} bytes "
              f"(use -o FILE to write them, --show-encoding to list them)")
    return 0
