"""gelu (and alpha / beta * C as the last step) give the same bits from the direct and the LLVM generator for every
float output: both compute the tanh form of Hendrycks & Gimpel (arXiv:1606.08415) with the same operations in the
same order in fp32 and round to the output once from fp32. LLVM used to fold the fp16 store's fptrunc(fmul) into
one v_fma_mixlo_f16 (one rounding instead of two; fma(x, y, +0) turns gelu's -0 of a large negative x into +0);
codegen/llvm/ir_builder.py `_store` fences it. The pre-activation values are chosen exactly (A = identity): both
signs, large negatives (gelu -> -0), tiny and large magnitudes; = numpy float64 too. Outputs start as NaN poison."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.api import launch, prepare
from jitgemm.contract import Contract
from jitgemm.kernel import compile as compile_kernel
from jitgemm.reference import check, reference

CASES = [  # arch, input, output, epilogue
    ("gfx942", "fp16", "fp16", {"activation": "gelu"}),
    ("gfx942", "bf16", "fp16", {"alpha": 0.3, "c": "fp32", "beta": 0.7}),
    ("gfx950", "fp16", "fp16", {"activation": "gelu", "bias": "m", "alpha": 1.5}),
]


@pytest.mark.parametrize("arch, a, d, epi", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{len(c[3])}" for c in CASES])
def test_generators_give_the_same_bits(arch, a, d, epi):
    n = 64
    p = GemmProblem.make(n, n, n, a, d=d, layout="NN", **epi)
    rng = np.random.default_rng(len(epi) * 7 + n)
    dt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}[a]
    x = np.eye(n, dtype=np.float32).astype(dt)
    y = (rng.choice([-1.0, 1.0], (n, n)) * 10.0 ** rng.uniform(-3, 1.3, (n, n))).astype(dt)   # |y| to ~20
    y[:8, :8] = (-rng.uniform(6, 20, (8, 8))).astype(dt)       # gelu -> -0 (exp2 underflows, tanh = -1)
    c = rng.standard_normal((n, n)).astype(p.c.numpy) if p.c is not None else None
    bias = rng.standard_normal(n).astype(np.float32) if p.bias != "none" else None
    out = {}
    for gen in ("asm", "llvm"):
        kernel = compile_kernel(p, arch=arch, generator=gen)
        call = prepare(x, y, c, alpha=p.alpha, beta=p.beta, out_dtype=p.d.numpy, bias=bias, activation=p.activation)
        out[gen] = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu",
                          strict=True).copy()
        check(p, out[gen], reference(p, x, y, c, bias))
    bits = {g: v.view(f"u{v.itemsize}") for g, v in out.items()}
    assert np.array_equal(bits["asm"], bits["llvm"]), f"{int((bits['asm'] != bits['llvm']).sum())} elements differ"
    if p.activation == "gelu" and p.alpha > 0 and p.bias == "none" and p.c is None:
        assert np.signbit(out["asm"][:8, :8]).all()            # -0: the case LLVM's fused rounding turned to +0
