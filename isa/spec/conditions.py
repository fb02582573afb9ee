"""Encoding-condition expressions of the MR-ISA schema, as trees that can be evaluated.

The spec says when an encoding applies with a small expression language (`<op type="==">`,
`.fieldderef`, `.notwithin`, `.cons_array`, `<lit>`, `<id>`, `<ty>`). The assembler evaluates these to
choose a literal/DPP/SDWA variant and the decoder to tell them apart, so they are kept as data and
evaluated over a mapping of field name -> value instead of being turned into hand-written rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jitgemm.isa.errors import IsaError


class ExprError(IsaError):
    """An expression that uses an operator or a field this evaluator cannot resolve."""


@dataclass(frozen=True, slots=True)
class ExprType:
    """A `<ty><t base=.. size=../></ty>` annotation: base letter (I, U, F, ...) and bit size."""

    base: str
    size: int


@dataclass(frozen=True, slots=True)
class Lit:
    value: int


@dataclass(frozen=True, slots=True)
class Id:
    name: str


@dataclass(frozen=True, slots=True)
class Op:
    """An operator node; `args` are the operand sub-expressions in document order."""

    kind: str
    args: tuple[Expr, ...]
    type: ExprType | None = None


Expr = Lit | Id | Op


def _as_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    raise ExprError(f"expected an integer value, got {value!r}")


def _fieldderef(node: Op, fields: Mapping[str, int]) -> int:
    # `.fieldderef(.fieldderef(INST, SOP2), SSRC0)`: the last identifier names the field; the
    # prefix names the instruction word it lives in, which is always the one being encoded here.
    last = node.args[-1]
    if not isinstance(last, Id):
        raise ExprError(".fieldderef whose last operand is not an identifier")
    try:
        return fields[last.name]
    except KeyError:
        raise ExprError(f"condition refers to field {last.name!r}, which has no value here") from None


def _cons_array(node: Op, fields: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(_as_int(evaluate(a, fields)) for a in node.args)


_BINARY: dict[str, Callable[[int, int], int]] = {
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
}


def evaluate(expr: Expr, fields: Mapping[str, int]) -> int | tuple[int, ...]:
    """Evaluate `expr` with the given field values; booleans come back as 0/1."""
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Id):
        if expr.name in fields:
            return fields[expr.name]
        raise ExprError(f"identifier {expr.name!r} has no value")
    kind = expr.kind
    if kind == ".fieldderef":
        return _fieldderef(expr, fields)
    if kind == ".cons_array":
        return _cons_array(expr, fields)
    if kind in (".within", ".notwithin"):
        value = _as_int(evaluate(expr.args[0], fields))
        pool = evaluate(expr.args[1], fields)
        members = pool if isinstance(pool, tuple) else (pool,)
        inside = value in members
        return int(inside if kind == ".within" else not inside)
    if kind == "&&":
        return int(all(_as_int(evaluate(a, fields)) for a in expr.args))
    if kind == "||":
        return int(any(_as_int(evaluate(a, fields)) for a in expr.args))
    if kind == "!":
        return int(not _as_int(evaluate(expr.args[0], fields)))
    if kind in _BINARY and len(expr.args) == 2:
        return _BINARY[kind](_as_int(evaluate(expr.args[0], fields)), _as_int(evaluate(expr.args[1], fields)))
    raise ExprError(f"operator {kind!r} is not understood by the condition evaluator")


def holds(expr: Expr | None, fields: Mapping[str, int]) -> bool:
    """True when the condition holds; an empty condition (seen in real files) always holds."""
    if expr is None:
        return True
    return bool(_as_int(evaluate(expr, fields)))


def referenced_fields(expr: Expr | None) -> frozenset[str]:
    """Names of the fields a condition reads, so callers know what they must supply."""
    if expr is None:
        return frozenset()
    if isinstance(expr, Op):
        if expr.kind == ".fieldderef" and isinstance(expr.args[-1], Id):
            return frozenset((expr.args[-1].name,))
        out: frozenset[str] = frozenset()
        for a in expr.args:
            out |= referenced_fields(a)
        return out
    return frozenset()


def to_text(expr: Expr | None) -> str:
    """A compact human-readable form, for `jitgemm spec show`."""
    if expr is None:
        return "(always)"
    if isinstance(expr, Lit):
        return str(expr.value)
    if isinstance(expr, Id):
        return expr.name
    if expr.kind == ".fieldderef":
        return ".".join(to_text(a) for a in expr.args)
    if expr.kind == ".cons_array":
        return "[" + ", ".join(to_text(a) for a in expr.args) + "]"
    if expr.kind in (".within", ".notwithin"):
        word = "in" if expr.kind == ".within" else "not in"
        return f"{to_text(expr.args[0])} {word} {to_text(expr.args[1])}"
    if len(expr.args) == 2:
        return f"({to_text(expr.args[0])} {expr.kind} {to_text(expr.args[1])})"
    return f"{expr.kind}(" + ", ".join(to_text(a) for a in expr.args) + ")"


def to_data(expr: Expr | None) -> object:
    """Plain, msgpack-able form (lists and scalars) for the parsed-spec cache."""
    if expr is None:
        return None
    if isinstance(expr, Lit):
        return ["lit", expr.value]
    if isinstance(expr, Id):
        return ["id", expr.name]
    ty = [expr.type.base, expr.type.size] if expr.type else None
    return ["op", expr.kind, [to_data(a) for a in expr.args], ty]


def from_data(data: object) -> Expr | None:
    if data is None:
        return None
    if not isinstance(data, list) or not data:
        raise ExprError(f"malformed expression data {data!r}")
    tag = data[0]
    if tag == "lit":
        return Lit(int(data[1]))
    if tag == "id":
        return Id(str(data[1]))
    if tag == "op":
        ty = ExprType(data[3][0], int(data[3][1])) if data[3] else None
        return Op(str(data[1]), tuple(from_data(a) for a in data[2]), ty)  # type: ignore[misc]
    raise ExprError(f"malformed expression data {data!r}")
