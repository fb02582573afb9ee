"""Target profiles: every shipped profile loads, names its spec file, and the numbers are consistent."""

from __future__ import annotations

import pytest
from jitgemm.isa.targets import known_targets

from jitgemm import isa


def test_known_targets():
    assert {"gfx942", "gfx950", "gfx1100", "gfx1201"} <= set(known_targets())


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_profile_loads(target):
    p = isa.target_profile(target)
    assert p.target == target and p.spec_file.startswith("amdgpu_isa_") and p.spec_file.endswith(".xml")
    assert p.wavefront_size in (32, 64)
    assert p.get("lds_bytes_per_workgroup") >= 65536


def test_cdna_register_budget():
    p = isa.target_profile("gfx942:sramecc+:xnack-")
    assert p.get("arch_vgprs") + p.get("agprs") == p.get("vgprs") == 512
    assert p.get("fp8_flavour") == "fnuz" and isa.target_profile("gfx950").get("fp8_flavour") == "ocp"
    assert p.bundled_spec and p.spec_release == "2026_08_06"
