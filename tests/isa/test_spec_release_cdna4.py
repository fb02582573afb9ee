"""`jitgemm spec fetch/import` know the CDNA 4 member of the pinned release: its pin is SOURCES.md's, an imported
amdgpu_isa_cdna4.xml becomes gfx950's spec (before the bundled subset), and a wrong one is refused."""

from __future__ import annotations

import re

import pytest
from jitgemm.isa.spec import release as spec_release

from jitgemm import isa
from tests.fixtures.oracles import SHARED, require_shared
from tests.fixtures.releases import make_zip, release_for
from tests.fixtures.spec_factory import private_spec_cache, toy_spec  # noqa: F401 - autouse fixture


def test_cdna4_member_pin_is_the_one_in_sources_md():
    sources = require_shared(SHARED / "isa-specs" / "SOURCES.md", "the release identity (SOURCES.md)")
    row = next(line for line in sources.read_text().splitlines() if "amdgpu_isa_cdna4.xml" in line and "sha256" in line)
    size = int(re.search(r"([\d,]+) bytes", row).group(1).replace(",", ""))
    sha = re.search(r"`([0-9a-f]{64})`", row).group(1)
    releases, default = spec_release.pinned_releases()
    pin = releases[default].members["amdgpu_isa_cdna4.xml"]
    assert (pin.size, pin.sha256) == (size, sha) == (8679327, sha)


def test_imported_cdna4_member_is_gfx950s_spec(tmp_path):
    assert isa.locate_spec("gfx950").origin == "bundled subset"
    xml = toy_spec(arch="OFFICIAL CDNA 4").encode()
    blob = make_zip({"AMD_GPU_MR_ISA_XML/amdgpu_isa_cdna4.xml": xml})
    zpath = tmp_path / "release.zip"
    zpath.write_bytes(blob)
    spec_release.import_archive(zpath, releases=release_for(blob, {"amdgpu_isa_cdna4.xml": xml}))
    assert isa.locate_spec("gfx950").origin == "user cache"
    assert isa.load_spec("gfx950").architecture.name == "OFFICIAL CDNA 4"
    assert isa.locate_spec("gfx942").origin == "bundled subset"     # the CDNA 3 member was not imported


def test_wrong_cdna4_member_is_refused(tmp_path):
    good = toy_spec(arch="OFFICIAL CDNA 4").encode()
    bad = good.replace(b"OFFICIAL", b"TAMPERED")
    blob = make_zip({"amdgpu_isa_cdna4.xml": bad})
    zpath = tmp_path / "release.zip"
    zpath.write_bytes(blob)
    with pytest.raises(isa.SpecError, match="member amdgpu_isa_cdna4.xml .* Refusing it"):
        spec_release.import_archive(zpath, releases=release_for(blob, {"amdgpu_isa_cdna4.xml": good}))
    assert isa.locate_spec("gfx950").origin == "bundled subset"
