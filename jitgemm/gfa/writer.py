"""Any kernel jitgemm holds -> a hipBLASLt GFA kernel: a `.s` whose `.amdgpu_metadata` carries a complete
`custom.config` (and the kernel's own AMDGPU metadata), plus its origin `manifest.yaml` entry.

The `.s` is made from the code object, not from a generator's text, so any kernel exports the same way (direct,
LLVM, Triton, admitted): every instruction is disassembled by jitgemm's disassembler and kept as text when jitgemm's
assembler gives its bytes back, else written as `.long` words with the text as a comment; the kernel descriptor
becomes the `.amdhsa_kernel` directives that reproduce it (checked by assembling it again). As hipBLASLt's
CustomKernels/README.md asks, there is no `.amdgcn_target` / `.amdhsa_code_object_version` line: the assembler's
flags (llvm-mc -mcpu, `jitgemm asm --arch`) give the target, and the manifest names it (Target.ISA).

What GFA cannot state (pointer alignment, leading-dimension multiples, features a kernel's arguments would
promise but it does not implement) goes to `Source.jitgemm` in the config, which jitgemm's reader applies and
hipBLASLt ignores; `Export.unenforced` lists those clauses, since hipBLASLt will not check them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from jitgemm.contract import Contract

from .source import GfaError, gfa_data

# jitgemm dtype -> Tensile type char (specs/gfa.yaml datatypes, inverted)
_TYPE_NAMES = {"ptr": "address", "u32": "uint32", "i32": "int32", "f32": "float32", "i64": "int64", "f64": "float64"}


@dataclass
class Export:
    """One exported kernel: `source` (the `.s` text), `config` (its custom.config), `manifest` (the entry for
    the origin's manifest.yaml under Kernels), `unenforced` (clauses hipBLASLt will not check)."""

    name: str
    target: str
    source: str
    config: dict
    manifest: dict
    unenforced: list[str] = field(default_factory=list)
    words: int = 0          # instructions written as .long (the disassembly did not assemble back)

    def manifest_file(self) -> str:
        """A complete manifest.yaml for this one kernel (MetaVersion 1, as the GFA origin folders hold)."""
        return yaml.safe_dump({"MetaVersion": 1, "Source": {"Origin": "jitgemm",
                                                            "Repository": "https://github.com/jitgemm/jitgemm"},
                               "Target": {"ISA": self.target}, "Kernels": {self.name: self.manifest}},
                              sort_keys=False)


def _semantic(arg: Mapping[str, Any], where: str) -> str:
    """The GFA semantic of a contract argument (specs/gfa.yaml semantics, inverted)."""
    role, unit, divisor = arg["role"], arg.get("unit", "elements"), arg.get("divisor")
    if arg.get("semantic"):
        return str(arg["semantic"])
    if role == "unused":
        return "Padding"
    if role == "const":
        if arg.get("value", 0) == 1:
            return "ConstantOne"
        raise GfaError(f"{where}: a constant {arg.get('value')!r}; GFA has a semantic for the constant 1 only")
    for name, meaning in gfa_data()["semantics"].items():
        if meaning["role"] != role or meaning["role"] == "const":
            continue
        if meaning.get("divisor") != divisor:
            continue
        if role.startswith(("ld", "stride_")) and meaning.get("unit", "elements") != unit:
            continue
        if name == "StrideCK":
            continue
        return name
    raise GfaError(f"{where}: role {role!r}{' in ' + unit if role.startswith(('ld', 'stride_')) else ''} has no GFA "
                   f"argument semantic (GFA takes: {', '.join(sorted(gfa_data()['semantics']))})")


def _grid_enum(formula: str, mt: tuple[int, int], where: str) -> str:
    from jitgemm import isa  # noqa: F401  (the table's {cu} is never exported: jitgemm kernels have tile grids)

    for name, text in gfa_data()["grid"].items():
        if "{cu}" in text or name in ("TilesXYBatchGSU", "TilesYGSU"):
            continue
        if text.format(mt0=mt[0], mt1=mt[1]).replace(" ", "") == formula.replace(" ", ""):
            return name
    raise GfaError(f"{where}: grid formula {formula!r} has no GFA grid enum (GFA grids: "
                   f"{', '.join(gfa_data()['grid'])} over the macrotile {list(mt)})")


def _tensile_type(name: str, where: str) -> str:
    inverse = {v: k for k, v in gfa_data()["datatypes"].items()}
    if name not in inverse:
        raise GfaError(f"{where}: dtype {name} has no Tensile data type")
    code = inverse[name]
    return {"S": "s", "H": "h", "B": "b"}.get(code, code)


def custom_config(contract: Contract) -> tuple[dict, list[str]]:
    """(custom.config, clauses GFA cannot state) for a contract."""
    d = contract.data
    where = f"{contract.source}"
    op, leg, feat, tile = d["operation"], d.get("legality", {}), d["features"], d.get("tile", {})
    unenforced: list[str] = []
    if op.get("scale_mode", "none") not in ("none",):
        raise GfaError(f"{where}: operation.scale_mode {op['scale_mode']}: GFA export maps MX block scales only")
    if feat.get("bias", ["none"]) != ["none"] or feat.get("activation", ["none"]) != ["none"]:
        raise GfaError(f"{where}: bias/activation epilogues are not exported to GFA yet")
    if d.get("workspace", {}).get("type", "none") != "none":
        raise GfaError(f"{where}: workspace {d['workspace']['type']}: not exported")
    pt: dict[str, Any] = {"OperationType": "GEMM"}
    ta, tb = _tensile_type(op["b"], where), _tensile_type(op["a"], where)   # Tensile's A is jitgemm's B
    if ta == tb:
        pt["DataType"] = ta
    else:
        pt["DataTypeA"], pt["DataTypeB"] = ta, tb
    pt["DestDataType"] = _tensile_type(op["d"], where)
    pt["ComputeDataType"] = "I" if op["acc"] == "int32" else "s"
    pt["HighPrecisionAccumulate"] = True
    pt["TransposeA"] = op["layout"][1] == "T"
    pt["TransposeB"] = op["layout"][0] == "T"
    pt["UseBeta"] = bool(feat.get("beta"))
    pt["Batched"] = True
    pt["UseBias"] = 0
    pt["Activation"] = False
    pt["UseScaleAlphaVec"] = 0
    for side, key in (("b", "MXBlockA"), ("a", "MXBlockB")):
        if op.get(f"{side}_scale", "none") != "none":
            pt[key] = op.get("scale_block", 32)
    pre = op.get("b_preshuffle", "none") != "none"
    if pre:
        pt["SwizzleTensorA"] = True
    for side in ("a", "b"):
        want = "shuffled" if pre else "plain"
        if op.get(f"{side}_scale", "none") not in ("none", want):
            raise GfaError(f"{where}: operation.{side}_scale {op[f'{side}_scale']} with b_preshuffle "
                           f"{op.get('b_preshuffle', 'none')}: GFA's ProblemType ties the scale layout to "
                           f"SwizzleTensorA (shuffled scales with pre-shuffled weights, plain otherwise)")
    args = sorted(contract.args, key=lambda a: a["offset"])
    idle_roles = ({"bias"} if feat.get("bias", ["none"]) == ["none"] else set()) | \
        ({"c"} if not feat.get("c_input") else set())
    kept_roles: dict[int, str] = {}
    out_args: list[dict] = []
    pos = 0
    for i, arg in enumerate(args):
        at = f"{where}: abi.args.{i} ({arg['name']})"
        if arg["offset"] > pos:     # a gap: padding of the previous argument, or leading padding words
            gap = arg["offset"] - pos
            if out_args:
                out_args[-1]["padding"] = out_args[-1].get("padding", 0) + gap
            else:
                if gap % 4:
                    raise GfaError(f"{at}: a leading gap of {gap} bytes is not whole padding words")
                out_args.extend({"type": "uint32", "semantic": "Padding"} for _ in range(gap // 4))
        kind = arg.get("type", "ptr" if arg["role"] in ("a", "b", "c", "d", "a_scale", "b_scale") else "i32")
        idle = arg["role"] in idle_roles
        sem = "Padding" if idle else _semantic(arg, at)
        entry = {"type": _TYPE_NAMES[kind], "semantic": sem}
        if idle:     # a pointer the kernel is not asked to use: hipBLASLt passes 0 there, as jitgemm passes null
            kept_roles[arg["offset"]] = arg["role"]
        if sem == "Padding" and kind in ("ptr", "i64", "f64"):
            entry = {"type": "uint32", "semantic": "Padding", "padding": 4}
        out_args.append(entry)
        pos = arg["offset"] + arg["size"]
    end = d["abi"]["kernarg_size"]
    if end > pos and out_args:
        out_args[-1]["padding"] = out_args[-1].get("padding", 0) + end - pos
    mt = (int(tile.get("n", 0)), int(tile.get("m", 0)))
    if not all(mt) or not tile.get("k"):
        raise GfaError(f"{where}: tile.m/n/k are needed for GFA's macrotile")
    grid = [_grid_enum(f, mt, f"{where}: launch.grid.{i}") for i, f in enumerate(d["launch"]["grid"])]
    ck = {"name": contract.kernel, "args": out_args, "macrotile": [mt[0], mt[1], int(tile["k"])],
          "threads": list(d["launch"]["workgroup"]), "grid": grid}
    config: dict[str, Any] = {
        "Source": {"Origin": "jitgemm", "Repository": "https://github.com/jitgemm/jitgemm"},
        "Version": "1.0.0",
        "Features": {"SupportsUserArgs": False, "SupportsBias": False, "SupportsActivation": False,
                     "SupportsScaleAlpha": False, "SupportsGSU": False},
        "InternalSupportParams": {"KernArgsVersion": 0},
        "ProblemType": pt,
        "CustomKernel": ck,
    }
    m = re.search(r"(\d+)X(\d+)X(\d+)", str(tile.get("mfma", "")).upper())
    config["MatrixInstruction"] = [int(m.group(1)), int(m.group(2)), int(m.group(3)), 1] if m else [0, 0, 0, 0]
    if m:
        config["EnableMatrixInstruction"] = True
    config["WavefrontSize"] = 64
    names = {"n": "AssertFree0ElementMultiple", "m": "AssertFree1ElementMultiple",
             "k": "AssertSummationElementMultiple"}
    for dim, value in leg.get("divisible", {}).items():
        if value > 1:
            config[names[dim]] = value
    index = {"n": 0, "m": 1, "k": 3}
    cap = (1 << 31) - 1
    for dim, value in leg.get("min", {}).items():
        if value > 1:
            config.setdefault("AssertSizeGreaterThan", {})[index[dim]] = value - 1
    for dim, value in leg.get("max", {}).items():
        if value < cap:
            config.setdefault("AssertSizeLessThan", {})[index[dim]] = value + 1
    if not leg.get("batch"):
        config.setdefault("AssertSizeEqual", {})[2] = 1
    stride_keys = {"b": "AssertStrideAEqual", "a": "AssertStrideBEqual", "c": "AssertStrideCEqual",
                   "d": "AssertStrideDEqual"}
    for operand, value in leg.get("ld_equal", {}).items():
        config.setdefault(stride_keys[operand], {})[1] = value
    extra: dict[str, Any] = {}
    for key in ("align_bytes", "ld_multiple", "packed"):
        if leg.get(key):
            extra.setdefault("legality", {})[key] = leg[key]
            unenforced.append(f"legality.{key}: {leg[key]}")
    roles = {a["role"] for a in args}
    for key in ("alpha", "beta", "c_input", "output_cast", "c_alias_d"):
        implied = {"alpha": "alpha" in roles, "beta": bool(feat.get("beta")), "c_input": bool(feat.get("beta")),
                   "output_cast": op["d"] not in (op["a"], "int32"),
                   "c_alias_d": bool(feat.get("beta"))}[key]
        if bool(feat.get(key, False)) != implied:
            extra.setdefault("features", {})[key] = bool(feat.get(key, False))
            if key in ("alpha",):
                unenforced.append(f"features.{key}: {feat.get(key, False)} (the kernel has an Alpha argument but "
                                  f"does not scale by it)")
    if kept_roles:
        extra["roles"] = kept_roles
    extra["identity"] = {k: d["identity"][k] for k in ("generator", "generator_version") if k in d["identity"]}
    if tile:
        extra["tile"] = dict(tile)
    config["Source"]["jitgemm"] = extra
    return config, unenforced


# -- the .s ----------------------------------------------------------------------------------------------------
def _descriptor_directives(kd, target_xnack: str) -> tuple[list[str], list[tuple[str, list[int]]]]:
    """`.amdhsa_*` lines for a decoded descriptor, and the register-count directives to search over (their
    granulated encodings lose the exact counts)."""
    f = kd.fields()
    for name in ("priority", "debug_mode", "bulky", "cdbg_user", "priv", "enable_trap_handler",
                 "enable_exception_address_watch", "enable_exception_memory", "enable_wavefront_size32"):
        if f.get(name):
            raise GfaError(f"kernel descriptor field {name}={f[name]} has no .amdhsa_ directive (llvm-mc sets 0)")
    lines = [f".amdhsa_group_segment_fixed_size {kd.group_segment_fixed_size}",
             f".amdhsa_private_segment_fixed_size {kd.private_segment_fixed_size}",
             f".amdhsa_kernarg_size {kd.kernarg_size}",
             f".amdhsa_user_sgpr_count {kd.user_sgpr_count}"]
    for name in ("private_segment_buffer", "dispatch_ptr", "queue_ptr", "kernarg_segment_ptr", "dispatch_id",
                 "flat_scratch_init", "private_segment_size"):
        if f[f"enable_sgpr_{name}"]:
            lines.append(f".amdhsa_user_sgpr_{name} 1")
    if kd.kernarg_preload_spec_length:
        lines += [f".amdhsa_user_sgpr_kernarg_preload_length {kd.kernarg_preload_spec_length}",
                  f".amdhsa_user_sgpr_kernarg_preload_offset {kd.kernarg_preload_spec_offset}"]
    lines += [f".amdhsa_uses_dynamic_stack {kd.uses_dynamic_stack}",
              f".amdhsa_enable_private_segment {kd.enable_private_segment}",
              f".amdhsa_system_sgpr_workgroup_id_x {kd.enable_sgpr_workgroup_id_x}",
              f".amdhsa_system_sgpr_workgroup_id_y {kd.enable_sgpr_workgroup_id_y}",
              f".amdhsa_system_sgpr_workgroup_id_z {kd.enable_sgpr_workgroup_id_z}",
              f".amdhsa_system_sgpr_workgroup_info {kd.enable_sgpr_workgroup_info}",
              f".amdhsa_system_vgpr_workitem_id {kd.enable_vgpr_workitem_id}",
              f".amdhsa_accum_offset {kd.accum_offset_registers}",
              ".amdhsa_reserve_vcc 0",
              f".amdhsa_reserve_xnack_mask {0 if target_xnack == 'off' else 1}",   # llvm-mc: xnack on or any
              f".amdhsa_float_round_mode_32 {kd.float_round_mode_32}",
              f".amdhsa_float_round_mode_16_64 {kd.float_round_mode_16_64}",
              f".amdhsa_float_denorm_mode_32 {kd.float_denorm_mode_32}",
              f".amdhsa_float_denorm_mode_16_64 {kd.float_denorm_mode_16_64}",
              f".amdhsa_dx10_clamp {kd.enable_dx10_clamp}", f".amdhsa_ieee_mode {kd.enable_ieee_mode}",
              f".amdhsa_fp16_overflow {kd.fp16_ovfl}", f".amdhsa_tg_split {kd.tg_split}"]
    for name, directive in (("ieee_754_fp_invalid_operation", "fp_ieee_invalid_op"),
                            ("fp_denormal_source", "fp_denorm_src"),
                            ("ieee_754_fp_division_by_zero", "fp_ieee_div_zero"),
                            ("ieee_754_fp_overflow", "fp_ieee_overflow"),
                            ("ieee_754_fp_underflow", "fp_ieee_underflow"),
                            ("ieee_754_fp_inexact", "fp_ieee_inexact"), ("int_divide_by_zero", "int_div_zero")):
        if f[f"enable_exception_{name}"]:
            lines.append(f".amdhsa_exception_{directive} 1")
    vg = (kd.granulated_workitem_vgpr_count + 1) * 8
    sg = (kd.granulated_wavefront_sgpr_count + 1) * 8
    return lines, [("next_free_vgpr", list(range(vg, max(0, vg - 8), -1))),
                   ("next_free_sgpr", list(range(min(sg, 102), max(-1, sg - 17), -1)))]


class _Dumper(yaml.SafeDumper):
    """YAML that both PyYAML (Tensile reads custom.config with it) and llvm-mc read the same: strings holding
    ':', '#' or '/' are double-quoted (llvm-mc's lexer takes `//` outside a string literal for a comment, and
    LLVM's YAML parser stops at `https:` in a plain scalar)."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = '"' if any(c in value for c in ":#{}[],&*!|>%@`'\"/;") or value != value.strip() else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _yaml(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120)


def _text(code: bytes, target: str, kernel: str) -> tuple[list[str], int]:
    """The kernel's instructions as assembly lines (branch targets as labels), and how many became .long."""
    from jitgemm import isa
    from jitgemm.isa.asm.encoder import encode_instruction
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.instruction import Label

    spec = isa.load_spec(target)
    decoded = decode(code, spec)
    for d in decoded:   # PC-relative data (s_getpc_b64 + rel32): the export keeps only code and descriptor
        if d.instruction is not None and d.instruction.name.lower().startswith("s_getpc"):
            raise GfaError(f"kernel {kernel}: {d.instruction.asm_text()} at 0x{d.offset:x} reads data beside its "
                           f"code (PC-relative), which a GFA .s made from the code object does not carry")
    labels = {d.target for d in decoded if d.target is not None}
    lines, words = [], 0
    for d in decoded:
        if d.offset in labels:
            lines.append(f".L{kernel}_{d.offset:x}:")
        inst = d.instruction
        text = None
        if inst is not None:
            try:
                if d.target is not None and d.target_operand is not None:
                    ops = list(inst.operands)
                    ops[d.target_operand] = Label(f".L{kernel}_{d.target:x}")
                    inst = type(inst)(inst.name, tuple(ops), inst.modifiers)
                    sym = {f".L{kernel}_{d.target:x}": d.target}
                    again = encode_instruction(inst, spec, d.offset, sym)
                else:
                    again = encode_instruction(inst, spec, d.offset)
                if again == d.raw:
                    text = inst.asm_text()
            except Exception:   # noqa: BLE001  (any text the assembler refuses is written as words)
                text = None
        if text is None:
            words += 1
            shown = d.instruction.asm_text() if d.instruction is not None else (d.warning or "")
            lines.append("  .long " + ", ".join(f"0x{w:08x}" for w in d.words) + f"   // {shown}")
        else:
            lines.append(f"  {text}")
    return lines, words


def export(code_object: bytes, kernel: str | None = None, contract: Contract | None = None) -> Export:
    """A GFA `.s` + custom.config + manifest entry for one kernel of a code object with a jitgemm contract
    (its embedded one when `contract` is None). GfaError names what GFA cannot express."""
    from jitgemm.codegen import codeobj
    from jitgemm.codegen.codeobj.relocatable import assemble_source

    obj = codeobj.read(code_object)
    k = obj.kernel(kernel) if kernel else obj.kernels[0]
    if contract is None:
        if k.contract is None:
            raise GfaError(f"kernel {k.name}: no jitgemm contract embedded; pass contract=")
        contract = Contract.load(k.contract, f"{k.name} (embedded contract)")
    target = obj.processor or contract.target
    config, unenforced = custom_config(contract)
    meta = {key: value for key, value in k.metadata.items() if key != "jitgemm.contract"}
    kd = k.descriptor
    fixed, search = _descriptor_directives(kd, obj.xnack)
    body, words = _text(k.code, target, k.name)
    document = {"amdhsa.version": obj.metadata.get("amdhsa.version", [1, 2]), "amdhsa.kernels": [meta],
                "custom.config": config}
    if obj.metadata.get("amdhsa.target"):
        document["amdhsa.target"] = obj.metadata["amdhsa.target"]

    def source(vgprs: int, sgprs: int) -> str:
        directives = fixed + [f".amdhsa_next_free_vgpr {vgprs}", f".amdhsa_next_free_sgpr {sgprs}"]
        return "\n".join([
            f"// {k.name}: exported by jitgemm as a hipBLASLt GFA kernel (custom.config in .amdgpu_metadata).",
            f"// Assemble: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu={target} -filetype=obj; ld.lld -shared",
            ".text", f".globl {k.name}", ".p2align 8", f".type {k.name},@function", f"{k.name}:", *body,
            f".L{k.name}_end:", f".size {k.name}, .L{k.name}_end-{k.name}", "", ".rodata", ".p2align 6",
            f".amdhsa_kernel {k.name}", *(f"  {line}" for line in directives), ".end_amdhsa_kernel", "",
            ".amdgpu_metadata", "---", _yaml(document).rstrip(), "...", ".end_amdgpu_metadata", ""])

    want = k.descriptor_bytes
    text = None
    for vg in search[0][1]:
        for sg in search[1][1]:
            candidate = source(vg, sg)
            got = codeobj.read(assemble_source(candidate, arch=target)[0]).kernel(k.name)
            if got.descriptor_bytes[:16] + got.descriptor_bytes[24:] == want[:16] + want[24:]:
                text = candidate
                break
        if text is not None:
            break
    if text is None:
        raise GfaError(f"kernel {k.name}: no .amdhsa_next_free_vgpr/sgpr reproduces its descriptor")
    ours = codeobj.read(assemble_source(text, arch=target)[0]).kernel(k.name)
    if ours.code != k.code:
        raise GfaError(f"kernel {k.name}: the exported .s does not assemble to the kernel's code")
    manifest = {"Version": config["Version"],
                "ContentHash": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
                "Features": dict(config["Features"])}
    return Export(k.name, target, text, config, manifest, unenforced, words)
