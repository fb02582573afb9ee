"""`jitgemm spec fetch` / `spec import`: an archive is accepted only when size and sha256 match its pin,
members are checked the same way, and offline fetch fails at once pointing to `spec import`."""

from __future__ import annotations

import socket

import pytest
from jitgemm.isa.spec import release as spec_release
from jitgemm.isa.spec import sources as spec_sources
from jitgemm.isa.spec.release import Pin, Release

from jitgemm import isa
from jitgemm.cli import main
from tests.fixtures.releases import make_zip, release_for
from tests.fixtures.spec_factory import private_spec_cache, toy_spec  # noqa: F401 - autouse fixture


def test_pinned_release_matches_sources():
    releases, default = spec_release.pinned_releases()
    rel = releases[default]
    assert default == "2026_08_06"
    assert rel.archive == Pin(2294639, "82404f1126761b7877595b622afa7e1f311f2f41e89a3abe9aaf8ad045c082e2")
    assert rel.members["amdgpu_isa_cdna3.xml"].size == 7986028
    assert rel.url.endswith("AMD_GPU_MR_ISA_XML_2026_08_06.zip")


def test_import_verifies_and_extracts(tmp_path):
    xml = toy_spec(arch="OFFICIAL").encode()
    members = {"AMD_GPU_MR_ISA_XML/amdgpu_isa_cdna3.xml": xml, "README.txt": b"hello",
               "../evil/amdgpu_isa_x.xml": b"<Spec/>"}
    blob = make_zip(members)
    zpath = tmp_path / "release.zip"
    zpath.write_bytes(blob)
    written = spec_release.import_archive(zpath, releases=release_for(blob, {"amdgpu_isa_cdna3.xml": xml}))
    dest = spec_sources.official_dir() / "2099_01_01"
    assert sorted(p.name for p in written) == ["amdgpu_isa_cdna3.xml", "amdgpu_isa_x.xml"]
    assert all(p.parent == dest for p in written)   # nothing escapes the release folder
    assert isa.locate_spec("gfx942").origin == "user cache"
    assert isa.load_spec("gfx942").architecture.name == "OFFICIAL"


def test_wrong_archive_hash_is_refused(tmp_path):
    blob = make_zip({"amdgpu_isa_cdna3.xml": toy_spec().encode()})
    zpath = tmp_path / "release.zip"
    zpath.write_bytes(blob)
    releases = {"r": Release("r", "file:///x", Pin(len(blob), "0" * 64), {})}
    with pytest.raises(isa.SpecError, match="sha256 .* pins 0{64}. Refusing"):
        spec_release.import_archive(zpath, releases=releases)
    releases = {"r": Release("r", "file:///x", Pin(len(blob) + 1, "0" * 64), {})}
    with pytest.raises(isa.SpecError, match="bytes; release r pins"):
        spec_release.import_archive(zpath, releases=releases)
    assert not (spec_sources.official_dir() / "r").exists() or not any((spec_sources.official_dir() / "r").iterdir())


def test_wrong_member_hash_is_refused(tmp_path):
    xml = toy_spec().encode()
    blob = make_zip({"amdgpu_isa_cdna3.xml": xml})
    zpath = tmp_path / "release.zip"
    zpath.write_bytes(blob)
    releases = release_for(blob, {"amdgpu_isa_cdna3.xml": xml + b" "})
    with pytest.raises(isa.SpecError, match="member amdgpu_isa_cdna3.xml .* Refusing"):
        spec_release.import_archive(zpath, releases=releases)


def test_real_pin_refuses_other_zip_via_cli(tmp_path, capsys):
    zpath = tmp_path / "AMD_GPU_MR_ISA_XML_2026_08_06.zip"
    zpath.write_bytes(make_zip({"amdgpu_isa_cdna3.xml": toy_spec().encode()}))
    assert main(["spec", "import", str(zpath)]) == 2
    err = capsys.readouterr().err
    assert "Refusing" in err and str(zpath) in err and "Traceback" not in err


def test_fetch_from_url_verifies(tmp_path):
    xml = toy_spec(arch="FETCHED").encode()
    blob = make_zip({"amdgpu_isa_cdna3.xml": xml})
    served = tmp_path / "served.zip"
    served.write_bytes(blob)
    releases = release_for(blob, {"amdgpu_isa_cdna3.xml": xml}, url=served.as_uri())
    spec_release.fetch(releases=releases)
    assert isa.load_spec("gfx942").architecture.name == "FETCHED"


def test_fetch_offline_fails_fast_with_import_hint():
    with socket.socket() as s:          # a local port nobody listens on: connection refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    releases = {"r": Release("r", f"http://127.0.0.1:{port}/AMD.zip", Pin(1, "0" * 64), {})}
    with pytest.raises(isa.SpecError, match=r"jitgemm spec import FILE\.zip"):
        spec_release.fetch(releases=releases, timeout=5)


def test_import_unreadable_file(capsys, tmp_path):
    assert main(["spec", "import", str(tmp_path / "nope.zip")]) == 2
    assert "cannot read archive" in capsys.readouterr().err
