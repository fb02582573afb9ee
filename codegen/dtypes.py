"""Element types the GEMM IR speaks about, their numpy counterparts, and how they are recognised in the ISA
spec's data formats (by exponent/mantissa widths or integer width, never by format name), so the choice of
MFMA instruction for a dtype comes from the spec."""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.model import DataFormat


@dataclass(frozen=True)
class DType:
    name: str                 # the IR's spelling
    bits: int
    kind: str                 # "float" or "int"
    exponent_bits: int = 0    # for floats
    mantissa_bits: int = 0
    numpy_name: str = ""      # numpy type: `np.<name>`, or `ml_dtypes.<name>` (imported on first use)
    aliases: tuple[str, ...] = ()

    @property
    def numpy(self) -> type:
        import numpy as np

        if hasattr(np, self.numpy_name):
            return getattr(np, self.numpy_name)
        import ml_dtypes

        return getattr(ml_dtypes, self.numpy_name)

    @property
    def bytes(self) -> int:
        return self.bits // 8


# fp8 on gfx942 is the FNUZ flavour: no negative zero, one NaN, bias 8 (e4m3) / 16 (e5m2)
# (LLVM AMDGPU: "FP8 E4M3FNUZ / BF8 E5M2FNUZ" for gfx940-942; ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz).
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("fp32", 32, "float", 8, 23, "float32", ("f32", "float32")),
    DType("fp16", 16, "float", 5, 10, "float16", ("f16", "float16", "half")),
    DType("bf16", 16, "float", 8, 7, "bfloat16", ("bfloat16",)),
    DType("fp8", 8, "float", 4, 3, "float8_e4m3fnuz", ("e4m3", "fp8e4m3fnuz", "float8_e4m3fnuz")),
    DType("bf8", 8, "float", 5, 2, "float8_e5m2fnuz", ("e5m2", "fp8e5m2fnuz", "float8_e5m2fnuz")),
    DType("int8", 8, "int", numpy_name="int8", aliases=("i8",)),
    DType("int32", 32, "int", numpy_name="int32", aliases=("i32",)),
)}

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
    for d in DTYPES.values():
        if np.dtype(d.numpy) == np_dtype:
            return d
    raise ValueError(f"numpy dtype {np_dtype} is not supported; accepted: "
                     + ", ".join(f"{d.name} ({np.dtype(d.numpy).name})" for d in DTYPES.values()))


def element_of(fmt: DataFormat) -> DType | None:
    """The element dtype of a spec data format (e.g. FMT_NUM_PK4_BF16 -> bf16), or None when it is not one
    the IR knows. Floats are told apart by the widths of their Exponent/Mantissa attribute fields."""
    if fmt.component_count <= 0 or fmt.bit_count % fmt.component_count:
        return None
    bits = fmt.bit_count // fmt.component_count
    fields = {f.name.lower(): f for f in fmt.attributes[0].fields} if fmt.attributes else {}
    if fmt.data_type == "float":
        exp, man = fields.get("exponent"), fields.get("mantissa")
        if exp is None or man is None:
            return None
        for d in DTYPES.values():
            if d.kind == "float" and d.bits == bits and (d.exponent_bits, d.mantissa_bits) == (exp.width, man.width):
                return d
        return None
    if fmt.data_type == "integer":
        for d in DTYPES.values():
            if d.kind == "int" and d.bits == bits:
                return d
    return None
