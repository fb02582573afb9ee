"""jitgemm.matmul with split-K (jitgemm/split_k.py): forced split counts = numpy, the timing model's choice for
a decode shape, bad split arguments as one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm.api import MatmulError
from jitgemm.reference import check, operands, reference
from jitgemm.split_k import choose_split


@pytest.mark.parametrize("split", [2, 4])
def test_matmul_split_k_equals_numpy(split):
    p = GemmProblem.make(3, 24, 400, "fp16", d="fp16", layout="NN", beta=0.5, c="fp16", bias="n")
    a, b, c, bias = operands(p, seed=split)
    d = jitgemm.matmul(a, b, c, beta=p.beta, bias=bias, out_dtype=np.float16, backend="emu", split_k=split)
    check(p, d, reference(p, a, b, c, bias))


def test_decode_shape_model_prefers_split():
    p = GemmProblem.make(16, 4096, 8192, "bf16", layout="NT")
    choice = choose_split(p, "gfx942")
    assert choice.split_k > 1 and choice.us_split < 0.9 * choice.us_plain
    assert choice.us_split == pytest.approx(choice.us_partial + choice.us_reduce)
    small = choose_split(GemmProblem.make(17, 33, 65, "bf16", layout="NT"), "gfx942")
    assert small.split_k == 1


@pytest.mark.parametrize("bad", [0, -2, "many", True])
def test_bad_split_argument(bad):
    a = np.ones((4, 64), np.float16)
    with pytest.raises(MatmulError, match="split_k"):
        jitgemm.matmul(a, a.T.copy(), backend="emu", split_k=bad)


def test_split_refused_names_the_reason():
    a = np.ones((4, 65), np.float16)
    with pytest.raises(MatmulError, match="empty"):
        jitgemm.matmul(a, a.T.copy(), backend="emu", split_k=8)


def test_explain_has_the_split_k_and_grouped_clauses():
    decode = jitgemm.explain(GemmProblem.make(16, 4096, 8192, "bf16", layout="NT"))
    assert "split-K: yes, split_k=" in decode and "launch.split_k.partials" in decode
    big = jitgemm.explain(GemmProblem.make(128, 64, 64, "bf16", layout="NT"))
    assert "split-K: no (matmul split_k='auto' considers M <= 64" in big
    grouped = jitgemm.explain(GemmProblem.make(8, 64, 64, "bf16", batch=3, grouped=True))
    assert "operation.grouped" in grouped
    kept = [line.split()[1] for line in grouped.splitlines() if " kept " in line]
    assert "jitgemm-asm" in kept and "jitgemm-llvm" in kept, grouped      # both generators' grouped kernels
