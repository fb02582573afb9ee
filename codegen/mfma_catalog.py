"""Which matrix (MFMA) instructions a spec offers, and what each computes: shape, input/accumulator dtypes
and register footprints. Input and accumulator types and register sizes come from the spec's operands and
data formats; the M x N x K shape is read from the instruction name (AMD's naming, which LLVM shares) and
must agree with the operand sizes, so a misnamed or unusual entry is left out rather than mis-used."""

from __future__ import annotations

from dataclasses import dataclass

from jitgemm.isa.spec.mfma import WAVE64, parse_mfma_name
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import target_of_spec, target_profile

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
    cbsz: int | None = None   # f8f6f4 MFMAs: the CBSZ (A) / BLGP (B) codes that select the element formats
    blgp: int | None = None
    scaled: bool = False      # takes E8M0 block scales (SCALE_SRC0/SCALE_SRC1, the ENC_VOP3PX2 form)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


_CATALOGS: dict[str, tuple[Mfma, ...]] = {}


def mfma_catalog(spec: Spec) -> tuple[Mfma, ...]:
    """Single-block MFMAs of the spec whose operands the IR's dtypes describe (computed once per spec)."""
    cached = _CATALOGS.get(spec.sha256) if spec.sha256 else None
    if cached is not None:
        return cached
    # which 8-bit float encoding the target's MFMAs read (FNUZ on gfx942, OCP on gfx950): the spec's FP8 data
    # formats have the same field widths for both, the target profile says which
    flavour = target_profile(target_of_spec(spec)).fp8_flavour
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
            a, b, acc = (element_of(fmts[f], flavour) for f in ("SRC0", "SRC1", "VDST"))
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


# --- gfx950's f8f6f4 MFMAs --------------------------------------------------------------------------------------
# CBSZ (A) / BLGP (B) code of each element format an f8f6f4 MFMA reads (CDNA 4 ISA guide, matrix-core chapter,
# "V_MFMA_*_F8F6F4"; LLVM AMDGPU's cbsz/blgp operand of llvm.amdgcn.mfma.scale.f32.*.f8f6f4). The spec types these
# operands FMT_NUM_PK8_B32 and does not enumerate the codes, so they are this named table;
# tests/codegen/test_mx_catalog.py checks it against llvm-mc-22 (register tuple size per code) and the emulator's
# formats.
F8F6F4_FORMAT_CODES = {"fp8_e4m3": 0, "fp8_e5m2": 1, "fp6_e2m3": 2, "fp6_e3m2": 3, "fp4": 4}
F8F6F4_ELEMENTS_PER_LANE = 32        # every f8f6f4 shape: M * K / 64 = 32 (16x16x128, 32x32x64)

_F8F6F4: dict[str, tuple[Mfma, ...]] = {}


def lane_registers(dt: DType) -> int:
    """32-bit registers one lane's f8f6f4 operand of `dt` fills: 32 elements of dt.bits bits (8 fp8/bf8, 6
    fp6/bf6, 4 fp4; the assembler's rule per CBSZ/BLGP code is isa/operand_syntax.f8f6f4_registers, which the
    catalog checks against this). The weight-only path keeps 32 values per lane the same way."""
    return F8F6F4_ELEMENTS_PER_LANE * dt.bits // 32


def _element_formats(spec: Spec, flavour: str) -> dict[str, DType]:
    """The spec's single-element float data formats the IR knows, by dtype name (FMT_NUM_FP4 -> fp4, ...)."""
    out = {}
    for fmt in spec.data_formats.values():
        if fmt.component_count != 1:
            continue
        d = element_of(fmt, flavour)
        if d is not None and d.name in F8F6F4_FORMAT_CODES:
            out[d.name] = d
    return out


def f8f6f4_catalog(spec: Spec) -> tuple[Mfma, ...]:
    """gfx950's f8f6f4 MFMAs (unscaled and block-scaled, 16x16x128 and 32x32x64) as one entry per (A format,
    B format) pair: the formats are chosen per operand by CBSZ/BLGP, and each operand's register count follows
    from its element width (32 elements per lane: 8 registers for fp8/bf8, 6 for fp6/bf6, 4 for fp4). Which
    instructions qualify is read from the spec: an MFMA whose A/B operands are untyped 32-bit words
    (FMT_NUM_PK8_B32, sized for the widest format), whose shape gives 32 elements per lane, with f32 results;
    the scaled forms carry SCALE_SRC0/SCALE_SRC1 operands. Empty for a spec without them (gfx942)."""
    key = spec.sha256
    if key and key in _F8F6F4:
        return _F8F6F4[key]
    from jitgemm.isa import operand_syntax as syn

    flavour = target_profile(target_of_spec(spec)).fp8_flavour or "ocp"
    elements = _element_formats(spec, flavour)
    out = []
    for inst in spec.instructions:
        # the scaled forms are named V_MFMA_SCALE_F32_<M>X<N>X<K>_F8F6F4 (AMD's and LLVM's spelling)
        shape = parse_mfma_name(inst.name.upper().replace("V_MFMA_SCALE_", "V_MFMA_", 1))
        if shape is None or shape.blocks != 1:
            continue
        for ie in inst.encodings:
            ops = {o.field_name: o for o in ie.operands}
            if not {"VDST", "SRC0", "SRC1", "SRC2"} <= ops.keys():
                continue
            if ops["SRC0"].data_format != syn.F8F6F4_OPERAND_FORMAT or \
                    ops["SRC1"].data_format != syn.F8F6F4_OPERAND_FORMAT:
                continue
            acc_fmt = spec.data_formats.get(ops["VDST"].data_format or "")
            acc = element_of(acc_fmt, flavour) if acc_fmt is not None else None
            if acc is None or acc.name != "fp32" or acc_fmt.component_count * WAVE64 != shape.m * shape.n:
                continue
            if shape.m * shape.k != F8F6F4_ELEMENTS_PER_LANE * WAVE64:
                continue
            scaled = {"SCALE_SRC0", "SCALE_SRC1"} <= ops.keys()
            widest = ops["SRC0"].size // 32
            for a_name, a_code in F8F6F4_FORMAT_CODES.items():
                for b_name, b_code in F8F6F4_FORMAT_CODES.items():
                    if a_name not in elements or b_name not in elements:
                        continue
                    a, b = elements[a_name], elements[b_name]
                    a_regs, b_regs = lane_registers(a), lane_registers(b)
                    # the assembler's register-count rule for the same codes (isa/operand_syntax.py)
                    assert syn.f8f6f4_registers(a_code, widest) == a_regs, (a_name, a_code)
                    assert syn.f8f6f4_registers(b_code, widest) == b_regs, (b_name, b_code)
                    out.append(Mfma(inst.name, ie.encoding_name, shape.m, shape.n, shape.k, a, b, acc, a_regs,
                                    b_regs, ops["VDST"].size // 32, a_code, b_code, scaled))
            break
    result = tuple(out)
    if key:
        _F8F6F4[key] = result
    return result


def f8f6f4_mfmas_for(spec: Spec, a: DType, b: DType, scaled: bool) -> tuple[Mfma, ...]:
    """The f8f6f4 MFMAs multiplying A of dtype `a` by B of dtype `b`, block-scaled or not, 16x16x128 first (its
    scale operand matches the pre-shuffled scale layout: one dword per lane, four scales chosen by op_sel)."""
    found = [x for x in f8f6f4_catalog(spec) if x.a == a and x.b == b and x.scaled == scaled]
    return tuple(sorted(found, key=lambda x: (x.m, x.name)))


def f8f6f4_named(spec: Spec, name: str, a: DType, b: DType) -> Mfma | None:
    """The f8f6f4 catalog entry of MFMA `name` (any spelling the spec finds) for formats a x b, or None."""
    inst = spec.find_instruction(name)
    if inst is None:
        return None
    for x in f8f6f4_catalog(spec):
        if x.name == inst.name and x.a == a and x.b == b:
            return x
    return None
