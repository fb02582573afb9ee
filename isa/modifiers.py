"""Modifiers (`offset:16`, `sc0`, `op_sel:[0,1]`, `quad_perm:[...]`, `dst_sel:WORD_1`, `format:[...]`, ...):
which ones a form offers (those its encoding has fields for), how each writes its fields, and how the
decoder reads them back in LLVM's print order, leaving out the values LLVM does not print.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from jitgemm.isa.spec.field_codec import Mismatch, signed_to_field

from . import operand_syntax as syn
from .instruction import Imm

if TYPE_CHECKING:  # forms imports this module
    from jitgemm.isa.spec.forms import Form


def _m_flag(form: Form, name: str, value, fields: dict) -> None:
    if value is not True and value != 1:
        raise Mismatch(f"{name} is a flag and takes no value")
    fields[syn.FLAG_FIELDS[name]] = 1


def _m_int(form: Form, name: str, value, fields: dict) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Mismatch(f"{name}: needs an integer")
    fname = syn.INT_FIELDS[name]
    codec = form.codecs[fname]
    fields[fname] = signed_to_field(codec, value, f"{name}:")


def _m_ds_offset(form: Form, name: str, value, fields: dict) -> None:
    if isinstance(value, str) and form.name in syn.SWIZZLE_MNEMONICS:
        value = _swizzle(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Mismatch("offset: needs an integer")
    lo, hi = form.codecs["OFFSET0"], form.codecs["OFFSET1"]
    width = lo.width + hi.width
    if not 0 <= value < (1 << width):
        raise Mismatch(f"offset:{value} is out of range of fields OFFSET1:OFFSET0 of {form.enc.name} "
                       f"({width} bits: 0..{(1 << width) - 1})")
    fields["OFFSET0"] = value & ((1 << lo.width) - 1)
    fields["OFFSET1"] = value >> lo.width


_SWIZZLE = re.compile(r'swizzle\((\w+)((?:,(?:-?\d+|0x[0-9a-fA-F]+|"[^"]*"))*)\)\Z', re.IGNORECASE)


def _swizzle(text: str) -> int:
    m = _SWIZZLE.match(text.replace(" ", ""))
    if m is None:
        raise Mismatch(f"offset:{text} is not a swizzle(MODE,...) pattern")
    args = tuple(int(a, 0) if not a.startswith('"') else a for a in m.group(2).split(",")[1:])
    value = syn.swizzle_value(m.group(1), args)
    if value is None:
        raise Mismatch(f"offset:{text} is not a valid swizzle (QUAD_PERM,a,b,c,d | BITMASK_PERM,\"01pip\" | "
                       "SWAP,n | REVERSE,n | BROADCAST,group,lane | ROTATE,dir,size | FFT,n)")
    return value


def _m_smem_offset(form: Form, name: str, value, fields: dict) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Mismatch("offset: needs an integer")
    fields["IMM"] = 1
    fields["OFFSET"] = signed_to_field(form.codecs["OFFSET"], value, "offset:")


def _m_list(form: Form, name: str, value, fields: dict) -> None:
    if not (isinstance(value, tuple) and all(isinstance(x, int) and x in (0, 1) for x in value)):
        raise Mismatch(f"{name}: needs a list of 0/1, e.g. {name}:[0,1]")
    fname = syn.LIST_FIELDS[name]
    codec = form.codecs[fname]
    n = form.nsrc
    bits = 0
    if form.scale_mfma and name in ("op_sel", "op_sel_hi"):
        # LLVM takes up to three entries and encodes the first two (one per scale source), no default of 1
        if len(value) > 4:   # llvm-mc-22 reads up to 4 (parseOperandArrayWithPrefix) and encodes the first two
            raise Mismatch(f"{name}: takes up to 4 values for {form.mnemonic}, got {len(value)}")
        fields[fname] = sum(b << i for i, b in enumerate(value[:2]))
        return
    if name == "op_sel" and form.name in syn.OPSEL_PER_BIT and n <= len(value) <= codec.width:
        n = len(value)
    if name == "op_sel" and form.opsel_dst and len(value) == n + 1:
        for i, b in enumerate(value[:-1]):
            bits |= b << i
        bits |= value[-1] << (codec.width - 1)
    else:
        # LLVM reads 1 to 4 entries (AMDGPUAsmParser::parseOperandArrayWithPrefix): missing sources are 0, and an
        # entry past what the instruction has is dropped (llvm-mc-22 -mcpu=gfx950: `op_sel:[1,0]` on a
        # three-source instruction, `op_sel:[0,0,0,1]` on v_pk_minimum3_f16 encode as op_sel:[1,0,0] / nothing)
        if not 1 <= len(value) <= max(4, codec.width):
            raise Mismatch(f"{name}: takes 1 to 4 values (one per source) for {form.mnemonic}, got {len(value)}")
        keep = codec.width if len(value) == codec.width and (form.vop3p or not n) \
            and form.name not in syn.SOURCES_ONLY_VOP3P else max(n, 1)
        for i, b in enumerate(value[:keep]):
            bits |= b << i
        if name == "op_sel_hi" and not form.mix:  # sources the instruction lacks keep LLVM's default of 1
            bits |= ((1 << codec.width) - 1) & ~((1 << max(min(len(value), keep), n)) - 1)
    fields[fname] = bits


def _m_mfma_neg(form: Form, name: str, value, fields: dict) -> None:
    width = form.codecs["BLGP"].width
    if not (isinstance(value, tuple) and 1 <= len(value) <= width and all(type(x) is int and x in (0, 1)
                                                                          for x in value)):
        raise Mismatch(f"neg: needs up to {width} values of 0/1 (A, B, C; missing ones are 0), e.g. neg:[0,0,1]")
    fields["BLGP"] = sum(b << i for i, b in enumerate(value))


def _m_omod(form: Form, name: str, value, fields: dict) -> None:
    v = syn.OMOD.get((name, value))
    if v is None:
        raise Mismatch(f"{name}:{value} is not an output modifier (use mul:2, mul:4 or div:2)")
    fields["OMOD"] = v


def _m_sel(form: Form, name: str, value, fields: dict) -> None:
    v = syn.SDWA_SEL.get(str(value).upper()) if isinstance(value, str) else None
    if v is None:
        raise Mismatch(f"{name}:{value} is not a selection (one of {', '.join(syn.SDWA_SEL)})")
    fields[syn.SEL_FIELDS[name]] = v


def _m_unused(form: Form, name: str, value, fields: dict) -> None:
    v = syn.SDWA_UNUSED.get(str(value).upper()) if isinstance(value, str) else None
    if v is None:
        raise Mismatch(f"dst_unused:{value} is not one of {', '.join(syn.SDWA_UNUSED)}")
    fields["DST_UNUSED"] = v


def _m_dpp(form: Form, name: str, value, fields: dict) -> None:
    v = syn.dpp_ctrl_value(name, value)
    if v is None:
        raise Mismatch(f"{name}:{value} is not a valid DPP control")
    if "DPP_CTRL" in fields and fields["DPP_CTRL"] != v:
        raise Mismatch("only one DPP control (quad_perm, row_shl, ...) per instruction")
    if v not in syn.DPALU_DPP_CTRL and any(s.size == 64 and s.table is not None and ("v", 0) in s.table.by_key
                                           for s in form.slots):
        raise Mismatch("DP ALU dpp only supports row_newbcast (a 64-bit VGPR operand)")
    fields["DPP_CTRL"] = v


def _m_format(form: Form, name: str, value, fields: dict) -> None:
    dfmt_w = form.codecs["DFMT"].width
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < (1 << (dfmt_w + form.codecs["NFMT"].width)):
            raise Mismatch(f"format:{value} is out of range of fields NFMT:DFMT")
        fields["DFMT"] = value & ((1 << dfmt_w) - 1)
        fields["NFMT"] = value >> dfmt_w
        return
    names = value if isinstance(value, tuple) else (value,)
    dfmt, nfmt = syn.BUF_FORMAT_DEFAULT
    for item in names:
        text = str(item).upper()
        if text.startswith("BUF_DATA_FORMAT_") and text[16:] in syn.BUF_DATA_FORMATS:
            dfmt = syn.BUF_DATA_FORMATS.index(text[16:])
        elif text.startswith("BUF_NUM_FORMAT_") and text[15:] in syn.BUF_NUM_FORMATS:
            nfmt = syn.BUF_NUM_FORMATS.index(text[15:])
        else:
            raise Mismatch(f"format: {item} is not BUF_DATA_FORMAT_* or BUF_NUM_FORMAT_*")
    fields["DFMT"] = dfmt
    fields["NFMT"] = nfmt


def _m_bound_ctrl(form: Form, name: str, value, fields: dict) -> None:
    if value not in (0, 1, True):
        raise Mismatch("bound_ctrl: takes 0 or 1")
    fields["BOUND_CTRL"] = 1  # LLVM sets the bit for bound_ctrl:0 and bound_ctrl:1 alike


def _m_opsel_flag(form: Form, name: str, value, fields: dict) -> None:
    """bound_ctrl / fi of gfx950's lane swaps (syn.OPSEL_DPP_FLAGS): one OP_SEL bit each, set by fi:1 and by
    bound_ctrl:0 and :1 alike (as DPP's BOUND_CTRL, llvm-mc-22)."""
    if value not in (0, 1, True):
        raise Mismatch(f"{name}: takes 0 or 1")
    if value or name == "bound_ctrl":
        fields["OP_SEL"] = fields.get("OP_SEL", 0) | 1 << syn.OPSEL_DPP_FLAGS[form.name][name]


def _m_keep_bits(form: Form, name: str, value, fields: dict) -> None:
    allowed = dict(form.hidden)
    try:
        pairs = [(str(f), int(v)) for f, v in value]
    except (TypeError, ValueError):
        raise Mismatch(f"{name}: needs ((FIELD, value), ...)") from None
    for fname, v in pairs:
        if fname not in allowed or v & ~allowed[fname]:
            raise Mismatch(f"{name}: {fname}={v:#x} is not a kept bit of {form.mnemonic}")
        fields[fname] = fields.get(fname, 0) | v


def _m_bitop3(form: Form, name: str, value, fields: dict) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise Mismatch(f"bitop3: needs a truth table 0..255 (0xff), got {value!r}")
    fields.update(syn.bitop3_fields(value))


MODIFIER_ENCODERS: dict[str, Callable] = {
    "bitop3": _m_bitop3,
    "keep_bits": _m_keep_bits,
    "flag": _m_flag, "int": _m_int, "ds_offset": _m_ds_offset, "smem_offset": _m_smem_offset, "list": _m_list,
    "omod": _m_omod, "sel": _m_sel, "unused": _m_unused, "dpp": _m_dpp, "bound_ctrl": _m_bound_ctrl,
    "format": _m_format, "mfma_neg": _m_mfma_neg, "opsel_flag": _m_opsel_flag,
}


def decode_modifiers(form: Form, fv: dict, word: int) -> tuple:
    out = []
    codecs = form.codecs
    for name, kind in form.mods.items():
        if kind == "flag":
            if fv.get(syn.FLAG_FIELDS[name]):
                out.append((name, True))
        elif kind == "int":
            fname = syn.INT_FIELDS[name]
            v = codecs[fname].unpack_int(word)
            if name in syn.HEX_MODIFIERS or v:
                out.append((name, v))
        elif kind == "keep_bits":
            # an SMEM OFFSET holds an immediate when IMM = 1 (the `offset` operand), an SGPR number otherwise
            # (a field that has a default, e.g. DST_SEL of an SDWA form without dst_sel, is kept only off it)
            defaults = form.defaults
            kept = tuple((f, fv[f] & bits) for f, bits in form.hidden
                         if fv.get(f, 0) & bits != defaults.get(f, 0) & bits
                         and not (f == "OFFSET" and form.smem and fv.get("IMM")))
            if kept:
                out.append((name, kept))
        elif kind == "bitop3":
            v = syn.bitop3_value(fv)
            if v:
                out.append((name, Imm(v, hex=v > 10)))
        elif kind == "ds_offset":
            v = fv["OFFSET0"] | fv["OFFSET1"] << codecs["OFFSET0"].width
            if v:
                text = syn.swizzle_text(v) if form.name in syn.SWIZZLE_MNEMONICS else None
                out.append(("offset", text or v))
        elif kind == "smem_offset":
            if fv.get("SOFFSET_EN") and fv.get("IMM"):
                out.append(("offset", Imm(codecs["OFFSET"].unpack_int(word), hex=True)))
        elif kind == "list":
            fname = syn.LIST_FIELDS[name]
            v = fv[fname]
            n = form.nsrc
            if name == "op_sel" and form.name in syn.OPSEL_PER_BIT:
                n = codecs[fname].width
            if form.scale_mfma:  # LLVM prints [scale0, scale1, 0]; op_sel_hi always (its default is not all-ones)
                if name == "op_sel_hi" or v & 3:
                    out.append((name, (v & 1, v >> 1 & 1, 0)))
            elif name == "op_sel" and form.opsel_dst:
                if v:
                    w = codecs[fname].width
                    out.append((name, tuple(v >> i & 1 for i in range(n)) + (v >> (w - 1) & 1,)))
            elif name == "op_sel_hi":
                default = 0 if form.mix else (1 << n) - 1
                if (v & ((1 << n) - 1)) != default:
                    out.append((name, tuple(v >> i & 1 for i in range(n))))
            elif v & ((1 << n) - 1):
                out.append((name, tuple(v >> i & 1 for i in range(n))))
        elif kind == "mfma_neg":
            v = fv["BLGP"]
            if v:
                out.append((name, tuple(v >> i & 1 for i in range(codecs["BLGP"].width))))
        elif kind == "omod":
            v = fv.get("OMOD", 0)
            if v and name == syn.OMOD_NAMES[v][0]:
                out.append(syn.OMOD_NAMES[v])
        elif kind == "sel":
            v = fv[syn.SEL_FIELDS[name]]
            if v not in syn.SDWA_SEL_NAMES:   # llvm-objdump-22 crashes on 7; a listing must not show `dst_sel:7`
                raise Mismatch(f"{name} {v} is reserved (SDWA selects are 0-6: {', '.join(syn.SDWA_SEL)})")
            out.append((name, syn.SDWA_SEL_NAMES[v]))
        elif kind == "unused":
            v = fv["DST_UNUSED"]
            if v not in syn.SDWA_UNUSED_NAMES:   # llvm-objdump-22 drops the bits and prints UNUSED_PAD
                raise Mismatch(f"dst_unused {v} is reserved (0-2: {', '.join(syn.SDWA_UNUSED)})")
            out.append((name, syn.SDWA_UNUSED_NAMES[v]))
        elif kind == "dpp":
            if name == "quad_perm":  # one entry stands for the whole DPP_CTRL field
                m = syn.dpp_ctrl_modifier(fv["DPP_CTRL"])
                if m is not None:
                    out.append(m)
        elif kind == "bound_ctrl":
            if fv.get("BOUND_CTRL"):
                out.append(("bound_ctrl", 1))
        elif kind == "opsel_flag":
            if fv.get("OP_SEL", 0) >> syn.OPSEL_DPP_FLAGS[form.name][name] & 1:
                out.append((name, 1))
        elif kind == "format":
            dfmt, nfmt = fv["DFMT"], fv["NFMT"]
            parts = []
            if dfmt != syn.BUF_FORMAT_DEFAULT[0] and dfmt < len(syn.BUF_DATA_FORMATS):
                parts.append("BUF_DATA_FORMAT_" + syn.BUF_DATA_FORMATS[dfmt])
            if nfmt != syn.BUF_FORMAT_DEFAULT[1] and nfmt < len(syn.BUF_NUM_FORMATS):
                parts.append("BUF_NUM_FORMAT_" + syn.BUF_NUM_FORMATS[nfmt])
            if parts:
                out.append(("format", tuple(parts)))
    out.sort(key=lambda m: syn.MODIFIER_RANK.get(m[0], 999))
    return tuple(out)


def _selects_parts(form: Form, spec) -> bool:
    """Whether OP_SEL means anything to the instruction: some operand holds elements narrower than a dword
    that are 16-bit values or floats of 8 bits or fewer (fp8/bf8 conversions select a byte or a word, gfx950's
    fp4 conversions a byte, v_cvt_scalef32_pk_f32_fp4 op_sel:[1,1,0] = byte 3). Elsewhere LLVM has no
    op_sel operand (VOP3Instructions.td: only the OpSel and fp8-conversion profiles carry one), so an
    f32-only instruction prints no op_sel and llvm-mc rejects one."""
    if spec is None or form.vop3p or form.name in syn.OPSEL_32BIT:
        return True
    # an instruction that also has a VOP1/VOP2/VOPC encoding keeps that encoding's operands in VOP3 (GFX9)
    if any(syn.encoding_family(ie.encoding_name) == "e32" for ie in form.spec_inst.encodings):
        return False
    for o in form.ie.operands:
        df = spec.data_formats.get(o.data_format) if o.data_format else None
        if df is None or df.bit_count <= 1:
            continue
        bits = df.bit_count // max(1, df.component_count)
        if bits == 16 or (bits <= 8 and df.data_type == "float"):
            return True
        # a 16-bit packed integer result (gfx950 v_ashr_pk_{i8,u8}_i32, LLVM's VOP_I16_I32_I32_I32 OpSel
        # profile): op_sel[3] picks the destination half (llvm-mc-22 -mcpu=gfx950 op_sel:[0,0,0,1])
        if df.bit_count == 16 and o.output:
            return True
    return False


def _f64_matrix(form: Form) -> bool:
    """An MFMA on f64 sources (v_mfma_f64_*): there the BLGP field negates A, B and C (CDNA3 ISA guide, "Matrix
    Arithmetic Instructions": for DGEMM the BLGP bits are NEG[2:0]); LLVM writes it neg:[a,b,c] and refuses blgp:
    on them ("invalid modifier: blgp is not supported", llvm-mc-22 -mcpu=gfx942)."""
    return any(s.src is not None and s.kind == "reg" and s.elem_bits == 64 and s.is_float and s.src < 2
               for s in form.slots)


def _packs_sub_word_integers(form: Form, spec) -> bool:
    """A packed-math (VOP3P) instruction whose packed sources hold integers narrower than 16 bits (v_dot4_i32_i8,
    v_dot8_u32_u4: FMT_NUM_PK4_I8 / PK8_I4). OP_SEL/OP_SEL_HI pick 16-bit halves, which such a source does not
    have: LLVM's profile for them has no op_sel or op_sel_hi (llvm-mc-22 "not a valid operand", llvm-objdump-22
    prints neither), so their bits are kept unprinted (OP_SEL_HI keeps its default of all ones when written)."""
    if spec is None:
        return False
    packed = False
    for o in form.ie.operands:
        df = spec.data_formats.get(o.data_format) if o.data_format else None
        if df is None or not o.input or df.component_count <= 1:
            continue
        if df.data_type != "integer" or df.bit_count // df.component_count >= 16:
            return False
        packed = True
    return packed


# Modifiers a buffer cache-control instruction (MUBUF with no operands: buffer_wbl2, buffer_inv) does not have in
# LLVM's syntax, though its encoding has their fields: LLVM's MUBUF_Invalidate (BUFInstructions.td) takes only the
# cache policy, and encodes no NT bit (llvm-mc-22 prints `buffer_wbl2 nt` and encodes bit 17 as 0; llvm-objdump-22
# prints no offset or nt, and no word with OFFEN, IDXEN or LDS set). Their bits are kept unprinted.
CACHE_CONTROL_UNWRITTEN = ("offset", "offen", "idxen", "lds", "nt")


def cache_control(form: Form) -> bool:
    """A buffer instruction with no operand at all (no address, no data): a cache write-back or invalidate."""
    return form.mubuf and not form.slots


def _moves_data(form: Form) -> bool:
    """An SMEM instruction that loads, stores or atomically updates data: an SDATA register and an SBASE address.
    Only those have LLVM's glc (s_dcache_*, s_memtime, s_memrealtime, s_atc_probe* print and accept none)."""
    names = {s.fname for s in form.slots if s.kind == "reg"}
    return "SDATA" in names and "SBASE" in names


def _float_operand(spec, operand) -> bool:
    """The operand holds floats of 16 bits or more (the f16/f32/f64 values LLVM's VOP profiles give modifiers;
    fp8/bf8 and smaller travel as 32-bit integers there)."""
    df = spec.data_formats.get(operand.data_format) if operand.data_format else None
    return df is not None and df.data_type == "float" and df.bit_count // max(1, df.component_count) >= 16


def _vop3_output_modifiers(form: Form, spec, kinds: dict[str, str]) -> None:
    """clamp and mul/div of a VOP3 instruction, from the spec's data formats as LLVM's VOPProfile derives them
    (llvm/lib/Target/AMDGPU/SIInstrInfo.td class VOPProfile: HasClamp from a float source, HasOMod from a float
    destination), with the profiles that override them named in syn.LLVM_INTEGER_CLAMP, syn.LLVM_NO_CLAMP and
    syn.LLVM_INTEGER_OMOD, syn.LLVM_NO_OMOD. Where the instruction has no such modifier its field must be zero
    (forms._required_zero): llvm-objdump-22 prints `v_max3_i32 ... clamp` or `v_cmp_eq_f32_e64 ... mul:2` as
    .long (measured on every gfx942 and gfx950 VOP3 form, tests/isa/test_disasm_zero_fields.py)."""
    ops = sorted(form.ie.operands, key=lambda o: o.order)
    sources = [o for o in ops if o.input and not o.implicit and (o.field_name or "").startswith("SRC")]
    dst = [o for o in ops if o.output and o.field_name == "VDST"]
    float_src = bool(sources) and _float_operand(spec, sources[0])
    float_dst = bool(dst) and _float_operand(spec, dst[0])
    if form.family == "sdwa":   # SDWA: omod with a float destination (VOPProfile HasSDWAOMod); clamp always
        float_src = True
    if "clamp" in kinds and (not (float_src or float_dst or form.name in syn.LLVM_INTEGER_CLAMP)
                             or form.name in syn.LLVM_NO_CLAMP):
        del kinds["clamp"]
    special = form.name in syn.LLVM_INTEGER_OMOD and form.family == "e64"   # VOP3 only (HasOMod, not HasSDWAOMod)
    if not (float_dst or special) or form.name in syn.LLVM_NO_OMOD:
        kinds.pop("mul", None)
        kinds.pop("div", None)


def modifier_kinds(form: Form, fields, spec=None) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for name, fname in syn.FLAG_FIELDS.items():
        if fname in fields:
            kinds[name] = "flag"
    for name, fname in syn.INT_FIELDS.items():
        if fname in fields and not form.fixed_by_identifier(fname):
            kinds[name] = "int"
    if form.smem:
        if any(s.fname == "SBASE" for s in form.slots):
            kinds["offset"] = "smem_offset"
        else:   # s_dcache_*, s_memtime: no offset in LLVM (SMEM_Pseudo without offset operands)
            kinds.pop("offset", None)
    if form.mubuf and "lds" in kinds and form.name not in syn.llvm_lds_loads(spec):
        del kinds["lds"]
    if "OFFSET0" in fields and "OFFSET1" in fields and "OFFSET" not in fields:
        kinds.pop("offset0", None)
        kinds.pop("offset1", None)
        if form.ds_two:
            kinds["offset0"] = "int"
            kinds["offset1"] = "int"
        elif form.slots:   # an LDS instruction without operands (ds_nop) has no offset in LLVM (DS_0A_Pseudo)
            kinds["offset"] = "ds_offset"
        if form.name in syn.LLVM_NO_GDS:
            kinds.pop("gds", None)
    sub_word = form.vop3p and _packs_sub_word_integers(form, spec)
    if "OP_SEL" in fields and _selects_parts(form, spec) and form.name not in syn.NO_OPSEL and not sub_word:
        kinds["op_sel"] = "list"
    if "OP_SEL_HI" in fields and "NEG_HI" in fields and not sub_word:
        kinds["op_sel_hi"] = "list"
    if "NEG_HI" in fields and not form.mix and not form.scale_mfma:   # mix instructions: `-x` and `|x|`
        kinds["neg_hi"] = "list"
        if "NEG" in fields:
            kinds["neg_lo"] = "list"
    if "blgp" in kinds and _f64_matrix(form):
        del kinds["blgp"]
        kinds["neg"] = "mfma_neg"
    if form.smem and "glc" in kinds and not _moves_data(form):
        del kinds["glc"]
    if cache_control(form):
        for name in CACHE_CONTROL_UNWRITTEN:
            kinds.pop(name, None)
    if form.name in syn.BITOP3_MNEMONICS:
        kinds["bitop3"] = "bitop3"
    elif "OMOD" in fields:
        kinds["mul"] = "omod"
        kinds["div"] = "omod"
    has_dst = any(s.output for s in form.slots if s.kind == "reg")
    for name, fname in syn.SEL_FIELDS.items():
        if fname in fields:
            if name == "src1_sel" and not form.two_sources:
                continue
            if name == "src0_sel" and not any(s.src == 0 for s in form.slots):
                continue
            if name == "dst_sel" and (not has_dst or form.name in syn.SDWA_NO_DST_SEL):
                continue
            kinds[name] = "sel"
    if "DST_UNUSED" in fields and has_dst and form.name not in syn.SDWA_NO_DST_SEL:
        kinds["dst_unused"] = "unused"
    if "DFMT" in fields and "NFMT" in fields:
        kinds["format"] = "format"
    if form.family in ("e64", "sdwa") and not form.vop3p and spec is not None \
            and form.name not in syn.BITOP3_MNEMONICS:
        _vop3_output_modifiers(form, spec, kinds)
    if form.name in syn.NO_CLAMP_OMOD:
        sdwa = "SDWA" in form.enc.name.upper()   # v_prng_b32_sdwa keeps clamp (llvm-mc-22 takes it)
        for name in ("mul", "div") if sdwa else ("clamp", "mul", "div"):
            kinds.pop(name, None)
    if form.name.startswith("v_smfmac_"):   # LLVM's SMFMAC profile: cbsz and abid, no blgp (llvm-mc-22 refuses it)
        kinds.pop("blgp", None)
    if form.name in syn.NO_ABID:
        kinds.pop("abid", None)
    if form.name in syn.SOURCES_ONLY_VOP3P:
        kinds.pop("neg_lo", None)
        kinds.pop("neg_hi", None)
    if form.name in syn.NO_OPSEL_VOP3P:
        kinds.pop("op_sel", None)
        kinds.pop("op_sel_hi", None)
    if "OP_SEL" in fields and form.name in syn.OPSEL_DPP_FLAGS and "DPP_CTRL" not in fields:
        kinds.update(dict.fromkeys(syn.OPSEL_DPP_FLAGS[form.name], "opsel_flag"))
    if "DPP_CTRL" in fields:
        for name in syn.DPP_CTRL_NAMES:
            kinds[name] = "dpp"
        kinds["bound_ctrl"] = "bound_ctrl"
    return dict(sorted(kinds.items(), key=lambda kv: syn.MODIFIER_RANK.get(kv[0], 999)))
