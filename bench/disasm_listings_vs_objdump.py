"""Whole listings of seeded random 8-byte samples, ours beside llvm-objdump-22 (issue 27): a sample is equal when
every row (offset, text, size; `.long` rows compared as `.long`) is. Differences are counted by the first row that
differs: "llvm .long, we decode" (LLVM rejects the word: the classes still open, per encoding), "we .long, llvm
decodes", misaligned offsets. Samples LLVM marks invalid are counted apart.

    python3 bench/disasm_listings_vs_objdump.py [SPEC] [SAMPLES] [SEED]     (defaults gfx942 6000 27)

SPEC gfx942 or gfx950 also sets llvm-objdump's --mcpu (the samples are drawn from gfx942's forms on both). Measured
(LLVM 22.1, this seed): gfx942 4,952 -> 5,704 of 5,708 listings equal, gfx950 4,899 -> 5,704 (issue 27).
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.forms import forms_of
    from jitgemm.isa.spec.targets import target_profile

    from jitgemm import isa
    from tests.fixtures.oracles import find_tool
    from tests.isa.test_disasm_llvm_random import _LLVM_INVALID, _listed, samples

    spec_arg = sys.argv[1] if len(sys.argv) > 1 else "gfx942"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 6000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 27
    mc, objdump = find_tool("llvm-mc"), find_tool("llvm-objdump")
    if mc is None or objdump is None:
        print("llvm-mc-22 / llvm-objdump-22 are not installed: nothing to compare against")
        return 1
    spec = isa.load_spec(spec_arg)
    forms = forms_of(spec)
    mcpu = spec_arg if spec_arg in ("gfx942", "gfx950") else "gfx942"   # objdump decodes for the spec's target
    unprinted = target_profile(mcpu).unprinted_modifiers
    data = samples(forms_of(isa.load_spec("gfx942")), n, seed)
    stats: collections.Counter = collections.Counter()
    classes: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, n, 3000):
            for sample, rows in _listed(data[start:start + 3000], Path(tmp), mc, objdump, [], mcpu):
                stats["samples"] += 1
                ours = {}
                for d in decode(sample, forms):
                    if d.instruction is None:
                        for k in range(0, d.size, 4):
                            ours[d.offset + k] = (".long", 4, d)
                    else:
                        text = format_instruction(d.instruction, unprinted.get(d.encoding, frozenset()))
                        ours[d.offset] = (" ".join(text.split()), d.size, d)
                theirs = [(o, ".long" if t.startswith(".long") else t, s) for o, t, s in rows]
                if any(_LLVM_INVALID.search(t) for _o, t, _s in theirs):
                    stats["llvm marks invalid"] += 1
                    continue
                if [(o, t, s) for o, t, s in theirs] == [(o, t, s) for o, (t, s, _d) in sorted(ours.items())]:
                    stats["equal"] += 1
                    continue
                stats["differ"] += 1
                for o, t, s in theirs:
                    mine = ours.get(o)
                    if mine is None:
                        classes["offsets misaligned"] += 1
                    elif mine[:2] == (t, s):
                        continue
                    elif t == ".long" and mine[0] != ".long":
                        classes[f"llvm .long, we decode ({mine[2].encoding})"] += 1
                    elif t != ".long" and mine[0] == ".long":
                        classes["we .long, llvm decodes"] += 1
                    else:
                        classes["text differs"] += 1
                    break
                else:
                    classes["extra rows"] += 1
    print(f"{spec_arg} (llvm-objdump-22 --mcpu={mcpu}): {stats['samples']} samples, {stats['equal']} listings equal "
          f"({stats['equal'] / max(1, stats['samples'] - stats['llvm marks invalid']):.1%} of those LLVM does not "
          f"mark invalid), {stats['differ']} differ, {stats['llvm marks invalid']} marked invalid by LLVM")
    for kind, count in classes.most_common():
        print(f"  {count:6d}  {kind}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
