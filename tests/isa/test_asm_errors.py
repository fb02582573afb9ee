"""Errors a user can act on: every one says where (file:line:col, pointing at the operand or modifier at
fault), what was given and what the spec accepts (closest mnemonics, the operand type's register classes
and constants, the field and its width). Expected values (field widths, accepted classes) are read from
the loaded spec, not written here."""

from __future__ import annotations

import re

import pytest
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.asm.encoder import encode
from jitgemm.isa.asm_errors import AsmError, EncodeError
from jitgemm.isa.instruction import AsmInstruction, Imm, LabelDef, a, s, v

from tests.fixtures.asm_support import forms_named


@pytest.fixture(scope="module")
def forms():
    return forms_named("excerpt")


def _error(source: str, forms, file: str = "k.s") -> AsmError:
    with pytest.raises(AsmError) as info:
        assemble(source, forms, file=file)
    return info.value


def _where(err: AsmError) -> tuple[str, int, int]:
    m = re.match(r"(.+?):(\d+):(\d+): ", str(err))
    assert m, f"no file:line:col in {err}"
    return m.group(1), int(m.group(2)), int(m.group(3))


def test_unknown_mnemonic_names_closest(forms):
    err = _error("s_nop 0\n\n  v_addd_f32 v1, v2, v3\n", forms)
    assert _where(err) == ("k.s", 3, 3)
    assert "unknown instruction 'v_addd_f32'" in str(err)
    assert "v_add_f32" in str(err).split("closest:")[1]


def test_operand_type_error_names_operand_given_and_accepted(forms):
    line = "v_mfma_f32_32x32x8_bf16 a[0:15], s[0:1], v[2:3], a[0:15]"
    err = _error(line, forms)
    _file, lineno, col = _where(err)
    assert (lineno, col) == (1, line.index("s[0:1]") + 1)
    text = str(err)
    assert "operand 2" in text and "s[0:1]" in text
    inst = forms.spec.instruction("V_MFMA_F32_32X32X8_BF16")
    src0 = next(o for o in inst.encodings[0].operands if o.field_name == "SRC0")
    assert src0.operand_type in text and "v0..v255" in text and "a0..a255" in text


def test_constant_without_literal_support(forms):
    line = "v_fma_f32 v1, v2, v3, 0x12345"
    err = _error(line, forms)
    assert _where(err)[2] == line.index("0x12345") + 1
    assert "takes no literal" in str(err) and "integers -16..64" in str(err)


@pytest.mark.parametrize("line, fragment, field_name", [
    ("ds_read_b32 v1, v2 offset:65536", "offset:65536", "OFFSET1:OFFSET0"),
    ("global_load_dword v1, v[2:3], off offset:4096", "offset:4096", "OFFSET"),
    ("buffer_load_dword v1, off, s[4:7], 0 offset:4096", "offset:4096", "OFFSET"),
    ("s_movk_i32 s1, 0x10000", "0x10000", "SIMM16"),
    ("v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15] cbsz:8", "cbsz:8", "CBSZ"),
    ("s_waitcnt vmcnt(64)", "vmcnt(64)", "VM"),
])
def test_value_out_of_range_names_field_and_width(forms, line, fragment, field_name):
    err = _error(line, forms)
    assert _where(err)[2] == line.index(fragment) + 1, str(err)
    assert field_name in str(err)
    assert re.search(r"\d+ bits", str(err)), str(err)


def test_field_width_in_message_comes_from_spec(forms):
    err = _error("global_load_dword v1, v[2:3], off offset:4096", forms)
    width = forms.spec.encoding("ENC_FLAT_GLBL").field("OFFSET").width
    assert f"({width} bits" in str(err)


@pytest.mark.parametrize("line, fragment, says", [
    ("s_load_dwordx2 s[0:3], s[2:3], 0x10", "s[0:3]", "takes 2"),
    ("s_add_u32 s0, s1, s2 clamp", "clamp", "not available"),
    ("global_load_dword v1, v[3:4], off", "v[3:4]", "multiple of 2"),
    ("v_cndmask_b32_e32 v1, v2, v3, s[4:5]", "s[4:5]", "always vcc"),
    ("s_mov_b32 s0, 0x12345678, s1", "s_mov_b32", "takes 2 operand"),
    ("v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], v[0:15]", "v[0:15]", "all VGPRs or all AGPRs"),
])
def test_operand_problems_are_placed(forms, line, fragment, says):
    err = _error(line, forms)
    assert _where(err)[2] == line.index(fragment) + 1, str(err)
    assert says in str(err)


@pytest.mark.parametrize("source, line, col", [
    ("v_add_f32 v1,, v2", 1, 14),
    ("s_nop 0\nv_mov_b32 v1, v[2:1]", 2, 15),
    ("s_nop 0\ns_nop 0\nv_mov_b32 v1, #3", 3, 15),
    ("v_mov_b32 v1, v2 offset:", 1, 25),
])
def test_syntax_errors_have_positions(forms, source, line, col):
    err = _error(source, forms)
    assert _where(err)[1:] == (line, col), str(err)


def test_labels(forms):
    err = _error("s_nop 0\ns_branch nowhere\n", forms)
    assert _where(err)[1] == 2 and "undefined label nowhere" in str(err)
    err = _error("x:\ns_nop 0\nx:\n", forms)
    assert _where(err)[1] == 3 and "defined twice" in str(err)


def test_unsupported_directive(forms):
    err = _error("s_nop 0\n.foo 1\n", forms)
    assert _where(err)[:2] == ("k.s", 2) and ".foo" in str(err)


def test_encode_api_errors_name_item_and_operand(forms):
    with pytest.raises(EncodeError) as info:
        encode([LabelDef("a"), AsmInstruction("s_nop", (Imm(0),)),
                AsmInstruction("v_mfma_f32_32x32x8_bf16", (a(0, 15), s(0, 1), v(2, 3), a(0, 15)))], forms)
    assert info.value.operand == 1
    assert "item 2" in str(info.value) and "s[0:1]" in str(info.value)
    with pytest.raises(EncodeError) as info:
        encode([AsmInstruction("v_add_f32", (v(1), v(2), v(3)), {"clamp": 3})], forms)
    assert info.value.modifier == "clamp"
    with pytest.raises(EncodeError):
        encode(["s_nop 0"], forms)  # text is not an item


def test_errors_never_leak_other_exceptions(forms):
    """Malformed objects from code give EncodeError, not KeyError/IndexError/TypeError."""
    bad = [
        AsmInstruction("s_nop", ()), AsmInstruction("s_nop", (v(1),)),
        AsmInstruction("v_add_f32", (v(1), Imm(True), v(2))), AsmInstruction("v_add_f32", (v(1), v(2), v(300))),
        AsmInstruction("ds_read_b32", (v(1), v(2)), {"offset": "x"}),
        AsmInstruction("v_mov_b32_dpp", (v(1), v(2)), {"quad_perm": (4, 0, 0, 0)}),
        AsmInstruction("v_mov_b32_sdwa", (v(1), v(2)), {"dst_sel": "WORD_9"}),
    ]
    for inst in bad:
        with pytest.raises(EncodeError):
            encode([inst], forms)
    # llvm-mc-22 takes these (an untyped 16-bit SOPP immediate keeps the low bits of any value, a float token its
    # double's bits): `s_nop 1.5` -> bf800000, `s_waitcnt -70000` -> bf8cee90, the same bytes here
    assert bytes(encode([AsmInstruction("s_nop", (Imm(1.5),))], forms).code).hex() == "000080bf"
    assert bytes(encode([AsmInstruction("s_waitcnt", (Imm(-70000),))], forms).code).hex() == "90ee8cbf"
