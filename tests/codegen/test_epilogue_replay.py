"""Issue 31: the epilogue's stores are one loop over a table of (block, register, row offset), and the store
sequence that repeats for every accumulator is planned once and replayed (`Emitter.record` / `replay`). The
kernels must be the ones emitting every store afresh gives: same instructions, same bytes, for every epilogue
variant (bf16 rounding, fp16, fp32 and int32 outputs, C with beta, bias, relu/gelu, MX, batch, atomic split-K)."""

from __future__ import annotations

import pytest
from jitgemm.codegen import gemm_asm_epilogue
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import isa

CASES = [
    ("gfx942", dict(m=256, n=256, k=128, a="bf16", layout="NT")),
    ("gfx942", dict(m=200, n=96, k=72, a="fp16", layout="TT", bias="n", activation="relu", beta=0.5, c="fp16")),
    ("gfx942", dict(m=128, n=128, k=64, a="fp32")),
    ("gfx942", dict(m=256, n=256, k=256, a="int8", alpha=2.0)),
    ("gfx942", dict(m=64, n=64, k=64, a="fp16", batch=3, beta=1.0, c="fp32", d="fp32")),
    ("gfx950", dict(m=100, n=70, k=40, a="bf16", layout="NT", activation="gelu", bias="m")),
    ("gfx950", dict(m=64, n=64, k=256, a="fp4", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx942", dict(m=64, n=64, k=256, a="bf16", d="fp32", k_split="atomic")),     # atomic adds, not stores
]


@pytest.mark.parametrize("arch,args", CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(CASES)])
def test_replayed_stores_are_the_stores_emitted_afresh(arch, args, monkeypatch):
    problem = GemmProblem.make(**args)
    spec = isa.load_spec(arch)
    replayed = compile_gemm(problem, spec=spec, target=arch)
    monkeypatch.setattr(gemm_asm_epilogue, "REPLAY_STORES", False)
    fresh = compile_gemm(problem, spec=spec, target=arch)
    assert replayed.lowered.instructions == fresh.lowered.instructions
    assert replayed.code_object == fresh.code_object
