"""`jitgemm readobj FILE.co`: what a code object holds (kernels, descriptor fields, arguments, metadata,
jitgemm contract), printed as YAML so it can be read by people and parsed by scripts.

`jitgemm contract init FILE.co [--kernel NAME]`: a starting contract for a kernel someone else wrote, from its
metadata: the explicit arguments with offsets, sizes and types, roles guessed from their names (pads and
arguments without a recognised name are left out: the launch zeroes every byte no listed argument covers),
the workgroup size; what metadata cannot say (dtypes, layout, grid, legality) is marked `# EDIT`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jitgemm.cli import CliError, read_input


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("readobj", help="show the kernels of an AMDGPU code object",
                              description="Print the kernels, kernel descriptor fields, arguments and metadata of "
                              "an AMDGPU code object (ours, LLVM/clang, Triton, or a relocatable object).")
    p.add_argument("file", metavar="FILE.co", help="code object (ELF) to read")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel")
    p.set_defaults(func=_readobj)

    c = subparsers.add_parser("contract", help="kernel contracts (init: a starting contract from a code object)")
    csub = c.add_subparsers(dest="contract_command", required=True)
    i = csub.add_parser("init", help="write a starting contract for a kernel from its metadata",
                        description="Print a starting jitgemm contract (YAML) for one kernel of a code object, "
                        "from its AMDGPU metadata; edit the lines marked # EDIT.")
    i.add_argument("file", metavar="FILE.co", help="code object (ELF)")
    i.add_argument("--kernel", metavar="NAME", help="the kernel (default: the only one)")
    i.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    i.set_defaults(func=_contract_init)


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


# argument names (lower case, without ptr_/p_ prefixes and _ptr suffixes) -> contract roles
_ROLE_NAMES = {"a": "a", "b": "b", "c": "c", "d": "d", "out": "d", "bias": "bias", "m": "m", "n": "n", "k": "k",
               "batch": "batch", "lda": "lda", "ldb": "ldb", "ldc": "ldc", "ldd": "ldd", "alpha": "alpha",
               "beta": "beta", "stride_a": "stride_a", "stride_b": "stride_b", "stride_c": "stride_c",
               "stride_d": "stride_d"}


def _role_of(name: str) -> str | None:
    key = name.lower()
    for prefix in ("ptr_", "p_"):
        key = key.removeprefix(prefix)
    key = key.removesuffix("_ptr")
    return _ROLE_NAMES.get(key)


def contract_skeleton(kernel: Any, target: str | None) -> str:
    """The text of a starting contract for `kernel` (a read code object's kernel)."""
    explicit = [a for a in kernel.args if not str(a.get(".value_kind", "")).startswith("hidden_")]
    end = max((int(a.get(".offset", 0)) + int(a.get(".size", 0)) for a in explicit), default=0)
    lines = []
    roles = set()
    for index, a in enumerate(explicit):
        name = str(a.get(".name") or f"arg{index}")
        offset, size, kind = int(a.get(".offset", 0)), int(a.get(".size", 0)), a.get(".value_kind")
        role = _role_of(name)
        if role is None:
            lines.append(f"      # {name}: offset {offset}, size {size}, {kind}: not listed (a pad or unknown "
                         "role; its bytes are zero)")
            continue
        roles.add(role)
        typ = "ptr" if kind == "global_buffer" else "f32" if role in ("alpha", "beta") and size == 4 else \
            "i64" if size == 8 else "i32"
        lines.append(f"      - {{name: {name}, role: {role}, offset: {offset}, size: {size}, type: {typ}}}")
    missing = [r for r in ("a", "b", "d", "m", "n", "k") if r not in roles]
    note = f"   # EDIT: give roles {', '.join(missing)} (required)" if missing else ""
    reqd = kernel.metadata.get(".reqd_workgroup_size")
    wg = list(reqd) if reqd else [int(kernel.metadata.get(".max_flat_workgroup_size", 256) or 256), 1, 1]
    tgt = (target or "gfx942").split("--")[-1]
    return f"""# starting contract for {kernel.name}, written by `jitgemm contract init` from the code object's metadata
contract_version: 1
identity:
  generator: prebuilt
  generator_version: ""
  kernel: {kernel.name}
  target: {tgt}
operation:                 # EDIT: what the kernel computes
  kind: gemm
  a: bf16
  b: bf16
  c: null
  d: bf16
  acc: fp32
  layout: NN
abi:
  kernarg_size: {end}
  strides_in: elements     # EDIT: or bytes, if ld*/stride_* arguments count bytes
  args:{note}
{chr(10).join(lines)}
launch:
  workgroup: {wg}
  grid: ["1", "1", "1"]    # EDIT: workgroups in x, y, z as formulas over m, n, k, batch (e.g. ceil(n/128))
  lds_bytes: 0
legality: {{}}             # EDIT: divisible/min/max sizes, ld_multiple, align_bytes, packed
features: {{alpha: {str("alpha" in roles).lower()}, beta: {str("beta" in roles).lower()}}}
"""


def _contract_init(args: argparse.Namespace) -> int:
    from jitgemm.codegen.codeobj import CodeObjectError, read

    data = read_input(args.file)
    try:
        co = read(data)
        if args.kernel is None and len(co.kernels) != 1:
            raise CliError(f"{args.file} has {len(co.kernels)} kernels; name one with --kernel: "
                           f"{', '.join(k.name for k in co.kernels)}")
        kernel = co.kernel(args.kernel) if args.kernel else co.kernels[0]
    except CodeObjectError as exc:
        raise CodeObjectError(f"{args.file}: {exc}") from None
    text = contract_skeleton(kernel, co.target)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)
    return 0
