"""Fuzzing the decoder and printer with random words: only clean results (instructions, or `.long` words
with a warning), never an exception; whatever we print assembles again or is rejected with AsmError, and
printing reaches a fixed point after one round (a literal that is an inline constant, printed as 0x1,
reassembles to the inline form, as with LLVM)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.asm_errors import AsmError
from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.disasm.printer import disassemble, format_data, format_instruction

from tests.fixtures.asm_support import forms_named

SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 400)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _text(decoded) -> str:
    return "\n".join(format_instruction(d.instruction) if d.instruction is not None else format_data(d.as_item())
                     for d in decoded)


@pytest.mark.parametrize("name", ["excerpt", "subset"])
@SETTINGS
@given(data=st.binary(min_size=0, max_size=48))
def test_random_bytes_decode_cleanly(name, data):
    forms = forms_named(name)
    decoded = decode(data, forms)
    assert sum(d.size for d in decoded) == len(data)
    for d in decoded:
        assert (d.instruction is None) == (d.warning is not None)
    disassemble(data, forms)


def _word_pairs():
    # random words, and words built from real identifiers so that most decode to something
    return st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("name", ["excerpt", "subset"])
@SETTINGS
@given(pair=_word_pairs(), pick=st.integers(0, 10**6), fill=st.integers(0, 2**32 - 1))
def test_decoded_text_reassembles(name, pair, pick, fill):
    forms = forms_named(name)
    lo, hi = pair
    form = forms.forms[pick % len(forms.forms)]
    mask = form.enc.identifier_mask & 0xFFFFFFFF
    lo = (form.base_word & mask) | (fill & ~mask & 0xFFFFFFFF) if pick % 2 else lo
    data = lo.to_bytes(4, "little") + hi.to_bytes(4, "little")
    text = _text(decode(data, forms))
    try:
        again = assemble(text, forms).code
    except AsmError:
        return  # printed, but the syntax cannot express this word (e.g. a reserved value)
    text2 = _text(decode(again, forms))
    text3 = _text(decode(assemble(text2, forms).code, forms))
    assert text3 == text2
