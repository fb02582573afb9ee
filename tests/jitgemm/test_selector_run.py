"""The selector end to end in the emulator: every legal candidate of every supplier (direct generator, LLVM
generator, Triton, prebuilt) gives numpy's answer; `jitgemm qualify` quarantines a prebuilt kernel whose
contract lies, and the selector then never picks it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.api import launch, prepare
from jitgemm.cli import main
from jitgemm.reference import check, operands, reference
from jitgemm.selector import Quarantine, Selector
from jitgemm.suppliers import DirectAsmSupplier, LlvmSupplier, PrebuiltSupplier, TritonSupplier
from tests.fixtures.oracles import require_module


@pytest.mark.parametrize("problem", [GemmProblem.make(70, 90, 64, "bf16", layout="NT"),
                                     GemmProblem.make(33, 64, 48, "fp16", d="fp32", layout="NN")],
                         ids=["bf16-NT", "fp16-NN"])
def test_every_legal_candidate_matches_numpy(tmp_path, problem):
    require_module("triton")
    sel = Selector([DirectAsmSupplier(), LlvmSupplier(), TritonSupplier()], quarantine=Quarantine(tmp_path / "q"))
    a, b, c, bias = operands(problem, seed=3)
    call = prepare(a, b, c, out_dtype=problem.d.numpy)
    verdicts = [v for v in sel.evaluate(problem, call.align) if v.legal]
    assert {v.candidate.supplier for v in verdicts} == {"jitgemm-asm", "jitgemm-llvm", "triton"}
    ref = reference(problem, a, b, c, bias)
    for v in verdicts:
        call = prepare(a, b, c, out_dtype=problem.d.numpy)
        blob, name = v.candidate.load()
        d = launch(call, blob, name, v.candidate.contract, source=v.candidate.label)
        check(problem, d, ref)


def test_qualify_quarantines_a_lying_prebuilt_kernel(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "prebuilt"
    folder.mkdir()
    good = compile_gemm(GemmProblem.make(64, 64, 64, "fp16", layout="NN"), name="good_nn", embed_contract=False)
    (folder / "good.co").write_bytes(good.code_object)
    (folder / "good.yaml").write_text(yaml.safe_dump(good.contract))
    bad = compile_gemm(GemmProblem.make(64, 64, 64, "fp16", layout="NN"), name="liar_nt", embed_contract=False)
    lie = copy.deepcopy(bad.contract)
    lie["operation"]["layout"] = "NT"          # the code reads B as K x N; the contract claims N x K
    (folder / "liar.co").write_bytes(bad.code_object)
    (folder / "liar.yaml").write_text(yaml.safe_dump(lie))

    assert main(["qualify", str(folder), "--cases", "2"]) == 1
    out = capsys.readouterr().out
    assert "ok          good.co:good_nn" in out
    assert "QUARANTINED liar.co:liar_nt" in out and "elements off" in out

    sel = Selector([PrebuiltSupplier(folder)])
    problem = GemmProblem.make(64, 64, 64, "fp16", layout="NT")
    verdict = next(v for v in sel.evaluate(problem) if v.candidate.label == "liar.co:liar_nt")
    assert not verdict.legal and verdict.reason.startswith("quarantined: failed qualification")
    nn = sel.select(GemmProblem.make(64, 64, 64, "fp16", layout="NN"))
    assert nn.label == "good.co:good_nn"


def test_matmul_uses_selected_prebuilt_kernel(tmp_path, monkeypatch):
    """A kernel registered from a folder is chosen when it ranks first, and computes the right answer."""
    import jitgemm
    import jitgemm.selector as selector_module

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "prebuilt"
    folder.mkdir()
    k = compile_gemm(GemmProblem.make(48, 40, 32, "bf16", layout="TN"), name="only_kernel")
    (folder / "k.co").write_bytes(k.code_object)
    monkeypatch.setattr(selector_module, "_suppliers", [PrebuiltSupplier(folder)])
    monkeypatch.setattr(selector_module, "_selectors", {})
    rng = np.random.default_rng(1)
    import ml_dtypes

    a = rng.standard_normal((32, 48)).astype(ml_dtypes.bfloat16).T      # a transposed view: layout T
    b = rng.standard_normal((32, 40)).astype(ml_dtypes.bfloat16)
    d = jitgemm.matmul(a, b)
    assert jitgemm.last_launch().kernel == "only_kernel"
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(d.astype(np.float64) - ref)) <= 2**-7 * np.max(np.abs(ref)) + 1e-3


def test_use_prebuilt_registers_folder_for_matmul(tmp_path, monkeypatch):
    import ml_dtypes

    import jitgemm
    import jitgemm.selector as selector_module

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(selector_module, "_suppliers", [])
    monkeypatch.setattr(selector_module, "_selectors", {})
    folder = tmp_path / "kernels"
    folder.mkdir()
    k = compile_gemm(GemmProblem.make(32, 32, 32, "bf16"), name="user_kernel")
    (folder / "user.co").write_bytes(k.code_object)
    (folder / "broken.co").write_bytes(b"\x7fELF not really")
    refused = jitgemm.use_prebuilt(str(folder))
    assert len(refused) == 1 and "broken.co" in refused[0]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((20, 32)).astype(ml_dtypes.bfloat16)     # its contract wants n, k % 8 == 0
    b = rng.standard_normal((32, 16)).astype(ml_dtypes.bfloat16)
    d = jitgemm.matmul(a, b)
    assert jitgemm.last_launch().kernel == "user_kernel"
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(d.astype(np.float64) - ref)) <= 2**-7 * np.max(np.abs(ref)) + 1e-3
    text = jitgemm.explain(GemmProblem.make(20, 10, 32, "bf16"))
    assert "user.co:user_kernel" in text and "legality.divisible.n: n=10 is not a multiple of 8" in text
