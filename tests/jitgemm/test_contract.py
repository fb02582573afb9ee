"""The kernel contract: schema validation names the key; unsatisfiable or self-contradicting contracts and
ones that disagree with the code object metadata are refused; legality is checked clause by clause."""

from __future__ import annotations

import copy

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.contract import Contract, ContractError, evaluate_formula
from tests.fixtures.contracts import contract


def test_valid_contract_and_grid():
    c = Contract.load(contract())
    assert c.kernel == "gemm_k" and c.workgroup == (256, 1, 1)
    assert c.grid(m=100, n=300, k=5, batch=2) == (3, 1, 2)
    assert evaluate_formula("max(1, min(m, 7)) * 2 + n // 3", {"m": 10, "n": 9, "k": 1, "batch": 1}) == 17


@pytest.mark.parametrize("changes, message", [
    ({"operation__a": "bf17"}, r"at operation\.a: 'bf17' is not one of"),
    ({"identity__target": "sm_90"}, r"at identity\.target: 'sm_90' does not match"),
    ({"launch__workgroup": [256, 1]}, r"at launch\.workgroup"),
    ({"features__colour": True}, r"at features: Additional properties are not allowed \('colour'"),
    ({"launch__grid": ["ceil(n/128)", "__import__('os')", "1"]}, "unsupported element"),
    ({"abi__kernarg_size": 30}, r"at abi.args.\d+ \(\w+\): the argument ends at byte \d+, beyond abi.kernarg_size 30"),
    ({"legality__divisible": {"m": 64}, "legality__max": {"m": 32}}, "no m <= 32 is divisible by 64"),
    ({"features__beta": True}, "features.beta needs features.c_input"),
])
def test_bad_contracts_are_refused(changes, message):
    with pytest.raises(ContractError, match=message):
        Contract.load(contract(**changes), "k.yaml")


def test_retired_operation_scale():
    """operation.scale (none|per_tensor) was written by every generator and read by nothing; operation.scale_mode
    states a kernel's scaling. Old contracts with `scale: none` still load (same meaning); other values are refused
    with the field to use instead."""
    old = Contract.load(contract(operation__scale="none"), "old.yaml")
    assert "scale" not in old.data["operation"] and old.data == Contract.load(contract()).data
    with pytest.raises(ContractError, match=r"old.yaml: at operation.scale: 'per_tensor': .*operation.scale_mode"):
        Contract.load(contract(operation__scale="per_tensor"), "old.yaml")
    with pytest.raises(ContractError, match=r"operation.scale is retired"):
        Contract.load(contract(operation__scale=[1]), "old.yaml")


def test_overlapping_args_refused():
    data = contract()
    data["abi"]["args"][5]["offset"] = 28
    with pytest.raises(ContractError, match=r"at abi.args.\d+ \(k\): overlaps argument n"):
        Contract.load(data)


def test_yaml_error_has_line():
    with pytest.raises(ContractError, match=r"k.yaml:2:\d+: not valid YAML"):
        Contract.load("a: 1\nb: [unclosed, x: }\nc: 2\n", "k.yaml")


def test_legality_clauses():
    c = Contract.load(contract())
    ok, why = c.admits(GemmProblem.make(128, 256, 64, "bf16", layout="NT"))
    assert ok, why
    ok, why = c.admits(GemmProblem.make(100, 256, 64, "bf16", layout="NT"))
    assert not ok and why == "legality.divisible.m: m=100 is not a multiple of 64"
    ok, why = c.admits(GemmProblem.make(128, 256, 64, "fp8", d="bf16", layout="NT"))
    assert not ok and why.startswith("operation.a/b")
    ok, why = c.admits(GemmProblem.make(128, 256, 64, "bf16", layout="NN"))
    assert not ok and why.startswith("operation.layout")
    ok, why = c.admits(GemmProblem.make(128, 256, 60, "bf16", layout="NT", lda=60))
    assert not ok and why == "legality.ld_multiple.a: lda=60 is not a multiple of 8"
    ok, why = c.admits(GemmProblem.make(128, 256, 64, "bf16", layout="NT"), align={"a": 8})
    assert not ok and "8-byte aligned" in why
    ok, why = c.admits(GemmProblem.make(128, 256, 64, "bf16", layout="NT", activation="gelu"))
    assert not ok and why.startswith("features.activation")


def test_metadata_contradictions():
    c = Contract.load(contract())
    args = [{".offset": o, ".size": 8, ".value_kind": "global_buffer"} for o in (0, 8, 16)]
    args += [{".offset": o, ".size": 4, ".value_kind": "by_value"} for o in (24, 28, 32)]
    meta = {".args": args, ".kernarg_segment_size": 36, ".max_flat_workgroup_size": 256}
    c.check_metadata(meta)
    with pytest.raises(ContractError, match="allows 128"):
        c.check_metadata({**meta, ".max_flat_workgroup_size": 128})
    bad = copy.deepcopy(meta)
    bad[".args"][3][".size"] = 8
    with pytest.raises(ContractError, match=r"at abi.args.3 \(m\): size 4 in the contract, 8 in the metadata"):
        c.check_metadata(bad)
    bad = copy.deepcopy(meta)
    bad[".args"][0][".value_kind"] = "by_value"
    with pytest.raises(ContractError, match="role a"):
        c.check_metadata(bad)
