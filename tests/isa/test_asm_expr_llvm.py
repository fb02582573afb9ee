"""Expression evaluation is llvm-mc's MCExpr: 64-bit two's-complement integers, logical `>>`, truncating `/` and
`%` on 64-bit values, shift counts modulo 64, comparisons giving -1. Checked operator by operator on random
operands (negative, INT64_MIN/MAX, huge unsigned) against llvm-mc-22's own folding (`.quad EXPR` printed back),
and through the whole assembler (`.quad`, `.set`, instruction operands) against llvm-mc's bytes.
Before: `-16>>60` gave -1 (llvm-mc 15) and `4611686018427387903 % 10` went through floating point.
"""

from __future__ import annotations

import random
import re
import subprocess

import pytest
from jitgemm.isa.asm import expressions as X

from tests.fixtures.expr_fuzz import expression
from tests.fixtures.oracles import require_tool


def llvm_fold(lines: list[str], tmp_path) -> list[int | None]:
    """llvm-mc-22's value of each expression (None where it leaves it unfolded: a division by zero)."""
    mc = require_tool("llvm-mc")
    src = tmp_path / "e.s"
    src.write_text("".join(f".quad {line}\n" for line in lines))
    run = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", str(src)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and not run.stderr, run.stderr[:2000]
    out = [line.split("\t", 2)[-1] for line in run.stdout.splitlines() if line.strip().startswith(".quad")]
    assert len(out) == len(lines)
    return [int(v) if re.fullmatch(r"-?\d+", v) else None for v in out]


def ours(text: str) -> int | None:
    try:
        return X.evaluate(X.parse_expr(text), lambda name: None).const
    except X.ExprValueError as exc:
        if "overflows" in str(exc):
            raise
        return None


def _overflows(text: str) -> bool:
    try:
        ours(text)
    except X.ExprValueError:
        return True
    return False


def test_random_expressions_fold_as_llvm_mc(tmp_path):
    rng = random.Random(2027)
    lines = []
    while len(lines) < 1500:
        text = expression(rng)
        if not _overflows(text):   # INT64_MIN / -1 crashes llvm-mc-22 (SIGFPE); ours refuses it
            lines.append(text)
    theirs = llvm_fold(lines, tmp_path)
    bad = [(t, ours(t), v) for t, v in zip(lines, theirs, strict=True) if ours(t) != v]
    assert not bad, f"{len(bad)} of {len(lines)} differ, e.g. {bad[:5]}"


@pytest.mark.parametrize("text, value", [
    ("-16>>60", 15), ("4611686018427387903 % 10", 3), ("1<<64", 1), ("1<<-1", -(1 << 63)), ("-7 % 3", -1),
    ("-7/2", -3), ("3 < -1", 0), ("1<<63>>63", 1), ("18446744073709551615", -1), ("5 ! 3", -3), ("or(0, 2)", 2),
    ("max(-1, 1)", 1), ("-(3)", -3), ("~0x7", -8), ("!1", 0), ("(" * 3000 + "1" + ")" * 3000, 1),
    ("1+" * 30000 + "1", 30001), ("-" * 5000 + "1", 1),
], ids=lambda v: str(v)[:24] if isinstance(v, str) else None)
def test_known_values(text, value):
    assert ours(text) == value


def test_errors_instead_of_tracebacks():
    with pytest.raises(X.ExprValueError, match="overflows"):
        ours("(-9223372036854775807-1)/-1")
    with pytest.raises(X.ExprSyntaxError, match="does not fit in 64 bits"):
        X.parse_expr("18446744073709551616")
    assert ours("5/0") is None and ours("5%0") is None


def test_set_and_operands_use_the_same_arithmetic(tmp_path):
    from jitgemm.isa.asm.file import assemble_file
    from jitgemm.isa.spec.sources import load_spec

    body = "".join(f".set x{i}, {e}\ns_mov_b32 s0, x{i}\ns_mov_b32 s1, {e}\n" for i, e in enumerate(
        ["-16>>60", "4611686018427387903 % 10", "1<<64", "-7 % 3", "~0x7 + 100", "(-1) >> 33"]))
    text = '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\n' + body
    mc = require_tool("llvm-mc")
    src = tmp_path / "o.s"
    src.write_text(text)
    run = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding", str(src)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    theirs = b"".join(bytes(int(b, 16) for b in m.group(1).split(","))
                      for m in re.finditer(r"encoding: \[([0-9a-fx,]+)\]", run.stdout))
    obj = assemble_file(text, load_spec("gfx942"), file="o.s")
    mine = obj.sections[".text"].data
    assert len(theirs) == 64 and mine == theirs   # two literals (0x5c, 0x7fffffff)
