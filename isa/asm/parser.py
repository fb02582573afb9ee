"""Assembly text -> statements (instructions, labels, directives) with their source positions.

The grammar (grammar.lark) is LALR and built once per process; the transformer runs inside the
parser, so no parse tree is kept. Positions (line, column of the mnemonic, of each operand and of each
modifier) travel beside the instruction objects, so an encoding error can point at the operand.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.asm_errors import AsmError
from jitgemm.isa.instruction import (
    AsmInstruction,
    Counters,
    Imm,
    Label,
    Off,
    Reg,
    SrcMods,
    identifier_operand,
    range_operand,
)
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from .fastpath import parse_line


@dataclass(slots=True)
class Statement:
    """One statement of a source file: an instruction, a label definition or a directive."""

    kind: str  # "instruction", "label" or "directive"
    line: int
    col: int
    instruction: AsmInstruction | None = None
    name: str = ""  # label name or directive name
    args: tuple = ()  # directive arguments
    operand_cols: tuple[int, ...] = ()
    modifier_cols: tuple[tuple[str, int], ...] = ()


class _Pos:
    """An operand or modifier value with the column where it starts."""

    __slots__ = ("value", "line", "col")

    def __init__(self, value, line: int, col: int) -> None:
        self.value = value
        self.line = line
        self.col = col


class _SemanticError(Exception):
    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


def _number(tok: Token):
    if tok.type == "FLOAT":
        return float(tok.value)
    return _integer(tok)


def _integer(tok: Token) -> int:
    try:
        return syn.integer_value(tok.value)
    except ValueError as exc:
        raise _SemanticError(str(exc), tok.line, tok.column) from None


class _Builder(Transformer):
    """Builds instruction objects while the LALR parser reduces (Transformer callbacks)."""

    # --- operands
    def int_number(self, children):
        tok = children[0]
        return _Pos(Imm(_integer(tok)), tok.line, tok.column)

    def hex_number(self, children):
        tok = children[0]
        return _Pos(Imm(_integer(tok), hex=True), tok.line, tok.column)

    def float_number(self, children):
        tok = children[0]
        return _Pos(Imm(float(tok.value)), tok.line, tok.column)

    def name(self, children):
        tok = children[0]
        if tok.value.lower() in syn.DECODE_ONLY_SPELLINGS:
            raise _SemanticError(syn.decode_only_error(tok.value), tok.line, tok.column)
        return _Pos(identifier_operand(tok.value), tok.line, tok.column)

    def reg_range(self, children):
        tok, lo, hi = children
        try:
            reg = range_operand(tok.value, _integer(lo), _integer(hi))
        except ValueError as exc:
            raise _SemanticError(str(exc), tok.line, tok.column) from None
        return _Pos(reg, tok.line, tok.column)

    def reg_one(self, children):
        tok, idx = children
        try:
            reg = range_operand(tok.value, _integer(idx), _integer(idx))
        except ValueError as exc:
            raise _SemanticError(str(exc), tok.line, tok.column) from None
        return _Pos(reg, tok.line, tok.column)

    def neg(self, children):
        p = children[0]
        op = p.value
        col = p.col - 1
        if type(op) is Imm:
            value = op.value
            return _Pos(Imm(-value, hex=op.hex), p.line, col)
        if type(op) is SrcMods:
            if op.neg:
                raise _SemanticError("double negation", p.line, col)
            return _Pos(SrcMods(op.operand, True, op.abs, op.sext), p.line, col)
        if type(op) in (Reg, Label):
            return _Pos(SrcMods(op, neg=True), p.line, col)
        raise _SemanticError(f"cannot negate {op}", p.line, col)

    def abs(self, children):
        p = children[0]
        op = p.value
        if type(op) is SrcMods:
            if op.abs or op.neg:
                raise _SemanticError("|...| must be inside -, not around it", p.line, p.col)
            return _Pos(SrcMods(op.operand, False, True, op.sext), p.line, p.col - 1)
        if type(op) in (Off, Counters):
            raise _SemanticError(f"|{op}| is not valid", p.line, p.col)
        return _Pos(SrcMods(op, abs=True), p.line, p.col - 1)

    def call(self, children):
        tok = children[0]
        args = [c for c in children[1:] if c is not None]
        return (tok.value[:-1], args, tok.line, tok.column)

    def calls(self, children):
        calls = [c for c in children if isinstance(c, tuple)]
        name, args, line, col = calls[0]
        low = name.lower()
        if len(calls) == 1 and low in ("neg", "abs", "sext"):
            if len(args) != 1:
                raise _SemanticError(f"{name}(...) takes one operand", line, col)
            op = args[0].value
            if type(op) is SrcMods:
                flags = {"neg": op.neg, "abs": op.abs, "sext": op.sext}
                if flags[low]:
                    raise _SemanticError(f"{name} given twice", line, col)
                flags[low] = True
                return _Pos(SrcMods(op.operand, **flags), line, col)
            if type(op) not in (Reg, Imm, Label):
                raise _SemanticError(f"{name}({op}) is not valid", line, col)
            return _Pos(SrcMods(op, **{low: True}), line, col)
        if len(calls) == 1 and low == "hwreg":
            values = tuple(_hwreg_arg(p.value) for p in args)
            value = syn.hwreg_value(values)
            if value is None:
                raise _SemanticError("hwreg(...) takes a register (HW_REG_* or 0..63) and optionally a bit "
                                     "offset (0..31) and a size (1..32)", line, col)
            return _Pos(Imm(value, text=syn.hwreg_text(value)), line, col)
        if len(calls) == 1 and low == "sendmsg":
            value = syn.sendmsg_value(tuple(_hwreg_arg(p.value) for p in args))
            if isinstance(value, str):
                raise _SemanticError(value, line, col)
            return _Pos(Imm(value, text=syn.sendmsg_text(value)), line, col)
        if len(calls) == 1 and low == "gpr_idx":
            value = syn.gpr_idx_value(tuple(_hwreg_arg(p.value) for p in args))
            if value is None:
                raise _SemanticError("gpr_idx(...) takes distinct names among SRC0, SRC1, SRC2 and DST", line, col)
            return _Pos(Imm(value, text=syn.gpr_idx_text(value)), line, col)
        parts = []
        for cname, cargs, cline, ccol in calls:
            if cname.lower() in ("neg", "abs", "sext"):
                raise _SemanticError(f"{cname}(...) cannot be combined with other parts", cline, ccol)
            if len(cargs) != 1 or type(cargs[0].value) is not Imm or not isinstance(cargs[0].value.value, int):
                raise _SemanticError(f"{cname}(N) takes one integer", cline, ccol)
            parts.append((cname.lower(), cargs[0].value.value))
        return _Pos(Counters(tuple(parts)), line, col)

    # --- modifiers
    def flag(self, children):
        tok = children[0]
        return (tok.value.lower(), True, tok.column)

    def valued(self, children):
        tok, value = children
        return (tok.value[:-1].lower(), value, tok.column)

    def negnum(self, children):
        p = children[0]
        return _Pos(Imm(-p.value.value, hex=p.value.hex), p.line, p.col - 1)

    def modname(self, children):
        return str(children[0].value)

    def modstring(self, children):
        return str(children[0].value)

    def modcall(self, children):
        """`swizzle(SWAP,1)`: kept as its canonical text; the modifier's encoder reads it."""
        tok = children[0]
        args = [_modifier_value(c) for c in children[1:] if c is not None]
        return f"{tok.value}{','.join(str(a) for a in args)})"

    def modlist(self, children):
        return tuple(c for c in children if c is not None)

    # --- statements
    def label_def(self, children):
        tok = children[0]
        name = tok.value[:-1] if tok.type == "MODKEY" else tok.value
        return Statement("label", tok.line, tok.column, name=name)

    def modifier_instruction(self, children):
        return self.instruction(children)

    def bare_instruction(self, children):
        tok = children[0]
        return Statement("instruction", tok.line, tok.column, AsmInstruction(tok.value.lower()))

    def instruction(self, children):
        tok = children[0]
        ops = []
        mods = []
        for c in children[1:]:
            if isinstance(c, _Pos):
                ops.append(c)
            else:
                mods.append(c)
        # `s_waitcnt vmcnt(0), lgkmcnt(0)`: counters written as several operands form one operand.
        if len(ops) > 1 and all(type(p.value) is Counters for p in ops):
            merged = tuple(part for p in ops for part in p.value.parts)
            ops = [_Pos(Counters(merged), ops[0].line, ops[0].col)]
        # `buffer_inv sc1`, `v_nop_dpp row_mirror`: a lone flag where the grammar expects the first operand.
        if len(ops) == 1 and type(ops[0].value) is Label and ops[0].value.name.lower() in syn.FLAG_MODIFIERS:
            mods.insert(0, (ops[0].value.name.lower(), True, ops[0].col))
            ops = []
        modifiers = []
        seen = set()
        for name, value, col in mods:
            if name in seen:  # llvm-mc: "duplicate cache policy modifier" / "not a valid operand"
                raise _SemanticError(f"modifier {name} is given twice", tok.line, col)
            seen.add(name)
            modifiers.append((name, _modifier_value(value)))
        inst = AsmInstruction(tok.value.lower(), tuple(p.value for p in ops), tuple(modifiers))
        return Statement("instruction", tok.line, tok.column, inst,
                         operand_cols=tuple(p.col for p in ops),
                         modifier_cols=tuple((name, col) for name, _v, col in mods))

    def dir_word(self, children):
        return str(children[0].value)

    def dir_string(self, children):
        text = children[0].value
        return text[1:-1]

    def directive(self, children):
        tok = children[0]
        args = tuple(_plain(c) for c in children[1:] if c is not None)
        return Statement("directive", tok.line, tok.column, name=tok.value.lower(), args=args)

    def line(self, children):
        return [c for c in children if c is not None]

    def start(self, children):
        out = []
        for group in children:
            out.extend(group)
        return out


def _hwreg_arg(op):
    if type(op) is Imm:
        return op.value
    if type(op) is Label:
        return op.name
    return None


def _plain(value):
    if isinstance(value, _Pos):
        v = value.value
        return v.value if type(v) is Imm else v
    return value


def _modifier_value(value):
    if isinstance(value, _Pos):
        imm = value.value
        return imm.value if type(imm) is Imm else imm
    if isinstance(value, tuple):
        return tuple(_modifier_value(v) for v in value)
    return value


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", transformer=_Builder(), maybe_placeholders=True,
                propagate_positions=False, cache=False)


def _describe_expected(exc: UnexpectedInput) -> str:
    expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
    names = sorted({_TOKEN_TEXT.get(e, e.lower()) for e in expected if not e.startswith("_") or e == "_NL"})
    return ", ".join(names[:8])


_TOKEN_TEXT = {
    "COMMA": "','", "COLON": "':'", "LSQB": "'['", "RSQB": "']'", "VBAR": "'|'", "MINUS": "'-'",
    "RPAR": "')'", "AMPERSAND": "'&'", "_NL": "end of line", "NAME": "a name", "INT": "an integer",
    "HEX": "a hex number", "FLOAT": "a float", "CALL": "name(", "DIRECTIVE": "a directive",
    "STRING": "a string",
}


def parse(text: str, file: str = "<input>", *, fast: bool = True) -> list[Statement]:
    """Statements of an assembly source; AsmError (file:line:col) on a syntax error.

    With `fast`, common lines go through the fast path (asm_fastpath) and only the others through the
    LALR parser; the result is the same (the tests check it), only quicker. Fast-path statements carry
    no operand columns; `locate` recovers them when an error needs them.
    """
    if not fast or "/*" in text:
        return parse_lark(text, file)
    out: list[Statement] = []
    lines = text.split("\n")
    append = out.append
    for number, line in enumerate(lines, 1):
        result = parse_line(line)
        if result is None:
            out.extend(parse_lark(line, file, first_line=number, all_lines=lines))
            continue
        labels, inst = result
        col = len(line) - len(line.lstrip()) + 1
        for name in labels:
            append(Statement("label", number, col, name=name))
        if inst is not None:
            if labels:  # the mnemonic's column: after the last `name:` (a modifier may hold a colon too)
                pos = 0
                for name in labels:
                    pos = line.index(name, pos) + len(name) + 1
                col = pos + len(line[pos:]) - len(line[pos:].lstrip()) + 1
            append(Statement("instruction", number, col, inst))
    return out


def locate(statement: Statement, line_text: str, file: str = "<input>") -> Statement:
    """The statement with operand and modifier columns, parsed again by the LALR parser."""
    if statement.operand_cols or statement.kind != "instruction":
        return statement
    try:
        for st in parse_lark(line_text, file, first_line=statement.line):
            if st.kind == "instruction":
                return st
    except AsmError:
        pass
    return statement


def parse_lark(text: str, file: str = "<input>", *, first_line: int = 1,
               all_lines: list[str] | None = None) -> list[Statement]:
    """Statements by the LALR parser alone; `first_line` numbers the first line of `text`."""
    lines = all_lines if all_lines is not None else text.split("\n")
    shift = first_line - 1
    try:
        statements = _parser().parse(text)
    except _SemanticError as exc:
        raise AsmError(exc.message, file=file, line=exc.line + shift, col=exc.col,
                       source_line=_source(lines, exc.line + shift)) from None
    except VisitError as exc:
        inner = exc.orig_exc
        if isinstance(inner, _SemanticError):
            raise AsmError(inner.message, file=file, line=inner.line + shift, col=inner.col,
                           source_line=_source(lines, inner.line + shift)) from None
        raise AsmError(f"cannot parse: {inner}", file=file, line=first_line) from None
    except UnexpectedCharacters as exc:
        raise AsmError(f"unexpected character {exc.char!r}", file=file, line=exc.line + shift, col=exc.column,
                       source_line=_source(lines, exc.line + shift)) from None
    except UnexpectedToken as exc:
        tok = exc.token
        what = "end of line" if tok.type in ("_NL", "$END") else repr(tok.value)
        expected = _describe_expected(exc)
        msg = f"unexpected {what}" + (f"; expected {expected}" if expected else "")
        own = text.split("\n")
        line = tok.line if tok.line is not None and tok.type != "$END" else len(own)
        col = tok.column if tok.column is not None and tok.type != "$END" else len(own[-1]) + 1
        raise AsmError(msg, file=file, line=line + shift, col=col, source_line=_source(lines, line + shift)) from None
    except UnexpectedEOF as exc:
        own = text.split("\n")
        raise AsmError(f"unexpected end of input; expected {_describe_expected(exc)}", file=file,
                       line=len(own) + shift, col=len(own[-1]) + 1) from None
    except UnexpectedInput as exc:  # pragma: no cover - the subclasses above cover lark's errors
        raise AsmError(f"syntax error: {exc}", file=file, line=first_line) from None
    if shift:
        for st in statements:
            st.line += shift
    return statements


def _source(lines: list[str], line: int | None) -> str | None:
    if line is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]
