"""`k.ir` shows the sizes of the problem the kernel was compiled for, and says plainly that the kernel is
size-generic (one code object serves every problem of its class)."""

from __future__ import annotations

import random

from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.gemm_text import parse

import jitgemm


def test_ir_has_the_real_sizes_and_says_size_generic():
    rng = random.Random(17)
    m, n, k = (rng.randrange(1000, 8193) for _ in range(3))
    kernel = jitgemm.compile(GemmProblem.make(m, n, k, "bf16", layout="NT"))
    first, gemm_line = kernel.ir.splitlines()[:2]
    assert first.startswith("#") and "size-generic" in first
    assert gemm_line.startswith(f"gemm m={m} n={n} k={k} ")
    problem, config = parse(kernel.ir)
    assert (problem.m, problem.n, problem.k) == (m, n, k) and config == kernel.config
    assert jitgemm.compile(kernel.ir).code_object == kernel.code_object     # the text compiles back


def test_same_class_shares_code_but_each_ir_names_its_problem():
    a = jitgemm.compile(GemmProblem.make(4096, 4096, 4096, "fp16"))
    b = jitgemm.compile(GemmProblem.make(4000, 4096, 4096, "fp16"))
    if a.config == b.config:
        assert a.code_object == b.code_object
    assert "m=4096 n=4096 k=4096" in a.ir and "m=4000 n=4096 k=4096" in b.ir
    assert jitgemm.compile(GemmProblem.make(4096, 4096, 4096, "fp16")).ir == a.ir   # the in-memory hit too
