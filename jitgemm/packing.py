"""Kernel arguments from a contract: which value goes where, by role.

A GEMM call knows its values by meaning (the A pointer, M, lda, alpha...); a kernel's contract says which
argument has which role at which offset. `packed_segment` is what a launch passes: the explicit kernarg bytes
laid out by the contract alone, every byte that no listed argument covers zero (hand-written kernels pad
their arguments to 16-byte slots and leave unused pointers out). `ordered_args` gives the same values in
offset order for a runtime that packs from the metadata, so a test can show both routes agree.

Strides and leading dimensions are counted as the contract's `abi.strides_in` says: in elements of their
operand (lda of a bf16 A = elements), or in bytes (lda * 2 for that A, lda / 2 for a packed fp4 A), as many
hand-written kernels and Triton's MX kernels take them. Scale arrays (ld_a_scale, stride_b_scale, ...) count
E8M0 entries, one byte each.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from jitgemm.codegen.codeobj.launch import PackedSegment
from jitgemm.codegen.dtypes import dtype

from .contract import Contract, ContractError

_FORMATS = {("i32", 4): "<i", ("u32", 4): "<I", ("i64", 8): "<q", ("f32", 4): "<f", ("f64", 8): "<d"}
# the operand whose element size scales a stride role when strides are in bytes; scale arrays hold one E8M0 byte
# per entry, so their leading dimensions and strides are the same number in elements and in bytes
STRIDE_OPERAND = {"lda": "a", "ldb": "b", "ldc": "c", "ldd": "d", "stride_a": "a", "stride_b": "b",
                  "stride_c": "c", "stride_d": "d", "ld_a_scale": "e8m0", "ld_b_scale": "e8m0",
                  "stride_a_scale": "e8m0", "stride_b_scale": "e8m0"}


def stride_value(contract: Contract, role: str, count: int, unit: str | None = None) -> int:
    """An element count of a stride role as the kernel takes it: unchanged, or in bytes when the argument's
    `unit` (default: the contract's `abi.strides_in`) is bytes (packed sub-byte rows start on a byte, so fp4/fp6
    counts convert exactly)."""
    operand = STRIDE_OPERAND.get(role)
    if operand is None or (unit or contract.data["abi"]["strides_in"]) != "bytes":
        return count
    name = "e8m0" if operand == "e8m0" else contract.data["operation"].get(operand) or contract.data["operation"]["d"]
    return dtype(name).storage_bytes(count)


def _value(arg: Mapping[str, Any], values: Mapping[str, Any], contract: Contract) -> Any:
    role = arg["role"]
    if role == "const":
        return arg.get("value", 0)
    if role == "unused":
        return None if arg.get("type") == "ptr" else 0
    if role in ALIAS_OF_D and values.get("c") is None and contract.data["features"].get("c_alias_d"):
        role = ALIAS_OF_D[role]     # no C: the kernel reads D as C with beta = 0 (features.c_alias_d)
    if role not in values:
        raise ContractError(f"{contract.source}: argument {arg['name']} has role {role!r}, for which the caller "
                            f"has no value (it has: {', '.join(sorted(values))})")
    value = values[role]
    if value is not None and role in STRIDE_OPERAND:
        value = stride_value(contract, role, value, arg.get("unit"))
    if value is not None and arg.get("divisor"):
        value = int(value) // arg["divisor"]
    return value


ALIAS_OF_D = {"c": "d", "ldc": "ldd", "stride_c": "stride_d"}


def ordered_args(contract: Contract, values: Mapping[str, Any]) -> list[Any]:
    """Explicit argument values in offset order (the metadata's order for every compiler we know)."""
    return [_value(a, values, contract) for a in sorted(contract.args, key=lambda a: a["offset"])]


def pack_segment(contract: Contract, values: Mapping[str, Any], pointer_of: Callable[[Any, int], int]) -> bytes:
    """The explicit kernarg bytes laid out by the contract (hidden arguments are the runtime's); bytes that no
    listed argument covers are zero."""
    buf = bytearray(contract.data["abi"]["kernarg_size"])
    for index, arg in enumerate(sorted(contract.args, key=lambda a: a["offset"])):
        value = _value(arg, values, contract)
        off, size, kind = arg["offset"], arg["size"], arg.get("type", "i32")
        where = f"{contract.source}: abi.args {arg['name']} (role {arg['role']}, {kind} at offset {off})"
        if kind == "ptr":
            raw = (0 if value is None else int(pointer_of(value, index))).to_bytes(size, "little")
        elif (kind, size) in _FORMATS:
            fmt = _FORMATS[(kind, size)]
            try:
                raw = struct.pack(fmt, float(value) if kind.startswith("f") else int(value))
            except (TypeError, ValueError, struct.error) as exc:
                raise ContractError(f"{where}: value {value!r} does not fit ({exc})") from None
        else:
            raw = (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        buf[off:off + size] = raw
    return bytes(buf)


def packed_segment(contract: Contract, values: Mapping[str, Any]) -> PackedSegment:
    """The launch argument for a contract-described kernel (see jitgemm.codegen.codeobj.launch.PackedSegment)."""
    pointers = [a for a in sorted(contract.args, key=lambda a: a["offset"]) if a.get("type") == "ptr"]
    buffers = tuple(v for a in pointers if (v := _value(a, values, contract)) is not None)
    return PackedSegment(buffers, lambda pointer_of: pack_segment(contract, values, pointer_of))
