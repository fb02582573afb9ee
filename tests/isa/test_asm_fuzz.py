"""Fuzzing the assembler: random token soup to the parser and random instruction objects to the encoder
give results or clean errors (AsmError / EncodeError with a message), never another exception."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.asm.encoder import encode
from jitgemm.isa.asm_errors import AsmError, EncodeError
from jitgemm.isa.instruction import OFF, AsmInstruction, Counters, Imm, Label, LabelDef, Reg, SrcMods

from tests.fixtures.asm_support import forms_named

SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 500)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "v_add_f32", "s_mov_b32", "s_waitcnt", "global_load_dword", "ds_read2_b32", "v_mfma_f32_32x32x8_bf16",
    "buffer_load_dword", "s_load_dword", "v_mov_b32_dpp", "v_cmp_gt_i32_sdwa", "s_branch", "v_pk_fma_f32",
    "v1", "v[2:3]", "v[4:7]", "s0", "s[2:3]", "s[4:7]", "a[0:15]", "a3", "vcc", "exec", "m0", "off", "scc",
    "ttmp[4:7]", "0", "1", "-1", "64", "65", "0x12345678", "0.5", "-4.0", "1.5", "1e3", "loop", "loop:",
    ",", ",", ",", " ", " ", ":", "[", "]", "(", ")", "|", "-", "&", ";", "//", "\n", "\"", "/*", "*/",
    "offset:", "offset:16", "offset:-1", "sc0", "nt", "glc", "clamp", "op_sel:[0,1]", "op_sel_hi:[1,1,0]",
    "neg_lo:[1]", "cbsz:1", "abid:15", "blgp:8", "quad_perm:[1,0,3,2]", "row_shl:1", "row_mask:0xf",
    "dst_sel:WORD_1", "src0_sel:BYTE_0", "vmcnt(0)", "lgkmcnt(63)", "neg(", "abs(", "sext(", "mul:2",
    ".long", ".p2align", ".text", ".foo", "0x", "v[", "s[0:", "v[3:1]", "swizzle(SWAP,1)", "\t", "#", "@",
]


@pytest.mark.parametrize("name", ["excerpt", "subset"])
@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=4)), max_size=25))
def test_token_soup_gives_clean_errors(name, tokens):
    forms = forms_named(name)
    source = "".join(tokens)
    try:
        assemble(source, forms)
    except AsmError as exc:
        assert str(exc)


_KINDS = st.sampled_from(["s", "v", "a", "ttmp", "vcc", "exec", "m0", "vcc_lo", "src_scc", "bogus", ""])
_REGS = st.builds(Reg, _KINDS, st.integers(-3, 300), st.integers(-1, 20))
_IMMS = st.builds(Imm, st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                                 st.booleans()))
_SIMPLE = st.one_of(_REGS, _IMMS, st.builds(Label, st.text(max_size=6)), st.just(OFF))
_OPERANDS = st.one_of(_SIMPLE, st.builds(SrcMods, _SIMPLE, st.booleans(), st.booleans(), st.booleans()),
                      st.builds(Counters, st.lists(st.tuples(st.sampled_from(["vmcnt", "expcnt", "lgkmcnt", "x"]),
                                                             st.integers(-5, 100)), max_size=3).map(tuple)))
_MOD_VALUES = st.one_of(st.just(True), st.integers(-5, 70000), st.text(max_size=8),
                        st.lists(st.integers(-1, 4), max_size=5).map(tuple), st.floats())
_MODS = st.lists(st.tuples(st.sampled_from(["offset", "offset0", "sc0", "clamp", "op_sel", "op_sel_hi", "neg_lo",
                                            "cbsz", "quad_perm", "row_shl", "dst_sel", "src0_sel", "mul", "div",
                                            "bound_ctrl", "format", "lds", "offen", "x"]), _MOD_VALUES),
                 max_size=4).map(tuple)


@pytest.mark.parametrize("name", ["excerpt", "subset"])
@SETTINGS
@given(data=st.data())
def test_random_instruction_objects_give_clean_errors(name, data):
    forms = forms_named(name)
    mnemonic = data.draw(st.sampled_from(sorted(forms.by_mnemonic)[:400] + ["nope", ""]))
    ops = tuple(data.draw(st.lists(_OPERANDS, max_size=5)))
    mods = data.draw(_MODS)
    items = [LabelDef("x"), AsmInstruction(mnemonic, ops, mods)]
    try:
        encode(items, forms)
    except EncodeError as exc:
        assert str(exc)
