"""The LLVM generator without running kernels: intrinsic spellings against LLVM's instruction selection, the
kernel ABI and descriptor against the direct generator's contract, the embedded contract as llvm-readelf
reads it, LLVM errors reported with their IR line, the caches and stages of `jitgemm.compile`, the CLI."""

from __future__ import annotations

import hashlib
import re
import subprocess

import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.kernel_abi import KERNARGS

from jitgemm import isa
from jitgemm.contract import Contract
from tests.fixtures.codeobj_support import readelf_metadata
from tests.fixtures.oracles import require_module, require_tool


@pytest.fixture(autouse=True, scope="module")
def _llvmlite():
    require_module("llvmlite")


def _objdump_mnemonics(blob: bytes, tmp_path, cpu: str = "gfx942") -> list[str]:
    path = tmp_path / "k.co"
    path.write_bytes(blob)
    out = subprocess.run([require_tool("llvm-objdump"), "-d", f"--mcpu={cpu}", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("\t") and "//" in line]


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_every_catalog_mfma_selects_its_spec_instruction(tmp_path, target):
    """One kernel calling each catalog MFMA through its LLVM intrinsic: LLVM must select exactly that spec
    instruction (llvm-objdump names it), so the spelling table and the operand types are right (gfx950: the
    8-element bf16/f16 forms and the OCP fp8 ones too)."""
    from jitgemm.codegen.llvm.backend import data_layout, run_backend
    from jitgemm.codegen.llvm.intrinsics import PTR_GLOBAL, Intrinsics, mfma_acc_type, mfma_operand_type
    from jitgemm.codegen.mfma_catalog import mfma_catalog
    from llvmlite import ir

    catalog = mfma_catalog(isa.load_spec(target))
    assert len(catalog) >= 10
    module = ir.Module("mfmas")
    module.triple = "amdgcn-amd-amdhsa"
    module.data_layout = data_layout(target)
    intr = Intrinsics(module)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR_GLOBAL]), "mfmas")
    fn.calling_convention = "amdgpu_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    zero = ir.Constant(ir.IntType(32), 0)
    offset = 0
    for mfma in catalog:
        ta, tb = mfma_operand_type(mfma.a, mfma.a_regs), mfma_operand_type(mfma.b, mfma.b_regs)
        a = b.load(b.gep(fn.args[0], [ir.Constant(ir.IntType(64), offset)], source_etype=ir.IntType(8)), typ=ta)
        bb = b.load(b.gep(fn.args[0], [ir.Constant(ir.IntType(64), offset + 64)], source_etype=ir.IntType(8)),
                    typ=tb)
        acc = b.call(intr.mfma(mfma), [a, bb, ir.Constant(mfma_acc_type(mfma), None), zero, zero, zero])
        b.store(acc, b.gep(fn.args[0], [ir.Constant(ir.IntType(64), offset + 128)], source_etype=ir.IntType(8)))
        offset += 4096
    b.ret_void()
    obj = run_backend(str(module), cpu=target, kernel="mfmas").data
    found = [m for m in _objdump_mnemonics(obj, tmp_path, target) if m.startswith("v_mfma")]
    assert found == [m.name.lower() for m in catalog]


def _compile(problem: GemmProblem, config: GemmConfig | None = None):
    from jitgemm.codegen.llvm import compile_gemm_llvm

    return compile_gemm_llvm(problem, config)


@pytest.mark.parametrize("problem", [GemmProblem.make(100, 70, 64, "bf16", layout="NT"),
                                     GemmProblem.make(20, 36, 50, "int8", c="int32", beta=2.0, alpha=3.0)],
                         ids=["bf16", "int8"])
def test_kernel_abi_descriptor_and_contract(problem):
    """Same arguments at the same offsets as the direct generator, only the kernarg pointer, workgroup ids
    and workitem id X set up, the LDS of the plan, and a contract that validates against the metadata."""
    llvm = _compile(problem)
    direct = compile_gemm(problem, llvm.config)
    kernel = codeobj.read(llvm.code_object).kernel(llvm.name)
    meta = kernel.metadata
    explicit = [(a[".name"], a[".offset"], a[".size"], a[".value_kind"]) for a in kernel.args]
    assert explicit == [(n, off, size, "global_buffer" if kind == "ptr" else "by_value")
                        for n, off, size, kind in KERNARGS]   # and no hidden arguments
    assert meta[".kernarg_segment_size"] == 96
    d = kernel.descriptor
    assert (d.enable_sgpr_kernarg_segment_ptr, d.enable_sgpr_dispatch_ptr, d.enable_sgpr_queue_ptr,
            d.user_sgpr_count) == (1, 0, 0, 2)
    assert (d.enable_sgpr_workgroup_id_x, d.enable_sgpr_workgroup_id_y, d.enable_sgpr_workgroup_id_z) == (1, 1, 1)
    assert d.enable_vgpr_workitem_id == 0 and d.private_segment_fixed_size == 0
    assert meta[".group_segment_fixed_size"] == direct.lowered.lds_bytes
    assert meta[".max_flat_workgroup_size"] == llvm.config.workgroup_size
    contract = Contract.load(kernel.contract, "embedded")
    contract.check_metadata(meta)
    assert contract.generator == "jitgemm-llvm" and contract.kernel == llvm.name
    assert kernel.contract["identity"]["code_sha256"] == hashlib.sha256(kernel.code).hexdigest()
    for key in ("operation", "abi", "launch", "legality", "features"):
        assert kernel.contract[key] == direct.contract[key], key


def test_contract_in_the_note_as_llvm_readelf_reads_it(tmp_path):
    compiled = _compile(GemmProblem.make(64, 64, 64, "fp16", layout="TN", bias="n", activation="gelu"))
    path = tmp_path / "k.co"
    path.write_bytes(compiled.code_object)
    meta = readelf_metadata(path)
    (entry,) = [k for k in meta["amdhsa.kernels"] if k[".name"] == compiled.name]
    assert entry["jitgemm.contract"] == compiled.contract
    assert entry[".args"][0][".name"] == "a"


def test_llvm_ir_uses_the_named_mechanisms():
    compiled = _compile(GemmProblem.make(64, 64, 64, "bf16", layout="NT"),
                        GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_16X16X16_BF16", prefetch=2))
    text = compiled.llir
    assert 'target triple = "amdgcn-amd-amdhsa"' in text and "amdgpu_kernel void" in text
    assert re.search(r"@\"?jitgemm\.lds\"? = internal addrspace\(3\) global \[8192 x i8\]", text)
    assert '"amdgpu-flat-work-group-size"="256,256"' in text and '"amdgpu-waves-per-eu"="1"' in text
    for name in ("llvm.amdgcn.workitem.id.x", "llvm.amdgcn.workgroup.id.z", "llvm.amdgcn.s.barrier",
                 "llvm.amdgcn.mfma.f32.16x16x16bf16.1k", "llvm.amdgcn.make.buffer.rsrc.p8.p1",
                 "llvm.amdgcn.raw.ptr.buffer.load", "llvm.amdgcn.raw.ptr.buffer.store"):
        assert f'@"{name}' in text, name
    assert 'fence syncscope("workgroup") release' in text
    assert "module asm" not in text      # module-level inline asm aborts LLVM's AMDGPU object emission
    asm = compiled.stages["amdgcn"]
    assert "v_mfma_f32_16x16x16_bf16" in asm and "s_barrier" in asm and ".amdhsa_kernel " + compiled.name in asm


def test_isolated_backend_gives_the_same_object():
    from jitgemm.codegen.llvm.backend import run_backend

    llir = _compile(GemmProblem.make(40, 40, 40, "fp8", d="fp32")).llir
    assert run_backend(llir, isolate=True).data == run_backend(llir, isolate=False).data


_HEAD = 'target triple = "amdgcn-amd-amdhsa"\n'


@pytest.mark.parametrize("stage, body, line, needle", [
    ("LLVM parse", "define amdgpu_kernel void @k() {\n  %x = add i32 1, 1.5\n  ret void\n}\n", 3, "add i32 1, 1.5"),
    ("LLVM verifier", "define amdgpu_kernel void @k(i32 %a) {\n  %x = add i32 %y, %a\n  %y = add i32 %x, 1\n"
     "  ret void\n}\n", 4, "%y = add i32 %x, 1"),
    # selectable only on gfx950: the backend ends the process, which the forked child absorbs
    ("LLVM AMDGPU backend", "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, "
     "<4 x float>, i32, i32, i32)\ndefine amdgpu_kernel void @k(ptr addrspace(1) %p) {\n"
     "  %v = load <8 x bfloat>, ptr addrspace(1) %p\n"
     "  %r = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %v, <8 x bfloat> %v, "
     "<4 x float> zeroinitializer, i32 0, i32 0, i32 0)\n  store <4 x float> %r, ptr addrspace(1) %p\n"
     "  ret void\n}\n", 5, "@llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %v"),
])
def test_llvm_errors_name_the_ir_line(stage, body, line, needle):
    from jitgemm.codegen.llvm import LLVMCompileError
    from jitgemm.codegen.llvm.backend import run_backend

    with pytest.raises(LLVMCompileError) as info:
        run_backend(_HEAD + body, kernel="k")
    err = info.value
    assert err.stage == stage and err.line == line and needle in err.line_text
    assert str(err).startswith(f"{stage} error at kernel 'k', LLVM IR line {line} (`")
    assert isinstance(err, IRError)      # the CLI prints it as one line


@pytest.mark.parametrize("config, message", [
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", vec_a=3), "vec_a=3 must be a power of two"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_pad=1), "LDS row of A is 66 bytes"),
    (GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_F16"), "mfma=V_MFMA_F32_32X32X8_F16 multiplies fp16xfp16"),
])
def test_bad_configs_are_named(config, message):
    with pytest.raises(IRError, match=re.escape(message)):
        _compile(GemmProblem.make(64, 64, 64, "bf16"), config)


def test_annotate_adds_vendor_keys_to_a_relocatable_object():
    from jitgemm.codegen.codeobj.annotate import set_kernel_metadata

    compiled = _compile(GemmProblem.make(32, 32, 32, "fp16"))
    obj = set_kernel_metadata(compiled.relocatable, compiled.name, {"vendor.note": {"x": [1, 2.5, "y", None]}})
    again = set_kernel_metadata(obj, compiled.name, {"vendor.note": "replaced", "vendor.other": True})
    meta = codeobj.read(codeobj.link(again)).kernel(compiled.name).metadata
    assert meta["vendor.note"] == "replaced" and meta["vendor.other"] is True
    assert meta[".kernarg_segment_size"] == 96
    with pytest.raises(codeobj.CodeObjectError, match="not a vendor key"):
        set_kernel_metadata(obj, compiled.name, {".vgpr_count": 1})
    with pytest.raises(codeobj.CodeObjectError, match="no kernel 'nope' in the metadata; it has: " + compiled.name):
        set_kernel_metadata(obj, "nope", {"vendor.x": 1})
    with pytest.raises(codeobj.CodeObjectError, match="is not ET_REL"):
        set_kernel_metadata(compiled.code_object, compiled.name, {"vendor.x": 1})
    with pytest.raises(codeobj.CodeObjectError, match="cannot be stored"):
        set_kernel_metadata(obj, compiled.name, {"vendor.x": object()})


def test_lld_links_the_annotated_object_like_our_linker(tmp_path):
    compiled = _compile(GemmProblem.make(32, 48, 16, "bf16", layout="TN"))
    from jitgemm.codegen.codeobj.annotate import set_kernel_metadata

    annotated = set_kernel_metadata(compiled.relocatable, compiled.name, {codeobj.CONTRACT_KEY: compiled.contract})
    (tmp_path / "k.o").write_bytes(annotated)
    subprocess.run([require_tool("ld.lld"), "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "lld.co")],
                   check=True, capture_output=True)
    theirs = codeobj.read((tmp_path / "lld.co").read_bytes()).kernel(compiled.name)
    ours = codeobj.read(compiled.code_object).kernel(compiled.name)
    assert theirs.contract == ours.contract == compiled.contract
    assert theirs.code == ours.code == compiled.code


def test_jitgemm_compile_generators_caches_and_stages():
    import jitgemm
    from jitgemm.kernel import clear_memory_cache

    problem = GemmProblem.make(50, 60, 70, "fp16", layout="NT")
    llvm = jitgemm.compile(problem, generator="llvm")
    direct = jitgemm.compile(problem, llvm.config)      # the same config through the direct generator (default)
    assert llvm.generator == "jitgemm-llvm" and direct.generator == "jitgemm-asm"
    assert llvm.name != direct.name and llvm.code_object != direct.code_object
    assert jitgemm.compile(problem, generator="llvm") is llvm
    assert set(llvm.stages) == {"ir", "asm", "llir", "amdgcn"} and set(direct.stages) == {"ir", "asm"}
    assert "llvm.amdgcn.mfma" in llvm.stages["llir"]
    assert "v_mfma_f32_32x32x8_f16" in llvm.stages["amdgcn"] and llvm.stages["ir"] == direct.stages["ir"]
    with pytest.raises(KeyError, match="no stage 'llir'"):
        direct.stages["llir"]
    clear_memory_cache()
    again = jitgemm.compile(problem, generator="llvm")
    assert again.from_cache == "disk" and again.code_object == llvm.code_object
    assert again.generator == "jitgemm-llvm" and again.stages["llir"] == llvm.stages["llir"]
    with pytest.raises(IRError, match="generator='gcc'; accepted: asm, llvm"):
        jitgemm.compile(problem, generator="gcc")


def test_cli_compile_with_llvm(tmp_path, capsys):
    from jitgemm.cli import main

    out = tmp_path / "k.co"
    code = main(["compile", "--m", "64", "--n", "64", "--k", "64", "--dtype", "bf16", "--layout", "NT",
                 "--tile", "64x64x32", "--generator", "llvm", "--print-llir", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    name = re.search(r"kernel (\S+) \(jitgemm-llvm, --tile\): ", text).group(1)
    assert name.endswith("_llvm") and f'define amdgpu_kernel void @"{name}"' in text
    assert codeobj.read(out.read_bytes()).kernel(name).contract["identity"]["generator"] == "jitgemm-llvm"
    code = main(["compile", "--m", "64", "--n", "64", "--k", "64", "--print-llir", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == ("jitgemm compile: error: --print-llir goes with --generator llvm (the "
                                         "selector may choose another generator)")
    code = main(["compile", "--m", "64", "--n", "64", "--k", "64", "--generator", "asm", "--print-llir", "-o",
                 str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == ("jitgemm compile: error: --print-llir goes with --generator llvm (the "
                                         "direct generator makes no LLVM IR)")


def test_double_lds_buffer_is_refused_by_the_llvm_generator():
    from dataclasses import replace

    import pytest
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError
    from jitgemm.codegen.generator import generator
    from jitgemm.codegen.llvm.llvm_generator import compile_gemm_llvm

    from jitgemm import isa

    p = GemmProblem.make(64, 64, 64, "bf16", layout="NT")
    chosen = generator("asm").choose_config(p, isa.load_spec("gfx942"), isa.target_profile("gfx942"))
    cfg = replace(chosen, lds_buffers=2)
    with pytest.raises(IRError, match="lds_buffers=2: the LLVM generator stages through one LDS buffer"):
        compile_gemm_llvm(p, cfg)
