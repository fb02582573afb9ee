"""Operands of decoded instructions as readers and writers of the register state.

A decoded instruction carries its operands in assembly terms (`isa.instruction.Reg`/`Imm`/`SrcMods`, in
syntax order). Each becomes a small object that reads the operand's bits for a group of waves (shape (G,)
for scalar values, (G, 64) for per-lane values, with a trailing register axis for multi-register
operands) or writes them back (VGPR writes only on lanes EXEC enables). Named registers find their SGPR slot
from the spec's operand-type values (VCC_LO = 106, M0 = 124, ...), so nothing here is a hand table of
encodings.
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np

from jitgemm.isa.instruction import Imm, Label, Off, Reg, SrcMods
from jitgemm.isa.spec.model import Spec

from .errors import EmulatorError
from .state import LANE_BITS, WAVE, Waves

# The apertures through which flat addresses reach LDS and scratch (the high 32 bits of a 64-bit flat
# address; what `src_shared_base` / `src_private_base` read). Chosen far above the global buffers.
SHARED_APERTURE_HI = 0x10000
PRIVATE_APERTURE_HI = 0x20000
INV_2PI = 1.0 / (2.0 * math.pi)

_PAIRS = {"vcc": "vcc_lo", "exec": "exec_lo", "flat_scratch": "flat_scratch_lo", "xnack_mask": "xnack_mask_lo"}


def register_slots(spec: Spec) -> dict[str, int]:
    """SGPR slots of the named registers, from the spec's OPR_SSRC/OPR_SRC predefined values."""
    slots: dict[str, int] = {}
    for type_name in ("OPR_SSRC", "OPR_SRC", "OPR_SDST", "OPR_SREG"):
        ot = spec.operand_types.get(type_name)
        if ot is None:
            continue
        for name, value, _ in ot.raw_values:
            low = name.lower()
            if value < 128 and not re.fullmatch(r"(s|v|acc)\d+", low) and low not in slots:
                slots[low] = value
    for key in ("vcc_lo", "exec_lo", "m0"):
        if key not in slots:  # a spec without these register names cannot run SALU code at all
            raise EmulatorError(f"the spec defines no SGPR slot for {key}; cannot emulate")
    return slots


def _float_bits(value: float, bits: int) -> int:
    if value == float("0.15915494"):
        value = INV_2PI
    if bits == 16:
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if bits == 64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return struct.unpack("<I", struct.pack("<f", value))[0]


def constant_bits(value: int | float, width: int, float_bits: int) -> int:
    """Bits of an immediate for an operand `width` bits wide whose elements are `float_bits`-wide floats
    (0: not a float operand). Integers are used as they are (inline integer constants are not converted
    for float operands); floats become the operand's float format (f32 for untyped 32-bit operands)."""
    if isinstance(value, float):
        fb = float_bits or (64 if width == 64 else 32)
        return _float_bits(value, fb) & ((1 << width) - 1)
    return int(value) & ((1 << width) - 1)


class Src:
    """Reads an operand's bits: `read(st, w)` -> (G,) or (G, 64) [, regs] uint32/uint64."""

    uniform = True  # the same value for every lane
    regs = 1
    width = 32

    def read(self, st: Waves, w):  # pragma: no cover - interface
        raise NotImplementedError


class ConstSrc(Src):
    def __init__(self, bits: int, width: int) -> None:
        self.width = width
        self.value = np.uint64(bits) if width == 64 else np.uint32(bits)

    def read(self, st, w):
        n = st.count if isinstance(w, slice) else len(w)
        return np.full(n, self.value)


class SgprSrc(Src):
    def __init__(self, slot: int, regs: int) -> None:
        self.slot = slot
        self.regs = regs
        self.width = 64 if regs == 2 else 32

    def read(self, st, w):
        if self.regs == 1:
            return st.s[w, self.slot]
        if self.regs == 2 and self.slot % 2 == 0:
            return st.s64[w, self.slot // 2]
        if self.regs == 2:
            lo = st.s[w, self.slot].astype(np.uint64)
            return lo | (st.s[w, self.slot + 1].astype(np.uint64) << np.uint64(32))
        return st.s[w, self.slot:self.slot + self.regs]


class SpecialSrc(Src):
    """SCC, EXECZ, VCCZ and the aperture registers."""

    def __init__(self, name: str) -> None:
        self.name = name

    def read(self, st, w):
        name = self.name
        if name == "scc":
            return st.scc[w].astype(np.uint32)
        if name == "execz":
            return (st.exec64(w) == 0).astype(np.uint32)
        if name == "vccz":
            return (st.s64[w, st.vcc_slot // 2] == 0).astype(np.uint32)
        n = st.count if isinstance(w, slice) else len(w)
        value = {"shared_base": SHARED_APERTURE_HI, "shared_limit": SHARED_APERTURE_HI | 0xFFFF,
                 "private_base": PRIVATE_APERTURE_HI, "private_limit": PRIVATE_APERTURE_HI | 0xFFFF,
                 "pops_exiting_wave_id": 0}[name]
        return np.full(n, np.uint32(value))


class VgprSrc(Src):
    uniform = False

    def __init__(self, slot: int, regs: int, as64: bool) -> None:
        self.slot = slot
        self.regs = regs
        self.as64 = as64
        self.width = 64 if as64 else 32

    def read(self, st, w):
        if self.as64:
            lo = st.v[w, self.slot].astype(np.uint64)
            return lo | (st.v[w, self.slot + 1].astype(np.uint64) << np.uint64(32))
        if self.regs == 1:
            return st.v[w, self.slot]
        return np.moveaxis(st.v[w, self.slot:self.slot + self.regs], 1, -1)


class Dst:
    """Writes an operand: `write(st, w, bits, lanes)`; `lanes` (G, 64) bool limits VGPR writes."""

    vector = False
    regs = 1

    def write(self, st: Waves, w, bits, lanes=None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def read_old(self, st: Waves, w):  # pragma: no cover - interface
        raise NotImplementedError


class SgprDst(Dst):
    def __init__(self, slot: int, regs: int) -> None:
        self.slot = slot
        self.regs = regs
        self.src = SgprSrc(slot, regs)

    def write(self, st, w, bits, lanes=None):
        bits = np.asarray(bits)
        if bits.ndim == 2 and bits.dtype != np.uint64:  # (G, regs) dwords
            st.s[w, self.slot:self.slot + bits.shape[1]] = bits
        elif self.regs == 1:
            st.s[w, self.slot] = bits
        elif self.regs == 2 and self.slot % 2 == 0:
            st.s64[w, self.slot // 2] = bits
        elif self.regs == 2:
            b = bits.astype(np.uint64)
            st.s[w, self.slot] = (b & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            st.s[w, self.slot + 1] = (b >> np.uint64(32)).astype(np.uint32)
        else:
            st.s[w, self.slot:self.slot + self.regs] = bits

    def read_old(self, st, w):
        return self.src.read(st, w)


class VgprDst(Dst):
    vector = True

    def __init__(self, slot: int, regs: int, as64: bool) -> None:
        self.slot = slot
        self.regs = regs
        self.as64 = as64
        self.src = VgprSrc(slot, regs, as64)

    def write(self, st, w, bits, lanes=None):
        bits = np.asarray(bits)
        if self.regs > 1 and bits.dtype != np.uint64 and bits.ndim == 3:  # (G, 64, regs)
            if lanes is None:   # one assignment of the whole register range (an MFMA's 16 accumulators at once)
                st.v[w, self.slot:self.slot + self.regs] = np.swapaxes(bits[..., :self.regs], 1, 2)
                return
            parts = [bits[..., i] for i in range(self.regs)]
        elif self.as64 or bits.dtype == np.uint64:
            b = bits.astype(np.uint64)
            parts = [(b & np.uint64(0xFFFFFFFF)).astype(np.uint32), (b >> np.uint64(32)).astype(np.uint32)]
        elif self.regs == 1:
            parts = [bits]
        else:
            parts = [bits[..., i] for i in range(self.regs)]
        if lanes is not None and lanes.all():   # every lane enabled: a plain assignment writes the same bits
            lanes = None
        for i, part in enumerate(parts):
            r = self.slot + i
            if lanes is None:
                st.v[w, r] = part
            elif isinstance(w, slice):   # the registers themselves: only the enabled lanes are touched
                np.copyto(st.v[w, r], part, where=lanes, casting="unsafe")
            else:
                st.v[w, r] = np.where(lanes, part, st.v[w, r])

    def read_old(self, st, w):
        return self.src.read(st, w)


class Operands:
    """Turns assembly operands into Src/Dst objects for one program (knows the register slots)."""

    def __init__(self, spec: Spec, slots: dict[str, int], agpr_base: int) -> None:
        self.spec = spec
        self.slots = slots
        self.agpr_base = agpr_base
        self.ttmp0 = slots.get("ttmp0", 108)
        self.max_vgpr = -1
        self.max_agpr = -1

    def note_regs(self, op) -> None:
        """Track the highest VGPR/AGPR referenced (to size the register file)."""
        if isinstance(op, SrcMods):
            op = op.operand
        if isinstance(op, Reg):
            if op.kind == "v":
                self.max_vgpr = max(self.max_vgpr, op.index + op.count - 1)
            elif op.kind == "a":
                self.max_agpr = max(self.max_agpr, op.index + op.count - 1)

    def sgpr_slot(self, reg: Reg) -> int | None:
        if reg.kind == "s":
            return reg.index
        if reg.kind == "ttmp":
            return self.ttmp0 + reg.index
        name = _PAIRS.get(reg.kind, reg.kind)
        return self.slots.get(name)

    def src(self, op, width: int, float_bits: int = 0) -> Src:
        """A reader of operand `op` for an operand of `width` bits (32 or 64; more for register tuples)."""
        if isinstance(op, SrcMods):
            op = op.operand
        if isinstance(op, Imm):
            return ConstSrc(constant_bits(op.value, 64 if width >= 64 else 32, float_bits), 64 if width >= 64 else 32)
        if isinstance(op, Label):
            op = Reg(op.name.lower(), 0, 1)
        if not isinstance(op, Reg):
            raise EmulatorError(f"operand {op} cannot be read")
        regs = max(1, op.count, (width + 31) // 32) if op.kind in ("s", "v", "a", "ttmp") else max(1, width // 32)
        if op.kind == "v":
            return VgprSrc(op.index, regs, width == 64)
        if op.kind == "a":
            return VgprSrc(self.agpr_base + op.index, regs, width == 64)
        name = op.kind.removeprefix("src_")
        if name in ("scc", "execz", "vccz", "shared_base", "shared_limit", "private_base", "private_limit",
                    "pops_exiting_wave_id"):
            return SpecialSrc(name)
        slot = self.sgpr_slot(op)
        if slot is None:
            raise EmulatorError(f"register {op} is not modelled by the emulator")
        return SgprSrc(slot, regs)

    def dst(self, op, width: int) -> Dst:
        if isinstance(op, Label):
            op = Reg(op.name.lower(), 0, 1)
        if not isinstance(op, Reg):
            raise EmulatorError(f"operand {op} cannot be written")
        regs = max(1, op.count, (width + 31) // 32) if op.kind in ("s", "v", "a", "ttmp") else max(1, width // 32)
        if op.kind == "v":
            return VgprDst(op.index, regs, width == 64)
        if op.kind == "a":
            return VgprDst(self.agpr_base + op.index, regs, width == 64)
        slot = self.sgpr_slot(op)
        if slot is None:
            raise EmulatorError(f"register {op} cannot be written by the emulator")
        return SgprDst(slot, regs)


def register_rows(src: Src, st: Waves, w, count: int) -> np.ndarray:
    """An operand of `count` registers in the register file's own layout, (G, count, 64) uint32: a view of
    the VGPRs (no copy when `w` is a slice), or a constant / SGPR value broadcast to every lane and register
    (an inline constant for an MFMA's C)."""
    if isinstance(src, VgprSrc):
        return st.v[w, src.slot:src.slot + count]
    bits = np.asarray(src.read(st, w))
    if not src.uniform:
        raise EmulatorError(f"operand of {src.regs} registers cannot be read as {count} vector registers")
    if bits.ndim != 1:
        raise EmulatorError(f"an operand of {src.regs} scalar registers cannot be read as {count} vector registers")
    return np.broadcast_to(bits.astype(np.uint32)[:, None, None], (bits.shape[0], count, WAVE))


def is_off(op) -> bool:
    return isinstance(op, Off)


def lane_bits() -> np.ndarray:
    return LANE_BITS
