"""A fast path for the common assembly line, measured to be several times faster than the LALR parser.

Most lines of a kernel are `mnemonic op, op, op mod mod` with registers, numbers and simple modifiers.
This module recognises exactly those with a few regular expressions and memoized operand conversions,
and returns None for anything else (directives, strings, block comments, unusual spellings, errors), so
that the lark grammar stays the one definition of the syntax: the tests check that both produce the
same instruction for every line the fast path accepts. Columns are not tracked here; the assembler
re-parses a line with lark when it needs to point at an operand in an error.
"""

from __future__ import annotations

import re

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.instruction import AsmInstruction, Counters, Imm, Label, Reg, SrcMods, identifier_operand

_LABEL = re.compile(r"\s*([A-Za-z_$@.][\w.$@]*):(?=\s|$)", re.ASCII)
_MNEMONIC = re.compile(r"[A-Za-z_][\w.]*", re.ASCII)
_SPACE = " \t\n\r\f\v"  # what the ASCII regexes call \s
_RANGE = re.compile(r"(ttmp|s|v|a)\[(\d{1,6})(?::(\d{1,6}))?\]\Z", re.IGNORECASE | re.ASCII)
_NAME = re.compile(r"[A-Za-z_$@.][\w.$@]*\Z", re.ASCII)
_HEX = re.compile(r"0[xX][0-9a-fA-F]+\Z", re.ASCII)
_INT = re.compile(r"0[bB][01]+\Z|[0-9]+\Z", re.ASCII)
_FLOAT = re.compile(r"\d+\.\d*(?:[eE][-+]?\d+)?\Z|\d+[eE][-+]?\d+\Z", re.ASCII)
_CALL = re.compile(r"([A-Za-z_]\w*)\(([^()]*)\)\Z", re.ASCII)
_COUNTER = re.compile(r"([A-Za-z_]\w*)\(\s*(\d{1,9})\s*\)", re.ASCII)
_COUNTERS = re.compile(r"(?:[A-Za-z_]\w*\(\s*\d{1,9}\s*\)\s*&?\s*)+\Z", re.ASCII)
_MODKEY = re.compile(r"([A-Za-z_$@][\w.$@]*):(.+)\Z", re.ASCII)

_OPERANDS: dict[str, object] = {}
_MODIFIERS: dict[str, tuple] = {}
_LINES: dict[str, tuple | None] = {}
_MAX_CACHE = 1 << 16
_MAX_CACHED_LINE = 256


def _number(text: str):
    try:
        if _INT.match(text):
            return Imm(syn.integer_value(text))
        if _HEX.match(text):
            return Imm(syn.integer_value(text), hex=True)
    except ValueError:
        return None  # the LALR parser reports it, with its column
    if _FLOAT.match(text):
        return Imm(float(text))
    return None


def _convert(text: str):
    """Operand object for one operand's text, or None when the fast path does not handle it."""
    if not text:
        return None
    first = text[0]
    if first == "-":
        inner = text[1:]
        if not inner or inner[0] in "- ":
            return None
        op = _operand(inner)
        if op is None:
            return None
        if type(op) is Imm:
            return Imm(-op.value, hex=op.hex)
        if type(op) is SrcMods:
            if op.neg or op.sext:
                return None
            return SrcMods(op.operand, True, op.abs, False)
        if type(op) in (Reg, Label):
            return SrcMods(op, neg=True)
        return None
    if first == "|":
        if len(text) < 3 or text[-1] != "|":
            return None
        op = _operand(text[1:-1])
        if op is None or type(op) not in (Reg, Imm, Label):
            return None
        return SrcMods(op, abs=True)
    if first.isdigit():
        return _number(text)
    m = _RANGE.match(text)
    if m:
        first_reg = int(m.group(2))
        last = int(m.group(3)) if m.group(3) is not None else first_reg
        if last < first_reg:
            return None
        return Reg(m.group(1).lower(), first_reg, last - first_reg + 1)
    if _NAME.match(text):
        if text.lower() in syn.DECODE_ONLY_SPELLINGS:
            return None  # the LALR parser refuses it, with its column
        return identifier_operand(text)
    m = _CALL.match(text)
    if m:
        name = m.group(1).lower()
        if name == "hwreg":
            args = []
            for arg in m.group(2).split(","):
                arg = arg.strip()
                imm = _number(arg) if arg[:1].isdigit() else None
                args.append(imm.value if imm is not None else arg)
            value = syn.hwreg_value(tuple(args))
            return None if value is None else Imm(value, text=syn.hwreg_text(value))
        if name == "sendmsg":
            return None  # the LALR parser builds it (and says why a message is refused)
        if name == "gpr_idx":
            value = syn.gpr_idx_value(tuple(a.strip() for a in m.group(2).split(",") if a.strip()))
            return None if value is None else Imm(value, text=syn.gpr_idx_text(value))
        if name in ("neg", "abs", "sext"):
            inner = _operand(m.group(2).strip())
            if inner is None or type(inner) not in (Reg, Imm, Label):
                return None
            return SrcMods(inner, **{name: True})
    if _COUNTERS.match(text):
        parts = tuple((n.lower(), int(v)) for n, v in _COUNTER.findall(text))
        if any(n in ("neg", "abs", "sext") for n, _v in parts):
            return None
        return Counters(parts)
    return None


def _operand(text: str):
    op = _OPERANDS.get(text)
    if op is None:
        op = _convert(text)
        if op is None:
            return None
        if len(_OPERANDS) > _MAX_CACHE:
            _OPERANDS.clear()
        _OPERANDS[text] = op
    return op


def _modval(text: str):
    if not text:
        return None
    if text[0] == "[":
        if text[-1] != "]":
            return None
        body = text[1:-1].strip()
        if not body:
            return ()
        items = []
        for item in body.split(","):
            v = _modval(item.strip())
            if v is None or isinstance(v, tuple):
                return None
            items.append(v)
        return tuple(items)
    neg = text[0] == "-"
    body = text[1:] if neg else text
    if body and body[0].isdigit():
        imm = _number(body)
        if imm is None:
            return None
        return -imm.value if neg else imm.value
    if not neg and _NAME.match(text) and text[0] != ".":
        return text
    return None


def _modifier(text: str):
    if not text:
        return None
    mod = _MODIFIERS.get(text)
    if mod is None:
        if _NAME.match(text) and text[0] != ".":
            mod = (text.lower(), True)
        else:
            m = _MODKEY.match(text)
            if m is None:
                return None
            value = _modval(m.group(2))
            if value is None:
                return None
            mod = (m.group(1).lower(), value)
        if len(_MODIFIERS) > _MAX_CACHE:
            _MODIFIERS.clear()
        _MODIFIERS[text] = mod
    return mod


def finish(mnemonic: str, ops: list, mods: list) -> AsmInstruction:
    """The instruction from parsed operands and modifiers, with the two syntax rules both parsers
    share: counters written as several operands form one (`vmcnt(0), lgkmcnt(0)`), and a lone flag in
    operand position is a modifier (`buffer_inv sc1`)."""
    if len(ops) > 1 and all(type(op) is Counters for op in ops):
        ops = [Counters(tuple(part for op in ops for part in op.parts))]
    if len(ops) == 1 and type(ops[0]) is Label and ops[0].name.lower() in syn.FLAG_MODIFIERS:
        mods = [(ops[0].name.lower(), True)] + list(mods)
        ops = []
    return AsmInstruction(mnemonic, tuple(ops), tuple(mods))


def _strip_comment(text: str) -> str:
    """`text` up to its first `;` or `//` (one scan; the regex search this replaces was quadratic in runs of
    spaces)."""
    cut = [i for i in (text.find(";"), text.find("//")) if i >= 0]
    return text[:min(cut)] if cut else text


def _split_top(text: str, sep: str) -> list[str] | None:
    """`text` split at `sep` (a comma, or a run of whitespace for " ") outside brackets and parentheses, in one
    pass; after a comma, leading whitespace is dropped. None for unbalanced brackets (the LALR parser reports
    those). Linear in the length of the line, where the lookahead regexes it replaces were quadratic."""
    parts = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and (c == sep or (sep == " " and c in _SPACE)):
            parts.append(text[start:i])
            i += 1
            while i < n and text[i] in _SPACE:
                i += 1
            start = i
            continue
        i += 1
    if depth:
        return None
    parts.append(text[start:])
    return parts


def _line(line: str):
    labels = []
    pos = 0
    while True:
        m = _LABEL.match(line, pos)
        if m is None:
            break
        labels.append(m.group(1))
        pos = m.end()
    rest = _strip_comment(line[pos:]).strip(_SPACE)
    if not rest:
        return (tuple(labels), None)
    m = _MNEMONIC.match(rest)
    if m is None or (m.end() < len(rest) and rest[m.end()] not in _SPACE):
        return None
    mnemonic = m.group(0).lower()
    body = rest[m.end():].strip(_SPACE)
    if not body:
        return (tuple(labels), AsmInstruction(mnemonic))
    parts = _split_top(body, ",")
    if parts is None:
        return None
    last = parts[-1]
    ops = []
    for part in parts[:-1]:
        op = _operand(part)
        if op is None:
            return None
        ops.append(op)
    words = _split_top(last, " ")
    if words is None:
        return None
    # the last operand, which may be a counter sequence written with spaces
    n = 1
    if _COUNTER.match(words[0]):
        while n < len(words) and (_COUNTER.match(words[n]) or words[n] == "&"):
            n += 1
    op = _operand(" ".join(words[:n]))
    if op is None:
        if len(parts) == 1 and not ops:
            mod = _modifier(words[0])
            if mod is None or mod[1] is True:
                return None
            mods = [mod]  # `v_nop_dpp quad_perm:[...]`: modifiers without operands
            for word in words[1:]:
                mod = _modifier(word)
                if mod is None:
                    return None
                mods.append(mod)
            return (tuple(labels), finish(mnemonic, [], mods))
        return None
    ops.append(op)
    mods = []
    for word in words[n:]:
        mod = _modifier(word)
        if mod is None:
            return None
        mods.append(mod)
    if len({m[0] for m in mods}) != len(mods):
        return None  # a repeated modifier: the LALR parser reports it with its column
    return (tuple(labels), finish(mnemonic, ops, mods))


def parse_line(line: str):
    """(labels, instruction or None) for a line the fast path handles, else None."""
    if '"' in line or "/*" in line or "*/" in line:
        return None
    hit = _LINES.get(line, False)
    if hit is not False:
        return hit
    result = _line(line)
    if len(line) > _MAX_CACHED_LINE:
        return result   # a 50 KB line is not repeated; 65536 of them would hold gigabytes
    if len(_LINES) > _MAX_CACHE:
        _LINES.clear()
    _LINES[line] = result
    return result
