"""OCP microscaling (MX) tensors: element codes plus one E8M0 scale per block, and the layouts kernels expect.

Why a module of its own: MX data crosses every layer (the caller quantizes, the contract names the layout, the
kernel reads codes and scales, the emulator and numpy check the result), so the format rules live once, here.

Facts, each from an outside authority:
- OCP Microscaling Formats (MX) Specification v1.0, section 5 (element formats, E8M0) and section 6.3
  (conversion): per block of 32 values the shared exponent is floor(log2(max|v|)) minus the element format's
  largest normal exponent (emax); elements are v / 2**shared_exp rounded to nearest-even and saturated to the
  format's largest normal value. E8M0 is an 8-bit biased exponent (bias 127): code c means 2**(c-127), code 0xFF
  is NaN. A block holding NaN or Inf gets the NaN scale (its elements are then meaningless).
- Element code tables are ml_dtypes' float8_e4m3fn, float8_e5m2, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn.
- fp4 packs two codes per byte, the lower-index element in the low nibble (OCP MX spec section 5.3.3 packing
  as used by AMD's gfx950 MFMA operands and aiter's `pack_uint4`/`mxfp4_to_f32`).
- The pre-shuffled scale layout is the one AMD's production gfx950 kernels (aiter asm GEMMs) read: rows padded to
  256 and scale columns to 8, then viewed as (rows/32, 2, 16, cols/8, 2, 4) and permuted to (0, 3, 5, 2, 4, 1)
  (aiter/utility/fp4_utils.py `e8m0_shuffle`), so one dword holds four scales a lane selects with op_sel.
- The pre-shuffled weight layout is aiter's `shuffle_weight(layout=(16, 16))` on the byte matrix [N, K bytes]:
  viewed as (N/16, 16, Kb/32, 2, 16) and permuted to (0, 2, 3, 1, 4), matching the 16x16x128 MFMA lane order
  (aiter/ops/shuffle.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

BLOCK = 32
E8M0_BIAS = 127
E8M0_NAN = 0xFF


@dataclass(frozen=True)
class ElementFormat:
    """One MX element format: its name, numpy dtype (from ml_dtypes), bits, largest normal and its exponent."""

    name: str
    dtype: type
    bits: int

    @property
    def max_normal(self) -> float:
        return float(ml_dtypes.finfo(self.dtype).max)

    @property
    def emax(self) -> int:
        return int(np.floor(np.log2(self.max_normal)))


FORMATS: dict[str, ElementFormat] = {f.name: f for f in (
    ElementFormat("fp4", ml_dtypes.float4_e2m1fn, 4),
    ElementFormat("fp6_e2m3", ml_dtypes.float6_e2m3fn, 6),
    ElementFormat("fp6_e3m2", ml_dtypes.float6_e3m2fn, 6),
    ElementFormat("fp8_e4m3", ml_dtypes.float8_e4m3fn, 8),
    ElementFormat("fp8_e5m2", ml_dtypes.float8_e5m2, 8),
)}

SCALE_LAYOUTS = ("plain", "shuffled")
WEIGHT_LAYOUTS = ("plain", "16x16")


class MXError(ValueError):
    """An MX argument that cannot be used; the message names the argument and what is accepted."""


def element_format(fmt: str) -> ElementFormat:
    try:
        return FORMATS[fmt]
    except (KeyError, TypeError):
        raise MXError(f"fmt: unknown MX element format {fmt!r}; accepted: {', '.join(FORMATS)}") from None


def e8m0_to_float(codes: np.ndarray) -> np.ndarray:
    """E8M0 codes -> float64 scales (0 -> 2**-127, 0xFF -> NaN)."""
    c = np.asarray(codes, dtype=np.uint8)
    out = np.ldexp(1.0, c.astype(np.int32) - E8M0_BIAS)
    return np.where(c == E8M0_NAN, np.nan, out)


def codes_to_float(codes: np.ndarray, fmt: str) -> np.ndarray:
    """Element codes (one per byte, unpacked) -> float64 values."""
    f = element_format(fmt)
    c = np.asarray(codes, dtype=np.uint8)
    if f.bits < 8 and np.any(c >> f.bits):
        raise MXError(f"codes: a {fmt} code has bits above bit {f.bits - 1}")
    return c.view(f.dtype).astype(np.float64)


def pack_fp4(codes: np.ndarray) -> np.ndarray:
    """Pack 4-bit codes along the last axis, two per byte, lower index in the low nibble (odd length: pad 0)."""
    c = np.asarray(codes, dtype=np.uint8)
    if c.shape[-1] % 2:
        c = np.concatenate([c, np.zeros((*c.shape[:-1], 1), np.uint8)], axis=-1)
    return (c[..., 0::2] & 0xF) | ((c[..., 1::2] & 0xF) << 4)


def unpack_fp4(packed: np.ndarray, length: int) -> np.ndarray:
    """Inverse of `pack_fp4`: the first `length` codes along the last axis."""
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.uint8)
    out[..., 0::2] = p & 0xF
    out[..., 1::2] = p >> 4
    return out[..., :length]


def pack_fp6(codes: np.ndarray) -> np.ndarray:
    """Pack 6-bit codes along the last axis as a little-endian bit stream, four codes per three bytes (element i
    at bits 6i..6i+5; the length is padded with zero codes to a multiple of 4). This is how a kernel stores an
    fp6 row in memory and how the f8f6f4 MFMAs read 32 fp6 values from 6 consecutive VGPRs."""
    c = np.asarray(codes, dtype=np.uint8)
    pad = -c.shape[-1] % 4
    if pad:
        c = np.concatenate([c, np.zeros((*c.shape[:-1], pad), np.uint8)], axis=-1)
    g = c.reshape(*c.shape[:-1], -1, 4).astype(np.uint32) & 0x3F
    word = g[..., 0] | (g[..., 1] << 6) | (g[..., 2] << 12) | (g[..., 3] << 18)
    out = np.stack([word & 0xFF, (word >> 8) & 0xFF, word >> 16], axis=-1).astype(np.uint8)
    return out.reshape(*c.shape[:-1], -1)


def unpack_fp6(packed: np.ndarray, length: int) -> np.ndarray:
    """Inverse of `pack_fp6`: the first `length` codes along the last axis."""
    p = np.asarray(packed, dtype=np.uint8)
    if p.shape[-1] % 3:
        raise MXError(f"packed fp6: {p.shape[-1]} bytes per row is not a multiple of 3")
    t = p.reshape(*p.shape[:-1], -1, 3).astype(np.uint32)
    word = t[..., 0] | (t[..., 1] << 8) | (t[..., 2] << 16)
    out = np.stack([(word >> s) & 0x3F for s in (0, 6, 12, 18)], axis=-1).astype(np.uint8)
    return out.reshape(*p.shape[:-1], -1)[..., :length]


@dataclass(frozen=True)
class MXTensor:
    """A block-scaled tensor. `shape` is the logical shape; blocks of `block` elements run along `axis` (the last
    block may be short: its missing elements count as zeros).

    Layouts (why: production gfx950 kernels read pre-shuffled scales and weights, and a tensor should say which
    one it holds so that a kernel expecting the other is refused, never fed silently):
    - `scale_layout="plain"`: `scales` holds one E8M0 code per block, arranged like the logical tensor (the block
      axis shortened to ceil(n / block)).
      `"shuffled"` (2-D only): `scales` is `shuffle_scales` of the plain scales viewed block axis last, i.e.
      [rows, blocks] with rows the other axis (the [M, K/32] / [N, K/32] matrices a kernel reads).
    - `data_layout="plain"`: `data` holds the element codes arranged like the logical tensor (uint8; fp4 packed
      two per byte along `axis`, lower index in the low nibble; fp6/fp8 one code per byte).
      `"16x16"` (2-D only): `data` is `shuffle_weight` of the bytes a kernel reads, [rows, K bytes] with K the
      block axis, packed as in memory (fp4 two per byte, fp6 `pack_fp6`'s stream, fp8 one per byte).
    `shuffle()` / `unshuffle()` convert; `dequantize()` reads every layout."""

    fmt: str
    axis: int
    block: int
    shape: tuple[int, ...]
    data: np.ndarray
    scales: np.ndarray
    scale_layout: str = "plain"
    data_layout: str = "plain"

    def __post_init__(self) -> None:
        f = element_format(self.fmt)
        shape = tuple(int(v) for v in self.shape)
        if not shape or not -len(shape) <= self.axis < len(shape):
            raise MXError(f"axis: {self.axis!r} is out of range for shape {shape}")
        if self.scale_layout not in SCALE_LAYOUTS:
            raise MXError(f"scale_layout: {self.scale_layout!r}; accepted: {', '.join(SCALE_LAYOUTS)}")
        if self.data_layout not in WEIGHT_LAYOUTS:
            raise MXError(f"data_layout: {self.data_layout!r}; accepted: {', '.join(WEIGHT_LAYOUTS)}")
        if (self.scale_layout != "plain" or self.data_layout != "plain") and len(shape) != 2:
            raise MXError(f"shuffled layouts are 2-D ([rows, K]); this tensor has shape {shape}")
        for name in ("data", "scales"):
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8:
                raise MXError(f"{name}: expected a uint8 numpy array, got "
                              f"{getattr(arr, 'dtype', type(arr).__name__)}")
        axis = self.axis % len(shape)
        n = shape[axis]
        nblocks = -(-n // self.block)
        if self.scale_layout == "plain":
            want = shape[:axis] + (nblocks,) + shape[axis + 1:]
        else:
            rows = shape[1 - axis]
            want = (-(-rows // 256) * 256, -(-nblocks // 8) * 8)
        if self.scales.shape != want:
            raise MXError(f"scales: shape {self.scales.shape}, expected {want} ({self.scale_layout} layout of "
                          f"{nblocks} block(s) of {self.block} along axis {axis} of {shape})")
        if self.data_layout == "plain":
            want = shape[:axis] + ((-(-n // 2) if f.bits == 4 else n),) + shape[axis + 1:]
        else:
            want = (shape[1 - axis], row_bytes(self.fmt, n))
        if self.data.shape != want:
            raise MXError(f"data: shape {self.data.shape}, expected {want} ({self.data_layout} layout of a {self.fmt} "
                          f"tensor of shape {shape}, blocks along axis {axis})")
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "shape", shape)

    @property
    def T(self) -> MXTensor:  # noqa: N802 (numpy's spelling)
        """The transposed 2-D tensor (a view: no data is copied). Shuffled arrays are stored block axis last
        whatever `axis` is, so they stay as they are."""
        if len(self.shape) != 2:
            raise MXError(f"T: a transpose needs a 2-D tensor, this one has shape {self.shape}")
        return MXTensor(self.fmt, 1 - self.axis, self.block, self.shape[::-1],
                        self.data.T if self.data_layout == "plain" else self.data,
                        self.scales.T if self.scale_layout == "plain" else self.scales,
                        self.scale_layout, self.data_layout)

    def _rows_blocks(self) -> tuple[int, int]:
        return self.shape[1 - self.axis], -(-self.shape[self.axis] // self.block)

    def plain_scales(self) -> np.ndarray:
        """The E8M0 codes in the plain layout (arranged like the logical tensor)."""
        if self.scale_layout == "plain":
            return self.scales
        plain = unshuffle_scales(self.scales, *self._rows_blocks())
        return plain if self.axis == 1 else plain.T

    def scale_rows(self) -> np.ndarray:
        """The plain scales as [rows, blocks] (block axis last), the matrix a kernel reads."""
        if len(self.shape) != 2:
            raise MXError(f"scale_rows: a 2-D tensor is needed, this one has shape {self.shape}")
        s = self.plain_scales()
        return s if self.axis == 1 else s.T

    def kernel_bytes(self) -> np.ndarray:
        """The element bytes a kernel reads, [rows, K bytes] with the block axis last and packed as in memory
        (fp4 two per byte, fp6 `pack_fp6`, fp8 one per byte), not pre-shuffled."""
        if len(self.shape) != 2:
            raise MXError(f"kernel_bytes: a 2-D tensor is needed, this one has shape {self.shape}")
        if self.data_layout == "16x16":
            return unshuffle_weight(self.data)
        data = self.data if self.axis == 1 else self.data.T
        return pack_fp6(data) if FORMATS[self.fmt].bits == 6 else data

    def codes(self) -> np.ndarray:
        """Element codes one per byte, in the logical shape."""
        bits = FORMATS[self.fmt].bits
        n = self.shape[self.axis]
        if self.data_layout == "16x16":
            raw = unshuffle_weight(self.data)
            rows = unpack_fp4(raw, n) if bits == 4 else unpack_fp6(raw, n) if bits == 6 else raw
            return rows if self.axis == 1 else rows.T
        if bits != 4:
            return self.data
        moved = np.moveaxis(self.data, self.axis, -1)
        return np.moveaxis(unpack_fp4(moved, n), -1, self.axis)

    def dequantize(self) -> np.ndarray:
        """The values this tensor represents, in float64 (element value times its block's scale), in any layout."""
        vals = np.moveaxis(codes_to_float(self.codes(), self.fmt), self.axis, -1)
        scale = np.repeat(np.moveaxis(e8m0_to_float(self.plain_scales()), self.axis, -1), self.block, axis=-1)
        return np.moveaxis(vals * scale[..., : vals.shape[-1]], -1, self.axis)

    def shuffle(self, scales: bool = True, weight: bool = False) -> MXTensor:
        """This tensor with its scales in the pre-shuffled layout (`scales`) and/or its bytes in the 16x16
        pre-shuffled weight layout (`weight`); a layout already shuffled stays so."""
        s = shuffle_scales(self.scale_rows()) if scales and self.scale_layout == "plain" else self.scales
        d = shuffle_weight(self.kernel_bytes()) if weight and self.data_layout == "plain" else self.data
        return MXTensor(self.fmt, self.axis, self.block, self.shape, d, s,
                        "shuffled" if scales else self.scale_layout, "16x16" if weight else self.data_layout)

    def unshuffle(self) -> MXTensor:
        """This tensor in the plain layouts."""
        if self.scale_layout == "plain" and self.data_layout == "plain":
            return self
        data = self.data
        if self.data_layout == "16x16":
            data = self.codes()
            if FORMATS[self.fmt].bits == 4:
                data = np.ascontiguousarray(np.moveaxis(pack_fp4(np.moveaxis(data, self.axis, -1)), -1, self.axis))
        return MXTensor(self.fmt, self.axis, self.block, self.shape, data, self.plain_scales())


def row_bytes(fmt: str, count: int) -> int:
    """Bytes one K-contiguous row of `count` elements occupies in memory (fp4 two per byte, fp6 `pack_fp6`'s
    groups of four codes in three bytes, fp8 one per byte)."""
    bits = element_format(fmt).bits
    return -(-count // 2) if bits == 4 else 3 * -(-count // 4) if bits == 6 else count


def weights(w, fmt: str, block: int = BLOCK) -> MXTensor:
    """MX weights from a PyTorch-style weight matrix `w` of shape [N, K] (out_features x in_features): quantized
    along K and returned as the logical (K, N) B of `matmul(x, B)` (`x @ w.T`). The transpose is a view, so the
    bytes stay [N, K] row-major: the layout the scaled kernels read, with nothing copied."""
    arr = np.asarray(w)
    if arr.ndim != 2:
        raise MXError(f"w: expected a 2-D [N, K] weight matrix, got shape {arr.shape}")
    return quantize_mx(arr, fmt, axis=1, block=block).T


def quantize_mx(x, fmt: str, axis: int = -1, block: int = BLOCK) -> MXTensor:
    """Quantize a float array to MX by the OCP rules (see the module docstring); blocks run along `axis`."""
    f = element_format(fmt)
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" and arr.dtype not in (ml_dtypes.bfloat16,):
        raise MXError(f"x: expected a real numeric array, got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise MXError("x: expected an array with at least one dimension")
    if not isinstance(block, int) or block <= 0:
        raise MXError(f"block: expected a positive int, got {block!r}")
    if not isinstance(axis, int) or not -arr.ndim <= axis < arr.ndim:
        raise MXError(f"axis: {axis!r} is out of range for an array of {arr.ndim} dimensions")
    axis %= arr.ndim
    v = np.moveaxis(arr.astype(np.float64), axis, -1)
    n = v.shape[-1]
    nblocks = max(1, -(-n // block))
    padded = np.zeros((*v.shape[:-1], nblocks * block))
    padded[..., :n] = v
    blocks = padded.reshape(*v.shape[:-1], nblocks, block)
    finite = np.isfinite(blocks).all(axis=-1)
    amax = np.where(np.isfinite(blocks), np.abs(blocks), 0.0).max(axis=-1)
    with np.errstate(divide="ignore"):
        shared = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - f.emax
    shared = np.where(amax > 0, shared, -E8M0_BIAS)
    shared = np.clip(shared, -E8M0_BIAS, E8M0_BIAS)
    scales = np.where(finite, shared + E8M0_BIAS, E8M0_NAN).astype(np.uint8)
    scaled = blocks / np.ldexp(1.0, shared.astype(np.int32))[..., None]
    scaled = np.where(finite[..., None], scaled, 0.0)
    scaled = np.clip(scaled, -f.max_normal, f.max_normal)
    codes = scaled.astype(np.float32).astype(f.dtype).view(np.uint8).reshape(*v.shape[:-1], -1)[..., :n]
    data = pack_fp4(codes) if f.bits == 4 else codes
    return MXTensor(fmt=fmt, axis=axis, block=block, shape=tuple(arr.shape),
                    data=np.ascontiguousarray(np.moveaxis(data, -1, axis)),
                    scales=np.ascontiguousarray(np.moveaxis(scales, -1, axis)))


def _need_2d(name: str, a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 2 or a.dtype != np.uint8:
        raise MXError(f"{name}: expected a 2-D uint8 array, got shape {a.shape} dtype {a.dtype}")
    return a


def shuffle_scales(scales: np.ndarray) -> np.ndarray:
    """Plain scales [rows, K/32] -> the pre-shuffled layout (rows padded to 256, columns to 8, zero-filled)."""
    s = _need_2d("scales", scales)
    rows, cols = s.shape
    pr, pc = -(-rows // 256) * 256, -(-cols // 8) * 8
    padded = np.zeros((pr, pc), np.uint8)
    padded[:rows, :cols] = s
    return padded.reshape(pr // 32, 2, 16, pc // 8, 2, 4).transpose(0, 3, 5, 2, 4, 1).reshape(pr, pc).copy()


def unshuffle_scales(shuffled: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Inverse of `shuffle_scales`: the plain [rows, cols] scales."""
    s = _need_2d("scales", shuffled)
    pr, pc = s.shape
    if pr % 256 or pc % 8 or rows > pr or cols > pc:
        raise MXError(f"scales: shape {s.shape} is not a shuffled layout of [{rows}, {cols}] "
                      "(rows padded to 256, columns to 8)")
    plain = s.reshape(pr // 32, pc // 8, 4, 16, 2, 2).transpose(0, 5, 3, 1, 4, 2).reshape(pr, pc)
    return plain[:rows, :cols].copy()


def shuffle_weight(data: np.ndarray, rows: int = 16) -> np.ndarray:
    """Weight bytes [N, K bytes] -> the pre-shuffled layout (N a multiple of `rows`, K bytes of 32): aiter's
    aiter/ops/shuffle.py shuffle_weight(x, layout=(rows, 16)) on 1-byte elements, i.e. view
    [N/rows, rows, K/32, 2, 16] permuted (0, 2, 3, 1, 4): for each `rows` x 32-byte block, two 16-byte halves,
    each holding its 16 bytes of every row in turn. rows=16: MX weights, aiter a8w8; rows=32: aiter I8gemm."""
    d = _need_2d("weight", data)
    n, kb = d.shape
    if n % rows or kb % 32:
        raise MXError(f"weight: shape {d.shape} cannot be shuffled {rows}x16: rows must be a multiple of {rows} "
                      "and bytes per row a multiple of 32")
    return d.reshape(n // rows, rows, kb // 32, 2, 16).transpose(0, 2, 3, 1, 4).reshape(n, kb).copy()


def unshuffle_weight(shuffled: np.ndarray) -> np.ndarray:
    """Inverse of `shuffle_weight`."""
    d = _need_2d("weight", shuffled)
    n, kb = d.shape
    if n % 16 or kb % 32:
        raise MXError(f"weight: shape {d.shape} is not a 16x16 shuffled layout")
    return d.reshape(n // 16, kb // 32, 2, 16, 16).transpose(0, 3, 1, 2, 4).reshape(n, kb).copy()
