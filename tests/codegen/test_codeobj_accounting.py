"""Our descriptor and metadata arithmetic against LLVM's compiler.

LLVM's AMDGPU backend (through llvmlite) compiles small kernels to relocatable objects. Besides the
descriptor and the metadata note, such an object records the register high-water marks LLVM used as
absolute symbols (`K.num_vgpr`, `K.num_agpr`, `K.numbered_sgpr`, `K.uses_vcc`, read here with pyelftools).
Feeding those facts, the explicit arguments and the hidden-argument kinds into a KernelDescription, our
computed descriptor must equal LLVM's byte for byte, and our metadata must report the same kernarg
offsets, segment size and alignment, hidden-argument offsets and sgpr/vgpr/agpr counts.
"""

from __future__ import annotations

import io

import pytest
from jitgemm.codegen.codeobj import KernelArg, KernelDescription, read
from jitgemm.codegen.codeobj.descriptor import compute_descriptor, sgpr_count, total_vgprs
from jitgemm.codegen.codeobj.metadata import kernarg_layout, kernel_metadata
from jitgemm.codegen.codeobj.targets import target

from tests.fixtures.codeobj_support import SCALE_KERNEL, llvmlite_object
from tests.fixtures.oracles import require_module

HEADER = 'target triple = "amdgcn-amd-amdhsa"\n'
FOOTER = '!llvm.module.flags = !{!0}\n!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}\n'
DECLS = """
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workitem.id.y()
declare i32 @llvm.amdgcn.workitem.id.z()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare i32 @llvm.amdgcn.workgroup.id.z()
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
"""

KERNELS = {
    "scale": SCALE_KERNEL.rstrip("\n"),
    "mixed_args": """
define amdgpu_kernel void @mixed_args(i32 %n, ptr addrspace(1) %p, <4 x float> %v, i64 %k, i16 %h, i8 %b)
    #0 {
  %e = extractelement <4 x float> %v, i32 2
  %x = sitofp i64 %k to float
  %y = fadd float %e, %x
  %z = sext i16 %h to i32
  %w = zext i8 %b to i32
  %s = add i32 %z, %w
  %t = add i32 %s, %n
  %q = getelementptr float, ptr addrspace(1) %p, i32 %t
  store float %y, ptr addrspace(1) %q
  ret void
}
attributes #0 = { "amdgpu-no-implicitarg-ptr" }""",
    "lds_3d": """
@tile = internal addrspace(3) global [512 x float] undef, align 16
define amdgpu_kernel void @lds_3d(ptr addrspace(1) %out) #0 {
  %x = call i32 @llvm.amdgcn.workitem.id.x()
  %y = call i32 @llvm.amdgcn.workitem.id.y()
  %z = call i32 @llvm.amdgcn.workitem.id.z()
  %gx = call i32 @llvm.amdgcn.workgroup.id.x()
  %gy = call i32 @llvm.amdgcn.workgroup.id.y()
  %gz = call i32 @llvm.amdgcn.workgroup.id.z()
  %a = add i32 %x, %y
  %b = add i32 %a, %z
  %c = add i32 %gx, %gy
  %d = add i32 %c, %gz
  %l = getelementptr [512 x float], ptr addrspace(3) @tile, i32 0, i32 %b
  %f = uitofp i32 %d to float
  store float %f, ptr addrspace(3) %l
  call void @llvm.amdgcn.s.barrier()
  %l2 = getelementptr [512 x float], ptr addrspace(3) @tile, i32 0, i32 %a
  %v = load float, ptr addrspace(3) %l2
  %o = getelementptr float, ptr addrspace(1) %out, i32 %b
  store float %v, ptr addrspace(1) %o
  ret void
}
declare void @llvm.amdgcn.s.barrier()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }""",
    "agpr_pressure": """
declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x2f32(float, float, <16 x float>, i32, i32, i32)
define amdgpu_kernel void @agpr_pressure(ptr addrspace(1) %p, float %a, float %b) {
  %acc = load <16 x float>, ptr addrspace(1) %p
  %r1 = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x2f32(float %a, float %b, <16 x float> %acc, i32 0, i32 0,
                                                             i32 0)
  %r2 = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x2f32(float %b, float %a, <16 x float> %r1, i32 0, i32 0,
                                                             i32 0)
  store <16 x float> %r2, ptr addrspace(1) %p
  ret void
}""",
    "dispatch": """
define amdgpu_kernel void @dispatch(ptr addrspace(1) %p) {
  %d = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %g = getelementptr i8, ptr addrspace(4) %d, i64 4
  %s = load i16, ptr addrspace(4) %g
  %i = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %h = getelementptr i8, ptr addrspace(4) %i, i64 12
  %t = load i16, ptr addrspace(4) %h
  %u = add i16 %s, %t
  %w = zext i16 %u to i32
  store i32 %w, ptr addrspace(1) %p
  ret void
}""",
}


def _llvm_facts(obj: bytes, name: str) -> dict[str, int]:
    """The resource symbols LLVM records for kernel `name`, through pyelftools."""
    elftools = require_module("elftools")  # noqa: F841
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(obj))
    symtab = elf.get_section_by_name(".symtab")
    facts = {}
    for sym in symtab.iter_symbols():
        if sym.name.startswith(name + "."):
            facts[sym.name[len(name) + 1:]] = sym["st_value"]
    return facts


def _description(kernel, facts: dict[str, int]) -> KernelDescription:
    """Everything LLVM knew about the kernel, in our vocabulary."""
    meta = kernel.metadata
    d = kernel.descriptor
    explicit = [a for a in meta[".args"] if not a[".value_kind"].startswith("hidden_")]
    hidden = [a[".value_kind"] for a in meta[".args"] if a[".value_kind"].startswith("hidden_")]
    args = [KernelArg(a.get(".name"), a[".size"], a[".value_kind"], address_space=a.get(".address_space"))
            for a in explicit]
    return KernelDescription(
        name=kernel.name, code=kernel.code, args=args, hidden_args=hidden,
        group_segment_size=meta[".group_segment_fixed_size"],
        private_segment_size=meta[".private_segment_fixed_size"],
        next_free_vgpr=facts["num_vgpr"], next_free_agpr=facts["num_agpr"], next_free_sgpr=facts["numbered_sgpr"],
        reserve_vcc=bool(facts["uses_vcc"]),
        user_sgpr_dispatch_ptr=bool(d.enable_sgpr_dispatch_ptr), user_sgpr_queue_ptr=bool(d.enable_sgpr_queue_ptr),
        user_sgpr_kernarg_segment_ptr=bool(d.enable_sgpr_kernarg_segment_ptr),
        user_sgpr_dispatch_id=bool(d.enable_sgpr_dispatch_id),
        user_sgpr_private_segment_size=bool(d.enable_sgpr_private_segment_size),
        workgroup_id=(bool(d.enable_sgpr_workgroup_id_x), bool(d.enable_sgpr_workgroup_id_y),
                      bool(d.enable_sgpr_workgroup_id_z)),
        workgroup_info=bool(d.enable_sgpr_workgroup_info), workitem_id=d.enable_vgpr_workitem_id,
        enable_private_segment=bool(d.enable_private_segment),
        float_denorm_mode_32=d.float_denorm_mode_32, float_denorm_mode_16_64=d.float_denorm_mode_16_64,
        float_round_mode_32=d.float_round_mode_32, float_round_mode_16_64=d.float_round_mode_16_64,
        dx10_clamp=bool(d.enable_dx10_clamp), ieee_mode=bool(d.enable_ieee_mode),
        max_flat_workgroup_size=meta[".max_flat_workgroup_size"],
    )


COMPARED_KEYS = (".kernarg_segment_size", ".kernarg_segment_align", ".group_segment_fixed_size",
                 ".private_segment_fixed_size", ".wavefront_size", ".sgpr_count", ".vgpr_count", ".agpr_count",
                 ".max_flat_workgroup_size", ".symbol", ".name")


@pytest.mark.parametrize("xnack", ["any", "on", "off"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_descriptor_and_metadata_match_llvm_compiler(name, xnack):
    features = {"any": "", "on": "+xnack", "off": "-xnack"}[xnack]
    obj = llvmlite_object(HEADER + DECLS + KERNELS[name] + "\n" + FOOTER, features=features)
    llvm_kernel = read(obj).kernel(name)
    facts = _llvm_facts(obj, name)
    desc = _description(llvm_kernel, facts)
    processor = target("gfx942")
    layout = kernarg_layout(desc)
    ours = compute_descriptor(desc, processor, xnack, layout.size)
    assert ours.to_bytes() == llvm_kernel.descriptor_bytes
    ours_meta = kernel_metadata(desc, layout, total_vgprs(desc), sgpr_count(desc, processor, xnack))
    for key in COMPARED_KEYS:
        assert ours_meta[key] == llvm_kernel.metadata[key], key
    strip = (".offset", ".size", ".value_kind", ".address_space")
    assert ([{k: a.get(k) for k in strip} for a in ours_meta[".args"]]
            == [{k: a.get(k) for k in strip} for a in llvm_kernel.metadata[".args"]])


def test_the_cases_cover_what_they_claim():
    """The kernels above really exercise AGPRs, LDS, 3-D ids, hidden arguments and the dispatch pointer."""
    seen = {}
    for name, body in KERNELS.items():
        obj = llvmlite_object(HEADER + DECLS + body + "\n" + FOOTER)
        seen[name] = read(obj).kernel(name)
    assert seen["agpr_pressure"].metadata[".agpr_count"] == 16
    assert seen["agpr_pressure"].metadata[".vgpr_count"] > 16
    assert seen["lds_3d"].descriptor.group_segment_fixed_size == 2048
    assert seen["lds_3d"].descriptor.enable_vgpr_workitem_id == 2
    assert seen["lds_3d"].descriptor.enable_sgpr_workgroup_id_z == 1
    assert any(a[".value_kind"].startswith("hidden_") for a in seen["scale"].args)
    assert not any(a[".value_kind"].startswith("hidden_") for a in seen["mixed_args"].args)
    assert seen["dispatch"].descriptor.enable_sgpr_dispatch_ptr == 1
    assert [a[".offset"] for a in seen["mixed_args"].args] == [0, 8, 16, 32, 40, 42]
