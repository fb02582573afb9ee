"""The register state of every wave of a launch, as numpy arrays over waves (and lanes).

All waves of the grid live in one set of arrays so an instruction runs for a whole group of waves (those at
the same PC) in one numpy operation: SGPRs (W, 128) uint32 with VCC, M0 and EXEC at their operand-encoding
slots, VGPRs and AGPRs (W, regs, 64) uint32 (AGPRs after the VGPRs), SCC (W,) bool, PC (W,) int64.
"""

from __future__ import annotations

import numpy as np

from jitgemm.isa.spec.mfma import WAVE64 as WAVE  # the one owner of the wave size (gfx9 targets are wave64 only)

SGPR_SLOTS = 128
LANE_BITS = np.uint64(1) << np.arange(WAVE, dtype=np.uint64)
LANE_INDEX = np.arange(WAVE, dtype=np.uint32)

RUNNING, AT_BARRIER, DONE = 0, 1, 2


class Waves:
    """Register files of all waves; `w` arguments are an index array or slice selecting waves."""

    def __init__(self, count: int, vgprs: int, agprs: int, slots: dict[str, int]) -> None:
        self.count = count
        self.s = np.zeros((count, SGPR_SLOTS), np.uint32)
        self.s64 = self.s.view(np.uint64)  # (W, 64): even-aligned SGPR pairs
        self.vgprs = vgprs
        self.v = np.zeros((count, vgprs + agprs, WAVE), np.uint32)
        self.scc = np.zeros(count, np.bool_)
        self.pc = np.zeros(count, np.int64)
        self.status = np.full(count, RUNNING, np.int8)
        self.workgroup = np.zeros(count, np.int64)  # linear workgroup index
        self.wave_in_group = np.zeros(count, np.int64)
        # modes that change how vector instructions run (CDNA3 ISA, S_SETVSKIP and S_SET_GPR_IDX_ON):
        # VSKIP skips them; GPR indexing adds M0[7:0] to the VGPR operands M0[15:12] enables
        self.vskip = np.zeros(count, np.bool_)
        self.gpr_idx = np.zeros(count, np.bool_)
        self.slots = slots  # named register -> SGPR slot (vcc_lo, exec_lo, m0, ...)
        self.exec_slot = slots["exec_lo"]
        self.vcc_slot = slots["vcc_lo"]
        self.m0_slot = slots["m0"]

    # --- EXEC / lane masks ---------------------------------------------------------------------
    def exec64(self, w) -> np.ndarray:
        return self.s64[w, self.exec_slot // 2]

    def set_exec64(self, w, value: np.ndarray) -> None:
        self.s64[w, self.exec_slot // 2] = value

    def exec_lanes(self, w) -> np.ndarray:
        """(G, 64) bool: the lanes EXEC enables."""
        return (self.exec64(w)[:, None] & LANE_BITS) != 0


def lanes_of(mask64: np.ndarray) -> np.ndarray:
    """(G,) uint64 lane masks -> (G, 64) bool."""
    return (np.asarray(mask64, np.uint64)[..., None] & LANE_BITS) != 0


def mask_of(lanes: np.ndarray) -> np.ndarray:
    """(G, 64) bool -> (G,) uint64 lane masks."""
    packed = np.packbits(np.ascontiguousarray(lanes, np.bool_), axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8")[..., 0]


class Active:
    """The enabled lanes of a (G, 64) group, as `np.nonzero` lists them (`sel`: wave and lane indices, in C
    order). When every lane is enabled, `pick` and `put` use flat views instead of gathering and scattering
    through `sel`: the same elements in the same order, without the index arrays' cost."""

    __slots__ = ("sel", "full", "count")

    def __init__(self, lanes: np.ndarray) -> None:
        self.sel = np.nonzero(lanes)
        self.count = len(self.sel[0])
        self.full = self.count == lanes.size

    def pick(self, x: np.ndarray) -> np.ndarray:
        """x[sel] for a (G, 64, ...) array."""
        x = np.asarray(x)
        return x.reshape((self.count,) + x.shape[2:]) if self.full else x[self.sel]

    def put(self, out: np.ndarray, values, *index) -> None:
        """out[sel + index] = values for a (G, 64, ...) array `out` (contiguous)."""
        if self.full:
            out.reshape((self.count,) + out.shape[2:])[(slice(None),) + index] = values
        else:
            out[self.sel + index] = values
