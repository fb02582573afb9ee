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
    assert "stream-K candidate" in decode
    big = jitgemm.explain(GemmProblem.make(128, 64, 64, "bf16", layout="NT"))
    assert "split-K: no (matmul split_k='auto' considers M <= 64" in big
    grouped = jitgemm.explain(GemmProblem.make(8, 64, 64, "bf16", batch=3, grouped=True))
    assert "operation.grouped" in grouped
    kept = [line.split()[1] for line in grouped.splitlines() if " kept " in line]
    assert "jitgemm-asm" in kept and "jitgemm-llvm" in kept, grouped      # both generators' grouped kernels


def test_matmul_auto_splits_a_decode_shape_the_model_picks():
    """split_k="auto" on a decode shape (M <= 64, K >= 1024, one 64-wide N tile): the timing model picks a split,
    matmul launches the split-K partial kernel with that many K ranges (grid z) and the result = numpy."""
    p = GemmProblem.make(4, 64, 1024, "bf16", d="fp32", layout="NN")
    a, b, _c, _bias = operands(p, seed=26)
    want = choose_split(p, "gfx942")
    assert want.split_k > 1
    d = jitgemm.matmul(a, b, out_dtype=np.float32, backend="emu", split_k="auto")
    rec = jitgemm.last_launch()
    assert rec.grid[2] == want.split_k and "->fp32" in rec.problem
    check(p, d, reference(p, a, b, None, None))


def test_matmul_auto_keeps_one_launch_where_the_rule_declines():
    """K < 1024 is outside the decode rule: the chosen kernel runs once (grid z = 1), = numpy."""
    p = GemmProblem.make(5, 48, 320, "fp16", d="fp16", layout="NN")
    a, b, _c, _bias = operands(p, seed=27)
    d = jitgemm.matmul(a, b, out_dtype=np.float16, backend="emu", split_k="auto")
    assert jitgemm.last_launch().grid[2] == 1
    check(p, d, reference(p, a, b, None, None))


def test_matmul_split_modes_equal_numpy():
    """matmul(split_k=n, split_mode=...): stream-K with n workgroups (epilogue in the reduction) and atomic split-K
    (fp32 out, no epilogue), = numpy; a bad mode is a one-line error."""
    p = GemmProblem.make(6, 40, 260, "fp16", d="fp16", layout="NN", bias="n")
    a, b, _c, bias = operands(p, seed=31)
    d = jitgemm.matmul(a, b, bias=bias, out_dtype=np.float16, backend="emu", split_k=3, split_mode="streamk")
    assert jitgemm.last_launch().grid == (3, 1, 1)
    check(p, d, reference(p, a, b, None, bias))
    q = GemmProblem.make(6, 40, 260, "fp16", d="fp32", layout="NN")
    d = jitgemm.matmul(a, b, out_dtype=np.float32, backend="emu", split_k=2, split_mode="atomic")
    assert jitgemm.last_launch().grid[2] == 2
    check(q, d, reference(q, a, b, None, None))
    with pytest.raises(MatmulError, match="split_mode='sideways'"):
        jitgemm.matmul(a, b, backend="emu", split_k=2, split_mode="sideways")
    with pytest.raises(MatmulError, match="split_mode='atomic' adds raw fp32 sums"):
        jitgemm.matmul(a, b, bias=bias, out_dtype=np.float32, backend="emu", split_k=2, split_mode="atomic")


def test_choose_split_ranks_streamk():
    """The stream-K candidate is predicted (segments + reduction) beside the power-of-two splits; choose_split
    returns the faster, naming its mode."""
    from jitgemm.split_k import streamk_choice

    p = GemmProblem.make(16, 4096, 8192, "bf16", layout="NT")
    best = choose_split(p, "gfx942")
    sk = streamk_choice(p, "gfx942", None, best.us_plain, margin=float("inf"))
    assert sk.mode == "streamk" and sk.split_k % 304 == 0 and sk.us_split == pytest.approx(sk.us_partial + sk.us_reduce)
    ranges = choose_split(p, "gfx942", streamk=False)
    want = sk if sk.us_split < min(ranges.us_split, 0.9 * ranges.us_plain) else ranges
    assert (best.mode, best.split_k, best.us_split) == (want.mode, want.split_k, want.us_split)


def test_scaled_matmul_split_k():
    """scaled_matmul(split_k=n): rowcol int8 with per-token/per-channel scales through split-K = numpy."""
    from jitgemm.reference import scale_operands

    p = GemmProblem.make(6, 40, 300, "int8", "int8", "bf16", layout="NT", scale_mode="rowcol")
    a, b, _c, _bias = operands(p, seed=43)
    sa, sb = scale_operands(p, seed=43)
    d = jitgemm.scaled_matmul(a, b, sa, sb, out_dtype="bf16", backend="emu", split_k=2)
    assert jitgemm.last_launch().grid[2] == 2
    check(p, d, reference(p, a, b, None, None, sa, sb))


def test_cli_run_split_options(capsys):
    """jitgemm run --split-k N --split-mode M: the split kernels run (grid says so) and = numpy (exit 0); a bad
    count or an atomic run with a bf16 output is a one-line error, exit 2."""
    from jitgemm.cli import main

    assert main(["run", "--m", "5", "--n", "40", "--k", "300", "--dtype", "fp16", "--backend", "emu",
                 "--split-k", "3", "--split-mode", "streamk"]) == 0
    assert "grid (3, 1, 1)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["run", "--m", "5", "--n", "40", "--k", "300", "--split-k", "0"])
    assert exc.value.code == 2
    assert main(["run", "--m", "5", "--n", "40", "--k", "300", "--dtype", "bf16", "--backend", "emu",
                 "--split-k", "2", "--split-mode", "atomic"]) == 2
    assert "split_mode='atomic' adds raw fp32 sums" in capsys.readouterr().err
