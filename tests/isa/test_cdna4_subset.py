"""The bundled CDNA 4 (gfx950) subset, specs/amdgpu_isa_cdna4_subset.xml, against its authorities.

- tools/isa_subset/build.py regenerates it byte for byte from tools/cdna4_subset/*.yaml over the CDNA 3 facts.
- `isa.load_spec("gfx950")` gives it, and the spec knows its target (its ArchitectureName -> profile family).
- Every gfx950-only spelling of llvm-mc 22 (accepted for gfx950, "not supported" for gfx942) is an instruction
  or alias of the subset, and the gfx942-only ones are gone.
- Where AMD's verbatim CDNA 4 excerpt has the same encoding, instruction or data format, the facts are equal,
  except the differences listed (with their reason) in DIFFERENCES.
- The spec-generated corpus (every instruction in every encoding, each operand class and modifier) assembles to
  llvm-mc-22 -mcpu=gfx950's bytes and disassembles to its text.
"""

from __future__ import annotations

import collections
import subprocess
import sys

import pytest

from jitgemm import isa
from tests.fixtures.oracles import REPO, require_cdna4_excerpt, require_tool

SUBSET = REPO / "specs" / "amdgpu_isa_cdna4_subset.xml"
BUILD = REPO / "tools" / "isa_subset" / "build.py"

# The 105 spellings llvm-mc 22 knows for gfx950 and not for gfx942: every v_/s_/ds_/buffer_/global_ mnemonic
# string of libLLVM 22 that llvm-mc-22 -mcpu=gfx950 accepts and -mcpu=gfx942 rejects as "not supported on this
# GPU" (104), plus v_mfma_ld_scale_b32. test_gfx950_only_spellings re-checks both halves with llvm-mc.
GFX950_ONLY = """
buffer_atomic_pk_add_bf16 ds_read_b64_tr_b16 ds_read_b64_tr_b4 ds_read_b64_tr_b8 ds_read_b96_tr_b6
global_load_lds_dwordx3 global_load_lds_dwordx4 v_ashr_pk_i8_i32 v_ashr_pk_u8_i32 v_bitop3_b16 v_bitop3_b32
v_cvt_f32_bf16 v_cvt_pk_bf16_f32 v_cvt_pk_f16_f32 v_cvt_scalef32_2xpk16_bf6_f32 v_cvt_scalef32_2xpk16_fp6_f32
v_cvt_scalef32_f16_bf8 v_cvt_scalef32_f16_fp8 v_cvt_scalef32_f32_bf8 v_cvt_scalef32_f32_fp8
v_cvt_scalef32_pk32_bf16_bf6 v_cvt_scalef32_pk32_bf16_fp6 v_cvt_scalef32_pk32_bf6_bf16 v_cvt_scalef32_pk32_bf6_f16
v_cvt_scalef32_pk32_f16_bf6 v_cvt_scalef32_pk32_f16_fp6 v_cvt_scalef32_pk32_f32_bf6 v_cvt_scalef32_pk32_f32_fp6
v_cvt_scalef32_pk32_fp6_bf16 v_cvt_scalef32_pk32_fp6_f16 v_cvt_scalef32_pk_bf16_bf8 v_cvt_scalef32_pk_bf16_fp4
v_cvt_scalef32_pk_bf16_fp8 v_cvt_scalef32_pk_bf8_bf16 v_cvt_scalef32_pk_bf8_f16 v_cvt_scalef32_pk_bf8_f32
v_cvt_scalef32_pk_f16_bf8 v_cvt_scalef32_pk_f16_fp4 v_cvt_scalef32_pk_f16_fp8 v_cvt_scalef32_pk_f32_bf8
v_cvt_scalef32_pk_f32_fp4 v_cvt_scalef32_pk_f32_fp8 v_cvt_scalef32_pk_fp4_bf16 v_cvt_scalef32_pk_fp4_f16
v_cvt_scalef32_pk_fp4_f32 v_cvt_scalef32_pk_fp8_bf16 v_cvt_scalef32_pk_fp8_f16 v_cvt_scalef32_pk_fp8_f32
v_cvt_scalef32_sr_bf8_bf16 v_cvt_scalef32_sr_bf8_f16 v_cvt_scalef32_sr_bf8_f32 v_cvt_scalef32_sr_fp8_bf16
v_cvt_scalef32_sr_fp8_f16 v_cvt_scalef32_sr_fp8_f32 v_cvt_scalef32_sr_pk32_bf6_bf16 v_cvt_scalef32_sr_pk32_bf6_f16
v_cvt_scalef32_sr_pk32_bf6_f32 v_cvt_scalef32_sr_pk32_fp6_bf16 v_cvt_scalef32_sr_pk32_fp6_f16
v_cvt_scalef32_sr_pk32_fp6_f32 v_cvt_scalef32_sr_pk_fp4_bf16 v_cvt_scalef32_sr_pk_fp4_f16
v_cvt_scalef32_sr_pk_fp4_f32 v_cvt_sr_bf16_f32 v_cvt_sr_f16_f32 v_dot2_f32_bf16 v_dot2c_f32_bf16 v_maximum3_f32
v_mfma_f32_16x16x128_f8f6f4 v_mfma_f32_16x16x32_bf16 v_mfma_f32_16x16x32_f16 v_mfma_f32_16x16x32bf16
v_mfma_f32_16x16x32f16 v_mfma_f32_32x32x16_bf16 v_mfma_f32_32x32x16_f16 v_mfma_f32_32x32x16bf16
v_mfma_f32_32x32x16f16 v_mfma_f32_32x32x64_f8f6f4 v_mfma_i32_16x16x64_i8 v_mfma_i32_16x16x64i8
v_mfma_i32_32x32x32_i8 v_mfma_i32_32x32x32i8 v_mfma_scale_f32_16x16x128_f8f6f4 v_mfma_scale_f32_32x32x64_f8f6f4
v_minimum3_f32 v_permlane16_swap_b32 v_permlane32_swap_b32 v_pk_maximum3_f16 v_pk_minimum3_f16 v_prng_b32
v_smfmac_f32_16x16x128_bf8_bf8 v_smfmac_f32_16x16x128_bf8_fp8 v_smfmac_f32_16x16x128_fp8_bf8
v_smfmac_f32_16x16x128_fp8_fp8 v_smfmac_f32_16x16x64_bf16 v_smfmac_f32_16x16x64_f16 v_smfmac_f32_32x32x32_bf16
v_smfmac_f32_32x32x32_f16 v_smfmac_f32_32x32x64_bf8_bf8 v_smfmac_f32_32x32x64_bf8_fp8
v_smfmac_f32_32x32x64_fp8_bf8 v_smfmac_f32_32x32x64_fp8_fp8 v_smfmac_i32_16x16x128_i8 v_smfmac_i32_32x32x64_i8
v_mfma_ld_scale_b32
""".split()
GFX942_ONLY = ["v_mfma_f32_16x16x8_xf32", "v_mfma_f32_32x32x4_xf32"]

# Facts where the subset deliberately differs from AMD's file (tools/cdna4_subset/*.yaml, marked [D]).
DIFFERENCES = {
    ("encoding", "ENC_VOP3PX2", "identifiers"):
        "AMD's identifiers put the MFMA half's first dword (0xD3AD/0xD3AE) in bits 16-31; real code (LLVM, Triton) "
        "has the load-scale prefix 0xD3AC there and the MFMA opcode in bits 80-86",
    ("operand", "V_PERMLANE16_SWAP_B32", "io"): "the swap reads both operands; AMD marks them output only",
    ("operand", "BUFFER_ATOMIC_PK_ADD_BF16", "io"): "with sc0 VDATA also returns the old value (as every atomic of "
                                                     "the CDNA 3 subset); AMD marks it output only",
    ("operand", "GLOBAL_LOAD_LDS_DWORDX4", "io"): "no VDST: LLVM's syntax has none, the data goes to LDS at M0",
    ("operands", "GLOBAL_LOAD_LDS_DWORDX4"): "no VDST: LLVM's syntax has none, the data goes to LDS at M0",
    ("operand", "GLOBAL_LOAD_LDS_DWORDX3", "io"): "no VDST: LLVM's syntax has none, the data goes to LDS at M0",
    ("operands", "GLOBAL_LOAD_LDS_DWORDX3"): "no VDST: LLVM's syntax has none, the data goes to LDS at M0",
    ("operands", "V_MOV_B64"): "kept from the CDNA 3 subset (FMT_NUM_B64, a raw 64-bit copy); AMD's CDNA 4 file "
                               "types it FMT_NUM_U64",
    ("operand", "V_PERMLANE32_SWAP_B32", "io"): "the swap reads both operands; AMD marks them output only",
}
# Identifiers the subset has and AMD's full list lacks: instructions llvm-mc-22 -mcpu=gfx950 encodes that AMD's
# file has no opcode for (the loader reports them for AMD's file, see test_loader_reports_gaps_of_amds_file).
KNOWN_GAPS = {
    "ENC_VOP3P": {0b11010011101011000000000000000000},  # V_MFMA_LD_SCALE_B32, VOP3P opcode 44
    # DS_GWS_* (ops 152-157): llvm-mc-22 still assembles them for gfx950; AMD's CDNA 4 ENC_DS list drops them
    "ENC_DS": {0b110110 << 26 | op << 17 for op in range(152, 158)},
}
# Forms whose listing differs from llvm-mc's although the bytes agree, with the reason.
TEXT_EXCEPTIONS = {
    "v_cvt_f32_bf16_e32 v4, -17": "LLVM prints a bf16 VOP1 literal as 32 bits (0xffffffef), other 16-bit "
                                  "operands as 16 (0xffef); our printer keeps the 16-bit rule",
}


@pytest.fixture(scope="module")
def spec():
    return isa.load_spec(str(SUBSET))


def test_build_regenerates_the_committed_file(tmp_path):
    out = tmp_path / "cdna4.xml"
    proc = subprocess.run([sys.executable, str(BUILD), "--arch", "gfx950", "--output", str(out)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == SUBSET.read_bytes(), "specs/amdgpu_isa_cdna4_subset.xml is stale: run build.py"


def test_load_spec_gfx950_is_the_cdna4_subset(spec):
    from jitgemm.isa.spec.targets import target_of_spec

    loaded = isa.load_spec("gfx950")
    assert loaded.architecture.name == "AMD CDNA 4"
    assert target_of_spec(loaded) == "gfx950"
    assert target_of_spec(isa.load_spec("gfx942")) == "gfx942"
    assert "ENC_VOP3PX2" in loaded.encodings and loaded.encodings["ENC_VOP3PX2"].bit_count == 128
    assert len(loaded.instructions) > 1150


def _names(spec) -> set[str]:
    out = set()
    for inst in spec.instructions:
        out.add(inst.name.lower())
        out.update(a.lower() for a in inst.aliases)
    return out


def test_gfx950_only_spellings(spec):
    llvm_mc = require_tool("llvm-mc")
    names = _names(spec)
    missing = [n for n in GFX950_ONLY if n not in names]
    assert not missing, f"gfx950 spellings without an instruction or alias in the subset: {missing}"
    assert not [n for n in GFX942_ONLY if n in names]
    assert len(GFX950_ONLY) == 105
    from tests.fixtures.asm_corpus import llvm_mc_encodings

    # every spelling exists for gfx950 and not for gfx942 (a bare mnemonic draws an operand error, not this one)
    for mcpu, supported in (("gfx950", True), ("gfx942", False)):
        out = llvm_mc_encodings([f"{n} v0" for n in GFX950_ONLY], llvm_mc, mcpu)
        unsupported = [n for n, (b, err) in zip(GFX950_ONLY, out, strict=True)
                       if b is None and "not supported on this GPU" in err]
        if supported:
            assert not unsupported, f"llvm-mc -mcpu=gfx950 does not know {unsupported}"
        else:
            assert len(unsupported) == len(GFX950_ONLY), sorted(set(GFX950_ONLY) - set(unsupported))


def _layout(field) -> tuple:
    return tuple((r.offset, r.count, r.padding_count) for r in field.ranges)


def test_facts_shared_with_amds_cdna4_excerpt_are_equal(spec):
    amd = isa.load_spec(str(require_cdna4_excerpt()))
    problems, checked = [], collections.Counter()
    for name, enc in amd.encodings.items():
        ours = spec.encodings.get(name)
        assert ours is not None, f"encoding {name} of AMD's excerpt is not in the subset"
        for attr in ("bit_count", "order"):
            if getattr(ours, attr) != getattr(enc, attr):
                problems.append(f"{name}.{attr}: ours {getattr(ours, attr)} AMD {getattr(enc, attr)}")
        for fname, f in enc.fields.items():
            if fname not in ours.fields or _layout(ours.fields[fname]) != _layout(f):
                problems.append(f"{name}.{fname}: ours {ours.fields.get(fname)} AMD {_layout(f)}")
        extra = set(ours.identifiers) - set(enc.identifiers) - KNOWN_GAPS.get(name, set())
        if extra and ("encoding", name, "identifiers") not in DIFFERENCES:
            problems.append(f"{name}: subset identifiers {sorted(extra)[:4]} are not AMD's")
        checked["encodings"] += 1
    for inst in amd.instructions:
        name = inst.name
        ours = next((i for i in spec.instructions if i.name == name), None)
        if ours is None:
            problems.append(f"instruction {name} of AMD's excerpt is not in the subset")
            continue
        if set(a.upper() for a in inst.aliases) - set(a.upper() for a in ours.aliases):
            problems.append(f"{name}: aliases ours {ours.aliases} AMD {inst.aliases}")
        amd_encs = {(ie.encoding_name, ie.condition_name): ie for ie in inst.encodings}
        our_encs = {(ie.encoding_name, ie.condition_name): ie for ie in ours.encodings}
        for key, ie in amd_encs.items():
            mine = our_encs.get(key)
            if mine is None:
                if key[0] in spec.encodings and key[0] != "VOP1_INST_LITERAL":
                    problems.append(f"{name}: AMD has it in {key}, the subset does not")
                continue
            if mine.opcode != ie.opcode:
                problems.append(f"{name} {key}: opcode ours {mine.opcode} AMD {ie.opcode}")
            a_ops = [(o.field_name, o.data_format, o.operand_type, o.size) for o in ie.operands if not o.implicit]
            m_ops = [(o.field_name, o.data_format, o.operand_type, o.size) for o in mine.operands if not o.implicit]
            if a_ops != m_ops and ("operands", name) not in DIFFERENCES:
                problems.append(f"{name} {key}: operands ours {m_ops} AMD {a_ops}")
            io_a = [(o.input, o.output) for o in ie.operands if not o.implicit]
            io_m = [(o.input, o.output) for o in mine.operands if not o.implicit]
            if io_a != io_m and ("operand", name, "io") not in DIFFERENCES:
                problems.append(f"{name} {key}: input/output ours {io_m} AMD {io_a}")
            checked["instruction encodings"] += 1
    for name, df in amd.data_formats.items():
        ours = spec.data_formats.get(name)
        if ours is None:
            continue
        checked["data formats"] += 1
        if (ours.bit_count, ours.component_count, ours.data_type) != (df.bit_count, df.component_count, df.data_type):
            problems.append(f"data format {name}: ours {ours.bit_count}/{ours.component_count} AMD "
                            f"{df.bit_count}/{df.component_count}")
            continue
        for a, b in zip(ours.attributes, df.attributes, strict=True):
            if [(f.name, _layout(f)) for f in a.fields] != [(f.name, _layout(f)) for f in b.fields]:
                problems.append(f"data format {name}: component {a.order} differs")
    print(f"\nfacts compared with AMD's CDNA4 excerpt: {dict(checked)}")
    assert checked["instruction encodings"] > 120 and checked["encodings"] == len(amd.encodings)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:30])


@pytest.fixture(scope="module")
def corpus_results(spec):
    from jitgemm.isa.spec.forms import forms_of

    from tests.fixtures.asm_corpus import corpus, run_corpus

    forms = forms_of(spec)
    return forms, run_corpus(corpus(forms), forms, require_tool("llvm-mc"))


def test_gfx950_corpus_bytes_and_text_equal_llvm_mc(corpus_results, capsys):
    from tests.fixtures.asm_corpus import coverage_table

    forms, results = corpus_results
    with capsys.disabled():
        print(f"\n\nassembler corpus vs llvm-mc-22 -mcpu=gfx950 (CDNA 4 subset)\n{coverage_table(results)}")
    accepted = [r for r in results if r.llvm is not None and r.llvm_inconsistent is None]
    assert len(accepted) > 0.9 * len(results)
    bad = [r for r in accepted if not r.agree]
    assert not bad, f"{len(bad)} forms differ from llvm-mc, e.g.:\n" + "\n".join(
        f"{r.case.text!r}: llvm {r.llvm.hex()} ours {r.ours.hex() if r.ours else r.our_error}" for r in bad[:15])
    text_bad = [r for r in accepted if r.agree and not r.text_agree and r.case.text not in TEXT_EXCEPTIONS]
    if text_bad:   # where llvm-mc's assembler and its disassembler print the same bytes differently, the latter
        from tests.fixtures.asm_corpus import llvm_disassembly

        back = llvm_disassembly([r.llvm for r in text_bad], require_tool("llvm-mc"), "gfx950")
        text_bad = [r for r, text in zip(text_bad, back, strict=True)
                    if text is None or " ".join(text.split()) != " ".join((r.our_text or "").split())]
    assert not text_bad, "\n".join(f"{r.case.text!r}: llvm {r.llvm_text!r} ours {r.our_text!r}" for r in text_bad[:15])
    # every (instruction, encoding) pair is proven, or llvm-mc rejects every form of it
    pairs = {(f.spec_inst.name, f.enc.name) for f in forms.forms}
    agreed = {(r.case.instruction, r.case.encoding) for r in results if r.agree}
    for pair in sorted(pairs - agreed):
        reasons = {r.llvm_error for r in results if (r.case.instruction, r.case.encoding) == pair}
        assert None not in reasons, f"{pair}: llvm-mc accepted a form we did not match"
    new = {n.upper() for n in GFX950_ONLY}
    proven_new = {i for i, _e in agreed if i in new}
    assert len(proven_new) >= 85, f"only {len(proven_new)} gfx950-only instructions proven"


def test_loader_reports_gaps_of_amds_file(spec):
    """AMD's CDNA 4 file lacks V_MFMA_LD_SCALE_B32 and its ENC_VOP3PX2 identifiers miss the scaled MFMAs LLVM
    emits: loading it works and says so (the gfx950 profile's spec_gaps); the subset has no such gap."""
    for use_cache in (False, True):
        amd = isa.load_spec(str(require_cdna4_excerpt()), use_cache=use_cache)
        gaps = [w for w in amd.warnings if w.startswith("gfx950: ")]
        assert any("V_MFMA_LD_SCALE_B32" in w for w in gaps), amd.warnings
        assert any("ENC_VOP3PX2" in w and "D3AC0000" in w for w in gaps), amd.warnings
    assert not [w for w in spec.warnings if w.startswith("gfx950: ")]


def test_parsed_spec_cache_holds_128_bit_encodings(tmp_path, monkeypatch):
    """ENC_VOP3PX2's mask and identifiers are 128-bit ints, beyond msgpack's 64: the parsed-spec cache packs them
    as extensions (isa.spec.cache.pack/unpack) and a cache hit gives the same numbers."""
    from jitgemm.isa.spec import cache as spec_cache
    from jitgemm.isa.spec import sources as spec_sources

    assert spec_cache.unpack(spec_cache.pack({"x": [1 << 127, -(1 << 70), 3]})) == {"x": [1 << 127, -(1 << 70), 3]}
    import shutil

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path))
    spec_sources._memo.clear()
    xml = shutil.copy(SUBSET, tmp_path / SUBSET.name)   # without the pre-parsed file that sits beside the bundled one
    try:
        first = isa.load_spec(xml)                               # parsed, then stored
        spec_sources._memo.clear()
        again = isa.load_spec(xml)                               # from the cache entry
        a, b = first.encodings["ENC_VOP3PX2"], again.encodings["ENC_VOP3PX2"]
        assert a.identifier_mask >> 64 and (a.identifier_mask, a.identifiers) == (b.identifier_mask, b.identifiers)
        assert list(tmp_path.glob("parsed-specs/*.msgpack"))
    finally:
        spec_sources._memo.clear()


# AMD's full CDNA 4 file (SOURCES.md: repository saman-amd/rocm-systems, commit 8ec0d00a9e5f..., path
# shared/machine-readable-isa/isa/amdgpu_isa_cdna4.xml, 8,679,327 bytes) was read for every gfx950-only entry that
# the excerpt lacks; tools/cdna4_subset/instructions.yaml records per entry `amd:` = `excerpt` (the verbatim
# excerpt holds it, compared above), `{at: char offset, op, ops}` (AMD's opcode and its non-implicit operands as
# FORMAT/bits, as read there) or `{absent: offset}` (the opcode is missing there). Operands where AMD's file and
# the subset (= llvm-mc-22) differ, with the reason:
_BYTE_DST = ("AMD types only the byte op_sel[3:2] writes; llvm-mc-22 takes a 32-bit VGPR and keeps its other "
             "bytes, so the subset types the whole register")
AMD_FILE_DIFFERENCES = {
    **{(n, 0): _BYTE_DST for n in ("V_CVT_SCALEF32_SR_FP8_F32", "V_CVT_SCALEF32_SR_BF8_F32",
                                   "V_CVT_SCALEF32_SR_FP8_F16", "V_CVT_SCALEF32_SR_BF8_F16",
                                   "V_CVT_SCALEF32_SR_FP8_BF16", "V_CVT_SCALEF32_SR_BF8_BF16",
                                   "V_CVT_SCALEF32_SR_PK_FP4_F32", "V_CVT_SCALEF32_SR_PK_FP4_F16",
                                   "V_CVT_SCALEF32_SR_PK_FP4_BF16")},
}


def _amd_records() -> dict[str, tuple[object, dict]]:
    import yaml

    data = yaml.safe_load((REPO / "tools" / "cdna4_subset" / "instructions.yaml").read_text(encoding="utf-8"))
    return {str(e["name"]).upper(): (e.get("amd"), e) for entries in data["instructions"].values() for e in entries}


def test_every_gfx950_instruction_records_its_check_in_amds_file(spec):
    """Every gfx950-only spelling belongs to an entry that says where AMD's own file was checked for it (or that
    the file lacks it, which the gfx950 profile then lists as a spec gap the loader reports); every recorded AMD
    opcode and operand (format and width) equals the built subset's, except AMD_FILE_DIFFERENCES."""
    from jitgemm.isa.spec.targets import target_profile

    records = _amd_records()
    owner = {}
    for name, (_rec, entry) in records.items():
        for spelling in [name, *(str(a).upper() for a in entry.get("aliases") or [])]:
            owner[spelling] = name
    missing = sorted(n for n in GFX950_ONLY if n.upper() not in owner)
    assert not missing, f"gfx950-only spellings without a subset entry: {missing}"
    profile_gaps = target_profile("gfx950").get("spec_gaps") or ()
    gaps = {str(g["instruction"]).upper() for g in profile_gaps if "instruction" in g}
    excerpt = {i.name.upper() for i in isa.load_spec(str(require_cdna4_excerpt())).instructions}
    by_name = {i.name: i for i in spec.instructions}
    problems, counts, used = [], collections.Counter(), set()
    for name, (rec, _entry) in records.items():
        if rec == "excerpt":
            counts["excerpt"] += 1
            if name not in excerpt:
                problems.append(f"{name}: recorded as in AMD's excerpt, which lacks it")
        elif isinstance(rec, dict) and "absent" in rec:
            counts["absent"] += 1
            if name not in gaps:
                problems.append(f"{name}: absent from AMD's file, not a spec_gaps entry of specs/targets/gfx950.yaml")
        elif isinstance(rec, dict) and {"at", "op", "ops"} <= set(rec):
            counts["read in the full file"] += 1
            ours = by_name[name]
            want = rec.get("enc", ours.encodings[0].encoding_name)
            enc = next((e for e in ours.encodings if e.encoding_name == want), None)
            if enc is None:
                problems.append(f"{name}: the subset has no {want} encoding")
                continue
            if enc.opcode != rec["op"]:
                problems.append(f"{name} {want}: opcode ours {enc.opcode}, AMD's file {rec['op']}")
            mine = [f"{o.data_format.removeprefix('FMT_NUM_')}/{o.size}" for o in enc.operands if not o.implicit]
            theirs = str(rec["ops"]).split()
            if not theirs or len(theirs) > len(mine):
                problems.append(f"{name}: AMD's operands {theirs} do not fit ours {mine}")
                continue
            for k, (a, m) in enumerate(zip(theirs, mine[:len(theirs)], strict=True)):
                if a != m:
                    if (name, k) in AMD_FILE_DIFFERENCES:
                        used.add((name, k))
                    else:
                        problems.append(f"{name} operand {k}: ours {m}, AMD's file {a}")
        else:
            problems.append(f"{name}: no `amd:` record (excerpt, {{at, op, ops}} or {{absent}})")
    print(f"\ngfx950 entries and AMD's CDNA4 file: {dict(counts)}; {len(used)} recorded differences")
    assert not problems, "\n".join(problems)
    assert used == set(AMD_FILE_DIFFERENCES), f"differences no longer seen: {set(AMD_FILE_DIFFERENCES) - used}"
    assert counts["absent"] == len(gaps & set(records))
