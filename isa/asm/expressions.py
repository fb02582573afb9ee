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

import functools
import operator
import re
from collections.abc import Callable, Iterator
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
# AMDGPU MC functions (AMDGPUMCExpr: `or` is a bitwise or, `max` a signed maximum, as llvm-mc-22 evaluates them:
# `or(0, 2)` = 2, `max(-1, 1)` = 1; llvm-mc has no `min`)
_CALLS = {"max": max, "or": lambda *a: functools.reduce(operator.or_, a, 0)}

MASK64 = (1 << 64) - 1


def wrap64(value: int) -> int:
    """`value` as LLVM MC holds it: a two's-complement int64 (MCExpr evaluates in int64_t)."""
    return ((value + (1 << 63)) & MASK64) - (1 << 63)


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
    """Operator precedence parsing with explicit stacks instead of recursion, so nesting depth and the length
    of an operator chain are limited by memory only (llvm-mc takes 500 nested parentheses; a recursive parser
    raised RecursionError there)."""

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

    def _leaf(self, kind: str, text: str, off: int) -> Node:
        if kind == "num":
            try:
                value = int(text, 0) if not (len(text) > 1 and text[0] == "0" and text[1].isdigit()) \
                    else int(text, 8)
            except ValueError:   # `012345678`: a leading 0 makes it octal, and 8 is no octal digit
                raise ExprSyntaxError(f"invalid number {text!r} (a leading 0 means octal: digits 0-7)", off) from None
            if value > MASK64:
                raise ExprSyntaxError(f"integer {text} does not fit in 64 bits", off)
            return Num(wrap64(value))
        if kind == "chr":
            body = text[1:-1]
            return Num(ord(body.encode().decode("unicode_escape")) if body.startswith("\\") else ord(body))
        if text == ".":
            return Dot()
        name, _, spec = text.partition("@")
        if name.startswith('"'):
            name = name[1:-1]
        if spec and spec.lower() not in SPECIFIERS:
            raise ExprSyntaxError(f"unknown relocation specifier @{spec} (accepted: "
                                  f"{', '.join('@' + s for s in SPECIFIERS)})", off + len(name))
        return Sym(name, spec.lower() or None)

    def expr(self, min_prec: int = 0) -> Node:
        """The longest expression at the current token (binary operators binding tighter than `min_prec`)."""
        # frames: ["(", off] | ["call", name, args, off]; ops: (prec, op) binary or (None, op) unary, per frame
        operands: list[Node] = []
        ops: list[tuple[int | None, str]] = []
        frames: list[list] = []
        marks: list[tuple[int, int]] = []  # (len(operands), len(ops)) when each frame opened

        def reduce_to(prec: int) -> None:
            base = marks[-1][1] if marks else 0
            while len(ops) > base and ops[-1][0] is not None and ops[-1][0] >= prec:
                _, op = ops.pop()
                right = operands.pop()
                operands.append(Binary(op, operands.pop(), right))

        def close_unaries() -> None:
            base = marks[-1][1] if marks else 0
            while len(ops) > base and ops[-1][0] is None:
                operands.append(Unary(ops.pop()[1], operands.pop()))

        floor = min_prec
        while True:   # expecting an operand
            tok = self.peek()
            if tok is None:
                raise ExprSyntaxError("expected an expression", len(self.text))
            kind, text, off = tok
            self.i += 1
            if kind in ("num", "chr", "sym"):
                nxt = self.peek()
                name = text.partition("@")[0]
                if kind == "sym" and "@" not in text and name.lower() in _CALLS and nxt is not None \
                        and nxt[1] == "(":
                    self.i += 1
                    frames.append(["call", name.lower(), [], off])
                    marks.append((len(operands), len(ops)))
                    continue
                operands.append(self._leaf(kind, text, off))
            elif text == "(":
                frames.append(["(", off])
                marks.append((len(operands), len(ops)))
                continue
            elif text in ("-", "~", "+", "!"):
                ops.append((None, text))
                continue
            else:
                raise ExprSyntaxError(f"unexpected {text!r} in expression", off)
            # an operand is complete: apply its unary operators, then read operators and closings
            close_unaries()
            while True:
                tok = self.peek()
                if tok is not None and tok[0] == "op" and tok[1] in _BINARY \
                        and (frames or _BINARY[tok[1]] > floor):
                    prec = _BINARY[tok[1]]
                    reduce_to(prec)
                    ops.append((prec, tok[1]))
                    self.i += 1
                    break   # expect the right operand
                if tok is not None and frames and tok[1] in (")", ","):
                    reduce_to(0)
                    frame = frames[-1]
                    if tok[1] == "," and frame[0] != "call":
                        raise ExprSyntaxError("expected ')' in expression", tok[2])
                    self.i += 1
                    if tok[1] == ",":
                        frame[2].append(operands.pop())
                        break   # expect the next argument
                    frames.pop()
                    marks.pop()
                    if frame[0] == "call":
                        operands.append(Call(frame[1], tuple(frame[2] + [operands.pop()])))
                    close_unaries()
                    continue
                if frames:
                    raise ExprSyntaxError("expected ')' in expression", tok[2] if tok else len(self.text))
                reduce_to(0)
                return operands.pop()


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


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children (iterative: trees may be deeper than Python's
    recursion limit)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, Unary):
            stack.append(n.arg)
        elif isinstance(n, Binary):
            stack.append(n.right)
            stack.append(n.left)
        elif isinstance(n, Call):
            stack.extend(reversed(n.args))


def needs_pcrel(node: Node) -> bool:
    """Whether llvm-mc gives an instruction operand written as `node` a PC-relative fixup (R_AMDGPU_REL32 for a
    plain symbol): a symbol without @abs32@lo/@hi anywhere outside a subtraction. As needsPCRel() in LLVM's
    llvm/lib/Target/AMDGPU/MCTargetDesc/AMDGPUMCCodeEmitter.cpp (llvm/llvm-project 00ce9bb): `sym`, `sym+4`,
    `4+sym` are PC-relative, `sym-8` and `sym@abs32@lo` absolute (checked with llvm-readelf-22 -r on llvm-mc-22's
    object, tests/isa/test_asm_relocations.py). Iterative: any depth."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Sym):
            if n.specifier not in ("abs32@lo", "abs32@hi"):
                return True
        elif isinstance(n, Dot):
            return True   # `.` is a temporary label: a symbol reference
        elif isinstance(n, Binary):
            if n.op != "-":
                stack += (n.left, n.right)
        elif isinstance(n, Unary):
            stack.append(n.arg)
    return False


def symbols_of(node: Node) -> list[str]:
    """Names the expression refers to."""
    return [n.name for n in walk(node) if isinstance(n, Sym)]


def has_operator(node: Node) -> bool:
    return not isinstance(node, Num | Sym)


def replace_dot(node: Node, name: str) -> Node:
    """The tree with every `.` replaced by the symbol `name` (rebuilt bottom-up, without recursion)."""
    if not any(isinstance(n, Dot) for n in walk(node)):
        return node
    done: dict[int, Node] = {}
    for n in reversed(list(walk(node))):   # children before parents
        if isinstance(n, Dot):
            done[id(n)] = Sym(name)
        elif isinstance(n, Unary):
            done[id(n)] = Unary(n.op, done[id(n.arg)])
        elif isinstance(n, Binary):
            done[id(n)] = Binary(n.op, done[id(n.left)], done[id(n.right)])
        elif isinstance(n, Call):
            done[id(n)] = Call(n.name, tuple(done[id(a)] for a in n.args))
        else:
            done[id(n)] = n
    return done[id(node)]


def _div(a: int, b: int) -> int:
    """int64_t division as C does it (truncating); INT64_MIN / -1, which crashes llvm-mc-22 with SIGFPE, and
    division by zero, which it refuses, are errors."""
    if b == 0:
        raise ExprValueError("division by zero")
    if a == -(1 << 63) and b == -1:
        raise ExprValueError("division overflows 64 bits (-9223372036854775808 / -1)")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# MCExpr's binary operators over int64_t (llvm/lib/MC/MCExpr.cpp, evaluateAsRelocatableImpl): shifts by the
# count modulo 64 as x86's shl/shr do for llvm-mc-22 (`1<<64` is 1, `1<<-1` is INT64_MIN), `>>` logical (AsmParser
# uses LShr: MCAsmInfo::shouldUseLogicalShr), comparisons -1 for true, `&&`/`||` 1 for true, `!` is or-not.
_ARITH: dict[str, Callable[[int, int], int]] = {
    "*": lambda a, b: a * b, "/": _div, "%": lambda a, b: a - b * _div(a, b),
    "<<": lambda a, b: a << (b & 63), ">>": lambda a, b: (a & MASK64) >> (b & 63),
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
    "!": lambda a, b: a | ~b, "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b)),
    "==": lambda a, b: -int(a == b), "!=": lambda a, b: -int(a != b), "<>": lambda a, b: -int(a != b),
    "<": lambda a, b: -int(a < b), "<=": lambda a, b: -int(a <= b), ">": lambda a, b: -int(a > b),
    ">=": lambda a, b: -int(a >= b),
}


def evaluate(node: Node, lookup: Lookup, dot: Value | None = None) -> Value:
    """Fold the expression as llvm-mc's MCExpr does, in 64-bit two's complement; symbols come from `lookup`
    (None: undefined, kept as a relocatable symbol). Iterative: any depth."""
    values: dict[int, Value] = {}
    for n in reversed(list(walk(node))):   # children before parents
        values[id(n)] = _fold(n, values, lookup, dot)
    return values[id(node)]


def _fold(node: Node, values: dict[int, Value], lookup: Lookup, dot: Value | None) -> Value:
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
        v = values[id(node.arg)]
        if node.op == "+":
            return v
        if not v.absolute:
            raise ExprValueError(f"unary {node.op!r} of a relocatable value")
        return Value(wrap64({"-": -v.const, "~": ~v.const, "!": int(not v.const)}[node.op]))
    if isinstance(node, Call):
        vals = [values[id(a)] for a in node.args]
        if not all(v.absolute for v in vals):
            raise ExprValueError(f"{node.name}(...) of a relocatable value")
        return Value(wrap64(int(_CALLS[node.name](*(v.const for v in vals)))))
    a = values[id(node.left)]
    b = values[id(node.right)]
    op = node.op
    if op == "+":
        if a.absolute:
            return Value(wrap64(a.const + b.const), b.symbol, b.minus, b.specifier)
        if b.absolute:
            return Value(wrap64(a.const + b.const), a.symbol, a.minus, a.specifier)
        if a.minus is None and b.minus is not None and b.symbol is None:
            return Value(wrap64(a.const + b.const), a.symbol, b.minus, a.specifier)
        raise ExprValueError("the sum of two relocatable values")
    if op == "-":
        if b.absolute:
            return Value(wrap64(a.const - b.const), a.symbol, a.minus, a.specifier)
        if b.minus is None and a.minus is None and not b.specifier:
            if a.symbol == b.symbol:
                return Value(wrap64(a.const - b.const), None, None, a.specifier)
            return Value(wrap64(a.const - b.const), a.symbol, b.symbol, a.specifier)
        raise ExprValueError("this difference of relocatable values")
    if not (a.absolute and b.absolute):
        raise ExprValueError(f"operator {op!r} needs absolute values (known constants), got a symbol's address")
    return Value(wrap64(_ARITH[op](a.const, b.const)))
