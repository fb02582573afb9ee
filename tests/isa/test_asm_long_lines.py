"""The assembler is linear in line length: a 50 KB line took 36-67 s (llvm-mc-22: 0.02 s) and a 100 KB one
ignored SIGALRM, because the fast path split operands with lookahead regexes that rescanned the rest of the line
at every comma or space. Each hostile line below runs in a child process that is killed after 120 s (a hang guard,
not a timing assertion: the quadratic code needed many minutes for these)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LINES = {
    "trailing spaces": "s_mov_b32 s0, s1" + " " * 100_000,
    "many operands": "s_mov_b32 s0, " + "a," * 50_000,
    "long comment": "s_nop 0 // " + "x" * 100_000,
    "long sum": "s_mov_b32 s0, " + "1+" * 20_000 + "1",
    "deep parentheses": "s_mov_b32 s0, " + "(" * 5_000 + "1" + ")" * 5_000,
    "spaces between operands": "v_add_u32 v0," + " " * 50_000 + "v1," + " " * 50_000 + "v2",
}

CHILD = """
import json, sys
from jitgemm.codegen.codeobj.relocatable import assemble_source
out = {}
for name, line in json.loads(sys.stdin.read()).items():
    try:
        assemble_source('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\\n.text\\n' + line + "\\n", file="x.s")
        out[name] = "ok"
    except Exception as exc:
        out[name] = type(exc).__name__ + ": " + str(exc).split("\\n")[0][:200]
print(json.dumps(out))
"""


def test_long_lines_assemble_or_fail_cleanly_without_hanging():
    run = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(LINES), capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["trailing spaces"] == out["long comment"] == out["long sum"] == "ok", out
    assert out["deep parentheses"] == out["spaces between operands"] == "ok", out
    assert out["many operands"].startswith("AsmFileErrors: x.s:3:"), out   # a trailing comma: an error
