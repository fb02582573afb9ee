"""The spec's encoding fields and encoding conditions, compiled for speed.

A `FieldCodec` packs and unpacks one field (split ranges, implied low bits, signedness read from the
spec), and `compile_condition` turns an encoding condition into a Python predicate, so the assembler and
the decoder spend no time walking expression trees per instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import conditions as _expr
from .model import BitField


class Mismatch(Exception):
    """This form cannot hold the instruction; `operand`/`modifier` say where, `rank` how far it got."""

    def __init__(self, message: str, operand: int | None = None, modifier: str | None = None,
                 rank: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.operand = operand
        self.modifier = modifier
        self.rank = rank

# --- fields -------------------------------------------------------------------------------------------

_SIGNED_WORD = re.compile(r"\bsigned\b", re.IGNORECASE)


def field_is_signed(field: BitField) -> bool:
    """Signedness from the spec: the field's Signedness, else its description ("13-bit signed offset")."""
    if field.signedness:
        return field.signedness.lower().startswith("signed")
    return bool(_SIGNED_WORD.search(field.description or ""))


class FieldCodec:
    """Fast pack/unpack of one encoding field (possibly split, possibly with implied low bits)."""

    __slots__ = ("name", "width", "signed", "simple", "mask", "offset", "field", "desc")

    def __init__(self, field: BitField, encoding_name: str) -> None:
        self.field = field
        self.name = field.name
        self.width = field.width
        self.signed = field_is_signed(field)
        r = field.ranges
        self.simple = len(r) == 1 and not r[0].padding_count
        self.mask = (1 << r[0].count) - 1 if r else 0
        self.offset = r[0].offset if r else 0
        self.desc = f"field {field.name} of {encoding_name} ({self.width} bits {field.layout_text})"

    def pack(self, value: int) -> int:
        if value >> self.width or value < 0:
            raise Mismatch(f"value {value} does not fit {self.desc}")
        if self.simple:
            return value << self.offset
        problem = self.field.check(value)
        if problem:
            raise Mismatch(problem)
        return self.field.insert(0, value)

    def unpack(self, word: int) -> int:
        if self.simple:
            return (word >> self.offset) & self.mask
        return self.field.extract(word)

    def range_text(self) -> str:
        if self.signed:
            return f"{-(1 << (self.width - 1))}..{(1 << (self.width - 1)) - 1}"
        return f"0..{(1 << self.width) - 1}"

    def pack_int(self, value: int, what: str) -> int:
        """Pack a user-written integer, honouring the field's signedness; errors name field and width."""
        w = self.width
        if self.signed:
            if not -(1 << (w - 1)) <= value < (1 << (w - 1)):
                raise Mismatch(f"{what} {value} is out of range of {self.desc}: {self.range_text()}")
            value &= (1 << w) - 1
        elif not 0 <= value < (1 << w):
            raise Mismatch(f"{what} {value} is out of range of {self.desc}: {self.range_text()}")
        return self.pack(value)

    def unpack_int(self, word: int) -> int:
        v = self.unpack(word)
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v


# --- conditions ---------------------------------------------------------------------------------------

_CMP = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "+": "+", "-": "-", "&": "&",
        "|": "|", "^": "^", "<<": "<<", ">>": ">>"}


def _expr_source(e: _expr.Expr, fixed: dict | None = None) -> str:
    fixed = fixed or {}
    if isinstance(e, _expr.Lit):
        return repr(int(e.value))
    if isinstance(e, _expr.Id):
        return f"f.get({e.name!r}, {int(fixed.get(e.name, 0))!r})"
    kind = e.kind
    if kind == ".fieldderef":
        last = e.args[-1]
        if not isinstance(last, _expr.Id):
            raise _expr.ExprError(".fieldderef whose last operand is not an identifier")
        return f"f.get({last.name!r}, {int(fixed.get(last.name, 0))!r})"
    if kind == ".cons_array":
        return "(" + "".join(_expr_source(a, fixed) + ", " for a in e.args) + ")"
    if kind in (".within", ".notwithin"):
        op = "in" if kind == ".within" else "not in"
        return f"({_expr_source(e.args[0], fixed)} {op} {_expr_source(e.args[1], fixed)})"
    if kind == "&&":
        return "(" + " and ".join(_expr_source(a, fixed) for a in e.args) + ")"
    if kind == "||":
        return "(" + " or ".join(_expr_source(a, fixed) for a in e.args) + ")"
    if kind == "!":
        return f"(not {_expr_source(e.args[0], fixed)})"
    if kind in _CMP and len(e.args) == 2:
        return f"({_expr_source(e.args[0], fixed)} {_CMP[kind]} {_expr_source(e.args[1], fixed)})"
    raise _expr.ExprError(f"operator {kind!r} is not understood")


def compile_condition(e: _expr.Expr | None, fixed: dict | None = None) -> Callable[[dict], bool]:
    """A Python predicate over field values for an encoding condition (a missing field takes its value
    from `fixed`, else 0).

    The source is generated from the expression tree only (integers and field names), never from text.
    """
    if e is None:
        return lambda f: True
    try:
        src = _expr_source(e, fixed)
    except _expr.ExprError:
        return lambda f: _expr.holds(e, _DefaultZero({**(fixed or {}), **f}))
    return eval(f"lambda f: ({src})", {"__builtins__": {}})  # noqa: S307 - generated from the tree


class _DefaultZero(dict):
    def __missing__(self, key):
        return 0


def condition_equalities(e: _expr.Expr | None) -> dict[str, int]:
    """Field values a condition requires (`SRC0 == 250` inside a conjunction), i.e. what an encoder
    must write so the condition holds."""
    out: dict[str, int] = {}
    if e is None or not isinstance(e, _expr.Op):
        return out
    if e.kind == "&&":
        for a in e.args:
            out.update(condition_equalities(a))
    elif e.kind == "==" and len(e.args) == 2:
        lhs, rhs = e.args
        if isinstance(rhs, _expr.Op) and rhs.kind == ".fieldderef":
            lhs, rhs = rhs, lhs
        if isinstance(lhs, _expr.Op) and lhs.kind == ".fieldderef" and isinstance(rhs, _expr.Lit) \
                and isinstance(lhs.args[-1], _expr.Id):
            out[lhs.args[-1].name] = int(rhs.value)
    return out

def signed_to_field(codec: FieldCodec, value: int, what: str) -> int:
    w = codec.width
    if codec.signed:
        if not -(1 << (w - 1)) <= value < (1 << (w - 1)):
            raise Mismatch(f"{what} {value} is out of range of {codec.desc}: {codec.range_text()}")
        return value & ((1 << w) - 1)
    if not 0 <= value < (1 << w):
        raise Mismatch(f"{what} {value} is out of range of {codec.desc}: {codec.range_text()}")
    return value


def field_mask(field: BitField) -> int:
    mask = 0
    for r in field.ranges:
        mask |= ((1 << r.count) - 1) << r.offset
    return mask
