"""Kernel arguments from a contract: which value goes where, by role.

A GEMM call knows its values by meaning (the A pointer, M, lda, alpha...); a kernel's contract says which
argument has which role at which offset. `ordered_args` gives the explicit arguments in the kernel's
metadata order (what `jitgemm.launch.pack_kernargs` and the runtimes take; tests/test_selector.py packs the
segment from the contract alone to show both routes agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .contract import Contract, ContractError


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
