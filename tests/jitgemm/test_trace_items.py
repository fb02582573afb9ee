"""Issue 31: the timing model traces a kernel this process lowered from the direct generator's instruction objects
(`jitgemm.timing.trace.from_items`) instead of decoding its bytes (the decoder's index alone cost a fully cold
compile ~0.5 s). The trace -- every region's instruction classes, MFMA passes and flops, bytes, issue passes and
stalls -- must be the one decoding gives, for every kind of kernel the generator makes."""

from __future__ import annotations

import importlib

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.instruction import Counters

import jitgemm
from jitgemm import isa
from jitgemm import kernel as kernel_module
from jitgemm.selector import selected_config
from jitgemm.timing import kernel_facts, trace
from jitgemm.timing.trace import from_items

trace_module = importlib.import_module("jitgemm.timing.trace")   # the module (the package exports `trace`)

CASES = [
    ("gfx942", dict(m=256, n=256, k=128, a="bf16", layout="NT")),
    ("gfx942", dict(m=200, n=96, k=72, a="fp16", layout="TT", bias="n", activation="relu", beta=0.5, c="fp16")),
    ("gfx942", dict(m=128, n=64, k=128, a="fp8", b="bf8", layout="TN")),
    ("gfx942", dict(m=64, n=64, k=64, a="int8", batch=3)),
    ("gfx950", dict(m=100, n=70, k=40, a="bf16", activation="gelu", bias="m")),
    ("gfx950", dict(m=64, n=64, k=256, a="fp4", b="fp4", a_scale="plain", b_scale="plain")),
    ("gfx950", dict(m=40, n=48, k=256, a="bf16", b="fp4", b_scale="plain")),
]


@pytest.mark.parametrize("arch,args", CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(CASES)])
def test_trace_from_items_equals_trace_from_decoding(arch, args):
    problem = GemmProblem.make(**args)
    config, _ = selected_config(problem, arch, "asm")
    kernel_module.clear_memory_cache()          # lowered here, not found in memory (or on disk)
    kernel = jitgemm.compile(problem, config, arch=arch, use_disk_cache=False, generator="asm")
    facts = kernel_facts(kernel)
    found = kernel_module.lowered_items(facts.code)
    assert found is not None, "the lowering's items were not kept for the code object's .text"
    spec = isa.load_spec(arch)
    by_items = from_items(facts.code, *found, spec)
    by_bytes = decode(facts.code, spec)
    assert by_items is not None and len(by_items) == len(by_bytes)
    for a, b in zip(by_items, by_bytes, strict=True):
        assert (a.offset, a.size, a.raw, a.target) == (b.offset, b.size, b.raw, b.target), (a, b)
        assert trace_module.classify(a, spec) == trace_module.classify(b, spec), (a, b)
        assert a.encoding == b.encoding, (a, b)
        same = trace_module.spec_instruction(a.instruction.name, spec) is trace_module.spec_instruction(
            b.instruction.name, spec)
        assert same, (a.instruction, b.instruction)
        if any(isinstance(op, Counters) for op in b.instruction.operands):
            assert a.instruction.operands == b.instruction.operands, (a.instruction, b.instruction)
    trace_module._cached.cache_clear()
    traced = trace(facts.code, arch, {"vmem": 200})
    trace_module._cached.cache_clear()
    kernel_module.clear_memory_cache()          # the items forgotten: the same code is decoded
    assert kernel_module.lowered_items(facts.code) is None
    assert trace(facts.code, arch, {"vmem": 200}) == traced
    trace_module._cached.cache_clear()


def test_items_with_data_are_decoded():
    """Data words among the items (no instruction object to read) fall back to decoding."""
    from jitgemm.isa.instruction import AsmInstruction, Data

    spec = isa.load_spec("gfx942")
    items = (AsmInstruction("s_endpgm", ()), Data((0,)))
    assert from_items(b"\0" * 8, items, (0, 4), spec) is None
