"""Our linker against `ld.lld -shared` on relocatable objects from LLVM's AMDGPU backend (via llvmlite).

For one input object the two outputs must agree in everything llvm-readelf shows (header, program headers,
allocated sections, dynamic symbols, dynamic relocations, dynamic section, notes), in the bytes of every
allocated section (so every applied relocation: the descriptors' R_AMDGPU_REL64, REL32_LO/HI and
GOTPCREL32_LO/HI in code, ABS64 pointers in data) and in llvm-objdump's disassembly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jitgemm.codegen.codeobj import CodeObjectError, link, read
from jitgemm.codegen.codeobj.elf_reader import ElfFile

from tests.fixtures.codeobj_support import SCALE_KERNEL, llvmlite_object, objdump_instructions, readelf_view, run
from tests.fixtures.oracles import require_tool

V5 = '!llvm.module.flags = !{!0}\n!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}\n'
HEAD = 'target triple = "amdgcn-amd-amdhsa"\ndeclare i32 @llvm.amdgcn.workitem.id.x()\n'

SCALE = SCALE_KERNEL
GLOBALS = """
@counter = addrspace(1) global i32 0
@table = hidden addrspace(1) global [4 x i32] [i32 1, i32 2, i32 3, i32 4]
@ptrs = addrspace(1) global ptr addrspace(1) @table
@lut = internal addrspace(4) constant [3 x float] [float 1.0, float 2.0, float 4.0]
define amdgpu_kernel void @globals(ptr addrspace(1) %out, i32 %k) {
  %v = load i32, ptr addrspace(1) getelementptr ([4 x i32], ptr addrspace(1) @table, i32 0, i32 2)
  %c = load i32, ptr addrspace(1) @counter
  %p = load ptr addrspace(1), ptr addrspace(1) @ptrs
  %w = load i32, ptr addrspace(1) %p
  %lp = getelementptr [3 x float], ptr addrspace(4) @lut, i32 0, i32 %k
  %l = load float, ptr addrspace(4) %lp
  %li = fptosi float %l to i32
  %s = add i32 %v, %c
  %s2 = add i32 %s, %w
  %s3 = add i32 %s2, %li
  store i32 %s3, ptr addrspace(1) %out
  ret void
}
"""
TWO = """
define amdgpu_kernel void @first(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
define amdgpu_kernel void @second(ptr addrspace(1) %p, i64 %n) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr i64, ptr addrspace(1) %p, i32 %i
  store i64 %n, ptr addrspace(1) %q
  ret void
}
"""

READELF = ("-h", "-l", "-S", "--notes", "--dyn-syms", "-r", "-d")


def _alloc_sections(data: bytes) -> dict[str, bytes]:
    elf = ElfFile(data)
    return {s.name: elf.section_data(s) for s in elf.sections if s.alloc and s.type != 8}


def _assert_links_like_lld(tmp: Path, obj: bytes) -> bytes:
    src = tmp / "in.o"
    src.write_bytes(obj)
    theirs = tmp / "lld.co"
    run([require_tool("ld.lld"), "-shared", str(src), "-o", str(theirs)])
    ours_bytes = link(obj)
    ours = tmp / "ours.co"
    ours.write_bytes(ours_bytes)
    assert readelf_view(ours, READELF) == readelf_view(theirs, READELF)
    assert _alloc_sections(ours_bytes) == _alloc_sections(theirs.read_bytes())
    assert objdump_instructions(ours) == objdump_instructions(theirs)
    return ours_bytes


@pytest.mark.parametrize("version", ["v5", "v6"])
def test_single_kernel(tmp_path, version):
    ours = _assert_links_like_lld(tmp_path, llvmlite_object(HEAD + SCALE + (V5 if version == "v5" else "")))
    co = read(ours)
    assert co.code_object_version == (5 if version == "v5" else 6)
    k = co.kernel("scale")
    assert k.descriptor_address + k.descriptor.kernel_code_entry_byte_offset == k.code_address


def test_globals_got_and_data_relocations(tmp_path):
    obj = llvmlite_object(HEAD + GLOBALS + V5)
    kinds = {r.type for t in ElfFile(obj).sections_of_type(4) for r in ElfFile(obj).relocations(t)}
    assert {5, 3, 8, 9, 10, 11} <= kinds  # REL64, ABS64, GOTPCREL32_LO/HI, REL32_LO/HI all exercised
    ours = _assert_links_like_lld(tmp_path, obj)
    assert read(ours).kernel("globals").args[1][".offset"] == 8


@pytest.mark.parametrize("features", ["", "+xnack,-sramecc", "-xnack,+sramecc"])
def test_two_kernels_one_object(tmp_path, features):
    ours = _assert_links_like_lld(tmp_path, llvmlite_object(HEAD + TWO + V5, features=features))
    assert [k.name for k in read(ours).kernels] == ["first", "second"]


def test_two_objects(tmp_path):
    """Several inputs: lld keeps two metadata notes, we merge them into one (what the loader reads), so the
    layouts differ by the note; kernels, code, descriptors (but for the entry offset) and metadata agree."""
    a = llvmlite_object(HEAD + SCALE + V5)
    b = llvmlite_object(HEAD + TWO + V5)
    (tmp_path / "a.o").write_bytes(a)
    (tmp_path / "b.o").write_bytes(b)
    theirs = tmp_path / "lld.co"
    run([require_tool("ld.lld"), "-shared", str(tmp_path / "a.o"), str(tmp_path / "b.o"), "-o", str(theirs)])
    ours_bytes = link([a, b], names=["a.o", "b.o"])
    ours, lld = read(ours_bytes), read(theirs.read_bytes())
    assert [k.name for k in ours.kernels] == [k.name for k in lld.kernels] == ["scale", "first", "second"]
    for mine, other in zip(ours.kernels, lld.kernels, strict=True):
        assert mine.code == other.code
        assert mine.metadata == other.metadata
        assert mine.descriptor_bytes[:16] == other.descriptor_bytes[:16]
        assert mine.descriptor_bytes[24:] == other.descriptor_bytes[24:]
        assert mine.descriptor_address + mine.descriptor.kernel_code_entry_byte_offset == mine.code_address
    (tmp_path / "ours.co").write_bytes(ours_bytes)
    assert objdump_instructions(tmp_path / "ours.co") == objdump_instructions(theirs)
    notes = run([require_tool("llvm-readelf"), "--notes", str(tmp_path / "ours.co")]).decode()
    assert notes.count("NT_AMDGPU_METADATA") == 1 and "second" in notes


def test_undefined_symbol_is_an_error():
    obj = llvmlite_object(HEAD + """
declare void @elsewhere()
define amdgpu_kernel void @caller() {
  call void @elsewhere()
  ret void
}
""" + V5)
    with pytest.raises(CodeObjectError, match="undefined symbol 'elsewhere'"):
        link(obj)


def test_duplicate_symbol_is_an_error():
    a = llvmlite_object(HEAD + SCALE + V5)
    with pytest.raises(CodeObjectError, match="duplicate symbol 'scale"):
        link([a, a])


def test_only_relocatable_objects_and_amdgpu(tmp_path):
    obj = llvmlite_object(HEAD + SCALE + V5)
    with pytest.raises(CodeObjectError, match="not ET_REL"):
        link(link(obj))
    wrong = bytearray(obj)
    wrong[18:20] = (62).to_bytes(2, "little")  # EM_X86_64
    with pytest.raises(CodeObjectError, match="wrong machine"):
        link(bytes(wrong))
    with pytest.raises(CodeObjectError, match="no input objects"):
        link([])


_FUZZ_INPUTS: list[bytes] = []


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzzed_inputs_fail_only_with_code_object_error(data):
    if not _FUZZ_INPUTS:
        _FUZZ_INPUTS.extend([llvmlite_object(HEAD + GLOBALS + V5), llvmlite_object(HEAD + TWO + V5)])
    blob = bytearray(data.draw(st.sampled_from(_FUZZ_INPUTS)))
    if data.draw(st.booleans()):
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    for _ in range(data.draw(st.integers(1, 12))):
        at = data.draw(st.integers(0, len(blob) - 1)) if blob else 0
        if blob:
            blob[at] = data.draw(st.integers(0, 255))
    try:
        out = link(bytes(blob))
    except CodeObjectError as exc:
        assert str(exc)
    else:
        try:
            read(out)
        except CodeObjectError as exc:
            assert str(exc)
