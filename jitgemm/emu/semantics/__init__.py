"""The emulator's instruction semantics, one module per kind of instruction; importing the package registers every
one of them (registry.py), which `jitgemm emulate --where` and the engine rely on.

- alu_statements: the ALU statement table (ISA pseudo-code as data) the SALU/VALU paths evaluate;
- valu: the SALU, VALU and VOP3P family paths and the named VALU entries (lane ops, fp8 conversions, FMA mix);
- matrix: the MFMA family path (mfma.py holds the lane layouts); sparse_mfma: V_SMFMAC_*;
- memory: the SMEM, FLAT/scratch and DS families; buffer: MUBUF/MTBUF; memory_access: what both share;
- control: branches, program end, barriers, traps, MODE/HWREG moves and the no-ops;
- gfx950: gfx950's named semantics (scaled/f8f6f4 MFMAs, permlane swaps, conversions, LDS transposes).
"""

from __future__ import annotations

from . import buffer, control, gfx950, matrix, memory, sparse_mfma, valu

__all__ = ["buffer", "control", "gfx950", "matrix", "memory", "sparse_mfma", "valu"]
