"""AMD's own CDNA3 data (verbatim excerpt in ../shared) through the project's loader: concrete values
read straight from the file, and field layouts cross-checked against llvm-mc's encodings."""

from __future__ import annotations

import subprocess

import pytest
from jitgemm.isa.spec import conditions as expr

from tests.fixtures.oracles import require_tool


def test_document_and_architecture(excerpt_spec):
    doc = excerpt_spec.document
    assert doc.license == "MIT"
    assert doc.release_date == "2026-02-20"
    assert doc.schema_version == "1.1.1"
    assert "Advanced Micro Devices" in doc.copyright
    assert excerpt_spec.architecture.name == "AMD CDNA 3"
    assert excerpt_spec.architecture.id == 2
    counts = excerpt_spec.counts()
    assert counts["instructions"] == 114
    assert counts["encodings"] == 28
    assert counts["operand_types"] == 32
    # 44 <DataFormat> elements, FMT_NUM_I32 twice: the duplicate is reported, the first kept
    assert counts["data_formats"] == 43
    assert any("FMT_NUM_I32" in w for w in excerpt_spec.warnings)


def test_identifier_mask_and_identifiers(excerpt_spec):
    sop1 = excerpt_spec.encoding("ENC_SOP1")
    assert sop1.bit_count == 32 and sop1.order == -1
    assert sop1.identifier_mask == int("11111111100000001111111100000000", 2)
    assert sop1.identifier_mask_radix == 2
    assert len(sop1.identifiers) == 54
    # s_mov_b32 s5, vcc_hi = 6b 00 85 be (llvm-mc, recorded in the excerpt README)
    assert sop1.matches(0xBE85006B)
    assert not excerpt_spec.encoding("ENC_SOP2").matches(0xBE85006B)  # SOP1 lives in SOP2 op space 125


def test_multi_range_op_sel_hi(excerpt_spec):
    field = excerpt_spec.encoding("ENC_VOP3P").field("OP_SEL_HI")
    assert [(r.offset, r.count) for r in field.ranges] == [(59, 2), (14, 1)]
    assert field.width == 3
    word = field.insert(0, 0b101)
    assert word == (1 << 59) | (1 << 14)
    assert field.extract(word) == 0b101
    with pytest.raises(ValueError, match="OP_SEL_HI"):
        field.insert(0, 8)


def test_padding_field(excerpt_spec):
    sbase = excerpt_spec.encoding("ENC_SMEM").field("SBASE")
    assert sbase.width == 7 and sbase.stored_bits == 6
    assert sbase.extract(sbase.insert(0, 6)) == 6
    assert sbase.insert(0, 6) == 3
    assert "low bit" in (sbase.check(5) or "")


def test_opcode_operands_and_formats(excerpt_spec):
    inst = excerpt_spec.instruction("ds_write_b16")
    (ie, enc), = excerpt_spec.encodings_of("DS_WRITE_B16")
    assert enc.name == "ENC_DS" and ie.opcode == 31 and ie.condition_name == "default"
    addr = ie.operands[0]
    assert (addr.field_name, addr.operand_type, addr.data_format, addr.size) == ("ADDR", "OPR_VGPR", "FMT_NUM_B32", 32)
    assert addr.input and not addr.output and not addr.implicit and addr.binary_microcode_required
    assert inst.functional_group == "VMEM"
    assert excerpt_spec.instruction_by_opcode("ENC_DS", 31) is inst
    fmt = excerpt_spec.data_format("FMT_NUM_F32")
    assert fmt.bit_count == 32 and fmt.component_count == 1 and fmt.data_type


def test_predefined_values(excerpt_spec):
    smem_off = excerpt_spec.operand_type("OPR_SMEM_OFFSET")
    assert smem_off.value_of("VCC_LO") == 106
    assert smem_off.value_of("vcc_lo") == 106
    assert excerpt_spec.operand_type("OPR_SRC").value_of("SRC_LITERAL") == 255
    assert excerpt_spec.operand_type("OPR_ACCVGPR").value_of("acc3") == 515
    assert "OPR_SDST_EXEC" in excerpt_spec.operand_type("OPR_SDST").subtypes
    waitcnt = excerpt_spec.operand_type("OPR_WAITCNT")
    assert waitcnt.partitioned
    vm = next(f for f in waitcnt.fields if f.name == "VM")
    assert [(r.offset, r.count) for r in vm.ranges] == [(0, 4), (14, 2)]
    names = {t.name for t in excerpt_spec.operand_types_of_register("VCC_LO")}
    assert {"OPR_SMEM_OFFSET", "OPR_SRC", "OPR_SDST"} <= names


def test_alias_lookup(excerpt_spec):
    inst = excerpt_spec.instruction("V_ACCVGPR_READ_B32")
    assert inst.name == "V_ACCVGPR_READ"
    assert excerpt_spec.find_instruction("v_accvgpr_read") is inst
    assert excerpt_spec.instruction("v_mfma_f32_32x32x8bf16_1k").name == "V_MFMA_F32_32X32X8_BF16"
    with pytest.raises(KeyError, match="closest: V_ACCVGPR_READ"):
        excerpt_spec.instruction("V_ACCVGPR_REED")


def test_conditions_evaluate(excerpt_spec):
    lit = excerpt_spec.encoding("SOP2_INST_LITERAL")
    assert [c.name for c in lit.conditions] == ["has_lit_0", "has_lit_1", "has_lit_0_has_lit_1"]
    assert lit.condition("has_lit_0").holds({"SSRC0": 255, "SSRC1": 3})
    assert not lit.condition("has_lit_0").holds({"SSRC0": 255, "SSRC1": 255})
    assert lit.condition("has_lit_0_has_lit_1").holds({"SSRC0": 255, "SSRC1": 255})
    vop2_lit = excerpt_spec.encoding("VOP2_INST_LITERAL")
    default = vop2_lit.condition("default")
    assert expr.referenced_fields(default.expression) == {"SRC0"}
    assert default.holds({"SRC0": 256}) and not default.holds({"SRC0": 249})
    flat = excerpt_spec.encoding("ENC_FLAT")
    assert len(flat.conditions) == 3 and flat.condition("default").holds({})
    assert any("ENC_FLAT_GLBL" in w for w in excerpt_spec.warnings)


def _llvm_encoding(llvm_mc: str, line: str) -> int:
    out = subprocess.run([llvm_mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], input=line,
                         capture_output=True, text=True, check=True).stdout
    enc = out.split("encoding: [", 1)[1].split("]", 1)[0]
    return int.from_bytes(bytes(int(b, 16) for b in enc.split(",")), "little")


@pytest.mark.parametrize("op_sel_hi", [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)])
def test_op_sel_hi_layout_matches_llvm(excerpt_spec, op_sel_hi):
    llvm_mc = require_tool("llvm-mc")
    word = _llvm_encoding(llvm_mc, "v_pk_fma_f16 v1, v2, v3, v4 op_sel_hi:[{},{},{}]\n".format(*op_sel_hi))
    enc = excerpt_spec.encoding("ENC_VOP3P")
    assert enc.matches(word)
    got = enc.field("OP_SEL_HI").extract(word)
    assert got == op_sel_hi[0] | op_sel_hi[1] << 1 | op_sel_hi[2] << 2
    assert enc.field("VDST").extract(word) == 1
    src = excerpt_spec.operand_type("OPR_SRC")
    assert enc.field("SRC0").extract(word) == src.value_of("v2")


def test_waitcnt_fields_match_llvm(excerpt_spec):
    llvm_mc = require_tool("llvm-mc")
    word = _llvm_encoding(llvm_mc, "s_waitcnt vmcnt(37) expcnt(5) lgkmcnt(9)\n")
    sopp = excerpt_spec.encoding("ENC_SOPP")
    simm = sopp.field("SIMM16").extract(word)
    fields = {f.name: f.extract(simm) for f in excerpt_spec.operand_type("OPR_WAITCNT").fields}
    assert fields == {"VM": 37, "EXP": 5, "LGKM": 9}
    assert sopp.field("OP").extract(word) == excerpt_spec.instruction("S_WAITCNT").encodings[0].opcode
