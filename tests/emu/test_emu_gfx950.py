"""gfx950 in the emulator and the tools: numeric rules from the target profile (OCP fp8 vs gfx942's FNUZ, 160 KiB
LDS), the reusable microscaling decoders (against ml_dtypes), the f8f6f4 operand widths (against llvm-mc), the
code object's own target (ELF e_flags), and disassembly of AMD's hand-written gfx950 kernels (aiter) against
llvm-objdump-22 --mcpu=gfx950."""

from __future__ import annotations

import random
import re
import subprocess

import ml_dtypes
import numpy as np
import pytest

from jitgemm import isa
from tests.fixtures.oracles import require_tool

RNG = np.random.default_rng(950)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def test_fp8_meaning_comes_from_the_target_profile():
    from jitgemm.emu.values import operand_fmt, to_typed

    codes = np.arange(256, dtype=np.uint8)
    for fmt, ocp, fnuz in (("FMT_NUM_FP8", ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz),
                           ("FMT_NUM_BF8", ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz)):
        v950 = to_typed(codes, operand_fmt(isa.load_spec("gfx950"), fmt, 8)).astype(np.float64)
        v942 = to_typed(codes, operand_fmt(isa.load_spec("gfx942"), fmt, 8)).astype(np.float64)
        assert _same(v950, codes.view(ocp).astype(np.float64)).all()
        assert _same(v942, codes.view(fnuz).astype(np.float64)).all()
        assert int((~_same(v950, v942)).sum()) == 255, "all codes but 0 mean different numbers"


def test_lds_limit_comes_from_the_target_profile():
    from jitgemm.emu.memory import lds_limit

    assert lds_limit(isa.load_spec("gfx950")) == 160 * 1024
    assert lds_limit(isa.load_spec("gfx942")) == 64 * 1024


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Independent packer: element i at bits [bits*i, bits*i+bits) of one little-endian integer per row."""
    rows = []
    for row in codes:
        value = 0
        for i, c in enumerate(row):
            value |= int(c) << (bits * i)
        nwords = (bits * len(row) + 31) // 32
        rows.append([(value >> (32 * w)) & 0xFFFFFFFF for w in range(nwords)])
    return np.array(rows, dtype=np.uint32)


@pytest.mark.parametrize("code,dtype,regs", [(0, ml_dtypes.float8_e4m3fn, 8), (1, ml_dtypes.float8_e5m2, 8),
                                             (2, ml_dtypes.float6_e2m3fn, 6), (3, ml_dtypes.float6_e3m2fn, 6),
                                             (4, ml_dtypes.float4_e2m1fn, 4)])
def test_f8f6f4_element_decoding_equals_ml_dtypes(code, dtype, regs):
    from jitgemm.emu.mx_formats import decode_elements, matrix_format

    fmt = matrix_format(code)
    assert fmt.registers(32) == regs
    codes = RNG.integers(0, 1 << fmt.bits, size=(64, 32), dtype=np.uint8)
    words = _pack(codes, fmt.bits)
    assert words.shape == (64, regs)
    got = decode_elements(words, fmt, 32)
    want = codes.view(dtype).astype(np.float64)
    assert _same(got, want).all()
    with pytest.raises(ValueError, match="selects no f8f6f4 format"):
        matrix_format(5)


def test_e8m0_scales_and_byte_select():
    from jitgemm.emu.mx_formats import e8m0_values, scale_byte

    codes = np.arange(256, dtype=np.uint8)
    got = e8m0_values(codes)
    assert _same(got, codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)).all()
    assert got[0] == 2.0 ** -127 and got[254] == 2.0 ** 127 and np.isnan(got[255])
    regs = RNG.integers(0, 1 << 32, size=64, dtype=np.uint64).astype(np.uint32)
    for sel in range(4):
        assert (scale_byte(regs, sel) == ((regs >> (8 * sel)) & 0xFF)).all()


def test_f8f6f4_operand_widths_follow_cbsz_blgp_as_llvm():
    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.forms import forms_of

    from tests.fixtures.asm_corpus import llvm_mc_encodings

    forms = forms_of(isa.load_spec("gfx950"))
    regs = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}
    lines = []
    for a in regs:
        for b in regs:
            ra, rb = regs[a], regs[b]
            lines.append(f"v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:{3 + ra}], v[12:{11 + rb}], v[20:23] "
                         + " ".join(m for m in (f"cbsz:{a}" if a else "", f"blgp:{b}" if b else "") if m))
            lines.append(f"v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:{15 + ra}], v[24:{23 + rb}], v[32:47], "
                         f"v48, v49 op_sel_hi:[0,0,0]" + (f" cbsz:{a}" if a else "") + (f" blgp:{b}" if b else ""))
    ref = llvm_mc_encodings(lines, require_tool("llvm-mc"), "gfx950")
    for line, (lbytes, ltext) in zip(lines, ref, strict=True):
        assert lbytes is not None, f"llvm-mc rejects {line!r}: {ltext}"
        ours = assemble(line, forms).code
        assert ours == lbytes, f"{line}: ours {ours.hex()} llvm {lbytes.hex()}"
        printed = format_instruction(decode(ours, forms)[0].instruction)
        assert " ".join(printed.split()) == " ".join(ltext.split())


def test_scaled_mfma_keeps_bits_llvm_does_not_print():
    """Bits 13-14 of the prefix word (op_sel[2] / op_sel_hi[2] of the load-scale half) are set by AMD's
    hand-assembled kernels (aiter's MXFP4 MoE kernels); llvm-objdump does not print them, and neither do we, but
    the decoded instruction keeps them so re-encoding gives the same bytes."""
    from jitgemm.isa.asm.encoder import encode_instruction
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.forms import forms_of

    from tests.fixtures.aiter_corpus import aiter_objects
    from tests.fixtures.asm_support import text_section

    forms = forms_of(isa.load_spec("gfx950"))
    word = bytearray(bytes.fromhex("0000acd3183302000008add304195204"))
    word[1] |= 0x60
    out = subprocess.run([require_tool("llvm-mc"), "-arch=amdgcn", "-mcpu=gfx950", "--disassemble"],
                         input=",".join(f"0x{b:02x}" for b in word), capture_output=True, text=True).stdout
    llvm = [x.strip() for x in out.splitlines() if x.strip() and not x.strip().startswith(".")]
    inst = decode(bytes(word), forms)[0].instruction
    assert len(llvm) == 1 and " ".join(format_instruction(inst).split()) == " ".join(llvm[0].split())
    assert encode_instruction(inst, forms) == bytes(word)
    seen = with_bits = 0
    for path in [p for p in aiter_objects("gfx950") if "fp4" in p.name.lower()][:3]:
        code, addr = text_section(path)
        for d in decode(code, forms, base=addr):
            if d.instruction is None or not d.instruction.name.startswith("v_mfma_scale"):
                continue
            raw = code[d.offset - addr:d.offset - addr + d.size]
            seen += 1
            with_bits += bool(raw[1] & 0x60)
            assert encode_instruction(d.instruction, forms, pc=d.offset) == raw, format_instruction(d.instruction)
    assert seen and with_bits, f"{seen} scaled MFMAs, {with_bits} with bits 13-14 set"


_OBJDUMP = re.compile(r"^\s+(.*?)\s*//\s*([0-9A-Fa-f]+):\s*((?:[0-9A-Fa-f]{8}\s?)+)")


def test_aiter_gfx950_kernels_disassemble_as_llvm_objdump():
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.forms import forms_of

    from tests.fixtures.aiter_corpus import aiter_objects
    from tests.fixtures.asm_support import text_section

    objdump = require_tool("llvm-objdump")
    forms = forms_of(isa.load_spec("gfx950"))
    objects = aiter_objects("gfx950")
    mx = [p for p in objects if "fp4" in p.name.lower()][:2]
    sample = mx + random.Random(950).sample(objects, 6)
    total = agree = 0
    bad = []
    for path in sample:
        out = subprocess.run([objdump, "-d", "--mcpu=gfx950", str(path)], capture_output=True, text=True).stdout
        ref = {int(m.group(2), 16): " ".join(m.group(1).split()) for m in map(_OBJDUMP.match, out.splitlines()) if m}
        code, addr = text_section(path)
        for d in decode(code, forms, base=addr):
            if d.offset not in ref:
                continue
            total += 1
            ours = " ".join(format_instruction(d.instruction).split()) if d.instruction else "<undecodable>"
            want = ref[d.offset]
            # llvm-objdump names branch targets label_XXXX; the raw decoder prints the offset (jitgemm disasm
            # prints labels, tests/isa/test_disasm_objdump.py)
            if ours == want or (" label_" in want and ours.split()[0] == want.split()[0]):
                agree += 1
            elif len(bad) < 10:
                bad.append(f"{path.name}+0x{d.offset:x}: objdump {want!r} ours {ours!r}")
    print(f"\naiter gfx950: {agree}/{total} instructions of {len(sample)} objects equal llvm-objdump-22")
    assert total > 10000 and agree == total, "\n".join(bad)


def test_emulate_check_takes_the_target_from_the_code_object(capsys):
    from jitgemm.cli import main
    from tests.fixtures.aiter_corpus import aiter_objects

    path = next(p for p in aiter_objects("gfx950") if "bf16gemm" in str(p))
    rc = main(["emulate", "--check", str(path)])
    out = capsys.readouterr().out
    assert "target gfx950, spec AMD CDNA 4" in out and rc == 0, out
    rc = main(["emulate", "--check", "--arch", "gfx942", str(path)])
    assert "target gfx942, spec AMD CDNA 3" in capsys.readouterr().out
