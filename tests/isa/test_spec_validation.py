"""A spec that lies about its bit layouts is refused at load, with the element's path: fields past the encoding's
width or overlapping another field (an SDST overlapping OP once made `s_mov_b32 s1, s2` assemble to the bytes of
`s_mov_b64 s[0:1], s[2:3]`), an absurd BitCount, opcodes outside the OP field or given to two instructions.
Each case mutates the bundled CDNA3 subset (which itself loads).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from jitgemm.isa.errors import SpecError
from jitgemm.isa.spec.xml_reader import read_xml

SUBSET = Path(__file__).resolve().parents[2] / "specs" / "amdgpu_isa_cdna3_subset.xml"


@functools.cache
def _text() -> str:
    """The subset with only the instructions these tests touch (a 6 MB file parses in seconds; this in a tenth)."""
    keep = ("S_MOV_B32", "S_MOV_B64", "S_NOT_B32")
    return re.sub(r"<Instruction>.*?</Instruction>\s*",
                  lambda m: m.group(0) if any(f"<InstructionName>{k}</InstructionName>" in m.group(0) for k in keep)
                  else "", SUBSET.read_text(encoding="utf-8"), flags=re.S)


def _encoding_span(text: str, name: str) -> tuple[int, int]:
    start = text.index(f"<EncodingName>{name}</EncodingName>")
    return start, text.index("</Encoding>", start)


def _field_range(text: str, encoding: str, field: str, new: str) -> str:
    """`text` with the first Range of `field` in `encoding` replaced by `new` (a <Range> body)."""
    lo, hi = _encoding_span(text, encoding)
    at = text.index(f"<FieldName>{field}</FieldName>", lo, hi)
    r0 = text.index("<Range Order=\"0\">", at) + len("<Range Order=\"0\">")
    r1 = text.index("</Range>", r0)
    return text[:r0] + new + text[r1:]


def _opcode(text: str, instruction: str, encoding: str, value: str) -> str:
    at = text.index(f"<InstructionName>{instruction}</InstructionName>")
    enc = text.index(f"<EncodingName>{encoding}</EncodingName>", at)
    return text[:enc] + re.sub(r'<Opcode Radix="10">-?\d+</Opcode>', f'<Opcode Radix="10">{value}</Opcode>', text[enc:],
                               count=1)


def _load(text: str):
    return read_xml("hostile.xml", text.encode())


def test_the_bundled_subset_loads():
    _load(_text())


@pytest.mark.parametrize("mutate, message", [
    (lambda t: _field_range(t, "ENC_SOP1", "SDST", "<BitCount>7</BitCount><BitOffset>12</BitOffset>"),
     r"Encoding\[ENC_SOP1\]/MicrocodeFormat/BitMap/Field\[SDST\]: bit 12 is also field OP's"),
    (lambda t: _field_range(t, "ENC_SOP1", "SSRC0", "<BitCount>8</BitCount><BitOffset>30</BitOffset>"),
     r"Field\[SSRC0\]: bits 30..37 lie outside the encoding's 32 bits"),
    (lambda t: _field_range(t, "ENC_SOP1", "SSRC0", "<BitCount>100000000</BitCount><BitOffset>0</BitOffset>"),
     r"Field\[SSRC0\]: bits 0..99999999 lie outside"),
    (lambda t: t.replace("<EncodingName>ENC_SOP1</EncodingName>\n        <BitCount>32</BitCount>",
                         "<EncodingName>ENC_SOP1</EncodingName>\n        <BitCount>100000000</BitCount>", 1),
     r"Encoding\[ENC_SOP1\]/BitCount: 100000000 bits"),
    (lambda t: _opcode(t, "S_MOV_B64", "ENC_SOP1", "0"),
     r"Instruction\[S_MOV_B64\]/InstructionEncodings/InstructionEncoding\[ENC_SOP1\]/Opcode: 0 is also S_MOV_B32's"),
    (lambda t: _opcode(t, "S_MOV_B64", "ENC_SOP1", "99999999999"),
     r"Opcode: 99999999999 is not an opcode of ENC_SOP1; accepted: 0..255"),
    (lambda t: _opcode(t, "S_MOV_B64", "ENC_SOP1", "-3"),
     r"Opcode: -3 is not an opcode of ENC_SOP1"),
])
def test_lying_layouts_are_refused_with_the_path(mutate, message):
    text = mutate(_text())
    assert text != _text()
    with pytest.raises(SpecError, match=message):
        _load(text)
