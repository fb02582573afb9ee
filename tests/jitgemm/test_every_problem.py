"""Issue 17, "every legal problem runs": for random problems over every dtype pair, layout, size 1..8192,
leading dimension and pointer alignment, the selector finds a legal candidate within the target's register,
AGPR and LDS budgets (the direct generator's scalar-load fallback fits the budget in a smaller tile when the
default tile's does not); small problems run in the emulator and equal numpy (float64, per-dtype tolerance of
jitgemm.reference). Spilling kernels rank below kernels that do not."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitgemm.codegen.gemm_ir import DTYPE_PAIRS, LAYOUTS, GemmProblem
from jitgemm.codegen.gemm_plan import validate_config
from jitgemm.codegen.generator import generator

from jitgemm import isa
from jitgemm.reference import check, reference
from jitgemm.selector import Quarantine, Selector, TuningDB, Verdict, rank_key
from jitgemm.suppliers import Candidate, DirectAsmSupplier, LlvmSupplier

PROFILE = isa.target_profile("gfx942")
SPEC = isa.load_spec("gfx942")
_PRIVATE = Path(tempfile.mkdtemp(prefix="jitgemm-every-problem-"))
_COMPILED: dict = {}
SELECTOR = Selector([DirectAsmSupplier(), LlvmSupplier()], target="gfx942", tuning=TuningDB(_PRIVATE / "tuning"),
                    quarantine=Quarantine(_PRIVATE / "quarantine.json"))


@st.composite
def problems(draw, max_size: int = 8192):
    a, b = draw(st.sampled_from(DTYPE_PAIRS))
    layout = draw(st.sampled_from(LAYOUTS))
    size = st.integers(1, max_size)
    m, n, k = draw(size), draw(size), draw(size)
    p = GemmProblem.make(m, n, k, a, b, layout=layout, batch=draw(st.integers(1, 3)))
    rows = {"a": p.a_shape[1], "b": p.b_shape[1]}
    pad = st.one_of(st.just(0), st.integers(1, 64))
    p = GemmProblem.make(m, n, k, a, b, layout=layout, batch=p.batch, lda=rows["a"] + draw(pad),
                         ldb=rows["b"] + draw(pad))
    align = {x: draw(st.sampled_from([e for e in (1, 2, 4, 8, 16, 256) if e >= eb]))
             for x, eb in (("a", p.a.bytes), ("b", p.b.bytes))}
    return p, align


def _within_budget(v: Verdict) -> None:
    tile = v.candidate.contract.data["tile"]
    assert tile["vgprs"] <= PROFILE.arch_vgprs and tile["agprs"] <= PROFILE.agprs, tile
    assert v.candidate.contract.lds_bytes <= PROFILE.lds_bytes_per_workgroup and tile["lds"] <= \
        PROFILE.lds_bytes_per_workgroup


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_selector_always_finds_a_legal_candidate_within_budget(case):
    problem, align = case
    verdicts = SELECTOR.evaluate(problem, align)
    failed = [v.reason for v in verdicts if v.reason.startswith("supplier error")]
    assert not failed, failed
    assert verdicts and verdicts[0].legal, SELECTOR.explain(problem, align)
    for v in verdicts:
        if v.legal:
            _within_budget(v)
    direct = [v for v in verdicts if v.legal and v.candidate.supplier == "jitgemm-asm"]
    assert direct, "the direct generator's fallback takes every shape and alignment"
    for v in direct:        # its contract's figures are the plan's, and the plan fits the target
        plan = validate_config(problem, v.candidate.config, SPEC, PROFILE)
        assert plan.vgprs <= PROFILE.arch_vgprs and plan.agprs <= PROFILE.agprs
    best = direct[0].candidate.config          # and the best of them really compiles within the budget
    key = (problem.kernel_class(), best)
    if key not in _COMPILED:
        k = generator("asm").compile(problem, best, spec=SPEC)
        _COMPILED[key] = (k.vgprs, k.agprs, k.lds_bytes)
    vgprs, agprs, lds = _COMPILED[key]
    assert vgprs <= PROFILE.arch_vgprs and agprs <= PROFILE.agprs and lds <= PROFILE.lds_bytes_per_workgroup


@pytest.mark.parametrize("dtype", ["fp8", "int8"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fp8_int8_4096x4096x64(dtype, layout):
    """The case issue 17 reported: the scalar fallback of the 256x256 default needed about 346 VGPRs."""
    problem = GemmProblem.make(4096, 4096, 64, dtype, layout=layout)
    verdicts = SELECTOR.evaluate(problem, {"a": 1, "b": 1})      # byte-aligned pointers: only the fallback
    legal = [v for v in verdicts if v.legal]
    assert legal and all(v.candidate.fallback for v in legal), SELECTOR.explain(problem, {"a": 1, "b": 1})
    for v in legal:
        _within_budget(v)


def _stored(rng, rows: int, cols: int, ld: int, dt, batch: int, shift: int) -> np.ndarray:
    """A rows x cols view with leading dimension `ld`, starting `shift` elements into its buffer (so the
    pointer is only element-aligned when shift is odd)."""
    size = batch * rows * ld + shift
    if dt.kind == "int":
        flat = rng.integers(-9, 10, size=size).astype(dt.numpy)
    else:
        flat = (rng.standard_normal(size) * 1.5).astype(np.float32).astype(dt.numpy)
    full = flat[shift:].reshape(batch, rows, ld)[:, :, :cols]
    return full if batch > 1 else full[0]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_size=70), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_small_problems_run_in_the_emulator(case, shift, seed):
    import jitgemm

    p, _ = case
    rng = np.random.default_rng(seed)
    lead = p.lead
    a = _stored(rng, *p.a_shape, lead["a"], p.a, p.batch, shift)
    b = _stored(rng, *p.b_shape, lead["b"], p.b, p.batch, 0)
    if p.a_transposed:
        a = np.swapaxes(a, -1, -2)
    if p.b_transposed:
        b = np.swapaxes(b, -1, -2)
    d = jitgemm.matmul(a, b, backend="emu")
    ref = reference(p, a, b, None, None)
    check(p, d, ref)


def _candidate(label: str, scratch: int) -> Candidate:
    from jitgemm.contract import Contract

    problem = GemmProblem.make(64, 64, 64, "bf16")
    data = DirectAsmSupplier().planned_contract(problem, SELECTOR.suppliers[0].configs(problem, "gfx942")[0][1],
                                                "gfx942")
    data["tile"]["scratch"] = scratch
    return Candidate("test", label, Contract.load(data, label), lambda: (b"", ""))


def test_spilling_kernels_rank_below_kernels_that_do_not():
    spilling = Verdict(_candidate("spills", 256), True, "", 900.0, "tuning")
    clean = Verdict(_candidate("clean", 0), True, "", 1.0, "model")
    assert sorted([spilling, clean], key=rank_key)[0] is clean


def test_spills_are_reported_by_run_and_compile():
    """A kernel whose contract says it uses scratch is reported by the launch record and the CLI's note (the
    generators here never spill: the plan refuses configs over the budget; LLVM kernels report what LLVM did)."""
    import copy

    import ml_dtypes
    from jitgemm.codegen.direct_generator import compile_gemm

    from jitgemm import api
    from jitgemm.commands.gemm import spill_note
    from jitgemm.contract import Contract

    p = GemmProblem.make(32, 32, 32, "bf16")
    k = compile_gemm(p)
    assert k.contract["tile"]["scratch"] == 0 and spill_note(k.contract) == ""
    data = copy.deepcopy(k.contract)
    data["tile"]["scratch"] = 128
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 32)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((32, 32)).astype(ml_dtypes.bfloat16)
    call = api.prepare(a, b)
    d = api.launch(call, k.code_object, k.name, Contract.load(data), backend="emu")
    check(p, d, a.astype(np.float64) @ b.astype(np.float64))
    rec = api.last_launch()
    assert rec.spills and rec.scratch_bytes == 128
    assert "spills registers (128 bytes of scratch per work-item)" in spill_note(data)
