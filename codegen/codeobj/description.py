"""What a generator tells the writer about one kernel.

A `KernelDescription` holds the facts only the generator knows (code, arguments, register high-water marks,
which hardware-initialised registers the code reads); everything derived from them (granulated register
counts, user SGPR count, kernarg layout of the v5 hidden arguments, the metadata map) is computed by
`descriptor.py` and `metadata.py`, so the descriptor and the metadata can never disagree.

Defaults follow LLVM's `.amdhsa_kernel` directive defaults (AMDGPUUsage "AMDHSA Kernel Assembler
Directives"): float denorm mode 32 = 0 (flush), 16/64 = 3 (keep), round modes 0 (nearest even), DX10 clamp
and IEEE mode on, workgroup id X on, workitem id 0 (X only), VCC reserved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# AMDGPUUsage "Code Object V3 Kernel Argument Metadata Map" `.value_kind` values (v5 adds the hidden ones
# listed in metadata.HIDDEN_ARGS_V5).
EXPLICIT_VALUE_KINDS = frozenset({
    "by_value", "global_buffer", "dynamic_shared_pointer", "sampler", "image", "pipe", "queue",
})
ADDRESS_SPACES = frozenset({"private", "global", "constant", "local", "generic", "region"})
ACCESS_QUALIFIERS = frozenset({"read_only", "write_only", "read_write"})


@dataclass(frozen=True)
class KernelArg:
    """One explicit kernel argument as it lies in the kernarg segment.

    `offset=None` places the argument at the next offset aligned to `align` (default: the largest power of
    two dividing `size`, at most 16: what clang does for scalars, pointers and vectors).
    """

    name: str | None
    size: int
    value_kind: str = "by_value"
    offset: int | None = None
    align: int | None = None
    address_space: str | None = None  # default "global" for a global_buffer
    value_type: str | None = None  # deprecated by LLVM since v5 but still accepted by readers
    access: str | None = None
    actual_access: str | None = None
    type_name: str | None = None
    is_const: bool = False
    is_restrict: bool = False
    is_volatile: bool = False

    @staticmethod
    def buffer(name: str | None, *, access: str | None = None, type_name: str | None = None,
               is_const: bool = False) -> KernelArg:
        """A 64-bit global pointer argument."""
        return KernelArg(name, 8, "global_buffer", address_space="global", access=access,
                         type_name=type_name, is_const=is_const)

    @staticmethod
    def scalar(name: str | None, size: int = 4, *, type_name: str | None = None) -> KernelArg:
        """A by-value argument of `size` bytes."""
        return KernelArg(name, size, "by_value", type_name=type_name)


@dataclass(frozen=True)
class KernelDescription:
    """One kernel for `codegen.codeobj.write`."""

    name: str
    code: bytes
    args: Sequence[KernelArg] = ()
    # Hidden arguments of code object v5 to declare after the explicit ones, e.g. metadata.STANDARD_HIDDEN_ARGS;
    # names with or without the "hidden_" prefix. Any hidden argument reserves the whole 256-byte block.
    hidden_args: Sequence[str] = ()
    group_segment_size: int = 0  # static LDS bytes
    private_segment_size: int = 0  # scratch bytes per work-item
    next_free_vgpr: int = 1  # architected VGPRs used (v0..v[n-1])
    next_free_sgpr: int = 0  # SGPRs used (s0..s[n-1]), without VCC/flat scratch/xnack mask
    next_free_agpr: int = 0  # accumulation VGPRs used (a0..a[n-1])
    accum_offset: int | None = None  # first AGPR in the unified file; default alignTo(max(1, vgprs), 4)
    # User SGPRs the code expects to find preloaded (AMDGPUUsage "Initial Kernel Execution State").
    user_sgpr_private_segment_buffer: bool = False
    user_sgpr_dispatch_ptr: bool = False
    user_sgpr_queue_ptr: bool = False
    user_sgpr_kernarg_segment_ptr: bool = True
    user_sgpr_dispatch_id: bool = False
    user_sgpr_flat_scratch_init: bool = False
    user_sgpr_private_segment_size: bool = False
    user_sgpr_count: int | None = None  # explicit total; default: what the enables above need
    kernarg_preload_length: int = 0  # SGPRs of kernarg preloaded after the other user SGPRs
    kernarg_preload_offset: int = 0  # in dwords
    workgroup_id: tuple[bool, bool, bool] = (True, False, False)
    workgroup_info: bool = False
    workitem_id: int = 0  # 0: X only, 1: X and Y, 2: X, Y and Z
    enable_private_segment: bool | None = None  # default: private_segment_size > 0
    float_round_mode_32: int = 0
    float_round_mode_16_64: int = 0
    float_denorm_mode_32: int = 0
    float_denorm_mode_16_64: int = 3
    dx10_clamp: bool = True
    ieee_mode: bool = True
    fp16_overflow: bool = False
    tg_split: bool = False
    exceptions: int = 0  # bits 24..30 of COMPUTE_PGM_RSRC2 (IEEE exceptions, int divide by zero), as a 7-bit mask
    reserve_vcc: bool = True
    reserve_flat_scratch: bool = True  # only where flat scratch is not architected (gfx90a)
    reserve_xnack_mask: bool | None = None  # default: the target's xnack setting is "on"
    uses_dynamic_stack: bool = False
    wavefront_size: int = 64
    max_flat_workgroup_size: int = 1024
    contract: Mapping[str, Any] | None = None  # stored under "jitgemm.contract" in the kernel's metadata
    extra_metadata: Mapping[str, Any] = field(default_factory=dict)  # further keys for the kernel's map
