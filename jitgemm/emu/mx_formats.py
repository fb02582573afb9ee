"""CDNA 4 (gfx950) microscaling formats, as reusable numpy functions: the element formats an f8f6f4 MFMA's CBSZ
(A) and BLGP (B) fields select, unpacking of packed registers into float64 values, and E8M0 block scales.

The scaled-MFMA and conversion semantics (and issue 15's MX GEMMs) build on these, so they take and return plain
arrays and know nothing about the emulator's state.

Facts:
- CBSZ/BLGP code -> format: 0 fp8 E4M3, 1 bf8 E5M2, 2 fp6 E2M3, 3 bf6 E3M2, 4 fp4 E2M1 (CDNA 4 ISA guide,
  matrix-core chapter, "V_MFMA_*_F8F6F4"; LLVM AMDGPU: the cbsz/blgp operand of
  llvm.amdgcn.mfma.scale.f32.*.f8f6f4). On gfx950 the 8-bit formats are the OCP ones (target profile
  `fp8_flavour: ocp`). The register count per operand follows from the element width: 8, 8, 6, 6, 4 dwords for
  32 elements per lane (llvm-mc-22 -mcpu=gfx950: "wrong register tuple size for cbsz value 2" otherwise).
- Elements are packed from bit 0 of the first dword upwards, an fp6 element may straddle two dwords (AMD's
  FMT_NUM_PK32_FP6: component i at bits 6i..6i+5 of 192 bits).
- E8M0 (OCP MX v1.0, "E8M0"): value 2^(e-127) for e = 0..254, e = 0xFF is NaN; so byte 0 is 2^-127, not 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ElementFormat:
    name: str
    bits: int
    type_name: str     # the ml_dtypes type, imported on first use: its import costs ~0.5 s CPU (issue 31)

    @property
    def dtype(self) -> np.dtype:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, self.type_name))

    def registers(self, elements: int = 32) -> int:
        """Dwords that hold `elements` packed values (an MFMA operand's register count)."""
        return elements * self.bits // 32


_OCP = {
    0: ElementFormat("fp8_e4m3", 8, "float8_e4m3fn"),
    1: ElementFormat("bf8_e5m2", 8, "float8_e5m2"),
    2: ElementFormat("fp6_e2m3", 6, "float6_e2m3fn"),
    3: ElementFormat("bf6_e3m2", 6, "float6_e3m2fn"),
    4: ElementFormat("fp4_e2m1", 4, "float4_e2m1fn"),
}


def matrix_format(code: int) -> ElementFormat:
    """The element format a CBSZ (A) or BLGP (B) value selects in an f8f6f4 MFMA; ValueError names the codes."""
    fmt = _OCP.get(int(code))
    if fmt is None:
        raise ValueError(f"CBSZ/BLGP value {code} selects no f8f6f4 format; valid: "
                         + ", ".join(f"{c} {f.name}" for c, f in _OCP.items()))
    return fmt


def element_codes(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Unsigned `bits`-bit codes of `count` elements packed in dwords: words[..., n] -> codes[..., count]."""
    words = np.ascontiguousarray(words, dtype=np.uint32)
    as_bytes = words.astype("<u4").view(np.uint8).reshape(*words.shape[:-1], words.shape[-1] * 4)
    bitstream = np.unpackbits(as_bytes, axis=-1, bitorder="little")
    need = bits * count
    if bitstream.shape[-1] < need:
        raise ValueError(f"{words.shape[-1]} dword(s) hold {bitstream.shape[-1]} bits; {count} x {bits}-bit "
                         f"elements need {need}")
    chunks = bitstream[..., :need].reshape(*bitstream.shape[:-1], count, bits).astype(np.uint32)
    return (chunks << np.arange(bits, dtype=np.uint32)).sum(axis=-1, dtype=np.uint32)


def pack_elements(codes: np.ndarray, bits: int, words: int) -> np.ndarray:
    """Inverse of element_codes: codes[..., count] of `bits` bits packed into `words` dwords from bit 0."""
    codes = np.asarray(codes, dtype=np.uint32)
    bitstream = ((codes[..., None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    bitstream = bitstream.reshape(*codes.shape[:-1], codes.shape[-1] * bits)
    pad = words * 32 - bitstream.shape[-1]
    if pad < 0:
        raise ValueError(f"{codes.shape[-1]} x {bits}-bit elements do not fit {words} dword(s)")
    if pad:
        bitstream = np.concatenate([bitstream, np.zeros((*bitstream.shape[:-1], pad), np.uint8)], axis=-1)
    packed = np.packbits(bitstream, axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u4").astype(np.uint32)


def decode_elements(words: np.ndarray, fmt: ElementFormat, count: int = 32) -> np.ndarray:
    """float64 values of `count` packed elements of `fmt` (NaN where the format has NaN codes)."""
    codes = element_codes(words, fmt.bits, count).astype(np.uint8)
    return codes.view(fmt.dtype).astype(np.float64) if fmt.bits == 8 else \
        _narrow_values(fmt)[codes]


def _narrow_values(fmt: ElementFormat) -> np.ndarray:
    codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    return codes.view(fmt.dtype).astype(np.float64)


def e8m0_values(scale_bytes: np.ndarray) -> np.ndarray:
    """float64 value of E8M0 scale bytes: 2^(b-127), NaN for 0xFF."""
    b = np.asarray(scale_bytes, dtype=np.uint8)
    out = np.ldexp(1.0, b.astype(np.int32) - 127)
    return np.where(b == 0xFF, np.nan, out)


def scale_byte(registers: np.ndarray, select: int) -> np.ndarray:
    """The scale byte op_sel/op_sel_hi picks (0..3, op_sel the low bit) from each lane's 32-bit scale register."""
    if not 0 <= select <= 3:
        raise ValueError(f"scale byte select {select} is not 0..3")
    return ((np.asarray(registers, dtype=np.uint32) >> (8 * select)) & 0xFF).astype(np.uint8)
