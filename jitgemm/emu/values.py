"""Typed views of register bits, derived from the spec's data formats.

An operand's data format (FMT_NUM_F32, FMT_NUM_I32, FMT_NUM_PK4_BF16, ...) says how its bits are read:
float formats are recognised by the widths of their Exponent/Mantissa fields, integers by width and the
field's signedness, so `S0 + S1` means a float add for V_ADD_F32 and a wrapping integer add for V_ADD_U32
without any per-instruction table. Arithmetic on narrow floats is done in float32 (bf16, fp8) or in the
format itself (f16, f32, f64); results are rounded to the destination format with round-to-nearest-even.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitgemm.isa.spec.model import DataFormat, Spec

# (exponent bits, mantissa bits) -> numpy dtype, for the formats whose meaning is the same on every target; a
# name is an ml_dtypes type, imported on first use (`float_dtype`): its extension costs a new process ~0.5 s CPU,
# which an fp16/fp32/int8 kernel's emulation never needs (issue 31).
FLOAT_DTYPES: dict[tuple[int, int], np.dtype | str] = {
    (8, 23): np.dtype(np.float32),
    (5, 10): np.dtype(np.float16),
    (11, 52): np.dtype(np.float64),
    (8, 7): "bfloat16",
    # CDNA 4 microscaling element formats (OCP MX v1.0; CDNA 4 ISA guide, "Data formats"): fp6 E2M3, bf6 E3M2,
    # fp4 E2M1, none with infinities or NaN
    (2, 3): "float6_e2m3fn",
    (3, 2): "float6_e3m2fn",
    (2, 1): "float4_e2m1fn",
}
# fp8 depends on the target (its profile's `fp8_flavour`): the same byte means different numbers. gfx942 takes
# the FNUZ flavour (LLVM AMDGPUUsage, CDNA 3 ISA: E4M3/E5M2 with bias 8/16, no infinities, one NaN 0x80);
# gfx950 the OCP one (OCP 8-bit floating point spec: E4M3FN bias 7 with NaN 0x7f/0xff, E5M2 IEEE-like).
FP8_DTYPES: dict[str, dict[tuple[int, int], str]] = {
    "fnuz": {(4, 3): "float8_e4m3fnuz", (5, 2): "float8_e5m2fnuz"},
    "ocp": {(4, 3): "float8_e4m3fn", (5, 2): "float8_e5m2"},
}


def float_dtype(key: tuple[int, int], fp8: str = "fnuz") -> np.dtype | None:
    """The numpy dtype of a float format by (exponent bits, mantissa bits) and the target's fp8 flavour (None:
    no such format); ml_dtypes is imported only for the formats that are its own."""
    found = FLOAT_DTYPES.get(key) or FP8_DTYPES[fp8].get(key)
    if isinstance(found, str):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, found))
    return found


def fp8_flavour(spec: Spec | None) -> str:
    """'fnuz' or 'ocp': the fp8 meaning of the target the spec describes (its target profile says)."""
    from jitgemm.isa.spec.targets import target_of_spec, target_profile

    if spec is None:
        return "fnuz"
    flavour = str(target_profile(target_of_spec(spec)).get("fp8_flavour", "fnuz"))
    if flavour not in FP8_DTYPES:
        raise ValueError(f"target profile of {target_of_spec(spec)}: fp8_flavour {flavour!r} is not one of "
                         f"{sorted(FP8_DTYPES)}")
    return flavour


INT_DTYPES = {(8, True): np.int8, (8, False): np.uint8, (16, True): np.int16, (16, False): np.uint16,
              (32, True): np.int32, (32, False): np.uint32, (64, True): np.int64, (64, False): np.uint64}


@dataclass(frozen=True)
class Fmt:
    """How one operand's bits are typed: `kind` 'f' (float), 'i' (signed), 'u' (unsigned), 'b' (bits);
    `bits` per component; `count` components; `dtype` of one component."""

    name: str
    kind: str
    bits: int
    count: int
    dtype: np.dtype

    @property
    def total_bits(self) -> int:
        return self.bits * self.count

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def component(self) -> Fmt:
        """The format of one component (a packed operand's element: what a matrix instruction multiplies)."""
        return Fmt(self.name, self.kind, self.bits, 1, self.dtype)


BITS32 = Fmt("B32", "b", 32, 1, np.dtype(np.uint32))
BITS64 = Fmt("B64", "b", 64, 1, np.dtype(np.uint64))
F32 = Fmt("F32", "f", 32, 1, np.dtype(np.float32))


def _int_dtype(bits: int, signed: bool) -> np.dtype:
    for width in (8, 16, 32, 64):
        if bits <= width:
            return np.dtype(INT_DTYPES[(width, signed)])
    return np.dtype(np.uint64)


def fmt_of(fmt: DataFormat | None, size: int, fp8: str = "fnuz") -> Fmt:
    """The Fmt of a data format (None: untyped bits of `size`); `fp8` is the target's fp8 flavour."""
    if fmt is None or fmt.component_count <= 0:
        bits = 64 if size == 64 else 32
        return BITS64 if bits == 64 else BITS32
    count = fmt.component_count
    bits = fmt.bit_count // count if fmt.bit_count % count == 0 else fmt.bit_count
    fields = {f.name.lower(): f for f in fmt.attributes[0].fields} if fmt.attributes else {}
    if fmt.data_type == "float" and "exponent" in fields and "mantissa" in fields:
        key = (fields["exponent"].width, fields["mantissa"].width)
        dtype = float_dtype(key, fp8)
        if dtype is not None:
            return Fmt(fmt.name, "f", bits, count, dtype)
    if fmt.data_type == "integer":
        field = fields.get("integer")
        signed = field is not None and (field.signedness or "").lower() == "signed"
        return Fmt(fmt.name, "i" if signed else "u", bits, count, _int_dtype(bits, signed))
    if bits <= 1 or fmt.bit_count <= 1:  # FMT_ANY / FMT_NUM_B1: typed by the operand size
        width = 64 if size == 64 else 32
        return Fmt(fmt.name, "b", width, 1, _int_dtype(width, False))
    if count == 1 and bits > 64:  # descriptors, B128...: whole registers
        return Fmt(fmt.name, "b", 32, bits // 32, np.dtype(np.uint32))
    return Fmt(fmt.name, "b", bits, count, _int_dtype(bits, False))


_CACHE: dict[tuple[int, str | None, int], Fmt] = {}


def operand_fmt(spec: Spec, data_format: str | None, size: int) -> Fmt:
    """The Fmt of a spec operand (data format name and operand size in bits)."""
    key = (id(spec), data_format, size)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = fmt_of(spec.data_formats.get(data_format or ""), size, fp8_flavour(spec))
    return found


def to_typed(bits: np.ndarray, fmt: Fmt) -> np.ndarray:
    """Register bits (uint32, or uint64 for a 64-bit operand) as values of a single-component format.

    Floats narrower than 32 bits come back as float32 (exact), so expressions compute in float32 and round
    once at the destination; integers narrower than 32 bits are sign- or zero-extended.
    """
    if fmt.bits == 64:
        b = bits.astype(np.uint64, copy=False)
        return b.view(fmt.dtype) if fmt.kind in "fi" else b
    b = bits.astype(np.uint32, copy=False)
    if fmt.kind == "f":
        if fmt.bits == 32:
            return b.view(np.float32)
        if fmt.bits == 16:
            return (b & 0xFFFF).astype(np.uint16).view(fmt.dtype).astype(np.float32)
        return (b & 0xFF).astype(np.uint8).view(fmt.dtype).astype(np.float32)
    if fmt.bits >= 32:
        return b.view(np.int32) if fmt.kind == "i" else b
    mask = (1 << fmt.bits) - 1
    if fmt.kind == "i":
        shift = 32 - fmt.bits
        return ((b & mask) << shift).view(np.int32) >> shift
    return b & np.uint32(mask)


def from_typed(value, fmt: Fmt, shape=None) -> np.ndarray:
    """A computed value as the bits of a destination format (uint32, or uint64 for 64-bit formats).

    Floats round to the format (RNE); integers wrap to the width, as the hardware's results do; narrow
    (16-bit) results are zero-extended into the 32-bit register."""
    v = np.asarray(value)
    if shape is not None and v.shape != shape:
        v = np.broadcast_to(v, shape)
    if fmt.bits == 64:
        if fmt.kind == "f":
            return v.astype(np.float64).view(np.uint64)
        if v.dtype.kind == "f":
            v = v.astype(np.int64)
        return v.astype(np.uint64)
    if fmt.kind == "f":
        if fmt.bits == 32:
            return v.astype(np.float32).view(np.uint32)
        if fmt.bits == 16:
            return v.astype(fmt.dtype).view(np.uint16).astype(np.uint32)
        return v.astype(fmt.dtype).view(np.uint8).astype(np.uint32)
    if v.dtype == np.bool_:
        return v.astype(np.uint32)
    if v.dtype.kind == "f":
        v = v.astype(np.int64)
    out = v.astype(np.uint32)
    if fmt.bits < 32:
        out &= np.uint32((1 << fmt.bits) - 1)
    return out
