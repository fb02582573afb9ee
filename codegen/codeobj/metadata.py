"""The NT_AMDGPU_METADATA note: kernarg layout, the msgpack map, and the ELF note record around it.

Keys and value spellings are from LLVM's AMDGPUUsage, "Code Object V3 Metadata" (amdhsa.version,
amdhsa.target, amdhsa.kernels; the kernel map `.name`, `.symbol`, `.args`, `.kernarg_segment_size`, ...;
the argument map `.offset`, `.size`, `.value_kind`, `.address_space`, ...) and "Code Object V5 Metadata"
(version [1, 2] and the hidden argument kinds with their offsets in the implicit kernarg block, table
"AMDHSA Code Object V5 Kernel Argument Metadata Map Additions and Changes" and "Implicit Kernel Arguments").

Maps are written with their keys sorted, which is what LLVM's msgpack document writer does, so a note we
write for the same values is byte-identical to one llvm-mc writes from `.amdgpu_metadata` YAML.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from .description import ACCESS_QUALIFIERS, ADDRESS_SPACES, EXPLICIT_VALUE_KINDS, KernelArg, KernelDescription
from .elf_format import NOTE_HEADER, NOTE_NAME_AMDGPU, NT_AMDGPU_METADATA, align_up
from .errors import CodeObjectError

METADATA_VERSION = {5: [1, 2], 6: [1, 2]}
CONTRACT_KEY = "jitgemm.contract"
IMPLICIT_BLOCK_SIZE = 256
IMPLICIT_BLOCK_ALIGN = 8

# Offset and size of each v5 hidden argument inside the 256-byte implicit block (AMDGPUUsage
# "Implicit Kernel Arguments", code object v5 column).
HIDDEN_ARGS_V5: dict[str, tuple[int, int]] = {
    "hidden_block_count_x": (0, 4),
    "hidden_block_count_y": (4, 4),
    "hidden_block_count_z": (8, 4),
    "hidden_group_size_x": (12, 2),
    "hidden_group_size_y": (14, 2),
    "hidden_group_size_z": (16, 2),
    "hidden_remainder_x": (18, 2),
    "hidden_remainder_y": (20, 2),
    "hidden_remainder_z": (22, 2),
    "hidden_global_offset_x": (40, 8),
    "hidden_global_offset_y": (48, 8),
    "hidden_global_offset_z": (56, 8),
    "hidden_grid_dims": (64, 2),
    "hidden_printf_buffer": (72, 8),
    "hidden_hostcall_buffer": (80, 8),
    "hidden_multigrid_sync_arg": (88, 8),
    "hidden_heap_v1": (96, 8),
    "hidden_default_queue": (104, 8),
    "hidden_completion_action": (112, 8),
    "hidden_dynamic_lds_size": (120, 4),
    "hidden_private_base": (192, 4),
    "hidden_shared_base": (196, 4),
    "hidden_queue_ptr": (200, 8),
}
# What clang/LLVM declare for a kernel that needs none of the optional runtime services.
STANDARD_HIDDEN_ARGS: tuple[str, ...] = (
    "hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z",
    "hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z",
    "hidden_remainder_x", "hidden_remainder_y", "hidden_remainder_z",
    "hidden_global_offset_x", "hidden_global_offset_y", "hidden_global_offset_z",
    "hidden_grid_dims",
)


@dataclass(frozen=True)
class KernargLayout:
    args: tuple[dict[str, Any], ...]  # metadata maps, explicit then hidden, in offset order
    size: int
    align: int


def _natural_align(size: int) -> int:
    return min(16, size & -size) if size > 0 else 1


def hidden_arg_name(name: str) -> str:
    full = name if name.startswith("hidden_") else f"hidden_{name}"
    if full not in HIDDEN_ARGS_V5:
        raise CodeObjectError(f"unknown hidden argument {name!r}; code object v5 has: "
                              f"{', '.join(n.removeprefix('hidden_') for n in HIDDEN_ARGS_V5)}")
    return full


def _arg_map(kernel: str, arg: KernelArg, offset: int) -> dict[str, Any]:
    where = f"kernel {kernel!r}, argument {arg.name or offset!r}"
    if arg.value_kind not in EXPLICIT_VALUE_KINDS:
        hint = " (declare hidden arguments in hidden_args)" if arg.value_kind.startswith("hidden_") else ""
        raise CodeObjectError(f"{where}: value_kind {arg.value_kind!r} is not one of "
                              f"{', '.join(sorted(EXPLICIT_VALUE_KINDS))}{hint}")
    out: dict[str, Any] = {".offset": offset, ".size": arg.size, ".value_kind": arg.value_kind}
    space = arg.address_space or ("global" if arg.value_kind == "global_buffer" else None)
    if space is not None:
        if space not in ADDRESS_SPACES:
            raise CodeObjectError(f"{where}: address_space {space!r} is not one of {sorted(ADDRESS_SPACES)}")
        out[".address_space"] = space
    for key, value in ((".access", arg.access), (".actual_access", arg.actual_access)):
        if value is not None:
            if value not in ACCESS_QUALIFIERS:
                raise CodeObjectError(f"{where}: {key[1:]} {value!r} is not one of {sorted(ACCESS_QUALIFIERS)}")
            out[key] = value
    for key, value in ((".name", arg.name), (".value_type", arg.value_type), (".type_name", arg.type_name)):
        if value is not None:
            out[key] = value
    for key, flag in ((".is_const", arg.is_const), (".is_restrict", arg.is_restrict),
                      (".is_volatile", arg.is_volatile)):
        if flag:
            out[key] = True
    return out


def kernarg_layout(desc: KernelDescription) -> KernargLayout:
    """Offsets of the explicit arguments, then the declared hidden ones after alignTo(end, 8)."""
    maps: list[dict[str, Any]] = []
    end = 0
    align = 4
    taken: list[tuple[int, int, str]] = []
    for arg in desc.args:
        name = arg.name or f"#{len(maps)}"
        if not isinstance(arg.size, int) or arg.size <= 0:
            raise CodeObjectError(f"kernel {desc.name!r}, argument {name!r}: size must be a positive integer")
        arg_align = arg.align or _natural_align(arg.size)
        if arg_align & (arg_align - 1):
            raise CodeObjectError(f"kernel {desc.name!r}, argument {name!r}: align {arg_align} is not a power of 2")
        offset = align_up(end, arg_align) if arg.offset is None else arg.offset
        if offset < 0 or offset % arg_align:
            raise CodeObjectError(f"kernel {desc.name!r}, argument {name!r}: offset {offset} is not a multiple "
                                  f"of its alignment {arg_align}")
        for lo, hi, other in taken:
            if offset < hi and lo < offset + arg.size:
                raise CodeObjectError(f"kernel {desc.name!r}, argument {name!r} at [{offset}, "
                                      f"{offset + arg.size}) overlaps argument {other!r} at [{lo}, {hi})")
        taken.append((offset, offset + arg.size, name))
        maps.append(_arg_map(desc.name, arg, offset))
        end = max(end, offset + arg.size)
        align = max(align, arg_align)
    if desc.hidden_args:
        base = align_up(end, IMPLICIT_BLOCK_ALIGN)
        names = sorted({hidden_arg_name(n) for n in desc.hidden_args}, key=lambda n: HIDDEN_ARGS_V5[n][0])
        for name in names:
            rel, size = HIDDEN_ARGS_V5[name]
            maps.append({".offset": base + rel, ".size": size, ".value_kind": name})
        end = base + IMPLICIT_BLOCK_SIZE
        align = max(align, IMPLICIT_BLOCK_ALIGN)
    maps.sort(key=lambda m: m[".offset"])
    # LLVM rounds the segment up to whole dwords so scalar loads may read past the last byte argument
    # (AMDGPUSubtarget::getKernArgSegmentSize).
    return KernargLayout(tuple(maps), align_up(end, 4), align)


def check_plain(value: Any, where: str) -> None:
    """Only what msgpack and LLVM's metadata reader both round-trip: maps with string keys, lists, str,
    int, float, bool, None."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CodeObjectError(f"{where}: map key {key!r} is not a string")
            check_plain(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CodeObjectError(f"{where}: {value!r} is not a finite number")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not -(1 << 63) <= value < (1 << 64):
            raise CodeObjectError(f"{where}: {value} does not fit in 64 bits")
    elif not (value is None or isinstance(value, str | bool)):
        raise CodeObjectError(f"{where}: {type(value).__name__} {value!r} cannot be stored in the metadata "
                              "(use maps, lists, strings, numbers, booleans or None)")


def kernel_metadata(desc: KernelDescription, layout: KernargLayout, vgprs: int, sgprs: int) -> dict[str, Any]:
    """The `amdhsa.kernels` entry for one kernel."""
    out: dict[str, Any] = {
        ".name": desc.name,
        ".symbol": f"{desc.name}.kd",
        ".args": list(layout.args),
        ".kernarg_segment_size": layout.size,
        ".kernarg_segment_align": layout.align,
        ".group_segment_fixed_size": desc.group_segment_size,
        ".private_segment_fixed_size": desc.private_segment_size,
        ".wavefront_size": desc.wavefront_size,
        ".sgpr_count": sgprs,
        ".vgpr_count": vgprs,
        ".agpr_count": desc.next_free_agpr,
        ".max_flat_workgroup_size": desc.max_flat_workgroup_size,
    }
    if desc.uses_dynamic_stack:
        out[".uses_dynamic_stack"] = True
    for key, value in desc.extra_metadata.items():
        check_plain(value, f"kernel {desc.name!r} metadata {key}")
        if key in out:
            raise CodeObjectError(f"kernel {desc.name!r}: extra_metadata key {key!r} is computed by the writer")
        out[key] = value
    if desc.contract is not None:
        if not isinstance(desc.contract, Mapping):
            raise CodeObjectError(f"kernel {desc.name!r}: contract must be a mapping, got "
                                  f"{type(desc.contract).__name__}")
        check_plain(desc.contract, f"kernel {desc.name!r} contract")
        out[CONTRACT_KEY] = plain(desc.contract)
    return out


def plain(value: Any) -> Any:
    """`value` with every mapping a dict and every sequence a list (what msgpack writes into the metadata note)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def code_object_metadata(kernels: Sequence[dict[str, Any]], target_id: str, version: int = 5) -> dict[str, Any]:
    return {"amdhsa.version": list(METADATA_VERSION[version]), "amdhsa.target": target_id,
            "amdhsa.kernels": list(kernels)}


def _pack(value: Any, out: bytearray) -> None:
    """msgpack encoding as LLVM's msgpack::Writer produces it: the smallest integer form, maps with sorted
    keys, and a float written as float32 when that is exact (LLVM writes float32 for every value in float
    range, which would lose precision of a contract's numbers; for exactly representable values both agree)."""
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, int):
        if 0 <= value < 0x80:
            out.append(value)
        elif value >= 0:
            for limit, tag, fmt in ((0xFF, 0xCC, ">B"), (0xFFFF, 0xCD, ">H"), (0xFFFFFFFF, 0xCE, ">I")):
                if value <= limit:
                    out.append(tag)
                    out += struct.pack(fmt, value)
                    break
            else:
                out.append(0xCF)
                out += struct.pack(">Q", value)
        elif value >= -32:
            out += struct.pack(">b", value)
        else:
            for low, tag, fmt in ((-0x80, 0xD0, ">b"), (-0x8000, 0xD1, ">h"), (-0x80000000, 0xD2, ">i")):
                if value >= low:
                    out.append(tag)
                    out += struct.pack(fmt, value)
                    break
            else:
                out.append(0xD3)
                out += struct.pack(">q", value)
    elif isinstance(value, float):
        single = struct.pack(">f", value) if abs(value) <= 3.4e38 else None
        if single is not None and struct.unpack(">f", single)[0] == value:
            out.append(0xCA)
            out += single
        else:
            out.append(0xCB)
            out += struct.pack(">d", value)
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        _length(out, len(raw), 0xA0, 32, (0xD9, 0xDA, 0xDB))
        out += raw
    elif isinstance(value, bytes | bytearray):
        _length(out, len(value), None, 0, (0xC4, 0xC5, 0xC6))
        out += value
    elif isinstance(value, Mapping):
        _length(out, len(value), 0x80, 16, (None, 0xDE, 0xDF))
        for key in sorted(value):
            _pack(key, out)
            _pack(value[key], out)
    elif isinstance(value, list | tuple):
        _length(out, len(value), 0x90, 16, (None, 0xDC, 0xDD))
        for item in value:
            _pack(item, out)
    else:
        raise CodeObjectError(f"cannot store {type(value).__name__} {value!r} in the metadata")


def _length(out: bytearray, n: int, fix: int | None, fix_limit: int, tags: tuple[int | None, int, int]) -> None:
    if fix is not None and n < fix_limit:
        out.append(fix | n)
    elif tags[0] is not None and n <= 0xFF:
        out += bytes((tags[0], n))
    elif n <= 0xFFFF:
        out.append(tags[1])
        out += struct.pack(">H", n)
    else:
        out.append(tags[2])
        out += struct.pack(">I", n)


def pack_metadata(metadata: Mapping[str, Any]) -> bytes:
    """msgpack bytes of the metadata map, encoded as LLVM encodes it (see _pack)."""
    out = bytearray()
    _pack(metadata, out)
    return bytes(out)


def unpack_metadata(blob: bytes, where: str = "metadata note") -> dict[str, Any]:
    try:
        value = msgpack.unpackb(blob, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException, TypeError, OverflowError) as exc:
        raise CodeObjectError(f"{where}: metadata is not msgpack ({exc})") from None
    if not isinstance(value, dict):
        raise CodeObjectError(f"{where}: metadata is a msgpack {type(value).__name__}, expected a map")
    return value


def note_record(name: bytes, note_type: int, desc: bytes) -> bytes:
    """One ELF note: header, NUL-terminated name and descriptor, each padded to 4 bytes."""
    name_z = name + b"\0"
    return (NOTE_HEADER.pack(len(name_z), len(desc), note_type) + name_z + bytes(align_up(len(name_z), 4)
            - len(name_z)) + desc + bytes(align_up(len(desc), 4) - len(desc)))


def metadata_note(metadata: Mapping[str, Any]) -> bytes:
    return note_record(NOTE_NAME_AMDGPU, NT_AMDGPU_METADATA, pack_metadata(metadata))


@dataclass(frozen=True)
class Note:
    name: bytes
    type: int
    desc: bytes


def parse_notes(data: bytes, where: str) -> list[Note]:
    """Split a note section into records; a record running past the section is a CodeObjectError."""
    notes = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < NOTE_HEADER.size:
            raise CodeObjectError(f"{where}: truncated note header at offset {pos}")
        namesz, descsz, note_type = NOTE_HEADER.unpack_from(data, pos)
        name_at = pos + NOTE_HEADER.size
        desc_at = name_at + align_up(namesz, 4)
        end = desc_at + align_up(descsz, 4)
        if desc_at + descsz > len(data):
            raise CodeObjectError(f"{where}: note at offset {pos} (name {namesz} bytes, descriptor {descsz} "
                                  f"bytes) runs past the end of the section ({len(data)} bytes)")
        name = bytes(data[name_at:name_at + namesz]).rstrip(b"\0")
        notes.append(Note(name, note_type, bytes(data[desc_at:desc_at + descsz])))
        pos = end
    return notes
