"""Our writer against LLVM: for the same instruction bytes and the same `.amdhsa_kernel` settings, the code
object from `codegen.codeobj.write` and the one from `llvm-mc -filetype=obj` + `ld.lld -shared` agree in
everything llvm-readelf shows (-h -l -S --notes --dyn-syms), in the descriptor bytes and in llvm-objdump's
disassembly.

Division of authority: llvm-mc computes the descriptor from the directives on its own (granulated register
counts, user SGPR count, accum offset, ...), so the descriptor comparison checks our arithmetic. The metadata
values are handed to llvm-mc as YAML, so that comparison checks our msgpack encoding and note framing; the
metadata *values* (kernarg offsets, hidden arguments, sgpr/vgpr counts) are checked against what LLVM's
compiler itself emits in test_codeobj_accounting.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitgemm.codegen.codeobj import STANDARD_HIDDEN_ARGS, KernelArg, KernelDescription, read, write
from jitgemm.codegen.codeobj.elf_reader import ElfFile

from tests.fixtures.codeobj_support import (
    assemble_bytes,
    llvm_code_object,
    llvm_source,
    objdump_instructions,
    readelf_metadata,
    readelf_view,
)

BASIC = ["s_load_dwordx2 s[0:1], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)", "v_mov_b32 v0, 1.0",
         "v_add_f32 v1, v0, v0", "s_endpgm"]
AGPR = ["v_accvgpr_write_b32 a0, v0", "v_mfma_f32_32x32x2f32 a[0:15], v0, v1, a[0:15]", "s_nop 7",
        "v_accvgpr_read_b32 v2, a3", "s_endpgm"]
VARIOUS = ["v_mul_f32 v3, v1, v2", "s_add_u32 s4, s5, 7", "v_lshlrev_b32 v0, 2, v0", "ds_write_b32 v0, v1",
           "global_load_dword v4, v[2:3], off", "s_barrier", "v_fma_f32 v5, v1, v2, v3", "s_endpgm"]


def _section(data: bytes, name: str) -> bytes:
    elf = ElfFile(data)
    for s in elf.sections:
        if s.name == name:
            return elf.section_data(s)
    raise AssertionError(f"no section {name}")


def assert_same_as_llvm(tmp: Path, kernels: list[KernelDescription], processor: str = "gfx942",
                        xnack: str = "any", sramecc: str = "any") -> bytes:
    ours = write(kernels, processor, xnack=xnack, sramecc=sramecc)
    metadata = read(ours).metadata
    source = llvm_source(kernels, metadata, processor=processor)
    theirs_path = llvm_code_object(tmp, source, processor, xnack, sramecc)
    ours_path = tmp / "ours.co"
    ours_path.write_bytes(ours)
    theirs = theirs_path.read_bytes()
    assert readelf_view(ours_path) == readelf_view(theirs_path)
    for name in (".rodata", ".text", ".note", ".dynsym", ".hash", ".gnu.hash", ".dynstr", ".dynamic"):
        assert _section(ours, name) == _section(theirs, name), name
    assert objdump_instructions(ours_path) == objdump_instructions(theirs_path)
    assert readelf_metadata(ours_path) == readelf_metadata(theirs_path)
    return ours


def test_single_kernel_with_lds(tmp_path):
    code = assemble_bytes("\n".join(BASIC))
    k = KernelDescription("copy", code, args=[KernelArg.buffer("out")], group_segment_size=1024,
                          next_free_vgpr=2, next_free_sgpr=2, max_flat_workgroup_size=256)
    ours = assert_same_as_llvm(tmp_path, [k], xnack="off", sramecc="on")
    instructions = objdump_instructions(tmp_path / "ours.co")
    assert [i.split()[0].removesuffix("_e32") for i in instructions] == [b.split()[0] for b in BASIC]
    assert read(ours).kernel("copy").descriptor.group_segment_fixed_size == 1024


def test_agpr_kernel_accum_offset(tmp_path):
    code = assemble_bytes("\n".join(AGPR))
    k = KernelDescription("mfma", code, args=[KernelArg.buffer("a"), KernelArg.buffer("b")],
                          next_free_vgpr=5, next_free_agpr=16, next_free_sgpr=12, hidden_args=STANDARD_HIDDEN_ARGS)
    ours = assert_same_as_llvm(tmp_path, [k])
    d = read(ours).kernel("mfma").descriptor
    assert d.accum_offset_registers == 8
    assert (d.granulated_workitem_vgpr_count + 1) * 8 >= 8 + 16


def test_three_kernels_many_settings(tmp_path):
    various = assemble_bytes("\n".join(VARIOUS))
    kernels = [
        KernelDescription("k_small", assemble_bytes("s_endpgm"), next_free_vgpr=1, next_free_sgpr=0,
                          user_sgpr_kernarg_segment_ptr=False, workgroup_id=(False, False, False)),
        KernelDescription("k_dims", various, args=[KernelArg.buffer("x", access="read_only"),
                                                    KernelArg.scalar("n", 4), KernelArg.scalar("alpha", 8)],
                          hidden_args=("block_count_x", "group_size_x", "grid_dims", "queue_ptr"),
                          next_free_vgpr=37, next_free_sgpr=45, workgroup_id=(True, True, True),
                          workitem_id=2, user_sgpr_dispatch_ptr=True, user_sgpr_queue_ptr=True,
                          user_sgpr_dispatch_id=True, private_segment_size=64, float_denorm_mode_32=3,
                          float_round_mode_16_64=1, dx10_clamp=False, exceptions=0b1010101,
                          group_segment_size=65536, max_flat_workgroup_size=1024),
        KernelDescription("k_agpr", assemble_bytes("\n".join(AGPR)), args=[KernelArg.buffer("c")],
                          next_free_vgpr=64, next_free_agpr=128, accum_offset=68, next_free_sgpr=101,
                          ieee_mode=False, tg_split=True, fp16_overflow=True, workgroup_info=True,
                          contract={"op": "gemm", "dtypes": ["bf16", "bf16", "f32"], "tile": [256, 128, 64],
                                    "alignment": 16, "split_k": False, "score": 1.5, "notes": None}),
    ]
    ours = assert_same_as_llvm(tmp_path, kernels, xnack="on", sramecc="off")
    co = read(ours)
    assert [k.name for k in co.kernels] == ["k_small", "k_dims", "k_agpr"]
    assert co.kernel("k_agpr").contract["tile"] == [256, 128, 64]


def test_kernarg_preload_and_user_sgpr_count(tmp_path):
    k = KernelDescription("pre", assemble_bytes("s_endpgm"), args=[KernelArg.buffer("p"), KernelArg.scalar("n")],
                          kernarg_preload_length=3, kernarg_preload_offset=0, user_sgpr_count=8,
                          user_sgpr_private_segment_size=True, next_free_sgpr=8)
    assert_same_as_llvm(tmp_path, [k])


def test_other_targets(tmp_path):
    code = assemble_bytes("\n".join(BASIC), "gfx90a")
    k = KernelDescription("t", code, args=[KernelArg.buffer("p")], next_free_vgpr=9, next_free_sgpr=11)
    assert_same_as_llvm(tmp_path, [k], processor="gfx90a", xnack="off", sramecc="on")
    k90 = KernelDescription("t", code, args=[KernelArg.buffer("p")], next_free_vgpr=9, next_free_sgpr=11,
                            reserve_flat_scratch=False, reserve_vcc=False)
    assert_same_as_llvm(tmp_path, [k90], processor="gfx90a", xnack="on")
    assert_same_as_llvm(tmp_path, [k], processor="gfx950")


_CODES: dict[int, bytes] = {}


def _code(choice: int) -> bytes:
    if choice not in _CODES:
        _CODES[choice] = assemble_bytes("\n".join([BASIC, AGPR, VARIOUS][choice]))
    return _CODES[choice]


@st.composite
def kernel_descriptions(draw, index: int) -> KernelDescription:
    vgpr = draw(st.integers(0, 256))
    agpr = draw(st.sampled_from([0, 0, 1, 4, 16, 63, 256 - (-(-max(1, vgpr) // 4) * 4)]))
    accum = None
    if agpr and draw(st.booleans()):
        base = -(-max(1, vgpr) // 4) * 4
        accum = min(256, base + 4 * draw(st.integers(0, 4)))
        agpr = min(agpr, 512 - accum)
    n_args = draw(st.integers(0, 4))
    args = [draw(st.sampled_from([KernelArg.buffer(f"p{i}"), KernelArg.scalar(f"s{i}", 4),
                                  KernelArg.scalar(f"d{i}", 8), KernelArg(f"v{i}", 16, "by_value")]))
            for i in range(n_args)]
    hidden = draw(st.sampled_from([(), STANDARD_HIDDEN_ARGS, ("hidden_queue_ptr", "hidden_dynamic_lds_size")]))
    return KernelDescription(
        name=f"kernel_{index}", code=_code(draw(st.integers(0, 2))), args=args, hidden_args=hidden,
        group_segment_size=draw(st.sampled_from([0, 4, 1000, 32768, 65536])),
        private_segment_size=draw(st.sampled_from([0, 16, 1024])),
        next_free_vgpr=vgpr, next_free_agpr=agpr, accum_offset=accum,
        next_free_sgpr=draw(st.integers(0, 102)),
        user_sgpr_dispatch_ptr=draw(st.booleans()), user_sgpr_queue_ptr=draw(st.booleans()),
        user_sgpr_kernarg_segment_ptr=draw(st.booleans()), user_sgpr_dispatch_id=draw(st.booleans()),
        workgroup_id=(draw(st.booleans()), draw(st.booleans()), draw(st.booleans())),
        workitem_id=draw(st.integers(0, 2)),
        float_round_mode_32=draw(st.integers(0, 3)), float_denorm_mode_32=draw(st.integers(0, 3)),
        float_denorm_mode_16_64=draw(st.integers(0, 3)), ieee_mode=draw(st.booleans()),
        dx10_clamp=draw(st.booleans()), exceptions=draw(st.integers(0, 127)),
        reserve_vcc=draw(st.booleans()), max_flat_workgroup_size=draw(st.sampled_from([64, 256, 1024])),
    )


@st.composite
def code_objects(draw):
    count = draw(st.integers(1, 3))
    return ([draw(kernel_descriptions(i)) for i in range(count)],
            draw(st.sampled_from(["any", "on", "off"])), draw(st.sampled_from(["any", "on", "off"])))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code_objects())
def test_random_kernels_match_llvm(tmp_path, case):
    kernels, xnack, sramecc = case
    assert_same_as_llvm(tmp_path, kernels, xnack=xnack, sramecc=sramecc)


@pytest.mark.parametrize("version", [5, 6])
def test_abi_version_matches_llvm(tmp_path, version):
    k = KernelDescription("v", assemble_bytes("s_endpgm"), next_free_vgpr=1, next_free_sgpr=1)
    ours = write([k], code_object_version=version)
    source = llvm_source([k], read(ours).metadata, version=version)
    theirs = llvm_code_object(tmp_path, source, "gfx942", "any", "any").read_bytes()
    assert ours[:16] == theirs[:16]
    assert ElfFile(ours).flags == ElfFile(theirs).flags


@pytest.mark.parametrize("count", [5, 17])
def test_many_kernels_symbol_and_hash_tables(tmp_path, count):
    """Enough symbols that .gnu.hash has several buckets and reorders .dynsym; .hash chains get long."""
    kernels = [KernelDescription(f"kern_{i}_{'x' * i}", assemble_bytes("s_nop 0\ns_endpgm") * (i * 30 + 1),
                                 args=[KernelArg.buffer("p")], next_free_vgpr=i * 3, next_free_sgpr=i * 2)
               for i in range(count)]
    assert_same_as_llvm(tmp_path, kernels)
