"""Which matrix (MFMA) instructions a spec offers, and what each computes: shape, input/accumulator dtypes
and register footprints. Input and accumulator types and register sizes come from the spec's operands and
data formats; the M x N x K shape is read from the instruction name (AMD's naming, which LLVM shares) and
must agree with the operand sizes, so a misnamed or unusual entry is left out rather than mis-used."""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.mfma import WAVE64, parse_mfma_name
from jitgemm.isa.model import Spec

from .dtypes import DType, element_of


@dataclass(frozen=True)
class Mfma:
    name: str
    encoding: str
    m: int
    n: int
    k: int
    a: DType
    b: DType
    acc: DType
    a_regs: int     # 32-bit registers per lane for the A operand
    b_regs: int
    acc_regs: int   # for C and D

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


_CATALOGS: dict[str, tuple[Mfma, ...]] = {}


def mfma_catalog(spec: Spec) -> tuple[Mfma, ...]:
    """Single-block MFMAs of the spec whose operands the IR's dtypes describe (computed once per spec)."""
    cached = _CATALOGS.get(spec.sha256) if spec.sha256 else None
    if cached is not None:
        return cached
    out = []
    for i, (name, _aliases, _opcodes) in enumerate(spec.instructions.heads):   # names only: builds just the MFMAs
        shape = parse_mfma_name(name)
        if shape is None or shape.blocks != 1 or shape.xf32:
            # multi-block MFMAs are not used by the generators; XF32 rounds its fp32 inputs to a shorter
            # mantissa, which the spec's data formats do not tell apart from IEEE fp32
            continue
        inst = spec.instructions[i]
        m, n, k = shape.m, shape.n, shape.k
        for ie in inst.encodings:
            ops = {o.field_name: o for o in ie.operands}
            if not {"VDST", "SRC0", "SRC1", "SRC2"} <= ops.keys():
                continue
            fmts = {f: spec.data_formats.get(ops[f].data_format or "") for f in ("SRC0", "SRC1", "VDST")}
            if any(v is None for v in fmts.values()):
                continue
            a, b, acc = (element_of(fmts[f]) for f in ("SRC0", "SRC1", "VDST"))
            if a is None or b is None or acc is None:
                continue
            a_elems = fmts["SRC0"].component_count
            acc_elems = fmts["VDST"].component_count
            # one block: every lane holds M*N/64 results and M*K/64 A elements
            if acc_elems * WAVE64 != m * n or a_elems * WAVE64 != m * k:
                continue
            out.append(Mfma(inst.name, ie.encoding_name, m, n, k, a, b, acc,
                            ops["SRC0"].size // 32, ops["SRC1"].size // 32, ops["VDST"].size // 32))
            break
    result = tuple(out)
    if spec.sha256:
        _CATALOGS[spec.sha256] = result
    return result


def mfmas_for(spec: Spec, a: DType, b: DType) -> tuple[Mfma, ...]:
    """MFMAs that multiply A of dtype `a` by B of dtype `b`, largest shapes first."""
    found = [x for x in mfma_catalog(spec) if x.a == a and x.b == b]
    return tuple(sorted(found, key=lambda x: (-x.m * x.n, -x.k, x.name)))
