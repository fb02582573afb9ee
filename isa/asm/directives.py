"""The directives of `.s` files, one handler each (assembler, directive, rest of line, loc, column), and the table
(`DIRECTIVES`) the file assembler dispatches on: target and code-object version, sections, symbol attributes, type
and size, alignment, data and strings, zero/fill, `.set`, `.include`, block openers, conditionals, errors and
`.end`. Each follows LLVM MC's AsmParser / ELFAsmParser (GNU as where LLVM is silent)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jitgemm.isa.instruction import Align, Data

from . import expressions as X
from .macros import (
    OPENERS,
    AsmFileError,
    Collect,
    Loc,
    loc_chain,
    split_args,
    split_with_offsets,
)
from .metadata import d_kernel, d_metadata
from .sections import (
    Fixup,
    normalize_target,
)

if TYPE_CHECKING:
    from .file import FileAssembler

DATA_WIDTH = {".byte": 1, ".short": 2, ".hword": 2, ".2byte": 2, ".value": 2, ".long": 4, ".int": 4,
               ".4byte": 4, ".quad": 8, ".8byte": 8}


def parse_string(text: str, loc: Loc, col: int) -> bytes:
    t = text.strip()
    if len(t) < 2 or t[0] != '"' or t[-1] != '"':
        raise AsmFileError(f"expected a string in quotes, got {t[:30]!r}", loc, col)
    body = t[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        i += 1
        if i >= len(body):
            raise AsmFileError("string ends with a backslash", loc, col)
        c = body[i]
        if c in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i:])
            out.append(int(m.group(0), 8) & 0xFF)
            i += len(m.group(0))
            continue
        if c in "xX":
            m = re.match(r"[0-9a-fA-F]+", body[i + 1:])
            if not m:
                raise AsmFileError("\\x needs hex digits", loc, col)
            out.append(int(m.group(0), 16) & 0xFF)
            i += 1 + len(m.group(0))
            continue
        out += {"n": b"\n", "t": b"\t", "r": b"\r", "b": b"\b", "f": b"\f", "\\": b"\\", '"': b'"',
                "'": b"'"}.get(c, c.encode())
        i += 1
    return bytes(out)


def _d_target(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    text = rest.strip()
    if not (text.startswith('"') and text.endswith('"')):
        raise AsmFileError(f"{d} takes the target id in quotes, e.g. \"amdgcn-amd-amdhsa--gfx942\"", loc, col)
    a.obj.target = normalize_target(text[1:-1])


def _d_cov(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    a.obj.code_object_version = a.absolute(rest, loc, col + len(d) + 1, d)


def _d_section(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    if d in (".text", ".data", ".rodata", ".bss"):
        if d == ".text" and rest.strip():  # `.text 1` subsections are not supported
            raise AsmFileError(".text subsections are not supported", loc, col)
        a.switch(d, loc)
        return
    if d == ".popsection":
        if not a.section_stack:
            raise AsmFileError(".popsection without a .pushsection", loc, col)
        a.section, a.previous = a.section_stack.pop()
        return
    if d == ".previous":
        if a.previous:
            a.section, a.previous = a.previous, a.section
        return
    args = split_args(rest)
    if not args or not args[0]:
        raise AsmFileError(f"{d} needs a section name", loc, col)
    name = args[0].strip('"')
    flags = kind = None
    entsize = 0
    if len(args) > 1:
        flags = args[1].strip('"')
        bad = set(flags) - set("awxMSGTRoey")
        if bad:
            raise AsmFileError(f"unknown section flag(s) {''.join(sorted(bad))!r} (accepted: a w x M S G T R o)",
                               loc, col)
    if len(args) > 2:
        kind = args[2].strip().lstrip("@%").lower()
        if kind not in ("progbits", "nobits", "note", "init_array", "fini_array", "preinit_array"):
            raise AsmFileError(f"unknown section type @{kind} (accepted: @progbits, @nobits, @note)", loc, col)
    if len(args) > 3 and flags and "M" in flags:
        entsize = a.absolute(args[3], loc, col, "section entry size")
    if d == ".pushsection":
        a.section_stack.append((a.section, a.previous))
    a.switch(name, loc, flags, kind, entsize)


def _d_symbol_attr(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    names = [n.strip().strip('"') for n in split_args(rest)]
    if not names or not all(names):
        raise AsmFileError(f"{d} needs one or more symbol names", loc, col)
    for name in names:
        at = a.attr(name)
        if d in (".globl", ".global"):
            at["binding"] = "global"
        elif d == ".weak":
            at["binding"] = "weak"
        elif d == ".local":
            at["binding"] = "local"
        else:
            at["visibility"] = d[1:]


def _d_type(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if len(args) != 2:
        raise AsmFileError(".type takes a symbol and a type, e.g. .type kernel,@function", loc, col)
    kind = args[1].strip().lstrip("@%\"").rstrip('"').lower()
    types = {"function": "function", "stt_func": "function", "object": "object", "stt_object": "object",
             "notype": "notype", "stt_notype": "notype"}
    if kind not in types:
        raise AsmFileError(f"unsupported symbol type @{kind} (accepted: @function, @object, @notype)", loc, col)
    a.attr(args[0].strip('"'))["type"] = types[kind]


def _d_size(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if len(args) != 2:
        raise AsmFileError(".size takes a symbol and an expression", loc, col)
    try:
        node = X.parse_expr(args[1])
    except X.ExprSyntaxError as exc:
        raise AsmFileError(f".size: {exc}", loc, col) from None
    if any(isinstance(n, X.Dot) for n in X.walk(node)):
        dot = a.dot_label(loc)
        node = X.replace_dot(node, dot)
    a.sizes.append((args[0].strip('"'), node, loc))


def _d_align(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if not args or not args[0]:
        raise AsmFileError(f"{d} needs an alignment", loc, col)
    value = a.absolute(args[0], loc, col + len(d) + 1, f"{d} alignment")
    pow2 = d.startswith(".p2align")
    if pow2:
        if not 0 <= value <= 16:
            raise AsmFileError(f"{d} takes a power of two 0..16 (alignment 1..65536 bytes), got {value}", loc, col)
        boundary = 1 << value
    else:
        boundary = value or 1
        if boundary & (boundary - 1) or boundary > 1 << 16:
            raise AsmFileError(f"{d} alignment {value} is not a power of two up to 65536", loc, col)
    width = 4 if d.endswith("l") else 2 if d.endswith("w") else 1
    fill = None
    if len(args) > 1 and args[1]:
        fill = a.absolute(args[1], loc, col, f"{d} fill value")
    max_skip = None
    if len(args) > 2:   # the third argument: skip at most this many bytes (0 or absent: no limit), as llvm-mc
        max_skip = a.absolute(args[2], loc, col, f"{d} maximum skip") or None
        if len(args) > 3 or (max_skip is not None and max_skip < 0):
            raise AsmFileError(f"{d} takes an alignment, a fill value and a maximum skip >= 0", loc, col)
    sec = a.obj.sections[a.section]
    if fill is None and "x" not in sec.flags:
        fill = 0
    a.emit(Align(boundary, fill, width if fill is not None else 1, max_skip), loc)


def _d_data(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    width = DATA_WIDTH[d]
    args = split_with_offsets(rest)
    base = loc.text.find(rest) if rest and rest in loc.text else col + len(d)
    for text, off in args:
        if not text.strip():
            raise AsmFileError(f"{d} needs a value", loc, col)
        acol = base + off + (len(text) - len(text.lstrip())) + 1
        try:
            node = X.parse_expr(text)
        except X.ExprSyntaxError as exc:
            raise AsmFileError(f"{d}: {exc}", loc, acol + exc.col) from None
        try:
            v = X.evaluate(node, a.lookup_now)
        except X.ExprValueError:
            v = None
        if v is not None and v.absolute:
            if not -(1 << (8 * width - 1)) <= v.const < (1 << (8 * width)):
                raise AsmFileError(f"{d} value {v.const} does not fit in {width} byte(s)", loc, acol)
            a.emit(Data((v.const & ((1 << (8 * width)) - 1),), width), loc)
            continue
        dot = a.dot_label(loc) if any(isinstance(n, X.Dot) for n in X.walk(node)) else None
        if dot:
            node = X.replace_dot(node, dot)
        index = a.emit(Data((0,), width), loc)
        a.fixups.append(Fixup(a.section, index, width, node, loc, acol, False))


def _d_ascii(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    for text in split_args(rest):
        data = parse_string(text, loc, col) + (b"\0" if d in (".asciz", ".string") else b"")
        if data:
            a.emit(Data(tuple(data), 1), loc)


def _d_zero(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if not args or not args[0]:
        raise AsmFileError(f"{d} needs a size", loc, col)
    count = a.absolute(args[0], loc, col, f"{d} size")
    fill = a.absolute(args[1], loc, col, f"{d} fill") if len(args) > 1 and d != ".zero" else 0
    if not 0 <= count <= 1 << 28:
        raise AsmFileError(f"{d} size {count} must be in 0..{1 << 28}", loc, col)
    if count:
        a.emit(Data((fill & 0xFF,) * count, 1), loc)


def _d_fill(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if not args or not args[0]:
        raise AsmFileError(".fill takes count[, size[, value]]", loc, col)
    count = a.absolute(args[0], loc, col, ".fill count")
    size = a.absolute(args[1], loc, col, ".fill size") if len(args) > 1 else 1
    value = a.absolute(args[2], loc, col, ".fill value") if len(args) > 2 else 0
    if size not in (1, 2, 4, 8) or not 0 <= count <= 1 << 24:
        raise AsmFileError(".fill takes a count up to 16M and a size of 1, 2, 4 or 8", loc, col)
    if count:
        a.emit(Data(((value & ((1 << (8 * min(size, 4))) - 1)),) * count, size), loc)


def _d_set(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    args = split_args(rest)
    if len(args) < 2:
        raise AsmFileError(f"{d} takes a symbol and an expression, e.g. {d} N, 4", loc, col)
    name = args[0]
    if d == ".equiv" and (name in a.sets or name in a.labels):
        raise AsmFileError(f"redefinition of {name!r} (.equiv does not allow it)", loc, col)
    a.do_set(name, ",".join(rest.split(",")[1:]), loc, col)


def _d_include(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    t = rest.strip()
    if not (t.startswith('"') and t.endswith('"')):
        raise AsmFileError('.include takes a file name in quotes', loc, col)
    path = Path(loc.file).parent / t[1:-1] if loc.file not in ("<input>", "<stdin>") else Path(t[1:-1])
    try:
        text = a.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise AsmFileError(f"could not find include file '{t[1:-1]}' (looked for {path}): "
                           f"{getattr(exc, 'strerror', None) or exc}", loc, col + len(d) + 1) from None
    if sum(1 for _ in loc_chain(loc)) > 32 or len(a.sources) > 200:
        raise AsmFileError("includes nested too deeply", loc, col)
    a.push_text(text, str(path), None)


def _d_collect(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    a.collect = Collect(d[1:], rest, loc)


def _d_unexpected_end(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    raise AsmFileError(f"unexpected {d} (no {'.macro' if d.startswith('.endm') else '.rept/.irp/.irpc'} "
                       "before it)", loc, col)


def _d_cond(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    a.conditional(d, rest, loc, col)


def _d_error(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    message = rest.strip()
    if message.startswith('"'):
        message = parse_string(message, loc, col).decode(errors="replace")
    raise AsmFileError(message or ".error directive invoked in source file", loc, col)


def _d_end(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    a.ended = True


def _d_stray(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    raise AsmFileError(f"{d} without a block before it", loc, col)


DIRECTIVES: dict[str, Callable[..., None]] = {
    ".amdgcn_target": _d_target, ".amdhsa_code_object_version": _d_cov,
    ".amdhsa_kernel": d_kernel, ".amdgpu_metadata": d_metadata,
    ".end_amdhsa_kernel": _d_stray, ".end_amdgpu_metadata": _d_stray,
    **dict.fromkeys((".text", ".data", ".rodata", ".bss", ".section", ".pushsection", ".popsection",
                     ".previous"), _d_section),
    **dict.fromkeys((".globl", ".global", ".weak", ".local", ".protected", ".hidden", ".internal"),
                    _d_symbol_attr),
    ".type": _d_type, ".size": _d_size,
    **dict.fromkeys((".p2align", ".p2alignl", ".p2alignw", ".align", ".balign", ".balignl", ".balignw"), _d_align),
    **dict.fromkeys(DATA_WIDTH, _d_data),
    **dict.fromkeys((".ascii", ".asciz", ".string"), _d_ascii),
    **dict.fromkeys((".zero", ".skip", ".space"), _d_zero), ".fill": _d_fill,
    **dict.fromkeys((".set", ".equ", ".equiv"), _d_set),
    ".include": _d_include,
    **dict.fromkeys(OPENERS, _d_collect),
    **dict.fromkeys((".endm", ".endmacro", ".endr"), _d_unexpected_end),
    **dict.fromkeys((".if", ".ifdef", ".ifndef", ".ifnotdef", ".ifeq", ".ifne", ".ifgt", ".ifge", ".iflt", ".ifle",
                     ".ifb", ".ifnb", ".ifc", ".ifnc", ".else", ".elseif", ".endif", ".endc"), _d_cond),
    ".error": _d_error, ".err": _d_error, ".end": _d_end,
}
