"""AsmInstruction objects built by code (the generators' path): `encode` gives the bytes llvm-mc gives for the
printed program, resolves labels, emits data and alignment, and picks the shortest encoding."""

from __future__ import annotations

import subprocess

from jitgemm.isa.asm.encoder import encode, encode_instruction
from jitgemm.isa.disasm.printer import format_item
from jitgemm.isa.instruction import (
    EXEC,
    OFF,
    VCC,
    Align,
    AsmInstruction,
    Counters,
    Data,
    Imm,
    Label,
    LabelDef,
    SrcMods,
    a,
    s,
    v,
)

from tests.fixtures.asm_support import forms_named, text_section
from tests.fixtures.oracles import require_tool

ITEMS = [
    LabelDef("start"),
    AsmInstruction("s_load_dwordx4", (s(4, 7), s(0, 1), Imm(0x10, hex=True))),
    AsmInstruction("s_waitcnt", (Counters((("lgkmcnt", 0),)),)),
    AsmInstruction("v_mov_b32", (v(0), Imm(0x12345678))),  # needs the literal variant
    AsmInstruction("v_mov_b32", (v(1), Imm(0.5))),  # inline constant: 4 bytes
    AsmInstruction("v_add_f32", (v(2), v(1), s(3))),  # SGPR in VSRC1 position: VOP3 form
    AsmInstruction("v_add_f32", (v(2), SrcMods(v(1), neg=True), v(3)), {"clamp": True}),
    AsmInstruction("v_cmp_gt_u32", (VCC, Imm(64), v(0))),
    AsmInstruction("s_and_saveexec_b64", (s(8, 9), VCC)),
    AsmInstruction("s_cbranch_execz", (Label("end"),)),
    Align(16),
    LabelDef("loop"),
    AsmInstruction("global_load_dwordx4", (v(4, 7), v(0, 1), OFF), {"offset": 64, "sc1": True}),
    AsmInstruction("global_load_dwordx4", (a(4, 7), v(0), s(4, 5))),
    AsmInstruction("v_mfma_f32_32x32x8_bf16", (a(0, 15), v(4, 5), v(6, 7), a(0, 15)), {"blgp": 1}),
    AsmInstruction("ds_read_b128", (v(8, 11), v(12)), {"offset": 256}),
    AsmInstruction("s_sub_u32", (s(2), s(2), Imm(1))),
    AsmInstruction("s_cmp_lg_u32", (s(2), Imm(0))),
    AsmInstruction("s_cbranch_scc1", (Label("loop"),)),
    Data((0xBF800000,)),
    LabelDef("end"),
    AsmInstruction("s_or_b64", (EXEC, EXEC, s(8, 9))),
    AsmInstruction("s_endpgm"),
]


def _llvm_bytes(text: str, tmp_path) -> bytes:
    mc = require_tool("llvm-mc")
    src = tmp_path / "objs.s"
    src.write_text(text)
    obj = tmp_path / "objs.o"
    subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)], check=True,
                   capture_output=True)
    return text_section(obj)[0]


def _as_text(items) -> str:
    lines = []
    for item in items:
        if isinstance(item, Align):
            lines.append(f".p2align {item.boundary.bit_length() - 1}")
        else:
            lines.append(format_item(item))
    return "\n".join(lines) + "\n"


def test_encode_objects_equals_llvm_mc(tmp_path):
    forms = forms_named("subset")
    result = encode(ITEMS, forms)
    assert result.code == _llvm_bytes(_as_text(ITEMS), tmp_path)
    assert result.symbols["start"] == 0
    assert result.symbols["loop"] % 16 == 0
    assert len(result.offsets) == len(ITEMS)


def test_shortest_encoding_is_chosen():
    forms = forms_named("excerpt")
    assert len(encode_instruction(AsmInstruction("v_mov_b32", (v(1), Imm(0.5))), forms)) == 4
    assert len(encode_instruction(AsmInstruction("v_mov_b32", (v(1), Imm(0.25))), forms)) == 8
    assert len(encode_instruction(AsmInstruction("v_add_f32", (v(1), s(2), v(3))), forms)) == 4
    assert len(encode_instruction(AsmInstruction("v_add_f32", (v(1), v(3), s(2))), forms)) == 8
    assert encode_instruction(AsmInstruction("v_add_f32_e64", (v(1), s(2), v(3))), forms) != \
        encode_instruction(AsmInstruction("v_add_f32", (v(1), s(2), v(3))), forms)


def test_instruction_objects_normalize_and_compare():
    one = AsmInstruction("v_add_f32", [v(1), v(2), v(3)], {"clamp": True, "op_sel": [0, 1]})
    two = AsmInstruction("v_add_f32", (v(1), v(2), v(3)), (("clamp", True), ("op_sel", (0, 1))))
    assert one == two and hash(one) == hash(two)
    assert one.modifier("op_sel") == (0, 1) and one.modifier("mul") is None
    assert Imm(1) != Imm(1.0) and Imm(0.0) != Imm(-0.0) and Imm(16) == Imm(16, hex=True)
    assert str(AsmInstruction("v_mov_b32", (v(1), SrcMods(Imm(1.0), neg=True)))) == "v_mov_b32 v1, neg(1.0)"
    assert str(v(0, 3)) == "v[0:3]" and str(a(5)) == "a5" and str(VCC) == "vcc"
