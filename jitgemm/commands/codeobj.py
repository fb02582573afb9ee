"""`jitgemm readobj FILE.co`: what a code object holds (kernels, descriptor fields, arguments, metadata,
jitgemm contract), printed as YAML so it can be read by people and parsed by scripts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jitgemm.cli import read_input


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("readobj", help="show the kernels of an AMDGPU code object",
                              description="Print the kernels, kernel descriptor fields, arguments and metadata of "
                              "an AMDGPU code object (ours, LLVM/clang, Triton, or a relocatable object).")
    p.add_argument("file", metavar="FILE.co", help="code object (ELF) to read")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel")
    p.set_defaults(func=_readobj)


def _hexed(value: int) -> str:
    return f"{value:#x}"


def describe(co: Any, kernel: str | None = None) -> dict[str, Any]:
    """The printable summary of a read code object."""
    kernels = [co.kernel(kernel)] if kernel else list(co.kernels)
    out: dict[str, Any] = {
        "type": co.elf_type,
        "target": co.target,
        "processor": co.processor or f"unknown (mach {co.mach:#x})",
        "xnack": co.xnack,
        "sramecc": co.sramecc,
        "e_flags": _hexed(co.e_flags),
        "code_object_version": co.code_object_version,
        "metadata_version": co.metadata.get("amdhsa.version"),
        "kernels": [],
    }
    for k in kernels:
        meta = {key: value for key, value in k.metadata.items() if key not in (".args", "jitgemm.contract")}
        entry: dict[str, Any] = {
            "name": k.name,
            "code_address": _hexed(k.code_address),
            "code_bytes": len(k.code),
            "descriptor_address": _hexed(k.descriptor_address),
            "descriptor": k.descriptor.fields(),
            "args": k.args,
            "metadata": meta,
        }
        if k.contract is not None:
            entry["contract"] = k.contract
        out["kernels"].append(entry)
    return out


def _readobj(args: argparse.Namespace) -> int:
    import yaml

    from jitgemm.codegen.codeobj import read

    data = read_input(args.file)
    from jitgemm.codegen.codeobj import CodeObjectError

    try:
        co = read(data)
    except CodeObjectError as exc:
        raise CodeObjectError(f"{args.file}: {exc}") from None
    yaml.safe_dump(describe(co, args.kernel), sys.stdout, sort_keys=False, default_flow_style=False, width=110)
    return 0
