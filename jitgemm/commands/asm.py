"""`jitgemm asm FILE.s`: assemble a whole AMDGPU assembly file (LLVM syntax) with the spec-driven assembler.

    jitgemm asm kernel.s -o kernel.co        a loadable code object (as llvm-mc -filetype=obj + ld.lld -shared)
    jitgemm asm kernel.s -c -o kernel.o      the relocatable object (as llvm-mc -filetype=obj)
    jitgemm asm kernel.s --raw -o text.bin   only the .text bytes
    jitgemm asm kernel.s --show-encoding     each instruction with its encoding, as llvm-mc -show-encoding
    jitgemm asm kernel.s --json              diagnostics, kernels and sections as JSON (for programs)

Directives, macros, `.amdhsa_kernel` and `.amdgpu_metadata` blocks are those of llvm-mc; a kernel's
contract may sit in the metadata (`jitgemm.contract`) or be given with --contract KERNEL=FILE.yaml.
Errors print as llvm-mc prints them (file:line:col: error: ..., the line, a caret, the macro chain).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitgemm.cli import CliError, read_input
from jitgemm.commands.json_output import emit, failure


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help="assemble AMDGPU assembly (LLVM syntax) to a code object",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="assembly source (.s); '-' reads standard input")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--arch", default=None, help="target whose spec to use (default: the file's .amdgcn_target, "
                     "else gfx942)")
    src.add_argument("--spec", metavar="PATH", help="a spec XML file to use instead")
    p.add_argument("-o", "--output", metavar="OUT", help="write the code object (or, with -c/--raw, the object "
                   "or the .text bytes) here")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("-c", dest="relocatable", action="store_true",
                      help="write a relocatable object (ET_REL), as llvm-mc -filetype=obj")
    kind.add_argument("--raw", action="store_true", help="write only the .text bytes")
    p.add_argument("--contract", action="append", default=[], metavar="KERNEL=FILE",
                   help="a sidecar contract (YAML) stored as jitgemm.contract in KERNEL's metadata")
    p.add_argument("--show-encoding", action="store_true",
                   help="print each instruction with its encoding, as llvm-mc -show-encoding does")
    p.add_argument("--json", action="store_true", help="print the result (or the diagnostics) as JSON")
    p.set_defaults(func=run)


def load_spec(args: argparse.Namespace):
    """The spec named by --spec or --arch (shared with `jitgemm disasm`)."""
    from jitgemm import isa
    return isa.load_spec(args.spec if getattr(args, "spec", None) else (args.arch or "gfx942"))


def encoding_line(text: str, data: bytes) -> str:
    """`\\t<text> ; encoding: [0x..,...]` laid out like llvm-mc."""
    return f"\t{text:<39} ; encoding: [{','.join(f'0x{b:02x}' for b in data)}]"


def _read(args: argparse.Namespace) -> tuple[str, str]:
    if args.file == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return read_input(args.file).decode(), args.file
    except UnicodeDecodeError as exc:
        raise CliError(f"{args.file} is not a text file ({exc.reason} at byte {exc.start})") from None


def _contracts(specs: list[str]) -> dict:
    import yaml

    from jitgemm.util.safe_yaml import load_yaml

    out = {}
    for item in specs:
        kernel, sep, file = item.partition("=")
        if not sep or not kernel or not file:
            raise CliError(f"--contract {item!r}: write KERNEL=FILE.yaml")
        try:
            out[kernel] = load_yaml(read_input(file))
        except yaml.YAMLError as exc:
            raise CliError(f"contract {file} is not valid YAML: {exc}") from None
        if not isinstance(out[kernel], dict):
            raise CliError(f"contract {file} must be a YAML map")
    return out


def _encodings(obj, forms) -> list[dict]:
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction

    out = []
    for item in obj.listing:
        data = obj.sections[item.section].data[item.offset:item.offset + item.size]
        decoded = decode(data, forms)
        canon = "; ".join(format_instruction(d.instruction) if d.instruction else "<undecodable>" for d in decoded)
        out.append({"section": item.section, "offset": item.offset, "size": item.size, "text": canon,
                    "bytes": data.hex(), "file": item.loc.file, "line": item.loc.line})
    return out


def run(args: argparse.Namespace) -> int:
    from jitgemm.codegen.codeobj import CodeObjectError
    from jitgemm.codegen.codeobj.relocatable import assemble_source
    from jitgemm.isa.errors import IsaError
    from jitgemm.isa.spec.forms import forms_of

    text, name = _read(args)
    contracts = _contracts(args.contract)
    spec = load_spec(args) if (args.spec or args.arch) else None
    try:
        if spec is None:
            from jitgemm import isa
            from jitgemm.isa.asm.file import find_target

            named = find_target(text)
            processor = named.split("--", 1)[1].split(":")[0] if named and "--" in named else "gfx942"
            spec = isa.load_spec(processor)
        blob, obj = assemble_source(text, file=name, arch=args.arch, relocatable=args.relocatable,
                                    contracts=contracts, spec=spec)
    except (IsaError, CodeObjectError) as exc:
        if args.json:
            return failure("asm", exc, file=name)
        if hasattr(exc, "render"):  # llvm-mc's layout: position, line, caret, macro instantiation notes
            print(exc.render(), file=sys.stderr)
            return 2
        raise
    if args.raw:
        blob = obj.sections[".text"].data if ".text" in obj.sections else b""
    forms = forms_of(spec)
    if args.output:
        try:
            Path(args.output).write_bytes(blob)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    if args.json:
        result = {"command": "asm", "file": name, "ok": True, "diagnostics": [], "target": obj.target,
                  "code_object_version": obj.code_object_version, "output": args.output,
                  "kind": "text" if args.raw else "relocatable" if args.relocatable else "code_object",
                  "bytes": len(blob),
                  "kernels": [{"name": k.name, "descriptor_symbol": k.name + ".kd", "values": k.values}
                              for k in obj.kernels],
                  "sections": [{"name": s.name, "flags": s.flags, "type": s.type, "size": s.size, "align": s.align}
                               for s in obj.sections.values()],
                  "symbols": [{"name": s.name, "section": s.section, "value": s.value, "size": s.size,
                               "type": s.type, "binding": s.binding, "visibility": s.visibility}
                              for s in obj.symbols.values()]}
        if args.show_encoding:
            result["instructions"] = _encodings(obj, forms)
        emit(result)
        return 0
    if args.show_encoding:
        labels: dict[tuple[str, int], list[str]] = {}
        for label, section, offset in obj.labels:
            labels.setdefault((section, offset), []).append(label)
        for item in _encodings(obj, forms):
            for label in labels.pop((item["section"], item["offset"]), ()):
                print(f"{label}:")
            print(encoding_line(item["text"], bytes.fromhex(item["bytes"])))
    if not args.show_encoding and not args.output:
        print(f"{name}: {len(obj.listing)} instructions, {len(obj.kernels)} kernel(s), {len(blob)} bytes of "
              f"{'object' if args.relocatable else 'text' if args.raw else 'code object'} (use -o FILE to write "
              "it, --show-encoding to list the instructions)")
    return 0
