"""The emulator loads the whole code object: every PT_LOAD segment at CODE_BASE + p_vaddr, with its permissions.

AMDGPUUsage ("Code Object", and the ELF gABI "Program Header"): the loader places an object's loadable segments
in one allocation at load base + p_vaddr, zero-filling p_memsz past p_filesz (.bss); a kernel reaches its
.rodata/.data PC-relatively — s_getpc_b64 returns the address of the next instruction, and the
R_AMDGPU_REL32_LO/HI relocations of `sym@rel32@lo+4` / `sym@rel32@hi+12` add sym - (that address) (AMDGPUUsage
"Relocation Records"; the +4/+12 reach from each literal back to the s_getpc_b64's end). Each kernel here is
assembled both by the project (`assemble_source`) and by llvm-mc-22 + ld.lld-22 (or compiled by clang-22), and
the emulator's answer is checked against numpy in float64 (tolerance stated per test). Read-only segments fault
on a store with a message naming the loaded PC, the address and the segment.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from jitgemm.codegen.codeobj import elf_format as E
from jitgemm.codegen.codeobj import read
from jitgemm.codegen.codeobj.elf_reader import ElfFile
from jitgemm.codegen.codeobj.relocatable import assemble_source

from jitgemm.emu import MemoryFault, emulate
from jitgemm.emu.memory import CODE_BASE
from tests.fixtures.hand_kernel import kernel_source, llvm_link
from tests.fixtures.oracles import require_tool


def both(tmp_path, body: str, data: str) -> dict[str, bytes]:
    """The kernel linked by the project's assembler and linker, and by llvm-mc-22 + ld.lld-22."""
    text = kernel_source(body, [(0, 8, "global_buffer"), (8, 8, "global_buffer")], vgprs=8, sgprs=16,
                         descriptor=(".amdhsa_user_sgpr_count 2",), data=data, max_workgroup=64,
                         code_object_version=5)
    ours, _ = assemble_source(text, file="image.s")
    _, theirs = llvm_link(tmp_path, text)
    return {"jitgemm asm": ours, "llvm-mc + ld.lld": theirs}


def local_symbol(blob: bytes, name: str) -> int:
    """A symbol's virtual address from the linked object's .symtab (local symbols are not in .dynsym)."""
    elf = ElfFile(blob)
    return next(s.value for s in elf.symbols(elf.sections_of_type(E.SHT_SYMTAB)[0]) if s.name == name)


# y[i] = scale * x[i] + pad[64 + i]: scale is a float in .data; pad is .bss (no file bytes: the loader's zeros),
# written (scale * x[i] into pad[i]) and read back, so .bss must be writable and .data readable
DATA_BSS_BODY = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_getpc_b64 s[8:9]
  s_add_u32 s8, s8, scale@rel32@lo+4
  s_addc_u32 s9, s9, scale@rel32@hi+12
  s_getpc_b64 s[10:11]
  s_add_u32 s10, s10, pad@rel32@lo+4
  s_addc_u32 s11, s11, pad@rel32@hi+12
  s_load_dword s12, s[8:9], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  global_load_dword v3, v1, s[10:11] offset:256
  s_waitcnt vmcnt(0)
  v_mul_f32 v2, s12, v2
  global_store_dword v1, v2, s[10:11]
  s_waitcnt vmcnt(0)
  global_load_dword v4, v1, s[10:11]
  s_waitcnt vmcnt(0)
  v_add_f32 v4, v4, v3
  global_store_dword v1, v4, s[6:7]
"""
DATA_BSS = """
.data
.p2align 2
scale:
  .long 0x40200000
.bss
.p2align 8
pad:
  .zero 512
"""


def test_data_is_mapped_and_bss_is_zero_filled_and_writable(tmp_path):
    x = np.random.default_rng(11).standard_normal(64).astype(np.float32)
    for who, blob in both(tmp_path, DATA_BSS_BODY, DATA_BSS).items():
        image = read(blob).image.segments
        bss = [s for s in image if ".bss" in s.sections]
        assert bss and bss[0].writable and len(bss[0].data) < bss[0].memsz, who  # the zero fill is exercised
        y = np.full(64, np.nan, np.float32)  # poisoned
        emulate(blob, "k", grid=1, block=64, args=[x, y])
        # fp32: one multiply, rounded once; the .bss addend is exactly 0
        np.testing.assert_allclose(y.astype(np.float64), 2.5 * x.astype(np.float64), rtol=1e-7, atol=0, err_msg=who)


STORE_RODATA_BODY = """
  s_getpc_b64 s[8:9]
  s_add_u32 s8, s8, table@rel32@lo+4
  s_addc_u32 s9, s9, table@rel32@hi+12
  v_mov_b32 v1, 0
  v_mov_b32 v2, 1.0
  global_store_dword v1, v2, s[8:9] offset:8
"""
RODATA = """
.rodata
.p2align 4
table:
  .long 1, 2, 3, 4
"""


def test_store_into_rodata_faults_naming_pc_address_and_segment(tmp_path):
    from jitgemm.emu.engine import _default_spec, program_for

    for who, blob in both(tmp_path, STORE_RODATA_BODY, RODATA).items():
        address = CODE_BASE + local_symbol(blob, "table") + 8
        k = read(blob).kernel("k")
        pc = next(d.pc for d in program_for(k, _default_spec()).decoded if d.name == "GLOBAL_STORE_DWORD")
        with pytest.raises(MemoryFault) as info:
            emulate(blob, "k", grid=1, block=64, args=[np.zeros(1, np.float32), np.zeros(1, np.float32)])
        fault, msg = info.value, str(info.value)
        assert fault.address == address and fault.loaded_pc == CODE_BASE + k.code_address + pc, who
        assert f"store (global_store_dword v1, v2, s[8:9] offset:8) at address 0x{address:x}" in msg, who
        assert f"PC 0x{CODE_BASE + k.code_address + pc:x} (kernel offset 0x{pc:x})" in msg, who
        assert "code object segment r--" in msg and ".rodata]" in msg and "read-only" in msg, who


def test_store_into_code_faults(tmp_path):
    body = """
  s_getpc_b64 s[8:9]
  v_mov_b32 v1, 0
  global_store_dword v1, v1, s[8:9]
"""
    for who, blob in both(tmp_path, body, "").items():
        k = read(blob).kernel("k")
        with pytest.raises(MemoryFault, match=r"store .* at address 0x%x, PC .*code object segment r-x \[\.text\] "
                           r"at offset \d+, which is read-only" % (CODE_BASE + k.code_address + 4)):
            emulate(blob, "k", grid=1, block=64, args=[np.zeros(1, np.float32), np.zeros(1, np.float32)])
        assert who


def test_gap_between_segments_is_unmapped(tmp_path):
    """The page padding between two segments belongs to no segment: a load there faults (a real loader maps the
    pages, but nothing a kernel may read lives there)."""
    body = """
  s_getpc_b64 s[8:9]
  s_add_u32 s8, s8, table@rel32@lo+4
  s_addc_u32 s9, s9, table@rel32@hi+12
  s_load_dword s10, s[8:9], 0x100
  s_waitcnt lgkmcnt(0)
"""
    for who, blob in both(tmp_path, body, RODATA).items():
        image = read(blob).image.segments
        holder = next(s for s in image if ".rodata" in s.sections)
        after = next(s for s in image if s.vaddr > holder.vaddr)
        table = local_symbol(blob, "table")
        assert holder.vaddr + holder.memsz <= table + 0x100 < after.vaddr, who  # the load lands in the gap
        with pytest.raises(MemoryFault, match=r"scalar load .* bytes past the end of code object segment r--"):
            emulate(blob, "k", grid=1, block=64, args=[np.zeros(1, np.float32), np.zeros(1, np.float32)])


# -- a clang-22 OpenCL kernel with a __constant table read at a data-dependent index

def _table() -> np.ndarray:
    return np.random.default_rng(3).standard_normal(64).astype(np.float32)


def _lut_source() -> str:
    values = ", ".join(f"{float(v).hex()}f" for v in _table())
    return f"""
__constant float table[64] = {{{values}}};
__kernel void lut(__global const int *idx, __global const float *x, __global float *y, int n) {{
    int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
    if (i < n) y[i] = x[i] * table[idx[i] & 63] + table[(idx[i] >> 8) & 63];
}}
"""


@pytest.fixture(scope="module")
def lut_objects(tmp_path_factory) -> dict[str, bytes]:
    clang = require_tool("clang")
    folder = tmp_path_factory.mktemp("lut")
    (folder / "lut.cl").write_text(_lut_source())
    flags = ["-x", "cl", "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx942", "-nogpulib", "-O2"]
    subprocess.run([clang, *flags, str(folder / "lut.cl"), "-o", str(folder / "lut.co")], check=True)
    subprocess.run([clang, *flags, "-S", str(folder / "lut.cl"), "-o", str(folder / "lut.s")], check=True)
    text = (folder / "lut.s").read_text()
    assert "table@rel32@lo+4" in text and "s_getpc_b64" in text  # clang addresses the table PC-relatively
    ours, _ = assemble_source(text, file="lut.s")
    return {"clang-22": (folder / "lut.co").read_bytes(), "jitgemm asm of clang -S": ours}


def test_clang_constant_table_read_with_data_dependent_index(lut_objects):
    rng = np.random.default_rng(7)
    n = 300
    idx = rng.integers(0, 1 << 16, n).astype(np.int32)
    x = rng.standard_normal(n).astype(np.float32)
    table = _table().astype(np.float64)
    want = x.astype(np.float64) * table[idx & 63] + table[(idx >> 8) & 63]
    for who, blob in lut_objects.items():
        elf = ElfFile(blob)
        symtab = elf.symbols(elf.sections_of_type(E.SHT_SYMTAB)[0])
        where = next(s for s in symtab if s.name == "table")
        assert elf.sections[where.shndx].name == ".rodata", who  # the table lives in .rodata
        y = np.full(n, np.nan, np.float32)  # poisoned
        emulate(blob, "lut", grid=-(-n // 64), block=64, args=[idx, x, y, n])
        # fp32: a multiply and an add (possibly fused), so within 2 ulp of the float64 value
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=2.5e-7, atol=1e-6, err_msg=who)


# -- dynamic relocations: a pointer table in .data, patched by the loader for the load base

POINTERS_BODY = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_getpc_b64 s[8:9]
  s_add_u32 s8, s8, ptrs@rel32@lo+4
  s_addc_u32 s9, s9, ptrs@rel32@hi+12
  s_load_dwordx4 s[12:15], s[8:9], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  v_and_b32 v3, 15, v2
  v_lshlrev_b32 v3, 2, v3
  global_load_dword v4, v3, s[12:13]
  v_bfe_u32 v5, v2, 4, 4
  v_lshlrev_b32 v5, 2, v5
  global_load_dword v6, v5, s[14:15]
  s_waitcnt vmcnt(0)
  v_add_f32 v4, v4, v6
  global_store_dword v1, v4, s[6:7]
"""


def _pointer_data(local: np.ndarray, exported: np.ndarray) -> str:
    words = lambda a: ", ".join(f"0x{int(w):08x}" for w in a.view(np.uint32))  # noqa: E731
    return f"""
.rodata
.p2align 4
table:
  .long {words(local)}
.globl gtable
.type gtable,@object
gtable:
  .long {words(exported)}
.size gtable, 64
.data
.p2align 3
ptrs:
  .quad table
  .quad gtable
"""


def test_dynamic_relocations_are_applied_for_the_load_base(tmp_path):
    """ptrs[0] = &table (local: R_AMDGPU_RELATIVE64, B + A) and ptrs[1] = &gtable (exported, so preemptible:
    R_AMDGPU_ABS64 against .dynsym, B + S + A), both written by the loader; the kernel loads them and reads
    y[i] = table[idx & 15] + gtable[(idx >> 4) & 15]."""
    rng = np.random.default_rng(23)
    local, exported = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    idx = rng.integers(0, 256, 64).astype(np.int32)
    want = local.astype(np.float64)[idx & 15] + exported.astype(np.float64)[(idx >> 4) & 15]
    for who, blob in both(tmp_path, POINTERS_BODY, _pointer_data(local, exported)).items():
        kinds = {r.type for r in read(blob).image.relocations}
        assert kinds == {E.R_AMDGPU_RELATIVE64, E.R_AMDGPU_ABS64}, who
        y = np.full(64, np.nan, np.float32)  # poisoned
        emulate(blob, "k", grid=1, block=64, args=[idx, y])
        # one fp32 add of two exact table values: within half an ulp
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=6e-8, atol=0, err_msg=who)


def test_unsupported_dynamic_relocation_is_a_clear_error(tmp_path):
    from jitgemm.codegen.codeobj import CodeObjectError

    local = np.ones(16, np.float32)
    blob = bytearray(both(tmp_path, POINTERS_BODY, _pointer_data(local, local))["llvm-mc + ld.lld"])
    elf = ElfFile(bytes(blob))
    rela = next(s for s in elf.sections if s.name == ".rela.dyn")
    # the first entry's r_info type becomes R_AMDGPU_REL32 (4), which a loader does not apply
    blob[rela.offset + 8:rela.offset + 12] = (E.R_AMDGPU_REL32).to_bytes(4, "little")
    with pytest.raises(CodeObjectError, match=r"\.rela\.dyn entry 0 \(R_AMDGPU_REL32 at 0x[0-9a-f]+\): not a dynamic "
                       r"relocation a loader applies \(accepted: R_AMDGPU_ABS32_LO"):
        read(bytes(blob))
