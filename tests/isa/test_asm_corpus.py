"""The spec-generated corpus against LLVM: every instruction in every encoding of the spec, with operand
values covering each operand type's register classes, named registers, inline constants and literals, and
each modifier the encoding has fields for.

For every line llvm-mc accepts, our bytes must equal llvm-mc's, and our disassembly of them must equal
llvm-mc's printing (normalized whitespace). Lines llvm-mc rejects are counted and listed in the coverage
table by reason, never dropped silently. The round trip text -> bytes -> text -> bytes is checked on the
same corpus.
"""

from __future__ import annotations

import collections

import pytest
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.asm_errors import AsmError, EncodeError
from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.disasm.printer import format_instruction

from tests.fixtures.asm_corpus import corpus as build_corpus
from tests.fixtures.asm_corpus import coverage_table, llvm_disassembly, llvm_mc_encodings, run_corpus
from tests.fixtures.asm_support import SPEC_NAMES, forms_named
from tests.fixtures.oracles import require_tool

_RESULTS: dict[str, list] = {}


def _results(name: str):
    if name not in _RESULTS:
        forms = forms_named(name)
        _RESULTS[name] = run_corpus(build_corpus(forms), forms, require_tool("llvm-mc"))
    return _RESULTS[name]


def _describe(r) -> str:
    ours = r.ours.hex() if r.ours is not None else f"rejected: {r.our_error}"
    return f"{r.case.encoding} [{r.case.what}] {r.case.text!r}: llvm {r.llvm.hex()} ({r.llvm_text}) ours {ours}"


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_corpus_bytes_equal_llvm_mc(name, capsys):
    results = _results(name)
    table = coverage_table(results)
    rejects = collections.Counter(r.llvm_error for r in results if r.llvm is None)
    with capsys.disabled():
        print(f"\n\nassembler corpus vs llvm-mc ({name} spec)\n{table}")
        print("forms llvm-mc rejects, by its reason: " +
              "; ".join(f"{n} x {reason}" for reason, n in rejects.most_common()))
    inconsistent = [r for r in results if r.llvm_inconsistent is not None]
    with capsys.disabled():
        for r in inconsistent:
            print(f"llvm-mc inconsistency, listed not compared: {r.llvm_inconsistent}")
    accepted = [r for r in results if r.llvm is not None and r.llvm_inconsistent is None]
    assert len(accepted) > 0.8 * len(results), "most generated forms should be valid LLVM syntax"
    assert len(inconsistent) < 0.001 * len(results)
    bad = [r for r in accepted if not r.agree]
    assert not bad, f"{len(bad)} of {len(accepted)} forms differ from llvm-mc, e.g.:\n" + \
        "\n".join(_describe(r) for r in bad[:15])


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_corpus_covers_every_instruction_and_encoding(name):
    forms = forms_named(name)
    results = _results(name)
    agreed = {(r.case.instruction, r.case.encoding) for r in results if r.agree}
    tried = {(r.case.instruction, r.case.encoding) for r in results}
    pairs = {(f.spec_inst.name, f.enc.name) for f in forms.forms}
    assert tried == pairs, f"pairs without a corpus case: {sorted(pairs - tried)[:10]}"
    # every pair is either proven against LLVM or one LLVM does not have (then listed with its reason)
    unproven = sorted(p for p in pairs - agreed)
    for inst, enc in unproven:
        reasons = {r.llvm_error for r in results if (r.case.instruction, r.case.encoding) == (inst, enc)}
        assert None not in reasons, f"{inst} in {enc}: llvm-mc accepted a form we did not match"


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_corpus_disassembly_equals_llvm_printing(name):
    """Our disassembly of the agreed bytes is llvm-mc's printing of the line, or, where llvm-mc's
    assembler prints the parsed line differently from what its own disassembler prints for the same bytes
    (`v_max_u16 v1, 0.5, v2` assembles to inline 0.5 and disassembles as `0x3800`), the disassembler's."""
    results = _results(name)
    bad = [r for r in results if r.agree and not r.text_agree]
    if bad:
        back = llvm_disassembly([r.llvm for r in bad], require_tool("llvm-mc"))
        bad = [r for r, text in zip(bad, back, strict=True)
               if text is None or " ".join(text.split()) != " ".join((r.our_text or "").split())]
    assert not bad, f"{len(bad)} disassemblies differ from llvm-mc's printing, e.g.:\n" + \
        "\n".join(f"{r.case.text!r}: llvm {r.llvm_text!r} ours {r.our_text!r}" for r in bad[:15])


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_round_trip_is_a_fixed_point(name):
    """text -> bytes -> text -> bytes. Where printing loses information our bytes may change, but only
    when LLVM's bytes for the printed text change too (the syntax itself is lossy there, e.g. `v_nop_sdwa`
    prints as `v_nop`); the printed text is always a fixed point."""
    forms = forms_named(name)
    results = [r for r in _results(name) if r.agree]
    texts = [r.our_text for r in results]
    llvm_again = llvm_mc_encodings(texts, require_tool("llvm-mc"))
    problems = []
    for r, text, (lbytes, _ltext) in zip(results, texts, llvm_again, strict=False):
        again = assemble(text, forms).code
        if lbytes == r.llvm:  # LLVM's own print/reassemble keeps the bytes: so must ours
            if again != r.ours:
                problems.append(f"{r.case.text!r} -> {text!r}: bytes changed {r.ours.hex()} -> {again.hex()}")
        elif again not in (lbytes, r.ours):  # lossy syntax: agree with LLVM on the text, or keep the bytes
            problems.append(f"{text!r}: ours {again.hex()} llvm {lbytes.hex() if lbytes else None}")
        third = "; ".join(format_instruction(d.instruction) for d in decode(again, forms))
        if third != text:
            problems.append(f"{text!r} printed again as {third!r}")
    assert not problems, f"{len(problems)} round-trip problems, e.g.:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_objects_and_text_encode_identically(name):
    """The generators' path (instruction objects) and the text path give the same bytes."""
    spec_forms = forms_named(name)
    from jitgemm.isa.asm.encoder import encode_instruction

    for case in build_corpus(spec_forms)[::7]:
        try:
            from_text = assemble(case.text, spec_forms).code
        except AsmError:
            from_text = "rejected"
        try:
            from_object = encode_instruction(case.item, spec_forms)
        except EncodeError:
            from_object = "rejected"
        assert from_text == from_object, case.text
