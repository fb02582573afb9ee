"""The writer's contract with its callers: descriptions in, a self-describing code object out (checked
with pyelftools as an independent ELF reader), and every bad description refused with a message naming the
kernel and the field."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jitgemm.codegen.codeobj import (
    CONTRACT_KEY,
    STANDARD_HIDDEN_ARGS,
    CodeObjectError,
    KernelArg,
    KernelDescription,
    KernelDescriptor,
    read,
    write,
)

from tests.fixtures.oracles import require_module

S_ENDPGM = (0xBF810000).to_bytes(4, "little")


def _kernel(**kw) -> KernelDescription:
    base = {"name": "k", "code": S_ENDPGM}
    base.update(kw)
    return KernelDescription(**base)


CONTRACT = {"op": "gemm", "arch": ["gfx942"], "dtypes": {"a": "bf16", "b": "bf16", "c": "f32"},
            "tile": [256, 128, 64], "layouts": ["N", "T"], "alignment": 16, "divisible": {"k": 64},
            "epilogue": None, "score": 0.75, "split_k": False, "big": 2**40, "neg": -7}


def test_contract_round_trips_and_is_per_kernel():
    co = read(write([_kernel(name="a", contract=CONTRACT), _kernel(name="b")]))
    assert co.kernel("a").contract == CONTRACT
    assert co.kernel("a").metadata[CONTRACT_KEY] == CONTRACT
    assert co.kernel("b").contract is None


def test_pyelftools_sees_what_we_wrote():
    """A third-party ELF parser finds the sections, symbols, segments and note we meant to write."""
    require_module("elftools")
    from elftools.elf.elffile import ELFFile

    kernels = [_kernel(name="alpha", code=S_ENDPGM * 3, args=[KernelArg.buffer("p")], group_segment_size=512),
               _kernel(name="beta", code=S_ENDPGM * 70, next_free_vgpr=40, next_free_agpr=8)]
    data = write(kernels, xnack="on", sramecc="off")
    elf = ELFFile(io.BytesIO(data))
    assert elf["e_type"] == "ET_DYN" and elf["e_machine"] == "EM_AMDGPU"
    assert elf["e_ident"]["EI_ABIVERSION"] == 3
    text = elf.get_section_by_name(".text")
    assert text["sh_addralign"] == 256 and text["sh_flags"] & 0x4
    rodata = elf.get_section_by_name(".rodata")
    syms = {s.name: s for s in elf.get_section_by_name(".dynsym").iter_symbols()}
    for k in kernels:
        func, kd = syms[k.name], syms[f"{k.name}.kd"]
        assert func["st_info"]["type"] == "STT_FUNC" and kd["st_info"]["type"] == "STT_OBJECT"
        assert func["st_value"] % 256 == 0 and kd["st_value"] % 64 == 0 and kd["st_size"] == 64
        code = text.data()[func["st_value"] - text["sh_addr"]:][:func["st_size"]]
        assert code == k.code
        raw = rodata.data()[kd["st_value"] - rodata["sh_addr"]:][:64]
        descriptor = KernelDescriptor.from_bytes(raw)
        assert kd["st_value"] + descriptor.kernel_code_entry_byte_offset == func["st_value"]
    loads = [seg for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
    assert any(seg["p_flags"] & 1 and seg["p_vaddr"] <= text["sh_addr"] < seg["p_vaddr"] + seg["p_memsz"]
               for seg in loads)
    notes = [n for seg in elf.iter_segments() if seg["p_type"] == "PT_NOTE" for n in seg.iter_notes()]
    assert [n["n_name"] for n in notes] == ["AMDGPU"] and notes[0]["n_type"] == 32  # NT_AMDGPU_METADATA
    assert elf.get_section_by_name(".hash") is not None and elf.get_section_by_name(".dynamic") is not None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 256), st.integers(0, 128), st.integers(0, 102),
                          st.lists(st.sampled_from([1, 2, 4, 8, 12, 16]), max_size=5), st.booleans(),
                          st.integers(1, 300)), min_size=1, max_size=4))
def test_written_kernels_read_back(specs):
    kernels = []
    for i, (vgpr, agpr, sgpr, sizes, hidden, dwords) in enumerate(specs):
        args = [KernelArg.scalar(f"a{j}", size) for j, size in enumerate(sizes)]
        kernels.append(_kernel(name=f"kern{i}", code=bytes(range(256)) * (dwords // 64) + S_ENDPGM * (dwords % 64 + 1),
                               next_free_vgpr=vgpr, next_free_agpr=agpr, next_free_sgpr=sgpr, args=args,
                               hidden_args=STANDARD_HIDDEN_ARGS if hidden else ()))
    co = read(write(kernels))
    assert [k.name for k in co.kernels] == [k.name for k in kernels]
    for desc, got in zip(kernels, co.kernels, strict=True):
        assert got.code == desc.code
        d = got.descriptor
        assert got.descriptor_address + d.kernel_code_entry_byte_offset == got.code_address
        assert got.code_address % 256 == 0 and got.descriptor_address % 64 == 0
        assert got.metadata[".agpr_count"] == desc.next_free_agpr
        used = (d.accum_offset + 1) * 4 + desc.next_free_agpr if desc.next_free_agpr else desc.next_free_vgpr
        assert got.metadata[".vgpr_count"] == used <= (d.granulated_workitem_vgpr_count + 1) * 8
        assert (d.granulated_wavefront_sgpr_count + 1) * 8 >= got.metadata[".sgpr_count"] == desc.next_free_sgpr + 6
        offsets = [a[".offset"] for a in got.args]
        assert offsets == sorted(offsets)
        for a in got.args:  # every argument naturally aligned, inside the segment
            assert a[".offset"] % min(16, a[".size"] & -a[".size"]) == 0
            assert a[".offset"] + a[".size"] <= d.kernarg_size == got.metadata[".kernarg_segment_size"]


@pytest.mark.parametrize("kernels, kwargs, message", [
    ([], {}, "at least one kernel"),
    ([_kernel(), _kernel()], {}, "kernel 'k' appears twice"),
    ([_kernel(code=b"")], {}, "code is 0 bytes"),
    ([_kernel(code=b"\0\0\0")], {}, "code is 3 bytes"),
    ([_kernel(name="")], {}, "not a valid symbol name"),
    ([_kernel()], {"target_name": "gfx1100"}, "unsupported target 'gfx1100'"),
    ([_kernel()], {"xnack": "yes"}, "xnack setting 'yes'"),
    ([_kernel()], {"code_object_version": 4}, "code object version 4"),
    ([_kernel(next_free_vgpr=300)], {}, "next_free_vgpr=300 is out of range"),
    ([_kernel(next_free_sgpr=103)], {}, "next_free_sgpr=103 is out of range"),
    ([_kernel(next_free_vgpr=10, accum_offset=8, next_free_agpr=4)], {}, "accum_offset=8 is below"),
    ([_kernel(accum_offset=6, next_free_agpr=4)], {}, "multiple of 4"),
    ([_kernel(next_free_vgpr=256, next_free_agpr=257)], {}, "next_free_agpr=257 is out of range"),
    ([_kernel(user_sgpr_private_segment_buffer=True)], {}, "not available on gfx942"),
    ([_kernel(user_sgpr_count=1)], {}, "below the 2 SGPRs"),
    ([_kernel(kernarg_preload_length=15)], {}, "user_sgpr_count=17 is out of range"),
    ([_kernel(workitem_id=3)], {}, "workitem_id=3"),
    ([_kernel(float_denorm_mode_32=4)], {}, "float_denorm_mode_32=4"),
    ([_kernel(group_segment_size=65537)], {}, "group_segment_size=65537"),
    ([_kernel(wavefront_size=32)], {}, "wave64 only"),
    ([_kernel(args=[KernelArg("x", 4, "hidden_block_count_x")])], {}, "declare hidden arguments in hidden_args"),
    ([_kernel(args=[KernelArg("x", 4, "bogus")])], {}, "value_kind 'bogus'"),
    ([_kernel(args=[KernelArg("x", 0)])], {}, "argument 'x': size must be a positive"),
    ([_kernel(args=[KernelArg("x", 8, offset=0), KernelArg("y", 4, offset=4)])], {}, "'y' at \\[4, 8\\) overlaps"),
    ([_kernel(args=[KernelArg("x", 8, offset=4)])], {}, "offset 4 is not a multiple"),
    ([_kernel(args=[KernelArg("p", 8, "global_buffer", address_space="heap")])], {}, "address_space 'heap'"),
    ([_kernel(hidden_args=("block_count_w",))], {}, "unknown hidden argument 'block_count_w'"),
    ([_kernel(contract={1: "x"})], {}, "map key 1 is not a string"),
    ([_kernel(contract={"s": {1, 2}})], {}, "contract.s: set"),
    ([_kernel(contract={"f": float("nan")})], {}, "not a finite number"),
    ([_kernel(contract=["not", "a", "map"])], {}, "contract must be a mapping"),
    ([_kernel(extra_metadata={".sgpr_count": 3})], {}, "computed by the writer"),
])
def test_bad_descriptions_are_named(kernels, kwargs, message):
    with pytest.raises(CodeObjectError, match=message):
        write(kernels, **kwargs)


def test_extra_metadata_and_explicit_layout():
    k = _kernel(args=[KernelArg("late", 4, offset=12), KernelArg("early", 8, offset=0)],
                extra_metadata={".uniform_work_group_size": 1, "jitgemm.generator": "asm"}, uses_dynamic_stack=True)
    got = read(write([k])).kernel("k")
    assert [(a[".name"], a[".offset"]) for a in got.args] == [("early", 0), ("late", 12)]
    assert got.metadata[".uniform_work_group_size"] == 1 and got.metadata["jitgemm.generator"] == "asm"
    assert got.metadata[".kernarg_segment_size"] == 16 and got.descriptor.uses_dynamic_stack == 1


@given(st.binary(min_size=64, max_size=64))
def test_descriptor_bytes_round_trip(raw):
    assert KernelDescriptor.from_bytes(raw).to_bytes() == raw
