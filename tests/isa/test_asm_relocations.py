"""Relocations of instruction operands that are not constants, beside llvm-mc-22's object (`llvm-readelf -r`):
llvm-mc gives a literal a PC-relative fixup when the operand names a symbol outside a subtraction and without
@abs32@lo/@hi (needsPCRel in LLVM's AMDGPUMCCodeEmitter.cpp), so `s_mov_b32 s0, undefined_sym` is
R_AMDGPU_REL32 (we wrote ABS32), `sym-8` is ABS32, and a plain PC-relative operand naming a local label of the
same section is resolved in place (label - literal address) where a specifier keeps its relocation. A label
defined before the line that names it was refused ("not allowed here")."""

from __future__ import annotations

import subprocess

from jitgemm.codegen.codeobj.relocatable import assemble_source

from tests.fixtures.asm_support import relocatable_summary
from tests.fixtures.oracles import require_tool

SOURCE = """\
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl g
g:
  s_mov_b32 s0, undefined_sym
  s_mov_b32 s0, undefined_sym+4
  s_mov_b32 s0, 4+undefined_sym
  v_mov_b32 v0, undefined_sym
  v_add_f32 v0, undefined_sym, v1
  s_add_u32 s0, s1, sym2-8
  s_mov_b32 s0, sym3@abs32@lo
  v_add_f32 v0, sym3@abs32@hi, v1
  s_mov_b32 s0, sym3@rel32@lo
  s_mov_b32 s0, sym3@rel32@hi
  s_mov_b32 s0, sym3@gotpcrel32@lo
  s_mov_b32 s0, sym3@gotpcrel
  s_mov_b32 s0, g
  s_mov_b32 s0, loc
  s_mov_b32 s0, .Lx
  s_mov_b32 s0, loc+8
  s_mov_b32 s0, loc-g
  s_mov_b32 s0, w
  s_add_u32 s0, s0, .Lx@rel32@lo+4
  s_mov_b32 s0, dat
  s_mov_b32 s0, dat@abs32@lo
  s_mov_b32 s0, earlier
loc:
.Lx:
  s_endpgm
.weak w
.data
dat:
  .long undefined_sym
  .long 5
"""


def test_operand_relocations_equal_llvm_mc(tmp_path):
    mc = require_tool("llvm-mc")
    src = tmp_path / "r.s"
    text = SOURCE.replace("g:\n", "earlier:\n  s_nop 0\ng:\n", 1)
    src.write_text(text)
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(src), "-o",
                    str(tmp_path / "r.o")], check=True, timeout=60)
    ours, _ = assemble_source(text, file="r.s", relocatable=True)
    mine, theirs = relocatable_summary(ours), relocatable_summary((tmp_path / "r.o").read_bytes())
    assert mine[2] == theirs[2]          # relocations: section, offset, type, symbol, addend
    assert mine == theirs                # and the bytes (resolved PC-relative literals), symbols, sections
    types = {r[2] for r in mine[2]}
    assert {4, 6, 1, 2, 10, 11} <= types   # REL32, ABS32, ABS32_LO/HI, REL32_LO/HI all occur
