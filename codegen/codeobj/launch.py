"""The launch description shared by the emulator and the hip runtime, and the kernarg segment it packs into.

A launch names a kernel of a code object, a grid counted in workgroups, a workgroup shape, the arguments
(numpy arrays for global buffers, Python or numpy scalars, None for a null pointer) and the dynamic LDS bytes
(`sharedMemBytes` of `hipModuleLaunchKernel`). The kernarg bytes are laid out by the kernel's own metadata
`.args` (offset, size, value kind; AMDGPUUsage "Code Object V3 Kernel Argument Metadata Map" and the v5 hidden
argument kinds), so a kernel compiled by anyone packs the same way in both runtimes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jitgemm.isa.errors import IsaError


class LaunchError(IsaError):
    """A launch that does not fit its kernel: argument count or kind, grid, block or LDS size."""


Dims = tuple[int, int, int]
_GRID_LIMIT = 0xFFFFFFFF  # work-items per dimension of one dispatch (HSA runtime spec, hsa_kernel_dispatch_packet_t)


def dims3(value: int | Sequence[int], what: str) -> Dims:
    """(x, y, z) from an int or a sequence of 1 to 3 positive ints."""
    seq = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(seq) <= 3 or not all(isinstance(v, (int, np.integer)) and v >= 1 for v in seq):
        raise LaunchError(f"{what} must be 1 to 3 positive integers (x, y, z), got {value!r}")
    out = tuple(int(v) for v in seq) + (1,) * (3 - len(seq))
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class LaunchDescription:
    """One kernel launch; `grid` counts workgroups (as `hipModuleLaunchKernel`'s gridDim does)."""

    kernel: str
    grid: Dims
    block: Dims
    args: tuple[Any, ...]
    lds_bytes: int = 0

    @classmethod
    def make(cls, kernel: str, grid: int | Sequence[int], block: int | Sequence[int], args: Sequence[Any] = (),
             lds_bytes: int = 0) -> LaunchDescription:
        if not isinstance(lds_bytes, (int, np.integer)) or lds_bytes < 0:
            raise LaunchError(f"lds_bytes must be a non-negative integer, got {lds_bytes!r}")
        grid3, block3 = dims3(grid, "grid"), dims3(block, "block")
        for axis, g, b in zip("xyz", grid3, block3, strict=True):
            if g * b > _GRID_LIMIT:  # the AQL packet's grid_size_x/y/z are uint32 counts of work-items
                raise LaunchError(f"grid {grid3} x block {block3}: {g} x {b} work-items along {axis} exceed the "
                                  f"{_GRID_LIMIT} a dispatch packet can hold (hsa_kernel_dispatch_packet_t "
                                  f"grid_size_{axis} is 32-bit)")
        return cls(kernel, grid3, block3, tuple(args), int(lds_bytes))

    @property
    def workgroup_size(self) -> int:
        x, y, z = self.block
        return x * y * z

    @property
    def workgroup_count(self) -> int:
        x, y, z = self.grid
        return x * y * z


@dataclass(frozen=True)
class PackedSegment:
    """The explicit kernarg bytes of a launch packed by a kernel contract instead of from the metadata's
    argument list (hand-written kernels list pads, or nothing, in their metadata; the contract lists what
    carries a value and every other byte is zero). `buffers` are the arrays it points at, which a runtime maps
    (the hip runtime copies them to the device); `pack(pointer_of)` returns the bytes, asking
    `pointer_of(array, index)` for each buffer's device address. Hidden arguments stay the runtime's."""

    buffers: tuple
    pack: Callable[[Callable[[Any, int], int]], bytes]


def _get(arg: Any, key: str, default: Any = None) -> Any:
    """A metadata argument field, from a msgpack map (`.offset`) or an object (`offset`)."""
    if isinstance(arg, Mapping):
        return arg.get("." + key, arg.get(key, default))
    return getattr(arg, key, default)


def is_hidden(arg: Any) -> bool:
    return str(_get(arg, "value_kind", "")).startswith("hidden_")


def explicit_args(arg_maps: Sequence[Any]) -> list[Any]:
    return [a for a in arg_maps if not is_hidden(a)]


def describe_args(arg_maps: Sequence[Any]) -> str:
    parts = []
    for i, a in enumerate(explicit_args(arg_maps)):
        name = _get(a, "name") or f"#{i}"
        parts.append(f"{name}: {_get(a, 'value_kind')} ({_get(a, 'size')} bytes)")
    return ", ".join(parts) or "none"


def _pack_scalar(value: Any, size: int, where: str) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        if len(value) != size:
            raise LaunchError(f"{where}: {len(value)} bytes given for a {size}-byte argument")
        return bytes(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        raw = value.tobytes()
        if len(raw) != size:
            raise LaunchError(f"{where}: numpy {value.dtype} is {len(raw)} bytes, the argument is {size} bytes")
        return raw
    if isinstance(value, (bool, int)):
        v = int(value)
        if -(1 << (8 * size - 1)) <= v < (1 << (8 * size)):
            return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        raise LaunchError(f"{where}: {v} does not fit a {size}-byte integer")
    if isinstance(value, float):
        fmt = {2: "<e", 4: "<f", 8: "<d"}.get(size)
        if fmt is None:
            raise LaunchError(f"{where}: a float cannot fill a {size}-byte argument")
        return struct.pack(fmt, value)
    raise LaunchError(f"{where}: a by-value argument takes an int, a float, a numpy scalar or bytes, "
                      f"got {type(value).__name__}")


def pack_kernargs(arg_maps: Sequence[Any], launch: LaunchDescription, *, segment_size: int,
                  pointer_of: Callable[[Any, int], int], hidden: Mapping[str, int] | None = None,
                  include_hidden: bool = True) -> bytearray:
    """The kernarg segment of `launch` laid out by the kernel's metadata `.args`.

    `pointer_of(value, index)` turns a buffer argument (a numpy array, or an int address) into a device
    address. Hidden arguments of code object v5 get the values a HIP runtime gives them (block counts,
    group sizes, zero remainders and offsets, grid dims, dynamic LDS size); `hidden` adds or overrides
    values by kind (e.g. apertures for `hidden_shared_base`). Unknown hidden kinds are left zero, as the
    runtime leaves the services it does not provide.
    """
    explicit = explicit_args(arg_maps)
    end = max([int(_get(a, "offset", 0)) + int(_get(a, "size", 0)) for a in arg_maps] + [0])
    if len(launch.args) == 1 and isinstance(launch.args[0], PackedSegment):
        raw = launch.args[0].pack(pointer_of)
        buf = bytearray(max(segment_size, end, len(raw)))
        buf[:len(raw)] = raw
        return _add_hidden(buf, arg_maps, launch, hidden) if include_hidden else buf
    if len(launch.args) != len(explicit):
        raise LaunchError(f"kernel {launch.kernel!r} takes {len(explicit)} arguments, {len(launch.args)} given; "
                          f"it expects: {describe_args(arg_maps)}")
    buf = bytearray(max(segment_size, end))
    for index, (meta, value) in enumerate(zip(explicit, launch.args, strict=True)):
        offset, size, kind = int(_get(meta, "offset", 0)), int(_get(meta, "size", 0)), _get(meta, "value_kind")
        where = f"kernel {launch.kernel!r} argument {_get(meta, 'name') or index} ({kind} at offset {offset})"
        if kind in ("global_buffer", "dynamic_shared_pointer"):
            if value is None:
                raw = bytes(size)
            elif kind == "global_buffer":
                if isinstance(value, (bool, float)) or not isinstance(value, (np.ndarray, int, np.integer)):
                    raise LaunchError(f"{where}: a buffer argument takes a numpy array, an int address or None, "
                                      f"got {type(value).__name__}")
                raw = int(pointer_of(value, index)).to_bytes(size, "little")
            else:
                raise LaunchError(f"{where}: dynamic shared pointers are given by lds_bytes; pass None")
        elif kind == "by_value":
            if isinstance(value, np.ndarray) and value.ndim > 0:
                raise LaunchError(f"{where}: an array was given for a by-value argument")
            if value is None:
                raise LaunchError(f"{where}: None is only accepted for a buffer argument")
            raw = _pack_scalar(value, size, where)
        else:
            raise LaunchError(f"{where}: argument kind {kind!r} is not supported by this runtime")
        buf[offset:offset + size] = raw
    return _add_hidden(buf, arg_maps, launch, hidden) if include_hidden else buf


def _add_hidden(buf: bytearray, arg_maps: Sequence[Any], launch: LaunchDescription,
                hidden: Mapping[str, int] | None) -> bytearray:
    values = hidden_values(launch)
    values.update(hidden or {})
    for meta in arg_maps:
        kind = str(_get(meta, "value_kind", ""))
        if kind.startswith("hidden_") and kind in values:
            offset, size = int(_get(meta, "offset", 0)), int(_get(meta, "size", 0))
            buf[offset:offset + size] = (values[kind] & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return buf


def hidden_values(launch: LaunchDescription) -> dict[str, int]:
    """Values of the v5 hidden arguments for a launch whose grid counts whole workgroups."""
    gx, gy, gz = launch.grid
    bx, by, bz = launch.block
    dims = 3 if gz * bz > 1 else 2 if gy * by > 1 else 1
    return {
        "hidden_block_count_x": gx, "hidden_block_count_y": gy, "hidden_block_count_z": gz,
        "hidden_group_size_x": bx, "hidden_group_size_y": by, "hidden_group_size_z": bz,
        "hidden_remainder_x": 0, "hidden_remainder_y": 0, "hidden_remainder_z": 0,
        "hidden_global_offset_x": 0, "hidden_global_offset_y": 0, "hidden_global_offset_z": 0,
        "hidden_grid_dims": dims, "hidden_dynamic_lds_size": launch.lds_bytes,
    }
