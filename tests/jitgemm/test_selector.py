"""The selector: legality from contracts alone (clause by clause), deterministic ranking, tuning data beating
the model, prebuilt folders with embedded or sidecar contracts, contracts that contradict their code object
refused, quarantine honoured; and the kernel arguments packed from a contract equal those packed from the
code object's metadata."""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import yaml
from jitgemm.codegen.codeobj.launch import LaunchDescription, pack_kernargs
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.contract import Contract
from jitgemm.packing import _value, ordered_args
from jitgemm.selector import Quarantine, SelectionError, Selector, TuningDB
from jitgemm.suppliers import DirectAsmSupplier, PrebuiltSupplier

_FORMATS = {("i32", 4): "<i", ("u32", 4): "<I", ("i64", 8): "<q", ("f32", 4): "<f", ("f64", 8): "<d"}


def pack_segment(contract: Contract, values: Mapping[str, Any], pointer_of: Callable[[Any, int], int]) -> bytes:
    """The explicit kernarg bytes laid out by the contract alone (hidden arguments are the runtime's): the
    second route that the metadata-driven packing of jitgemm.codegen.codeobj.launch must agree with."""
    buf = bytearray(contract.data["abi"]["kernarg_size"])
    for index, arg in enumerate(sorted(contract.args, key=lambda a: a["offset"])):
        value = _value(arg, values, contract)
        off, size, kind = arg["offset"], arg["size"], arg.get("type", "i32")
        if kind == "ptr":
            raw = (0 if value is None else int(pointer_of(value, index))).to_bytes(size, "little")
        elif (kind, size) in _FORMATS:
            fmt = _FORMATS[(kind, size)]
            raw = struct.pack(fmt, float(value) if kind.startswith("f") else int(value))
        else:
            raw = (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        buf[off:off + size] = raw
    return bytes(buf)


@pytest.fixture
def private(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def prebuilt(folder, problem, name, contract_edit=None):
    """A code object compiled by the direct generator, its contract in a sidecar (optionally edited)."""
    compiled = compile_gemm(problem, name=name, embed_contract=False)
    (folder / f"{name}.co").write_bytes(compiled.code_object)
    data = copy.deepcopy(compiled.contract)
    if contract_edit:
        contract_edit(data)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    return compiled


def test_legality_filters_exactly(private):
    folder = private / "kernels"
    folder.mkdir()

    def m64(data):
        data["legality"]["divisible"] = {"m": 64}

    prebuilt(folder, GemmProblem.make(128, 64, 64, "bf16"), "bf16_m64", m64)
    prebuilt(folder, GemmProblem.make(128, 64, 64, "fp8", d="fp32"), "fp8_kernel")
    sel = Selector([PrebuiltSupplier(folder)], quarantine=Quarantine(private / "q.json"))
    verdicts = {v.candidate.label: v for v in sel.evaluate(GemmProblem.make(100, 64, 64, "bf16"))}
    assert not verdicts["bf16_m64.co:bf16_m64"].legal
    assert verdicts["bf16_m64.co:bf16_m64"].reason == "legality.divisible.m: m=100 is not a multiple of 64"
    assert verdicts["fp8_kernel.co:fp8_kernel"].reason.startswith("operation.a/b: kernel takes fp8xfp8")
    with pytest.raises(SelectionError, match="legality.divisible.m"):
        sel.select(GemmProblem.make(100, 64, 64, "bf16"))
    chosen = sel.select(GemmProblem.make(128, 64, 64, "bf16"))
    assert chosen.label == "bf16_m64.co:bf16_m64"
    text = sel.explain(GemmProblem.make(100, 64, 64, "bf16"))
    assert "rejected" in text and "legality.divisible.m" in text and "operation.a/b" in text


def test_contract_contradicting_metadata_is_refused(private):
    folder = private / "kernels"
    folder.mkdir()

    def lie(data):
        data["launch"]["workgroup"] = [512, 1, 1]   # the code object allows 256 work-items

    prebuilt(folder, GemmProblem.make(64, 64, 64, "fp16"), "liar", lie)
    sup = PrebuiltSupplier(folder)
    assert sup.candidates(GemmProblem.make(64, 64, 64, "fp16"), "gfx942") == []
    assert any("512 work-items, the kernel allows 256" in e for e in sup.errors), sup.errors


def test_fallback_always_legal_and_ranking_deterministic(private):
    sel = Selector([DirectAsmSupplier()], quarantine=Quarantine(private / "q.json"),
                   tuning=TuningDB(private / "tuning"))
    odd = GemmProblem.make(37, 41, 43, "bf16", layout="TN", lda=37, ldb=45)
    verdicts = sel.evaluate(odd, {"a": 2, "b": 2})
    legal = [v for v in verdicts if v.legal]
    assert any(v.candidate.fallback for v in legal)
    assert [v.candidate.label for v in legal] == [v.candidate.label for v in sel.evaluate(odd, {"a": 2, "b": 2})
                                                  if v.legal]
    scores = [v.score for v in legal]
    assert scores == sorted(scores, reverse=True)


def test_vector_kernel_rejected_for_misaligned_pointer(private):
    sel = Selector([DirectAsmSupplier()], quarantine=Quarantine(private / "q.json"))
    p = GemmProblem.make(128, 128, 128, "fp16", layout="NT")
    by_label = {v.candidate.label: v for v in sel.evaluate(p, {"a": 2, "b": 16})}
    assert not by_label["default"].legal and "legality.align_bytes.a" in by_label["default"].reason
    assert by_label["fallback"].legal


def test_tuning_data_beats_model(private):
    tuning = TuningDB(private / "tuning")
    sel = Selector([DirectAsmSupplier()], quarantine=Quarantine(private / "q.json"), tuning=tuning)
    p = GemmProblem.make(256, 256, 256, "bf16", layout="NT")
    model_first = sel.evaluate(p)[0]
    last_legal = [v for v in sel.evaluate(p) if v.legal][-1]
    assert last_legal.candidate.key != model_first.candidate.key
    tuning.record("gfx942", p, last_legal.candidate.key, 1e-6)
    best = sel.evaluate(p)[0]
    assert best.candidate.key == last_legal.candidate.key and best.basis == "tuning"


def test_quarantined_kernel_is_never_selected(private):
    q = Quarantine(private / "q.json")
    sel = Selector([DirectAsmSupplier()], quarantine=q)
    p = GemmProblem.make(64, 64, 64, "bf16")
    first = sel.select(p)
    q.add(first.key, "test case")
    verdict = next(v for v in sel.evaluate(p) if v.candidate.key == first.key)
    assert not verdict.legal and "quarantined" in verdict.reason
    assert sel.select(p).key != first.key


def test_packing_from_contract_equals_metadata(private):
    from jitgemm.codegen import codeobj

    p = GemmProblem.make(33, 40, 24, "fp16", d="fp32", layout="NT", c="fp32", beta=0.5, alpha=2.0, bias="n")
    compiled = compile_gemm(p)
    contract = Contract.load(compiled.contract)
    kernel = codeobj.read(compiled.code_object).kernel(compiled.name)
    rng = np.random.default_rng(0)
    arrays = {r: rng.standard_normal(8).astype(np.float32) for r in ("a", "b", "c", "d", "bias")}
    values = {**arrays, "m": 33, "n": 40, "k": 24, "batch": 1, "lda": 24, "ldb": 24, "ldc": 40, "ldd": 40,
              "stride_a": 0, "stride_b": 0, "stride_c": 0, "stride_d": 1320, "alpha": 2.0, "beta": 0.5}
    address = {id(v): 0x10000 * (i + 1) for i, v in enumerate(arrays.values())}

    def pointer_of(value, index):
        return address[id(value)]

    args = ordered_args(contract, values)
    launch = LaunchDescription.make(compiled.name, (1, 1, 1), (256, 1, 1), args)
    meta_bytes = pack_kernargs(kernel.args, launch, segment_size=kernel.metadata[".kernarg_segment_size"],
                               pointer_of=pointer_of)
    contract_bytes = pack_segment(contract, values, pointer_of)
    assert bytes(meta_bytes[: len(contract_bytes)]) == contract_bytes
    assert contract_bytes[40:44] == (33).to_bytes(4, "little")


def test_packing_from_contract_equals_metadata_for_triton(private):
    from jitgemm.codegen import codeobj

    from jitgemm.suppliers import TritonSupplier
    from tests.fixtures.oracles import require_module

    require_module("triton")
    p = GemmProblem.make(40, 72, 32, "fp16", layout="NT")
    cand = TritonSupplier().candidates(p, "gfx942")[0]
    blob, name = cand.load()
    kernel = codeobj.read(blob).kernel(name)
    rng = np.random.default_rng(2)
    arrays = {r: rng.standard_normal(8).astype(np.float32) for r in ("a", "b", "d")}
    values = {**arrays, "m": 40, "n": 72, "k": 32, "lda": 32, "ldb": 32, "ldd": 72}
    address = {id(v): 0x20000 * (i + 1) for i, v in enumerate(arrays.values())}

    def pointer_of(value, index):
        return address[id(value)]

    args = ordered_args(cand.contract, values)
    launch = LaunchDescription.make(name, (1, 1, 1), cand.contract.workgroup, args)
    meta_bytes = pack_kernargs(kernel.args, launch, segment_size=kernel.metadata[".kernarg_segment_size"],
                               pointer_of=pointer_of, include_hidden=False)
    contract_bytes = pack_segment(cand.contract, values, pointer_of)
    assert bytes(meta_bytes) == contract_bytes
    # the B strides: NT means B is stored N x K, so stride_bk is the constant 1 and stride_bn is ldb
    by_name = {a["name"]: a for a in cand.contract.args}
    assert by_name["stride_bk"]["role"] == "const" and by_name["stride_bn"]["role"] == "ldb"
