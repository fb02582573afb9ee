"""`jitgemm.matmul` / `jitgemm.compile` for a user: clear errors for bad input (never a wrong result),
caches in memory and on disk (corrupt entries rebuilt), `last_launch`, and the CLI around them."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError

import jitgemm
from jitgemm import kernel_cache
from jitgemm.api import MatmulError
from jitgemm.cli import main

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("make, message", [
    (lambda: (rand(4, 5), rand(6, 3)), "inner dimensions 5 and 6 differ"),
    (lambda: (rand(4, 5, dtype=np.float16), rand(5, 3, dtype=ml_dtypes.bfloat16)), "no GEMM for A=fp16, B=bf16"),
    (lambda: (rand(4, 5).astype(np.float64), rand(5, 3).astype(np.float64)), "numpy dtype float64 is not supported"),
    (lambda: (rand(8, 10)[::2, ::2], rand(5, 3)), "neither dimension .* has unit stride"),
    (lambda: (rand(4, 5)[::-1], rand(5, 3)), "negative"),
    (lambda: ([[1.0]], rand(1, 1)), "expected a numpy array"),
    (lambda: (rand(2, 4, 5), rand(3, 5, 3)), "batch sizes differ"),
])
def test_bad_inputs(make, message):
    a, b = make()
    with pytest.raises(MatmulError, match=message):
        jitgemm.matmul(a, b)


def test_bad_epilogue_arguments():
    a, b = rand(4, 5), rand(5, 3)
    with pytest.raises(MatmulError, match="beta is non-zero but no c"):
        jitgemm.matmul(a, b, beta=1.0)
    with pytest.raises(MatmulError, match="bias has length 7; expected M=4 or N=3"):
        jitgemm.matmul(a, b, bias=np.zeros(7, np.float32))
    with pytest.raises(MatmulError, match=r"c has shape \(3, 3\); expected \(4, 3\)"):
        jitgemm.matmul(a, b, rand(3, 3), beta=1.0)
    with pytest.raises(MatmulError, match="backend='cuda'; accepted: auto, emu, hip"):
        jitgemm.matmul(a, b, backend="cuda")
    with pytest.raises(MatmulError, match="activation 'tanh'"):
        jitgemm.matmul(a, b, activation="tanh")


def test_config_over_budget_is_refused():
    p = GemmProblem.make(256, 256, 256, "bf16")
    with pytest.raises(IRError, match="accumulator registers"):
        jitgemm.compile(p, GemmConfig(256, 256, 32, 1, 1, "V_MFMA_F32_32X32X8_BF16"))


def test_matmul_result_and_last_launch():
    a, b = rand(40, 24, dtype=np.float16), rand(24, 36, dtype=np.float16).T.copy().T   # B as a transposed view
    d = jitgemm.matmul(a, b, out_dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(d - ref)) <= 1e-5 * 24 * np.max(np.abs(ref))
    rec = jitgemm.last_launch()
    assert rec.backend == "emu" and rec.kernel.startswith("jitgemm_fp16_fp16_fp32_N")
    # which generator's kernel runs is the timing model's choice (jitgemm.timing): the record names the one that ran
    chosen = jitgemm.selector.default_selector("gfx942").select(GemmProblem.make(40, 36, 24, "fp16", d="fp32"))
    assert rec.generator == chosen.contract.generator and rec.grid[0] >= 1 and "m=40 n=36 k=24" in rec.problem


def test_memory_cache_returns_same_kernel():
    p = GemmProblem.make(64, 64, 64, "bf16", layout="NT")
    k1 = jitgemm.compile(p)
    k2 = jitgemm.compile(GemmProblem.make(64, 64, 64, "bf16", layout="NT"))
    assert k1 is k2
    assert "v_mfma_f32_32x32x8_bf16" in k1.asm and "VOP3P_MFMA" in k1.asm


def _compile_in_new_process(env) -> str:
    code = ("import jitgemm; from jitgemm.codegen.gemm_ir import GemmProblem\n"
            "k = jitgemm.compile(GemmProblem.make(96, 64, 32, 'fp16', layout='TN'))\n"
            "print(k.from_cache, k.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[0]


def test_disk_cache_hit_and_corruption(tmp_path):
    env = dict(os.environ, JITGEMM_CACHE_DIR=str(tmp_path))
    assert _compile_in_new_process(env) == "compiled"
    assert _compile_in_new_process(env) == "disk"
    for co in (tmp_path / "kernels").glob("*.co"):
        co.write_bytes(co.read_bytes()[:100])          # truncated code object: detected, rebuilt
    assert _compile_in_new_process(env) == "compiled"
    assert _compile_in_new_process(env) == "disk"


def test_cache_entry_with_wrong_hash_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path))
    kernel_cache.store("k" * 64, b"\x7fELF-not-really", {"name": "x", "contract": {}})
    assert kernel_cache.load("k" * 64) is not None
    (tmp_path / "kernels" / f"{'k' * 64}.co").write_bytes(b"tampered")
    assert kernel_cache.load("k" * 64) is None


def test_cli_compile_run_inspect(tmp_path, capsys):
    out = tmp_path / "k.co"
    assert main(["compile", "--m", "33", "--n", "20", "--k", "48", "--dtype", "bf16", "--layout", "NT",
                 "--tile", "32x32x16", "--waves", "1x1", "-o", str(out), "--print-asm"]) == 0
    text = capsys.readouterr().out
    assert out.is_file() and "tile 32x32x16 waves=1x1" in text and "s_endpgm" in text
    assert main(["inspect", str(out)]) == 0
    listing = capsys.readouterr().out
    assert "buffer_load_" in listing and "; ENC_" in listing
    assert main(["run", "--m", "33", "--n", "20", "--k", "48", "--dtype", "fp16", "--alpha", "0.5"]) == 0
    ran = capsys.readouterr().out
    err = float(ran.split("max relative error vs numpy (float64): ")[1].split(";")[0])
    assert err < 2e-3
    assert main(["compile", "--m", "8", "--n", "8", "--k", "8", "--dtype", "fp16", "--tile", "512x512x64",
                 "-o", str(out)]) == 2
    assert "error:" in capsys.readouterr().err
