"""The text syntax against llvm-mc: whole programs with labels, branches, comments, directives and the
spellings LLVM accepts assemble to the bytes `llvm-mc -filetype=obj` puts in `.text`; and the fast line
parser agrees with the LALR grammar on every line it accepts."""

from __future__ import annotations

import subprocess

import pytest
from jitgemm.isa.asm.assembler import assemble, assemble_program
from jitgemm.isa.asm.fastpath import parse_line
from jitgemm.isa.asm.parser import parse, parse_lark
from jitgemm.isa.disasm.printer import format_instruction

from tests.fixtures.asm_corpus import corpus
from tests.fixtures.asm_support import SPEC_NAMES, forms_named, text_section
from tests.fixtures.oracles import require_tool

PROGRAM = """\
.text
.globl kernel
.p2align 8
kernel:                                   ; a label on its own line
  s_load_dwordx2 s[4:5], s[0:1], 0x10     ; comment after an instruction
  S_WAITCNT lgkmcnt(0)                    // upper-case mnemonic, C++ comment
  s_mov_b32 s6, 0x1234
  v_mov_b32 v1, 1.0
.p2align 4
loop: v_add_f32 v1, v1, v1                ; label and instruction on one line
  v_add_f32 v2, -v1, |v1|
  v_mul_f32_e64 v3, -|v2|, neg(1.0)
  v_cmp_gt_u32 vcc, 64, v0
  v_cndmask_b32 v4, v1, v2, vcc
  s_add_u32 s6, s6, -1
  s_cmp_lg_u32 s6, 0
  s_cbranch_scc1 loop                     ; backward branch
  s_branch done                           ; forward branch
  /* a block comment
     over two lines */ s_nop 1
  .long 0xbf800002, 0xbf800003
  global_load_dword v5, v[2:3], off offset:16 sc0 sc1
  global_store_dword v[2:3], v5, off
  buffer_load_dword v6, v7, s[8:11], 0 offen offset:4
  ds_read2_b32 v[8:9], v7 offset0:1 offset1:2
  s_waitcnt vmcnt(0) & lgkmcnt(0)
  s_waitcnt vmcnt(1), expcnt(2)
  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15] cbsz:1 abid:2 blgp:3
  v_accvgpr_read_b32 v10, a5
  v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7] op_sel_hi:[1,0,1] neg_lo:[0,1,0]
  v_mov_b32_dpp v1, v2 row_shr:1 bound_ctrl:0
  v_mov_b32_sdwa v1, v2 dst_sel:WORD_1 src0_sel:BYTE_0
  v_lshl_add_u32 v11, v12, 2, v13
done:
  s_endpgm
"""


def _llvm_symbols(tmp_path) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile

    with open(tmp_path / "prog.o", "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}


def _llvm_text(source: str, tmp_path) -> bytes:
    mc = require_tool("llvm-mc")
    src = tmp_path / "prog.s"
    src.write_text(source)
    obj = tmp_path / "prog.o"
    proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"llvm-mc rejects the test input: {proc.stderr}"
    return text_section(obj)[0]


def test_program_bytes_equal_llvm_mc_object(tmp_path):
    forms = forms_named("subset")
    ours = assemble(PROGRAM, forms)
    assert ours.code == _llvm_text(PROGRAM, tmp_path)
    theirs = _llvm_symbols(tmp_path)
    assert {name: ours.symbols[name] for name in ("kernel", "loop", "done")} == \
        {name: theirs[name] for name in ("kernel", "loop", "done")}


def test_program_lines_and_labels():
    forms = forms_named("subset")
    program = assemble_program(PROGRAM, forms, file="prog.s")
    lines = PROGRAM.split("\n")
    for line, inst, _offset, _size in program.lines:
        assert inst.name.split("_")[0].lower() in lines[line - 1].lower()
    assert program.lines[0][0] == 5  # s_load_dwordx2 on line 5


@pytest.mark.parametrize("spec_name, source", [
    ("excerpt", "s_branch 3"), ("excerpt", "s_branch 65535"), ("excerpt", "s_cbranch_scc0 0x10"),
    ("excerpt", "v_mov_b32 v1, v[2]"), ("excerpt", "v_mov_b32 v1, v[2:2]"), ("excerpt", "v_add_u32 v1, -0x10, v2"),
    ("excerpt", "v_mov_b32 v1, 0.15915494"), ("excerpt", "v_mov_b32 v1, 1e0"), ("excerpt", "v_mov_b32 v1, -0.0"),
    ("excerpt", "s_mov_b32 s0, vccz"), ("excerpt", "s_mov_b32 s0, scc"),
    # signed offsets: AMD's file says so in the field descriptions ("13-bit signed offset")
    ("excerpt", "global_load_dword v1, v2, s[4:5] offset:-4096"), ("excerpt", "s_load_dword s1, s[2:3], -0x10"),
    ("subset", "ds_swizzle_b32 v4, v7 offset:swizzle(BROADCAST,8,3)"),
    ("subset", "ds_swizzle_b32 v4, v7 offset:swizzle(BITMASK_PERM,\"01pip\")"),
    ("subset", "v_nop_dpp quad_perm:[3,2,1,0]"),
    ("subset", "tbuffer_load_format_x v1, off, s[4:7], 0 format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_FLOAT]"),
])
def test_single_lines_equal_llvm(spec_name, source, tmp_path):
    forms = forms_named(spec_name)
    assert assemble(source, forms).code == _llvm_text(source + "\n", tmp_path)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_fast_path_equals_grammar(name):
    lines = [c.text for c in corpus(forms_named(name))]
    lines += [line for line in PROGRAM.split("\n")]
    accepted = 0
    for line in lines:
        fast = parse_line(line)
        if fast is None:
            continue
        accepted += 1
        labels, inst = fast
        slow = parse_lark(line)
        assert [s.name for s in slow if s.kind == "label"] == list(labels), line
        insts = [s.instruction for s in slow if s.kind == "instruction"]
        assert insts == ([inst] if inst is not None else []), line
        if inst is not None:
            assert format_instruction(inst) == format_instruction(insts[0]), line
    assert accepted > 0.95 * len(lines)


def test_parse_with_and_without_fast_path_agree():
    fast = parse(PROGRAM)
    slow = parse(PROGRAM, fast=False)
    assert [(s.kind, s.line, s.name, s.instruction) for s in fast] == \
        [(s.kind, s.line, s.name, s.instruction) for s in slow]


def test_clang_assembly_output_assembles_like_llvm_mc(tmp_path):
    """`clang -S` output (kernel descriptors, metadata, .set/.size expressions, .fill/.p2alignl padding)
    assembles to the `.text` llvm-mc makes of it."""
    import re

    from tests.fixtures.asm_support import CLANG_KERNELS

    clang, mc = require_tool("clang"), require_tool("llvm-mc")
    source = CLANG_KERNELS
    for kernel in ("elementwise", "intops"):  # they use instructions the bundled subset does not define
        source = re.sub(r"__attribute__\(\(amdgpu_kernel\)\) void " + kernel + r".*?\n}\n", "", source, flags=re.S)
    c_file = tmp_path / "k.c"
    c_file.write_text(source)
    asm_file = tmp_path / "k.s"
    subprocess.run([clang, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-O2", "-S", str(c_file), "-o",
                    str(asm_file)], check=True, capture_output=True)
    obj = tmp_path / "k.o"
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(asm_file), "-o",
                    str(obj)], check=True, capture_output=True)
    ours = assemble(asm_file.read_text(), forms_named("subset"), file=str(asm_file))
    assert ours.code == text_section(obj)[0]
    assert "mfma_bf16" in ours.symbols and "reduce" in ours.symbols
