"""Devices of the target profiles (specs/targets/<arch>.yaml `devices`): the products the timing model and aiter's
tuned tables name, each number with its source, the single-device numbers derived from the default device."""

from __future__ import annotations

import pytest
from jitgemm.isa.errors import SpecError
from jitgemm.isa.spec.targets import device_for

from jitgemm import isa


@pytest.mark.parametrize("arch, names, cus", [
    ("gfx942", ("MI300X", "MI325X", "MI308X"), (304, 304, 80)),
    ("gfx950", ("MI355X", "MI350X", "MI350P"), (256, 256, 128)),
])
def test_devices_of_each_target(arch, names, cus):
    p = isa.target_profile(arch)
    assert tuple(d.name for d in p.devices) == names and tuple(d.cu_num for d in p.devices) == cus
    first = p.devices[0]
    # the profile's single-device numbers are the default device's, not a second copy
    assert (p.compute_units, p.get("clock_mhz"), p.hbm_bandwidth_gbs, p.peak_matrix_tflops) == (
        first.cu_num, first.clock_mhz, first.hbm_gbs, first.peak_matrix_tflops)
    assert p.get("last_level_cache_bytes") == first.mall_bytes and p.device() is first
    for d in p.devices:
        assert d.cu_num % d.xcds == 0 and d.l2_bytes > 0 and d.mall_bytes > 0
        assert all(d.sources[k] for k in ("cu_num", "xcds", "clock_mhz", "hbm_gbs", "peak_matrix_tflops"))


def test_peaks_agree_with_cus_and_clock():
    """A device's data-sheet peak is its CUs x clock x the target's per-CU rate: the MI300X/MI325X/MI308X share one
    rate per CU per clock (2048 bf16 flops), the MI355X/MI350X/MI350P another (4096) -- a typo in one number shows."""
    for arch, per_cu in (("gfx942", 2048), ("gfx950", 4096)):
        for d in isa.target_profile(arch).devices:
            rate = d.peak_matrix_tflops["bf16"] * 1e12 / (d.cu_num * d.clock_mhz * 1e6)
            assert rate == pytest.approx(per_cu, rel=0.002), d.name


def test_device_lookup_by_name_or_cu_num():
    p = isa.target_profile("gfx942")
    assert p.device(80).name == "MI308X" and p.device("mi325x").hbm_gbs == 6000 and p.device("304").name == "MI300X"
    assert device_for("gfx950", 256).name == "MI355X" and device_for("gfx950", 128).name == "MI350P"
    with pytest.raises(SpecError, match="no device 'MI999'; accepted: MI300X \\(304 CUs\\)"):
        p.device("MI999")
    with pytest.raises(SpecError, match="lists no devices"):
        isa.target_profile("gfx1100").device()
