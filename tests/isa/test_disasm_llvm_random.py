"""Random instruction words: wherever LLVM's AMDGPU disassembler decodes one, we print exactly its text.

Each sample is two seeded random 32-bit words, placed in its own section of an object that llvm-mc-22
assembles from `.byte` directives, so every sample is decoded from its first byte by both sides (no
sample can shift the next). `llvm-objdump-22 -d --mcpu=gfx942` (the disassembler and instruction printer
`llvm-mc -disassemble` uses, but it shows the input bytes and offsets) lists each section; at each offset
it lists we decode and compare the text and size. Half of the samples are fully random; the other half
keep the identifier bits of a random form of the spec (so every encoding is drawn, not only the dense
ones) with random other bits.

LLVM 22's disassembler crashes (SIGSEGV while printing) on a few words (e.g. a VOP3 source 255, the
literal that GFX9 VOP3 cannot carry, or a register tuple past v255); the sample it crashed in is counted
and skipped, and the batch goes on after it. Where LLVM does not decode a word (`.long`), we may: the
spec has instructions LLVM does not (counted). Where LLVM's own text marks the word invalid (a comment such
as `/*Invalid register, operand has 'VReg_64_Align2' register class*/`, `/* Invalid dpp_ctrl value */`,
`/*Invalid immediate*/`), the sample is counted as LLVM-invalid and not compared. Only whitespace is
normalized.

Bits LLVM 22 decodes but does not print on gfx942 (SMEM `nv`, DS `gds`; llvm-mc-22 rejects both there) are the
target profile's `unprinted_modifiers` (specs/targets/gfx942.yaml): the listing leaves them out, the decoded
instruction keeps them (test_unprinted_bits_round_trip).

Values LLVM 22 decodes in fields where AMD's spec defines none (`null` as SGPR 125, `src_flat_scratch_base_lo/hi`
as 230/231, `src_lds_direct` 254, M0 or EXEC where the spec's type has only SGPRs) are decode-only registers
(operand_syntax.DECODE_ONLY_REGISTERS, test_decode_only_registers); bits LLVM decodes into no syntax (op_sel of
the GFX8 legacy f16 opcodes, NEG/ABS of integer sources, glc of SMEM instructions that move no data, SMEM OFFSET
above its SGPR number) stay in the unprinted `keep_bits` (test_hidden_bits_round_trip, test_op_sel_where_llvm_has_it).

Known remaining differences (counted by kind and bounded by the counts measured on this seed, so a
regression fails): "spec lacks it": s_swappc_b64 with a constant or special source (4), v_log_legacy_f32 (2: LLVM
decodes VOP1 opcode 76, AMD's CDNA 3 spec lists no such opcode, so the subset cannot have it), src_flat_scratch_base_*
and src_pops_exiting_wave_id where the spec's type has no such value (s_movrels_b32, v_accvgpr_mov_b32: 3),
src_shared_base as the SDST of v_cmpx_neq_f16_e64, ttmp[10:11] as the SDST of v_subb_co_u32_e64; "other": bit 12 of
a FLAT offset (LLVM decodes 13 bits, llvm-mc takes 12). (A NEG bit on the B32 third source of v_cvt_pk_u8_f32, an i32
without printed modifiers in LLVM's profile, is now kept unprinted: forms._source_modifiers.)

Words LLVM prints as `.long` because a field the instruction does not use is set: tests/isa/test_disasm_zero_fields.py.
"""

from __future__ import annotations

import collections
import random
import re
import subprocess

from jitgemm.isa.disasm.decoder import decode_at
from jitgemm.isa.disasm.printer import format_instruction
from jitgemm.isa.spec.forms import forms_of
from jitgemm.isa.spec.targets import target_profile

from jitgemm import isa
from tests.fixtures.oracles import require_tool

SAMPLES = 30_000
BATCH = 3_000

_HEADER = re.compile(r"^Disassembly of section \.t(\d+):$")
_LINE = re.compile(r"^\t(.*?)\s*// ([0-9A-F]{12}): ((?:[0-9A-F]{8} ?)+)")


def samples(forms, n: int = SAMPLES, seed: int = 942) -> list[bytes]:
    """n samples of 8 bytes: even ones fully random, odd ones a random form's identifier, random elsewhere."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lo, hi = rng.getrandbits(32), rng.getrandbits(32)
        if i % 2:
            form = forms.forms[rng.randrange(len(forms.forms))]
            mask = form.enc.identifier_mask
            word = (form.base_word & mask) | ((lo | hi << 32) & ~mask & ((1 << 64) - 1))
            lo, hi = word & 0xFFFFFFFF, word >> 32 & 0xFFFFFFFF
        out.append(lo.to_bytes(4, "little") + hi.to_bytes(4, "little"))
    return out


def _objdump(batch: list[bytes], tmp, mc: str, objdump: str, mcpu: str = "gfx942"
             ) -> tuple[dict[int, list[tuple[int, str, int]]], bool]:
    """{sample: [(offset, text, size), ...]} as llvm-objdump lists each sample's section, and whether it
    crashed (then the last section listed is the one it crashed in: objdump's output is flushed up to it)."""
    src = tmp / "r.s"
    src.write_text("".join(f'.section .t{i},"ax",@progbits\n.byte {",".join(str(b) for b in s)}\n'
                           for i, s in enumerate(batch)))
    obj = tmp / "r.o"
    subprocess.run([mc, "-arch=amdgcn", f"-mcpu={mcpu}", "-filetype=obj", str(src), "-o", str(obj)], check=True,
                   capture_output=True)
    proc = subprocess.run([objdump, "-d", f"--mcpu={mcpu}", str(obj)], capture_output=True, text=True)
    out: dict[int, list[tuple[int, str, int]]] = {}
    current = None
    for line in proc.stdout.splitlines():
        m = _HEADER.match(line)
        if m:
            current = out.setdefault(int(m.group(1)), [])
            continue
        m = _LINE.match(line)
        if m and current is not None:
            current.append((int(m.group(2), 16), " ".join(m.group(1).split()), 4 * len(m.group(3).split())))
    return out, proc.returncode != 0


def _listed(batch, tmp, mc, objdump, crashed: list[bytes], mcpu: str = "gfx942"
            ) -> list[tuple[bytes, list[tuple[int, str, int]]]]:
    """(sample, objdump rows) for every sample of the batch that LLVM lists without crashing."""
    done = []
    while batch:
        got, crash = _objdump(batch, tmp, mc, objdump, mcpu)
        if not crash:
            return done + [(s, got.get(i, [])) for i, s in enumerate(batch)]
        bad = max(got, default=0)
        done += [(s, got.get(i, [])) for i, s in enumerate(batch[:bad])]
        crashed.append(batch[bad])
        batch = batch[bad + 1:]
    return done


def test_random_words_print_as_llvm(tmp_path, capsys):
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    forms = forms_of(isa.load_spec("gfx942"))
    unprinted = target_profile("gfx942").unprinted_modifiers  # what the listing leaves out, as LLVM does
    data = samples(forms)
    stats: collections.Counter = collections.Counter()
    differ: list[str] = []
    crashed: list[bytes] = []
    kinds: collections.Counter = collections.Counter()
    for start in range(0, len(data), BATCH):
        for sample, rows in _listed(data[start:start + BATCH], tmp_path, mc, objdump, crashed):
            stats["samples"] += 1
            first = True
            for offset, text, size in rows:
                d = decode_at(sample, offset, forms)
                if text.startswith(".long"):
                    stats["llvm: not an instruction"] += 1
                    if d.instruction is not None:
                        stats["  we decode it (spec has more)"] += 1
                    continue
                if _LLVM_INVALID.search(text):
                    stats["llvm: marks it invalid"] += 1
                    continue
                stats["llvm decodes"] += 1
                hide = unprinted.get(d.encoding, frozenset())
                ours = "" if d.instruction is None else " ".join(format_instruction(d.instruction, hide).split())
                if ours == text and d.size == size:
                    stats["  equal"] += 1
                else:
                    stats["  differ"] += 1
                    if first:
                        stats["samples differing"] += 1
                    first = False
                    kinds[_kind(text, ours)] += 1
                    differ.append(f"{sample[offset:offset + size].hex()}: llvm {text!r} ours {ours!r} ({d.size} "
                                  f"bytes, llvm {size})")
    with capsys.disabled():
        print(f"\nrandom words vs llvm-objdump-22 (gfx942): {dict(stats)}; {len(crashed)} samples crash LLVM; "
              f"differences by kind: {dict(kinds.most_common())}")
    assert stats["samples"] + len(crashed) == SAMPLES
    assert stats["llvm decodes"] > SAMPLES
    assert len(crashed) < SAMPLES // 100
    unexplained = {k: n for k, n in kinds.items() if k not in KNOWN}
    assert not unexplained, f"new kinds of difference {unexplained}, e.g.:\n" + "\n".join(differ[:20])
    over = {k: (kinds[k], bound) for k, bound in KNOWN.items() if kinds[k] > bound}
    assert not over, f"known differences grew {over}, e.g.:\n" + "\n".join(differ[:20])
    assert stats["  equal"] >= 0.999 * stats["llvm decodes"]


# The kinds of difference still open, with the count seen in the seeded sample (see the module docstring).
# Measured with LLVM 22.1 on this seed: 32,550 of 32,563 decoded instructions equal (1,755 of 30,000 samples
# differed at first; 840 of 29,958 before the target's unprinted modifiers, 611 before the decode-only registers
# and kept bits, 17 before s_sendmsg in the subset, cache controls, sub-word dots, f64 MFMA neg and fmamk's shared
# literal; 13 now. The new forms change which forms the odd samples draw, so this seed's are partly other words).
# "smem nv", "ds gds" and "legacy f16 op_sel" stay as kinds so that a regression fails.
KNOWN = {"smem nv": 0, "ds gds": 0, "spec lacks it": 11, "legacy f16 op_sel": 0, "other": 1}
_LLVM_INVALID = re.compile(r"/\*\s*Invalid|/\* \w+ is not supported")


def _kind(text: str, ours: str) -> str:
    if not ours:
        return "spec lacks it"
    if ours.endswith(" nv") and text.startswith("s_"):
        return "smem nv"
    if ours.endswith(" gds") and text.startswith("ds_"):
        return "ds gds"
    if "op_sel" in ours and "op_sel" not in text and "_legacy_f16" in text:
        return "legacy f16 op_sel"
    return "other"


# Per unprinted modifier: an instruction llvm-mc-22 encodes, and the bit of that modifier (SMEM NV is bit 15 of the
# first word, DS GDS bit 16: CDNA3 ISA guide, "Scalar Memory Operations" / "Data Share Operations" encodings)
# set on top. llvm-objdump-22 prints the word without the modifier; llvm-mc-22 rejects its spelling for gfx942.
_UNPRINTED = {"nv": ("s_load_dwordx2 s[4:5], s[2:3], 0x10 glc", 15),
              "gds": ("ds_cmpst_rtn_b32 v1, v2, v3, v4 offset:16", 16)}
_ENCODING = re.compile(r"encoding: \[([^\]]*)\]")


def test_unprinted_bits_round_trip(tmp_path):
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    spec = isa.load_spec("gfx942")
    forms = forms_of(spec)
    unprinted = target_profile("gfx942").unprinted_modifiers
    words = []
    for text, bit in _UNPRINTED.values():
        proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], capture_output=True,
                              text=True, input=text + "\n", check=True)
        base = bytes(int(b, 16) for b in _ENCODING.search(proc.stdout).group(1).split(","))
        word = int.from_bytes(base, "little") | 1 << bit
        words.append(word.to_bytes(len(base), "little"))
    rows, crashed = _objdump(words, tmp_path, mc, objdump)
    assert not crashed
    for i, (modifier, (text, _bit)) in enumerate(_UNPRINTED.items()):
        raw = words[i]
        assert rows[i] == [(0, text, len(raw))]                               # LLVM prints no trace of the bit
        d = decode_at(raw, 0, forms)
        assert d.instruction is not None and d.instruction.modifier(modifier) is True, (modifier, d)
        assert modifier in unprinted[d.encoding]
        assert " ".join(format_instruction(d.instruction, unprinted[d.encoding]).split()) == text
        assert bytes(isa.encode([d.instruction], spec).code) == raw          # the instruction keeps the bit
        proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], capture_output=True,
                              text=True, input=f"{text} {modifier}\n")
        assert "error" in proc.stderr, (modifier, proc.stderr)               # and LLVM refuses to spell it


def _mc_bytes(mc: str, text: str) -> bytes:
    proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], capture_output=True, text=True,
                          input=text + "\n", check=True)
    return bytes(int(b, 16) for b in _ENCODING.search(proc.stdout).group(1).split(","))


def _mc_error(mc: str, text: str) -> str:
    proc = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], capture_output=True, text=True,
                          input=text + "\n")
    return proc.stderr


def _with_field(spec, raw: bytes, encoding: str, field: str, value: int, keep: bool = False) -> bytes:
    """`raw` with one field of its encoding set to `value` (or, with keep, OR-ed into it), field layout from the
    spec (AMD's encoding tables)."""
    f = spec.encodings[encoding].fields[field]
    word = int.from_bytes(raw, "little")
    word = f.insert(word, (f.extract(word) | value) if keep else value)
    return word.to_bytes(len(raw), "little")


# A register value LLVM 22's disassembler names where the spec's operand type has none: (instruction llvm-mc
# assembles, encoding, field written over, value). CDNA3 ISA guide, "Scalar/Vector operands" tables: 125 is
# reserved, 230/231 and 254 are not sources on CDNA 3; 124/126/127 (M0, EXEC) outside SGPR-only fields.
_DECODE_ONLY = {
    "null": ("s_add_u32 s1, s3, s2", "ENC_SOP2", "SSRC0", 125),
    "src_flat_scratch_base_lo": ("v_add_f32_e32 v1, s3, v2", "ENC_VOP2", "SRC0", 230),
    "src_flat_scratch_base_hi": ("s_and_b32 s1, s3, s2", "ENC_SOP2", "SSRC1", 231),
    "src_lds_direct": ("v_min_f32_e32 v1, s3, v2", "ENC_VOP2", "SRC0", 254),
    "m0": ("scratch_load_dword v1, off, s2 offset:16", "ENC_FLAT_SCRATCH", "SADDR", 124),
    "exec_hi": ("s_load_dword s5, s[2:3], s33", "ENC_SMEM", "OFFSET", 127),
}


def test_decode_only_registers(tmp_path):
    """Decoded as llvm-objdump-22 names them, re-encoded from the instruction object to the same bytes; where
    llvm-mc-22 refuses the spelling for gfx942, the assembler refuses it too, with LLVM's reason and the column."""
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    spec = isa.load_spec("gfx942")
    forms = forms_of(spec)
    words = [_with_field(spec, _mc_bytes(mc, text), enc, field, value)
             for text, enc, field, value in _DECODE_ONLY.values()]
    rows, crashed = _objdump(words, tmp_path, mc, objdump)
    assert not crashed
    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.asm_errors import AsmError
    from jitgemm.isa.operand_syntax import DECODE_ONLY_SPELLINGS

    for i, name in enumerate(_DECODE_ONLY):
        raw = words[i]
        [(offset, text, size)] = rows[i]
        assert re.search(rf"\b{name}\b", text), (name, text)                     # LLVM names the value
        d = decode_at(raw, 0, forms)
        assert d.instruction is not None and " ".join(format_instruction(d.instruction).split()) == text
        assert d.size == size and bytes(isa.encode([d.instruction], spec).code) == raw
        why = DECODE_ONLY_SPELLINGS.get(name)
        if why is None:
            continue
        assert why in _mc_error(mc, text), (name, text)                     # llvm-mc's own reason
        try:
            assemble(text, forms)
        except AsmError as exc:
            assert why in str(exc) and f":1:{text.index(name) + 1}:" in str(exc), str(exc)
        else:
            raise AssertionError(f"{text!r} assembled; llvm-mc-22 refuses it")


# Bits LLVM decodes into no syntax (kept in the unprinted `keep_bits`): (instruction llvm-mc assembles, encoding,
# field, bits set on top, the spelling llvm-mc refuses or None). OP_SEL of a GFX8 legacy f16 opcode (no op_sel
# operand in LLVM's profile), NEG of an integer source, GLC of an SMEM instruction that moves no data, OFFSET above
# the SGPR number of an SMEM SGPR offset (CDNA3 ISA guide, "Scalar Memory Operations": the SGPR is 7 bits).
_HIDDEN = [
    ("v_mad_legacy_f16 v1, v2, v3, v4", "ENC_VOP3", "OP_SEL", 0b0101,
     "v_mad_legacy_f16 v1, v2, v3, v4 op_sel:[1,0,1,0]"),
    ("v_cvt_pkrtz_f16_f32 v1, v2, v3", "ENC_VOP3", "OP_SEL", 0b1000, "v_cvt_pkrtz_f16_f32 v1, v2, v3 op_sel:[0,0,1]"),
    ("v_ldexp_f32 v1, v2, v3", "ENC_VOP3", "NEG", 0b10, "v_ldexp_f32 v1, v2, -v3"),
    ("s_dcache_wb", "ENC_SMEM", "GLC", 1, "s_dcache_wb glc"),
    ("s_memtime s[4:5]", "ENC_SMEM", "GLC", 1, "s_memtime s[4:5] glc"),
    ("s_load_dword s5, s[2:3], s33", "ENC_SMEM", "OFFSET", 0x1FFF80, None),
    # a buffer cache control has no offset or nt in LLVM (modifiers.CACHE_CONTROL_UNWRITTEN); llvm-mc-22 takes
    # `nt` there but encodes no bit, so only the offset is a spelling it refuses
    ("buffer_wbl2 sc1", "ENC_MUBUF", "OFFSET", 0xD90, "buffer_wbl2 offset:3472 sc1"),
    ("buffer_inv sc0 sc1", "ENC_MUBUF", "NT", 1, None),
    # OP_SEL_HI of a packed sub-word integer dot (modifiers._packs_sub_word_integers): written over its default of
    # all ones (LLVM 22 marks a word with OP_SEL set on these invalid, but decodes any OP_SEL_HI)
    ("v_dot4_i32_i8 v1, v2, v3, v4", "ENC_VOP3P", "OP_SEL_HI", 0b101,
     "v_dot4_i32_i8 v1, v2, v3, v4 op_sel_hi:[1,0,1]"),
    ("v_dot8_u32_u4 v1, v2, v3, v4 neg_lo:[0,1,0]", "ENC_VOP3P", "OP_SEL_HI", 0b010, None),
]


def test_hidden_bits_round_trip(tmp_path):
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    spec = isa.load_spec("gfx942")
    forms = forms_of(spec)
    words = [_with_field(spec, _mc_bytes(mc, text), enc, field, bits, keep=field != "OP_SEL_HI")
             for text, enc, field, bits, _spelled in _HIDDEN]
    rows, crashed = _objdump(words, tmp_path, mc, objdump)
    assert not crashed
    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.asm_errors import AsmError

    for i, (text, _enc, field, _bits, spelled) in enumerate(_HIDDEN):
        raw = words[i]
        assert raw != _mc_bytes(mc, text)
        assert rows[i] == [(0, text, len(raw))], (text, rows[i])                # LLVM prints no trace of the bits
        d = decode_at(raw, 0, forms)
        assert d.instruction is not None and " ".join(format_instruction(d.instruction).split()) == text
        assert any(f == field for f, _v in d.instruction.modifier("keep_bits", ())), d.instruction
        assert bytes(isa.encode([d.instruction], spec).code) == raw           # the instruction keeps them
        if spelled is not None:
            assert "error" in _mc_error(mc, spelled), spelled
            try:
                assemble(spelled, forms)
            except AsmError:
                pass
            else:
                raise AssertionError(f"{spelled!r} assembled; llvm-mc-22 refuses it")


def test_op_sel_where_llvm_has_it(tmp_path):
    """Every VOP3 form with an OP_SEL field: llvm-objdump-22 prints op_sel for OP_SEL[0] = 1 exactly where the
    form offers the op_sel modifier (operand_syntax.NO_OPSEL and the f32-only rule of modifiers._selects_parts)."""
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    forms = forms_of(isa.load_spec("gfx942"))
    picked = []
    for form in forms.forms:
        if form.enc.name != "ENC_VOP3" or "OP_SEL" not in form.codecs or form.vop3p:
            continue
        word = form.base_word | form.codecs["OP_SEL"].pack(1)
        for slot in form.slots:
            value = 256 + 2 * (slot.src + 1) if slot.src is not None else None   # v2, v4, v6: aligned for any width
            if value is not None and slot.codec is not None and slot.table.by_value.get(value, ("",))[0] == "v":
                word |= slot.codec.pack(value)
        picked.append((form, word.to_bytes(form.size, "little")))
    rows, crashed = _objdump([w for _f, w in picked], tmp_path, mc, objdump)
    assert not crashed
    compared, wrong = 0, []
    for i, (form, raw) in enumerate(picked):
        [(_offset, text, _size)] = rows[i][:1] or [(0, ".long", 4)]
        if text.startswith(".long") or _LLVM_INVALID.search(text):
            continue
        compared += 1
        d = decode_at(raw, 0, forms)
        if ("op_sel" in text) != ("op_sel" in form.mods) or d.instruction is None \
                or " ".join(format_instruction(d.instruction).split()) != text:
            wrong.append(f"{form.mnemonic}: llvm {text!r}, ours {d.instruction} (op_sel offered: "
                         f"{'op_sel' in form.mods})")
    assert compared > 100 and not wrong, "\n".join(wrong)


def test_s_endpgm_immediate(tmp_path):
    """LLVM's s_endpgm takes an optional imm16 that AMD's spec gives no operand (operand_syntax.OPTIONAL_IMMEDIATES):
    llvm-mc-22 encodes it into SIMM16, llvm-objdump-22 prints it in decimal unless it is 0; so do we."""
    mc, objdump = require_tool("llvm-mc"), require_tool("llvm-objdump")
    spec = isa.load_spec("gfx942")
    forms = forms_of(spec)
    from jitgemm.isa.asm.assembler import assemble

    values = [0, 1, 64, 65, random.Random(11).randrange(66, 1 << 16), (1 << 16) - 1]
    texts = [f"s_endpgm {v}" for v in values]
    llvm = [_mc_bytes(mc, t) for t in texts]
    rows, crashed = _objdump(llvm, tmp_path, mc, objdump)
    assert not crashed
    for i, (v, text, raw) in enumerate(zip(values, texts, llvm, strict=True)):
        assert bytes(assemble(text, forms).code) == raw, text
        [(_offset, printed, _size)] = rows[i]
        assert printed == (text if v else "s_endpgm"), printed
        d = decode_at(raw, 0, forms)
        assert " ".join(format_instruction(d.instruction).split()) == printed
        assert bytes(isa.encode([d.instruction], spec).code) == raw


def test_sendmsg_every_immediate():
    """s_sendmsg's SIMM16 (type OPR_SENDMSG), all 65,536 values: printed as llvm-mc-22 -disassemble prints them
    (names, numeric sendmsg(M, O, S), or the plain number: operand_syntax.sendmsg_text) and re-encoded from the
    instruction object to the same word; our text assembles to what llvm-mc-22 assembles it to (the names drop
    bits outside MSG/OP/STREAM on both sides, so only the number and the numeric form give the word back)."""
    mc = require_tool("llvm-mc")
    spec = isa.load_spec("gfx942")
    forms = forms_of(spec)
    from jitgemm.isa.asm.assembler import assemble

    [form] = [f for f in forms.forms_for("s_sendmsg") if f.enc.name == "ENC_SOPP"]
    words = [(form.base_word | v).to_bytes(4, "little") for v in range(1 << 16)]
    src = "\n".join(",".join(hex(b) for b in w) for w in words)
    out = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-disassemble"], input=src, capture_output=True,
                         text=True, check=True).stdout
    llvm = [" ".join(line.split()) for line in out.splitlines() if line.strip().startswith("s_sendmsg")]
    assert len(llvm) == len(words)
    out = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], input="\n".join(llvm),
                         capture_output=True, text=True, check=True).stdout
    again = [bytes(int(b, 16) for b in m.group(1).split(",")) for m in _ENCODING.finditer(out)]
    assert len(again) == len(words)
    wrong = []
    for raw, text, back in zip(words, llvm, again, strict=True):
        d = decode_at(raw, 0, forms)
        ours = " ".join(format_instruction(d.instruction).split())
        if ours != text or bytes(isa.encode([d.instruction], spec).code) != raw \
                or bytes(assemble(ours, forms).code) != back or ("(" not in text and back != raw):
            wrong.append(f"{raw.hex()}: llvm {text!r} ours {ours!r}")
    assert not wrong, "\n".join(wrong[:20])
