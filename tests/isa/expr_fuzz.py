"""Random assembler expressions for the differential tests against llvm-mc-22 (tests/isa/test_asm_expr_llvm.py,
bench/fuzz_hostile.py): every operator of LLVM MC's GNU-flavour grammar, unary and binary, on operands chosen
to hit the edges of 64-bit arithmetic (negative, INT64_MIN/MAX, shift counts around 64, huge unsigned)."""

from __future__ import annotations

import random

BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "|", "^", "&", "!", "&&", "||", "==", "!=", "<>", "<", "<=", ">",
          ">="]
UNARY = ["-", "~", "!", "+"]
EDGES = [0, 1, 2, 3, 7, 10, 15, 16, 31, 32, 33, 60, 63, 64, 65, 127, 255, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
         1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 4611686018427387903, 0x123456789ABCDEF0]


def operand(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        value = rng.choice(EDGES)
    elif r < 0.75:
        value = rng.randrange(-1000, 1000)
    else:
        value = rng.getrandbits(rng.choice([8, 16, 32, 63, 64]))
    if value < 0:
        return f"-{-value}" if rng.random() < 0.5 else f"(-{-value})"
    return hex(value) if rng.random() < 0.4 else str(value)


def expression(rng: random.Random, depth: int = 0) -> str:
    """A random expression: a chain of operands and binary operators, each operand possibly a parenthesized
    sub-expression or under unary operators."""
    parts = []
    for i in range(rng.randint(1, 3 if depth else 4)):
        if i:
            parts.append(f" {rng.choice(BINARY)} ")
        if depth < 2 and rng.random() < 0.3:
            term = f"({expression(rng, depth + 1)})"
        else:
            term = operand(rng)
        while rng.random() < 0.2:
            term = rng.choice(UNARY) + (term if term[0] not in "-+!~" else f"({term})")
        parts.append(term)
    return "".join(parts)
