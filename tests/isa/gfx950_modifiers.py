"""Every modifier spelling LLVM's AMDGPU assembler knows, tried on every gfx950-only instruction (in the CDNA4
spec, not in the CDNA3 one) in each of its encodings, beside llvm-mc-22 -mcpu=gfx950: the lines each accepts and
the bytes. Used by tests/isa/test_gfx950_modifiers.py and bench/fuzz_hostile.py."""

from __future__ import annotations

MODIFIERS = (
    "clamp", "mul:2", "mul:4", "div:2", "bound_ctrl:0", "bound_ctrl:1", "fi:0", "fi:1",
    "op_sel:[1,0]", "op_sel:[0,1]", "op_sel:[1,0,0]", "op_sel:[0,0,1]", "op_sel:[1,0,0,0]", "op_sel:[0,0,0,1]",
    "op_sel_hi:[0,0]", "op_sel_hi:[0,0,0]", "op_sel_hi:[1,0,1]", "neg_lo:[1,0]", "neg_lo:[1,0,0]", "neg_hi:[0,1]",
    "neg_hi:[0,1,0]", "neg:[1,0,0]", "cbsz:1", "abid:1", "blgp:1", "offset:16", "sc0", "sc1", "nt", "glc", "slc",
    "lds", "quad_perm:[1,0,3,2]", "row_shl:1", "row_mask:0x1", "bank_mask:0x1", "row_newbcast:1",
    "dst_sel:WORD_1", "dst_unused:UNUSED_PAD", "src0_sel:BYTE_1", "src1_sel:BYTE_2", "byte_sel:1", "index_key:1",
    "matrix_a_fmt:MATRIX_FMT_FP8",
)


def compare(lines: list[str], llvm_mc: str) -> list[tuple[str, str, str]]:
    """(line, llvm-mc's verdict, ours) for every line where they differ (acceptance, or bytes)."""
    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.asm_errors import AsmError, EncodeError
    from jitgemm.isa.spec.forms import forms_of
    from jitgemm.isa.spec.sources import load_spec

    from tests.asm_corpus import llvm_mc_encodings

    forms = forms_of(load_spec("gfx950"))
    out = []
    for line, (theirs, text) in zip(lines, llvm_mc_encodings(lines, llvm_mc, "gfx950"), strict=True):
        try:
            ours = assemble(line, forms).code
            why = ours.hex()
        except (AsmError, EncodeError) as exc:
            ours, why = None, str(exc).split("\n")[0]
        if ours != theirs:
            out.append((line, theirs.hex() if theirs is not None else f"refused: {text}", why))
    return out


def gfx950_only_lines() -> list[str]:
    """base line of each form of each gfx950-only instruction, with each modifier appended (and the base)."""
    from jitgemm.isa.spec.forms import forms_of
    from jitgemm.isa.spec.sources import load_spec

    from tests.asm_corpus import cases_for_form

    old = {i.name.lower() for i in load_spec("gfx942").instructions}
    forms = forms_of(load_spec("gfx950"))
    lines = []
    seen = set()
    for form in forms.forms:
        if form.spec_inst.name.lower() in old:
            continue
        if True:
            base = next((c.text for c in cases_for_form(form) if c.what == "base"), None)
            if base is None or base in seen:
                continue
            seen.add(base)
            lines.append(base)
            lines.extend(f"{base} {m}" for m in MODIFIERS)
    return lines
