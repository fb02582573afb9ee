"""Buffer resource descriptors (V#) and the buffer addressing and range-checking rules, as the CDNA3 ISA defines
them (AMD Instinct MI300 "CDNA3" ISA Reference Guide, chapter "Vector Memory Buffer Instructions": sections
"Buffer Resource", "Buffer Addressing", "Swizzled Buffer Addressing" and "Range Checking").

V# fields (128 bits; LLVM's SIInstrInfo.h spells the same ones RSRC_ELEMENT_SIZE_SHIFT = 32+19,
RSRC_INDEX_STRIDE_SHIFT = 32+21, RSRC_TID_ENABLE = 1 << (32+23) over the upper 64 bits):

    [47:0] base address      [61:48] stride      [62] cache swizzle      [63] swizzle enable
    [95:64] num_records      [110:108] num format     [114:111] data format
    [116:115] element size (2, 4, 8, 16 bytes)   [118:117] index stride (8, 16, 32, 64)   [119] add tid enable

The buffer kind follows the instruction's IDXEN and the descriptor's ADD_TID_ENABLE and SWIZZLE_ENABLE, never
whether the stride is zero:

- raw (IDXEN = 0, ADD_TID = 0): in range when SOFFSET + offset + size <= num_records, checked per dword for
  wider accesses. Hand-written kernels put a non-zero stride into raw descriptors and rely on this byte check.
- structured (IDXEN = 1 or ADD_TID = 1): in range when index < num_records (index counts records of `stride`
  bytes; with ADD_TID the lane id is added to the index).
- swizzled (SWIZZLE_ENABLE = 1, e.g. the private-segment descriptor of scratch): the bytes of consecutive
  indices are interleaved in `element size` pieces across `index stride` indices.

SOFFSET takes part in the address and in the raw range check (Triton's CDNA3 buffer descriptor documents the
same: "counted by the bounds check").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ELEMENT_BYTES = (2, 4, 8, 16)
_INDEX_STRIDES = (8, 16, 32, 64)


@dataclass
class Resource:
    """The fields of a group of waves' V# (each a (G,) uint64 array)."""

    base: np.ndarray
    stride: np.ndarray
    swizzle: np.ndarray  # bool
    num_records: np.ndarray
    num_format: np.ndarray
    data_format: np.ndarray
    element_size: np.ndarray  # bytes
    index_stride: np.ndarray  # indices per swizzle row
    add_tid: np.ndarray  # bool

    @classmethod
    def from_words(cls, words: np.ndarray) -> Resource:
        """Decode (G, 4) uint32 descriptor words."""
        r = np.asarray(words).astype(np.uint64)
        w1, w3 = r[:, 1], r[:, 3]
        one = np.uint64(1)
        return cls(
            base=r[:, 0] | ((w1 & np.uint64(0xFFFF)) << np.uint64(32)),
            stride=(w1 >> np.uint64(16)) & np.uint64(0x3FFF),
            swizzle=((w1 >> np.uint64(31)) & one).astype(bool),
            num_records=r[:, 2],
            num_format=(w3 >> np.uint64(12)) & np.uint64(7),
            data_format=(w3 >> np.uint64(15)) & np.uint64(0xF),
            element_size=np.asarray(_ELEMENT_BYTES, np.uint64)[((w3 >> np.uint64(19)) & np.uint64(3)).astype(int)],
            index_stride=np.asarray(_INDEX_STRIDES, np.uint64)[((w3 >> np.uint64(21)) & np.uint64(3)).astype(int)],
            add_tid=((w3 >> np.uint64(23)) & one).astype(bool),
        )


@dataclass
class Access:
    """Where each lane of a buffer access goes: (G, 64) arrays."""

    resource: Resource
    offset: np.ndarray  # instruction offset + VGPR offset (bytes, uint64)
    index: np.ndarray  # VGPR index (+ lane id when ADD_TID), uint64
    soffset: np.ndarray  # (G, 1) uint64
    structured: np.ndarray  # (G, 64) bool: the index range check applies

    def address(self, extra: int = 0) -> np.ndarray:
        """Byte address of the access's byte `extra` (a dword's offset within a multi-dword access)."""
        r = self.resource
        off = self.offset + np.uint64(extra)
        linear = r.stride[:, None] * self.index + off
        swz = r.swizzle[:, None]
        if swz.any():
            es = r.element_size[:, None]
            ist = r.index_stride[:, None]
            index_msb, index_lsb = self.index // ist, self.index % ist
            offset_msb, offset_lsb = off // es, off % es
            swizzled = (index_msb * r.stride[:, None] + offset_msb * es) * ist + index_lsb * es + offset_lsb
            linear = np.where(swz, swizzled, linear)
        return r.base[:, None] + self.soffset + linear

    def in_range(self, extra: int, width: int) -> np.ndarray:
        """Lanes whose `width` bytes at byte `extra` of the access lie inside the descriptor's range."""
        nrec = self.resource.num_records[:, None]
        raw_ok = self.soffset + self.offset + np.uint64(extra + width) <= nrec
        return np.where(self.structured, self.index < nrec, raw_ok)


def access(rsrc_words: np.ndarray, *, idxen: bool, voffset: np.ndarray, vindex: np.ndarray, inst_offset: int,
           soffset: np.ndarray) -> Access:
    """A buffer access from the descriptor words (G, 4), the instruction's IDXEN, per-lane VGPR offset and
    index (G, 64) and the scalar offset (G,)."""
    r = Resource.from_words(rsrc_words)
    index = np.asarray(vindex, np.uint64)
    if r.add_tid.any():
        index = index + np.where(r.add_tid[:, None], np.arange(64, dtype=np.uint64)[None, :], np.uint64(0))
    structured = np.broadcast_to((r.add_tid | bool(idxen))[:, None], index.shape)
    off = (np.asarray(voffset, np.uint64) + np.uint64(inst_offset)) & np.uint64(0xFFFFFFFF)
    return Access(r, off, index, np.asarray(soffset, np.uint64).reshape(-1, 1), structured)
