"""hipBLASLt's Gemm-From-Anywhere contract in jitgemm, both ways, on the GFA demo corpus (../shared/gfa-corpus,
never committed; a user's clone skips naming the file, CI fails): the reader maps custom.config to jitgemm's
contract and fails closed on what it does not know; demo kernels run in strict emulation equal to numpy on their
test problem scaled down and are refused for problems their predicates forbid; the ABI proof finds what a
record claims and a binary does not do; a direct bf16 gfx942 and a direct MXFP4 gfx950 kernel export as GFA
kernels that pass hipBLASLt's rules, assemble (llvm-mc-22 + ld.lld-22 and jitgemm asm) to the kernel's bytes and
import back to the same contract; `select --explain` lists jitgemm's kernels beside every GFA one."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from tests.fixtures.oracles import SHARED, require_shared, require_tool

CORPUS = SHARED / "gfa-corpus"
KERNELS = CORPUS / "CustomKernels"
TESTS = CORPUS / "Tests" / "custom"
TRITON = ("triton/_gemm_afp4wfp4_kernel_BLOCK_SIZE_M_256_BLOCK_SIZE_N_256_BLOCK_SIZE_K_64_GROUP_SIZE_M_8_num_warps_4_"
          "num_stages_2_waves_per_eu_0_matrix_instr_nonkdim_16_cache_modifier_NONE_NUM_KSPLIT_1.s")


def kernel(rel: str, test_yaml: str | None):
    from jitgemm.gfa import read_kernel

    path = require_shared(KERNELS / rel, f"GFA demo kernel {rel}")
    return read_kernel(path, custom_yaml=require_shared(TESTS / test_yaml, test_yaml) if test_yaml else None)


def test_aiter_bf16_record_maps_to_a_contract():
    from jitgemm.gfa import to_contract

    c = to_contract(kernel("aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "custom_aiter_bf16.yaml")).data
    assert c["identity"]["target"] == "gfx950"   # no .amdgcn_target: from the manifest's Target.ISA
    assert c["operation"] == {"kind": "gemm", "a": "bf16", "b": "bf16", "d": "bf16", "acc": "fp32", "layout": "NT",
                              "c": "bf16"}
    roles = {a["semantic"]: (a["role"], a["offset"], a["size"], a.get("unit")) for a in c["abi"]["args"]}
    # Tensile's A is jitgemm's B (column-major vs row-major), padding advances the offsets, *Bytes are byte strides
    assert roles["AddressB"] == ("a", 32, 8, None) and roles["AddressA"] == ("b", 48, 8, None)
    assert roles["StrideA0Bytes"] == ("ldb", 192, 4, "bytes") and roles["StrideB1"] == ("stride_a", 176, 4, "elements")
    assert roles["SizeFree1"] == ("m", 224, 4, None) and roles["SizeFree0"] == ("n", 240, 4, None)
    assert roles["SplitK"][0] == "const"
    assert c["launch"] == {"workgroup": [256, 1, 1], "grid": ["ceil(n/256)", "ceil(m/256)", "1"], "lds_bytes": 0}
    assert c["legality"]["divisible"] == {"n": 256, "m": 256, "k": 64} and c["legality"]["batch"] is False
    assert c["features"]["c_alias_d"] and not c["features"]["beta"] and len(c["gfa"]["errata"]) == 2
    raw = to_contract(kernel("aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "custom_aiter_bf16.yaml"), errata=False)
    assert raw.data["features"]["beta"] and "k" not in raw.data["legality"]["divisible"]   # what the record says


def _with_args(tmp_path, edit):
    """The aiter bf16 test YAML with its CustomKernel edited by `edit` (a copy in tmp_path)."""
    data = yaml.safe_load(require_shared(TESTS / "custom_aiter_bf16.yaml", "custom_aiter_bf16.yaml").read_text())
    ck = data["BenchmarkProblems"][0][1]["ForkParameters"][0]["CustomKernel"][0]
    edit(ck, data["BenchmarkProblems"][0][0])
    out = tmp_path / "edited.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


@pytest.mark.parametrize("edit, message", [
    (lambda ck, pt: ck["args"][3].update(semantic="AddressQ"),
     r"CustomKernel\.args\.3\.semantic: 'AddressQ' is not a known GFA argument semantic \(accepted: AddressA"),
    (lambda ck, pt: ck["args"].append({"type": "address", "semantic": "AddressWorkspace"}),
     r"args\.19\.semantic: AddressWorkspace refused: a workspace buffer"),
    (lambda ck, pt: ck.update(workspaceType="StreamK"),
     r"CustomKernel\.workspaceType: StreamK refused: it needs a workspace"),
    (lambda ck, pt: ck.update(grid=["StreamKWithBatch", "One", "One"]), r"grid\.0: StreamKWithBatch refused"),
    (lambda ck, pt: ck["args"][4].update(type="float16"), r"args\.4\.type: 'float16'; accepted: address, uint32"),
    (lambda ck, pt: pt.update(DataType="Q9"), r"ProblemType\.DataTypeA: data type 'Q9' is not mapped"),
    (lambda ck, pt: pt.update(UseBias=1), r"ProblemType\.UseBias: 1 is not supported"),
    (lambda ck, pt: pt.update(Fancy=True), r"ProblemType\.Fancy: unknown ProblemType key"),
])
def test_unknown_or_unsupported_fails_closed_naming_the_key(tmp_path, edit, message):
    from jitgemm.gfa import GfaError, read_kernel, to_contract

    path = require_shared(KERNELS / "aiter" / "_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "aiter bf16 kernel")
    with pytest.raises(GfaError, match=message):
        to_contract(read_kernel(path, custom_yaml=_with_args(tmp_path, edit)))


# (kernel, test YAML, scaled-down problem (m, n, k) in jitgemm's terms, a problem its predicates forbid + clause)
DEMOS = [
    ("aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "custom_aiter_bf16.yaml", (256, 256, 128),
     ((256, 200, 128), "legality.divisible.n")),
    ("aiter/_ZN5aiter42f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256E.s", "custom_aiter_f4.yaml", (256, 256, 256),
     ((100, 256, 256), "legality.divisible.m")),
    (TRITON, "custom_triton_f4.yaml", (256, 256, 128), ((256, 256, 48), "legality.divisible.k")),
    ("wave/wave_bf16_gemm_256x256x64.s", "custom_wave_bf16.yaml", (256, 256, 128), None),
    ("rocblas/wvSpltK_f16_nn_m1.s", "custom_rocblas_gemv_f16_nn_m1.yaml", (40, 1, 64),
     ((40, 2, 64), "legality.max.n")),
    ("rocblas/wvSpltK_bf16_tn_m4.s", "custom_rocblas_gemv_bf16_tn_m4.yaml", (3, 24, 64),
     ((5, 24, 64), "legality.max.m")),
]


@pytest.mark.parametrize("rel, test_yaml, size, forbidden", DEMOS, ids=[d[0].split("/")[1][:28] for d in DEMOS])
def test_demo_kernel_strict_emulation_equals_numpy(rel, test_yaml, size, forbidden):
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm.api import launch
    from jitgemm.gfa import to_contract
    from jitgemm.qualify import problem_call
    from jitgemm.reference import check

    k = kernel(rel, test_yaml)
    contract = to_contract(k)
    op = contract.data["operation"]
    mx = {key: op[key] for key in ("a_scale", "b_scale", "b_preshuffle") if key in op}

    def problem(m, n, kk):
        return GemmProblem.make(m, n, kk, op["a"], op["b"], op["d"], layout=op["layout"], **mx)

    call, want = problem_call(problem(*size), seed=3)
    got = launch(call, k.code, k.name, contract, backend="emu", strict=True)   # D is NaN-poisoned by prepare
    check(call.problem, got, want)
    if forbidden is not None:
        ok, why = contract.admits(problem(*forbidden[0]))
        assert not ok and why.startswith(forbidden[1]), why


def test_abi_proof_finds_what_the_aiter_record_claims_and_the_binary_does_not_do():
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm.abi_proof import prove
    from jitgemm.gfa import to_contract

    k = kernel("aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "custom_aiter_bf16.yaml")
    contract = to_contract(k)
    proof = prove(contract, k.code, k.name, [GemmProblem.make(256, 256, 64, "bf16", layout="NT")])
    errors = {(f.kind, f.argument) for f in proof.findings if f.severity == "error"}
    # the kernel reads StrideC0Bytes but never D's leading dimension: a D with ldd != ldc would be written wrong
    assert errors == {("never_read", "StrideD0Bytes")}
    assert {r.offset for r in proof.reads} >= {0, 16, 32, 48, 64, 80, 128}   # D, C, A, B, alpha, beta, ldc
    assert not proof.ok


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A direct bf16 gfx942 kernel and a direct MXFP4 gfx950 kernel, exported as GFA kernels."""
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm
    from jitgemm.gfa.writer import export

    out = {}
    for label, problem, arch in (
            ("bf16-gfx942", GemmProblem.make(256, 256, 256, "bf16", layout="NT"), "gfx942"),
            ("mxfp4-gfx950", GemmProblem.make(256, 256, 256, "fp4", "fp4", "bf16", a_scale="plain", b_scale="plain"),
             "gfx950")):
        k = jitgemm.compile(problem, arch=arch)
        folder = tmp_path_factory.mktemp(label)
        e = export(k.code_object, k.name)
        (folder / f"{e.name}.s").write_text(e.source)
        (folder / "manifest.yaml").write_text(e.manifest_file())
        out[label] = (k, e, folder)
    return out


@pytest.mark.parametrize("label", ["bf16-gfx942", "mxfp4-gfx950"])
def test_export_passes_hipblaslt_rules_assembles_to_the_kernel_and_round_trips(exported, label, tmp_path):
    import hashlib

    from jitgemm.codegen import codeobj
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm.contract import Contract
    from jitgemm.gfa import read_kernel, to_contract
    from jitgemm.gfa.reader import comparable
    from jitgemm.gfa.validate import validate
    from tests.fixtures.hand_kernel import llvm_link

    k, e, folder = exported[label]
    assert validate(e.config) == [] and e.words == 0
    assert ".amdgcn_target" not in e.source     # hipBLASLt's assembler flags give the target (README)
    assert e.manifest["ContentHash"] == "sha256:" + hashlib.sha256(e.source.encode()).hexdigest()
    original = codeobj.read(k.code_object).kernel(k.name)
    _rel, theirs = llvm_link(tmp_path, e.source, cpu=e.target)
    ours = assemble_source(e.source, arch=e.target)[0]
    for blob in (theirs, ours):
        got = codeobj.read(blob).kernel(k.name)
        assert got.code == original.code
        assert got.descriptor_bytes[:16] + got.descriptor_bytes[24:] == \
            original.descriptor_bytes[:16] + original.descriptor_bytes[24:]
    again = to_contract(read_kernel(folder / f"{e.name}.s"))      # the target from the exported manifest
    assert comparable(again) == comparable(Contract.load(copy.deepcopy(k.contract)))


def test_select_explain_lists_ours_beside_every_gfa_kernel_and_matmul_runs_the_winner(monkeypatch):
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm import selector as sel
    from jitgemm.suppliers import PrebuiltSupplier

    require_shared(KERNELS / "aiter" / "manifest.yaml", "GFA corpus")
    gfa = PrebuiltSupplier(KERNELS, name="gfa", custom_yaml=TESTS)
    s = sel.Selector(sel.default_suppliers()[:1] + [gfa], target="gfx950")
    text = s.explain(GemmProblem.make(4096, 4096, 8192, "bf16", layout="NT"))
    rows = {line.split()[2].split(":")[0]: line for line in text.splitlines()[2:] if len(line.split()) > 3}
    print(text)
    assert "kept" in rows["_ZN5aiter24bf16gemm_bf16_tn_256x256E.s"]
    assert "rejected" in rows["wave_bf16_gemm_256x256x64.s"] and "operation.d" in rows["wave_bf16_gemm_256x256x64.s"]
    assert "operation.a/b" in rows[TRITON.split("/")[1]]
    assert "legality.max.m" in rows["wvSpltK_bf16_tn_m4.s"]
    assert rows["default"].split()[1] == "jitgemm-asm" and "kept" in rows["default"]
    assert "identity.target: kernel is for gfx942" in rows["wvSpltK_f16_nn_m1.s"]
    assert any("gfx1250" in e for e in gfa.errors)     # hipKittens, refused with the reason
    # matmul through the default selector with the GFA kernels offered, on the covered problem scaled down
    monkeypatch.setattr(sel, "_suppliers", None)
    monkeypatch.setattr(sel, "_selectors", {})
    import jitgemm
    from jitgemm.reference import check, operands

    refused = jitgemm.use_prebuilt(str(KERNELS), custom_yaml=str(TESTS))
    assert any("gfx1250" in r for r in refused)
    p = GemmProblem.make(256, 256, 128, "bf16", layout="NT")
    a, b, _c, _bias = operands(p, 5)
    d = jitgemm.matmul(a, b, arch="gfx950", backend="emu")
    from jitgemm.reference import reference

    check(p, d, reference(p, a, b, None, None))
    assert jitgemm.last_launch() is not None
    require_tool("llvm-mc")
    assert np.isfinite(d.astype(np.float64)).all()


def test_a_code_object_reads_as_its_assembly_does(tmp_path):
    """custom.config from a linked code object's metadata note (LLVM's typing: `True` stays a string) gives the
    contract its `.s` gives; the target comes from the ELF's e_flags there."""
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from jitgemm.gfa import read_kernel, to_contract
    from jitgemm.gfa.reader import comparable

    src = require_shared(KERNELS / "rocblas" / "wvSpltK_hf_m4.s", "rocBLAS wvSpltK_hf_m4")
    test_yaml = require_shared(TESTS / "custom_rocblas_gemv_m4.yaml", "custom_rocblas_gemv_m4.yaml")
    co = tmp_path / "wvSpltK_hf_m4.co"
    co.write_bytes(assemble_source(src.read_text(), file=str(src))[0])
    from_co, from_s = read_kernel(co, custom_yaml=test_yaml), read_kernel(src, custom_yaml=test_yaml)
    assert from_co.target == "gfx942"
    assert comparable(to_contract(from_co)) == comparable(to_contract(from_s))


@pytest.mark.parametrize("errata", [False, True])
def test_qualification_refuses_what_the_record_promises_until_the_errata_narrow_it(errata):
    """The aiter bf16 record admits k=6 and alpha != 1; strict emulation shows the kernel wrong there, so it is
    quarantined with the failing case; the errata of specs/gfa.yaml (k % 64, no alpha/beta) make every problem the
    narrowed contract admits match numpy. Wave's record has no stride argument: the reader requires packed
    operands, and its kernel qualifies."""
    from jitgemm.gfa import to_contract
    from jitgemm.qualify import qualify_candidate
    from jitgemm.suppliers import Candidate

    k = kernel("aiter/_ZN5aiter24bf16gemm_bf16_tn_256x256E.s", "custom_aiter_bf16.yaml")
    cand = Candidate("gfa", k.name, to_contract(k, errata=errata), lambda: (k.code, k.name))
    result = qualify_candidate(cand, cases=2, seed=0)
    if errata:
        assert result.failure is None and result.cases == 2
    else:
        assert result.failure is not None and "elements off" in result.failure
    if errata:
        w = kernel("wave/wave_bf16_gemm_256x256x64.s", "custom_wave_bf16.yaml")
        contract = to_contract(w)
        assert contract.data["legality"]["packed"] == ["a", "b", "d"]
        wave = qualify_candidate(Candidate("gfa", w.name, contract, lambda: (w.code, w.name)), cases=2, seed=0)
        assert wave.failure is None, wave.failure
