"""Loading specs: bad files give SpecError with the place; the parsed-spec cache is used, and never
trusted when corrupt or stale; the search order of spec sources."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from jitgemm.isa.spec import cache as spec_cache
from jitgemm.isa.spec import sources as spec_sources
from jitgemm.util import files

from jitgemm import isa
from tests.fixtures.spec_factory import private_spec_cache, toy_spec  # noqa: F401 - autouse fixture


def write(tmp_path, text, name="toy.xml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toy_spec_loads(tmp_path):
    spec = isa.load_spec(write(tmp_path, toy_spec()))
    inst = spec.instruction("t_halt")
    assert inst.name == "T_STOP" and inst.is_program_terminator and not inst.is_branch
    dst = spec.encoding("ENC_TOY").field("DST")
    assert dst.width == 6 and dst.insert(0, 0b110101) == (0b0101 | 0b11 << 20)
    assert spec.operand_type("OPR_TOY").value_of("R1") == 1
    assert spec.source.endswith("toy.xml") and len(spec.sha256) == 64


def test_spec_is_immutable(tmp_path):
    spec = isa.load_spec(write(tmp_path, toy_spec()))
    with pytest.raises(AttributeError):
        spec.instructions = ()
    with pytest.raises(TypeError):
        spec.encodings["X"] = None
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        spec.instructions[0].name = "X"


def test_malformed_xml_names_line_and_column(tmp_path):
    text = toy_spec().replace("<BitCount>32</BitCount>", "<BitCount>32</BitCont>", 1)
    path = write(tmp_path, text)
    with pytest.raises(isa.SpecError) as info:
        isa.load_spec(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "</BitCont>" in t)
    assert info.value.line == line and info.value.col is not None
    assert str(info.value).startswith(f"{path}:{line}:")


@pytest.mark.parametrize("kwargs, words", [
    ({"encoding": "ENC_MISSING"}, ["ENC_MISSING", "T_STOP"]),
    ({"field": "NOFIELD"}, ["NOFIELD", "ENC_TOY"]),
    ({"fmt": "FMT_MISSING"}, ["FMT_MISSING", "data format"]),
    ({"otype": "OPR_MISSING"}, ["OPR_MISSING", "operand type"]),
    ({"subtypes": "<Subtype>OPR_GONE</Subtype>"}, ["OPR_GONE", "subtype"]),
])
def test_dangling_reference_is_named(tmp_path, kwargs, words):
    path = write(tmp_path, toy_spec(**kwargs))
    with pytest.raises(isa.SpecError) as info:
        isa.load_spec(path)
    for word in words:
        assert word in str(info.value)
    assert info.value.line is not None and str(info.value).startswith(f"{path}:{info.value.line}: ")


def test_not_a_spec(tmp_path):
    with pytest.raises(isa.SpecError, match="expected <Spec>"):
        isa.load_spec(write(tmp_path, "<Other/>"))
    with pytest.raises(isa.SpecError, match="no such spec file"):
        isa.load_spec(tmp_path / "missing.xml")


def test_cache_is_written_and_used(tmp_path, monkeypatch):
    path = write(tmp_path, toy_spec())
    first = isa.load_spec(path)
    entry = spec_cache.entry_path(first.sha256)
    assert entry.is_file()
    spec_sources._memo.clear()

    def no_parse(*a, **k):
        raise AssertionError("XML parsed although a valid cache entry exists")

    monkeypatch.setattr(spec_sources, "read_xml", no_parse)
    second = isa.load_spec(path)
    assert second is not first and second.instruction("T_STOP").aliases == ("T_HALT",)


@pytest.mark.parametrize("damage", ["garbage", "truncate", "stale", "wrong_shape"])
def test_corrupt_or_stale_cache_is_rebuilt(tmp_path, damage):
    import msgpack

    path = write(tmp_path, toy_spec())
    spec = isa.load_spec(path)
    entry = spec_cache.entry_path(spec.sha256)
    raw = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"\xc1not msgpack at all")
    elif damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "stale":   # sealed correctly, so the inner checks are what refuses it
        obj = msgpack.unpackb(files.unseal(raw), strict_map_key=False)
        obj["data"]["sha256"] = "0" * 64
        entry.write_bytes(files.seal(msgpack.packb(obj)))
    else:
        obj = msgpack.unpackb(files.unseal(raw), strict_map_key=False)
        obj["data"]["instructions"] = [{"name": 3}]
        entry.write_bytes(files.seal(msgpack.packb(obj)))
    spec_sources._memo.clear()
    again = isa.load_spec(path)
    assert again.instruction("T_STOP").name == "T_STOP"
    assert spec_cache.load_entry(spec.sha256) is not None  # rewritten whole


def test_search_order(tmp_path, monkeypatch):
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    cache_release = spec_sources.official_dir() / "2099_01_01"
    cache_release.mkdir(parents=True)
    (cache_release / "amdgpu_isa_cdna3.xml").write_text(toy_spec(arch="FROM CACHE"))
    loc = isa.locate_spec("gfx942")
    assert loc.origin == "user cache" and isa.load_spec("gfx942").architecture.name == "FROM CACHE"
    (env_dir / "amdgpu_isa_cdna3.xml").write_text(toy_spec(arch="FROM ENV"))
    monkeypatch.setenv("JITGEMM_ISA_SPEC_DIR", str(env_dir))
    assert isa.locate_spec("gfx942:sramecc+:xnack-").origin == "JITGEMM_ISA_SPEC_DIR"
    assert isa.load_spec("gfx942").architecture.name == "FROM ENV"
    explicit = write(tmp_path, toy_spec(arch="EXPLICIT"), "mine.xml")
    assert isa.load_spec(explicit).architecture.name == "EXPLICIT"


def test_bundled_subset_is_the_default(tmp_path):
    loc = isa.locate_spec("gfx942")
    assert loc.origin == "bundled subset"
    spec = isa.load_spec("gfx942")
    assert "subset" in (spec.document.copyright + spec.document.license).lower() or \
        "jitgemm" in spec.document.copyright.lower()
    assert spec.find_instruction("V_MFMA_F32_32X32X8_BF16") is not None


def test_missing_target_spec_names_fetch(tmp_path):
    with pytest.raises(isa.SpecError, match="jitgemm spec fetch.*--spec"):
        isa.load_spec("gfx1100")  # gfx950 has a bundled subset now (tests/isa/test_cdna4_subset.py)
    with pytest.raises(isa.SpecError, match="unknown target 'gfx1'.*gfx942"):
        isa.load_spec("gfx1")


def test_fresh_process_uses_cache(tmp_path):
    path = write(tmp_path, toy_spec())
    isa.load_spec(path)
    code = ("import sys; from jitgemm import isa; from jitgemm.isa.spec import sources as spec_sources\n"
            "spec_sources.read_xml = lambda *a, **k: sys.exit(3)\n"
            f"print(isa.load_spec({str(path)!r}).instruction('T_STOP').name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "T_STOP"
