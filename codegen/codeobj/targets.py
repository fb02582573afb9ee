"""AMDGPU targets a code object can be written for: ELF e_flags and target-id strings.

Facts from LLVM's AMDGPUUsage: "AMDGPU ELF Header" (EF_AMDGPU_MACH_* processor numbers and the code object
v4+ EF_AMDGPU_FEATURE_XNACK_V4 / EF_AMDGPU_FEATURE_SRAMECC_V4 fields), "Target ID" (the
`amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-` spelling, features in alphabetical order, omitted when "any"),
"Register Allocation"/kernel descriptor notes (VGPR encoding granule 8 and the unified VGPR/AGPR file with
ACCUM_OFFSET on gfx90a and later; architected flat scratch on gfx940 and later). The numbers live in the
target profiles (specs/targets/*.yaml, `code_object`); every one is checked against llvm-mc's output in
tests/codegen/test_codeobj_targets.py and tests/codegen/test_codeobj_accounting.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .errors import CodeObjectError

EF_AMDGPU_MACH = 0x0FF
EF_AMDGPU_FEATURE_XNACK_V4 = 0x300
EF_AMDGPU_FEATURE_SRAMECC_V4 = 0xC00
EF_AMDGPU_GENERIC_VERSION = 0xFF000000

# Feature setting <-> field value; the xnack field sits at bit 8, sramecc at bit 10.
FEATURE_SETTINGS = ("unsupported", "any", "off", "on")
_SETTING_VALUE = {"any": 1, "off": 2, "on": 3}


@dataclass(frozen=True)
class Target:
    """What the code object writer needs to know about one processor: read from its target profile
    (specs/targets/<name>.yaml, `code_object` and the register/LDS budgets), never a second table."""

    name: str
    mach: int
    architected_flat_scratch: bool  # gfx940+: flat scratch is not in user SGPRs, and costs 6 extra SGPRs
    vgpr_encoding_granule: int      # gfx90a+: VGPR blocks of 8 (unified VGPR/AGPR file)
    sgpr_encoding_granule: int
    max_vgprs: int                  # unified file: 256 arch VGPRs + 256 AGPRs
    max_arch_vgprs: int
    max_sgprs: int                  # addressable SGPRs before VCC etc. on GFX9
    max_user_sgprs: int
    max_lds: int                    # bytes of LDS one workgroup may allocate


def _from_profile(name: str) -> Target | None:
    from jitgemm.isa.spec.targets import target_profile

    profile = target_profile(name)
    facts = profile.code_object
    if facts is None:
        return None
    return Target(profile.target, facts.elf_mach, facts.architected_flat_scratch, facts.vgpr_encoding_granule,
                  facts.sgpr_encoding_granule, profile.vgprs, profile.arch_vgprs, profile.sgprs, facts.max_user_sgprs,
                  profile.lds_bytes_per_workgroup)


@functools.cache
def _targets() -> dict[str, Target]:
    from jitgemm.isa.spec.targets import known_targets

    found = {}
    for name in known_targets():
        t = _one(name)
        if t is not None:
            found[name] = t
    return found


_LOADED: dict[str, Target] = {}     # the targets read so far, by name


@functools.cache
def _one(name: str) -> Target | None:
    found = _from_profile(name)
    if found is not None:
        _LOADED[name] = found
    return found


@functools.cache
def _by_mach() -> dict[int, Target]:
    return {t.mach: t for t in _targets().values()}


def __getattr__(name: str):
    # TARGETS (every profile with code-object facts) is made on first use: writing a gfx942 kernel reads only
    # gfx942's profile, not all five (each a YAML parse in a new process, issue 31)
    if name == "TARGETS":
        return _targets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def target(name: str) -> Target:
    """The target named `name` (e.g. "gfx942"), or a CodeObjectError listing the supported ones."""
    from jitgemm.isa.spec.targets import known_targets

    found = _one(name.lower()) if isinstance(name, str) and name.lower() in known_targets() else None
    if found is None:
        raise CodeObjectError(f"unsupported target {name!r}; supported: {', '.join(_targets())}") from None
    return found


def check_setting(feature: str, setting: str) -> str:
    if setting not in _SETTING_VALUE:
        raise CodeObjectError(f"{feature} setting {setting!r} is not one of 'any', 'on', 'off'")
    return setting


def e_flags(processor: Target, xnack: str = "any", sramecc: str = "any", generic_version: int = 0) -> int:
    """e_flags of a code object v4+ for `processor` with the given xnack/sramecc settings."""
    x = _SETTING_VALUE[check_setting("xnack", xnack)]
    s = _SETTING_VALUE[check_setting("sramecc", sramecc)]
    return processor.mach | (x << 8) | (s << 10) | ((generic_version & 0xFF) << 24)


@dataclass(frozen=True)
class DecodedFlags:
    mach: int
    processor: str | None  # None for a machine number this package has no profile for
    xnack: str
    sramecc: str
    generic_version: int


def decode_e_flags(flags: int) -> DecodedFlags:
    """Split e_flags into processor and feature settings (the code object v4+ layout; LLVM no longer writes
    v3 or older)."""
    mach = flags & EF_AMDGPU_MACH
    # a machine number names one processor (LLVM's EF_AMDGPU_MACH_*): one already read answers without the rest
    known = next((t for t in list(_LOADED.values()) if t.mach == mach), None) or _by_mach().get(mach)
    return DecodedFlags(mach=mach, processor=known.name if known else None,
                        xnack=FEATURE_SETTINGS[(flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8],
                        sramecc=FEATURE_SETTINGS[(flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10],
                        generic_version=(flags & EF_AMDGPU_GENERIC_VERSION) >> 24)


def target_id(processor: Target, xnack: str = "any", sramecc: str = "any") -> str:
    """The `amdhsa.target` string, spelled as LLVM spells it."""
    features = []
    for name, setting in (("sramecc", sramecc), ("xnack", xnack)):  # alphabetical, as LLVM orders them
        check_setting(name, setting)
        if setting != "any":
            features.append(f"{name}{'+' if setting == 'on' else '-'}")
    return ":".join([f"amdgcn-amd-amdhsa--{processor.name}", *features])
