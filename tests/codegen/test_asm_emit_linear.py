"""The emitter's per-register indexes (issue 31) decide exactly as re-deriving the waits and s_nops from everything
emitted so far does: random straight-line programs (vector/LDS/scalar loads, stores, VALU, transcendental, MFMA,
AGPR moves, readfirstlane, explicit waits) through `Emitter` and through a reference that scans its whole history
for every instruction must give the same code. Also: the kept hazard history stays within the horizon however
long the program (what makes emission linear)."""

from __future__ import annotations

import random

import pytest
from jitgemm.codegen.asm_emit import Emitter
from jitgemm.isa.hazards import SALU, emit_facts, hazard_rule, reg_keys
from jitgemm.isa.instruction import AsmInstruction, Counters, Imm, a, s, v

from jitgemm import isa

ARCHS = ("gfx942", "gfx950")


class Reference:
    """Waits and s_nops re-derived from the whole history for each instruction (the quadratic definition)."""

    def __init__(self, facts, hazards) -> None:
        self.facts = facts
        self.rules = [r for r in (hazard_rule(h) for h in hazards) if r.emitter]
        self.code: list = []
        self.pending: dict[str, list[tuple[set, bool]]] = {"vmcnt": [], "lgkmcnt": []}
        self.history: list[tuple[frozenset, set, int]] = []      # every instruction: classes, written, covers

    def _wait_for(self, keys: set) -> None:
        parts = []
        for counter, queue in self.pending.items():
            hits = [i for i, (regs, _) in enumerate(queue) if regs & keys]
            if not hits:
                continue
            if counter == "lgkmcnt" and any(sc for _, sc in queue):
                allowed = 0
                del queue[:]
            else:
                allowed = len(queue) - 1 - hits[-1]
                del queue[: hits[-1] + 1]
            parts.append((counter, min(allowed, self.facts.max_count[counter])))
        if parts:
            self.code.append(AsmInstruction("s_waitcnt", (Counters(tuple(parts)),)))

    def _needed(self, cls, read: set, written: set) -> int:
        need = 0
        for r in self.rules:
            if r.reader not in cls:
                continue
            keys = read if r.access == "read" else written
            if r.regs == "vgpr":
                keys = {k for k in keys if k[0] in ("v", "a")}
            elif r.regs == "sgpr":
                keys = {k for k in keys if k[0] not in ("v", "a")}
            elif r.regs == "hwreg":
                keys = set()
            elapsed = 0
            for wcls, wrote, covers in reversed(self.history):
                if r.writer in wcls and wrote & keys:
                    need = max(need, r.wait_states - elapsed)
                    break
                elapsed += covers
        return need

    def emit(self, name: str, *operands, **modifiers) -> None:
        written = set().union(*(reg_keys(operands[i]) for i in self.facts.written(name, len(operands))))
        read = set().union(*(reg_keys(o) for o in operands))
        if read | written:
            self._wait_for(read | written)
        cls = self.facts.hazard_classes(name)
        need = self._needed(cls, read, written)
        while need > 0:
            n = min(need, 8)
            self.code.append(AsmInstruction("s_nop", (Imm(n - 1),)))
            self.history.append((SALU, set(), n))
            need -= n
        mods = tuple((k, val) for k, val in modifiers.items() if val is not False and val is not None)
        ops = tuple(Imm(o, hex=o not in self.facts.inline_ints) if isinstance(o, int) else o for o in operands)
        self.code.append(AsmInstruction(name, ops, mods))
        self.history.append((cls, written, 1))
        for counter in self.facts.counters(name):
            self.pending[counter].append((written, self.facts.scalar_memory(name)))

    def wait(self, *, vmcnt: int) -> None:
        queue = self.pending["vmcnt"]
        if len(queue) > vmcnt:
            del queue[: len(queue) - vmcnt]
            self.code.append(AsmInstruction("s_waitcnt", (Counters((("vmcnt", vmcnt),)),)))


def _program(rng: random.Random, n: int) -> list[tuple]:
    """A random straight-line program over a few registers (so waits and hazards are frequent)."""
    out = []
    for _ in range(n):
        x, y, d = rng.randrange(8), rng.randrange(8), rng.randrange(8)
        kind = rng.randrange(11)
        if kind == 0:
            out.append(("buffer_load_dword", v(d), v(20 + x % 2), s(8, 11), 0, {"offen": True}))
        elif kind == 1:
            out.append(("buffer_store_dword", v(x), v(20), s(8, 11), 0, {"offen": True}))
        elif kind == 2:
            out.append(("ds_read_b32", v(d), v(20 + y % 2), {}))
        elif kind == 3:
            out.append(("s_load_dword", s(30 + d), s(0, 1), 4 * x, {}))
        elif kind == 4:
            out.append(("v_add_u32", v(d), v(x), v(y), {}))
        elif kind == 5:
            out.append(("v_exp_f32", v(d), v(x), {}))
        elif kind == 6:
            out.append(("v_mfma_f32_16x16x16_bf16", a(0, 3), v(2 * (x % 4), 2 * (x % 4) + 1),
                        v(2 * (y % 4), 2 * (y % 4) + 1), a(0, 3), {}))
        elif kind == 7:
            out.append(("v_accvgpr_read_b32", v(d), a(x % 4), {}))
        elif kind == 8:
            out.append(("v_readfirstlane_b32", s(30 + d), v(x), {}))
        elif kind == 9:
            out.append(("v_add_u32", v(d), s(30 + x), v(y), {}))
        else:
            out.append(("wait", rng.randrange(3)))
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", range(6))
def test_indexed_emitter_matches_the_scan_everything_reference(arch, seed):
    profile = isa.target_profile(arch)
    facts = emit_facts(isa.load_spec(arch), profile)
    rng = random.Random(1000 * seed + len(arch))
    e, ref = Emitter(facts, profile.hazards), Reference(facts, profile.hazards)
    for item in _program(rng, 400):
        if item[0] == "wait":
            e.wait(vmcnt=item[1])
            ref.wait(vmcnt=item[1])
            continue
        name, *ops, mods = item
        e.emit(name, *ops, **mods)
        ref.emit(name, *ops, **mods)
    got, want = [str(i) for i in e.code], [str(i) for i in ref.code]
    assert got == want
    assert any(t.startswith("s_nop") for t in got) and any(t.startswith("s_waitcnt") for t in got)


def test_kept_history_is_bounded_by_the_horizon():
    """However long the program, the emitter keeps only the latest instructions spanning its largest hazard
    distance (plus one), and the counters' index holds one entry per register, not per instruction."""
    profile = isa.target_profile("gfx942")
    e = Emitter(emit_facts(isa.load_spec("gfx942"), profile), profile.hazards)
    for i in range(3000):
        e.emit("buffer_load_dword", v(i % 8), v(20), s(8, 11), 0, offen=True)
        e.emit("v_add_u32", v(10 + i % 8), v((i + 3) % 8), v(9))
    assert len(e._recent) <= e._horizon + 1
    assert len(e._queues["vmcnt"].youngest) == 8
