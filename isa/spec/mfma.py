"""What an MFMA's name says: M x N x K, the block count and the tail naming the operand types, the one
parser of AMD's naming (V_MFMA_<acc>_<M>X<N>X<K>[_<B>B]_<types>, which LLVM's mnemonics share) for the
generators' catalog (codegen/mfma_catalog.py) and the emulator's semantics (jitgemm/emu/mfma.py). The spec
holds operand sizes and data formats but not the shape; both users check the name against them.

Matrix instructions run on a wavefront of 64 work-items (CDNA 3 ISA guide, "Matrix Arithmetic
Instructions"; AMDGPUUsage: gfx90a/gfx942/gfx950 are wave64 only), so lane layouts are over WAVE64 lanes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WAVE64 = 64

_NAME = re.compile(r"^V_MFMA_(?P<acc>F32|I32|F64)_(?P<m>\d+)X(?P<n>\d+)X(?P<k>\d+)(?:_(?P<blocks>\d+)B)?"
                   r"(?:_(?P<rest>\w+))?$")


@dataclass(frozen=True)
class MfmaName:
    acc: str          # F32, I32 or F64
    m: int
    n: int
    k: int
    blocks: int       # 1 unless the name says _<B>B
    rest: str         # the operand-type tail (BF16, FP8_FP8, XF32, ...)

    @property
    def xf32(self) -> bool:
        """XF32 variants round their fp32 inputs to 10 mantissa bits (a format the spec does not tell apart)."""
        return "XF32" in self.rest


_SPARSE_NAME = re.compile(_NAME.pattern.replace("^V_MFMA_", "^V_SMFMAC_", 1))


def parse_smfmac_name(name: str) -> MfmaName | None:
    """The shape a sparse MFMA's name states (V_SMFMAC_<acc>_<M>X<N>X<K>_<types>: K counts the dense A, of which
    the instruction holds half, CDNA 3/4 ISA guide "Sparse Matrices"), or None. Kept apart from
    `parse_mfma_name` so dense-MFMA users (the generators' catalog) never see sparse ones."""
    match = _SPARSE_NAME.match(name.upper())
    if not match:
        return None
    return MfmaName(match.group("acc"), int(match.group("m")), int(match.group("n")), int(match.group("k")),
                    int(match.group("blocks") or 1), match.group("rest") or "")


def parse_mfma_name(name: str) -> MfmaName | None:
    """The shape an MFMA's spec name states, or None for a name not of that form."""
    match = _NAME.match(name.upper())
    if not match:
        return None
    return MfmaName(match.group("acc"), int(match.group("m")), int(match.group("n")), int(match.group("k")),
                    int(match.group("blocks") or 1), match.group("rest") or "")
