"""An assembled `.s` file (isa.asm.sections.AsmObject) -> a relocatable AMDGPU object, as `llvm-mc -filetype=obj`
writes it, and -> a loadable code object through the project's linker (what `ld.lld -shared` makes of it).

Three things are computed here rather than in the front end, because they are code-object knowledge:
- each `.amdhsa_kernel` block's 64-byte descriptor, from its `.amdhsa_*` values through descriptor.py
  (names and defaults: AMDGPUUsage "AMDHSA Kernel Assembler Directives"; the values a directive may not
  take on a target are refused as llvm-mc refuses them);
- the NT_AMDGPU_METADATA note from the `.amdgpu_metadata` YAML (LLVM's msgpack::Document::fromYAML:
  integers, booleans, floats and strings by their spelling), with a sidecar contract merged in;
- the ELF header's e_flags and ABI version from `.amdgcn_target` and `.amdhsa_code_object_version`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from jitgemm.isa.asm.macros import AsmFileError, Loc
from jitgemm.isa.asm.sections import AsmObject, KernelBlock, Relocation

from . import elf_format as E
from .description import KernelDescription
from .descriptor import ENTRY_OFFSET_FIELD, compute_descriptor
from .errors import CodeObjectError
from .linker import link
from .metadata import CONTRACT_KEY, metadata_note
from .targets import Target, e_flags, target

DEFAULT_CODE_OBJECT_VERSION = 6  # llvm-mc 22's default for --amdhsa-code-object-version (checked by the tests)

# .amdhsa_* directives of code object v5/v6 for GFX9 (AMDGPUUsage "AMDHSA Kernel Assembler Directives"):
# name -> (KernelDescription field or a special, bits the value must fit in).
_FIELDS: dict[str, tuple[str, int]] = {
    "group_segment_fixed_size": ("group_segment_size", 32),
    "private_segment_fixed_size": ("private_segment_size", 32),
    "kernarg_size": ("@kernarg_size", 32),
    "user_sgpr_count": ("user_sgpr_count", 5),
    "user_sgpr_private_segment_buffer": ("user_sgpr_private_segment_buffer", 1),
    "user_sgpr_dispatch_ptr": ("user_sgpr_dispatch_ptr", 1),
    "user_sgpr_queue_ptr": ("user_sgpr_queue_ptr", 1),
    "user_sgpr_kernarg_segment_ptr": ("user_sgpr_kernarg_segment_ptr", 1),
    "user_sgpr_dispatch_id": ("user_sgpr_dispatch_id", 1),
    "user_sgpr_flat_scratch_init": ("user_sgpr_flat_scratch_init", 1),
    "user_sgpr_private_segment_size": ("user_sgpr_private_segment_size", 1),
    "user_sgpr_kernarg_preload_length": ("kernarg_preload_length", 7),
    "user_sgpr_kernarg_preload_offset": ("kernarg_preload_offset", 9),
    "uses_dynamic_stack": ("uses_dynamic_stack", 1),
    "enable_private_segment": ("enable_private_segment", 1),
    "system_sgpr_private_segment_wavefront_offset": ("enable_private_segment", 1),
    "system_sgpr_workgroup_id_x": ("@wg0", 1),
    "system_sgpr_workgroup_id_y": ("@wg1", 1),
    "system_sgpr_workgroup_id_z": ("@wg2", 1),
    "system_sgpr_workgroup_info": ("workgroup_info", 1),
    "system_vgpr_workitem_id": ("workitem_id", 2),
    "next_free_vgpr": ("@next_free_vgpr", 10),
    "next_free_sgpr": ("next_free_sgpr", 8),
    "accum_offset": ("@accum_offset", 9),
    "reserve_vcc": ("reserve_vcc", 1),
    "reserve_flat_scratch": ("reserve_flat_scratch", 1),
    "reserve_xnack_mask": ("reserve_xnack_mask", 1),
    "float_round_mode_32": ("float_round_mode_32", 2),
    "float_round_mode_16_64": ("float_round_mode_16_64", 2),
    "float_denorm_mode_32": ("float_denorm_mode_32", 2),
    "float_denorm_mode_16_64": ("float_denorm_mode_16_64", 2),
    "dx10_clamp": ("dx10_clamp", 1),
    "ieee_mode": ("ieee_mode", 1),
    "fp16_overflow": ("fp16_overflow", 1),
    "tg_split": ("tg_split", 1),
    "exception_fp_ieee_invalid_op": ("@exc0", 1),
    "exception_fp_denorm_src": ("@exc1", 1),
    "exception_fp_ieee_div_zero": ("@exc2", 1),
    "exception_fp_ieee_overflow": ("@exc3", 1),
    "exception_fp_ieee_underflow": ("@exc4", 1),
    "exception_fp_ieee_inexact": ("@exc5", 1),
    "exception_int_div_zero": ("@exc6", 1),
}
# Directives AMDGPUUsage lists for other generations: llvm-mc refuses them for GFX9 targets.
_OTHER_GENERATIONS = {
    "wavefront_size32": "GFX10+", "workgroup_processor_mode": "GFX10+", "memory_ordered": "GFX10+",
    "forward_progress": "GFX10+", "shared_vgpr_count": "GFX10-GFX11", "inst_pref_size": "GFX11+",
    "round_robin_scheduling": "GFX12+", "named_barrier_count": "GFX12.5+",
    "uses_cu_stores": "GFX12.5+", "dynamic_vgpr": "GFX12+",
}
_ARCHITECTED_ONLY = {"enable_private_segment"}
_NOT_ARCHITECTED = {"user_sgpr_private_segment_buffer", "user_sgpr_flat_scratch_init", "reserve_flat_scratch",
                    "system_sgpr_private_segment_wavefront_offset"}


@dataclass(frozen=True)
class TargetSettings:
    processor: Target
    xnack: str
    sramecc: str


def target_settings(obj: AsmObject, default: str = "gfx942") -> TargetSettings:
    """Processor and xnack/sramecc settings named by `.amdgcn_target` (default processor, features "any")."""
    text = obj.target or f"amdgcn-amd-amdhsa--{default}"
    prefix = "amdgcn-amd-amdhsa--"
    if not text.startswith(prefix):
        raise CodeObjectError(f"{obj.file}: .amdgcn_target {text!r} is not an amdgcn-amd-amdhsa target id "
                              f"(e.g. {prefix}gfx942:sramecc+:xnack-)")
    name, *features = text[len(prefix):].split(":")
    settings = {"xnack": "any", "sramecc": "any"}
    for feat in features:
        if feat[:-1] not in settings or feat[-1] not in "+-":
            raise CodeObjectError(f"{obj.file}: target feature {feat!r} in {text!r} is not xnack+/- or sramecc+/-")
        settings[feat[:-1]] = "on" if feat[-1] == "+" else "off"
    return TargetSettings(target(name), settings["xnack"], settings["sramecc"])


def _error(message: str, loc: Loc) -> AsmFileError:
    col = len(loc.text) - len(loc.text.lstrip()) + 1
    return AsmFileError(message, loc, col)


def kernel_descriptor(block: KernelBlock, settings: TargetSettings) -> bytes:
    """The 64 descriptor bytes llvm-mc assembles for the block (kernel_code_entry_byte_offset left 0: it is
    the R_AMDGPU_REL64 the writer adds)."""
    processor = settings.processor
    args: dict[str, Any] = {}
    special: dict[str, int] = {}
    for key, value in block.values.items():
        loc = block.places[key]
        if key not in _FIELDS:
            if key in _OTHER_GENERATIONS:
                raise _error(f".amdhsa_{key} directive requires {_OTHER_GENERATIONS[key]} "
                             f"(not {processor.name})", loc)
            close = sorted(_FIELDS, key=lambda k: -len(set(k.split("_")) & set(key.split("_"))))[:3]
            raise _error(f".amdhsa_{key} is not an .amdhsa_ directive (closest: "
                         f"{', '.join('.amdhsa_' + c for c in close)})", loc)
        if processor.architected_flat_scratch and key in _NOT_ARCHITECTED:
            raise _error(f".amdhsa_{key} directive is not supported with architected flat scratch "
                         f"({processor.name})", loc)
        if not processor.architected_flat_scratch and key in _ARCHITECTED_ONLY:
            raise _error(f".amdhsa_{key} directive requires architected flat scratch (gfx940+)", loc)
        if key == "reserve_xnack_mask" and value != (settings.xnack != "off"):   # llvm-mc: xnack on or any
            raise _error(".amdhsa_reserve_xnack_mask does not match target id (xnack is "
                         f"{settings.xnack} in the .amdgcn_target)", loc)
        dest, bits = _FIELDS[key]
        if not 0 <= value < (1 << bits):
            raise _error(f".amdhsa_{key} value {value} is out of range (0..{(1 << bits) - 1})", loc)
        if dest.startswith("@"):
            special[dest[1:]] = value
        else:
            args[dest] = bool(value) if bits == 1 and dest not in ("enable_private_segment",) else value
    for required in ("next_free_vgpr", "next_free_sgpr", "accum_offset"):
        if required not in special and required not in args:
            raise _error(f".amdhsa_{required} directive is required", block.loc)
    # LLVM's defaults for what the block leaves out (AMDGPU::getDefaultAmdhsaKernelDescriptor): no user SGPRs
    args.setdefault("user_sgpr_kernarg_segment_ptr", False)
    if "enable_private_segment" in args:
        args["enable_private_segment"] = bool(args["enable_private_segment"])
    nfv, accum = special["next_free_vgpr"], special["accum_offset"]
    # llvm-mc's .amdhsa_next_free_vgpr counts the unified file (AGPRs after accum_offset)
    args["next_free_vgpr"] = min(nfv, accum) if nfv > accum else nfv
    args["next_free_agpr"] = max(0, nfv - accum)
    args["accum_offset"] = accum
    args["workgroup_id"] = tuple(bool(special.get(f"wg{i}", 1 if i == 0 else 0)) for i in range(3))
    args["exceptions"] = sum(special.get(f"exc{i}", 0) << i for i in range(7))
    desc = KernelDescription(block.name, b"\0\0\0\0", **args)
    try:
        kd = compute_descriptor(desc, processor, settings.xnack, special.get("kernarg_size", 0))
    except CodeObjectError as exc:
        raise _error(str(exc), block.loc) from None
    return kd.to_bytes()


def yaml_metadata(obj: AsmObject, contracts: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The `.amdgpu_metadata` YAML as the map LLVM writes to the note (None when the file has no block);
    `contracts` (kernel name -> contract) are stored under jitgemm.contract for kernels that lack one."""
    if obj.metadata is None:
        if contracts:
            raise CodeObjectError(f"{obj.file}: a contract needs kernel metadata, but the file has no "
                                  ".amdgpu_metadata block")
        return None
    import yaml

    loc = obj.metadata_loc
    try:
        from jitgemm.util.safe_yaml import load_yaml

        value = _llvm_scalars(load_yaml(obj.metadata, loader=_loader()))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (loc.line if loc else 0) + (mark.line + 1 if mark else 1)
        where = Loc(obj.file, line, obj.metadata.split("\n")[mark.line] if mark and mark.line <
                    len(obj.metadata.split("\n")) else "")
        raise AsmFileError(f"invalid .amdgpu_metadata YAML: {getattr(exc, 'problem', exc)}", where,
                           (mark.column + 1) if mark else 1) from None
    if not isinstance(value, dict):
        raise _error(".amdgpu_metadata must be a YAML map (amdhsa.version, amdhsa.kernels, ...)", loc)
    problem = verify_metadata(value)
    if problem:
        raise _error(f"invalid HSA metadata: {problem}", loc)
    kernels = value.get("amdhsa.kernels", [])
    for name, contract in (contracts or {}).items():
        entry = next((k for k in kernels if isinstance(k, dict) and k.get(".name") == name), None)
        if entry is None:
            listed = ", ".join(str(k.get(".name")) for k in kernels if isinstance(k, dict))
            raise CodeObjectError(f"{obj.file}: contract for kernel {name!r}, which the metadata does not list "
                                  f"(kernels: {listed})")
        entry.setdefault(CONTRACT_KEY, contract)
    return value


# What LLVM's HSA metadata verifier (AMDGPUMetadataVerifier.cpp, code object v3+) requires, with the kind of value;
# other keys (e.g. jitgemm.contract) are allowed, as there.
_KERNEL_REQUIRED = {".name": str, ".symbol": str, ".kernarg_segment_size": int, ".group_segment_fixed_size": int,
                    ".private_segment_fixed_size": int, ".kernarg_segment_align": int, ".wavefront_size": int,
                    ".sgpr_count": int, ".vgpr_count": int, ".max_flat_workgroup_size": int}
_KERNEL_OPTIONAL = {".language": str, ".language_version": list, ".args": list, ".reqd_workgroup_size": list,
                    ".workgroup_size_hint": list, ".vec_type_hint": str, ".device_enqueue_symbol": str,
                    ".uses_dynamic_stack": bool, ".workgroup_processor_mode": bool, ".sgpr_spill_count": int,
                    ".vgpr_spill_count": int, ".agpr_count": int, ".uniform_work_group_size": int}
_ARG_REQUIRED = {".size": int, ".offset": int, ".value_kind": str}
_ARG_OPTIONAL = {".name": str, ".type_name": str, ".value_type": str, ".pointee_align": int, ".address_space": str,
                 ".access": str, ".actual_access": str, ".is_const": bool, ".is_restrict": bool,
                 ".is_volatile": bool, ".is_pipe": bool}


def _kind_ok(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def verify_metadata(value: Mapping[str, Any]) -> str | None:
    """Why the metadata map would be refused by LLVM's verifier (None when it is accepted)."""
    version = value.get("amdhsa.version")
    if not (isinstance(version, list) and len(version) == 2 and all(_kind_ok(v, int) for v in version)):
        return "amdhsa.version must be a list of two integers (e.g. [1, 2])"
    kernels = value.get("amdhsa.kernels", [])
    if not isinstance(kernels, list):
        return "amdhsa.kernels must be a list of kernel maps"
    for i, kernel in enumerate(kernels):
        if not isinstance(kernel, dict):
            return f"amdhsa.kernels[{i}] is not a map"
        where = f"amdhsa.kernels[{i}] ({kernel.get('.name', '?')})"
        for key in _KERNEL_REQUIRED:
            if key not in kernel:
                return f"{where} lacks {key} (required: {', '.join(_KERNEL_REQUIRED)})"
        for key, kind in {**_KERNEL_REQUIRED, **_KERNEL_OPTIONAL}.items():
            if key in kernel and not _kind_ok(kernel[key], kind):
                return f"{where} {key} must be a{'n' if kind is int else ''} {kind.__name__}"
        for j, arg in enumerate(kernel.get(".args", [])):
            if not isinstance(arg, dict):
                return f"{where} .args[{j}] is not a map"
            for key in _ARG_REQUIRED:
                if key not in arg:
                    return f"{where} .args[{j}] lacks {key} (required: {', '.join(_ARG_REQUIRED)})"
            for key, kind in {**_ARG_REQUIRED, **_ARG_OPTIONAL}.items():
                if key in arg and not _kind_ok(arg[key], kind):
                    return f"{where} .args[{j}] {key} must be a{'n' if kind is int else ''} {kind.__name__}"
    return None


def _loader():
    """A YAML loader that leaves every scalar a string (but `null`/`~`, kept as None for jitgemm's own
    contracts); `_llvm_scalars` then reads them as LLVM does."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    Loader.yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag.endswith(":null")]
                                      for k, v in base.yaml_implicit_resolvers.items()}
    return Loader


# LLVM's msgpack::DocNode::fromString (llvm/lib/BinaryFormat/MsgPackDocument.cpp, LLVM 22) tries, for an
# untagged scalar, uint64 then int64 (StringRef::getAsInteger with radix 0: 0x/0b/0o prefixes, a leading 0 is
# octal, no sign for the unsigned try, no '+'), then a bool (exactly "true"/"false"), then a double (strtod over
# the whole string: leading blanks allowed, trailing ones not, inf/nan, hex floats), else a string; quoting is
# not looked at. Checked against llvm-mc-22: True, yes, on, ~ stay strings; +5, 08, " 5" are floats.
_LLVM_INT = re.compile(r"(-?)(?:0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|0[oO]([0-7]+)|0([0-7]+)|(0|[1-9][0-9]*))\Z")


def llvm_scalar(text: str) -> Any:
    """One metadata scalar as LLVM's YAML-to-msgpack reading gives it (int, bool, float or str)."""
    m = _LLVM_INT.match(text)
    if m:
        digits, base = next((d, b) for d, b in zip(m.groups()[1:], (16, 2, 8, 8, 10), strict=True) if d is not None)
        value = int(digits, base) * (-1 if m.group(1) else 1)
        if -(1 << 63) <= value < (1 << 64):
            return value
    if text in ("true", "false"):
        return text == "true"
    body = text.lstrip()
    if body and body == text.rstrip().lstrip() and "_" not in body:
        try:
            return float(body)
        except ValueError:
            try:
                return float.fromhex(body) if re.match(r"[+-]?0[xX]", body) else text
            except ValueError:
                return text
    return text


def _llvm_scalars(value: Any) -> Any:
    if isinstance(value, dict):
        return {_llvm_scalars(k): _llvm_scalars(v) for k, v in value.items()}  # keys too: `{0: 1}`
    if isinstance(value, list):
        return [_llvm_scalars(v) for v in value]
    return llvm_scalar(value) if isinstance(value, str) else value


# -- ELF writing ----------------------------------------------------------------------------------------

_SECTION_TYPES = {"progbits": E.SHT_PROGBITS, "nobits": E.SHT_NOBITS, "note": E.SHT_NOTE,
                  "init_array": 14, "fini_array": 15, "preinit_array": 16}
_FLAG_BITS = {"a": E.SHF_ALLOC, "w": E.SHF_WRITE, "x": E.SHF_EXECINSTR, "M": E.SHF_MERGE, "S": E.SHF_STRINGS}
_BIND = {"local": E.STB_LOCAL, "global": E.STB_GLOBAL, "weak": E.STB_WEAK}
_TYPE = {"notype": E.STT_NOTYPE, "function": E.STT_FUNC, "object": E.STT_OBJECT}
_VIS = {"default": E.STV_DEFAULT, "protected": E.STV_PROTECTED, "hidden": E.STV_HIDDEN, "internal": 1}


def write_relocatable(obj: AsmObject, *, default_target: str = "gfx942",
                      contracts: Mapping[str, Any] | None = None) -> bytes:
    """The ET_REL object llvm-mc writes for the file: its sections, the kernel descriptors filled in, the
    metadata note, the symbol table and RELA sections."""
    settings = target_settings(obj, default_target)
    version = obj.code_object_version or DEFAULT_CODE_OBJECT_VERSION
    if version not in E.ABI_VERSION_OF_CODE_OBJECT:   # 4 (rocBLAS's wvSpltK kernels), 5 and 6, as llvm-mc-22
        raise CodeObjectError(f"{obj.file}: .amdhsa_code_object_version {version} is not supported (use 4, 5 "
                              f"or 6)")
    contents = {name: bytearray(sec.data) for name, sec in obj.sections.items()}
    relocs = list(obj.relocations)
    symbols = {name: replace(sym) for name, sym in obj.symbols.items()}  # the object stays as assembled
    for block in obj.kernels:
        kd = kernel_descriptor(block, settings)
        contents[block.section][block.offset:block.offset + 64] = kd
        code = symbols.get(block.name)
        if code is None or not code.defined:
            raise _error(f"kernel {block.name!r} of this .amdhsa_kernel block is not defined as a label",
                         block.loc)
        # AMDGPUTargetELFStreamer::EmitAmdhsaKernelDescriptor: the descriptor symbol copies the kernel symbol's
        # binding and visibility, then a kernel symbol of default visibility becomes protected.
        kd_sym = symbols[block.name + ".kd"]
        kd_sym.binding, kd_sym.visibility, kd_sym.size, kd_sym.type = code.binding, code.visibility, 64, "object"
        if code.visibility == "default":
            code.visibility = "protected"
        relocs.append(Relocation(block.section, block.offset + ENTRY_OFFSET_FIELD, "REL64", block.name,
                                 ENTRY_OFFSET_FIELD))
    meta = yaml_metadata(obj, contracts)

    # section table: null, the file's sections in order, .note (metadata), then .rela.*, .symtab, .strtab,
    # .shstrtab
    names = list(obj.sections)
    out_sections: list[dict] = []
    for name in names:
        sec = obj.sections[name]
        flags = 0
        for c in sec.flags:
            flags |= _FLAG_BITS.get(c, 0)
        kind = _SECTION_TYPES[sec.type]
        data = b"" if sec.type == "nobits" else bytes(contents[name])
        out_sections.append({"name": name, "type": kind, "flags": flags, "data": data, "size": sec.size,
                             "align": sec.align, "entsize": sec.entsize})
    if meta is not None:
        out_sections.append({"name": ".note", "type": E.SHT_NOTE, "flags": E.SHF_ALLOC,
                             "data": metadata_note(meta), "align": 4, "entsize": 0})
    index = {s["name"]: i + 1 for i, s in enumerate(out_sections)}

    # symbols: null, locals (section symbols for sections relocations use), globals
    strtab = bytearray(b"\0")
    str_at: dict[str, int] = {}

    def sname(n: str) -> int:
        if n not in str_at:
            str_at[n] = len(strtab)
            strtab.extend(n.encode() + b"\0")
        return str_at[n]

    def shndx(s) -> int:
        if s.absolute:
            return E.SHN_ABS
        if not s.defined or s.section is None:
            return E.SHN_UNDEF
        return index[s.section]

    section_syms = sorted({r.symbol for r in relocs if r.section_symbol}, key=lambda n: index[n])
    local = [s for s in symbols.values() if s.binding == "local" and s.defined]
    glob = [s for s in symbols.values() if not (s.binding == "local" and s.defined)]
    entries = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]
    sym_index: dict[tuple[str, bool], int] = {}
    for s in local:
        sym_index[(s.name, False)] = len(entries)
        entries.append(E.SYM.pack(sname(s.name), (E.STB_LOCAL << 4) | _TYPE[s.type], _VIS[s.visibility], shndx(s),
                                  s.value, s.size))
    for n in section_syms:
        sym_index[(n, True)] = len(entries)
        entries.append(E.SYM.pack(0, (E.STB_LOCAL << 4) | E.STT_SECTION, 0, index[n], 0, 0))
    first_global = len(entries)
    for s in glob:
        binding = "global" if s.binding == "local" else s.binding
        sym_index[(s.name, False)] = len(entries)
        entries.append(E.SYM.pack(sname(s.name), (_BIND[binding] << 4) | _TYPE[s.type], _VIS[s.visibility],
                                  shndx(s), s.value, s.size))
    rela_sections = []
    for name in names:
        mine = sorted((r for r in relocs if r.section == name), key=lambda r: r.offset)
        if not mine:
            continue
        data = bytearray()
        for r in mine:
            key = (r.symbol, r.section_symbol)
            if key not in sym_index:
                raise CodeObjectError(f"{obj.file}: relocation against unknown symbol {r.symbol!r}")
            data += E.RELA.pack(r.offset, (sym_index[key] << 32) | getattr(E, "R_AMDGPU_" + r.type), r.addend)
        rela_sections.append({"name": ".rela" + name, "type": E.SHT_RELA, "flags": E.SHF_INFO_LINK, "data": bytes(data),
                              "align": 8, "entsize": E.RELA.size, "info": index[name], "link": ".symtab"})
    out_sections += rela_sections
    out_sections.append({"name": ".symtab", "type": E.SHT_SYMTAB, "flags": 0, "data": b"".join(entries),
                         "align": 8, "entsize": E.SYM.size, "info": first_global, "link": ".strtab"})
    out_sections.append({"name": ".strtab", "type": E.SHT_STRTAB, "flags": 0, "data": bytes(strtab), "align": 1,
                         "entsize": 0})
    shstr = bytearray(b"\0")
    for s in out_sections:
        s["name_at"] = len(shstr)
        shstr += s["name"].encode() + b"\0"
    out_sections.append({"name": ".shstrtab", "type": E.SHT_STRTAB, "flags": 0, "data": b"", "align": 1,
                         "entsize": 0, "name_at": len(shstr)})
    shstr += b".shstrtab\0"
    out_sections[-1]["data"] = bytes(shstr)
    index = {s["name"]: i + 1 for i, s in enumerate(out_sections)}

    out = bytearray(E.EHDR.size)
    headers = []
    for s in out_sections:
        align = max(1, s["align"])
        if s["type"] != E.SHT_NOBITS:
            out += bytes(E.align_up(len(out), align) - len(out))
            offset = len(out)
            out += s["data"]
            size = len(s["data"])
        else:
            offset, size = len(out), s["size"]
        headers.append((s["name_at"], s["type"], s["flags"], 0, offset, size, index.get(s.get("link", ""), 0),
                        s.get("info", 0), align, s["entsize"]))
    out += bytes(E.align_up(len(out), 8) - len(out))
    shoff = len(out)
    out += bytes(E.SHDR.size)
    for h in headers:
        out += E.SHDR.pack(*h)
    flags = e_flags(settings.processor, settings.xnack, settings.sramecc)
    out[0:E.EHDR.size] = E.EHDR.pack(E.elf_ident(E.ABI_VERSION_OF_CODE_OBJECT[version]), E.ET_REL, E.EM_AMDGPU,
                                     E.EV_CURRENT, 0, 0, shoff, flags, E.EHDR.size, 0, 0, E.SHDR.size,
                                     len(out_sections) + 1, index[".shstrtab"])
    return bytes(out)


def code_object(obj: AsmObject, *, default_target: str = "gfx942",
                contracts: Mapping[str, Any] | None = None) -> bytes:
    """The loadable code object: the relocatable object linked by the project's linker (as ld.lld -shared)."""
    return link(write_relocatable(obj, default_target=default_target, contracts=contracts), [obj.file])


def assemble_source(text: str, *, file: str = "<input>", arch: str | None = None, relocatable: bool = False,
                    contracts: Mapping[str, Any] | None = None, spec=None) -> tuple[bytes, AsmObject]:
    """Assemble `.s` text to a code object (or, with `relocatable`, the ET_REL object) and its AsmObject.

    The spec is the one for `arch`, else for the processor the file names in `.amdgcn_target`, else gfx942.
    A file whose `.amdgcn_target` names another processor than `arch` is refused, as llvm-mc refuses a
    target directive that contradicts -mcpu.
    """
    from jitgemm.isa.asm.file import assemble_file, find_target

    from jitgemm import isa

    named = find_target(text)
    processor = named.split("--", 1)[1].split(":")[0] if named and "--" in named else None
    if arch and processor and processor != arch:
        raise CodeObjectError(f"{file}: .amdgcn_target names {processor}, but the target asked for is {arch}")
    name = arch or processor or "gfx942"
    obj = assemble_file(text, spec if spec is not None else isa.load_spec(name), file=file)
    if relocatable:
        return write_relocatable(obj, default_target=name, contracts=contracts), obj
    return code_object(obj, default_target=name, contracts=contracts), obj
