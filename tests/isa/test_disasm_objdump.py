"""Our disassembly of code objects other compilers made equals llvm-objdump's, instruction for instruction.

The objects are compiled in the test: C kernels by clang-22 (loops, MFMA builtins in bf16/f16/fp8, DPP,
division, LDS) and Triton kernels (elementwise, softmax, bf16/f16/fp8 GEMMs). Only whitespace is
normalized; objdump's comments are not part of the compared text. Instructions the loaded spec does not
define are counted (they print as `.long`) but must still keep the instruction boundaries right, and
every kernel must reassemble from our listing to the same bytes.
"""

from __future__ import annotations

import collections

import pytest
from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.disasm.decoder import decode, decode_at
from jitgemm.isa.disasm.printer import format_data, format_instruction

from tests.fixtures.asm_support import SPEC_NAMES, clang_objects, forms_named, objdump, text_section, triton_objects


@pytest.fixture(scope="module")
def clang_objs(tmp_path_factory):
    return clang_objects(tmp_path_factory.mktemp("clang"))


@pytest.fixture(scope="module")
def triton_objs(tmp_path_factory):
    return triton_objects(tmp_path_factory.mktemp("triton"))


def _compare(paths, forms):
    stats = collections.Counter()
    unknown = collections.Counter()
    problems = []
    for path in paths:
        data, addr = text_section(path)
        for offset, text, size in objdump(path):
            d = decode_at(data, offset - addr, forms, addr)
            if d.instruction is None:
                stats["not in spec"] += 1
                unknown[text.split()[0]] += 1
                if d.size != size:
                    problems.append(f"{path.name}+{offset:#x}: unknown {text!r} sized {d.size}, objdump {size}")
                continue
            ours = " ".join(format_instruction(d.instruction).split())
            if ours == text and d.size == size:
                stats["equal"] += 1
            else:
                problems.append(f"{path.name}+{offset:#x}: objdump {text!r} ours {ours!r} ({d.size} bytes)")
    return stats, unknown, problems


def _check(paths, forms, what, capsys):
    stats, unknown, problems = _compare(paths, forms)
    with capsys.disabled():
        print(f"\n{what}: {stats['equal']} instructions equal to llvm-objdump, {stats['not in spec']} not in the "
              f"spec ({', '.join(f'{n} x{c}' for n, c in unknown.most_common(8))})")
    assert stats["equal"] > 0
    assert not problems, f"{len(problems)} differences, e.g.:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_clang_code_objects_match_objdump(name, clang_objs, capsys):
    _check(clang_objs, forms_named(name), f"clang-22 objects, {name} spec", capsys)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_triton_code_objects_match_objdump(name, triton_objs, capsys):
    _check(triton_objs, forms_named(name), f"Triton objects, {name} spec", capsys)


def _kernel_codes(paths):
    from jitgemm.codegen import codeobj

    for path in paths:
        for kernel in codeobj.read(path.read_bytes()).kernels:
            yield path, kernel


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_sequential_listing_keeps_objdump_boundaries(name, clang_objs, triton_objs):
    """Listing a kernel from its start (as `jitgemm disasm` does) lands on objdump's instruction
    boundaries, also across instructions the spec does not define."""
    forms = forms_named(name)
    for path, kernel in _kernel_codes(list(clang_objs) + list(triton_objs)):
        ours = [d.offset for d in decode(kernel.code, forms, base=kernel.code_address)]
        end = kernel.code_address + len(kernel.code)
        theirs = [off for off, _t, _s in objdump(path) if kernel.code_address <= off < end]
        assert ours == theirs, f"{path.name}:{kernel.name}: instruction boundaries differ"


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_foreign_kernels_reassemble_to_the_same_bytes(name, clang_objs, triton_objs):
    forms = forms_named(name)
    for path, kernel in _kernel_codes(list(clang_objs) + list(triton_objs)):
        lines = [format_instruction(d.instruction) if d.instruction is not None else format_data(d.as_item())
                 for d in decode(kernel.code, forms)]
        again = assemble("\n".join(lines), forms).code
        assert again == kernel.code, f"{path.name}:{kernel.name} does not reassemble to its bytes"
