"""Our disassembler on code the project did not write: every instruction LLVM's AMDGPU backend emits for the
LLVM generator's kernels decodes (from the bundled spec) and prints exactly as llvm-objdump prints it.

The kernels cover every dtype pair and layout (vector and scalar loads, the scatter of non-K-contiguous
vectors), the epilogues (C in each float dtype, bias, relu, gelu, bf16/fp16 rounding, int8) and the two
benchmark tiles (bf16 128x128x32 and 256x256x64, whose register pressure makes LLVM spill and shuffle
accumulators: readlane/writelane, scratch, v_accvgpr_mov). Only whitespace is normalised.
"""

from __future__ import annotations

import collections

import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem
from jitgemm.isa.disasm.decoder import decode_at
from jitgemm.isa.disasm.printer import format_instruction
from jitgemm.isa.spec.forms import forms_of

from jitgemm import isa
from tests.fixtures.asm_support import objdump, text_section
from tests.fixtures.oracles import require_module

_BENCH = GemmProblem.make(1024, 1024, 1024, "bf16", layout="NT")
CASES = [(GemmProblem.make(64, 64, 64, a, d=d, layout=layout), None)
         for a, d in (("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp8", "fp32"), ("bf8", "bf16"),
                      ("int8", "int32"))
         for layout in ("NN", "TT")] + [
    (GemmProblem.make(33, 40, 24, "fp16", d="fp32", layout="NT", c="fp32", beta=0.25, bias="n",
                      activation="gelu", alpha=0.75), None),
    (GemmProblem.make(33, 40, 24, "bf16", layout="TN", c="bf16", beta=0.5, bias="m", activation="relu"), None),
    (GemmProblem.make(33, 40, 24, "fp16", layout="NN", c="fp16", beta=2.0, alpha=-1.0), None),
    (GemmProblem.make(20, 36, 50, "int8", c="int32", beta=2.0, alpha=3.0, activation="relu"), None),
    (_BENCH, GemmConfig(128, 128, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2, vec_a=8, vec_b=8)),
    (_BENCH, GemmConfig(256, 256, 64, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=1, vec_a=8, vec_b=8)),
]


def _id(case) -> str:
    p, cfg = case
    tile = f"-{cfg.tile_m}x{cfg.tile_n}x{cfg.depth_k}" if cfg else ""
    return f"{p.a.name}-{p.d.name}-{p.layout}{'-epilogue' if p.c or p.bias != 'none' else ''}{tile}"


@pytest.fixture(scope="module")
def forms():
    require_module("llvmlite")
    return forms_of(isa.load_spec("gfx942"))


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_llvm_kernels_disassemble_like_llvm_objdump(tmp_path, forms, case):
    from jitgemm.codegen.llvm import compile_gemm_llvm

    problem, config = case
    compiled = compile_gemm_llvm(problem, config)
    path = tmp_path / "k.co"
    path.write_bytes(compiled.code_object)
    data, addr = text_section(path)
    kernel = codeobj.read(compiled.code_object).kernel(compiled.name)
    rows = objdump(path)
    assert sum(size for _, _, size in rows) >= len(kernel.code) > 0
    unknown = collections.Counter()
    problems = []
    for offset, text, size in rows:
        d = decode_at(data, offset - addr, forms, addr)
        if d.instruction is None:
            unknown[text.split()[0]] += 1
            continue
        ours = " ".join(format_instruction(d.instruction).split())
        if ours != text or d.size != size:
            problems.append(f"+{offset:#x}: objdump {text!r}, ours {ours!r} ({d.size} bytes, objdump {size})")
    assert not unknown, f"instructions LLVM emitted that the bundled spec does not define: {dict(unknown)}"
    assert not problems, f"{len(problems)} of {len(rows)} differ: " + "; ".join(problems[:5])
