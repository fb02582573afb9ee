"""`jitgemm disasm FILE`: list the executable sections of an AMDGPU code object (ours, LLVM's, Triton's,
hand-written) exactly as `llvm-objdump -d` does: split at every symbol of the section, branch targets
named by the local labels there, offsets and raw words.

Words the spec has no instruction for print as `.long 0x...` and are counted in a warning; a listing
never stops on them. `--raw` disassembles a file of bare machine code (as `jitgemm asm -o` writes).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import weakref
from dataclasses import dataclass, field
from itertools import groupby
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
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (or function), with its local labels")
    p.add_argument("--raw", action="store_true", help="the file is bare machine code, not an ELF")
    p.add_argument("--no-show-raw-insn", dest="show_raw", action="store_false",
                   help="leave out offsets and raw words")
    p.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N",
                   help="list several files with N worker processes (0: one per CPU; default 1); the output is "
                   "the same, in the order the files are given")
    p.set_defaults(func=run)


def _jobs(text: str) -> int:
    """argparse type of --jobs: an integer >= 0."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; accepted: 0 (one per CPU) or a positive count")
    return value


@dataclass(frozen=True)
class TextSymbol:
    """A symbol defined in an executable section, as llvm-objdump sorts them (address, then name)."""

    address: int
    name: str
    notype: bool  # STT_NOTYPE: a label a branch operand is printed as (AMDGPUSymbolizer's rule)
    function: bool  # STT_FUNC: where `--kernel` stops


@dataclass(frozen=True)
class TextSection:
    """One executable section: its name, load address, bytes and the symbols it defines."""

    name: str
    address: int
    body: bytes
    symbols: tuple[TextSymbol, ...]


@dataclass
class Listing:
    """The lines of a listing and the undecodable words found on the way."""

    lines: list[str] = field(default_factory=list)
    unknown: int = 0
    first_warnings: list[str] = field(default_factory=list)


def text_sections(data: bytes) -> tuple[list[TextSection], str | None]:
    """The executable sections of an AMDGPU ELF with their symbols, and its processor (from e_flags).

    Symbols come from `.symtab` (every local label), or `.dynsym` when the file has no `.symtab`, as
    llvm-objdump takes them; section and file symbols and unnamed ones are not listed. A file that is not
    an AMDGPU ELF, or whose headers do not fit the file, raises CliError naming the problem.
    """
    from jitgemm.codegen.codeobj import CodeObjectError
    from jitgemm.codegen.codeobj import elf_format as E
    from jitgemm.codegen.codeobj.elf_reader import ElfFile
    from jitgemm.codegen.codeobj.targets import decode_e_flags

    try:
        elf = ElfFile(data)
        tables = elf.sections_of_type(E.SHT_SYMTAB) or elf.sections_of_type(E.SHT_DYNSYM)
        symbols = elf.symbols(tables[0]) if tables else []
        out = []
        for sec in elf.sections:
            if sec.type != E.SHT_PROGBITS or not sec.flags & E.SHF_EXECINSTR or not sec.size:
                continue
            mine = sorted((TextSymbol(s.value, s.name, s.type == E.STT_NOTYPE, s.type == E.STT_FUNC)
                           for s in symbols if s.shndx == sec.index and s.name
                           and s.type not in (E.STT_SECTION, E.STT_FILE)),
                          key=lambda s: (s.address, s.name))
            out.append(TextSection(sec.name, sec.addr, elf.section_data(sec), tuple(mine)))
    except CodeObjectError as exc:
        raise CliError(f"not a readable AMDGPU ELF file: {exc}") from None
    return out, decode_e_flags(elf.flags).processor


# Per spec forms: the bytes of an instruction -> the parts of its listing line. Kernels repeat instructions
# (AMD's 1,281 gfx942 objects: 6.26 M instructions, a few hundred thousand distinct words), so most lines are
# one dict look-up and one f-string. Only instructions whose text does not depend on where they are (no branch
# target) and whose size was decided from these bytes alone are memoized.
_LINE_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LINE_CACHE_LIMIT = 1 << 18

# The 12-digit offsets of listing lines, one string per 4-byte-aligned address below `_ADDRESS_TEXT_LIMIT`, made
# as far as the code seen needs (AMD's largest aiter kernel ends below 0x32000): a line is then three strings
# joined, not an integer formatted, which is a sixth of a batch listing's time.
_ADDRESS_TEXT: list[str] = []
_ADDRESS_TEXT_LIMIT = 1 << 22


def _address_texts(base: int, end: int) -> list[str] | None:
    """`_ADDRESS_TEXT` covering addresses up to `end`, or None when the run is not 4-byte aligned or too high."""
    if base & 3 or end > _ADDRESS_TEXT_LIMIT:
        return None
    have = len(_ADDRESS_TEXT)
    if have <= end >> 2:
        _ADDRESS_TEXT.extend(f"{a << 2:012X}" for a in range(have, (end >> 2) + 1))
    return _ADDRESS_TEXT


def _list_run(data: bytes, end: int, base: int, forms, memo: dict, near, labels, show_raw: bool,
              lines: list[str], unprinted: dict[str, frozenset[str]]) -> list:
    """Append the listing lines of the instructions starting in data[:end] (`base` is the address of data[0])
    to `lines`; returns the Decoded entries that carry a warning (undecodable words).

    The memo is keyed by the instruction's first 4 bytes for 32-bit instructions whose decoding no longer
    word could change (the decoder's own rule for its low-word cache); an instruction of the longest size
    (decided with every form in view) is keyed by its whole bytes, looked up when the 4-byte key misses.
    """
    from jitgemm.isa.disasm.decoder import decode_at
    from jitgemm.isa.disasm.printer import disassembly_lines, format_instruction, objdump_line, objdump_parts

    bad = []
    append = lines.append
    get = memo.get
    decoder_cache = forms.decode_cache
    full = forms.max_size
    n = len(data)
    pos = 0
    texts = _address_texts(base, base + end + full) if show_raw else None
    while pos < end:
        if texts is not None:   # the common case in a loop of its own: look up, join three strings, step
            while pos < end:
                # most lines of a kernel are 8-byte instructions: their key first, then a 4-byte one's (an
                # 8-byte key is only ever stored for the longest size, decided with all its bytes in view)
                hit = get(data[pos:pos + full])
                if hit is None and full > 4:
                    hit = get(data[pos:pos + 4])
                if hit is None:
                    break
                append(f"{hit[0]}{texts[(base + pos) >> 2]}{hit[1]}")   # one allocation (a + b + c makes two)
                pos += hit[3]
            if pos >= end:
                break
        else:
            hit = get(data[pos:pos + 4])
            if hit is None and full > 4:
                hit = get(data[pos:pos + full])
            if hit is not None:
                append(f"{hit[0]}{base + pos:012X}{hit[1]}" if show_raw else hit[2])
                pos += hit[3]
                continue
        d = decode_at(data, pos, forms, base)
        inst = d.instruction
        if inst is not None and d.target is None:
            text = format_instruction(inst, unprinted.get(d.encoding, frozenset()))
            hit = (*objdump_parts(text, d.words), f"\t{text}", d.size)
            if len(memo) > _LINE_CACHE_LIMIT:
                memo.clear()
            if d.size == 4:
                if decoder_cache.get(int.from_bytes(d.raw, "little")) is not None:
                    memo[d.raw] = hit
            elif d.size == full and n - pos >= full:
                memo[d.raw] = hit
            append(f"{hit[0]}{d.offset:012X}{hit[1]}" if show_raw else hit[2])
        else:
            if d.warning:
                bad.append(d)
            for text, address, words, comment in disassembly_lines([d], near, labels, unprinted):
                append(objdump_line(text, address, words, comment) if show_raw else f"\t{text}")
        pos += d.size if d.size else 4
    return bad


def listing(sections: list[TextSection], forms, *, kernel: str | None = None, show_raw: bool = True,
            unprinted: dict[str, frozenset[str]] | None = None) -> Listing:
    """llvm-objdump's listing of `sections` (as `text_sections` returns them) with the spec `forms`.

    Each run of code from one symbol address to the next is decoded on its own, with the symbols starting
    there as `ADDR <name>:` headers; a section with no symbol at its start is headed by its own name, as
    llvm-objdump does. `kernel` keeps only the runs from that symbol up to the next function symbol.
    `unprinted` is the target profile's `unprinted_modifiers` (what LLVM leaves out of the text for it).
    """
    unprinted = unprinted or {}
    memos = _LINE_CACHES.get(forms)
    if memos is None:
        memos = _LINE_CACHES[forms] = {}
    memo = memos.setdefault(tuple(sorted(unprinted.items())), {})
    out = Listing()
    found = kernel is None
    for sec in sections:
        symbols = list(sec.symbols)
        if not symbols or symbols[0].address != sec.address:
            symbols.insert(0, TextSymbol(sec.address, sec.name, False, True))
        labels: dict[int, str] = {}
        for s in symbols:
            if s.notype:
                labels.setdefault(s.address, s.name)  # the first in sort order, as AMDGPUSymbolizer finds it
        near = [(s.address, s.name) for s in symbols]
        groups = [(start, list(here)) for start, here in groupby(symbols, key=lambda s: s.address)]
        end_of_section = sec.address + len(sec.body)
        keep = kernel is None
        header = False
        for i, (start, here) in enumerate(groups):
            end = min(groups[i + 1][0] if i + 1 < len(groups) else end_of_section, end_of_section)
            if kernel is not None:
                if any(s.name == kernel for s in here):
                    keep = found = True
                elif keep and any(s.function for s in here):
                    keep = False
            if not keep or start >= end or start < sec.address:
                continue
            if not header:
                out.lines += ["", f"Disassembly of section {sec.name}:"]
                header = True
            for s in here:
                out.lines += ["", f"{start:016x} <{s.name}>:"]
            # objdump decodes up to the next symbol but lets the last instruction read past it
            offset = start - sec.address
            data = sec.body[offset:end - sec.address + forms.max_size]
            bad = _list_run(data, end - start, start, forms, memo, near, labels, show_raw, out.lines, unprinted)
            out.unknown += len(bad)
            out.first_warnings.extend(f"{here[0].name}+0x{d.offset - start:x}: {d.warning}"
                                      for d in bad[: max(0, 3 - len(out.first_warnings))])
    if not found:
        raise CliError(f"no kernel or function {kernel!r} in the code object")
    return out


def run(args: argparse.Namespace) -> int:
    """Every FILE in order; a file that cannot be listed is reported (one line naming it) and the rest are still
    listed, as llvm-objdump does; the status is then 2. With `--jobs N` several files are listed at once by N
    forked workers (the decoder, loaded once here, is shared copy-on-write), printed in the order given."""
    import gc

    # A listing allocates millions of small acyclic objects (lines, memo entries, decoded instructions) while the
    # decoder's caches grow; at the default thresholds the cyclic collector rescans them hundreds of times, about a
    # tenth of a batch's time, and finds nothing. Collect rarely instead (restored on the way out).
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    try:
        files = args.file
        if len(files) == 1:
            out, err = _render(args, files[0])
            _emit(out, err)
            return 0
        jobs = min(args.jobs or os.cpu_count() or 1, len(files))
        if jobs > 1:
            return _parallel(args, files, jobs)
        status = 0
        for file in files:
            out, err, failed = _render_or_error(args, file)
            _emit(out, err)
            status = 2 if failed else status
        return status
    finally:
        gc.set_threshold(*thresholds)


def _emit(out: str, err: str) -> None:
    if out:
        sys.stdout.write(out)
    if err:
        sys.stdout.flush()
        sys.stderr.write(err)


def _render_or_error(args: argparse.Namespace, file: str) -> tuple[str, str, bool]:
    """(listing, warnings, failed) of one file; a file that cannot be listed is one error line, not an exception."""
    try:
        return (*_render(args, file), False)
    except CliError as exc:
        return "", f"jitgemm disasm: error: {exc}\n", True


def _parallel(args: argparse.Namespace, files: list[str], jobs: int) -> int:
    """List `files` with `jobs` forked workers, printed in the order given; the exit status as `run` gives it.

    The parent lists the first file itself (which loads the spec, its forms and the decode index) and then forks:
    every worker starts with them. Each worker takes one contiguous share of the rest, so a kernel family's
    variants, which neighbour each other, share one worker's line memo; it writes its listings straight to the
    inherited stdout when its turn comes (the worker before it has finished writing), holding them until then, so
    no listing is copied between processes. Ctrl-C is the parent's: it stops the workers and reports one line.
    Without the fork start method (not Linux) the files are listed here, one by one."""
    import multiprocessing

    out, err, failed = _render_or_error(args, files[0])
    _emit(out, err)
    sys.stdout.flush()
    sys.stderr.flush()
    rest = files[1:]
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:
        context = None
    if context is None or not rest:
        results = [_render_or_error(args, f) for f in rest]
        for r in results:
            _emit(r[0], r[1])
        return 2 if failed or any(r[2] for r in results) else 0
    size = -(-len(rest) // jobs)
    shares = [rest[i:i + size] for i in range(0, len(rest), size)]
    turns = [context.Event() for _ in shares]
    turns[0].set()
    nexts = [*turns[1:], None]
    workers = [context.Process(target=_worker, args=(args, share, turns[k], nexts[k]), daemon=True)
               for k, share in enumerate(shares)]
    try:
        for w in workers:
            w.start()
        for k, w in enumerate(workers):
            w.join()
            if nexts[k] is not None:
                nexts[k].set()   # a worker that died without passing its turn on must not stall the rest
    except BaseException:
        for w in workers:
            if w.is_alive():
                w.terminate()
        raise
    return 2 if failed or any(w.exitcode for w in workers) else 0


def _worker(args: argparse.Namespace, share: list[str], turn, next_turn) -> None:
    """One worker of `_parallel`: list `share` (exit status 2 when a file failed, as `run`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's (one line, status 130)
    try:
        status = _list_share(args, share, turn, next_turn)
    except BrokenPipeError:   # the reader went away (`| head`): nothing more to say, as in one process
        os._exit(0)
    sys.exit(status)


def _list_share(args: argparse.Namespace, share: list[str], turn, next_turn) -> int:
    """List `share`, writing as soon as (and only while) it is this worker's `turn`; then pass the turn on, even
    when a file raised a user error (reported in one line, in its place) so the workers after it still print."""
    from jitgemm.cli import _user_errors

    held: list[tuple[str, str]] = []
    status = 0
    try:
        for file in share:
            out, err, failed = _render_or_error(args, file)
            status = 2 if failed else status
            held.append((out, err))
            if turn.is_set():
                for o, e in held:
                    _emit(o, e)
                held.clear()
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        held.append(("", f"jitgemm disasm: error: {exc}\n"))
        status = 2
    finally:
        try:
            turn.wait()
            for o, e in held:
                _emit(o, e)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:   # even when the reader went away: the workers after this one must not wait for ever
            if next_turn is not None:
                next_turn.set()
    return status


@functools.cache
def _unprinted(target: str) -> dict[str, frozenset[str]]:
    """The target profile's modifiers a listing leaves out ({} for a target without a profile)."""
    from jitgemm.isa.errors import SpecError
    from jitgemm.isa.spec.targets import target_profile

    try:
        return target_profile(target).unprinted_modifiers
    except SpecError:
        return {}


def _render(args: argparse.Namespace, file: str) -> tuple[str, str]:
    """The listing of one file as llvm-objdump prints it, and the warning line (or "") for stderr."""
    from jitgemm import isa
    from jitgemm.isa.spec.forms import forms_of

    data = read_input(file)
    if args.raw:
        sections, processor = [TextSection(Path(file).name, 0, data, ())], None
    else:
        if data[:4] != b"\x7fELF":
            raise CliError(f"{file} is not an ELF code object (use --raw for bare machine code)")
        try:
            sections, processor = text_sections(data)
        except CliError as exc:
            raise CliError(f"{file}: {exc}") from None
    spec = isa.load_spec(args.spec if args.spec else (args.arch or processor or "gfx942"))
    try:
        result = listing(sections, forms_of(spec), kernel=args.kernel, show_raw=args.show_raw,
                         unprinted=_unprinted(args.arch or processor or "gfx942"))
    except CliError as exc:
        raise CliError(f"{file}: {exc}") from None
    head = "" if args.raw else f"\n{file}:\tfile format elf64-amdgpu\n"
    err = ""
    if result.unknown:
        err = (f"warning: {result.unknown} word(s) not decodable with spec {spec.architecture.name} printed as "
               ".long" + ("; first: " + "; ".join(result.first_warnings) if result.first_warnings else "") + "\n")
    return head + "\n".join(result.lines) + "\n", err
