"""Issue 31: the selector builds its own generators' planned contracts without the schema validator (importing
jsonschema and walking the schema cost a cold compile ~0.2 s), so the schema check moves here: every contract
the generators plan for a sample of problems (both targets, both generators, scaled, MX, epilogues, batch) is
valid under specs/contract.schema.yaml; and every contract from outside still meets the validator."""

from __future__ import annotations

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import contract as contract_module
from jitgemm.contract import Contract, ContractError
from jitgemm.suppliers import DirectAsmSupplier, GeneratorSupplier, LlvmSupplier, PrebuiltSupplier

PROBLEMS = [
    ("gfx942", dict(m=4096, n=4096, k=4096, a="bf16", layout="NT")),
    ("gfx942", dict(m=200, n=96, k=72, a="fp16", layout="TT", bias="n", activation="relu", beta=0.5, c="fp16")),
    ("gfx942", dict(m=256, n=256, k=256, a="fp8", b="bf8", layout="TN")),
    ("gfx942", dict(m=64, n=64, k=64, a="int8", batch=3)),
    ("gfx950", dict(m=100, n=70, k=40, a="bf16", activation="gelu", bias="m")),
    ("gfx950", dict(m=4096, n=4096, k=4096, a="fp4", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx950", dict(m=64, n=64, k=128, a="fp8_e4m3", b="fp8_e4m3", a_scale="plain", b_scale="plain")),
]


@pytest.fixture
def no_validator(monkeypatch):
    """The schema validator, made to fail if anything asks for it."""
    def refuse():
        raise AssertionError("the schema validator was asked for a planned contract")

    monkeypatch.setattr(GeneratorSupplier, "_contracts", {})
    monkeypatch.setattr(contract_module, "_validator", refuse)


@pytest.mark.parametrize("arch,args", PROBLEMS, ids=[f"{a}-{i}" for i, (a, _) in enumerate(PROBLEMS)])
def test_planned_contracts_are_valid_under_the_schema(arch, args, monkeypatch):
    monkeypatch.setattr(GeneratorSupplier, "_contracts", {})
    problem = GemmProblem.make(**args)
    seen = 0
    for supplier in (DirectAsmSupplier(), LlvmSupplier()):
        if not supplier.available():
            continue
        for _label, config, _fallback in supplier.configs(problem, arch):
            data = supplier.planned_contract(problem, config, arch)
            Contract.load(data, "planned")          # the schema and the consistency checks: raises if invalid
            seen += 1
    assert seen >= 2


def test_selector_candidates_skip_the_validator(no_validator):
    problem = GemmProblem.make(512, 512, 512, "bf16", layout="NT")
    cands = DirectAsmSupplier().candidates(problem, "gfx942")
    assert len(cands) >= 3 and all(c.contract.kernel for c in cands)


def test_contracts_from_outside_are_still_validated(no_validator, tmp_path):
    data = DirectAsmSupplier().planned_contract(GemmProblem.make(64, 64, 64, "bf16"),
                                                DirectAsmSupplier().configs(GemmProblem.make(64, 64, 64, "bf16"),
                                                                            "gfx942")[0][1], "gfx942")
    with pytest.raises(AssertionError, match="schema validator"):
        Contract.load(data, "a file")
    import jitgemm

    kernel = jitgemm.compile(GemmProblem.make(64, 64, 64, "bf16"), DirectAsmSupplier().configs(
        GemmProblem.make(64, 64, 64, "bf16"), "gfx942")[0][1], use_disk_cache=False)
    (tmp_path / "k.co").write_bytes(kernel.code_object)     # its embedded contract is a file's now
    supplier = PrebuiltSupplier(tmp_path)
    with pytest.raises(AssertionError, match="schema validator"):
        supplier._scan()


def test_planned_still_checks_consistency():
    data = DirectAsmSupplier().planned_contract(GemmProblem.make(64, 64, 64, "bf16"),
                                                DirectAsmSupplier().configs(GemmProblem.make(64, 64, 64, "bf16"),
                                                                            "gfx942")[0][1], "gfx942")
    broken = {**data, "launch": {**data["launch"], "workgroup": [0, 1, 1]}}
    with pytest.raises(ContractError):
        Contract.load(broken, "broken")
    Contract.planned(data, "ok")
