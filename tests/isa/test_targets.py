"""Target profiles: every shipped profile loads, names its spec file, and the numbers are consistent."""

from __future__ import annotations

import pytest
from jitgemm.isa.spec.targets import known_targets

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


def test_profile_numbers_have_one_owner():
    """compute_units, agprs and the code-object facts are typed attributes of the profile; the code-object
    writer's processor table is built from them (no second table with other defaults)."""
    from jitgemm.codegen.codeobj.targets import TARGETS

    p = isa.target_profile("gfx942")
    assert (p.compute_units, p.agprs, p.arch_vgprs, p.lds_banks) == (304, 256, 256, 32)
    assert isa.target_profile("gfx1100").agprs == 0 and isa.target_profile("gfx1100").code_object is None
    assert set(TARGETS) == {t for t in known_targets() if isa.target_profile(t).code_object is not None}
    for name, t in TARGETS.items():
        q = isa.target_profile(name)
        assert (t.mach, t.max_vgprs, t.max_arch_vgprs, t.max_sgprs, t.max_lds) == (
            q.code_object.elf_mach, q.vgprs, q.arch_vgprs, q.sgprs, q.lds_bytes_per_workgroup)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("cu_num: 304", "cu_num: many", 1), r"devices\[0\]\.cu_num is 'many'; accepted: int"),
    (lambda t: t.replace("    cu_num: 80\n", "", 1), r"devices\[2\] lacks 'cu_num'"),
    (lambda t: t.replace("      hbm_gbs: \"AMD Instinct MI300X", "      hbm: \"AMD Instinct MI300X", 1),
     r"devices\[0\]\.sources lacks hbm_gbs; every number cites its source"),
    (lambda t: "compute_units: 304\n" + t, "states compute_units beside `devices`"),
    (lambda t: t.replace("agprs: 256", "agprs: true"), "'agprs' is True; accepted: int"),
    (lambda t: "\n".join(x for x in t.splitlines() if not x.startswith("sgprs:")), "lacks 'sgprs'"),
    (lambda t: t.replace("elf_mach: 0x04C", "elf_mach: gfx942"), "'code_object.elf_mach' is 'gfx942'"),
    (lambda t: t.replace("  max_user_sgprs: 16", "  max_user_sgprs: 16\n  extra: 1"), "unknown keys extra"),
    # hazard rows and MFMA timing (strict mode and the emitter read them typed: isa/spec/targets.py HazardRule)
    (lambda t: t.replace("wait_states: 2, regs: vgpr,", "wait_states: 2, regs: vgprs,", 1),
     r"hazards\[0\]\.regs is 'vgprs'; accepted: any, vgpr, sgpr, hwreg"),
    (lambda t: t.replace("{writer: valu, reader: mfma, wait_states: 2,", "{writer: valu, reader: mfma, wait: 2,", 1),
     r"hazards\[0\] has unknown keys wait; accepted: writer"),
    (lambda t: t.replace("emitter: false, source", "emitter: no-thanks, source", 1),
     r"hazards\[4\]\.emitter is 'no-thanks'; accepted: bool"),
    (lambda t: t.replace("V_MFMA_F32_32X32X8_BF16: 8", "V_MFMA_F32_32X32X8_BF16: 0"),
     "'mfma.passes.V_MFMA_F32_32X32X8_BF16' is 0; accepted: a positive int"),
    (lambda t: t.replace("  passes:\n", "  fp8_operand_passes: {V_MFMA_F32_32X32X8_BF16: eight}\n  passes:\n", 1),
     "'mfma.fp8_operand_passes.V_MFMA_F32_32X32X8_BF16' is 'eight'; accepted: a positive int"),
])
def test_malformed_profile_is_refused_with_the_key(edit, message):
    from importlib import resources

    from jitgemm.isa.errors import SpecError
    from jitgemm.isa.spec.targets import parse_profile

    text = resources.files("jitgemm.specs.targets").joinpath("gfx942.yaml").read_text()
    assert parse_profile(text, "gfx942.yaml").compute_units == 304
    with pytest.raises(SpecError, match=message) as err:
        parse_profile(edit(text), "specs/targets/gfx942.yaml")
    assert "specs/targets/gfx942.yaml" in str(err.value)
