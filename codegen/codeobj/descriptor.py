"""The 64-byte AMDHSA kernel descriptor: layout, decoding, and computing it from a kernel description.

Layout and bit fields from LLVM's AMDGPUUsage, "Kernel Descriptor" (table "Code Object V3 Kernel Descriptor"
and the compute_pgm_rsrc1/2/3, kernel_code_properties and kernarg_preload tables for GFX6-GFX12; the GFX9
columns apply to gfx90a/gfx942/gfx950):

    bytes  0..3   group_segment_fixed_size        bytes 44..47  compute_pgm_rsrc3
    bytes  4..7   private_segment_fixed_size      bytes 48..51  compute_pgm_rsrc1
    bytes  8..11  kernarg_size                    bytes 52..55  compute_pgm_rsrc2
    bytes 12..15  reserved                        bytes 56..57  kernel_code_properties
    bytes 16..23  kernel_code_entry_byte_offset   bytes 58..59  kernarg_preload
    bytes 24..43  reserved                        bytes 60..63  reserved

How the register counts are granulated follows what llvm-mc computes for the `.amdhsa_next_free_vgpr`,
`.amdhsa_next_free_sgpr`, `.amdhsa_reserve_*` and `.amdhsa_accum_offset` directives (checked in
tests/codegen/test_codeobj_llvm.py): blocks = ceil(max(1, count) / granule) - 1; SGPRs include VCC, the flat
scratch pair and the XNACK mask the way LLVM's getNumExtraSGPRs accounts them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields

from .description import KernelDescription
from .errors import CodeObjectError
from .targets import Target

DESCRIPTOR_SIZE = 64
DESCRIPTOR_ALIGN = 64
_LAYOUT = struct.Struct("<IIII q 20s IIIHH 4s")
ENTRY_OFFSET_FIELD = 16  # byte offset of kernel_code_entry_byte_offset (the R_AMDGPU_REL64 target)

# (field, word, shift, width); word names as in AMDGPUUsage.
BIT_FIELDS: tuple[tuple[str, str, int, int], ...] = (
    ("granulated_workitem_vgpr_count", "compute_pgm_rsrc1", 0, 6),
    ("granulated_wavefront_sgpr_count", "compute_pgm_rsrc1", 6, 4),
    ("priority", "compute_pgm_rsrc1", 10, 2),
    ("float_round_mode_32", "compute_pgm_rsrc1", 12, 2),
    ("float_round_mode_16_64", "compute_pgm_rsrc1", 14, 2),
    ("float_denorm_mode_32", "compute_pgm_rsrc1", 16, 2),
    ("float_denorm_mode_16_64", "compute_pgm_rsrc1", 18, 2),
    ("priv", "compute_pgm_rsrc1", 20, 1),
    ("enable_dx10_clamp", "compute_pgm_rsrc1", 21, 1),
    ("debug_mode", "compute_pgm_rsrc1", 22, 1),
    ("enable_ieee_mode", "compute_pgm_rsrc1", 23, 1),
    ("bulky", "compute_pgm_rsrc1", 24, 1),
    ("cdbg_user", "compute_pgm_rsrc1", 25, 1),
    ("fp16_ovfl", "compute_pgm_rsrc1", 26, 1),
    ("enable_private_segment", "compute_pgm_rsrc2", 0, 1),
    ("user_sgpr_count", "compute_pgm_rsrc2", 1, 5),
    ("enable_trap_handler", "compute_pgm_rsrc2", 6, 1),
    ("enable_sgpr_workgroup_id_x", "compute_pgm_rsrc2", 7, 1),
    ("enable_sgpr_workgroup_id_y", "compute_pgm_rsrc2", 8, 1),
    ("enable_sgpr_workgroup_id_z", "compute_pgm_rsrc2", 9, 1),
    ("enable_sgpr_workgroup_info", "compute_pgm_rsrc2", 10, 1),
    ("enable_vgpr_workitem_id", "compute_pgm_rsrc2", 11, 2),
    ("enable_exception_address_watch", "compute_pgm_rsrc2", 13, 1),
    ("enable_exception_memory", "compute_pgm_rsrc2", 14, 1),
    ("granulated_lds_size", "compute_pgm_rsrc2", 15, 9),
    ("enable_exception_ieee_754_fp_invalid_operation", "compute_pgm_rsrc2", 24, 1),
    ("enable_exception_fp_denormal_source", "compute_pgm_rsrc2", 25, 1),
    ("enable_exception_ieee_754_fp_division_by_zero", "compute_pgm_rsrc2", 26, 1),
    ("enable_exception_ieee_754_fp_overflow", "compute_pgm_rsrc2", 27, 1),
    ("enable_exception_ieee_754_fp_underflow", "compute_pgm_rsrc2", 28, 1),
    ("enable_exception_ieee_754_fp_inexact", "compute_pgm_rsrc2", 29, 1),
    ("enable_exception_int_divide_by_zero", "compute_pgm_rsrc2", 30, 1),
    ("accum_offset", "compute_pgm_rsrc3", 0, 6),  # encoded: first AGPR / 4 - 1
    ("tg_split", "compute_pgm_rsrc3", 16, 1),
    ("enable_sgpr_private_segment_buffer", "kernel_code_properties", 0, 1),
    ("enable_sgpr_dispatch_ptr", "kernel_code_properties", 1, 1),
    ("enable_sgpr_queue_ptr", "kernel_code_properties", 2, 1),
    ("enable_sgpr_kernarg_segment_ptr", "kernel_code_properties", 3, 1),
    ("enable_sgpr_dispatch_id", "kernel_code_properties", 4, 1),
    ("enable_sgpr_flat_scratch_init", "kernel_code_properties", 5, 1),
    ("enable_sgpr_private_segment_size", "kernel_code_properties", 6, 1),
    ("enable_wavefront_size32", "kernel_code_properties", 10, 1),
    ("uses_dynamic_stack", "kernel_code_properties", 11, 1),
    ("kernarg_preload_spec_length", "kernarg_preload", 0, 7),
    ("kernarg_preload_spec_offset", "kernarg_preload", 7, 9),
)
WORDS = ("compute_pgm_rsrc1", "compute_pgm_rsrc2", "compute_pgm_rsrc3", "kernel_code_properties",
         "kernarg_preload")
# User SGPRs each kernel_code_properties enable occupies (AMDGPUUsage "Initial Kernel Execution State").
USER_SGPR_SIZES = (("private_segment_buffer", 4), ("dispatch_ptr", 2), ("queue_ptr", 2),
                   ("kernarg_segment_ptr", 2), ("dispatch_id", 2), ("flat_scratch_init", 2),
                   ("private_segment_size", 1))
EXCEPTION_FIELDS = tuple(name for name, word, shift, _ in BIT_FIELDS
                         if word == "compute_pgm_rsrc2" and 24 <= shift <= 30)


@dataclass(frozen=True)
class KernelDescriptor:
    """A decoded kernel descriptor. `to_bytes()` and `from_bytes()` are exact inverses on valid input."""

    group_segment_fixed_size: int = 0
    private_segment_fixed_size: int = 0
    kernarg_size: int = 0
    kernel_code_entry_byte_offset: int = 0
    granulated_workitem_vgpr_count: int = 0
    granulated_wavefront_sgpr_count: int = 0
    priority: int = 0
    float_round_mode_32: int = 0
    float_round_mode_16_64: int = 0
    float_denorm_mode_32: int = 0
    float_denorm_mode_16_64: int = 0
    priv: int = 0
    enable_dx10_clamp: int = 0
    debug_mode: int = 0
    enable_ieee_mode: int = 0
    bulky: int = 0
    cdbg_user: int = 0
    fp16_ovfl: int = 0
    enable_private_segment: int = 0
    user_sgpr_count: int = 0
    enable_trap_handler: int = 0
    enable_sgpr_workgroup_id_x: int = 0
    enable_sgpr_workgroup_id_y: int = 0
    enable_sgpr_workgroup_id_z: int = 0
    enable_sgpr_workgroup_info: int = 0
    enable_vgpr_workitem_id: int = 0
    enable_exception_address_watch: int = 0
    enable_exception_memory: int = 0
    granulated_lds_size: int = 0
    enable_exception_ieee_754_fp_invalid_operation: int = 0
    enable_exception_fp_denormal_source: int = 0
    enable_exception_ieee_754_fp_division_by_zero: int = 0
    enable_exception_ieee_754_fp_overflow: int = 0
    enable_exception_ieee_754_fp_underflow: int = 0
    enable_exception_ieee_754_fp_inexact: int = 0
    enable_exception_int_divide_by_zero: int = 0
    accum_offset: int = 0
    tg_split: int = 0
    enable_sgpr_private_segment_buffer: int = 0
    enable_sgpr_dispatch_ptr: int = 0
    enable_sgpr_queue_ptr: int = 0
    enable_sgpr_kernarg_segment_ptr: int = 0
    enable_sgpr_dispatch_id: int = 0
    enable_sgpr_flat_scratch_init: int = 0
    enable_sgpr_private_segment_size: int = 0
    enable_wavefront_size32: int = 0
    uses_dynamic_stack: int = 0
    kernarg_preload_spec_length: int = 0
    kernarg_preload_spec_offset: int = 0
    # Bits this decoder does not name (reserved, or defined only for other generations), per word, and the
    # reserved byte ranges; kept so that reading and re-encoding a descriptor is lossless.
    unknown_bits: tuple[tuple[str, int], ...] = field(default=(), repr=False)
    reserved_bytes: bytes = field(default=bytes(28), repr=False)

    def words(self) -> dict[str, int]:
        """The packed 32/16-bit words (compute_pgm_rsrc1, ...)."""
        out = dict.fromkeys(WORDS, 0)
        for name, word, shift, width in BIT_FIELDS:
            value = getattr(self, name)
            if not 0 <= value < (1 << width):
                raise CodeObjectError(f"kernel descriptor field {name}={value} does not fit in {width} bits")
            out[word] |= value << shift
        for word, bits in self.unknown_bits:
            out[word] |= bits
        return out

    def to_bytes(self) -> bytes:
        w = self.words()
        for name in ("group_segment_fixed_size", "private_segment_fixed_size", "kernarg_size"):
            if not 0 <= getattr(self, name) < 1 << 32:
                raise CodeObjectError(f"kernel descriptor field {name}={getattr(self, name)} does not fit in 32 bits")
        rb = self.reserved_bytes
        return _LAYOUT.pack(self.group_segment_fixed_size, self.private_segment_fixed_size, self.kernarg_size,
                            int.from_bytes(rb[0:4], "little"), self.kernel_code_entry_byte_offset, rb[4:24],
                            w["compute_pgm_rsrc3"], w["compute_pgm_rsrc1"], w["compute_pgm_rsrc2"],
                            w["kernel_code_properties"], w["kernarg_preload"], rb[24:28])

    @classmethod
    def from_bytes(cls, data: bytes) -> KernelDescriptor:
        if len(data) != DESCRIPTOR_SIZE:
            raise CodeObjectError(f"kernel descriptor is {len(data)} bytes, expected {DESCRIPTOR_SIZE}")
        (group, private, kernarg, reserved0, entry, reserved1, rsrc3, rsrc1, rsrc2, props, preload,
         reserved3) = _LAYOUT.unpack(data)
        words = {"compute_pgm_rsrc1": rsrc1, "compute_pgm_rsrc2": rsrc2, "compute_pgm_rsrc3": rsrc3,
                 "kernel_code_properties": props, "kernarg_preload": preload}
        values: dict[str, int] = {}
        known = dict.fromkeys(WORDS, 0)
        for name, word, shift, width in BIT_FIELDS:
            mask = ((1 << width) - 1) << shift
            values[name] = (words[word] & mask) >> shift
            known[word] |= mask
        unknown = tuple((w, words[w] & ~known[w]) for w in WORDS if words[w] & ~known[w])
        return cls(group_segment_fixed_size=group, private_segment_fixed_size=private, kernarg_size=kernarg,
                   kernel_code_entry_byte_offset=entry, unknown_bits=unknown,
                   reserved_bytes=reserved0.to_bytes(4, "little") + reserved1 + reserved3, **values)

    def fields(self) -> dict[str, int]:
        """Every named field with its value, in layout order (for printing and comparison)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("unknown_bits",
                                                                                      "reserved_bytes")}

    @property
    def accum_offset_registers(self) -> int:
        """The first AGPR's index in the unified register file (decoded ACCUM_OFFSET)."""
        return (self.accum_offset + 1) * 4


def _blocks(count: int, granule: int) -> int:
    return -(-max(1, count) // granule) - 1


def accum_offset_of(desc: KernelDescription) -> int:
    """Where the AGPRs start in the unified VGPR file: the description's value or alignTo(max(1, vgprs), 4)."""
    if desc.accum_offset is not None:
        return desc.accum_offset
    return -(-max(1, desc.next_free_vgpr) // 4) * 4


def total_vgprs(desc: KernelDescription) -> int:
    """VGPRs allocated in the unified file: AGPRs follow the accum offset when any are used (LLVM's
    getTotalNumVGPRs for gfx90a+)."""
    if desc.next_free_agpr > 0:
        return accum_offset_of(desc) + desc.next_free_agpr
    return desc.next_free_vgpr


def extra_sgprs(desc: KernelDescription, processor: Target, xnack: str) -> int:
    """SGPRs the hardware allocates beyond s[next_free_sgpr - 1]: VCC, the XNACK mask and flat scratch, as
    LLVM's getNumExtraSGPRs counts them for GFX8/GFX9 (6 whenever flat scratch is architected)."""
    reserve_xnack = desc.reserve_xnack_mask if desc.reserve_xnack_mask is not None else xnack == "on"
    extra = 2 if desc.reserve_vcc else 0
    if reserve_xnack:
        extra = 4
    if processor.architected_flat_scratch or desc.reserve_flat_scratch:
        extra = 6
    return extra


def sgpr_count(desc: KernelDescription, processor: Target, xnack: str) -> int:
    """The SGPR count LLVM reports in `.sgpr_count` and granulates into the descriptor."""
    return desc.next_free_sgpr + extra_sgprs(desc, processor, xnack)


def implied_user_sgprs(desc: KernelDescription) -> int:
    count = sum(size for name, size in USER_SGPR_SIZES if getattr(desc, f"user_sgpr_{name}"))
    return count + desc.kernarg_preload_length


def _check_range(kernel: str, name: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int):
        raise CodeObjectError(f"kernel {kernel!r}: {name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise CodeObjectError(f"kernel {kernel!r}: {name}={value} is out of range [{low}, {high}]")


def compute_descriptor(desc: KernelDescription, processor: Target, xnack: str, kernarg_size: int,
                       entry_offset: int = 0) -> KernelDescriptor:
    """The descriptor LLVM would assemble for the equivalent `.amdhsa_kernel` block."""
    k = desc.name
    _check_range(k, "next_free_vgpr", desc.next_free_vgpr, 0, processor.max_arch_vgprs)
    _check_range(k, "next_free_agpr", desc.next_free_agpr, 0, processor.max_arch_vgprs)
    _check_range(k, "next_free_sgpr", desc.next_free_sgpr, 0, processor.max_sgprs)
    accum = accum_offset_of(desc)
    if accum % 4 or not 4 <= accum <= 256:
        raise CodeObjectError(f"kernel {k!r}: accum_offset={accum} must be a multiple of 4 in [4, 256]")
    if accum < desc.next_free_vgpr:
        raise CodeObjectError(f"kernel {k!r}: accum_offset={accum} is below next_free_vgpr="
                              f"{desc.next_free_vgpr}; AGPRs would overlap the architected VGPRs")
    total = total_vgprs(desc)
    if total > processor.max_vgprs:
        raise CodeObjectError(f"kernel {k!r}: {total} VGPRs+AGPRs exceed the {processor.max_vgprs} of "
                              f"{processor.name}")
    if processor.architected_flat_scratch:
        for name in ("private_segment_buffer", "flat_scratch_init"):
            if getattr(desc, f"user_sgpr_{name}"):
                raise CodeObjectError(f"kernel {k!r}: user_sgpr_{name} is not available on {processor.name}, "
                                      "whose flat scratch is architected")
    implied = implied_user_sgprs(desc)
    user_sgprs = implied if desc.user_sgpr_count is None else desc.user_sgpr_count
    if user_sgprs < implied:
        raise CodeObjectError(f"kernel {k!r}: user_sgpr_count={user_sgprs} is below the {implied} SGPRs the "
                              "enabled user SGPRs need")
    _check_range(k, "user_sgpr_count", user_sgprs, 0, processor.max_user_sgprs)
    _check_range(k, "workitem_id", desc.workitem_id, 0, 2)
    for name in ("float_round_mode_32", "float_round_mode_16_64", "float_denorm_mode_32",
                 "float_denorm_mode_16_64"):
        _check_range(k, name, getattr(desc, name), 0, 3)
    _check_range(k, "exceptions", desc.exceptions, 0, 127)
    _check_range(k, "group_segment_size", desc.group_segment_size, 0, processor.max_lds)
    _check_range(k, "private_segment_size", desc.private_segment_size, 0, (1 << 32) - 1)
    _check_range(k, "kernarg_preload_length", desc.kernarg_preload_length, 0, 127)
    _check_range(k, "kernarg_preload_offset", desc.kernarg_preload_offset, 0, 511)
    if desc.wavefront_size != 64:
        raise CodeObjectError(f"kernel {k!r}: wavefront_size={desc.wavefront_size}; {processor.name} runs "
                              "wave64 only")
    if len(desc.workgroup_id) != 3:
        raise CodeObjectError(f"kernel {k!r}: workgroup_id must be three booleans (x, y, z)")
    enable_private = (desc.private_segment_size > 0 if desc.enable_private_segment is None
                      else desc.enable_private_segment)
    exceptions = {name: (desc.exceptions >> i) & 1 for i, name in enumerate(EXCEPTION_FIELDS)}
    return KernelDescriptor(
        group_segment_fixed_size=desc.group_segment_size,
        private_segment_fixed_size=desc.private_segment_size,
        kernarg_size=kernarg_size,
        kernel_code_entry_byte_offset=entry_offset,
        granulated_workitem_vgpr_count=_blocks(total, processor.vgpr_encoding_granule),
        granulated_wavefront_sgpr_count=_blocks(sgpr_count(desc, processor, xnack),
                                                processor.sgpr_encoding_granule),
        float_round_mode_32=desc.float_round_mode_32,
        float_round_mode_16_64=desc.float_round_mode_16_64,
        float_denorm_mode_32=desc.float_denorm_mode_32,
        float_denorm_mode_16_64=desc.float_denorm_mode_16_64,
        enable_dx10_clamp=int(desc.dx10_clamp),
        enable_ieee_mode=int(desc.ieee_mode),
        fp16_ovfl=int(desc.fp16_overflow),
        enable_private_segment=int(enable_private),
        user_sgpr_count=user_sgprs,
        enable_sgpr_workgroup_id_x=int(desc.workgroup_id[0]),
        enable_sgpr_workgroup_id_y=int(desc.workgroup_id[1]),
        enable_sgpr_workgroup_id_z=int(desc.workgroup_id[2]),
        enable_sgpr_workgroup_info=int(desc.workgroup_info),
        enable_vgpr_workitem_id=desc.workitem_id,
        accum_offset=accum // 4 - 1,
        tg_split=int(desc.tg_split),
        enable_sgpr_private_segment_buffer=int(desc.user_sgpr_private_segment_buffer),
        enable_sgpr_dispatch_ptr=int(desc.user_sgpr_dispatch_ptr),
        enable_sgpr_queue_ptr=int(desc.user_sgpr_queue_ptr),
        enable_sgpr_kernarg_segment_ptr=int(desc.user_sgpr_kernarg_segment_ptr),
        enable_sgpr_dispatch_id=int(desc.user_sgpr_dispatch_id),
        enable_sgpr_flat_scratch_init=int(desc.user_sgpr_flat_scratch_init),
        enable_sgpr_private_segment_size=int(desc.user_sgpr_private_segment_size),
        uses_dynamic_stack=int(desc.uses_dynamic_stack),
        kernarg_preload_spec_length=desc.kernarg_preload_length,
        kernarg_preload_spec_offset=desc.kernarg_preload_offset,
        **exceptions,
    )
