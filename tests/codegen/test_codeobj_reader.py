"""Reading code objects from other compilers (Triton, clang, LLVM via ld.lld) gives the kernels, argument
layouts and descriptor fields llvm-readelf and llvm-objdump report; malformed input of any kind is a
CodeObjectError naming the problem (fuzzed with hypothesis)."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitgemm.codegen.codeobj import CodeObjectError, KernelArg, KernelDescription, link, read, write
from jitgemm.codegen.codeobj.elf_reader import ElfFile

from tests.fixtures.codeobj_support import objdump_kernel_directives, readelf_metadata, run
from tests.fixtures.oracles import require_module, require_tool

OPENCL = r"""
__kernel void saxpy(__global float *y, __global const float *x, float a, int n) {
  __local float t[256];
  int l = __builtin_amdgcn_workitem_id_x();
  int i = __builtin_amdgcn_workgroup_id_x() * 256 + l;
  t[l] = x[i];
  __builtin_amdgcn_s_barrier();
  if (i < n) y[i] = a * t[255 - l] + y[i];
}
__kernel void fill(__global long *p, long v, char c) { p[__builtin_amdgcn_workitem_id_y()] = v + c; }
"""
C_KERNELS = r"""
typedef float v16f __attribute__((ext_vector_type(16)));
typedef float v4f __attribute__((ext_vector_type(4)));
__attribute__((amdgpu_kernel)) void mfma(__attribute__((address_space(1))) v16f *out, float a, float b) {
  v16f acc = out[__builtin_amdgcn_workitem_id_x()];
  for (int i = 0; i < 4; i++) acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a + i, b, acc, 0, 0, 0);
  out[__builtin_amdgcn_workitem_id_x()] = acc;
}
__attribute__((amdgpu_kernel)) void dims(__attribute__((address_space(1))) int *out, v4f v) {
  out[__builtin_amdgcn_workitem_id_z()] = __builtin_amdgcn_workgroup_size_x() + (int)v.y
      + __builtin_amdgcn_grid_size_y() + __builtin_amdgcn_workgroup_id_y();
}
"""

# llvm-objdump's `.amdhsa_*` directive -> the same fact from our decoded descriptor
DIRECTIVES = {
    "amdhsa_group_segment_fixed_size": lambda d: d.group_segment_fixed_size,
    "amdhsa_private_segment_fixed_size": lambda d: d.private_segment_fixed_size,
    "amdhsa_kernarg_size": lambda d: d.kernarg_size,
    "amdhsa_accum_offset": lambda d: (d.accum_offset + 1) * 4,
    "amdhsa_tg_split": lambda d: d.tg_split,
    "amdhsa_next_free_vgpr": lambda d: (d.granulated_workitem_vgpr_count + 1) * 8,
    "amdhsa_next_free_sgpr": lambda d: (d.granulated_wavefront_sgpr_count + 1) * 8,
    "amdhsa_float_round_mode_32": lambda d: d.float_round_mode_32,
    "amdhsa_float_round_mode_16_64": lambda d: d.float_round_mode_16_64,
    "amdhsa_float_denorm_mode_32": lambda d: d.float_denorm_mode_32,
    "amdhsa_float_denorm_mode_16_64": lambda d: d.float_denorm_mode_16_64,
    "amdhsa_dx10_clamp": lambda d: d.enable_dx10_clamp,
    "amdhsa_ieee_mode": lambda d: d.enable_ieee_mode,
    "amdhsa_fp16_overflow": lambda d: d.fp16_ovfl,
    "amdhsa_enable_private_segment": lambda d: d.enable_private_segment,
    "amdhsa_system_sgpr_workgroup_id_x": lambda d: d.enable_sgpr_workgroup_id_x,
    "amdhsa_system_sgpr_workgroup_id_y": lambda d: d.enable_sgpr_workgroup_id_y,
    "amdhsa_system_sgpr_workgroup_id_z": lambda d: d.enable_sgpr_workgroup_id_z,
    "amdhsa_system_sgpr_workgroup_info": lambda d: d.enable_sgpr_workgroup_info,
    "amdhsa_system_vgpr_workitem_id": lambda d: d.enable_vgpr_workitem_id,
    "amdhsa_exception_fp_ieee_invalid_op": lambda d: d.enable_exception_ieee_754_fp_invalid_operation,
    "amdhsa_exception_fp_denorm_src": lambda d: d.enable_exception_fp_denormal_source,
    "amdhsa_exception_fp_ieee_div_zero": lambda d: d.enable_exception_ieee_754_fp_division_by_zero,
    "amdhsa_exception_fp_ieee_overflow": lambda d: d.enable_exception_ieee_754_fp_overflow,
    "amdhsa_exception_fp_ieee_underflow": lambda d: d.enable_exception_ieee_754_fp_underflow,
    "amdhsa_exception_fp_ieee_inexact": lambda d: d.enable_exception_ieee_754_fp_inexact,
    "amdhsa_exception_int_div_zero": lambda d: d.enable_exception_int_divide_by_zero,
    "amdhsa_user_sgpr_dispatch_ptr": lambda d: d.enable_sgpr_dispatch_ptr,
    "amdhsa_user_sgpr_queue_ptr": lambda d: d.enable_sgpr_queue_ptr,
    "amdhsa_user_sgpr_kernarg_segment_ptr": lambda d: d.enable_sgpr_kernarg_segment_ptr,
    "amdhsa_user_sgpr_dispatch_id": lambda d: d.enable_sgpr_dispatch_id,
    "amdhsa_user_sgpr_private_segment_size": lambda d: d.enable_sgpr_private_segment_size,
    "amdhsa_uses_dynamic_stack": lambda d: d.uses_dynamic_stack,
    "amdhsa_user_sgpr_count": lambda d: d.user_sgpr_count,
    "amdhsa_user_sgpr_kernarg_preload_length": lambda d: d.kernarg_preload_spec_length,
    "amdhsa_user_sgpr_kernarg_preload_offset": lambda d: d.kernarg_preload_spec_offset,
}


@pytest.fixture(scope="module")
def foreign(tmp_path_factory) -> dict[str, Path]:
    """Code objects from clang (OpenCL and C) and Triton."""
    tmp = tmp_path_factory.mktemp("foreign")
    clang = require_tool("clang")
    out = {}
    for name, lang, source in (("opencl", ["-x", "cl", "-cl-std=CL2.0"], OPENCL), ("c", ["-x", "c"], C_KERNELS)):
        src = tmp / f"{name}.src"
        src.write_text(source)
        out[name] = tmp / f"{name}.co"
        run([clang, *lang, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-nogpulib", "-O2", str(src), "-o",
             str(out[name])])
    out["triton"] = tmp / "triton.co"
    out["triton"].write_bytes(_triton_hsaco(tmp))
    return out


def _triton_hsaco(tmp: Path) -> bytes:
    """A Triton kernel with a tl.dot (MFMA, LDS) compiled for gfx942 on the CPU, in a subprocess so that
    Triton's LLVM never shares a process with llvmlite's."""
    require_module("triton")
    script = r'''
import sys, warnings
warnings.filterwarnings("ignore")
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget

@triton.jit
def matmul(a, b, c, M, N, K, sa, sc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * sa + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * sc + rn[None, :], acc)

sig = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32", "sa": "i32", "sc": "i32",
       "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
k = triton.compile(triton.compiler.ASTSource(matmul, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32}),
                   target=GPUTarget("hip", "gfx942", 64))
sys.stdout.buffer.write(k.asm["hsaco"])
'''
    import sys

    path = tmp / "triton_matmul.py"  # Triton reads the kernel's source from its file
    path.write_text(script)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, check=False, cwd=tmp)
    if proc.returncode:
        raise AssertionError(f"Triton compile failed:\n{proc.stderr.decode(errors='replace')[-3000:]}")
    return proc.stdout


def _readelf_kernels(path: Path) -> dict[str, tuple[int, int]]:
    """Kernel name -> (address, size) of its STT_FUNC, for every NAME.kd STT_OBJECT llvm-readelf lists."""
    text = run([require_tool("llvm-readelf"), "--dyn-syms", "-W", str(path)]).decode()
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+:", line)]
    objects = {r[7] for r in rows if len(r) >= 8 and r[3] == "OBJECT" and r[7].endswith(".kd")}
    funcs = {r[7]: (int(r[1], 16), int(r[2])) for r in rows if len(r) >= 8 and r[3] == "FUNC"}
    return {kd[:-3]: funcs[kd[:-3]] for kd in objects}


@pytest.mark.parametrize("which", ["opencl", "c", "triton"])
def test_foreign_code_objects_read_like_llvm_tools(foreign, which):
    path = foreign[which]
    co = read(path.read_bytes())
    kernels = _readelf_kernels(path)
    assert sorted(k.name for k in co.kernels) == sorted(kernels)
    meta = readelf_metadata(path)
    meta_kernels = {k[".name"]: k for k in meta["amdhsa.kernels"]}
    directives = objdump_kernel_directives(path)
    for k in co.kernels:
        address, size = kernels[k.name]
        assert (k.code_address, len(k.code)) == (address, size)
        assert k.metadata == meta_kernels[k.name]
        assert k.args == meta_kernels[k.name][".args"]
        seen = directives[k.name]
        assert len(seen) >= 25, seen
        for directive, value in seen.items():
            if directive in DIRECTIVES:
                assert DIRECTIVES[directive](k.descriptor) == value, (k.name, directive)
    assert co.metadata["amdhsa.version"] == meta["amdhsa.version"]
    assert co.processor == "gfx942"


def test_foreign_kernels_exercise_the_fields(foreign):
    """The inputs above are not trivial: LDS, hidden arguments, 3-D workitem ids, kernarg preload appear."""
    opencl, c, triton = (read(foreign[n].read_bytes()) for n in ("opencl", "c", "triton"))
    assert opencl.kernel("saxpy").descriptor.group_segment_fixed_size == 1024
    assert c.kernel("dims").descriptor.enable_vgpr_workitem_id == 2
    assert any(a[".value_kind"] == "hidden_block_count_x" for a in c.kernel("dims").args)
    assert c.kernel("dims").args[1][".offset"] == 16  # float4 aligned to 16
    assert triton.kernel("matmul").descriptor.kernarg_preload_spec_length > 0  # Triton preloads kernargs


# ---------------------------------------------------------------- malformed input
def _sample_objects() -> list[bytes]:
    k = KernelDescription("k", (0xBF810000).to_bytes(4, "little"), args=[KernelArg.buffer("p")],
                          contract={"op": "gemm", "tile": [128, 128]})
    return [write([k]), write([k, KernelDescription("k2", bytes(8), next_free_sgpr=4)])]


SAMPLES = _sample_objects()


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(range(len(SAMPLES))), st.data())
def test_fuzzed_objects_fail_only_with_code_object_error(index, data):
    blob = bytearray(SAMPLES[index])
    mode = data.draw(st.sampled_from(["truncate", "flip", "overwrite"]))
    if mode == "truncate":
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    elif mode == "flip":
        for _ in range(data.draw(st.integers(1, 16))):
            bit = data.draw(st.integers(0, len(blob) * 8 - 1))
            blob[bit // 8] ^= 1 << (bit % 8)
    else:
        at = data.draw(st.integers(0, len(blob) - 8))
        blob[at:at + 8] = data.draw(st.binary(min_size=8, max_size=8))
    try:
        co = read(bytes(blob))
    except CodeObjectError as exc:
        assert str(exc)
    else:
        for k in co.kernels:  # what was read is consistent
            assert len(k.descriptor_bytes) == 64


def _foreign_fuzz(blob: bytes, data) -> None:
    blob = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    try:
        read(bytes(blob))
    except CodeObjectError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_foreign_objects(foreign, data):
    which = data.draw(st.sampled_from(["opencl", "c", "triton"]))
    _foreign_fuzz(foreign[which].read_bytes(), data)


def _patch_section_header(blob: bytes, name: str, field: int, value: int) -> bytes:
    elf = ElfFile(blob)
    sec = next(s for s in elf.sections if s.name == name)
    at = elf.shoff + sec.index * 64
    raw = list(struct.unpack_from("<IIQQQQIIQQ", blob, at))
    raw[field] = value
    out = bytearray(blob)
    struct.pack_into("<IIQQQQIIQQ", out, at, *raw)
    return bytes(out)


def test_named_errors():
    good = SAMPLES[0]
    with pytest.raises(CodeObjectError, match="bad magic"):
        read(b"\x7fELG" + good[4:])
    with pytest.raises(CodeObjectError, match="bad magic"):
        read(b"")
    wrong = bytearray(good)
    wrong[18:20] = (62).to_bytes(2, "little")
    with pytest.raises(CodeObjectError, match="wrong machine: e_machine=62"):
        read(bytes(wrong))
    with pytest.raises(CodeObjectError, match="section .text out of bounds"):
        read(_patch_section_header(good, ".text", 4, len(good) + 16))
    with pytest.raises(CodeObjectError, match="section .rodata out of bounds"):
        read(_patch_section_header(good, ".rodata", 5, 1 << 40))
    elf = ElfFile(good)
    note = next(s for s in elf.sections if s.name == ".note")
    broken = bytearray(good)
    broken[note.offset + 20:note.offset + 24] = b"\xc1\xc1\xc1\xc1"  # 0xc1 is never valid msgpack
    with pytest.raises(CodeObjectError, match="not msgpack"):
        read(bytes(broken))
    with pytest.raises(CodeObjectError, match="truncated ELF header"):
        read(good[:40])
    with pytest.raises(CodeObjectError, match="runs past the end of the file"):
        read(good[:300])
    with pytest.raises(CodeObjectError, match="expected the bytes"):
        read("not bytes")  # type: ignore[arg-type]


def test_reads_relocatable_objects_too(tmp_path):
    from tests.fixtures.codeobj_support import llvmlite_object

    obj = llvmlite_object('target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @r(ptr addrspace(1) %p) '
                          '{\n store i32 7, ptr addrspace(1) %p\n ret void\n}\n')
    rel = read(obj)
    linked = read(link(obj))
    assert rel.elf_type == "ET_REL" and linked.elf_type == "ET_DYN"
    assert rel.kernel("r").code == linked.kernel("r").code
    assert rel.kernel("r").metadata == linked.kernel("r").metadata
    with pytest.raises(CodeObjectError, match="no kernel 'nope'"):
        rel.kernel("nope")


def test_code_object_v4_without_metadata(tmp_path):
    """An older (v4) object, here with no metadata note at all, is still read through its .kd symbols."""
    from tests.fixtures.codeobj_support import llvm_code_object, llvm_source, objdump_kernel_directives

    k = KernelDescription("old", (0xBF810000).to_bytes(4, "little"), next_free_vgpr=17, next_free_sgpr=30,
                          group_segment_size=256)
    path = llvm_code_object(tmp_path, llvm_source([k], None, version=4), "gfx942", "on", "any")
    co = read(path.read_bytes())
    assert co.code_object_version == 4 and co.metadata == {} and co.xnack == "on"
    got = co.kernel("old")
    assert got.code == k.code and got.metadata == {}
    for directive, value in objdump_kernel_directives(path)["old"].items():
        if directive in DIRECTIVES:
            assert DIRECTIVES[directive](got.descriptor) == value, directive
