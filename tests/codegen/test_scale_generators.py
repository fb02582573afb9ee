"""Each scale mode x target x generator = the float64 numpy reference in the (strict) emulator: ragged M, N and
K (K and N tails of the 128-blocks), int8 and fp8 of each target's flavour, every float output, and NaN, infinite
and zero scales; the direct and LLVM generators' results agree bit for bit (the same arithmetic in the same
order, codegen/gemm_asm_scale.py and codegen/llvm/scale_builder.py). Outputs start as NaN poison."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem, IRError

from jitgemm.api import launch, prepare
from jitgemm.contract import Contract
from jitgemm.kernel import compile as compile_kernel
from jitgemm.reference import check, operands, reference, scale_operands

# (mode, arch, A, B, D, layout, extra problem fields): one row per mode and target, dtypes and layouts rotated
CASES = [
    ("tensor", "gfx942", "int8", "int8", "fp32", "TN", {"alpha": 0.5}),
    ("tensor", "gfx950", "fp8_e4m3", "fp8_e5m2", "bf16", "NT", {}),
    ("rowcol", "gfx942", "fp8", "bf8", "fp16", "NN", {"activation": "gelu"}),
    ("rowcol", "gfx950", "int8", "int8", "bf16", "NT", {}),
    ("block", "gfx942", "fp8", "fp8", "bf16", "NT", {"b_scale_order": "col"}),
    ("block", "gfx942", "int8", "int8", "fp32", "NN", {"a_scale_order": "col"}),
    ("block", "gfx950", "fp8_e4m3", "fp8_e4m3", "fp16", "NT", {}),
]


def _stored(x: np.ndarray, order: str) -> np.ndarray:
    """A block-scale array as its producer stores it: row-major, or column-major (the transposed copy's view)."""
    return np.ascontiguousarray(x) if order == "row" else np.ascontiguousarray(x.T).T


def _poison_scales(p: GemmProblem, sa: np.ndarray, sb: np.ndarray) -> None:
    """NaN, infinite and zero scales where each mode has them."""
    if p.scale_mode == "rowcol":
        sa[3, 0], sb[0, 5], sb[0, 6] = np.nan, np.inf, 0.0
    elif p.scale_mode == "block":
        sa[3, 1], sb[1, 0], sa[5, 2] = np.nan, np.inf, 0.0     # sb[1, 0]: the N tail's block, K block 0


@pytest.mark.parametrize("mode, arch, a, b, d, layout, extra", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_generators_match_numpy_and_each_other(mode, arch, a, b, d, layout, extra):
    p = GemmProblem.make(40, 150, 300, a, b, d, layout=layout, scale_mode=mode, bias="n", **extra)
    x, y, _, bias = operands(p, seed=11)
    sa, sb = scale_operands(p, seed=11)
    if "activation" not in extra:
        _poison_scales(p, sa, sb)
    sa, sb = _stored(sa, p.a_scale_order), _stored(sb, p.b_scale_order)
    ref = reference(p, x, y, None, bias, sa, sb)
    if mode != "tensor" and "activation" not in extra:
        assert np.isnan(ref).any() and np.isinf(ref).any()      # (zero scales leave the bias alone)
    results = {}
    for generator in ("asm", "llvm"):
        kernel = compile_kernel(p, arch=arch, generator=generator, use_disk_cache=False)
        call = prepare(x, y, out_dtype=p.d.numpy, bias=bias, scales=(sa, sb, mode), alpha=p.alpha,
                       activation=p.activation)
        assert call.problem.kernel_class() == p.kernel_class()
        out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu",
                     strict=True)
        check(p, out, ref)
        results[generator] = out.view(np.uint8 if out.itemsize == 1 else f"u{out.itemsize}")
    assert np.array_equal(results["asm"], results["llvm"])       # gelu too (tests/codegen/test_gelu_generators.py)


@pytest.mark.parametrize("value", [0.0, np.inf, np.nan])
def test_tensor_special_scales(value):
    p = GemmProblem.make(33, 20, 40, "fp8", d="fp32", scale_mode="tensor")
    x, y, _, _ = operands(p, seed=2)
    kernel = compile_kernel(p, arch="gfx942", use_disk_cache=False)
    call = prepare(x, y, scales=(np.float32(value), np.float32(3.0), None))
    out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu")
    check(p, out, reference(p, x, y, None, None, np.float32(value), np.float32(3.0)))


def test_block_needs_the_scale_block_as_k_tile():
    p = GemmProblem.make(64, 64, 256, "fp8", d="bf16", scale_mode="block")
    kernel = compile_kernel(p, arch="gfx942", use_disk_cache=False)
    assert kernel.config.depth_k == 128
    from dataclasses import replace

    with pytest.raises(IRError, match="accepted: depth_k=128"):
        compile_kernel(p, replace(kernel.config, depth_k=64), arch="gfx942", use_disk_cache=False)


def test_batched_rowcol_shares_scales():
    p = GemmProblem.make(20, 24, 64, "int8", d="fp32", scale_mode="rowcol", batch=2)
    x, y, _, _ = operands(p, seed=5)
    sa, sb = scale_operands(p, seed=5)
    kernel = compile_kernel(p, arch="gfx942", use_disk_cache=False)
    call = prepare(x, y, scales=(sa, sb, None))
    out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu")
    check(call.problem, out, reference(call.problem, x, y, None, None, sa, sb))


@pytest.mark.parametrize("prefetch, buffers, k", [(1, 1, 300), (2, 1, 400), (1, 2, 300), (2, 2, 400)])
def test_block_flush_schedules(prefetch, buffers, k):
    """Block scales flushed right after each tile (prefetch=1, one LDS buffer) or ping-pong between two
    accumulator sets (a tile in flight), with an odd and an even number of K blocks (the last set differs)."""
    from dataclasses import replace

    p = GemmProblem.make(40, 72, k, "fp8", d="fp32", layout="TN", scale_mode="block", b_scale_order="col")
    base = compile_kernel(p, arch="gfx942", use_disk_cache=False).config
    config = replace(base, tile_m=64, tile_n=64, waves_m=2, waves_n=2, prefetch=prefetch, lds_buffers=buffers)
    kernel = compile_kernel(p, config, arch="gfx942", use_disk_cache=False)
    assert kernel.contract["tile"]["agprs"] == (16 if (prefetch, buffers) == (1, 1) else 32)   # accumulator sets
    x, y, _, _ = operands(p, seed=k)
    sa, sb = scale_operands(p, seed=k)
    sa[7, -1] = np.inf
    sb = np.ascontiguousarray(sb.T).T
    call = prepare(x, y, scales=(sa, sb, "block", {"b": "col"}))   # one row of B scales: either order
    out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu", strict=True)
    check(p, out, reference(p, x, y, None, None, sa, sb))


@pytest.mark.parametrize("mode", ["rowcol", "block"])
def test_scales_with_every_epilogue_feature(mode):
    """int8 with scales beside alpha, beta * C (fp16), a per-row bias, relu and a batch of 2: the kernel with the
    most SGPRs (seven buffer descriptors, twelve kernel-argument dwords more) still fits gfx9's SGPRs."""
    p = GemmProblem.make(50, 70, 260, "int8", d="bf16", c="fp16", beta=0.5, alpha=2.0, layout="NT", batch=2,
                         scale_mode=mode, activation="relu", bias="m")
    x, y, c, bias = operands(p, seed=9)
    sa, sb = scale_operands(p, seed=9)
    ref = reference(p, x, y, c, bias, sa, sb)
    for generator in ("asm", "llvm"):
        kernel = compile_kernel(p, arch="gfx950", generator=generator, use_disk_cache=False)
        call = prepare(x, y, c, alpha=2.0, beta=0.5, out_dtype=p.d.numpy, bias=bias, activation="relu",
                       scales=(sa, sb, mode))
        out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu",
                     strict=True)
        check(call.problem, out, ref)
