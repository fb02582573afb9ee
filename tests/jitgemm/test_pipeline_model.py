"""The static pipeline model against llvm-mca-22's gfx942 scheduling model (LLVM SISchedule.td): MFMA passes
derived from the profile's peak rates equal llvm-mca's matrix-pipe (HWXDL) cycles for every MFMA of the spec;
the spec-derived class of every main-loop instruction matches the llvm-mca resource it issues to; and the
modelled cycles per iteration agree with llvm-mca within 10% on random sweep variants."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.codegen.mfma_catalog import mfma_catalog

from jitgemm import compile as jit_compile
from jitgemm import isa
from jitgemm.sweep import config_space
from jitgemm.timing.pipeline import PipelineModelError, classify, llvm_mca, main_loop, model_loop, rates
from tests.fixtures.oracles import require_tool

SPEC = isa.load_spec("gfx942")
PROFILE = isa.target_profile("gfx942")
# llvm-mca's gfx942 resources and the model classes that issue to each
RESOURCE_CLASSES = {"HWXDL": {"mfma"}, "HWLGKM": {"lds", "smem"}, "HWSALU": {"salu", "wait"}, "HWVALU": {"valu"},
                    "HWVMEM": {"vmem"}, "HWBranch": {"branch", "salu"}}


def _mfma_text(m) -> str:
    def regs(kind, first, count):
        return f"{kind}[{first}:{first + count - 1}]"

    return (f"{m.name.lower()} {regs('a', 0, m.acc_regs)}, {regs('v', 0, m.a_regs)}, "
            f"{regs('v', m.a_regs, m.b_regs)}, {regs('a', 0, m.acc_regs)}")


def test_mfma_passes_equal_llvm_mca_xdl_cycles():
    mca = require_tool("llvm-mca")
    r = rates(SPEC, PROFILE)
    mfmas = [m for m in mfma_catalog(SPEC) if m.name in r.mfma_passes]
    assert len(mfmas) >= 10 and {m.a.name for m in mfmas} >= {"bf16", "fp16", "fp32", "fp8", "int8"}
    report = llvm_mca([_mfma_text(m) for m in mfmas], mca, iterations=1)
    assert len(report.resources) == len(mfmas)
    for m, used in zip(mfmas, report.resources, strict=True):
        assert used == {"HWXDL": float(r.mfma_passes[m.name])}, m.name


def _loop_of(problem, config, generator="asm"):
    kernel = jit_compile(problem, config, generator=generator, use_disk_cache=False)
    code = codeobj.read(kernel.code_object).kernel(kernel.name).code
    return main_loop(code, SPEC)


CASES = [(GemmProblem.make(512, 512, 512, "bf16", layout="NT"), "asm"),
         (GemmProblem.make(512, 512, 512, "fp8", d="bf16", layout="TN"), "asm"),
         (GemmProblem.make(256, 256, 256, "fp16", layout="NN"), "llvm")]


@pytest.mark.parametrize("problem,generator", CASES, ids=lambda x: getattr(x, "layout", x))
def test_instruction_classes_match_llvm_mca_resources(problem, generator):
    mca = require_tool("llvm-mca")
    if generator == "llvm":
        pytest.importorskip("llvmlite")
    configs = config_space(problem, tiles=(64, 128), waves=((2, 2),), generator=generator)
    body = _loop_of(problem, configs[len(configs) // 2], generator)
    model = model_loop(body, SPEC, PROFILE)
    report = llvm_mca(model.instructions, mca, iterations=1)
    assert report.skipped == 0 and len(report.resources) == len(body)
    seen = set()
    for d, used in zip(body, report.resources, strict=True):
        cls = classify(d, SPEC)
        seen.add(cls)
        assert len(used) == 1, (d.instruction, used)
        (resource,) = used
        assert cls in RESOURCE_CLASSES[resource], (str(d.instruction), cls, resource)
    assert {"mfma", "lds", "wait"} <= seen


def test_cycles_per_iteration_agree_with_llvm_mca():
    """Random variants of two problems: within 10% of llvm-mca on at least 90% (the issue's goal)."""
    mca = require_tool("llvm-mca")
    rng = random.Random(7)
    points = []
    for problem in (GemmProblem.make(1024, 1024, 1024, "bf16", layout="NT"),
                    GemmProblem.make(1024, 1024, 1024, "fp8", d="bf16", layout="NN")):
        space = config_space(problem, tiles=(32, 64, 128, 256), waves=((1, 1), (2, 2), (2, 1), (4, 1)))
        points += [(problem, c) for c in rng.sample(space, 6)]
    close = 0
    ratios = []
    for problem, config in points:
        model = model_loop(_loop_of(problem, config), SPEC, PROFILE)
        ref = llvm_mca(model.instructions, mca)
        ratio = model.passes_per_iteration / ref.cycles_per_iteration
        ratios.append(round(ratio, 3))
        close += abs(ratio - 1) <= 0.10
        assert model.mfmas and model.mfma_passes <= model.passes_per_iteration + 1e-9
    assert close >= 0.9 * len(points), ratios


def test_model_reads_the_profile_and_says_what_is_missing():
    bare = replace(PROFILE, values={k: v for k, v in PROFILE.values.items() if k != "pipeline"})
    with pytest.raises(PipelineModelError, match=r"gfx942.yaml: pipeline.clocks_per_pass is missing"):
        rates(SPEC, bare)
    # MFMA passes are the profile's mfma.passes (the one source, shared with strict mode's hazard checks)
    untimed = replace(PROFILE, values={**PROFILE.values, "mfma": {}})
    with pytest.raises(PipelineModelError, match=r"gfx942.yaml: mfma.passes is missing"):
        rates(SPEC, untimed)
    # and for the single-block MFMAs the generators use they are the data sheet's peak matrix rate:
    # flops / (compute_units x SIMDs x clock) per clock, 4 clocks a pass
    peaks, cus, clock = PROFILE.get("peak_matrix_tflops"), PROFILE.compute_units, PROFILE.get("clock_mhz")
    passes = rates(SPEC, PROFILE).mfma_passes
    checked = 0
    for m in mfma_catalog(SPEC):
        peak = peaks.get({"bf8": "fp8"}.get(m.a.name, m.a.name))
        if peak is None:
            continue
        per_clock = peak * 1e12 / (cus * PROFILE.get("pipeline")["simds_per_cu"] * clock * 1e6)
        assert passes[m.name] == max(1, round(m.flops / per_clock / 4)), m.name
        checked += 1
    assert checked >= 10


def test_a_kernel_without_a_loop_is_refused():
    code = isa.assemble("v_mov_b32 v0, 0\ns_endpgm\n", SPEC).code
    assert main_loop(code, SPEC) == []
    with pytest.raises(PipelineModelError, match="no loop with an MFMA"):
        model_loop([], SPEC, PROFILE)
