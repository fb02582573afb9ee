"""jitgemm.grouped_matmul (codegen/gemm_group.py): one launch over MoE groups given by an offsets array, = numpy
per group (float64, tolerance per dtype) in strict emulation on gfx942 and gfx950, empty groups included; the
contract describes the group table; bad tables are one-line errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem, IRError

import jitgemm
from jitgemm.api import MatmulError
from jitgemm.contract import Contract
from jitgemm.grouped import group_problem, grouped_reference
from jitgemm.reference import check

DT = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "fp8": ml_dtypes.float8_e4m3fnuz,
      "fp8_e4m3": ml_dtypes.float8_e4m3fn, "int8": np.int8}
CASES = [  # arch, a dtype, out, sizes, K, N, B transposed, bias, activation
    ("gfx942", "bf16", np.float32, [5, 0, 17, 3], 40, 24, False, False, "none"),
    ("gfx942", "fp16", np.float16, [0, 9, 0], 33, 20, True, True, "relu"),
    ("gfx942", "fp8", ml_dtypes.bfloat16, [4, 12], 64, 16, True, False, "none"),
    ("gfx942", "int8", np.int32, [3, 1, 6], 48, 16, False, True, "none"),
    ("gfx950", "bf16", ml_dtypes.bfloat16, [7, 2, 0, 11], 50, 32, False, False, "gelu"),
    ("gfx950", "fp8_e4m3", np.float32, [6, 0, 5], 64, 16, True, False, "none"),
]


def _operands(dt, sizes, k, n, transposed, seed):
    rng = np.random.default_rng(seed)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    if dt == "int8":
        a = rng.integers(-8, 8, (off[-1], k)).astype(np.int8)
        b = rng.integers(-8, 8, (len(sizes), n, k) if transposed else (len(sizes), k, n)).astype(np.int8)
    else:
        a = rng.standard_normal((off[-1], k)).astype(DT[dt])
        b = rng.standard_normal((len(sizes), n, k) if transposed else (len(sizes), k, n)).astype(DT[dt])
    if transposed:
        b = b.transpose(0, 2, 1)
    return a, b, off


@pytest.mark.parametrize("arch, dt, out, sizes, k, n, transposed, with_bias, act", CASES)
def test_grouped_equals_numpy(arch, dt, out, sizes, k, n, transposed, with_bias, act):
    a, b, off = _operands(dt, sizes, k, n, transposed, seed=k + n)
    bias = None
    if with_bias:
        bias = (np.arange(n) - 3).astype(np.int32 if dt == "int8" else np.float32)
    gen = "auto" if (arch, dt) == ("gfx950", "bf16") else "asm"      # auto: the selector's choice (the user's path)
    d = jitgemm.grouped_matmul(a, b, off, out_dtype=out, bias=bias, activation=act, arch=arch, backend="emu",
                               strict=True, generator=gen)
    p, _, _ = group_problem(a, b, off, out_dtype=out, bias=bias, activation=act)
    ref = grouped_reference(a, b, off, bias=bias, activation=act)
    assert d.shape == ref.shape
    check(GemmProblem.make(max(1, d.shape[0]), n, k, p.a, p.b, p.d, activation=act), d, ref)


def test_grouped_contract_describes_the_group_table():
    a, b, off = _operands("bf16", [3, 0, 4], 32, 16, False, seed=1)
    p, _, _ = group_problem(a, b, off)
    from jitgemm.kernel import compile as compile_config

    c = Contract.load(compile_config(p, None, arch="gfx942", generator="asm").contract)
    assert c.data["operation"]["grouped"] is True
    assert [x for x in c.args if x["role"] == "group_offsets"][0]["type"] == "ptr"
    ok, why = c.admits(GemmProblem.make(4, 16, 32, "bf16", d="bf16", batch=3))
    assert not ok and "grouped" in why


@pytest.mark.parametrize("offsets, match", [([0, 3, 2, 7], "never decrease"), ([1, 3, 5, 7], "start at 0"),
                                            ([0, 3, 7], "G \\+ 1"), ([0, 3, 5, 6], "end at")])
def test_bad_group_tables(offsets, match):
    a, b, _ = _operands("bf16", [3, 2, 2], 32, 16, False, seed=2)
    with pytest.raises(MatmulError, match=match):
        jitgemm.grouped_matmul(a, b, np.array(offsets, np.int32), backend="emu")


def test_grouped_refuses_transposed_a():
    with pytest.raises(IRError, match="stacked row-major"):
        GemmProblem.make(4, 16, 32, "bf16", layout="TN", batch=2, grouped=True)


def test_triton_grouped_peer_equals_numpy():
    """The peer explain shows (triton_gemm.grouped_gemm_kernel), run in the emulator: = numpy, empty group too."""
    from tests.fixtures.oracles import require_module

    require_module("triton")          # skips on a user's machine without Triton, fails under CI=true
    from jitgemm.codegen.codeobj.reader import read

    from jitgemm.emu import emulate
    from jitgemm.suppliers import TritonSupplier

    a, b, off = _operands("bf16", [5, 0, 9], 40, 24, False, seed=5)
    p, off32, _ = group_problem(a, b, off, out_dtype=np.float32)
    blob, name, info = TritonSupplier().compile_grouped(p, "gfx942", (32, 64, 32))
    d = np.full((a.shape[0], 24), np.nan, np.float32)
    kernel = read(blob).kernels[0]
    explicit = [x for x in kernel.args if not str(x.get(".value_kind")).startswith("hidden_")]
    args = [a.reshape(-1), np.ascontiguousarray(b).reshape(-1), d.reshape(-1), off32, 24, 40, 40, 40 * 24, 24, 1,
            24]
    emulate(blob, kernel.name, grid=(1, 1, 3), block=64 * info["num_warps"], args=args + [None] *
            (len(explicit) - len(args)), lds_bytes=info["shared"])
    check(GemmProblem.make(14, 24, 40, "bf16", d="fp32"), d, grouped_reference(a, b, off))


EPI_CASES = [  # arch, generator, a dtype, out, sizes, K, N, B transposed, C dtype, beta, bias (per row/col/group), act
    ("gfx942", "llvm", "bf16", np.float32, [5, 0, 17, 3], 40, 24, False, None, 0.0, "group", "none"),
    ("gfx942", "llvm", "int8", np.int32, [3, 1, 6], 48, 16, True, np.int32, 2.0, "row", "relu"),
    ("gfx942", "asm", "fp16", np.float16, [0, 9, 70], 33, 20, True, np.float16, -0.5, "row", "gelu"),
    ("gfx942", "asm", "int8", np.int32, [4, 0, 7], 32, 24, False, None, 0.0, "group", "none"),
    ("gfx950", "llvm", "bf16", ml_dtypes.bfloat16, [7, 2, 0, 11], 50, 32, False, np.float32, 0.5, "row", "gelu"),
    ("gfx950", "asm", "fp8_e4m3", np.float32, [6, 0, 5], 64, 16, True, np.float32, 1.0, "col", "none"),
]
BIAS_SHAPE = {"row": lambda rows, groups, n: (rows, 1), "col": lambda rows, groups, n: (n,),
              "group": lambda rows, groups, n: (groups, n)}


@pytest.mark.parametrize("arch, gen, dt, out, sizes, k, n, transposed, c_dt, beta, bias_kind, act", EPI_CASES)
def test_grouped_c_beta_and_biases_equal_numpy(arch, gen, dt, out, sizes, k, n, transposed, c_dt, beta, bias_kind,
                                                act):
    """Both generators' grouped kernels with C/beta (stacked like A), a per-row bias ([sum M, 1]: each group's rows
    read their own entries) or a column bias per group ([G, N], MoE experts' biases), empty groups and M tails (a
    group of 70 rows: two 64-row tiles)."""
    a, b, off = _operands(dt, sizes, k, n, transposed, seed=k * n + len(sizes))
    rng = np.random.default_rng(k)
    rows = a.shape[0]
    integer = dt == "int8"
    c = None if c_dt is None else (rng.integers(-9, 9, (rows, n)) if integer else
                                   rng.standard_normal((rows, n))).astype(c_dt)
    shape = BIAS_SHAPE[bias_kind](rows, len(sizes), n)
    bias = (rng.integers(-20, 20, shape) if integer else rng.standard_normal(shape)).astype(
        np.int32 if integer else np.float32)
    d = jitgemm.grouped_matmul(a, b, off, c=c, beta=beta, out_dtype=out, bias=bias, activation=act, arch=arch,
                               backend="emu", strict=True, generator=gen)
    ref = grouped_reference(a, b, off, c=c, beta=beta, bias=bias, activation=act)
    p, _, _ = group_problem(a, b, off, out_dtype=out, bias=bias, activation=act, c=c, beta=beta)
    assert p.bias == ("m" if bias_kind == "row" else "n")
    check(GemmProblem.make(max(1, rows), n, k, p.a, p.b, p.d, activation=act), d, ref)
    if bias_kind == "group":          # the groups' biases differ: reading group 0's for every group fails
        assert not np.allclose(ref, grouped_reference(a, b, off, c=c, beta=beta, bias=np.repeat(bias[:1], len(
            sizes), 0), activation=act))


def test_grouped_generators_agree_and_selector_ranks_three():
    """The direct and LLVM grouped kernels give the same bits (same MFMAs over the same K order, same epilogue);
    the selector ranks both generators' grouped kernels and Triton's peer, and `explain` shows the ranking."""
    a, b, off = _operands("bf16", [9, 0, 4], 64, 32, False, seed=11)
    outs = [jitgemm.grouped_matmul(a, b, off, out_dtype=np.float32, backend="emu", strict=True, generator=g)
            for g in ("asm", "llvm")]
    check(GemmProblem.make(9, 32, 64, "bf16", d="fp32"), outs[1], outs[0].astype(np.float64))
    p, _, _ = group_problem(a, b, off, out_dtype=np.float32)
    text = jitgemm.explain(p, arch="gfx942")
    kept = [line.split()[1] for line in text.splitlines() if " kept " in line]
    assert "jitgemm-asm" in kept and "jitgemm-llvm" in kept, text
    from tests.fixtures.oracles import require_module

    require_module("triton")
    assert "triton" in kept, text
    with pytest.raises(MatmulError, match="generator="):
        jitgemm.grouped_matmul(a, b, off, generator="gcc", backend="emu")


def test_triton_grouped_candidate_launches_through_its_contract():
    """Triton's grouped candidate (the selector's, with the contract TritonSupplier describes) launched by
    jitgemm.api.launch from the grouped call's argument roles: = numpy, empty group too; it refuses C and bias
    by legality."""
    from tests.fixtures.oracles import require_module

    require_module("triton")
    from jitgemm.api import GemmCall, launch
    from jitgemm.suppliers import TritonSupplier

    a, b, off = _operands("bf16", [5, 0, 9], 40, 24, False, seed=5)
    p, off32, _ = group_problem(a, b, off, out_dtype=np.float32)
    (cand,) = TritonSupplier(scope="mx").candidates(p, "gfx942")
    blob, name = cand.load()
    d = np.full((a.shape[0], 24), np.nan, np.float32)
    values = {"a": a.reshape(-1), "b": np.ascontiguousarray(b).reshape(-1), "c": None, "d": d.reshape(-1),
              "bias": None, "m": p.m, "n": 24, "k": 40, "batch": 3, "lda": 40, "ldb": 24, "ldc": 24, "ldd": 24,
              "stride_a": 0, "stride_b": 40 * 24, "stride_c": 0, "stride_d": 0, "alpha": 1.0, "beta": 0.0,
              "group_offsets": off32}
    launch(GemmCall(p, values, d, {x: 256 for x in "abd"}), blob, name, cand.contract, backend="emu")
    check(GemmProblem.make(14, 24, 40, "bf16", d="fp32"), d, grouped_reference(a, b, off))
    biased, _, _ = group_problem(a, b, off, out_dtype=np.float32, bias=np.zeros(24, np.float32))
    assert not cand.contract.admits(biased)[0]
