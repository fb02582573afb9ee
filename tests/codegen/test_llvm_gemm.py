"""The LLVM generator end to end: compile through llvmlite and LLVM's AMDGPU backend, run in the emulator,
compare with numpy (float64) and with the direct generator's kernel for the same config.

Both generators carry out the same operations in the same order (MFMA blocks in K order, then alpha,
beta*C by fma, bias, activation, rounding), so their outputs must be identical bit for bit; each must also
be within the output dtype's tolerance of the float64 reference (jitgemm.reference.OUT_RTOL: fp32 2^-20,
fp16 2^-10, bf16 2^-7 relative, plus 1e-6*K of the largest magnitude for fp32 summation; int32 exact).
Random inputs, fixed seeds; sizes stay small because the emulator runs every wave on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem

from jitgemm.contract import Contract
from jitgemm.reference import check, operands, reference
from tests.fixtures.oracles import require_module


@pytest.fixture(autouse=True, scope="module")
def _llvmlite():
    require_module("llvmlite")


def _run(problem: GemmProblem, blob: bytes, name: str, contract: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from jitgemm.api import launch, prepare

    a, b, c, bias = operands(problem, seed)
    call = prepare(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                   activation=problem.activation)
    assert call.problem.kernel_class() == problem.kernel_class(), "operands() made a different problem"
    d = launch(call, blob, name, Contract.load(contract), backend="emu", strict=True)
    return d, reference(problem, a, b, c, bias)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")


def both(problem: GemmProblem, config: GemmConfig | None = None, seed: int = 0) -> None:
    """LLVM kernel vs numpy, the direct kernel (same config) vs numpy, and the two against each other."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    llvm = compile_gemm_llvm(problem, config)
    direct = compile_gemm(problem, llvm.config)
    got, ref = _run(problem, llvm.code_object, llvm.name, llvm.contract, seed)
    check(problem, got, ref)
    theirs, _ = _run(problem, direct.code_object, direct.name, direct.contract, seed)
    try:
        check(problem, theirs, ref)
    except AssertionError as exc:
        raise AssertionError(f"the LLVM kernel matches numpy but the direct generator's does not: {exc}") from None
    same = _bits(got) == _bits(theirs)
    if not same.all():
        idx = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"{int((~same).sum())} elements differ between the generators; first at {idx}: "
                             f"llvm {got[idx]}, direct {theirs[idx]}")


DTYPES = [("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp8", "fp32"), ("bf8", "bf16"), ("int8", "int32")]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d", DTYPES, ids=[a for a, _ in DTYPES])
def test_dtypes_and_layouts_ragged(a, d, layout):
    both(GemmProblem.make(17, 33, 65, a, d=d, layout=layout), seed=sum(map(ord, a + layout)))


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d", [("fp16", "fp16"), ("fp8", "bf16")])
def test_vector_loads(a, d, layout):
    """64x64x64: the widest loads (8 or 16 bytes), including the scatter of a non-K-contiguous vector."""
    from jitgemm.codegen.llvm import compile_gemm_llvm

    problem = GemmProblem.make(64, 64, 64, a, d=d, layout=layout)
    config = compile_gemm_llvm(problem).config
    assert config.vec_a > 1 and config.vec_b > 1, config
    both(problem, config, seed=3)


@pytest.mark.parametrize("m, n, k, layout", [(1, 1, 1, "NN"), (127, 255, 64, "NT"), (96, 64, 256, "TN"),
                                             (1, 70, 33, "NT"), (45, 1, 20, "TN")])
def test_sizes(m, n, k, layout):
    both(GemmProblem.make(m, n, k, "bf16", layout=layout), seed=m + n + k)


@pytest.mark.parametrize("problem, config", [
    (GemmProblem.make(70, 65, 40, "bf16"), GemmConfig(32, 32, 16, 1, 1, "V_MFMA_F32_32X32X8_BF16")),
    (GemmProblem.make(70, 65, 40, "bf16", layout="TT"),
     GemmConfig(64, 32, 32, 2, 1, "V_MFMA_F32_16X16X16_BF16", lds_pad=4, prefetch=2)),
    (GemmProblem.make(70, 65, 40, "bf16", layout="NT"), GemmConfig(128, 64, 16, 2, 2, "V_MFMA_F32_32X32X8_BF16",
                                                                   prefetch=2)),
    (GemmProblem.make(130, 129, 72, "bf16", layout="NT"),       # the benchmark's tile: 16-byte loads
     GemmConfig(128, 128, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2, vec_a=8, vec_b=8)),
    (GemmProblem.make(45, 70, 21, "fp32", layout="TN"), GemmConfig(32, 64, 8, 1, 2, "V_MFMA_F32_16X16X4_F32",
                                                                   prefetch=2)),
    (GemmProblem.make(50, 40, 100, "fp8", d="fp32", layout="NT"),
     GemmConfig(32, 32, 64, 2, 2, "V_MFMA_F32_16X16X32_FP8_FP8", prefetch=2)),
    (GemmProblem.make(50, 40, 70, "fp8", "bf8", d="fp16", layout="NN"),
     GemmConfig(32, 32, 32, 1, 1, "V_MFMA_F32_32X32X16_FP8_BF8")),
    (GemmProblem.make(66, 66, 66, "int8", layout="TN"), GemmConfig(64, 64, 32, 1, 1, "V_MFMA_I32_32X32X16_I8")),
    (GemmProblem.make(40, 33, 80, "int8", layout="NT"), GemmConfig(32, 16, 64, 2, 1, "V_MFMA_I32_16X16X32_I8",
                                                                   lds_pad=8, prefetch=2)),
], ids=lambda x: f"{x.tile_m}x{x.tile_n}x{x.depth_k}-{x.mfma}-p{x.prefetch}" if isinstance(x, GemmConfig) else
   f"{x.a.name}-{x.layout}")
def test_tiles(problem, config):
    both(problem, config, seed=config.tile_m + config.depth_k)


@pytest.mark.parametrize("a, d, kw", [
    ("fp16", "fp32", dict(alpha=0.5)),
    ("fp16", "fp32", dict(c="fp32", beta=-1.5, alpha=2.0)),
    ("fp16", "fp32", dict(bias="m")),
    ("fp16", "fp32", dict(bias="n", activation="relu")),
    ("fp16", "fp32", dict(activation="gelu")),
    ("fp16", "fp32", dict(c="fp32", beta=0.25, bias="n", activation="gelu", alpha=0.75)),
    ("bf16", "bf16", dict(c="bf16", beta=0.5, bias="m", activation="gelu")),
    ("fp16", "fp16", dict(c="fp16", beta=2.0, alpha=-1.0, activation="relu")),
    ("fp8", "bf16", dict(c="fp32", beta=1.0, bias="n")),
    ("int8", "int32", dict(c="int32", beta=2.0, alpha=3.0, activation="relu")),
], ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else str(x))
def test_epilogues(a, d, kw):
    both(GemmProblem.make(33, 40, 24, a, d=d, layout="NT", **kw), seed=7)


def test_batched_with_leading_dimensions():
    both(GemmProblem.make(20, 24, 40, "bf16", layout="TN", batch=3), seed=11)
    both(GemmProblem.make(20, 24, 40, "fp16", d="fp32", layout="NN", batch=2, lda=48, ldb=32, c="fp32", beta=1.0,
                          ldc=30), seed=12)


def test_cli_run_with_llvm_generator(capsys):
    from jitgemm.cli import main

    code = main(["run", "--m", "40", "--n", "50", "--k", "70", "--dtype", "fp16", "--layout", "TN",
                 "--generator", "llvm", "--act", "relu"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "_llvm (jitgemm-llvm:llvm) on emu" in out
    err = float(out.split("max relative error vs numpy (float64): ")[1].split(";")[0])
    assert err < 2.0**-10
