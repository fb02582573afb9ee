"""custom.config -> jitgemm's contract. Every GFA name is looked up in specs/gfa.yaml; a name, value or key the
table does not know fails closed (GfaError naming the key path and what is accepted).

Index convention (specs/gfa.yaml): Tensile's column-major D[I,J] = A[I,L] B[L,J] is jitgemm's row-major
problem transposed, so m = Free1, n = Free0, jitgemm's A is Tensile's B and the other way round, and jitgemm's
layout is (TransposeB ? T : N) + (TransposeA ? T : N).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from jitgemm.contract import Contract, ContractError

from .source import GfaError, GfaKernel, _bool, gfa_data

# Tensile size index (Assert* predicates) -> jitgemm dimension; stride index 1 is the leading dimension
SIZE_INDEX = {0: "n", 1: "m", 2: "batch", 3: "k"}
STRIDE_ASSERT = {"AssertStrideAEqual": "b", "AssertStrideBEqual": "a", "AssertStrideCEqual": "c",
                 "AssertStrideDEqual": "d"}
DIVISIBLE_ASSERT = {"AssertFree0ElementMultiple": "n", "AssertFree1ElementMultiple": "m",
                    "AssertSummationElementMultiple": "k"}
# custom.config keys that carry no contract meaning (provenance, tuning knobs of Tensile's own writer)
_IGNORED_KEYS = {"Source", "Version", "Features", "InternalSupportParams", "EnableMatrixInstruction", "MIWaveTile",
                 "MIWaveGroup", "WavefrontSize", "DepthU", "KernelLanguage", "PreloadKernArgs", "VectorWidthA",
                 "VectorWidthB", "GlobalReadVectorWidthA", "GlobalReadVectorWidthB", "LocalReadVectorWidth",
                 "LocalReadVectorWidthA", "LocalReadVectorWidthB", "TransposeLDS", "LdsBlockSizePerPadA",
                 "LdsBlockSizePerPadB", "LdsPadA", "LdsPadB", "StaggerU", "StaggerUStride", "WorkGroupMapping",
                 "StaggerUMapping", "1LDSBuffer", "WorkGroupMappingXCC", "WorkGroupMappingXCCGroup",
                 "GlobalSplitUAlgorithm", "GlobalReadPerMfma", "LocalWritePerMfma", "StoreRemapVectorWidth",
                 "StoreVectorWidth", "SourceSwap", "NumElementsPerBatchStore", "ClusterLocalRead", "NonTemporalA",
                 "NonTemporalB", "DirectToVgprA", "DirectToVgprB", "MatrixInstruction", "MIBlock", "CustomKernelName",
                 "ScheduleIterAlg", "PrefetchGlobalRead", "PrefetchLocalRead", "WorkGroup", "ThreadTile"}
_PROBLEM_KEYS = {"OperationType", "DataType", "DataTypeA", "DataTypeB", "DestDataType", "ComputeDataType",
                 "HighPrecisionAccumulate", "TransposeA", "TransposeB", "UseBeta", "Batched", "UseBias", "Activation",
                 "UseScaleAlphaVec", "SwizzleTensorA", "SwizzleTensorB", "MXBlockA", "MXBlockB", "StridedBatched",
                 "ActivationType", "UseScaleAB", "UseScaleCD", "UseInitialStridesAB", "UseInitialStridesCD",
                 "Sparse", "GroupedGemm", "SupportUserArgs", "ActivationComputeDataType", "MXScaleFormat"}


def _dtype(code: Any, where: str) -> str:
    table = gfa_data()["datatypes"]
    key = str(code).upper()
    if key not in table:
        raise GfaError(f"{where}: data type {code!r} is not mapped (accepted Tensile chars: "
                       f"{', '.join(sorted(table))})")
    return table[key]


def _operation(pt: Mapping[str, Any], where: str, has_scale: tuple[bool, bool]) -> tuple[dict, dict]:
    """(operation, features) from a ProblemType."""
    for key in pt:
        if key not in _PROBLEM_KEYS:
            raise GfaError(f"{where}.{key}: unknown ProblemType key (accepted: {', '.join(sorted(_PROBLEM_KEYS))})")
    if str(pt.get("OperationType", "GEMM")) != "GEMM":
        raise GfaError(f"{where}.OperationType: {pt['OperationType']!r}; accepted: GEMM")
    if "DataType" not in pt and not ("DataTypeA" in pt and "DataTypeB" in pt):
        raise GfaError(f"{where}.DataType: missing (a GEMM ProblemType names DataType, or DataTypeA and DataTypeB)")
    ta = _dtype(pt.get("DataTypeA", pt.get("DataType")), f"{where}.DataTypeA")
    tb = _dtype(pt.get("DataTypeB", pt.get("DataType")), f"{where}.DataTypeB")
    d = _dtype(pt.get("DestDataType", pt.get("DataType")), f"{where}.DestDataType")
    compute = _dtype(pt.get("ComputeDataType", "s"), f"{where}.ComputeDataType")
    for key, ok in (("UseBias", (0, False, "0")), ("UseScaleAlphaVec", (0, False, "0")),
                    ("Activation", (False, 0, "False", "false", "none"))):
        if key in pt and pt[key] not in ok:
            raise GfaError(f"{where}.{key}: {pt[key]!r} is not supported (accepted: {ok[0]!r}); bias, activation "
                           f"and alpha vectors are not mapped from GFA")
    for key in ("UseScaleAB", "UseScaleCD", "Sparse", "GroupedGemm", "UseInitialStridesAB", "UseInitialStridesCD"):
        if key in pt and pt[key] not in (0, False, "", "0", "False", "false"):
            raise GfaError(f"{where}.{key}: {pt[key]!r} is not supported (accepted: 0/false)")
    trans_a = _bool(pt.get("TransposeA", False), f"{where}.TransposeA")
    trans_b = _bool(pt.get("TransposeB", False), f"{where}.TransposeB")
    a, b = tb, ta     # jitgemm's A is Tensile's B
    acc = "int32" if compute == "int32" else "fp32"
    if compute not in ("fp32", "int32"):
        raise GfaError(f"{where}.ComputeDataType: {pt.get('ComputeDataType')!r}; accepted: s, I")
    op: dict[str, Any] = {"kind": "gemm", "a": a, "b": b, "d": d, "acc": acc,
                          "layout": ("T" if trans_b else "N") + ("T" if trans_a else "N")}
    mx = {"MXBlockA": "b", "MXBlockB": "a"}
    blocks = {side: int(pt.get(key, 0) or 0) for key, side in mx.items()}
    swizzled_b = _bool(pt.get("SwizzleTensorA", False), f"{where}.SwizzleTensorA")
    if _bool(pt.get("SwizzleTensorB", False), f"{where}.SwizzleTensorB"):
        raise GfaError(f"{where}.SwizzleTensorB: a swizzled Tensile B (jitgemm's A) has no jitgemm layout; "
                       f"accepted: false")
    for side in ("a", "b"):
        block = blocks[side]
        if block not in (0, 32):
            raise GfaError(f"{where}.MXBlock{'B' if side == 'a' else 'A'}: {block}; accepted: 0, 32 (OCP MX)")
        if block:
            # aiter's pre-shuffled weights come with shuffled scales (aiter gemm_a4w4 takes e8m0_shuffle'd scales)
            op[f"{side}_scale"] = "shuffled" if swizzled_b else "plain"
            op["scale_block"] = 32
        elif has_scale[0 if side == "a" else 1]:
            raise GfaError(f"{where}: a scale pointer for {side.upper()} but no MXBlock in the ProblemType")
    if swizzled_b:
        op["b_preshuffle"] = "16x16"
    use_beta = _bool(pt.get("UseBeta", True), f"{where}.UseBeta")
    return op, {"use_beta": use_beta, "batched": _bool(pt.get("Batched", False), f"{where}.Batched")}


def _args(kernel: GfaKernel, ck: Mapping[str, Any], op: dict, where: str) -> tuple[list[dict], int]:
    data = gfa_data()
    types, semantics, refused = data["types"], data["semantics"], data["refused_semantics"]
    from jitgemm import isa

    cu = isa.target_profile(kernel.target).compute_units
    args = ck.get("args")
    if not isinstance(args, list) or not args:
        raise GfaError(f"{where}.args: a list of {{type, semantic, padding}} mappings is required")
    out, offset = [], 0
    for i, arg in enumerate(args):
        at = f"{where}.args.{i}"
        if not isinstance(arg, Mapping):
            raise GfaError(f"{at}: expected a mapping {{type, semantic, padding}}")
        unknown = set(arg) - {"type", "semantic", "padding", "index"}
        if unknown:
            raise GfaError(f"{at}: unknown key(s) {sorted(unknown)} (accepted: type, semantic, padding, index)")
        kind, sem = arg.get("type"), arg.get("semantic")
        if kind not in types:
            raise GfaError(f"{at}.type: {kind!r}; accepted: {', '.join(types)}")
        size, jtype = types[kind]
        if sem in refused:
            raise GfaError(f"{at}.semantic: {sem} refused: {refused[sem]}")
        if sem not in semantics:
            raise GfaError(f"{at}.semantic: {sem!r} is not a known GFA argument semantic (accepted: "
                           f"{', '.join(sorted(semantics))}; refused with a reason: {', '.join(sorted(refused))})")
        padding = arg.get("padding", 0)
        if not isinstance(padding, int) or padding < 0:
            raise GfaError(f"{at}.padding: {padding!r}; accepted: a byte count >= 0")
        meaning = semantics[sem]
        entry: dict[str, Any] = {"name": f"{sem}" if sem != "Padding" else f"pad{i}", "role": meaning["role"],
                                 "offset": offset, "size": size, "type": jtype, "semantic": sem}
        if meaning["role"] in ("a", "b", "c", "d", "a_scale", "b_scale") and jtype != "ptr":
            raise GfaError(f"{at}: semantic {sem} is an address; type {kind} is not (accepted: address)")
        if jtype == "ptr" and meaning["role"] not in ("a", "b", "c", "d", "a_scale", "b_scale", "unused"):
            raise GfaError(f"{at}: semantic {sem} is a value; type address is not accepted")
        if "unit" in meaning:
            entry["unit"] = meaning["unit"]
        elif meaning["role"].startswith(("ld", "stride_")):
            entry["unit"] = "elements"
        if "divisor" in meaning:
            entry["divisor"] = meaning["divisor"]
        if meaning["role"] == "const":
            value = meaning.get("const")
            if meaning.get("value") == "cu":
                value = cu
            elif meaning.get("value") == "d_is_bf16":
                value = int(op["d"] == "bf16")
            entry["value"] = value
        if meaning["role"] in ("alpha", "beta") and jtype not in ("f32", "f64"):
            raise GfaError(f"{at}: {sem} of type {kind}; accepted: float32, float64")
        out.append(entry)
        offset += size + padding
    return out, offset


def _grid(kernel: GfaKernel, ck: Mapping[str, Any], where: str) -> list[str]:
    data = gfa_data()
    grid = ck.get("grid")
    mt = ck.get("macrotile")
    if not (isinstance(mt, list) and len(mt) == 3 and all(isinstance(v, int) and v > 0 for v in mt)):
        raise GfaError(f"{where}.macrotile: {mt!r}; accepted: [MT0, MT1, DepthU], positive integers")
    if not (isinstance(grid, list) and len(grid) == 3):
        raise GfaError(f"{where}.grid: {grid!r}; accepted: three grid enums, e.g. [TilesX, TilesY, One]")
    from jitgemm import isa

    cu = isa.target_profile(kernel.target).compute_units
    out = []
    for i, g in enumerate(grid):
        if g in data["refused_grid"]:
            raise GfaError(f"{where}.grid.{i}: {g} refused: {data['refused_grid'][g]}")
        if g not in data["grid"]:
            raise GfaError(f"{where}.grid.{i}: {g!r} is not a known grid enum (accepted: {', '.join(data['grid'])})")
        out.append(data["grid"][g].format(mt0=mt[0], mt1=mt[1], cu=cu))
    return out


def _legality(config: Mapping[str, Any], args: list[dict], grid: list[str], op: dict, flags: dict,
              where: str) -> dict:
    leg: dict[str, Any] = {"split_k": False, "divisible": {}, "min": {}, "max": {}}
    roles = {a["role"] for a in args}
    leg["batch"] = bool(flags["batched"] and "batch" in " ".join(grid) and
                        {"stride_a", "stride_b", "stride_d"} <= roles)
    for key, dim in DIVISIBLE_ASSERT.items():
        if key in config:
            value = config[key]
            if not isinstance(value, int) or value < 1:
                raise GfaError(f"{where}.{key}: {value!r}; accepted: a positive integer")
            leg["divisible"][dim] = value
    for key, dim in (("AssertFree0SizeEqual", "n"), ("AssertFree1SizeEqual", "m")):   # the older one-size spelling
        if key in config:
            if not isinstance(config[key], int) or config[key] < 1:
                raise GfaError(f"{where}.{key}: {config[key]!r}; accepted: a positive integer")
            leg["min"][dim] = leg["max"][dim] = config[key]
    pad = (config.get("CustomKernel") or {}).get("padProblemSizeToTile")
    if pad is not None:   # hipBLASLt rounds the sizes up to the tile: only whole tiles are safe without its padding
        if not (isinstance(pad, list) and len(pad) == 2):
            raise GfaError(f"{where}.CustomKernel.padProblemSizeToTile: {pad!r}; accepted: [bool, bool]")
        mt = config["CustomKernel"]["macrotile"]
        for flag, dim, tile in zip(pad, ("n", "m"), mt[:2], strict=True):
            if _bool(flag, f"{where}.CustomKernel.padProblemSizeToTile"):
                leg["divisible"][dim] = math.lcm(leg["divisible"].get(dim, 1), tile)
    for key, cmp in (("AssertSizeEqual", "eq"), ("AssertSizeGreaterThan", "gt"), ("AssertSizeLessThan", "lt"),
                     ("AssertSizeGreaterThanEqual", "ge"), ("AssertSizeLessThanEqual", "le")):
        items = config.get(key) or {}
        if not isinstance(items, Mapping):
            raise GfaError(f"{where}.{key}: {items!r}; accepted: a mapping {{size index: value}}")
        for index, value in items.items():
            dim = SIZE_INDEX.get(int(index)) if str(index).lstrip("-").isdigit() else None
            if dim is None or not isinstance(value, int):
                raise GfaError(f"{where}.{key}.{index}: accepted size indices 0 (Free0), 1 (Free1), 2 (batch), "
                               f"3 (Sum) with integer values")
            if dim == "batch":
                if (cmp, value) in (("eq", 1), ("lt", 2), ("le", 1)):
                    leg["batch"] = False
                    continue
                raise GfaError(f"{where}.{key}.{index}: a batch predicate other than batch == 1 is not supported")
            lo = {"eq": value, "gt": value + 1, "ge": value}.get(cmp)
            hi = {"eq": value, "lt": value - 1, "le": value}.get(cmp)
            if lo is not None:
                leg["min"][dim] = max(leg["min"].get(dim, 1), lo)
            if hi is not None:
                leg["max"][dim] = min(leg["max"].get(dim, hi), hi)
    for key, operand in STRIDE_ASSERT.items():
        items = config.get(key) or {}
        if not isinstance(items, Mapping):
            raise GfaError(f"{where}.{key}: {items!r}; accepted: a mapping {{stride index: value}}")
        for index, value in items.items():
            if int(index) == 0 and value == 1:
                continue   # the unit stride: jitgemm's storage always has it
            if int(index) == 1 and isinstance(value, int) and value >= 1:
                leg.setdefault("ld_equal", {})[operand] = value
                continue
            raise GfaError(f"{where}.{key}.{index}: {value!r}; accepted: {{0: 1}} (unit stride) or {{1: n}} "
                           f"(leading dimension n)")
    for arg in args:   # a value the kernel takes divided (SizeSumDiv2) must divide exactly
        if arg.get("divisor"):
            dim = arg["role"]
            leg["divisible"][dim] = math.lcm(leg["divisible"].get(dim, 1), arg["divisor"])
        if arg["type"] in ("u32", "i32") and arg["role"] in ("m", "n", "k"):
            cap = (1 << 31) - 1
            leg["max"][arg["role"]] = min(leg["max"].get(arg["role"], cap), cap)
    # an operand without a leading-dimension argument: the kernel cannot know a padded row length, so only packed
    # storage is right (Wave's demo kernel takes sizes only; with a padded B it reads the wrong rows)
    packed = [x for x in ("a", "b", "c", "d") if x in roles and f"ld{x}" not in roles]
    if packed:
        leg["packed"] = packed
    for dim in ("m", "n", "k"):
        if dim not in roles and not (dim in leg["min"] and leg["min"][dim] == leg["max"].get(dim)):
            raise GfaError(f"{where}.args: no argument gives {dim} (SizeFree1/SizeFree0/SizeSum) and no predicate "
                           f"fixes it; jitgemm's launch would not tell the kernel its size")
    return {k: v for k, v in leg.items() if v != {}}


def comparable(contract: Contract) -> dict:
    """A contract without what a GFA round trip renames (argument names, the GFA semantic, the source path, the
    gfa record itself), stride units made explicit: export -> import must give the same."""
    import copy

    data = copy.deepcopy(dict(contract.data))
    data.pop("gfa", None)
    data["identity"].pop("source", None)
    for arg in data["abi"]["args"]:
        arg.pop("name", None)
        arg.pop("semantic", None)
        if arg["role"].startswith(("ld", "stride_")):
            arg.setdefault("unit", data["abi"]["strides_in"])
        arg.setdefault("type", "i32")
    data["abi"]["strides_in"] = "elements"
    data["abi"]["args"].sort(key=lambda a: a["offset"])
    # defaults said or left out are the same contract
    data["operation"] = {k: v for k, v in data["operation"].items() if v not in (None, "none")}
    data["features"] = {k: v for k, v in data["features"].items() if v not in (False, ["none"])}
    return data


def to_contract(kernel: GfaKernel, errata: bool = True) -> Contract:
    """jitgemm's contract of a GFA kernel, checked against its code object's metadata; with `errata`, narrowed
    where jitgemm found the record promises what the binary does not do (specs/gfa.yaml `errata`, each with its
    evidence, listed in the contract's gfa.errata)."""
    config = kernel.config
    where = f"{kernel.path}: custom.config"
    for key in config:
        if key not in _IGNORED_KEYS and key not in ("ProblemType", "CustomKernel") and key not in DIVISIBLE_ASSERT \
                and key not in STRIDE_ASSERT and not key.startswith("AssertSize") and key != "GlobalSplitU" \
                and key not in ("AssertFree0SizeEqual", "AssertFree1SizeEqual"):
            raise GfaError(f"{where}.{key}: unknown custom.config key (accepted: ProblemType, CustomKernel, the "
                           f"Assert* predicates, GlobalSplitU and Tensile's tuning keys "
                           f"{', '.join(sorted(_IGNORED_KEYS))})")
    if int(config.get("GlobalSplitU", 1) or 1) != 1:
        raise GfaError(f"{where}.GlobalSplitU: {config['GlobalSplitU']}; accepted: 1 (jitgemm runs no GSU "
                       f"reduction kernel)")
    ck = config.get("CustomKernel")
    if not isinstance(ck, Mapping):
        raise GfaError(f"{where}.CustomKernel: missing (needed: args, macrotile, threads, grid); pass the Tensile "
                       f"test YAML that describes the kernel")
    for key in ck:
        if key not in ("name", "args", "macrotile", "threads", "grid", "workspaceType", "workspaceSizePerElemC",
                       "workspaceSizePerElemBias", "generated", "padProblemSizeToTile"):
            raise GfaError(f"{where}.CustomKernel.{key}: unknown key (accepted: name, args, macrotile, threads, grid, "
                           f"workspaceType, workspaceSizePerElemC, workspaceSizePerElemBias, generated, "
                           f"padProblemSizeToTile)")
    wtype = ck.get("workspaceType", "None")
    if wtype not in gfa_data()["workspace_types"]:
        raise GfaError(f"{where}.CustomKernel.workspaceType: {wtype!r}; accepted: "
                       f"{', '.join(gfa_data()['workspace_types'])}")
    if wtype != "None":
        raise GfaError(f"{where}.CustomKernel.workspaceType: {wtype} refused: it needs a workspace of "
                       f"{ck.get('workspaceSizePerElemC', '?')} bytes per C element and hipBLASLt's helper sequence "
                       f"(StreamK/GSU reduction), which jitgemm's launcher does not run")
    pt = config.get("ProblemType")
    if not isinstance(pt, Mapping):
        raise GfaError(f"{where}.ProblemType: missing; pass the Tensile test YAML that describes the kernel")
    sems = [a.get("semantic") for a in ck.get("args") or [] if isinstance(a, Mapping)]
    op, flags = _operation(pt, f"{where}.ProblemType", ("AddressMXScaleB" in sems, "AddressMXScaleA" in sems))
    args, end = _args(kernel, ck, op, f"{where}.CustomKernel")
    grid = _grid(kernel, ck, f"{where}.CustomKernel")
    threads = ck.get("threads")
    if not (isinstance(threads, list) and len(threads) == 3 and all(isinstance(v, int) and v > 0 for v in threads)):
        raise GfaError(f"{where}.CustomKernel.threads: {threads!r}; accepted: [x, y, z] positive integers")
    roles = {a["role"] for a in args}
    has_c = "c" in roles
    use_beta = flags["use_beta"] and "beta" in roles and has_c
    if has_c:
        op["c"] = op["d"]
    leg = _legality(config, args, grid, op, flags, where)
    meta = kernel.metadata()
    kernarg = int(meta.get(".kernarg_segment_size", end))
    mt = ck["macrotile"]
    mi = config.get("MatrixInstruction") or []
    code = kernel.code
    from jitgemm.codegen import codeobj

    text = codeobj.read(code).kernel(kernel.name).code
    data = {
        "contract_version": 1,
        "identity": {"generator": f"gfa:{kernel.origin}", "generator_version": str(config.get("Version", "")),
                     "kernel": kernel.name, "source": str(kernel.path), "target": kernel.target,
                     "code_sha256": hashlib.sha256(text).hexdigest()},
        "operation": op,
        "abi": {"kernarg_size": max(end, kernarg) if kernarg >= end else end, "strides_in": "elements",
                "args": [a for a in args if a["role"] != "unused" or True]},
        "launch": {"workgroup": list(threads), "grid": grid, "lds_bytes": 0},
        "legality": leg,
        "features": {"alpha": "alpha" in roles, "beta": use_beta, "c_input": use_beta, "c_alias_d": use_beta,
                     "bias": ["none"], "activation": ["none"], "output_cast": op["d"] not in (op["a"], "int32")},
        "tile": {"m": mt[1], "n": mt[0], "k": mt[2], "vgprs": int(meta.get(".vgpr_count", 0)),
                 "agprs": int(meta.get(".agpr_count", 0)), "sgprs": int(meta.get(".sgpr_count", 0)),
                 "lds": int(meta.get(".group_segment_fixed_size", 0))},
        "gfa": {"origin": kernel.origin, "macrotile": list(mt), "grid": list(ck["grid"]),
                "matrix_instruction": list(mi) if isinstance(mi, list) else [],
                "kernarg_end": end},
    }
    applied = []
    if errata:     # what jitgemm found a demo kernel's record claims and its binary does not do (specs/gfa.yaml)
        for fix in gfa_data().get("errata", {}).get(kernel.name, []):
            for key, value in (fix.get("legality") or {}).items():
                if isinstance(value, Mapping):
                    merged = dict(data["legality"].get(key, {}))
                    for dim, v in value.items():
                        merged[dim] = math.lcm(merged.get(dim, 1), v) if key == "divisible" else v
                    data["legality"][key] = merged
                else:
                    data["legality"][key] = value
            data["features"].update(fix.get("features") or {})
            applied.append(fix["why"])
        if applied:
            data["gfa"]["errata"] = applied
    extra = (config.get("Source") or {}).get("jitgemm") if kernel.origin == "jitgemm" else None
    if isinstance(extra, Mapping):     # what jitgemm's GFA writer kept beside the record (jitgemm/gfa/writer.py)
        for key, value in (extra.get("legality") or {}).items():
            data["legality"][key] = value
        data["features"].update(extra.get("features") or {})
        for arg in data["abi"]["args"]:
            role = (extra.get("roles") or {}).get(arg["offset"])
            if role is not None:
                arg["role"] = role
                arg["type"] = "ptr"
                arg["size"] = 8
        data["abi"]["args"] = [a for a in data["abi"]["args"]
                               if not any(b is not a and b["offset"] < a["offset"] < b["offset"] + b["size"]
                                          for b in data["abi"]["args"])]
        data["identity"].update(extra.get("identity") or {})
        if extra.get("tile"):
            data["tile"] = dict(extra["tile"])
    if kernarg < end:
        raise GfaError(f"{where}.CustomKernel.args: the arguments end at byte {end}, beyond the kernel's "
                       f".kernarg_segment_size {kernarg}")
    data["abi"]["kernarg_size"] = kernarg
    try:
        contract = Contract.load(data, f"{kernel.path} ({kernel.name}, GFA)")
        contract.check_metadata(meta)
    except ContractError as exc:
        raise GfaError(str(exc)) from None
    return contract
