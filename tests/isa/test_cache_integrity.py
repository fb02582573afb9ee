"""A cache that cannot lie, inputs that cannot hurt: every cache entry is sealed with the sha256 of its payload and
rebuilt when it fails, malformed records are rebuilt (never a KeyError), reads are bounded by size before a byte
is read, and malformed spec XML is a SpecError naming file:line."""

from __future__ import annotations

import json
import os
import re
import subprocess

import msgpack
import pytest
from jitgemm.isa.spec import cache as spec_cache
from jitgemm.isa.spec import release as spec_release
from jitgemm.isa.spec import sources as spec_sources
from jitgemm.util import files

from jitgemm import isa, kernel_cache
from tests.fixtures.oracles import require_tool
from tests.fixtures.spec_factory import private_spec_cache, toy_spec  # noqa: F401 - autouse fixture


def _fresh_process_state() -> None:
    from jitgemm import kernel

    spec_sources._memo.clear()
    spec_sources._sha_memo.clear()
    kernel.clear_memory_cache()


# --- the parsed-spec cache -------------------------------------------------------------------------------------

def _llvm_mc_words(line: str) -> bytes:
    mc = require_tool("llvm-mc")
    out = subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-show-encoding"], input=line + "\n", text=True,
                         capture_output=True, check=True).stdout
    return bytes(int(b, 16) for b in re.search(r"encoding: \[([^\]]*)\]", out).group(1).split(","))


def test_flipped_opcode_bit_in_parsed_spec_is_detected(tmp_path):
    """The fault that was seen: one bit of the cached VOP2 opcode of V_ADD_U32 (52 -> 53, V_SUB_U32). The loader
    must notice (payload hash) and rebuild, so the assembler still produces llvm-mc's bytes."""
    import shutil

    from jitgemm.isa.asm.assembler import assemble_program
    from jitgemm.isa.spec.forms import forms_of

    # a copy of the bundled XML without its pre-parsed file beside it, so the user cache holds its parsed form
    xml = shutil.copy(spec_sources.locate_spec("gfx942").path, tmp_path / "gfx942.xml")
    spec = isa.load_spec(xml)
    entry = spec_cache.entry_path(spec.sha256)
    data = spec_cache.load_entry(spec.sha256)
    inst = next(i for i in data["instructions"] if i["name"] == "V_ADD_U32")
    enc = next(e for e in inst["encodings"] if e[0] == "ENC_VOP2")
    packed = msgpack.packb(enc, use_bin_type=True)
    raw = bytearray(entry.read_bytes())
    at = bytes(raw).find(packed)
    assert at >= 0 and bytes(raw).find(packed, at + 1) < 0
    opcode_at = at + len(msgpack.packb(enc[:2], use_bin_type=True))   # list header counts 1 byte either way
    assert raw[opcode_at] == enc[2]
    raw[opcode_at] ^= 1       # a valid msgpack file still, one opcode off
    entry.write_bytes(bytes(raw))

    _fresh_process_state()
    again = isa.load_spec(xml)
    vop2 = next(e for e in again.instruction("V_ADD_U32").encodings if e.encoding_name == "ENC_VOP2")
    assert vop2.opcode == enc[2]
    ours = assemble_program("v_add_u32 v0, v1, v2\n", forms_of(again)).code
    assert ours == _llvm_mc_words("v_add_u32 v0, v1, v2")
    assert spec_cache.load_entry(spec.sha256)["instructions"] == data["instructions"]   # rewritten whole


@pytest.mark.parametrize("copy", [0, 1])   # the name is stored twice: in the record and in its head (look-ups)
def test_flipped_name_bit_in_parsed_spec_is_detected(tmp_path, copy):
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    spec = isa.load_spec(path)
    entry = spec_cache.entry_path(spec.sha256)
    raw = entry.read_bytes()
    assert raw.count(b"T_STOP") == 2
    at = raw.find(b"T_STOP") if copy == 0 else raw.rfind(b"T_STOP")
    entry.write_bytes(raw[:at] + b"T_STOQ" + raw[at + 6:])
    _fresh_process_state()
    again = isa.load_spec(path)
    assert again.find_instruction("T_STOQ") is None and again.instruction("T_STOP").name == "T_STOP"


def test_parsed_spec_linked_to_dev_zero_is_rebuilt(tmp_path):
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    spec = isa.load_spec(path)
    entry = spec_cache.entry_path(spec.sha256)
    entry.unlink()
    entry.symlink_to("/dev/zero")
    _fresh_process_state()
    assert isa.load_spec(path).instruction("T_STOP").aliases == ("T_HALT",)
    assert not entry.is_symlink() and spec_cache.load_entry(spec.sha256) is not None


def test_unwritable_parsed_spec_cache_is_said_once(tmp_path, monkeypatch, capsys):
    """A spec the cache cannot keep (JITGEMM_CACHE_DIR under a file: what a read-only file system gives every
    writer; root ignores modes) still loads, and the user hears once per process, naming the folder, that every
    process reads the XML again. A writable cache says nothing."""
    from jitgemm.util import cache_notice

    monkeypatch.setattr(cache_notice, "_said", set())
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    isa.load_spec(path)                                       # the test's private, writable cache
    assert "warning" not in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "file" / "cache"))
    for _ in range(2):                                        # two loads, each as a new process would make it
        _fresh_process_state()
        assert isa.load_spec(path).architecture.name == "TOY ARCH"
    err = capsys.readouterr().err
    assert err.count("jitgemm: warning: parsed-spec cache") == 1, err
    assert f"{tmp_path / 'file' / 'cache' / 'parsed-specs'}: cannot write" in err and "Traceback" not in err


def test_sha256_index_is_sealed(tmp_path):
    """The path -> sha256 index lets a new process find its kernels without hashing the spec; a corrupt index
    must not name another spec's sha256."""
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    true_sha = spec_sources.spec_sha256(path)
    index = spec_cache.cache_root() / "parsed-specs" / "sha256-index.sealed.json"
    table = {str(path.resolve()): [path.stat().st_size, path.stat().st_mtime_ns, "f" * 64]}
    index.write_bytes(json.dumps(table).encode())          # a plausible index that lies
    spec_sources._sha_memo.clear()
    assert spec_sources.spec_sha256(path) == true_sha


# --- bounded reads -----------------------------------------------------------------------------------------------

def test_huge_spec_file_is_refused_by_size(tmp_path):
    big = tmp_path / "huge.xml"
    with open(big, "wb") as fh:      # sparse: 1 GiB that costs no disk
        fh.truncate(1 << 30)
    with pytest.raises(isa.SpecError, match=r"1\.0 GiB, over the 64\.0 MiB limit") as info:
        isa.load_spec(big)
    assert str(info.value).startswith(str(big))


def test_spec_import_of_dev_zero_is_refused():
    from jitgemm.cli import main

    with pytest.raises(isa.SpecError, match="not a regular file"):
        spec_release.import_archive("/dev/zero")
    assert main(["spec", "import", "/dev/zero"]) == 2


def test_spec_import_of_huge_file_is_refused(tmp_path):
    big = tmp_path / "AMD_GPU_MR_ISA_XML_2026_08_06.zip"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(isa.SpecError, match=r"1\.0 GiB, over the 2\.2 MiB limit"):
        spec_release.import_archive(big)


def test_read_bounded_refuses_fifo_and_folders(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)              # opening it would block forever
    for path in (fifo, tmp_path):
        with pytest.raises(files.FileRefused, match="not a regular file"):
            files.read_bounded(path, 100)
    small = tmp_path / "small"
    small.write_bytes(b"x" * 101)
    with pytest.raises(files.FileRefused, match="101 bytes, over the 100 bytes limit"):
        files.read_bounded(small, 100)
    assert files.read_bounded(small, 101) == b"x" * 101


def test_seal_detects_every_single_bit_flip():
    import random

    payload = bytes(random.Random(7).randrange(256) for _ in range(300))
    sealed = files.seal(payload)
    assert files.unseal(sealed) == payload
    for bit in random.Random(8).sample(range(len(sealed) * 8), 400):
        damaged = bytearray(sealed)
        damaged[bit // 8] ^= 1 << (bit % 8)
        assert files.unseal(bytes(damaged)) is None, bit
    assert files.unseal(sealed[:-1]) is None and files.unseal(payload) is None


# --- the kernel cache --------------------------------------------------------------------------------------------

def _compiled_entry():
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm import kernel as jitgemm  # the generator-level compile: one kernel, no selection

    _fresh_process_state()
    problem = GemmProblem.make(64, 64, 64, "bf16")
    kernel = jitgemm.compile(problem)
    assert kernel.from_cache == "compiled"
    folder = kernel_cache.kernel_dir()
    (record_path,) = folder.glob("*.json")
    return problem, kernel, record_path, record_path.with_suffix(".co")


@pytest.mark.parametrize("damage", ["no_name", "no_contract", "contract_not_a_dict", "not_a_dict",
                                    "sealed_no_name", "flipped_bit", "truncated", "dev_zero_record",
                                    "dev_zero_code"])
def test_malformed_kernel_cache_entry_is_rebuilt(damage):
    from jitgemm import kernel as jitgemm  # the generator-level compile: one kernel, no selection

    problem, kernel, record_path, co_path = _compiled_entry()
    payload = files.unseal(record_path.read_bytes())
    record = json.loads(payload)
    if damage in ("no_name", "no_contract", "contract_not_a_dict", "not_a_dict"):
        if damage == "not_a_dict":
            record = [record]
        elif damage == "contract_not_a_dict":
            record["contract"] = "yes"
        else:
            record.pop(damage[3:])
        record_path.write_text(json.dumps(record))         # valid JSON, as a user or an old version might leave
    elif damage == "sealed_no_name":
        record.pop("name")
        files.write_sealed(record_path, json.dumps(record).encode())
    elif damage == "flipped_bit":
        raw = bytearray(record_path.read_bytes())
        raw[raw.index(kernel.name.encode()) + 2] ^= 4
        record_path.write_bytes(bytes(raw))
    elif damage == "truncated":
        record_path.write_bytes(record_path.read_bytes()[:-7])
    elif damage == "dev_zero_record":
        record_path.unlink()
        record_path.symlink_to("/dev/zero")
    else:
        co_path.unlink()
        co_path.symlink_to("/dev/zero")
    _fresh_process_state()
    again = jitgemm.compile(problem)
    assert again.from_cache == "compiled"
    assert again.name == kernel.name and again.code_object == kernel.code_object
    _fresh_process_state()
    assert jitgemm.compile(problem).from_cache == "disk"      # rewritten, valid again


# --- malformed spec XML ------------------------------------------------------------------------------------------

def _nested_condition(depth: int) -> str:
    return '<op type="and">' * depth + '<lit val="1"/>' + "</op>" * depth


@pytest.mark.parametrize("case, old, new, words", [
    ("unknown encoding", "<Spec>", '<?xml version="1.0" encoding="no-such-codec"?>\n<Spec>', ["encoding"]),
    ("deep nesting", '<CondtionExpression><lit val="1"/></CondtionExpression>',
     f"<CondtionExpression>{_nested_condition(5000)}</CondtionExpression>", ["nested deeper"]),
    ("non-integer range Order", '<Range Order="1">', '<Range Order="one">', ["Order", "'one'", "DST"]),
    ("non-integer operand Order", 'IsBinaryMicrocodeRequired="true" Order="1"',
     'IsBinaryMicrocodeRequired="true" Order="1.5"', ["Order", "T_STOP"]),
    ("non-integer encoding Order", '<Encoding Order="0">', '<Encoding Order="first">', ["Order", "ENC_TOY"]),
    ("non-integer type size", '<lit val="1"/></CondtionExpression>',
     '<op type="eq"><lit val="1"/><lit val="1"/><ty><t base="U" size="big"/></ty></op></CondtionExpression>',
     ["size", "'big'"]),
    ("negative BitCount", "<BitCount>4</BitCount><BitOffset>24", "<BitCount>-4</BitCount><BitOffset>24",
     ["BitCount of field OP", "-4"]),
    ("negative BitOffset", "<BitOffset>20</BitOffset>", "<BitOffset>-20</BitOffset>", ["BitOffset", "-20"]),
    ("encoding not whole words", "<BitCount>32</BitCount>\n                <EncodingIdentifierMask",
     "<BitCount>40</BitCount>\n                <EncodingIdentifierMask", ["40", "32-bit words"]),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 and "<" not in v else "")
def test_malformed_spec_xml_is_a_spec_error_with_line(tmp_path, case, old, new, words):
    text = toy_spec()
    assert text.count(old) == 1, case
    text = text.replace(old, new)
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(isa.SpecError) as info:
        isa.load_spec(path)
    for word in words:
        assert word in str(info.value), (case, str(info.value))
    expected_line = next(i for i, t in enumerate(text.splitlines(), 1)
                         if new.splitlines()[0][:40] in t or new.splitlines()[-1][-40:] in t)
    assert info.value.line is not None and abs(info.value.line - expected_line) <= 1, (case, str(info.value))
    assert str(info.value).startswith(f"{path}:{info.value.line}: ")
