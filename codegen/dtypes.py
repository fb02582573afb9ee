"""Element types the GEMM IR speaks about, their numpy counterparts, and how they are recognised in the ISA
spec's data formats (by exponent/mantissa widths or integer width, never by format name), so the choice of
MFMA instruction for a dtype comes from the spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # only named in annotations: the IR's dtypes load without the spec model
    from jitgemm.isa.spec.model import DataFormat


@dataclass(frozen=True)
class DType:
    """An element type: its IR name, width and kind, the float's field widths, and its numpy counterpart. (A
    docstring of its own also spares every process dataclasses' signature-built one.)"""

    name: str                 # the IR's spelling
    bits: int
    kind: str                 # "float" or "int"
    exponent_bits: int = 0    # for floats
    mantissa_bits: int = 0
    numpy_name: str = ""      # numpy type: `np.<name>`, or `ml_dtypes.<name>` (imported on first use)
    aliases: tuple[str, ...] = ()
    flavour: str = ""         # 8-bit floats: "fnuz" (gfx942's MFMAs) or "ocp" (gfx950's); the profile's fp8_flavour

    @property
    def numpy(self) -> type:
        import numpy as np

        if hasattr(np, self.numpy_name):
            return getattr(np, self.numpy_name)
        import ml_dtypes

        return getattr(ml_dtypes, self.numpy_name)

    @property
    def bytes(self) -> int:
        """Bytes per element for byte-sized types; sub-byte types (fp4, fp6) have none: use `storage_bytes`."""
        if self.bits % 8:
            raise ValueError(f"{self.name} is a {self.bits}-bit type: elements are packed, use storage_bytes()")
        return self.bits // 8

    @property
    def packed(self) -> bool:
        """Sub-byte elements stored as a little-endian bit stream (fp4: two per byte, low nibble first;
        fp6: four per three bytes), the order the gfx950 f8f6f4 MFMAs read them from registers."""
        return self.bits % 8 != 0

    def storage_bytes(self, count: int) -> int:
        """Bytes that `count` consecutive elements occupy (rounded up to whole bytes)."""
        return -(-count * self.bits // 8)

    @property
    def microscaling(self) -> bool:
        """An OCP MX element type (block-scaled with E8M0 scales on gfx950's scaled MFMAs)."""
        return self.name in MX_ELEMENTS


# fp8 on gfx942 is the FNUZ flavour: no negative zero, one NaN, bias 8 (e4m3) / 16 (e5m2)
# (LLVM AMDGPU: "FP8 E4M3FNUZ / BF8 E5M2FNUZ" for gfx940-942; ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz).
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("fp32", 32, "float", 8, 23, "float32", ("f32", "float32")),
    DType("fp16", 16, "float", 5, 10, "float16", ("f16", "float16", "half")),
    DType("bf16", 16, "float", 8, 7, "bfloat16", ("bfloat16",)),
    DType("fp8", 8, "float", 4, 3, "float8_e4m3fnuz", ("e4m3", "fp8e4m3fnuz", "float8_e4m3fnuz"), "fnuz"),
    DType("bf8", 8, "float", 5, 2, "float8_e5m2fnuz", ("e5m2", "fp8e5m2fnuz", "float8_e5m2fnuz"), "fnuz"),
    DType("int8", 8, "int", numpy_name="int8", aliases=("i8",)),
    DType("int32", 32, "int", numpy_name="int32", aliases=("i32",)),
    # OCP formats (OCP 8-bit Floating Point Specification v1.0; OCP Microscaling Formats (MX) v1.0 section 5):
    # gfx950's MFMAs read fp8/bf8 in these encodings (LLVM AMDGPU: gfx950 has the OCP FP8 conversions) and its
    # f8f6f4 MFMAs take fp6/fp4 selected by cbsz/blgp (CDNA4 ISA guide, matrix core chapter).
    DType("fp8_e4m3", 8, "float", 4, 3, "float8_e4m3fn", ("e4m3fn", "fp8e4nv", "float8_e4m3fn", "mxfp8"), "ocp"),
    DType("fp8_e5m2", 8, "float", 5, 2, "float8_e5m2", ("e5m2ocp", "fp8e5", "float8_e5m2", "bf8_ocp"), "ocp"),
    DType("fp6_e2m3", 6, "float", 2, 3, "float6_e2m3fn", ("e2m3", "float6_e2m3fn", "mxfp6")),
    DType("fp6_e3m2", 6, "float", 3, 2, "float6_e3m2fn", ("e3m2", "float6_e3m2fn", "bf6")),
    DType("fp4", 4, "float", 2, 1, "float4_e2m1fn", ("fp4_e2m1", "e2m1", "float4_e2m1fn", "mxfp4")),
    # the MX block scale: a power of two 2^(code-127), 0xFF = NaN (OCP MX v1.0 section 5.4)
    DType("e8m0", 8, "scale", 8, 0, "float8_e8m0fnu", ("float8_e8m0fnu", "e8m0fnu")),
)}

MX_ELEMENTS = ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4")

_BY_ALIAS = {alias: d for d in DTYPES.values() for alias in (d.name, *d.aliases)}


def dtype(name: str) -> DType:
    """Look a dtype up by name or alias; ValueError listing the accepted names."""
    try:
        return _BY_ALIAS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; accepted: {', '.join(DTYPES)}") from None


def of_numpy(np_dtype) -> DType:
    """The IR dtype of a numpy dtype (bf16 and fp8 through ml_dtypes)."""
    import numpy as np

    np_dtype = np.dtype(np_dtype)
    named = [d for d in DTYPES.values() if d.numpy_name == np_dtype.name]
    # by name first: `d.numpy` of a bf16/fp8 type imports ml_dtypes (~0.5 s of CPU), which an fp16 or fp32
    # array never needs; the equality check keeps a byte-swapped array refused as before
    for d in named + [d for d in DTYPES.values() if d not in named]:
        if np.dtype(d.numpy) == np_dtype:
            return d
    raise ValueError(f"numpy dtype {np_dtype} is not supported; accepted: "
                     + ", ".join(f"{d.name} ({np.dtype(d.numpy).name})" for d in DTYPES.values()))


def element_of(fmt: DataFormat, fp8_flavour: str = "fnuz") -> DType | None:
    """The element dtype of a spec data format (e.g. FMT_NUM_PK4_BF16 -> bf16), or None when it is not one
    the IR knows. Floats are told apart by the widths of their Exponent/Mantissa attribute fields; 8-bit floats
    by the target's `fp8_flavour` as well (the spec's FP8 formats do not say FNUZ or OCP: the profile does)."""
    if fmt.component_count <= 0 or fmt.bit_count % fmt.component_count:
        return None
    bits = fmt.bit_count // fmt.component_count
    fields = {f.name.lower(): f for f in fmt.attributes[0].fields} if fmt.attributes else {}
    if fmt.data_type == "float":
        exp, man = fields.get("exponent"), fields.get("mantissa")
        if exp is None or man is None:
            return None
        for d in DTYPES.values():
            if d.kind == "float" and d.bits == bits and (d.exponent_bits, d.mantissa_bits) == (exp.width, man.width) \
                    and (bits != 8 or d.flavour == fp8_flavour):
                return d
        return None
    if fmt.data_type == "integer":
        for d in DTYPES.values():
            if d.kind == "int" and d.bits == bits:
                return d
    return None
