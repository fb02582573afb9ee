"""Assembler expressions of `.s` files: numbers, symbols, label arithmetic and relocation specifiers.

The syntax and operator precedence are LLVM MC's for ELF targets (AsmParser::getBinOpPrecedence, GNU
flavour): `||` lowest, then `&&`, then comparisons, then `+ -`, then `| ^ & !`, and `* / % << >>` highest;
unary `- ~ + !`; `.` is the current location. A symbol may carry an AMDGPU relocation specifier
(`sym@rel32@lo`, `sym@gotpcrel32@hi`, `sym@abs32@lo`; AMDGPUUsage "Relocation Records"), which survives
evaluation so the caller can emit the matching R_AMDGPU_* relocation.

An expression is parsed once into a small tree and evaluated against a symbol lookup, giving a `Value`:
a constant, or a symbol plus a constant (relocatable), or an error when the operation cannot be
expressed in an object file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Relocation specifiers LLVM's AMDGPU assembler accepts after a symbol (AMDGPUMCExpr / AMDGPUAsmParser).
SPECIFIERS = ("gotpcrel32@lo", "gotpcrel32@hi", "gotpcrel", "rel32@lo", "rel32@hi", "rel32", "rel64",
              "abs32@lo", "abs32@hi", "abs64")

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)
    | (?P<chr>'(?:\\.|[^'\\])')
    | (?P<sym>[A-Za-z_.$][A-Za-z0-9_.$]*(?:@[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?)?|"[^"]+")
    | (?P<op>\|\||&&|==|!=|<>|<=|>=|<<|>>|[-+*/%|^&!~<>()=,])
    )""", re.X)

_BINARY = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<>": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "+": 4, "-": 4,
    "|": 5, "^": 5, "&": 5, "!": 5,
    "*": 6, "/": 6, "%": 6, "<<": 6, ">>": 6,
}


class ExprSyntaxError(ValueError):
    """Text that is not an expression; `col` is the 0-based offset of the problem in the text."""

    def __init__(self, message: str, col: int) -> None:
        super().__init__(message)
        self.col = col


class ExprValueError(ValueError):
    """An expression that is well formed but cannot be evaluated to what the caller needs."""


@dataclass(frozen=True, slots=True)
class Num:
    value: int


@dataclass(frozen=True, slots=True)
class Sym:
    name: str
    specifier: str | None = None  # "rel32@lo", ... (lowercase)


@dataclass(frozen=True, slots=True)
class Dot:
    """`.`: the location of the statement being assembled."""


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    arg: Node


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Call:
    """AMDGPU MC expression functions LLVM 22 prints in compiler output (`max(a, b)`, `or(a, b)`)."""

    name: str
    args: tuple[Node, ...]


Node = Num | Sym | Dot | Unary | Binary | Call
_CALLS = {"max": max, "or": lambda *a: int(any(a)), "min": min}


@dataclass(frozen=True, slots=True)
class Value:
    """A constant, or `symbol + constant` (with an optional relocation specifier), or the difference of two
    symbols whose distance is not known yet."""

    const: int = 0
    symbol: str | None = None
    minus: str | None = None
    specifier: str | None = None

    @property
    def absolute(self) -> bool:
        return self.symbol is None and self.minus is None


# A lookup gives a symbol's value: a Value (absolute or relative to a label), or None when undefined.
Lookup = Callable[[str], "Value | None"]


def tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, offset) tokens of an expression; stops at the first character that cannot start one."""
    out = []
    pos = 0
    while True:
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def end_offset(self) -> int:
        if self.i < len(self.toks):
            return self.toks[self.i][2]
        if not self.toks:
            return 0
        kind, text, off = self.toks[-1]
        return off + len(text)

    def primary(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise ExprSyntaxError("expected an expression", len(self.text))
        kind, text, off = tok
        self.i += 1
        if kind == "num":
            return Num(int(text, 0) if not (len(text) > 1 and text[0] == "0" and text[1].isdigit()) else int(text, 8))
        if kind == "chr":
            body = text[1:-1]
            return Num(ord(body.encode().decode("unicode_escape")) if body.startswith("\\") else ord(body))
        if kind == "sym":
            if text == ".":
                return Dot()
            name, _, spec = text.partition("@")
            if name.startswith('"'):
                name = name[1:-1]
            nxt = self.peek()
            if not spec and name.lower() in _CALLS and nxt is not None and nxt[1] == "(":
                self.i += 1
                args = [self.expr(0)]
                while self.peek() is not None and self.peek()[1] == ",":
                    self.i += 1
                    args.append(self.expr(0))
                self.expect(")")
                return Call(name.lower(), tuple(args))
            if spec and spec.lower() not in SPECIFIERS:
                raise ExprSyntaxError(f"unknown relocation specifier @{spec} (accepted: "
                                      f"{', '.join('@' + s for s in SPECIFIERS)})", off + len(name))
            return Sym(name, spec.lower() or None)
        if text == "(":
            node = self.expr(0)
            self.expect(")")
            return node
        if text in ("-", "~", "+", "!"):
            return Unary(text, self.primary())
        raise ExprSyntaxError(f"unexpected {text!r} in expression", off)

    def expect(self, what: str) -> None:
        tok = self.peek()
        if tok is None or tok[1] != what:
            raise ExprSyntaxError(f"expected '{what}' in expression", tok[2] if tok else len(self.text))
        self.i += 1

    def expr(self, min_prec: int) -> Node:
        left = self.primary()
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "op" or tok[1] not in _BINARY:
                return left
            prec = _BINARY[tok[1]]
            if prec <= min_prec:
                return left
            self.i += 1
            right = self.expr(prec)
            left = Binary(tok[1], left, right)


def parse_prefix(text: str) -> tuple[Node, int]:
    """The expression at the start of `text` and the offset where it ends (the rest may be modifiers)."""
    p = _Parser(text)
    node = p.expr(0)
    return node, p.end_offset()


def parse_expr(text: str) -> Node:
    """The whole of `text` as one expression (ExprSyntaxError otherwise)."""
    node, end = parse_prefix(text)
    if text[end:].strip():
        raise ExprSyntaxError(f"unexpected {text[end:].strip()[:20]!r} after expression", end)
    return node


def symbols_of(node: Node) -> list[str]:
    """Names the expression refers to."""
    if isinstance(node, Sym):
        return [node.name]
    if isinstance(node, Unary):
        return symbols_of(node.arg)
    if isinstance(node, Binary):
        return symbols_of(node.left) + symbols_of(node.right)
    if isinstance(node, Call):
        return [n for a in node.args for n in symbols_of(a)]
    return []


def has_operator(node: Node) -> bool:
    return not isinstance(node, Num | Sym)


_ARITH: dict[str, Callable[[int, int], int]] = {
    "*": lambda a, b: a * b, "%": lambda a, b: a - b * int(a / b), "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
    "!": lambda a, b: a | ~b, "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b)),
    # LLVM MC comparisons give -1 for true (MCBinaryExpr evaluation) as GNU as does
    "==": lambda a, b: -int(a == b), "!=": lambda a, b: -int(a != b), "<>": lambda a, b: -int(a != b),
    "<": lambda a, b: -int(a < b), "<=": lambda a, b: -int(a <= b), ">": lambda a, b: -int(a > b),
    ">=": lambda a, b: -int(a >= b),
}


def evaluate(node: Node, lookup: Lookup, dot: Value | None = None) -> Value:
    """Fold the expression; symbols come from `lookup` (None: undefined, kept as a relocatable symbol)."""
    if isinstance(node, Num):
        return Value(node.value)
    if isinstance(node, Sym):
        v = lookup(node.name)
        if v is None:
            return Value(0, node.name, specifier=node.specifier)
        if node.specifier:
            if not v.absolute and v.minus is None:
                return Value(v.const, v.symbol, specifier=node.specifier)
            if v.absolute:
                return Value(v.const, node.name, specifier=node.specifier)
            raise ExprValueError(f"@{node.specifier} needs a symbol, not a difference")
        return v
    if isinstance(node, Dot):
        if dot is None:
            raise ExprValueError("'.' (the current location) is not available here")
        return dot
    if isinstance(node, Unary):
        v = evaluate(node.arg, lookup, dot)
        if node.op == "+":
            return v
        if not v.absolute:
            raise ExprValueError(f"unary {node.op!r} of a relocatable value")
        return Value({"-": -v.const, "~": ~v.const, "!": int(not v.const)}[node.op])
    if isinstance(node, Call):
        vals = [evaluate(a, lookup, dot) for a in node.args]
        if not all(v.absolute for v in vals):
            raise ExprValueError(f"{node.name}(...) of a relocatable value")
        return Value(int(_CALLS[node.name](*(v.const for v in vals))))
    a = evaluate(node.left, lookup, dot)
    b = evaluate(node.right, lookup, dot)
    op = node.op
    if op == "+":
        if a.absolute:
            return Value(a.const + b.const, b.symbol, b.minus, b.specifier)
        if b.absolute:
            return Value(a.const + b.const, a.symbol, a.minus, a.specifier)
        if a.minus is None and b.minus is not None and b.symbol is None:
            return Value(a.const + b.const, a.symbol, b.minus, a.specifier)
        raise ExprValueError("the sum of two relocatable values")
    if op == "-":
        if b.absolute:
            return Value(a.const - b.const, a.symbol, a.minus, a.specifier)
        if b.minus is None and a.minus is None and not b.specifier:
            if a.symbol == b.symbol:
                return Value(a.const - b.const, None, None, a.specifier)
            return Value(a.const - b.const, a.symbol, b.symbol, a.specifier)
        raise ExprValueError("this difference of relocatable values")
    if not (a.absolute and b.absolute):
        raise ExprValueError(f"operator {op!r} needs absolute values (known constants), got a symbol's address")
    if op in ("/", "%") and b.const == 0:
        raise ExprValueError("division by zero")
    if op == "/":
        q = abs(a.const) // abs(b.const)
        return Value(q if (a.const >= 0) == (b.const >= 0) else -q)
    return Value(_ARITH[op](a.const, b.const))
