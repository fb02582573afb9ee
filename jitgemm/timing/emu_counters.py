"""Counters from the lanes' real addresses: the emulator runs one workgroup of a kernel at small scale (one macro
tile, two and four main-loop iterations of K) and every LDS access and vector-memory access is seen with its
lanes' addresses; the difference of the two runs, halved, is one loop iteration:

- LDS bank conflicts: per wave and instruction, the dwords its lanes touch are spread over the profile's
  `lds_banks` banks (4 bytes wide); the instruction takes as many bank cycles as its busiest bank serves distinct
  dwords, against total dwords / banks without conflicts; the excess is the conflict count (cycles);
- global transactions: the distinct 64-byte segments each wave instruction's lanes touch (a lane's access may span
  two), against the bytes it moves.

The timing model takes them when asked (`predict(..., measured=emu_counters(...))`, `jitgemm profile --emulate`):
the loop's L2-to-CU bytes become transactions x 64 and its LDS time grows by the conflict cycles. Only kernels the
emulator can launch with numpy operands (ours; not MX or scaled operations here) are measured; the selector does
not emulate (it would cost seconds a candidate), so its ranking uses the static trace.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np

_LOCK = threading.Lock()


@dataclass(frozen=True)
class EmuCounters:
    """One main-loop iteration of one workgroup, measured (see the module docstring)."""

    lds_accesses: float               # wave-level LDS instructions
    lds_bank_cycles: float            # bank cycles they take (the busiest bank per instruction)
    lds_conflict_cycles: float        # of them, beyond the conflict-free count
    global_accesses: float            # wave-level vector-memory instructions
    global_transactions: float        # distinct 64-byte segments they touch
    global_bytes: float               # bytes their lanes move

    @property
    def lds_conflict_factor(self) -> float:
        ideal = self.lds_bank_cycles - self.lds_conflict_cycles
        return self.lds_bank_cycles / ideal if ideal > 0 else 1.0


class _Recorder:
    def __init__(self, banks: int) -> None:
        self.banks = banks
        self.lds = [0, 0, 0]          # accesses, bank cycles, conflict cycles
        self.glob = [0, 0, 0]         # accesses, transactions, bytes
        self._prev: tuple | None = None
        self._segs: list[set] = []

    def on_lds(self, sel, offsets: np.ndarray, nbytes: int) -> None:
        waves = np.asarray(sel[0])
        offs = np.asarray(offsets, np.int64)
        words = max(1, nbytes // 4)
        for wave in np.unique(waves):
            o = offs[waves == wave]
            dwords = np.unique((o[:, None] // 4 + np.arange(words)[None, :]).ravel())
            per_bank = np.bincount(dwords % self.banks, minlength=self.banks)
            ideal = -(-len(dwords) // self.banks)
            self.lds[0] += 1
            self.lds[1] += int(per_bank.max())
            self.lds[2] += int(per_bank.max()) - ideal

    def on_global(self, addr: np.ndarray, nbytes: int) -> None:
        """One check of a vector-memory access; a multi-dword access is checked a dword at a time (addresses + 4,
        + 8, ...), so a call continuing the previous one adds its segments to the same instruction."""
        a = np.asarray(addr).astype(np.int64)
        rows = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
        prev = self._prev
        if prev is not None and prev[0].shape == rows.shape and np.array_equal(rows, prev[0] + prev[1]):
            self._prev = (prev[0], prev[1] + max(1, nbytes))
            segs = self._segs
        else:
            self._prev = (rows, max(1, nbytes))
            segs = self._segs = [set() for _ in rows]
            self.glob[0] += len(rows)
        for row, seen in zip(rows, segs, strict=True):
            first, last = row // 64, (row + max(1, nbytes) - 1) // 64
            new = set(np.unique(np.concatenate([first, last])).tolist()) - seen
            seen |= new
            self.glob[1] += len(new)
            self.glob[2] += len(row) * nbytes


def _run_once(kernel, k: int, banks: int) -> _Recorder:
    """Run one macro tile of `kernel` (a compiled jitgemm Kernel) with K = `k` in the emulator, recording."""
    from jitgemm.api import launch, prepare
    from jitgemm.emu import engine, memory

    p = kernel.problem
    tile = kernel.contract["tile"] if isinstance(kernel.contract, dict) else kernel.contract.data["tile"]
    m, n = int(tile["m"]), int(tile["n"])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(p.a.numpy)
    b = rng.standard_normal((k, n)).astype(p.b.numpy)
    if p.layout[0] == "T":
        a = np.ascontiguousarray(a.T).T
    if p.layout[1] == "T":
        b = np.ascontiguousarray(b.T).T
    call = prepare(a, b, out_dtype=p.d.numpy)
    rec = _Recorder(banks)
    lds_orig, valid_orig = engine.Context.lds_offsets, memory.GlobalMemory.valid

    def lds_offsets(self, w, sel, addr, nbytes, d):
        out = lds_orig(self, w, sel, addr, nbytes, d)
        rec.on_lds(sel, out, nbytes)
        return out

    def valid(self, addr, size, *, write=False):
        if np.asarray(addr).size > 1:   # vector memory (a scalar load is one address)
            rec.on_global(addr, size)
        return valid_orig(self, addr, size, write=write)

    contract = kernel.contract if not isinstance(kernel.contract, dict) else None
    if contract is None:
        from jitgemm.contract import Contract

        contract = Contract(kernel.contract)
    with _LOCK:
        engine.Context.lds_offsets, memory.GlobalMemory.valid = lds_offsets, valid
        try:
            launch(call, kernel.code_object, kernel.name, contract, backend="emu")
        finally:
            engine.Context.lds_offsets, memory.GlobalMemory.valid = lds_orig, valid_orig
    return rec


@functools.lru_cache(maxsize=64)
def _measure(key: str, kernel_ref: tuple) -> EmuCounters:
    kernel, k_iter, banks = kernel_ref[0], kernel_ref[1], kernel_ref[2]
    two, four = _run_once(kernel, 2 * k_iter, banks), _run_once(kernel, 4 * k_iter, banks)
    d_lds = [(y - x) / 2 for x, y in zip(two.lds, four.lds, strict=True)]
    d_glob = [(y - x) / 2 for x, y in zip(two.glob, four.glob, strict=True)]
    return EmuCounters(*d_lds, *d_glob)


class _Ref(tuple):
    """A tuple hashed by its key only (the kernel object itself is not hashable)."""

    def __hash__(self) -> int:
        return hash(self[3])

    def __eq__(self, other) -> bool:
        return isinstance(other, tuple) and len(other) == 4 and self[3] == other[3]


def emu_counters(kernel) -> EmuCounters:
    """Measured per-iteration counters of a compiled jitgemm Kernel (cached per code object)."""
    import hashlib

    from jitgemm import isa

    from .model import kernel_facts, params
    from .trace import trace

    facts = kernel_facts(kernel)
    profile = isa.target_profile(facts.target)
    tr = trace(facts.code, facts.target, {"vmem": params(profile).vmem_latency_passes})
    k_iter = max(1, round(tr.loop.mfma_flops * facts.waves / (2 * facts.tile_m * facts.tile_n)))
    key = hashlib.sha256(kernel.code_object).hexdigest()
    return _measure(key, _Ref((kernel, k_iter, profile.lds_banks or 32, key)))
