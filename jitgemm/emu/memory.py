"""Memory of an emulated launch: a sparse global address space made of the launched buffers, the loaded code
object, and LDS.

Every buffer gets its own slot of SLOT (1 TiB) bytes of address space, from BASE upwards, and occupies only the
start of it: the rest is unmapped. An access past the end of a buffer (or through a null or truncated pointer)
therefore lands outside every buffer and is reported as a fault naming the address, instead of silently
reading or writing a neighbour — whatever the distance up to the next slot: every 32-bit offset form (a VGPR
offset on an SGPR base, SOFFSET, the instruction offset) reaches at most 2**33 bytes. The one form that reaches
further, a buffer descriptor's index x stride (up to 2**46), is checked against the buffer the descriptor's base
points into (`same_buffer`), so no layout places one argument where another's overrun reaches. (A 64-bit VGPR
address that a kernel computes to be exactly another buffer's address is that buffer's address, on a GPU too.)
The buffers' bytes are packed in one numpy store; `offsets()` maps an address to its byte in it.

The code object is loaded as one image at CODE_BASE (AMDGPUUsage "Code Object": the loader places every
PT_LOAD segment at load base + p_vaddr): each segment is mapped with its own permissions — .text and .rodata
read-only, .data/.bss writable and zero past the file's bytes, the .rela.dyn relocations applied for that
base — and the page gaps between segments stay unmapped, so a kernel reading its constant tables PC-
relatively (s_getpc_b64 + @rel32) finds them and a store into read-only code or data faults. Every access is
a vectorized gather/scatter over lanes; callers pass byte offsets into the store (`offsets()` maps both
regions onto it). Everything stays below the flat apertures (operands.SHARED_APERTURE_HI << 32 = 2**48), and
below 2**48 where a buffer descriptor's 48-bit base can reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import EmulatorError

if TYPE_CHECKING:
    from jitgemm.codegen.codeobj.reader import LoadImage

# First buffer address: above 4 GiB, so a pointer truncated to 32 bits faults. Its high dword (0x5a5, odd, then
# +0x100 per buffer) is no integer a kernel's arguments usually hold: provenance.py takes a register pair whose value
# lies inside a buffer for a pointer to it, and at 1 << 32 the pair (K, 1) of two integer arguments did.
BASE = 0x5A5 << 32
SLOT = 1 << 40  # address space per buffer: the buffer at its start, the rest unmapped
CODE_BASE = 1 << 47  # where the code object is loaded: its PCs are CODE_BASE + the ELF's virtual addresses
MAX_BUFFERS = (CODE_BASE - BASE) // SLOT  # 122 buffers (kernarg segment, dispatch packet and scratch included)
ALIGN = 256
MAX_IMAGE = 1 << 30  # a code object image larger than this is refused (a corrupt p_memsz, not a kernel)


class ByteStore:
    """A byte array with lane-vectorized loads and stores of bytes and dwords at int64 offsets."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data  # uint8, length a multiple of 4
        self.words = data.view(np.uint32)

    def load_dwords(self, off: np.ndarray, count: int) -> np.ndarray:
        """(N, count) uint32 from byte offsets `off` (N,)."""
        if off.size and not (off & 3).any():
            return self.words[(off >> 2)[:, None] + np.arange(count)]
        raw = self.data[off[:, None] + np.arange(4 * count)]
        return np.ascontiguousarray(raw).view(np.uint32).reshape(len(off), count)

    def load_bytes(self, off: np.ndarray, count: int) -> np.ndarray:
        return self.data[off[:, None] + np.arange(count)]

    def store_dwords(self, off: np.ndarray, values: np.ndarray) -> None:
        count = values.shape[1]
        if off.size and not (off & 3).any():
            self.words[(off >> 2)[:, None] + np.arange(count)] = values
            return
        raw = np.ascontiguousarray(values.astype(np.uint32)).view(np.uint8).reshape(len(off), 4 * count)
        self.data[off[:, None] + np.arange(4 * count)] = raw

    def store_bytes(self, off: np.ndarray, values: np.ndarray) -> None:
        self.data[off[:, None] + np.arange(values.shape[1])] = values


@dataclass
class Segment:
    name: str
    address: int
    size: int
    target: np.ndarray | None  # the caller's array, written back after the run
    writable: bool
    heap: int = 0  # where its bytes start in the store


class GlobalMemory(ByteStore):
    """The launched buffers in one flat address space. Build with `map()`, then `freeze()` before use."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self._heap = 0  # bytes of the store the buffers mapped so far take
        self._pending: list[tuple[Segment, np.ndarray]] = []
        self._by_id: dict[int, int] = {}
        self.read_hook = None   # jitgemm.emu.kernarg_trace: called with (pc, text, addresses, width) by scalar loads
        self._image: list[tuple[Segment, np.ndarray]] = []
        self._image_lo = self._image_hi = 0  # the image's extent, relative to CODE_BASE

    def map_image(self, image: LoadImage) -> None:
        """Load a code object's PT_LOAD segments at CODE_BASE + p_vaddr, each with its permissions (PF_W),
        zero-filled from p_filesz to p_memsz and with its dynamic relocations applied for that base, as the
        ROCm loader leaves them; call once, before `freeze()`."""
        segments = image.relocated(CODE_BASE)
        if not segments:
            return
        lo = min(seg.vaddr for seg in segments)
        hi = max(seg.vaddr + seg.memsz for seg in segments)
        if hi - lo > MAX_IMAGE:
            raise EmulatorError(f"the code object's PT_LOAD segments span {hi - lo:#x} bytes "
                                f"([{lo:#x}, {hi:#x})); the emulator loads images up to {MAX_IMAGE:#x} bytes")
        for seg in sorted(segments, key=lambda seg: seg.vaddr):
            raw = np.zeros(seg.memsz, np.uint8)
            raw[:len(seg.data)] = np.frombuffer(seg.data, np.uint8)
            self._image.append((Segment(seg.name, CODE_BASE + seg.vaddr, seg.memsz, None, seg.writable), raw))
        self._image_lo, self._image_hi = lo, hi

    def map(self, name: str, data: np.ndarray | bytes, *, target: np.ndarray | None = None,
            writable: bool = True) -> int:
        """Place `data` in the address space; returns its address. The same array mapped twice shares
        one address (so aliasing arguments alias on the device too)."""
        if target is not None and id(target) in self._by_id:
            return self._by_id[id(target)]
        raw = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray)) else \
            np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if len(self.segments) >= MAX_BUFFERS:
            raise EmulatorError(f"the launch maps more than {MAX_BUFFERS} buffers; the emulator gives each its own "
                                f"{SLOT:#x} bytes of address space below {CODE_BASE:#x}")
        if raw.size > SLOT // 2:
            raise EmulatorError(f"{name}: {raw.size} bytes; the emulator maps buffers up to {SLOT // 2:#x} bytes")
        seg = Segment(name, BASE + len(self.segments) * SLOT, raw.size, target, writable, self._heap)
        self.segments.append(seg)
        self._pending.append((seg, raw))
        self._heap = _align(self._heap + raw.size, ALIGN)
        if target is not None:
            self._by_id[id(target)] = seg.address
        return seg.address

    def freeze(self) -> None:
        buffers = _align(self._heap, 4)
        heap = np.zeros(buffers + _align(self._image_hi - self._image_lo, 4), np.uint8)
        for seg, raw in self._pending:
            heap[seg.heap:seg.heap + seg.size] = raw
        for seg, raw in self._image:  # after the buffers in the store, above them in the address space
            seg.heap = buffers + seg.address - CODE_BASE - self._image_lo
            heap[seg.heap:seg.heap + seg.size] = raw
            self.segments.append(seg)
        self._pending, self._image = [], []
        super().__init__(heap)
        self.segments.sort(key=lambda seg: seg.address)
        self._starts = np.array([s.address for s in self.segments] or [0], np.uint64)
        self._ends = np.array([s.address + s.size for s in self.segments] or [0], np.uint64)
        self._writable = np.array([s.writable for s in self.segments] or [False])
        self._heaps = np.array([s.heap for s in self.segments] or [0], np.int64)

    def _index(self, addr: np.ndarray) -> np.ndarray:
        """Index of the last segment starting at or below each address (-1: below every segment)."""
        return np.searchsorted(self._starts, addr, side="right").astype(np.int64) - 1

    def valid(self, addr: np.ndarray, size: int, *, write: bool = False) -> np.ndarray:
        """Lanes whose `size`-byte access at `addr` (uint64) lies inside one mapped buffer."""
        idx = self._index(addr)
        idx_c = np.maximum(idx, 0)
        ok = (idx >= 0) & (addr >= self._starts[idx_c]) & (addr + np.uint64(size) <= self._ends[idx_c]) & \
            (addr + np.uint64(size) >= addr)  # no wrap-around past 2**64
        if write:
            ok &= self._writable[idx_c]
        return ok

    def same_buffer(self, addr: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Lanes whose `addr` lies in the buffer `base` points into (True where `base` points into none: the
        access is then judged by `valid` alone) — the provenance check of descriptor-relative accesses."""
        addr, base = np.broadcast_arrays(np.asarray(addr, np.uint64), np.asarray(base, np.uint64))
        ib = self._index(base)
        ib_c = np.maximum(ib, 0)
        inside = (ib >= 0) & (base < self._ends[ib_c])
        return ~inside | (self._index(addr) == ib)

    def offsets(self, addr: np.ndarray) -> np.ndarray:
        """Store offsets of valid addresses (each buffer's and image segment's bytes where `freeze` put them)."""
        idx = np.maximum(self._index(addr), 0)
        return (addr - self._starts[idx]).astype(np.int64) + self._heaps[idx]

    def heap_offset(self, address: int) -> int:
        """Store offset of one mapped address."""
        return int(self.offsets(np.array([address], np.uint64))[0])

    def segment_at(self, address: int) -> Segment | None:
        for seg in self.segments:
            if seg.address <= address < seg.address + max(seg.size, 1):
                return seg
        return None

    def describe(self, address: int) -> str:
        """Where an address lies relative to the buffers, for fault messages."""
        best = None
        for seg in self.segments:
            if seg.address <= address < seg.address + seg.size:
                return f"inside {seg.name} at offset {address - seg.address}" + \
                    ("" if seg.writable else ", which is read-only")
            if address >= seg.address + seg.size:
                best = seg
        if address == 0 or address < BASE:
            return f"null or invalid pointer; buffers start at 0x{BASE:x}"
        if best is not None:
            return f"{address - best.address - best.size} bytes past the end of {best.name} ({best.size} bytes)"
        return "outside every buffer"

    def write_back(self) -> None:
        """Copy every writable buffer into the caller's array (in place)."""
        for seg in self.segments:
            if seg.target is None or not seg.writable or seg.size == 0:
                continue
            raw = self.data[seg.heap:seg.heap + seg.size]
            flat = raw.view(seg.target.dtype).reshape(seg.target.shape)
            np.copyto(seg.target, flat)


def _align(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def lds_limit(spec) -> int:
    """Bytes of LDS one workgroup may allocate on the spec's target (its profile's lds_bytes_per_workgroup:
    64 KiB on gfx942, 160 KiB on gfx950)."""
    from jitgemm.isa.spec.targets import target_of_spec, target_profile

    return target_profile(target_of_spec(spec)).lds_bytes_per_workgroup
