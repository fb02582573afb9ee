"""Which kernarg bytes a kernel reads: while `kernarg_reads()` is active, every scalar load (s_load_*,
s_buffer_load_*) whose address falls in, or runs past, the launch's kernarg segment is recorded with its PC,
byte offset into the segment and width. The address is what the load computes, so reads through copies of the
kernarg pointer (s_mov of s[0:1], a V# built from it) count the same. jitgemm.abi_proof compares the record
with a kernel's contract."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

PRELOAD_PC = -1   # the pc of the reads the descriptor's kernarg preload makes (before the first instruction)


@dataclass(frozen=True)
class KernargRead:
    pc: int          # byte offset of the load in the kernel's code (PRELOAD_PC: preloaded into SGPRs)
    offset: int      # first byte read, relative to the kernarg segment
    width: int       # bytes read
    text: str        # the instruction


_active = threading.local()


@contextlib.contextmanager
def kernarg_reads(reuse: bool = False) -> Iterator[list[KernargRead]]:
    """Record the kernarg reads of the launches made inside the block (distinct (pc, offset, width)); with
    `reuse`, into the enclosing block's record when there is one."""
    previous = getattr(_active, "reads", None)
    reads: list[KernargRead] = previous if reuse and previous is not None else []
    _active.reads = reads
    try:
        yield reads
    finally:
        _active.reads = previous


def attach(mem, address: int, size: int) -> None:
    """Called by the engine once the kernarg segment is mapped at `address` (`size` bytes)."""
    reads = getattr(_active, "reads", None)
    mem.kernarg_reads = reads
    if reads is None:
        mem.read_hook = None
        return
    seen: set[tuple[int, int, int]] = {(r.pc, r.offset, r.width) for r in reads}
    # reads past the segment end are recorded too (up to 64 KiB on: a kernel reading that far is reported)
    limit = address + size + (1 << 16)

    def hook(pc: int, text: str, addr: np.ndarray, width: int) -> None:
        for a in np.unique(np.asarray(addr, np.uint64)):
            a = int(a)
            if address <= a < limit:
                key = (pc, a - address, width)
                if key not in seen:
                    seen.add(key)
                    reads.append(KernargRead(pc, a - address, width, text))

    mem.read_hook = hook


def preloaded(mem, offset: int, width: int) -> None:
    """Called by the engine when the descriptor preloads kernarg bytes into SGPRs (a read of them all)."""
    reads = getattr(mem, "kernarg_reads", None)
    if reads is not None and not any(r.pc == PRELOAD_PC and r.offset == offset for r in reads):
        reads.append(KernargRead(PRELOAD_PC, offset, width, "kernarg preload (kernel descriptor)"))
