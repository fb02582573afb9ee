"""The direct-assembly generator end to end: compile, run in the emulator, compare with numpy (float64).

The emulator is trusted because it runs Triton's and clang's kernels correctly (tests/test_emu_*); these
tests check the generator against it on every dtype, layout, several tiles, ragged sizes and epilogues.
Tolerances: tests/gemm_cases.OUT_RTOL per output dtype."""

from __future__ import annotations

import pytest

import jitgemm
from codegen.gemm_ir import GemmConfig, GemmProblem
from jitgemm.reference import check, operands, reference


def run(problem: GemmProblem, config: GemmConfig | None = None, seed: int = 0):
    a, b, c, bias = operands(problem, seed)
    if config is not None:
        jitgemm.compile(problem, config)       # the explicit config is then what matmul's compile finds
    d = jitgemm.matmul(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                       activation=problem.activation, backend="emu")
    check(problem, d, reference(problem, a, b, c, bias))
    return d


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d", [("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp8", "fp32"),
                                  ("bf8", "bf16"), ("int8", "int32")])
def test_dtypes_and_layouts_ragged(a, d, layout):
    run(GemmProblem.make(17, 33, 65, a, d=d, layout=layout))


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (127, 255, 64), (96, 64, 256)])
def test_sizes(m, n, k):
    run(GemmProblem.make(m, n, k, "bf16", layout="NT"))


def test_vector_loads_all_layouts():
    for layout in ("NN", "NT", "TN", "TT"):
        p = GemmProblem.make(64, 64, 64, "fp16", layout=layout)
        kernel = jitgemm.compile(p)
        assert kernel.config.vec_a > 1 and kernel.config.vec_b > 1, kernel.config
        run(p)


@pytest.mark.parametrize("config", [
    GemmConfig(32, 32, 16, 1, 1, "V_MFMA_F32_32X32X8_BF16"),
    GemmConfig(64, 32, 32, 2, 1, "V_MFMA_F32_16X16X16_BF16", lds_pad=4, prefetch=2),
    GemmConfig(128, 64, 16, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2),
])
def test_tiles(config):
    run(GemmProblem.make(70, 65, 40, "bf16", layout="NN"), config)


@pytest.mark.parametrize("kw", [
    dict(alpha=0.5),
    dict(c="fp32", beta=-1.5, alpha=2.0),
    dict(bias="m"),
    dict(bias="n", activation="relu"),
    dict(activation="gelu"),
    dict(c="fp32", beta=0.25, bias="n", activation="gelu", alpha=0.75),
])
def test_epilogues(kw):
    run(GemmProblem.make(33, 40, 24, "fp16", d="fp32", layout="NT", **kw))


@pytest.mark.parametrize("bias", ["none", "m", "n"])
def test_int8_epilogue(bias):
    run(GemmProblem.make(20, 36, 50, "int8", c="int32", beta=2.0, alpha=3.0, bias=bias, activation="relu"))


def test_batched():
    run(GemmProblem.make(20, 24, 40, "bf16", layout="TN", batch=3))
