"""Split-K in the direct generator (codegen/gemm_split.py + the LLVM reduction kernel): partial sums of K ranges
into a NaN-poisoned workspace, a deterministic reduction applying the epilogue once, = numpy (float64, tolerance
per dtype) in strict emulation on gfx942 and gfx950, including K not divisible by the split (the last range's
tail) and ragged M/N."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem, IRError
from jitgemm.codegen.gemm_split import max_split, partial_problem, split_refusal

from jitgemm.api import MatmulError, prepare
from jitgemm.api import split_launch as split_matmul
from jitgemm.contract import Contract
from jitgemm.reference import check, operands, reference
from jitgemm.split_k import partial_kernel

CASES = [  # arch, m, n, k, a, d, layout, split, epilogue
    ("gfx942", 5, 40, 200, "bf16", "bf16", "NT", 4, {}),
    ("gfx942", 3, 33, 100, "fp16", "fp16", "NN", 2, {"alpha": 0.5, "bias": "n"}),
    ("gfx942", 4, 20, 150, "int8", "int32", "NT", 2, {"beta": 2.0, "c": "int32"}),
    ("gfx942", 6, 24, 129, "fp8", "bf16", "TN", 2, {"activation": "relu"}),
    ("gfx950", 7, 17, 190, "bf16", "fp32", "TT", 2, {"beta": -1.0, "c": "fp32", "bias": "m"}),
    ("gfx950", 2, 48, 300, "fp8_e4m3", "fp16", "NT", 2, {"activation": "gelu"}),
    ("gfx950", 9, 16, 70, "int8", "int32", "NN", 2, {"bias": "n"}),
]


@pytest.mark.parametrize("arch, m, n, k, a, d, layout, split, epi", CASES)
def test_split_k_equals_numpy(arch, m, n, k, a, d, layout, split, epi):
    p = GemmProblem.make(m, n, k, a, d=d, layout=layout, **epi)
    A, B, C, bias = operands(p, seed=m * 7 + k)
    call = prepare(A, B, C, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias, activation=p.activation)
    assert np.isnan(call.d).all() or (call.d == -1).all()          # D poisoned by prepare
    out = split_matmul(call, arch, split, strict=True)
    check(p, out, reference(p, A, B, C, bias))


def test_reduction_is_deterministic_and_reads_every_partial():
    p = GemmProblem.make(4, 32, 256, "bf16", d="fp32", layout="NT")
    A, B, C, bias = operands(p, seed=3)
    outs = []
    for _ in range(2):
        call = prepare(A, B, out_dtype=np.float32)
        outs.append(split_matmul(call, "gfx942", 4).copy())
    assert outs[0].tobytes() == outs[1].tobytes()
    check(p, outs[0], reference(p, A, B, C, bias))


def test_partial_contract_and_refusals():
    p = GemmProblem.make(8, 64, 129, "bf16", layout="NT")
    k = partial_kernel(p, "gfx942")
    c = Contract.load(k.contract)
    assert c.split_k["partials"] and c.split_k["power_of_two"]
    assert c.data["launch"]["grid"][2] == "split_k"
    assert c.data["operation"]["k_split"] == "partial"
    assert any(arg["role"] == "split_k" for arg in c.args)
    ok, why = c.admits(p)                                  # the partial kernel never runs a plain problem
    assert not ok
    ok, why = c.admits(GemmProblem.make(8, 64, 129, "bf16", d="fp32", layout="NT"))
    assert not ok and "k_split" in why
    assert c.admits(partial_problem(p))[0]
    assert "empty" in split_refusal(p, k.config.depth_k, 4)
    assert split_refusal(p, k.config.depth_k, 3) and max_split(129, 64) == 2
    with pytest.raises(IRError, match="raw partial sums"):
        GemmProblem.make(8, 64, 129, "bf16", layout="NT", bias="n", k_split="partial")
    with pytest.raises(IRError, match="batch"):
        partial_problem(GemmProblem.make(8, 64, 129, "bf16", layout="NT", batch=2))
    call = prepare(*operands(p, 0)[:2])
    with pytest.raises(MatmulError, match="empty"):
        split_matmul(call, "gfx942", 4)


LLVM_CASES = [CASES[0], CASES[2], CASES[4]]   # bf16 / int8 on gfx942, bf16 TT + C + bias on gfx950


@pytest.mark.parametrize("arch, m, n, k, a, d, layout, split, epi", LLVM_CASES)
def test_llvm_split_k_equals_numpy_and_direct(arch, m, n, k, a, d, layout, split, epi):
    """The LLVM generator's partial kernel (codegen/llvm/ir_builder.py `_k_range`): the same K ranges and
    workspace as the direct generator's; = numpy in strict emulation, and = the direct generator's result (bit
    for bit for int8; within the dtype's tolerance otherwise: the two tile K differently, so the fp32 sums differ
    in order)."""
    p = GemmProblem.make(m, n, k, a, d=d, layout=layout, **epi)
    A, B, C, bias = operands(p, seed=m * 7 + k + 1)
    outs = {}
    for gen in ("llvm", "asm"):
        call = prepare(A, B, C, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias,
                       activation=p.activation)
        outs[gen] = split_matmul(call, arch, split, strict=True, generator=gen).copy()
    check(p, outs["llvm"], reference(p, A, B, C, bias))
    if p.acc.kind == "int":
        assert outs["llvm"].tobytes() == outs["asm"].tobytes()
    else:
        check(p, outs["llvm"], outs["asm"].astype(np.float64))
    c = Contract.load(partial_kernel(p, arch, generator="llvm").contract)
    assert c.data["identity"]["generator"] == "jitgemm-llvm" and c.split_k["partials"]
