"""Pointer provenance: every global, flat and buffer access (and every scalar memory access) is checked against
the buffer its base register was derived from, so an address a kernel computes to be exactly inside ANOTHER
argument's buffer (`A + (B - A)`) faults instead of reading or writing that buffer.

memory.py already gives every buffer its own 1 TiB of address space, so no 32-bit offset form reaches from one
buffer to another; what remains is exact 64-bit arithmetic between pointers. Here each SGPR and VGPR carries a
tag: the buffer its value points into or was derived from (0: none). Roots are the values the launch puts in
SGPRs (the kernarg segment pointer, preloaded kernargs) and the dwords scalar loads bring (the argument
pointers read from the kernarg segment), each consecutive register pair whose 64-bit value lies inside a mapped
buffer tagged with it. SALU and VALU instructions pass a tag on when exactly one tag is among their register
sources (pointer + offset keeps the pointer's buffer; a difference of two pointers is an integer, with none);
every other instruction that writes registers (vector loads, LDS, MFMA) leaves them untagged. An access whose
base registers (SADDR, a 64-bit VADDR, the V#'s base dwords, SBASE) carry tag X must lie inside buffer X,
whatever its value — the C rule, as pointer provenance in the C standard's memory model (N2676 "A Provenance-
aware Memory Object Model for C").

Tags are kept per register for all waves at once, as Python lists (the cost is a few list look-ups per
instruction, not numpy work): an instruction run by only some waves that would give a register another tag
than it has marks it UNKNOWN (never checked), so waves on different paths cannot make a false fault; loads
that bring different pointers to different waves (an array of pointers) leave UNKNOWN too. Unknown and
untagged bases fall back to the plain check that the address lies in some mapped buffer.
"""

from __future__ import annotations

import numpy as np

from jitgemm.isa.instruction import Imm, Reg, SrcMods

from .registry import VECTOR_FAMILIES, family_of
from .state import SGPR_SLOTS

UNKNOWN = -1
_ALU = frozenset({"salu", "valu", "packed"})
_ROOT = frozenset({"smem"})


class Flow:
    """Which registers (keys: SGPR slot, or SGPR_SLOTS + VGPR/AGPR row) an instruction reads and writes, how
    its destinations' tags are made ("alu", "root", "clear") and its memory base's registers, if any."""

    __slots__ = ("srcs", "dsts", "kind", "base", "base_text", "lanes", "lane", "phase")

    def __init__(self, srcs: tuple[int, ...], dsts: tuple[int, ...], kind: str, base: tuple[int, ...],
                 base_text: str, lanes: str | None, lane: int | None = None, phase: int | None = None) -> None:
        self.srcs = srcs
        self.dsts = dsts
        self.kind = kind
        self.base = base
        self.base_text = base_text
        # how much of a destination VGPR a write replaces: "exec" (the lanes EXEC enables), "one" (a single lane,
        # V_WRITELANE), None (scalar destinations)
        self.lanes = lanes
        self.lane = lane      # V_READLANE/V_WRITELANE: the constant lane select (None: an SGPR selects it)
        self.phase = phase    # a scalar load: parity of its first dword in memory (pointers are 8-byte aligned)


def _keys(operands, op, width_regs: int = 0) -> tuple[int, ...]:
    """Register keys of an assembly operand (empty for constants, special sources and unmodelled registers)."""
    if isinstance(op, SrcMods):
        op = op.operand
    if not isinstance(op, Reg):
        return ()
    count = max(op.count, width_regs)
    if op.kind == "v":
        return tuple(SGPR_SLOTS + op.index + i for i in range(count))
    if op.kind == "a":
        return tuple(SGPR_SLOTS + operands.agpr_base + op.index + i for i in range(count))
    slot = operands.sgpr_slot(op)
    if slot is None:
        return ()
    return tuple(k for k in range(slot, slot + count) if k < SGPR_SLOTS)


# the lane-select instructions (CDNA3 ISA "V_READLANE_B32", "V_WRITELANE_B32")
_ONE_LANE = {"V_READLANE_B32": "lane_read", "V_WRITELANE_B32": "lane_write"}
_BASE_FIELDS = {"flat": ("SADDR", "ADDR"), "buffer": ("SRSRC",), "smem": ("SBASE",)}


def flow_of(d, operands) -> Flow | None:
    """The Flow of a decoded instruction, or None when it touches no register tags (branches, waits)."""
    if d.inst is None or d.form is None:
        return None
    fam = family_of(d.form)
    srcs: list[int] = []
    dsts: list[int] = []
    by_field = {}
    for o, op in d.operand_pairs():
        keys = _keys(operands, op)
        if o.field_name:
            by_field[o.field_name] = (op, keys)
        if o.output:
            dsts += keys
        if o.input:
            srcs += keys
    base: tuple[int, ...] = ()
    text = ""
    for name in _BASE_FIELDS.get(fam, ()):
        op, keys = by_field.get(name, (None, ()))
        if name == "ADDR" and len(keys) != 2:
            continue   # a 32-bit VGPR offset on an SADDR base, or a scratch address
        if keys:
            base, text = keys[:2], str(op)
            break
    kind = "alu" if fam in _ALU else "root" if fam in _ROOT else "clear"
    lane = phase = None
    if d.name in _ONE_LANE:
        # compilers spill SGPRs into lanes of one VGPR: that VGPR's lanes hold values of different provenance,
        # so each (VGPR, constant lane) keeps its own tag
        kind = _ONE_LANE[d.name]
        sel = by_field.get("SRC1", (None, ()))[0]
        lane = int(sel.value) & 63 if isinstance(sel, Imm) and isinstance(sel.value, int) else None
        value = by_field.get("SRC0", (None, ()))[1]
        srcs = list(value)
    if kind == "root":
        off = by_field.get("SOFFSET", by_field.get("OFFSET", (None, ())))[0]
        raw = d.modifier("offset", 0)        # an int, or an Imm when the offset is an operand of the form
        raw = raw.value if isinstance(raw, Imm) else raw
        exact = isinstance(raw, int) and (off is None or isinstance(off, Imm) and isinstance(off.value, int))
        imm = (raw or 0) + (off.value if isinstance(off, Imm) else 0) if exact else 0
        phase = (imm >> 2) & 1 if exact else None
    if not dsts and not base:
        return None
    lanes = "one" if kind == "lane_write" else "exec" if fam in VECTOR_FAMILIES else None
    return Flow(tuple(srcs), tuple(dict.fromkeys(dsts)), kind, base, text, lanes, lane, phase)


def combine(tags: list[int], keys) -> int:
    """The one tag among `keys` (0 when none or several differ; UNKNOWN when one of them is unknown)."""
    found = 0
    for k in keys:
        t = tags[k]
        if t == 0 or t == found:
            continue
        if t == UNKNOWN or found:
            return UNKNOWN if t == UNKNOWN else 0
        found = t
    return found


class Provenance:
    """The tags of one launch and the checks against them (see the module docstring)."""

    def __init__(self, mem, st, flows: dict) -> None:
        self.mem = mem
        self.st = st
        self.flows = flows        # pc -> Flow (Program.flows)
        self.tags = [0] * (SGPR_SLOTS + st.v.shape[1])
        self.starts = [s.address for s in mem.segments]
        self.sizes = [s.size for s in mem.segments]
        self.held = False         # strict mode's random schedules hold load results back: no root tags then
        self._live = None         # waves `w` of the current step, to tell whether they are every live wave
        self.exec0 = st.exec64(slice(None)).copy()   # each wave's work-items
        self.lane_tags: dict[tuple[int, int], int] = {}   # (VGPR key, lane) -> tag, from V_WRITELANE

    def _set(self, key: int, tag: int, full: bool, lanes: str | None = None, w=None) -> None:
        tags = self.tags
        if tags[key] == tag:
            return
        if not full and self._live is not None:   # some waves ran: do they include every wave still running?
            g, done = self._live
            full = g == int((self.st.status != done).sum())
            self._live = None if not full else self._live
        if full and lanes is not None and key >= SGPR_SLOTS:   # a VGPR: did the write replace every lane?
            full = lanes == "exec" and self._all_lanes(w)
        tags[key] = tag if full else UNKNOWN

    def _all_lanes(self, w) -> bool:
        """Whether EXEC enables, in waves `w`, every lane the launch started them with."""
        ex = self.st.exec64(w)
        return bool(((ex & self.exec0[w]) == self.exec0[w]).all())

    def root(self, values: np.ndarray, keys, full: bool, phase: int | None = 0) -> None:
        """Tag registers `keys` from their values (G, len(keys)) uint32 just written: each pair of registers that
        holds an 8-byte-aligned dword pair of memory (`phase`: the parity of the first register's dword; None:
        any pair) and whose 64-bit value lies in a mapped buffer for every wave gets that buffer; the rest
        become untagged."""
        n = len(keys)
        new = [0] * n
        if values.size and n > 1:
            v = values.astype(np.uint64)
            pairs = v[:, :-1] | (v[:, 1:] << np.uint64(32))       # (G, n-1): the pair starting at each register
            idx = np.searchsorted(np.asarray(self.starts, np.uint64), pairs, side="right").astype(np.int64) - 1
            ok = idx >= 0
            ic = np.maximum(idx, 0)
            ok &= pairs < np.asarray(self.starts, np.uint64)[ic] + np.asarray(self.sizes, np.uint64)[ic]
            i = 0 if phase is None else phase
            while i < n - 1:
                col_ok, col = ok[:, i], idx[:, i]
                if col_ok.any():
                    tag = int(col[0]) + 1 if col_ok.all() and (col == col[0]).all() else UNKNOWN
                    new[i] = new[i + 1] = tag
                    i += 2
                    continue
                i += 1 if phase is None else 2
        for k, t in zip(keys, new, strict=True):
            self._set(k, t, full)

    def after(self, flow: Flow, st, w, g: int, done: int) -> None:
        """Give the destinations of an instruction just run by the `g` waves `w` their tags (`done`: the status
        of waves that ended, which need no tags)."""
        full = g == st.count
        self._live = None if full else (g, done)
        kind = flow.kind
        if self.lane_tags and kind != "lane_write":   # a VGPR written as a whole: its lanes' tags are gone
            for k in flow.dsts:
                if k >= SGPR_SLOTS:
                    for key in [key for key in self.lane_tags if key[0] == k]:
                        del self.lane_tags[key]
        if kind == "alu":
            tag = combine(self.tags, flow.srcs)
            for k in flow.dsts:
                self._set(k, tag, full, flow.lanes, w)
        elif kind == "root":
            keys = [k for k in flow.dsts if k < SGPR_SLOTS]
            if self.held:
                for k in keys:
                    self._set(k, UNKNOWN, True)
            elif keys:
                self.root(st.s[w][:, keys], keys, full, flow.phase)
        elif kind == "lane_write":
            tag = combine(self.tags, flow.srcs)
            for k in flow.dsts:
                if flow.lane is not None:
                    old = self.lane_tags.get((k, flow.lane), 0)
                    if not self._whole(full):
                        tag = tag if old == tag else UNKNOWN
                    self.lane_tags[(k, flow.lane)] = tag
                self._set(k, tag, full, flow.lanes, w)    # the register as a whole: mixed lanes, unknown
        elif kind == "lane_read":
            tag = UNKNOWN
            if flow.lane is not None and flow.srcs:
                tag = self.lane_tags.get((flow.srcs[0], flow.lane), combine(self.tags, flow.srcs))
            for k in flow.dsts:
                self._set(k, tag, full)
        else:
            for k in flow.dsts:
                self._set(k, 0, full, flow.lanes, w)

    def _whole(self, full: bool) -> bool:
        """Whether the current step's waves are every wave still running."""
        if full or self._live is None:
            return full
        g, done = self._live
        return g == int((self.st.status != done).sum())

    def check(self, ctx, d, w, addr: np.ndarray, lanes: np.ndarray, nbytes: int) -> None:
        """Fault when lanes of the access at `d` leave the buffer its base registers were derived from. `addr`
        and `lanes` are (G, 64) (or broadcastable); `nbytes` the access width."""
        flow = self.flows.get(d.pc)
        if flow is None or not flow.base:
            return
        tag = combine(self.tags, flow.base)
        if tag <= 0:
            return
        start, size = self.starts[tag - 1], self.sizes[tag - 1]
        off = np.asarray(addr, np.uint64) - np.uint64(start)   # wraps below the buffer: a huge offset
        bad = lanes & (off > np.uint64(max(size - nbytes, 0))) if size >= nbytes else np.broadcast_to(lanes, off.shape)
        if not bad.any():
            return
        from .semantics.memory_access import memory_fault

        seg = self.mem.segments[tag - 1]
        memory_fault(ctx, d, f"access outside the buffer its address was derived from: the base {flow.base_text} "
                     f"holds a pointer computed from {seg.name}", addr, w, bad,
                     lambda a: f"{self.mem.describe(a)}, not in {seg.name} (pointer provenance)")
