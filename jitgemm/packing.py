"""Kernel arguments from a contract: which value goes where, by role.

A GEMM call knows its values by meaning (the A pointer, M, lda, alpha...); a kernel's contract says which
argument has which role at which offset. `ordered_args` gives the explicit arguments in the kernel's
metadata order (what `jitgemm.launch.pack_kernargs` and the runtimes take); `pack_segment` packs the
explicit part of the kernarg segment from the contract alone, so a test can show both routes agree.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from .contract import Contract, ContractError

_FORMATS = {("i32", 4): "<i", ("u32", 4): "<I", ("i64", 8): "<q", ("f32", 4): "<f", ("f64", 8): "<d"}


def _value(arg: Mapping[str, Any], values: Mapping[str, Any], contract: Contract) -> Any:
    role = arg["role"]
    if role == "const":
        return arg.get("value", 0)
    if role == "unused":
        return None if arg.get("type") == "ptr" else 0
    if role not in values:
        raise ContractError(f"{contract.source}: argument {arg['name']} has role {role!r}, for which the caller "
                            f"has no value (it has: {', '.join(sorted(values))})")
    return values[role]


def ordered_args(contract: Contract, values: Mapping[str, Any]) -> list[Any]:
    """Explicit argument values in offset order (the metadata's order for every compiler we know)."""
    return [_value(a, values, contract) for a in sorted(contract.args, key=lambda a: a["offset"])]


def pack_segment(contract: Contract, values: Mapping[str, Any], pointer_of: Callable[[Any, int], int]) -> bytes:
    """The explicit kernarg bytes laid out by the contract (hidden arguments are the runtime's)."""
    buf = bytearray(contract.data["abi"]["kernarg_size"])
    for index, arg in enumerate(sorted(contract.args, key=lambda a: a["offset"])):
        value = _value(arg, values, contract)
        off, size, kind = arg["offset"], arg["size"], arg.get("type", "i32")
        if kind == "ptr":
            raw = (0 if value is None else int(pointer_of(value, index))).to_bytes(size, "little")
        elif (kind, size) in _FORMATS:
            fmt = _FORMATS[(kind, size)]
            raw = struct.pack(fmt, float(value) if kind.startswith("f") else int(value))
        else:
            raw = (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        buf[off:off + size] = raw
    return bytes(buf)
