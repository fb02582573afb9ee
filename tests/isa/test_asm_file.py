"""Whole `.s` files -> code objects (isa/asm/file.py, codegen/codeobj/relocatable.py) against llvm-mc-22 +
ld.lld-22: Triton's and clang's complete assembly output and a hand-written kernel give the same loaded bytes,
descriptors, decoded metadata and symbols, and run in the emulator with numpy's answer."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.codeobj.elf_reader import ElfFile
from jitgemm.codegen.codeobj.relocatable import assemble_source
from jitgemm.isa.asm.macros import AsmFileError

from jitgemm.cli import main
from tests.fixtures.asm_support import assert_same_code_object, relocatable_summary
from tests.fixtures.hand_kernel import llvm_link
from tests.fixtures.oracles import require_tool

DATA = Path(__file__).parents[1] / "data"
HANDWRITTEN = DATA / "handwritten_kernel.s"










# -- Triton: the five kernels tests/isa/test_asm_triton.py compiles, and the emulator tests' kernels

@pytest.fixture(scope="module")
def triton_objs(tmp_path_factory):
    from tests.fixtures.asm_support import triton_objects

    return triton_objects(tmp_path_factory.mktemp("triton_file"))


def test_triton_assembly_files_equal_llvm_mc_and_lld(triton_objs, tmp_path):
    checked = 0
    for path in triton_objs:
        text = path.with_suffix(".s").read_text()
        assert '.amdgcn_target "amdgpu9.42-amd-amdhsa-unknown-gfx942"' in text  # Triton 3.9's spelling
        ours, _obj = assemble_source(text, file=path.name)
        ours_rel, _ = assemble_source(text, file=path.name, relocatable=True)
        their_rel, theirs = llvm_link(tmp_path, text)
        checked += assert_same_code_object(ours, theirs, path.name)
        assert relocatable_summary(ours_rel) == relocatable_summary(their_rel), path.name
        # and the same as the code object Triton itself built, apart from what debug info changes
        assert codeobj.read(ours).kernels[0].code == codeobj.read(path.read_bytes()).kernels[0].code
    assert checked == 5


# -- the hand-written kernel

def test_handwritten_kernel_equals_llvm_mc_and_runs(tmp_path):
    from jitgemm.emu import emulate

    text = HANDWRITTEN.read_text()
    ours, obj = assemble_source(text, file=str(HANDWRITTEN))
    rel, _ = assemble_source(text, file=str(HANDWRITTEN), relocatable=True)
    their_rel, theirs = llvm_link(tmp_path, text, include=DATA)
    assert_same_code_object(ours, theirs, "handwritten")
    summary = relocatable_summary(rel)
    assert summary == relocatable_summary(their_rel) and len(summary[2]) == 3  # REL32_LO/HI, the REL64
    assert obj.kernels[0].values["next_free_vgpr"] == 3 and obj.kernels[0].values["accum_offset"] == 4
    n = 200
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    # the kernel adds table[0] (3.0, in .rodata, reached through s_getpc_b64 + rel32 relocations) UNROLL=3 times;
    # both our code object and llvm-mc + ld.lld's run, the loaded image providing .rodata
    for blob in (ours, theirs):
        y = np.full(n, np.nan, np.float32)  # poisoned: every element must be written
        emulate(blob, "addtab", grid=-(-n // 64), block=64, args=[x, y, n])
        np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) + 3 * 3.0, rtol=1e-6, atol=1e-6)


# -- directives, expressions and errors

def _asm(text: str, **kw):
    return assemble_source(text, file="t.s", **kw)[1]


SECTIONS_AND_SYMBOLS = """
    .text
    .globl f
    .p2align 8
f:
    s_nop 0
    .byte 1, 2, 3, 4
    .p2align 3
    s_nop 1
    .balign 16, 0x55
    s_nop 2
    .p2alignl 5, 0xbf800000
loc_label:
    s_endpgm
    .weak w
    .hidden h
    .set h, f + 4
    .set alias, loc_label
    .size f, . - f
    .data
    .globl d
    .type d,@object
d:
    .quad f
    .quad ext_sym + 8
    .long loc_label
    .quad .Lx
.Lx:
    .long w
    .size d, 24
    .section .data.foo,"aw",@progbits
    .byte 9
    .section .note.x,"a",@note
    .long 1
    .bss
    .p2align 4
b:
    .zero 32
    .section .rodata.str,"aMS",@progbits,1
    .asciz "hi"
"""


def test_sections_symbols_relocations_equal_llvm_mc(tmp_path):
    """Section flags/types/alignment, code fill, symbol binding/visibility/size (an alias takes its base's size),
    undefined and weak symbols, ABS64/ABS32 data relocations against symbols and sections."""
    mc = require_tool("llvm-mc")
    src = tmp_path / "d.s"
    src.write_text(SECTIONS_AND_SYMBOLS)
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(src), "-o",
                    str(tmp_path / "d.o")], check=True, timeout=60)
    ours, _ = assemble_source(SECTIONS_AND_SYMBOLS, file="d.s", relocatable=True)
    summary = relocatable_summary(ours)
    assert summary == relocatable_summary((tmp_path / "d.o").read_bytes())
    assert len(summary[2]) == 5


def test_data_directives_and_expressions_equal_llvm_mc(tmp_path):
    text = """
    .set A, 3
    .equ B, A * 4 + (1 << 2)
    .text
    .globl f
f:
    s_mov_b32 s0, B
    s_mov_b32 s1, .Lb - .La
.La:
    s_nop 0
    s_nop 1
.Lb:
    s_endpgm
    .p2align 4
    .data
    .byte 1, -1, 'a'
    .short 0x1234, B
    .quad A - 10
    .asciz "x\\ty\\101"
    .zero 3
    .fill 2, 4, 0xdeadbeef
    .balign 8, 0x55
    .irpc c, 123
    .byte \\c * 2
    .endr
    """
    rel, _ = assemble_source(text, file="t.s", relocatable=True)
    their_rel, _ = llvm_link(tmp_path, ".amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"\n" + text)
    a, b = ElfFile(rel), ElfFile(their_rel)
    for name in (".text", ".data"):
        sa = next(s for s in a.sections if s.name == name)
        sb = next(s for s in b.sections if s.name == name)
        assert a.section_data(sa) == b.section_data(sb), name


def test_conditionals_and_macros():
    obj = _asm("""
    .macro twice op, reg
      \\op \\reg, \\reg
      \\op \\reg, \\reg
    .endm
    .set N, 2
    .if N == 2
      twice s_mov_b32, s1
    .elseif N == 3
      s_nop 3
    .else
      s_nop 4
    .endif
    .ifndef UNDEFINED
      s_nop 5
    .endif
    .ifc abc, abc
      s_nop 6
    .endif
    .rept N + 1
      s_nop 7
    .endr
    """)
    assert [str(i.instruction) for i in obj.listing] == ["s_mov_b32 s1, s1"] * 2 + ["s_nop 5", "s_nop 6"] + \
        ["s_nop 7"] * 3


@pytest.mark.parametrize("text, line, col, words", [
    ("  s_nop 0\n  .bogus 1\n", 2, 3, "unknown directive .bogus"),
    (".macro m a\n  v_add_f32 v1, v2, \\a\n.endm\n  m a3\n", 2, 21, "a3"),
    (".rept 2\n  s_nop 0\n", 1, 1, "no matching '.endr'"),
    (".if 1\n s_nop 0\n", 1, 1, "unmatched .if"),
    ("  .set x, 1 +\n", 1, 14, "expected an expression"),
    ("  .long undefined_sym * 2\n", 1, 9, "absolute"),
    (".amdhsa_kernel k\n .amdhsa_next_free_sgpr 1\n.end_amdhsa_kernel\nk:\n s_endpgm\n", 1, 1,
     ".amdhsa_next_free_vgpr directive is required"),
    (".amdhsa_kernel k\n .amdhsa_wavefront_size32 1\n .amdhsa_next_free_vgpr 1\n .amdhsa_next_free_sgpr 1\n"
     " .amdhsa_accum_offset 4\n.end_amdhsa_kernel\nk:\n s_endpgm\n", 2, 2, "requires GFX10+"),
    ("  .include \"nope.inc\"\n", 1, 12, "could not find include file"),
])
def test_errors_name_the_place(text, line, col, words):
    with pytest.raises(AsmFileError) as info:
        _asm(text)
    err = info.value
    assert (err.line, err.col) == (line, col), str(err)
    assert words in err.reason, str(err)


def test_macro_error_carries_instantiation_chain():
    with pytest.raises(AsmFileError) as info:
        _asm(".macro inner r\n  s_mov_b32 \\r, 1\n.endm\n.macro outer r\n  inner \\r\n.endm\n  outer v9\n")
    err = info.value
    assert (err.line, err.chain[0][1], err.chain[1][1]) == (2, 5, 7)
    text = str(err)
    assert text.count("note: while in macro instantiation") == 2 and text.startswith("t.s:2:")


def test_cli_outputs_and_json(tmp_path, capsys):
    out = tmp_path / "k.co"
    assert main(["asm", str(HANDWRITTEN), "-o", str(out)]) == 0
    assert codeobj.read(out.read_bytes()).kernels[0].name == "addtab"
    assert main(["asm", str(HANDWRITTEN), "-c", "-o", str(tmp_path / "k.o")]) == 0
    assert ElfFile((tmp_path / "k.o").read_bytes()).type == 1
    capsys.readouterr()
    assert main(["asm", str(HANDWRITTEN), "--json", "--show-encoding"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["kernels"][0]["name"] == "addtab" and data["instructions"][0]["text"].startswith(
        "s_load_dwordx4")
    bad = tmp_path / "bad.s"
    bad.write_text("  s_nop 0\n  v_add_f32 v1, v2, a3\n")
    assert main(["asm", str(bad), "--json"]) == 2
    diag = json.loads(capsys.readouterr().out)["diagnostics"][0]
    assert (diag["line"], diag["column"]) == (2, 21) and "a3" in diag["message"]
    assert main(["asm", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:21: error:") and "^" in err


def _rodata(blob: bytes) -> bytes:
    elf = ElfFile(blob)
    return elf.section_data(next(s for s in elf.sections if s.name == ".rodata"))


@pytest.mark.parametrize("text, mattr", [
    ((DATA / "amdhsa_all_fields.s").read_text(), "+sramecc,-xnack"),
    # only the required directives: every other field takes LLVM's default; no target directive, no version
    (".text\n.globl k\nk:\n s_endpgm\n.rodata\n.amdhsa_kernel k\n .amdhsa_next_free_vgpr 0\n"
     " .amdhsa_next_free_sgpr 0\n .amdhsa_accum_offset 4\n.end_amdhsa_kernel\n", None),
])
def test_amdhsa_fields_and_defaults_equal_llvm_mc(tmp_path, text, mattr):
    from jitgemm.codegen.codeobj.descriptor import KernelDescriptor

    mc = require_tool("llvm-mc")
    src = tmp_path / "k.s"
    src.write_text(text)
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", *([f"-mattr={mattr}"] if mattr else []),
                    "-filetype=obj", str(src), "-o", str(tmp_path / "k.o")], check=True)
    theirs = (tmp_path / "k.o").read_bytes()
    ours, _ = assemble_source(text, file="k.s", relocatable=True)
    assert KernelDescriptor.from_bytes(_rodata(ours)).fields() == KernelDescriptor.from_bytes(_rodata(theirs)).fields()
    assert _rodata(ours) == _rodata(theirs)
    a, b = ElfFile(ours), ElfFile(theirs)
    assert (a.flags, a.abi_version) == (b.flags, b.abi_version)  # e_flags from the target id; default v6


def test_reserve_xnack_mask_must_match_target():
    text = (DATA / "amdhsa_all_fields.s").read_text().replace("reserve_xnack_mask 0", "reserve_xnack_mask 1")
    with pytest.raises(AsmFileError, match="does not match target id"):
        _asm(text)


def test_qualify_accepts_assembly_files_with_contracts(tmp_path, monkeypatch, capsys):
    """`jitgemm qualify DIR` assembles `.s` files on the fly: a contract beside the file or inside its
    .amdgpu_metadata (jitgemm.contract) is qualified in the emulator, a lying one quarantined, a file that does
    not assemble refused with its position."""
    import copy

    import yaml
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    kernel = jitgemm.compile(GemmProblem.make(64, 64, 64, "fp16", layout="NN"), generator="llvm")
    text = kernel.stages["amdgcn"]
    folder = tmp_path / "asm"
    folder.mkdir()
    (folder / "good.s").write_text(text)
    (folder / "good.yaml").write_text(yaml.safe_dump(kernel.contract))
    lie = copy.deepcopy(kernel.contract)
    lie["operation"]["layout"] = "NT"
    (folder / "liar.s").write_text(text)
    (folder / "liar.yaml").write_text(yaml.safe_dump(lie))
    marker = f"    .name:           {kernel.name}\n"
    assert marker in text
    embedded = text.replace(marker, marker + f"    jitgemm.contract: {json.dumps(kernel.contract)}\n")
    (folder / "embedded.s").write_text(embedded)
    (folder / "broken.s").write_text("  s_nop 0\n  s_bogus_op s0\n")
    assert main(["qualify", str(folder), "--cases", "2"]) == 1
    out = capsys.readouterr().out
    assert f"ok          good.s:{kernel.name}" in out and f"ok          embedded.s:{kernel.name}" in out
    assert f"QUARANTINED liar.s:{kernel.name}" in out
    assert f"refused: {folder / 'broken.s'}:2:3: error: unknown instruction 's_bogus_op'" in out
    assert main(["qualify", str(folder), "--cases", "1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    verdicts = {k["label"].split(":")[0]: k["verdict"] for k in data["kernels"]}
    assert verdicts == {"good.s": "ok", "embedded.s": "ok", "liar.s": "quarantined"} and not data["ok"]
    assert data["refused"][0]["message"].startswith(f"{folder / 'broken.s'}:2:3:")


def test_spec_show_and_emulate_json(tmp_path, capsys):
    """Instruction facts for programs: the opcode JSON gives is the one llvm-mc encodes (SOP2 bits 29:23)."""
    mc = require_tool("llvm-mc")
    assert main(["spec", "show", "s_mul_i32", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    sop2 = next(e for e in facts["encodings"] if e["encoding"] == "ENC_SOP2")
    assert [o["field"] for o in sop2["operands"]] == ["SDST", "SSRC0", "SSRC1"]
    enc = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"],
                         input="s_mul_i32 s1, s2, s3", capture_output=True, text=True, check=True).stdout
    word = int.from_bytes(bytes(int(b, 16) for b in re.search(r"\[(.*)\]", enc).group(1).split(",")), "little")
    assert (word >> 23) & 0x7F == sop2["opcode"]
    assert main(["spec", "show", "s_mul_i3", "--json"]) == 2
    assert "S_MUL_I32" in json.loads(capsys.readouterr().out)["diagnostics"][0]["accepted"]
    co = tmp_path / "h.co"
    assert main(["asm", str(HANDWRITTEN), "-o", str(co)]) == 0
    capsys.readouterr()
    assert main(["emulate", str(co), "--json", "--arg", "f32:100:ones", "--arg", "f32:100:zeros", "--arg", "i32:70",
                 "--grid", "2"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["kernel"] == "addtab" and run["waves"] == 2
    assert run["buffers"][1]["sum"] == pytest.approx(70 * 10.0)  # 70 elements of 1 + 9, the rest untouched
    assert main(["emulate", str(tmp_path / "none.co"), "--json"]) == 2
    assert "cannot read" in json.loads(capsys.readouterr().out)["diagnostics"][0]["message"]


SENDMSG_CASES = [
    "MSG_INTERRUPT", "MSG_GS, GS_OP_EMIT, 1", "MSG_GS, GS_OP_CUT", "MSG_GS_DONE, GS_OP_NOP", "MSG_GS, GS_OP_NOP",
    "MSG_SAVEWAVE", "MSG_STALL_WAVE_GEN", "MSG_HALT_WAVES", "MSG_ORDERED_PS_DONE", "MSG_EARLY_PRIM_DEALLOC",
    "MSG_GS_ALLOC_REQ", "MSG_GET_DOORBELL", "MSG_GET_DDID", "MSG_SYSMSG, SYSMSG_OP_ECC_ERR_INTERRUPT",
    "MSG_SYSMSG, SYSMSG_OP_REG_RD", "MSG_SYSMSG, SYSMSG_OP_HOST_TRAP_ACK", "MSG_SYSMSG, SYSMSG_OP_TTRACE_PC",
    "MSG_INTERRUPT, 1", "MSG_GS_DONE", "MSG_GS, GS_OP_EMIT_CUT, 3", "MSG_GS, GS_OP_EMIT, 4", "5",
    "MSG_GS_DONE, GS_OP_CUT, 2", "MSG_GS_DONE, GS_OP_NOP, 1", "MSG_SYSMSG", "2, 2, 1", "MSG_BOGUS",
]


def test_sendmsg_operands_equal_llvm_mc():
    """sendmsg(...) gives the SIMM16 llvm-mc encodes (or is refused where llvm-mc refuses it), with the field
    positions of the spec's OPR_SENDMSG; the printed form is llvm-mc's canonical one."""
    from jitgemm.isa import operand_syntax as syn
    from jitgemm.isa.asm.parser import parse
    from jitgemm.isa.asm_errors import AsmError

    from jitgemm import isa

    mc = require_tool("llvm-mc")
    fields = {f.name: (f.ranges[0].offset, f.ranges[0].count) for f in isa.load_spec("gfx942").operand_types[
        "OPR_SENDMSG"].fields}
    assert fields["MSG"] == (0, 4) and fields["GSOP"][0] == syn.SENDMSG_OP_SHIFT
    assert fields["STREAMID"] == (syn.SENDMSG_STREAM_SHIFT, 2)
    text = "\n".join(f"s_sendmsg sendmsg({c})" for c in SENDMSG_CASES)
    proc = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"], input=text,
                          capture_output=True, text=True)
    refused = {int(m) for m in re.findall(r"<stdin>:(\d+):\d+: error", proc.stderr)}
    encodings = iter(re.findall(r"(s_sendmsg .*?)\s+; encoding: \[0x(..),0x(..)", proc.stdout))
    agreed = 0
    for line, case in enumerate(SENDMSG_CASES, 1):
        if line in refused:
            with pytest.raises(AsmError):
                parse(f"s_sendmsg sendmsg({case})")
        else:
            canon, lo, hi = next(encodings)
            imm = parse(f"s_sendmsg sendmsg({case})")[0].instruction.operands[0]
            assert imm.value == int(hi + lo, 16), case
            assert f"s_sendmsg {imm.text}" == canon, case
        agreed += 1
    assert agreed == len(SENDMSG_CASES) and len(refused) >= 8


METADATA_KERNEL = """
    .text
    .globl k
k:
    s_endpgm
    .rodata
    .amdhsa_kernel k
      .amdhsa_next_free_vgpr 1
      .amdhsa_next_free_sgpr 0
      .amdhsa_accum_offset 4
    .end_amdhsa_kernel
    .amdgpu_metadata
    amdhsa.version: [1, 2]
    amdhsa.kernels:
      - { .name: k, .symbol: k.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8, .group_segment_fixed_size: 0,
          .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 6, .vgpr_count: 1,
          .max_flat_workgroup_size: 64, jitgemm.contract: {kernel: k}, .args: ARGS }
    .end_amdgpu_metadata
"""


@pytest.mark.parametrize("args, drop", [
    ("[{ .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }]", None),
    ("[]", ".sgpr_count: 6, "),
    ("[{ .offset: 0, .value_kind: by_value }]", None),
    ("[{ .offset: 0, .size: eight, .value_kind: by_value }]", None),
])
def test_metadata_accepted_and_refused_as_llvm_mc(tmp_path, args, drop):
    mc = require_tool("llvm-mc")
    text = METADATA_KERNEL.replace("ARGS", args)
    if drop:
        text = text.replace(drop, "")
    src = tmp_path / "m.s"
    src.write_text(text)
    theirs = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(src), "-o",
                             str(tmp_path / "m.o")], capture_output=True, text=True)
    try:
        ours, _ = assemble_source(text, file="m.s", relocatable=True)
    except AsmFileError as exc:
        assert theirs.returncode != 0 and "invalid HSA metadata" in theirs.stderr
        assert "invalid HSA metadata" in exc.reason and exc.line == 12
        return
    assert theirs.returncode == 0, theirs.stderr
    assert relocatable_summary(ours) == relocatable_summary((tmp_path / "m.o").read_bytes())
    meta = codeobj.read(assemble_source(text, file="m.s")[0]).kernels[0]
    assert meta.contract == {"kernel": "k"}


def test_target_directive_must_match_arch(tmp_path, capsys):
    src = tmp_path / "t.s"
    src.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx950"\n  s_endpgm\n')
    assert main(["asm", str(src), "--arch", "gfx942", "-c", "-o", str(tmp_path / "t.o")]) == 2
    assert "names gfx950, but the target asked for is gfx942" in capsys.readouterr().err
    bad = tmp_path / "u.s"
    bad.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx942:bogus+"\n  s_endpgm\n')
    assert main(["asm", str(bad), "-c", "--json"]) == 2
    assert "bogus+" in json.loads(capsys.readouterr().out)["diagnostics"][0]["message"]
