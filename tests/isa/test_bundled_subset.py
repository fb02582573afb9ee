"""The bundled CDNA 3 subset (specs/amdgpu_isa_cdna3_subset.xml) checked against its authorities.

- llvm-mc-22 assembles a form of EVERY (instruction, encoding) pair; the bytes are decoded with the subset's
  own fields (identifier, OP, condition, every register/constant/immediate operand field). Pairs LLVM cannot
  express are listed in LLVM_REJECTS with the reason, and the test proves LLVM still rejects them.
- llvm-mc-22 encodes every predefined value of the main operand types as the subset says.
- Where AMD's verbatim excerpt has the same instruction, encoding, operand type or data format, the facts
  are equal; identifiers the subset derives are among AMD's, and every literal/DPP/SDWA/VOP3 variant AMD
  lists for a subset opcode is in the subset.
- tools/isa_subset/build.py (from tools/cdna3_subset/*.yaml) regenerates the committed XML byte for byte.

Register numbers, immediates and literals are drawn at random (seed printed; JITGEMM_TEST_SEED repeats a run).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from jitgemm.isa.spec import conditions as isa_expr

from jitgemm import isa
from tests.fixtures.oracles import REPO, require_tool

SUBSET = REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"
BUILD = REPO / "tools" / "isa_subset" / "build.py"
FACTS = REPO / "tools" / "cdna3_subset"
SEED = int(os.environ.get("JITGEMM_TEST_SEED", random.SystemRandom().randrange(1 << 30)))

# (instruction, encoding) pairs LLVM 22 cannot produce for gfx942, with the reason. The test fails when LLVM
# starts accepting one (so the list cannot go stale) or when a pair outside it is rejected.
LLVM_REJECTS: dict[tuple[str, str], str] = {
    ("V_NOP", "VOP1_INST_LITERAL"): "v_nop has no operand that could carry a literal",
    ("V_READFIRSTLANE_B32", "ENC_VOP3"): "LLVM: e64 variant of this instruction is not supported",
    ("V_ACCVGPR_MOV_B32", "VOP1_INST_LITERAL"): "LLVM: AccVGPR source cannot be a literal",
    ("V_ACCVGPR_MOV_B32", "VOP1_VOP_DPP"): "LLVM: dpp variant of this instruction is not supported",
    ("V_ACCVGPR_MOV_B32", "VOP1_VOP_SDWA"): "LLVM: sdwa variant of this instruction is not supported",
    ("V_ACCVGPR_MOV_B32", "ENC_VOP3"): "LLVM: e64 variant of this instruction is not supported",
    ("V_MOV_B64", "VOP1_VOP_SDWA"): "LLVM: sdwa variant of this instruction is not supported",
    # A literal and the implicit VCC read are two scalar values; gfx942 allows one per VALU instruction.
    ("V_CNDMASK_B32", "VOP2_INST_LITERAL"): "LLVM: literal + VCC violate the constant bus limit",
    ("V_ADDC_CO_U32", "VOP2_INST_LITERAL"): "LLVM: literal + VCC violate the constant bus limit",
    ("V_SUBB_CO_U32", "VOP2_INST_LITERAL"): "LLVM: literal + VCC violate the constant bus limit",
    ("V_SUBBREV_CO_U32", "VOP2_INST_LITERAL"): "LLVM: literal + VCC violate the constant bus limit",
    ("V_CLREXCP", "VOP1_INST_LITERAL"): "v_clrexcp has no operand that could carry a literal",
    ("V_SWAP_B32", "ENC_VOP3"): "LLVM: e64 variant of this instruction is not supported",
    ("S_CBRANCH_JOIN", "SOP1_INST_LITERAL"): "LLVM: invalid operand (s_cbranch_join takes an SGPR only)",
    ("S_CBRANCH_G_FORK", "SOP2_INST_LITERAL"): "LLVM: invalid operand (s_cbranch_g_fork takes SGPR pairs only)",
}
# Aliases the subset keeps from AMD's excerpt although LLVM does not know them.
LLVM_UNKNOWN_ALIASES: dict[str, str] = {
    "V_MFMA_F32_16X16X32BF8FP8": "AMD's compact fp8 name; LLVM only spells v_mfma_f32_16x16x32_bf8_fp8",
    "V_MFMA_F32_32X32X16BF8BF8": "AMD's compact fp8 name; LLVM only spells v_mfma_f32_32x32x16_bf8_bf8",
    "V_MFMA_F32_32X32X16FP8FP8": "AMD's compact fp8 name; LLVM only spells v_mfma_f32_32x32x16_fp8_fp8",
}
# Predefined values LLVM spells differently or not at all (operand type, name) -> reason.
LLVM_VALUE_REJECTS: dict[tuple[str, str], str] = {}

# Instructions whose returning forms LLVM refuses with AccVGPR data, so their forms always use VGPRs.
_LLVM_NO_ACC = {
    "GLOBAL_ATOMIC_ADD_F32": "LLVM: operands are not valid for this GPU or mode (AccVGPR with return)",
    "GLOBAL_ATOMIC_PK_ADD_F16": "LLVM: operands are not valid for this GPU or mode (AccVGPR with return)",
}
_SUFFIX = {"ENC_VOP1": "_e32", "VOP1_INST_LITERAL": "_e32", "ENC_VOP2": "_e32", "VOP2_INST_LITERAL": "_e32",
           "ENC_VOPC": "_e32", "VOPC_INST_LITERAL": "_e32", "VOP1_VOP_DPP": "_dpp", "VOP2_VOP_DPP": "_dpp",
           "VOP1_VOP_SDWA": "_sdwa", "VOP2_VOP_SDWA": "_sdwa", "VOPC_VOP_SDWA_SDST_ENC": "_sdwa"}
_VOP32 = {"ENC_VOP1", "ENC_VOP2", "ENC_VOPC"}
_VALU_PREFIXES = ("ENC_VOP", "VOP")
_DP_DPP = " row_newbcast:1"     # LLVM allows only row_newbcast for DPP of 64-bit ("DP ALU") operations


# ---------------------------------------------------------------------------------------------------------
# llvm-mc, batched


def assemble(llvm_mc: str, lines: list[str]) -> list[bytes | str]:
    """Assemble every line with one llvm-mc process: bytes per line, or LLVM's error text for that line."""
    proc = subprocess.run([llvm_mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    errors: dict[int, str] = {}
    for m in re.finditer(r"^<stdin>:(\d+):\d+: error: (.*)$", proc.stderr, re.M):
        errors.setdefault(int(m.group(1)), m.group(2).strip())
    encoded = [bytes(int(b, 16) for b in m.group(1).split(","))
               for m in re.finditer(r"; encoding: \[([^\]]*)\]", proc.stdout)]
    accepted = [i for i in range(1, len(lines) + 1) if i not in errors]
    if len(encoded) != len(accepted):
        raise AssertionError(f"llvm-mc printed {len(encoded)} encodings for {len(accepted)} accepted lines; "
                             f"stderr: {proc.stderr[:2000]}")
    it = iter(encoded)
    return [errors[i] if i in errors else next(it) for i in range(1, len(lines) + 1)]


# ---------------------------------------------------------------------------------------------------------
# forms: an assembly line for one (instruction, encoding) pair plus the field values it must encode to


@dataclass
class Form:
    inst: str
    encoding: str
    text: str
    expected: dict[str, int] = field(default_factory=dict)


class _Regs:
    """Disjoint random register ranges per operand slot, so a swapped field is always caught."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.slot = {"s": 0, "v": 0}

    def take(self, kind: str, count: int) -> int:
        bank = "s" if kind == "s" else "v"
        size = 16 if bank == "s" else 40
        base = self.slot[bank] * size
        self.slot[bank] += 1
        align = (4 if count >= 4 else 2 if count == 2 else 1) if bank == "s" else (2 if count >= 2 else 1)
        starts = [s for s in range(base, base + size - count + 1) if s % align == 0]
        assert starts and (base + size <= (96 if bank == "s" else 240)), "operand slots exhausted"
        return self.rng.choice(starts)


def _masked(value: int, spec_field) -> int:
    return value & ((1 << spec_field.width) - 1)


def _reg_names(t) -> set[str]:
    return {v.name[:1] if not v.name.startswith("acc") else "a" for v in t.values
            if re.fullmatch(r"(s|v|acc)\d+", v.name)}


def make_form(spec, inst, ie, enc, rng: random.Random) -> Form | None:
    """The LLVM spelling of `inst` in encoding `enc`, or None when no assembly line can select that encoding."""
    name = ie.encoding_name
    explicit = [o for o in ie.operands if not o.implicit]
    has_vop32 = any(e.encoding_name in _VOP32 for e in inst.encodings)
    mnemonic = inst.name.lower() + _SUFFIX.get(name, "")
    if name in ("ENC_VOP3", "VOP3_SDST_ENC") and has_vop32:
        mnemonic += "_e64"
    if name.endswith("_INST_LITERAL") and not any(o.field_name == "LITERAL" for o in explicit):
        return None
    form = Form(inst.name, name, "")
    regs = _Regs(rng)
    literal = None
    kinds: dict[str, str] = {}
    scalar_sources = 0
    valu = name.startswith(_VALU_PREFIXES)
    tokens: list[str] = []
    for o in explicit:
        otype = spec.operand_type(o.operand_type)
        if o.field_name is None:
            assert o.operand_type == "OPR_VCC", f"{inst.name}: operand without field of type {o.operand_type}"
            tokens.append("vcc")
            continue
        fld = enc.field(o.field_name)
        if o.field_name == "LITERAL":
            if literal is None:
                literal = (0x1000 | rng.randrange(0x1000)) if o.size <= 16 and o.size != 8 else \
                    (0x10000000 | rng.randrange(0x10000000))
            tokens.append(hex(literal))
            form.expected["LITERAL"] = literal
            continue
        if o.operand_type == "OPR_SIMM16":
            value = rng.randrange(0x8000) if name == "ENC_SOPK" else rng.randrange(8)
            tokens.append(hex(value))
            form.expected[o.field_name] = value
            continue
        if o.operand_type in ("OPR_SIMM8", "OPR_SIMM4"):   # s_atc_probe's probe mode, gpr_idx modes
            value = rng.randrange(8 if o.operand_type == "OPR_SIMM8" else 16)
            tokens.append(str(value))
            form.expected[o.field_name] = value
            continue
        if o.operand_type == "OPR_LABEL":
            value = rng.choice([-1, 1]) * rng.randrange(1, 300)
            tokens.append(str(value))
            form.expected[o.field_name] = value & 0xFFFF
            continue
        if o.operand_type == "OPR_SENDMSG":   # s_sendmsg: a raw 16-bit message word (llvm-mc reads any)
            value = rng.randrange(0x10000)
            tokens.append(str(value))
            form.expected[o.field_name] = value
            continue
        if o.operand_type == "OPR_WAITCNT":
            counts = {"VM": rng.randrange(63), "EXP": rng.randrange(7), "LGKM": rng.randrange(15)}
            word = 0
            for part in otype.fields:
                word = part.insert(word, counts[part.name])
            tokens.append(f"vmcnt({counts['VM']}) expcnt({counts['EXP']}) lgkmcnt({counts['LGKM']})")
            form.expected[o.field_name] = word
            continue
        classes = _reg_names(otype)
        if not classes:
            raise AssertionError(f"{inst.name} {name}: no form for operand type {o.operand_type}")
        count = 1
        if o.size > 32 and not (o.field_name == "VADDR" or (o.field_name == "ADDR" and name in
                                                                ("ENC_FLAT_GLBL", "ENC_FLAT_SCRATCH"))):
            count = (o.size + 31) // 32
        if classes == {"s"}:
            kind = "s"
        elif "v" in classes and "a" in classes and "s" not in classes:
            group = "cd" if o.field_name in ("VDST", "SRC2") and name == "VOP3P_MFMA" else \
                "ab" if name == "VOP3P_MFMA" else "data"
            kind = kinds.setdefault(group, "v" if inst.name in _LLVM_NO_ACC else rng.choice("va"))
        elif classes == {"a"}:
            kind = "a"
        else:
            kind = "v"
        if kind == "s" and valu and o.input:
            scalar_sources += 1
            if scalar_sources > 1:         # one scalar source per VALU instruction: use an inline constant
                value = rng.randrange(65)
                assert otype.has(str(value)), f"{inst.name}: {o.operand_type} has no inline constant"
                tokens.append(str(value))
                form.expected[o.field_name] = _masked(otype.value_of(str(value)), fld)
                continue
        first = regs.take(kind, 2 if inst.name.startswith("DS_GWS") else count)   # LLVM: GWS data VGPR even
        tokens.append(f"{kind}{first}" if count == 1 else f"{kind}[{first}:{first + count - 1}]")
        spec_name = f"{'acc' if kind == 'a' else kind}{first}"
        assert otype.has(spec_name), f"{inst.name}: {spec_name} is not a value of {o.operand_type}"
        form.expected[o.field_name] = _masked(otype.value_of(spec_name), fld)
    tail = ""
    if name in ("VOP1_VOP_DPP", "VOP2_VOP_DPP"):
        if any(o.size == 64 for o in explicit):
            tail = _DP_DPP
        else:
            perm = [rng.randrange(4) for _ in range(4)]
            row, bank = rng.randrange(1, 16), rng.randrange(1, 16)
            tail = f" quad_perm:[{','.join(map(str, perm))}] row_mask:{row:#x} bank_mask:{bank:#x}"
            form.expected.update(DPP_CTRL=perm[0] | perm[1] << 2 | perm[2] << 4 | perm[3] << 6, ROW_MASK=row,
                                 BANK_MASK=bank)
    elif name == "ENC_SMEM" and any(o.field_name == "SOFFSET" for o in explicit):
        imm = rng.randrange(1, 0x10000)
        tail = f" offset:{imm:#x}"
        form.expected["OFFSET"] = imm
    elif name in ("ENC_MUBUF", "ENC_MTBUF") and explicit:   # cache controls (buffer_wbl2) take no address
        imm = rng.randrange(0x1000)
        fmt = " format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_FLOAT]" if name == "ENC_MTBUF" else ""
        tail = f"{fmt} offen offset:{imm}"
        form.expected["OFFSET"] = imm
    elif name == "ENC_DS" and (explicit or inst.name.startswith("DS_GWS")):   # ds_nop takes no offset
        if re.search(r"(READ|WRITE|WRXCHG)2(ST64)?_", inst.name):
            a, b = rng.randrange(256), rng.randrange(256)
            tail = f" offset0:{a} offset1:{b}"
        else:
            off = rng.randrange(0x10000)
            a, b = off & 0xFF, off >> 8
            tail = f" offset:{off}"
        form.expected.update(OFFSET0=a, OFFSET1=b)
        if inst.name.startswith("DS_GWS"):
            tail += " gds"                 # LLVM writes the global wave sync instructions with gds only
    elif name.startswith("ENC_FLAT"):
        off = rng.randrange(0x1000) if name == "ENC_FLAT" else rng.randrange(-0x1000, 0x1000)
        tail = f" offset:{off}"
        form.expected["OFFSET"] = off & ((1 << enc.field("OFFSET").width) - 1)
        if any(o.field_name == "VDST" for o in explicit) and any(o.field_name == "DATA" for o in explicit):
            tail += " sc0"                 # atomics return the pre-op value only with SC0
    form.text = (mnemonic + " " + ", ".join(tokens) if tokens else mnemonic) + tail
    return form


def decode_check(spec, inst, ie, enc, form: Form, data: bytes) -> list[str]:
    """Differences between LLVM's bytes and what the subset says the pair encodes to."""
    problems = []
    if len(data) * 8 != enc.bit_count:
        return [f"LLVM emitted {len(data)} bytes, {enc.name} has {enc.bit_count} bits"]
    word = int.from_bytes(data, "little")
    if not enc.matches(word):
        problems.append(f"identifier: {word & enc.identifier_mask:#x} (masked) is not one of {enc.name}'s")
    op = enc.field("OP").extract(word)
    if op != ie.opcode:
        problems.append(f"OP field {op}, spec opcode {ie.opcode}")
    values = {name: f.extract(word) for name, f in enc.fields.items()}
    cond = enc.condition(ie.condition_name)
    if cond is None or not cond.holds(values):
        problems.append(f"condition {ie.condition_name} ({isa_expr.to_text(cond and cond.expression)}) "
                        f"does not hold for {values}")
    for fname, want in form.expected.items():
        if values[fname] != want:
            problems.append(f"field {fname} = {values[fname]:#x}, expected {want:#x}")
    return problems


# ---------------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def subset():
    return isa.load_spec(SUBSET, use_cache=False)


@pytest.fixture(scope="module")
def llvm_mc():
    return require_tool("llvm-mc")


# ---------------------------------------------------------------------------------------------------------
# tests


def test_subset_loads_without_dangling_references(subset):
    assert subset.warnings == ()
    c = subset.counts()
    assert c["instructions"] >= 1100 and c["encodings"] >= 28
    for inst in subset.instructions:
        for ie, enc in subset.encodings_of(inst.name):
            assert enc.condition(ie.condition_name) is not None, (inst.name, enc.name, ie.condition_name)
            for o in ie.operands:
                assert o.field_name is None or o.field_name in enc.fields, (inst.name, enc.name, o)
                subset.operand_type(o.operand_type)
                subset.data_format(o.data_format)
                assert o.size > 0, (inst.name, enc.name, o)
    for t in subset.operand_types.values():
        for sub in t.subtypes:
            subset.operand_type(sub)
    for enc in subset.encodings.values():
        ops = [enc.field("OP").extract(i) for i in enc.identifiers]
        used = sorted({ie.opcode for inst in subset.instructions for ie in inst.encodings
                       if ie.encoding_name == enc.name})
        assert sorted(ops) == used, f"{enc.name}: identifiers do not match the opcodes of its instructions"


def test_document_says_it_is_a_subset(subset):
    doc = subset.document
    assert "subset" in doc.copyright.lower() and "jitgemm" in doc.copyright
    assert "not AMD" in doc.copyright
    assert (doc.license, doc.release_date, doc.schema_version) == ("MIT", "2026-02-20", "1.1.1")
    assert subset.architecture.name == "AMD CDNA 3"
    text = SUBSET.read_text(encoding="utf-8")
    assert "Not AMD's file" in text[:2000]
    for tag in ("<Copyright>", "<CondtionExpression>", 'Radix="2"', 'IsBinaryMicrocodeRequired="'):
        assert tag in text, tag      # AMD's element/attribute spellings, which the loader relies on


def test_every_instruction_encoding_pair_agrees_with_llvm(subset, llvm_mc, capsys):
    rng = random.Random(SEED)
    pairs, forms = [], []
    for inst in subset.instructions:
        for ie, enc in subset.encodings_of(inst.name):
            pairs.append((inst, ie, enc))
            forms.append(make_form(subset, inst, ie, enc, rng))
    lines = [f.text for f in forms if f is not None]
    results = iter(assemble(llvm_mc, lines))
    agreed, rejected, failures = 0, 0, []
    for (inst, ie, enc), form in zip(pairs, forms, strict=True):
        key = (inst.name, enc.name)
        out = next(results) if form is not None else "no assembly form selects this encoding"
        if isinstance(out, str):
            if key in LLVM_REJECTS:
                rejected += 1
            else:
                failures.append(f"{key}: LLVM rejects `{form.text if form else ''}`: {out}")
            continue
        if key in LLVM_REJECTS:
            failures.append(f"{key}: listed as rejected ({LLVM_REJECTS[key]}) but LLVM accepts `{form.text}`")
            continue
        problems = decode_check(subset, inst, ie, enc, form, out)
        if problems:
            failures.append(f"{key}: `{form.text}` -> {out.hex()}: " + "; ".join(problems))
        else:
            agreed += 1
    stale = set(LLVM_REJECTS) - {(i.name, e.name) for i, _ie, e in pairs}
    with capsys.disabled():
        print(f"\n[bundled subset] seed {SEED}: {len(pairs)} (instruction, encoding) pairs checked, "
              f"{agreed} agree with llvm-mc-22, {rejected} listed as rejected by LLVM, {len(failures)} failing")
    assert not stale, f"LLVM_REJECTS names pairs the subset does not have: {sorted(stale)}"
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures)
    assert agreed + rejected == len(pairs)


def test_aliases_assemble_to_the_same_opcode(subset, llvm_mc):
    rng = random.Random(SEED + 1)
    checks = []
    for inst in subset.instructions:
        if not inst.aliases:
            continue
        ie, enc = subset.encodings_of(inst.name)[0]
        base = make_form(subset, inst, ie, enc, rng)
        for alias in inst.aliases:
            text = alias.lower() + base.text[len(inst.name):]
            checks.append((inst, ie, enc, alias, text))
    outs = assemble(llvm_mc, [c[4] for c in checks])
    failures = []
    for (inst, ie, enc, alias, text), out in zip(checks, outs, strict=True):
        if isinstance(out, str):
            if alias not in LLVM_UNKNOWN_ALIASES:
                failures.append(f"{alias}: LLVM rejects `{text}`: {out}")
            continue
        if alias in LLVM_UNKNOWN_ALIASES:
            failures.append(f"{alias}: listed as unknown to LLVM but `{text}` assembles")
            continue
        op = enc.field("OP").extract(int.from_bytes(out, "little"))
        if op != ie.opcode:
            failures.append(f"{alias}: assembles to OP {op}, {inst.name} has {ie.opcode}")
    assert checks and not failures, "\n".join(failures)


def test_buffer_loads_with_lds_use_the_same_opcodes(subset, llvm_mc):
    """`buffer_load_* ... lds` (data to LDS instead of VGPRs) is the same instruction with the LDS bit set."""
    rng = random.Random(SEED + 2)
    checks = []
    for inst in subset.instructions:
        ie, enc = subset.encodings_of(inst.name)[0]
        vdata = [o for o in ie.operands if o.field_name == "VDATA" and o.output and not o.input]  # not atomics
        if enc.name != "ENC_MUBUF" or not vdata or vdata[0].size != 32 or "_D16" in inst.name:
            continue                               # LLVM has no LDS form of the d16 (half-register) loads
        vaddr, srsrc, soff = rng.randrange(256), 4 * rng.randrange(20), rng.randrange(80, 100)
        checks.append((inst, ie, enc, (vaddr, srsrc, soff),
                       f"{inst.name.lower()} v{vaddr}, s[{srsrc}:{srsrc + 3}], s{soff} offen lds"))
    outs = assemble(llvm_mc, [c[4] for c in checks])
    failures = []
    for (inst, ie, enc, (vaddr, srsrc, soff), text), out in zip(checks, outs, strict=True):
        if isinstance(out, str):
            failures.append(f"{inst.name}: LLVM rejects `{text}`: {out}")
            continue
        word = int.from_bytes(out, "little")
        got = {n: enc.field(n).extract(word) for n in ("OP", "LDS", "VADDR", "SRSRC", "SOFFSET")}
        want = {"OP": ie.opcode, "LDS": 1, "VADDR": vaddr, "SRSRC": srsrc, "SOFFSET": soff}
        if not enc.matches(word) or got != want:
            failures.append(f"{inst.name}: `{text}` -> {out.hex()}: {got} != {want}")
    assert len(checks) >= 5 and not failures, "\n".join(failures)


def _llvm_spelling(name: str) -> str:
    if name == "SRC_LITERAL":
        return "0x12345678"
    m = re.fullmatch(r"acc(\d+)", name)
    if m:
        return f"a{m.group(1)}"
    return name.lower()


# operand type -> (assembly with {} for the value, encoding, field); SRC_LITERAL selects the literal variant
_LITERAL_VARIANT = {"ENC_VOP1": "VOP1_INST_LITERAL", "ENC_SOP1": "SOP1_INST_LITERAL"}
_VALUE_PROBES = {
    "OPR_SRC": ("v_mov_b32_e32 v5, {}", "ENC_VOP1", "SRC0"),
    "OPR_SSRC": ("s_mov_b32 s5, {}", "ENC_SOP1", "SSRC0"),
    "OPR_SDST": ("s_mov_b32 {}, s1", "ENC_SOP1", "SDST"),
    "OPR_VGPR": ("v_mov_b32_e32 {}, v1", "ENC_VOP1", "VDST"),
    "OPR_ACCVGPR": ("v_accvgpr_write_b32 {}, v1", "ENC_VOP3P", "VDST"),
    "OPR_SRC_ACCVGPR": ("v_accvgpr_read_b32 v1, {}", "ENC_VOP3P", "SRC0"),
    "OPR_SSRC_NOLIT": ("buffer_load_dword v1, off, s[4:7], {}", "ENC_MUBUF", "SOFFSET"),
    "OPR_SRC_VGPR_OR_ACCVGPR_OR_CONST": ("v_mfma_f32_4x4x1_16b_f32 v[0:3], v4, v5, {}", "VOP3P_MFMA", "SRC2"),
}


def test_predefined_values_agree_with_llvm(subset, llvm_mc, capsys):
    checks = []
    for tname, (template, enc_name, fname) in _VALUE_PROBES.items():
        otype = subset.operand_type(tname)
        enc = subset.encoding(enc_name)
        for v in otype.values:
            if tname == "OPR_SRC_VGPR_OR_ACCVGPR_OR_CONST" and re.fullmatch(r"(v|acc)\d+", v.name):
                continue                  # registers need 4-aligned tuples here; OPR_SRC/OPR_ACCVGPR cover them
            if tname == "OPR_SSRC_NOLIT" and not re.fullmatch(r"s\d+|-?\d+|M0", v.name):
                continue                  # LLVM's buffer SOFFSET takes SGPRs, M0 and inline integers only
            checks.append((tname, v, enc, fname, template.format(_llvm_spelling(v.name))))
    outs = assemble(llvm_mc, [c[4] for c in checks])
    agreed, failures = 0, []
    for (tname, v, enc, fname, text), out in zip(checks, outs, strict=True):
        key = (tname, v.name)
        if isinstance(out, str):
            if key not in LLVM_VALUE_REJECTS:
                failures.append(f"{key}: LLVM rejects `{text}`: {out}")
            continue
        word = int.from_bytes(out, "little")
        if v.name == "SRC_LITERAL":
            lit_enc = subset.encoding(_LITERAL_VARIANT[enc.name])
            got = lit_enc.field(fname).extract(word), lit_enc.field("LITERAL").extract(word)
            ok = got == (v.value, 0x12345678)
        else:
            got = enc.field(fname).extract(word & ((1 << enc.bit_count) - 1))
            ok = got == _masked(v.value, enc.field(fname))
        if ok:
            agreed += 1
        else:
            failures.append(f"{key}: `{text}` -> {out.hex()}: field {fname} = {got}, subset value {v.value}")
    with capsys.disabled():
        print(f"\n[bundled subset] {len(checks)} predefined values checked against llvm-mc-22, {agreed} agree")
    names = {(c[0], c[1].name) for c in checks}
    for must in [("OPR_SSRC", "s7"), ("OPR_SRC", "VCC_LO"), ("OPR_SRC", "EXEC_LO"), ("OPR_SRC", "M0"),
                 ("OPR_SRC", "-16"), ("OPR_SRC", "64"), ("OPR_SRC", "0.5"), ("OPR_SRC", "-4.0"),
                 ("OPR_SRC", "1.0"), ("OPR_SRC", "0.15915494"), ("OPR_SRC", "v9"), ("OPR_ACCVGPR", "acc3"),
                 ("OPR_SRC", "SRC_LITERAL")]:
        assert must in names, must
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------------------------
# agreement with AMD's excerpt


def _ranges(f):
    return [(r.offset, r.count, r.padding_count, r.padding_value) for r in f.ranges]


def test_agrees_with_amds_excerpt(subset, excerpt_spec):
    amd = excerpt_spec
    problems = []
    for name, a in amd.encodings.items():
        s = subset.encodings.get(name)
        if s is None:
            problems.append(f"encoding {name} is missing")
            continue
        if (s.bit_count, s.order, s.identifier_mask) != (a.bit_count, a.order, a.identifier_mask):
            problems.append(f"encoding {name}: bits/order/mask {(s.bit_count, s.order, hex(s.identifier_mask))} "
                            f"vs AMD {(a.bit_count, a.order, hex(a.identifier_mask))}")
        if {n: _ranges(f) for n, f in s.fields.items()} != {n: _ranges(f) for n, f in a.fields.items()}:
            problems.append(f"encoding {name}: fields differ")
        extra = set(s.identifiers) - set(a.identifiers)
        if extra:
            problems.append(f"encoding {name}: identifiers not in AMD's list: {sorted(hex(i) for i in extra)}")
        amd_conds = {c.name: isa_expr.to_data(c.expression) for c in a.conditions}
        for c in s.conditions:
            if c.name in amd_conds and isa_expr.to_data(c.expression) != amd_conds[c.name]:
                problems.append(f"encoding {name}: condition {c.name} differs")
        if set(amd_conds) - {c.name for c in s.conditions}:
            problems.append(f"encoding {name}: conditions missing")
    for a in amd.instructions:
        s = subset.find_instruction(a.name)
        if s is None or s.name != a.name:
            problems.append(f"instruction {a.name} is missing")
            continue
        if (s.aliases, dict(s.flags), s.functional_group, s.functional_subgroups) != \
                (a.aliases, dict(a.flags), a.functional_group, a.functional_subgroups):
            problems.append(f"instruction {a.name}: aliases/flags/group differ")
        if s.encodings != a.encodings:
            problems.append(f"instruction {a.name}: encodings/operands differ:\n  subset {s.encodings}\n"
                            f"  AMD    {a.encodings}")
    for name, a in amd.operand_types.items():
        s = subset.operand_types.get(name)
        if s is None:
            problems.append(f"operand type {name} is missing")
            continue
        if (s.partitioned, sorted(s.subtypes)) != (a.partitioned, sorted(a.subtypes)):
            problems.append(f"operand type {name}: partitioned/subtypes differ")
        if {v.name: v.value for v in s.values} != {v.name: v.value for v in a.values}:
            problems.append(f"operand type {name}: predefined values differ")
        if {f.name: _ranges(f) for f in s.fields} != {f.name: _ranges(f) for f in a.fields}:
            problems.append(f"operand type {name}: fields differ")
    for name, a in amd.data_formats.items():
        s = subset.data_formats.get(name)
        if s is None:
            problems.append(f"data format {name} is missing")
            continue
        def shape(d):
            return (d.data_type, d.bit_count, d.component_count,
                    [[(f.name, _ranges(f), f.signedness) for f in m.fields] for m in d.attributes])
        if shape(s) != shape(a):
            problems.append(f"data format {name} differs: {shape(s)} vs {shape(a)}")
    assert not problems, "\n".join(problems)


# VOP opcode families: the variant encodings that share a base encoding's opcode space, with the offset of
# the opcode in each (the VOP3 promotion adds 320 to VOP1 and 256 to VOP2 opcodes).
_VARIANTS = {
    "ENC_VOP1": {"VOP1_INST_LITERAL": 0, "VOP1_VOP_DPP": 0, "VOP1_VOP_SDWA": 0, "ENC_VOP3": 320},
    "ENC_VOP2": {"VOP2_INST_LITERAL": 0, "VOP2_VOP_DPP": 0, "VOP2_VOP_SDWA": 0, "ENC_VOP3": 256},
    "ENC_VOPC": {"VOPC_INST_LITERAL": 0, "VOPC_VOP_SDWA_SDST_ENC": 0, "ENC_VOP3": 0},
    "ENC_SOP1": {"SOP1_INST_LITERAL": 0}, "ENC_SOP2": {"SOP2_INST_LITERAL": 0}, "ENC_SOPC": {"SOPC_INST_LITERAL": 0},
}


def test_variants_follow_amds_identifier_lists(subset, excerpt_spec):
    """A variant encoding is in the subset exactly when AMD's identifier list has the opcode. (AMD's ENC_VOP3
    list leaves out the carry instructions, whose promoted form the subset puts in VOP3_SDST_ENC.)"""
    problems = []
    for inst in subset.instructions:
        have = {ie.encoding_name: ie.opcode for ie in inst.encodings}
        for base, variants in _VARIANTS.items():
            if base not in have:
                continue
            for var, offset in variants.items():
                amd_enc = excerpt_spec.encodings[var]
                op = have[base] + offset
                in_amd = any(amd_enc.field("OP").extract(i) == op for i in amd_enc.identifiers)
                in_subset = var in have
                if in_amd != in_subset:
                    problems.append(f"{inst.name}: {var} (opcode {op}) is {'' if in_amd else 'not '}in AMD's "
                                    f"list but {'' if in_subset else 'not '}in the subset")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------
# the generator


def _load_builder():
    spec = importlib.util.spec_from_file_location("cdna3_subset_build", BUILD)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_build_regenerates_the_committed_file(tmp_path):
    out = tmp_path / "subset.xml"
    proc = subprocess.run([sys.executable, str(BUILD), "--arch", "gfx942", "--output", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == SUBSET.read_bytes(), "specs/amdgpu_isa_cdna3_subset.xml is stale: run build.py"
    assert SUBSET.stat().st_size < 6_500_000


def test_build_reports_bad_facts_with_their_place(tmp_path):
    builder = _load_builder()
    folder = tmp_path / "facts"
    shutil.copytree(FACTS, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    text = (folder / "encodings.yaml").read_text(encoding="utf-8")
    (folder / "encodings.yaml").write_text(text.replace('OP: "15:8"', "OP: 15:8", 1), encoding="utf-8")
    with pytest.raises(builder.BuildError, match=r"encodings\.yaml: encodings\.ENC_SOP1\.fields\.OP.*quoted"):
        builder.build(folder)
    (folder / "encodings.yaml").write_text(text, encoding="utf-8")
    inst = (folder / "instructions.yaml").read_text(encoding="utf-8")
    (folder / "instructions.yaml").write_text(inst.replace("name: S_MOV_B64, op: 1, t: B64",
                                                           "name: S_MOV_B64, op: 1, t: B65", 1), encoding="utf-8")
    with pytest.raises(builder.BuildError, match=r"instructions\.yaml: .*S_MOV_B64.*data format 'B65'"):
        builder.build(folder)
