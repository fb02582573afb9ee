"""`jitgemm disasm FILE`: list the kernels (and any other functions) of a code object (ours, LLVM's,
Triton's, prebuilt) in llvm-objdump's syntax, with offsets and raw words.

Words the spec has no instruction for print as `.long 0x...` and are counted in a warning; a listing
never stops on them. `--raw` disassembles a file of bare machine code (as `jitgemm asm -o` writes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitgemm.cli import CliError, read_input


def register(subparsers) -> None:
    p = subparsers.add_parser("disasm", help="disassemble the kernels of a code object",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="+", metavar="FILE",
                   help="code object(s) (.co/.hsaco/.o), or raw machine code with --raw; several files are listed "
                   "one after another in one process (the spec and decoder are loaded once), each under a "
                   "'FILE:' heading as llvm-objdump prints it")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--arch", help="target id whose spec to use (default: the code object's, else gfx942)")
    src.add_argument("--spec", metavar="PATH", help="a spec XML file to use instead")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel")
    p.add_argument("--raw", action="store_true", help="the file is bare machine code, not an ELF")
    p.add_argument("--no-show-raw-insn", dest="show_raw", action="store_false",
                   help="leave out offsets and raw words")
    p.set_defaults(func=run)


def text_sections(data: bytes) -> list[tuple[str, int, bytes]]:
    """(name, address, code) of each function/kernel of an ELF, through its executable sections and
    symbols (used when the code-object reader finds no kernel descriptor, e.g. plain device code)."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        out = []
        for index, sec in enumerate(elf.iter_sections()):
            if not sec["sh_flags"] & 0x4 or sec["sh_type"] != "SHT_PROGBITS":  # SHF_EXECINSTR
                continue
            body = sec.data()
            base = sec["sh_addr"]
            funcs = []
            symtab = elf.get_section_by_name(".symtab")
            if symtab is not None:
                for sym in symtab.iter_symbols():
                    if sym["st_shndx"] == index and sym["st_info"]["type"] in ("STT_FUNC",) and sym.name:
                        funcs.append((sym["st_value"], sym["st_size"], sym.name))
            funcs.sort()
            if not funcs:
                out.append((sec.name, base, body))
                continue
            for i, (value, size, name) in enumerate(funcs):
                start = value - base if elf["e_type"] == "ET_DYN" else value
                end = start + size if size else (funcs[i + 1][0] - (base if elf["e_type"] == "ET_DYN" else 0)
                                                 if i + 1 < len(funcs) else len(body))
                out.append((name, base + start if elf["e_type"] == "ET_DYN" else start, body[start:end]))
        return out
    except (ELFError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise CliError(f"not a readable ELF file: {exc}") from None


def kernels_of(data: bytes) -> tuple[list[tuple[str, int, bytes]], str | None]:
    """(name, address, code) per kernel, and the code object's processor (e.g. gfx942) if known."""
    try:
        from jitgemm.codegen import codeobj
    except ImportError:  # pragma: no cover - the reader ships with the project
        codeobj = None
    if codeobj is not None:
        try:
            co = codeobj.read(data)
        except codeobj.CodeObjectError:
            co = None
        if co is not None and co.kernels:
            kernels = [(k.name, k.code_address, k.code) for k in co.kernels]
            # other functions in the code (e.g. clang's callable kernel bodies) are listed too, as objdump does
            names = {k[0] for k in kernels}
            try:
                others = [f for f in text_sections(data) if f[0] not in names and f[2]]
            except CliError:
                others = []
            return _to_next_symbol(data, sorted(kernels + others, key=lambda f: f[1])), co.processor
    return text_sections(data), None


def _to_next_symbol(data: bytes, funcs: list[tuple[str, int, bytes]]) -> list[tuple[str, int, bytes]]:
    """Each function runs to the next one (or its section's end), as llvm-objdump lists them: alignment
    padding after a function's last instruction is shown under it, not dropped."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        sections = [(sec["sh_addr"], sec.data()) for sec in elf.iter_sections()
                    if sec["sh_flags"] & 0x4 and sec["sh_type"] == "SHT_PROGBITS"]
    except (ELFError, ValueError, KeyError, IndexError, TypeError):
        return funcs
    out = []
    for i, (name, address, code) in enumerate(funcs):
        for base, body in sections:
            if base <= address < base + len(body):
                end = base + len(body)
                if i + 1 < len(funcs) and address < funcs[i + 1][1] <= end:
                    end = funcs[i + 1][1]
                code = body[address - base:end - base]
                break
        out.append((name, address, code))
    return out


def run(args: argparse.Namespace) -> int:
    """Every FILE in order; a file that cannot be listed is reported (one line naming it) and the rest are still
    listed, as llvm-objdump does; the status is then 2."""
    files = args.file
    if len(files) == 1:
        return _run_one(args, files[0])
    status = 0
    for file in files:
        sys.stdout.write(f"\n{file}:\tfile format elf64-amdgpu\n")
        try:
            _run_one(args, file)
        except CliError as exc:
            sys.stdout.flush()
            print(f"jitgemm disasm: error: {exc}", file=sys.stderr)
            status = 2
    return status


def _run_one(args: argparse.Namespace, file: str) -> int:
    from jitgemm import isa
    from jitgemm.isa.decoder import decode
    from jitgemm.isa.forms import forms_of
    from jitgemm.isa.printer import disassembly_lines, objdump_line

    data = read_input(file)
    if args.raw:
        kernels, processor = [(Path(file).name, 0, data)], None
    else:
        if data[:4] != b"\x7fELF":
            raise CliError(f"{file} is not an ELF code object (use --raw for bare machine code)")
        kernels, processor = kernels_of(data)
    if args.kernel:
        kernels = [k for k in kernels if k[0] == args.kernel]
        if not kernels:
            raise CliError(f"no kernel {args.kernel!r} in {file}")
    spec = isa.load_spec(args.spec if args.spec else (args.arch or _arch_of(processor)))
    forms = forms_of(spec)
    unknown = 0
    first = []
    out = sys.stdout
    for name, address, code in kernels:
        out.write(f"\n{address:016x} <{name}>:\n")
        decoded = decode(code, forms, base=address)
        for text, offset, words, comment in disassembly_lines(decoded, {address: name}):
            if args.show_raw:
                out.write(objdump_line(text, offset, words, comment) + "\n")
            else:
                out.write(f"\t{text}\n")
        bad = [d for d in decoded if d.warning]
        unknown += len(bad)
        first.extend(f"{name}+0x{d.offset - address:x}: {d.warning}" for d in bad[: 3 - len(first)])
    if unknown:
        print(f"warning: {unknown} word(s) not decodable with spec {spec.architecture.name} printed as .long"
              + ("; first: " + "; ".join(first) if first else ""), file=sys.stderr)
    return 0


def _arch_of(processor: str | None) -> str:
    return processor or "gfx942"
