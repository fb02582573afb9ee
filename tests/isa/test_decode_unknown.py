"""Words the spec has no instruction for, beside llvm-objdump-22: a word whose opcode is an instruction of the spec
with an operand value the spec does not define names the instruction and the value instead of "opcode not in the
spec"; words LLVM rejects (reserved SDWA selects, neg/abs on an integer DPP source) print as `.long` with the
reason instead of decoding with the bits unshown."""

from __future__ import annotations

import subprocess

from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.spec.forms import forms_of
from jitgemm.isa.spec.sources import load_spec

from tests.fixtures.oracles import require_tool

NOP = (0xBF800000).to_bytes(4, "little")


def _objdump(tmp_path, data: bytes) -> list[str]:
    src = tmp_path / "u.s"
    src.write_text(".text\n" + "".join(f".byte {b}\n" for b in data))
    subprocess.run([require_tool("llvm-mc"), "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(src),
                    "-o", str(tmp_path / "u.o")], check=True, timeout=60)
    out = subprocess.run([require_tool("llvm-objdump"), "-d", "--mcpu=gfx942", str(tmp_path / "u.o")],
                         capture_output=True, text=True, timeout=60).stdout
    return [line.split("//")[0].strip() for line in out.splitlines() if "// 0000" in line]


def test_rejected_operand_is_named():
    forms = forms_of(load_spec("gfx942"))
    d = decode((0xD3FF0000).to_bytes(4, "little") + bytes(4), forms)[0]
    assert d.instruction is None and d.size == 8   # LLVM decodes it as the instruction, marked invalid
    assert d.warning.startswith("v_smfmac_f32_32x32x32_fp8_fp8: value 0 is not defined by operand type "
                                "OPR_SRC_VGPR_OR_ACCVGPR"), d.warning


def _word_with(line: str, bits: int) -> bytes:
    from jitgemm.isa.asm.assembler import assemble

    forms = forms_of(load_spec("gfx942"))
    code = assemble(line, forms).code
    return code[:4] + (int.from_bytes(code[4:8], "little") | bits).to_bytes(4, "little")


def test_words_llvm_rejects_are_long_with_the_reason_not_decoded_with_bits_dropped():
    """Reserved SDWA selects (7 crashes llvm-objdump-22; dst_unused 3 it prints as UNUSED_PAD, dropping the bits)
    and neg/abs on an integer DPP source (llvm-objdump-22: two .long) used to decode with the bits unshown."""
    forms = forms_of(load_spec("gfx942"))
    sdwa = "v_mov_b32_sdwa v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD"
    dpp = "v_add_u32_dpp v1, v2, v3 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf"
    for data, reason in ((_word_with(sdwa, 7 << 8), "dst_sel 7 is reserved"),
                         (_word_with(sdwa, 7 << 16), "src0_sel 7 is reserved"),
                         (_word_with(sdwa, 3 << 11), "dst_unused 3 is reserved"),
                         (_word_with(dpp, 1 << 20), "SRC0_NEG is set on an integer source"),
                         (_word_with(dpp, 1 << 23), "SRC1_ABS is set on an integer source")):
        d = decode(data, forms)[0]
        assert d.instruction is None and d.size == 8 and reason in d.warning, d.warning
