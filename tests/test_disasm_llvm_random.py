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

Known remaining differences (counted by kind and bounded by the counts measured on this seed, so a
regression fails): `op_sel` on the GFX8 legacy f16 opcodes; words LLVM decodes and the spec does not ("spec lacks
it": `null` as SGPR 125, `src_flat_scratch_base_lo/hi` as 230/231, `src_lds_direct` 254, EXEC or M0 where the spec
allows only SGPRs, the high bits of a 21-bit SMEM offset field that names an SGPR); "other": the s_endpgm
immediate, `glc` on SMEM instructions without a memory operand (s_dcache_*, s_memtime, s_atc_probe*), NEG/ABS
bits on integer sources, f64 MFMA `neg:` vs `blgp:`, an offset on buffer_wbl2/buffer_inv.
"""

from __future__ import annotations

import collections
import random
import re
import subprocess

from jitgemm.isa.decoder import decode_at
from jitgemm.isa.forms import forms_of
from jitgemm.isa.printer import format_instruction
from jitgemm.isa.targets import target_profile

from jitgemm import isa
from tests.oracles import require_tool

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


def _objdump(batch: list[bytes], tmp, mc: str, objdump: str) -> tuple[dict[int, list[tuple[int, str, int]]], bool]:
    """{sample: [(offset, text, size), ...]} as llvm-objdump lists each sample's section, and whether it
    crashed (then the last section listed is the one it crashed in: objdump's output is flushed up to it)."""
    src = tmp / "r.s"
    src.write_text("".join(f'.section .t{i},"ax",@progbits\n.byte {",".join(str(b) for b in s)}\n'
                           for i, s in enumerate(batch)))
    obj = tmp / "r.o"
    subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)], check=True,
                   capture_output=True)
    proc = subprocess.run([objdump, "-d", "--mcpu=gfx942", str(obj)], capture_output=True, text=True)
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


def _listed(batch, tmp, mc, objdump, crashed: list[bytes]) -> list[tuple[bytes, list[tuple[int, str, int]]]]:
    """(sample, objdump rows) for every sample of the batch that LLVM lists without crashing."""
    done = []
    while batch:
        got, crash = _objdump(batch, tmp, mc, objdump)
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
    assert stats["  equal"] >= 0.97 * stats["llvm decodes"]


# The kinds of difference still open, with the count seen in the seeded sample (see the module docstring).
# Measured with LLVM 22.1 on this seed: 31,994 of 32,605 decoded instructions equal (1,755 of 30,000 samples
# differed at first; 840 of 29,958 before the target's unprinted modifiers, 611 now). "smem nv" and "ds gds"
# stay as kinds so that a printed nv/gds fails the test.
KNOWN = {"smem nv": 0, "ds gds": 0, "spec lacks it": 551, "legacy f16 op_sel": 14, "other": 46}
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
