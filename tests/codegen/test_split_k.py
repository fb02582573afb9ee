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
from jitgemm.contract import Contract, evaluate_formula
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
    assert c.data["launch"]["grid"][2] == "batch*split_k" and c.grid(8, 64, 129, 3, 4)[2] == 12
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
        partial_problem(GemmProblem.make(8, 64, 129, "bf16", layout="NT", batch=2), "streamk")
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


ATOMIC_CASES = [  # arch, m, n, k, a, d, layout, split
    ("gfx942", 5, 40, 200, "bf16", "fp32", "NT", 4),
    ("gfx942", 4, 20, 150, "int8", "int32", "NN", 2),
    ("gfx950", 7, 17, 190, "fp16", "fp32", "TT", 2),
]


@pytest.mark.parametrize("arch, m, n, k, a, d, layout, split", ATOMIC_CASES)
def test_atomic_split_k_equals_numpy(arch, m, n, k, a, d, layout, split):
    """Atomic split-K: each K range adds its raw sums into D (buffer_atomic_add_f32 / buffer_atomic_add) after the
    launcher zeroes D (contract launch.split_k.zero_output). fp32 sums land in any order on hardware: the
    tolerance is `check`'s fp32 summation bound (per-dtype rounding + K * 2^-24 * sum |a*b|), which covers every
    order of split_k - 1 extra additions; int32 is exact."""
    p = GemmProblem.make(m, n, k, a, d=d, layout=layout)
    A, B, _C, _bias = operands(p, seed=k + split)
    call = prepare(A, B, out_dtype=p.d.numpy)
    assert np.isnan(call.d).all() or (call.d == -1).all()          # poisoned: the zeroing is the launcher's
    out = split_matmul(call, arch, split, strict=True, mode="atomic")
    check(p, out, reference(p, A, B, None, None))


def test_atomic_contract_and_refusals():
    p = GemmProblem.make(8, 64, 129, "bf16", d="fp32", layout="NT")
    k = partial_kernel(p, "gfx942", mode="atomic")
    c = Contract.load(k.contract)
    assert c.split_k["zero_output"] and c.split_k["atomic"] == "buffer_atomic_add_f32"
    assert c.split_k["deterministic"] is False and "partials" not in c.split_k
    assert c.data["operation"]["k_split"] == "atomic" and c.data["launch"]["grid"][2] == "batch*split_k"
    assert "buffer_atomic_add_f32" in k.asm and "buffer_store_dword" not in k.asm
    assert Contract.load(partial_kernel(GemmProblem.make(8, 64, 129, "int8", layout="NT"), "gfx942",
                                        mode="atomic").contract).split_k["deterministic"] is True
    bf16_out = prepare(*operands(GemmProblem.make(8, 64, 129, "bf16", layout="NT"), 0)[:2])
    with pytest.raises(MatmulError, match="split_mode='atomic' adds raw fp32 sums"):
        split_matmul(bf16_out, "gfx942", 2, mode="atomic")
    with pytest.raises(MatmulError, match="split_mode='many'"):
        split_matmul(bf16_out, "gfx942", 2, mode="many")


STREAMK_CASES = [  # arch, m, n, k, a, d, layout, workgroups, epilogue
    ("gfx942", 5, 40, 200, "bf16", "bf16", "NT", 6, {}),                            # 1 tile, 4 slots
    ("gfx942", 70, 33, 300, "fp16", "fp16", "NN", 5, {"bias": "n"}),                # a workgroup spans 2 tiles
    ("gfx942", 130, 70, 100, "int8", "int32", "NT", 4, {"beta": 2.0, "c": "int32"}),  # whole tiles between
    ("gfx950", 9, 48, 300, "fp8_e4m3", "fp16", "TN", 7, {"activation": "gelu"}),
    ("gfx950", 3, 16, 64, "bf16", "fp32", "TT", 9, {"alpha": 0.5}),                 # more workgroups than steps
]


@pytest.mark.parametrize("arch, m, n, k, a, d, layout, g, epi", STREAMK_CASES)
def test_streamk_equals_numpy(arch, m, n, k, a, d, layout, g, epi):
    """Stream-K (codegen/gemm_streamk.py): g workgroups, equal shares of tiles x K steps, segments into a
    NaN-poisoned slot workspace, the reduction sums each tile's slots; M/N tails and K not a multiple of
    depth_k, = numpy in strict emulation."""
    p = GemmProblem.make(m, n, k, a, d=d, layout=layout, **epi)
    A, B, C, bias = operands(p, seed=m + n + g)
    call = prepare(A, B, C, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias, activation=p.activation)
    out = split_matmul(call, arch, g, strict=True, mode="streamk")
    check(p, out, reference(p, A, B, C, bias))


def test_streamk_plan_contract_and_determinism():
    from jitgemm.codegen.gemm_streamk import plan

    sk = plan(70, 33, 300, 64, 64, 32, 5)       # 2 tiles x 10 steps over 5 workgroups of 4
    assert (sk["iters"], sk["tiles"], sk["share"], sk["first"], sk["count"], sk["slots"]) == \
        (10, 2, 4, [0, 2], [3, 3], 3)
    p = GemmProblem.make(70, 33, 300, "bf16", d="fp32", layout="NT")
    k = partial_kernel(p, "gfx942", mode="streamk")
    c = Contract.load(k.contract)
    assert c.data["operation"]["k_split"] == "streamk" and c.grid(70, 33, 300, split_k=5) == (5, 1, 1)
    assert c.split_k["stream_k"]["tile_m"] == k.config.tile_m and c.split_refusal(300, 5) is None
    assert c.data["workspace"]["type"] == "stream_k_with_reduction"
    cfg = k.config
    bound = plan(70, 33, 300, cfg.tile_m, cfg.tile_n, cfg.depth_k, 5)["slots"]
    env = {"m": 70, "n": 33, "k": 300, "batch": 1, "split_k": 5}
    assert evaluate_formula(c.split_k["stream_k"]["slots"], env) >= bound
    A, B, _C, _bias = operands(p, seed=9)
    runs = []
    for _ in range(2):
        call = prepare(A, B, out_dtype=np.float32)
        runs.append(split_matmul(call, "gfx942", 5, mode="streamk").copy())
    assert runs[0].tobytes() == runs[1].tobytes()
    check(p, runs[0], reference(p, A, B, None, None))
    with pytest.raises(MatmulError, match="stream-K workgroups=0"):
        split_matmul(prepare(A, B, out_dtype=np.float32), "gfx942", 0, mode="streamk")


SCALED_CASES = [  # mode, arch, a, b, d, layout, split mode, count
    ("tensor", "gfx942", "int8", "int8", "fp32", "TN", "partial", 2),
    ("rowcol", "gfx942", "fp8", "bf8", "fp16", "NN", "streamk", 5),
    ("tensor", "gfx950", "fp8_e4m3", "fp8_e5m2", "bf16", "NT", "streamk", 3),
    ("rowcol", "gfx950", "int8", "int8", "bf16", "NT", "partial", 2),
]


@pytest.mark.parametrize("mode, arch, a, b, d, layout, how, count", SCALED_CASES)
def test_scaled_split_k_equals_numpy(mode, arch, a, b, d, layout, how, count):
    """tensor / rowcol fp32 scales with split-K and stream-K: unscaled partials (int32 for int8, summed exactly),
    the scales applied once in the reduction, then bias; NaN / inf / zero scales where rowcol has them. int8: the
    same bits as the unsplit kernel (integer sums are exact in any grouping)."""
    from jitgemm.api import launch
    from jitgemm.kernel import compile as compile_kernel
    from jitgemm.reference import scale_operands

    p = GemmProblem.make(40, 150, 300, a, b, d, layout=layout, scale_mode=mode, bias="n")
    x, y, _, bias = operands(p, seed=13)
    sa, sb = scale_operands(p, seed=13)
    if mode == "rowcol":
        sa[3, 0], sb[0, 5], sb[0, 6] = np.nan, np.inf, 0.0
    ref = reference(p, x, y, None, bias, sa, sb)
    call = prepare(x, y, out_dtype=p.d.numpy, bias=bias, scales=(sa, sb, mode))
    out = split_matmul(call, arch, count, strict=True, mode=how)
    check(p, out, ref)
    if a == "int8":
        kernel = compile_kernel(p, arch=arch, generator="asm", use_disk_cache=False)
        whole = launch(prepare(x, y, out_dtype=p.d.numpy, bias=bias, scales=(sa, sb, mode)), kernel.code_object,
                       kernel.name, Contract.load(kernel.contract))
        assert np.array_equal(whole.view(f"u{whole.itemsize}"), out.view(f"u{out.itemsize}"), equal_nan=True)


BLOCK_CASES = [  # arch, a, d, layout, scale orders, split mode, count
    ("gfx942", "fp8", "bf16", "NT", {"b_scale_order": "col"}, "partial", 2),
    ("gfx942", "int8", "fp32", "NN", {"a_scale_order": "col"}, "streamk", 5),
    ("gfx950", "fp8_e4m3", "fp16", "NT", {}, "partial", 2),
]


@pytest.mark.parametrize("arch, a, d, layout, orders, how, count", BLOCK_CASES)
def test_block_scaled_split_k_equals_numpy(arch, a, d, layout, orders, how, count):
    """Block scales (A 1x128, B 128x128, fp32; row- or column-major): each K range or stream-K segment starts its
    scale arrays at its first 128-block and scales its blocks into fp32 sums as the unsplit kernel does; the
    reduction sums them (no scales) and adds the bias. NaN / inf / zero scales, K and N tails of the blocks."""
    from jitgemm.reference import scale_operands

    p = GemmProblem.make(40, 150, 300, a, a, d, layout=layout, scale_mode="block", bias="n", **orders)
    x, y, _, bias = operands(p, seed=17)
    sa, sb = scale_operands(p, seed=17)
    sa[3, 1], sb[1, 0], sa[5, 2] = np.nan, np.inf, 0.0
    sa = np.ascontiguousarray(sa) if p.a_scale_order == "row" else np.ascontiguousarray(sa.T).T
    sb = np.ascontiguousarray(sb) if p.b_scale_order == "row" else np.ascontiguousarray(sb.T).T
    ref = reference(p, x, y, None, bias, sa, sb)
    assert np.isnan(ref).any() and np.isinf(ref).any()
    call = prepare(x, y, out_dtype=p.d.numpy, bias=bias, scales=(sa, sb, "block", orders and
                                                                 {k[0]: v for k, v in orders.items()}))
    check(p, split_matmul(call, arch, count, strict=True, mode=how), ref)
    q = partial_problem(p)
    assert q.scale_mode == "block" and q.d.name == "fp32" and q.bias == "none"


def test_preshuffled_mx_split_is_refused():
    p = GemmProblem.make(40, 48, 384, "fp8_e5m2", "fp8_e4m3", a_scale="plain", b_scale="shuffled",
                         b_preshuffle="16x16")
    with pytest.raises(IRError, match="pre-shuffled"):
        partial_problem(p)


MX_CASES = [  # a, b, d, a_scale, b_scale, b_preshuffle, k, split mode, count
    ("fp8_e4m3", "fp4", "fp32", "plain", "plain", "none", 300, "partial", 2),
    ("fp4", "fp6_e2m3", "bf16", "shuffled", "shuffled", "none", 300, "streamk", 3),
    ("fp8_e5m2", "fp8_e4m3", "fp16", "plain", "shuffled", "none", 300, "atomic", 2),
]


@pytest.mark.parametrize("a, b, d, sa, sb, pre, k, how, count", MX_CASES)
def test_mx_split_k_equals_numpy(a, b, d, sa, sb, pre, k, how, count):
    """MX (gfx950, E8M0 block scales inside the MFMAs): each K range / stream-K segment starts its operands and
    scale arrays at its first K tile (plain and shuffled scales, pre-shuffled B), writes fp32 sums; the reduction
    adds them and applies the epilogue. Operands with 2^-127 / 2^127 / NaN scales and garbage past K
    (tests/fixtures/mx_cases.py), = numpy in strict emulation."""
    from jitgemm.api import GemmCall
    from tests.fixtures.mx_cases import check_mx, make_operands

    p = GemmProblem.make(40, 48, k, a, b, d=d, a_scale=sa, b_scale=sb, b_preshuffle=pre)
    if how == "atomic":         # raw fp32 sums added into D: fp32 out
        p = GemmProblem.make(40, 48, k, a, b, d="fp32", a_scale=sa, b_scale=sb, b_preshuffle=pre)
    ops = make_operands(p, seed=k + count)
    call = GemmCall(p, ops.values, ops.d, {"a": 16, "b": 16, "c": 16, "bias": 16})
    check_mx(p, split_matmul(call, "gfx950", count, strict=True, mode=how), ops)
