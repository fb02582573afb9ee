"""Every gfx942/gfx950 demo kernel of hipBLASLt's GFA corpus (../shared/gfa-corpus/CustomKernels, never committed)
assembles with jitgemm's assembler and linker to what llvm-mc-22 + ld.lld-22 make of it: loaded sections,
symbols, metadata note (custom.config included), kernel descriptors and code. What it took: DPP written without
the `_dpp` suffix (rocBLAS wvSpltK), `.amdgcn.next_free_{v,s}gpr` counted as llvm-mc counts them (aiter),
`.p2align` with a maximum skip (Triton), code object v4, and the metadata's YAML scalars read as LLVM reads them
(`True` stays a string, `{0: 1}` has an integer key). Files without `.amdgcn_target` take the target the GFA
reader finds (manifest Target.ISA, or the test YAML's ArchitectureName)."""

from __future__ import annotations

import pytest

from tests.fixtures.asm_support import assert_same_code_object
from tests.fixtures.hand_kernel import llvm_link
from tests.fixtures.oracles import SHARED, require_shared

CORPUS = SHARED / "gfa-corpus"
KERNELS = ["aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s",
           "aiter/_ZN5aiter42f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256E.s",
           "wave/wave_bf16_gemm_256x256x64.s",
           "triton/_gemm_afp4wfp4_kernel_BLOCK_SIZE_M_256_BLOCK_SIZE_N_256_BLOCK_SIZE_K_64_GROUP_SIZE_M_8_num_warps_4_"
           "num_stages_2_waves_per_eu_0_matrix_instr_nonkdim_16_cache_modifier_NONE_NUM_KSPLIT_1.s",
           *(f"rocblas/wvSpltK_{kind}_m{m}.s" for kind in ("bf16_tn", "f16_nn", "hf") for m in (1, 2, 4))]
TEST_YAML = {"triton": "custom_triton_f4.yaml"}


@pytest.mark.parametrize("rel", KERNELS, ids=[k.split("/")[1][:40] for k in KERNELS])
def test_gfa_demo_kernel_assembles_as_llvm_mc_and_lld(rel, tmp_path):
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm.gfa import read_kernel

    path = require_shared(CORPUS / "CustomKernels" / rel, f"GFA demo kernel {rel}")
    origin = rel.split("/")[0]
    yaml_file = CORPUS / "Tests" / "custom" / TEST_YAML[origin] if origin in TEST_YAML else None
    kernel = read_kernel(path, custom_yaml=yaml_file)
    assert kernel.target in ("gfx942", "gfx950")
    text = path.read_text()
    ours, _ = assemble_source(text, file=str(path), arch=kernel.target)
    _rel, theirs = llvm_link(tmp_path, text, cpu=kernel.target)
    assert assert_same_code_object(ours, theirs, rel) == 1


def test_hipkittens_gfx1250_is_refused_with_the_reason():
    from jitgemm.gfa import GfaError, read_kernel

    path = require_shared(CORPUS / "CustomKernels" / "hipkittens" / "bm064_bn064_bk032_wm2_wn4_mc1.s",
                          "GFA hipKittens sample")
    with pytest.raises(GfaError, match="gfx1250.*no MR-ISA spec"):
        read_kernel(path)
