"""The direct generator's code objects through LLVM: llvm-objdump disassembles our bytes to the same
instructions our inspector prints (so the encoder and the listing agree with an outside authority), and
llvm-readelf reads the kernel and its metadata."""

from __future__ import annotations

import re
import subprocess

import pytest
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import isa
from jitgemm.listing import annotated_listing
from tests.fixtures.oracles import require_tool

CASES = [
    GemmProblem.make(128, 128, 64, "bf16", layout="NT"),
    GemmProblem.make(17, 33, 65, "fp8", d="bf16", layout="TT"),
    GemmProblem.make(20, 36, 50, "int8", c="int32", beta=2.0, alpha=3.0, activation="relu"),
    GemmProblem.make(33, 40, 24, "fp16", d="fp32", layout="TN", c="fp32", beta=0.5, bias="n", activation="gelu"),
]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip())


@pytest.mark.parametrize("problem", CASES, ids=lambda p: f"{p.a.name}-{p.layout}-{p.activation}")
def test_objdump_agrees_with_inspector(tmp_path, problem):
    objdump = require_tool("llvm-objdump")
    compiled = compile_gemm(problem)
    path = tmp_path / "k.co"
    path.write_bytes(compiled.code_object)
    out = subprocess.run([objdump, "-d", "--mcpu=gfx942", str(path)], capture_output=True, text=True, check=True)
    theirs = [_norm(line.split("//")[0]) for line in out.stdout.splitlines()
              if line.startswith("\t") and "//" in line]
    ours = [_norm(line.split("*/", 1)[1].rsplit(" ; ", 1)[0]) for line in
            annotated_listing(compiled.code_object, isa.load_spec("gfx942")).splitlines()
            if line.startswith("  /*")]
    assert len(ours) == len(theirs) > 50
    mismatches = [(i, o, t) for i, (o, t) in enumerate(zip(ours, theirs, strict=True)) if o != t]
    assert not mismatches, mismatches[:5]


def test_readelf_sees_kernel_and_contract(tmp_path):
    readelf = require_tool("llvm-readelf")
    compiled = compile_gemm(CASES[0])
    path = tmp_path / "k.co"
    path.write_bytes(compiled.code_object)
    out = subprocess.run([readelf, "--notes", "--dyn-syms", str(path)], capture_output=True, text=True, check=True)
    assert f"{compiled.name}.kd" in out.stdout and "jitgemm.contract" in out.stdout
    assert ".group_segment_fixed_size: " + str(compiled.lowered.lds_bytes) in out.stdout


@pytest.mark.parametrize("problem", CASES, ids=lambda p: f"{p.a.name}-{p.layout}-{p.activation}")
def test_llvm_mc_accepts_generated_text_and_gives_our_bytes(tmp_path, problem):
    """Every generated instruction is legal for LLVM's assembler (operand classes, constant-bus limit, literal
    rules) and encodes to exactly our bytes."""
    from elftools.elf.elffile import ELFFile
    from jitgemm.isa.disasm.printer import format_item
    from jitgemm.isa.instruction import LabelDef

    llvm_mc = require_tool("llvm-mc")
    compiled = compile_gemm(problem)
    lines = [f"{item.name}:" if isinstance(item, LabelDef) else "  " + format_item(item)
             for item in compiled.lowered.instructions]
    src = tmp_path / "k.s"
    src.write_text("\n".join(lines) + "\n")
    obj = tmp_path / "k.o"
    out = subprocess.run([llvm_mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[:2000]
    with open(obj, "rb") as fh:
        text = ELFFile(fh).get_section_by_name(".text").data()
    assert text == compiled.code
