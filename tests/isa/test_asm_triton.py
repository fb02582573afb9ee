"""Triton's own assembly text for gfx942 (kernel.asm["amdgcn"]) assembles with our assembler to exactly
the code Triton (through LLVM) put in the kernel's code object."""

from __future__ import annotations

import pytest
from jitgemm.isa.asm.assembler import assemble

from tests.fixtures.asm_support import forms_named, triton_objects


@pytest.fixture(scope="module")
def triton_objs(tmp_path_factory):
    return triton_objects(tmp_path_factory.mktemp("triton_asm"))


def test_triton_assembly_text_reassembles_to_its_code_object(triton_objs):
    from jitgemm.codegen import codeobj

    forms = forms_named("subset")
    checked = 0
    for path in triton_objs:
        text = path.with_suffix(".s").read_text()
        ours = assemble(text, forms, file=path.with_suffix(".s").name)
        for kernel in codeobj.read(path.read_bytes()).kernels:
            start = ours.symbols[kernel.name]
            assert ours.code[start:start + len(kernel.code)] == kernel.code, f"{path.name}:{kernel.name}"
            checked += 1
    assert checked >= 5
