"""What an emulation will need in memory, checked against what the machine has before anything is allocated.

A 65536^2 problem in the emulator needs tens of GiB (operands, the emulator's copy of every buffer, the float64
reference, the register files of every wave). Allocating blindly ends in a MemoryError traceback after minutes,
or in the kernel's OOM killer; saying "needs 48.0 GiB, 7.5 GiB available" up front lets the user pick a size.
"""

from __future__ import annotations

import math
import os

# Upper bound of one wave's register file as the emulator holds it: 512 VGPRs + AGPRs x 64 lanes x 4 bytes, plus
# SGPRs and bookkeeping (see jitgemm/emu/state.py).
WAVE_STATE_BYTES = 512 * 64 * 4 + 4096


class OutOfMemory(MemoryError):
    """The work would need more memory than is available; says how much of each. A MemoryError, so an API caller
    that handles running out of memory handles being told in advance too."""


def gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 28 else f"{n / (1 << 20):.1f} MiB"


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), else free physical pages;
    None when the platform says neither."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(need: int, what: str, available: int | None = None) -> None:
    """Raise OutOfMemory when `need` bytes exceed what is available (unknown availability passes)."""
    have = available_bytes() if available is None else available
    if have is not None and need > have:
        raise OutOfMemory(f"{what} needs about {gib(need)} of memory; {gib(have)} is available. Choose smaller "
                          f"sizes (the emulator holds every buffer twice, plus each wave's registers)")


def emulation_bytes(buffer_bytes: int, waves: int) -> int:
    """Memory an emulator launch needs: the caller's buffers, the emulator's flat copy of them, and the register
    state of every wave."""
    return 2 * buffer_bytes + waves * WAVE_STATE_BYTES


def gemm_run_bytes(problem, tile_m: int, tile_n: int, waves_per_group: int) -> int:
    """Memory `jitgemm run` needs for a problem in the emulator: A, B, C, D, bias in their dtypes, the emulator's
    copy and wave state, and the float64 reference (A and B converted, and the m x n result)."""
    p = problem
    elems_a, elems_b, elems_mn = p.batch * p.m * p.k, p.batch * p.k * p.n, p.batch * p.m * p.n
    buffers = (p.a.storage_bytes(elems_a) + p.b.storage_bytes(elems_b) + elems_mn * p.d.bytes
               + (elems_mn * p.c.bytes if p.c is not None else 0))
    groups = math.ceil(p.m / tile_m) * math.ceil(p.n / tile_n) * p.batch
    reference = 8 * (elems_a + elems_b + 2 * elems_mn)
    return emulation_bytes(buffers, groups * waves_per_group) + reference
