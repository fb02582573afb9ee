"""Helpers shared by the code-object tests: driving the LLVM oracles (llvm-mc, ld.lld, llvm-readelf,
llvm-objdump) and llvmlite. No tests live here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from jitgemm.codegen.codeobj import KernelDescription
from jitgemm.codegen.codeobj.descriptor import accum_offset_of, total_vgprs
from jitgemm.codegen.codeobj.metadata import kernarg_layout

from tests.oracles import require_module, require_tool


class _LLVMYamlLoader(yaml.SafeLoader):
    """LLVM's msgpack-as-YAML spells types it cannot infer with tags (!nil, !str, !int, ...)."""


class _LLVMYamlDumper(yaml.SafeDumper):
    pass


_LLVMYamlLoader.add_constructor("!nil", lambda loader, node: None)
_LLVMYamlLoader.add_constructor("!str", lambda loader, node: loader.construct_scalar(node))
_LLVMYamlLoader.add_constructor("!int", lambda loader, node: int(loader.construct_scalar(node), 0))
_LLVMYamlLoader.add_constructor("!bool", lambda loader, node: loader.construct_scalar(node) == "true")
_LLVMYamlLoader.add_constructor("!float", lambda loader, node: float(loader.construct_scalar(node)))
_LLVMYamlDumper.add_representer(type(None), lambda dumper, value: dumper.represent_scalar("!nil", ""))


def llvm_yaml(value) -> str:
    return yaml.dump(value, Dumper=_LLVMYamlDumper, sort_keys=True)


def llvm_yaml_load(text: str):
    return yaml.load(text, Loader=_LLVMYamlLoader)  # noqa: S506 (a SafeLoader subclass)


EXCEPTION_DIRECTIVES = ("fp_ieee_invalid_op", "fp_denorm_src", "fp_ieee_div_zero", "fp_ieee_overflow",
                        "fp_ieee_underflow", "fp_ieee_inexact", "int_div_zero")


def run(args: list[str], cwd: Path | None = None, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, check=False)
    if proc.returncode:
        raise AssertionError(f"{' '.join(map(str, args))} failed:\n{proc.stderr.decode(errors='replace')}")
    return proc.stdout


def mattr(xnack: str, sramecc: str) -> list[str]:
    feats = [f"{'+' if v == 'on' else '-'}{n}" for n, v in (("xnack", xnack), ("sramecc", sramecc)) if v != "any"]
    return [f"-mattr={','.join(feats)}"] if feats else []


def assemble_bytes(source: str, mcpu: str = "gfx942") -> bytes:
    """Instruction bytes from llvm-mc's -show-encoding (the oracle, not our assembler)."""
    out = run([require_tool("llvm-mc"), "-arch=amdgcn", f"-mcpu={mcpu}", "-show-encoding"],
              stdin=source.encode()).decode()
    code = bytearray()
    for m in re.finditer(r"encoding: \[([^\]]*)\]", out):
        code += bytes(int(b, 16) for b in m.group(1).split(","))
    assert code, out
    return bytes(code)


def amdhsa_directives(desc: KernelDescription, processor: str = "gfx942") -> list[str]:
    """The `.amdhsa_kernel` block equivalent to `desc`, one directive per field (AMDGPUUsage "AMDHSA Kernel
    Assembler Directives"); llvm-mc then computes the descriptor on its own."""
    layout = kernarg_layout(desc)
    d = [
        f".amdhsa_group_segment_fixed_size {desc.group_segment_size}",
        f".amdhsa_private_segment_fixed_size {desc.private_segment_size}",
        f".amdhsa_kernarg_size {layout.size}",
        f".amdhsa_user_sgpr_dispatch_ptr {int(desc.user_sgpr_dispatch_ptr)}",
        f".amdhsa_user_sgpr_queue_ptr {int(desc.user_sgpr_queue_ptr)}",
        f".amdhsa_user_sgpr_kernarg_segment_ptr {int(desc.user_sgpr_kernarg_segment_ptr)}",
        f".amdhsa_user_sgpr_dispatch_id {int(desc.user_sgpr_dispatch_id)}",
        f".amdhsa_user_sgpr_private_segment_size {int(desc.user_sgpr_private_segment_size)}",
        f".amdhsa_uses_dynamic_stack {int(desc.uses_dynamic_stack)}",
        f".amdhsa_system_sgpr_workgroup_id_x {int(desc.workgroup_id[0])}",
        f".amdhsa_system_sgpr_workgroup_id_y {int(desc.workgroup_id[1])}",
        f".amdhsa_system_sgpr_workgroup_id_z {int(desc.workgroup_id[2])}",
        f".amdhsa_system_sgpr_workgroup_info {int(desc.workgroup_info)}",
        f".amdhsa_system_vgpr_workitem_id {desc.workitem_id}",
        f".amdhsa_next_free_vgpr {total_vgprs(desc)}",
        f".amdhsa_next_free_sgpr {desc.next_free_sgpr}",
        f".amdhsa_accum_offset {accum_offset_of(desc)}",
        f".amdhsa_reserve_vcc {int(desc.reserve_vcc)}",
        f".amdhsa_float_round_mode_32 {desc.float_round_mode_32}",
        f".amdhsa_float_round_mode_16_64 {desc.float_round_mode_16_64}",
        f".amdhsa_float_denorm_mode_32 {desc.float_denorm_mode_32}",
        f".amdhsa_float_denorm_mode_16_64 {desc.float_denorm_mode_16_64}",
        f".amdhsa_dx10_clamp {int(desc.dx10_clamp)}",
        f".amdhsa_ieee_mode {int(desc.ieee_mode)}",
        f".amdhsa_fp16_overflow {int(desc.fp16_overflow)}",
        f".amdhsa_tg_split {int(desc.tg_split)}",
    ]
    if desc.private_segment_size or desc.enable_private_segment is not None:
        on = desc.private_segment_size > 0 if desc.enable_private_segment is None else desc.enable_private_segment
        d.append(f".amdhsa_enable_private_segment {int(on)}")
    if desc.reserve_xnack_mask is not None:
        d.append(f".amdhsa_reserve_xnack_mask {int(desc.reserve_xnack_mask)}")
    if processor == "gfx90a":
        d.append(f".amdhsa_user_sgpr_private_segment_buffer {int(desc.user_sgpr_private_segment_buffer)}")
        d.append(f".amdhsa_user_sgpr_flat_scratch_init {int(desc.user_sgpr_flat_scratch_init)}")
        d.append(f".amdhsa_reserve_flat_scratch {int(desc.reserve_flat_scratch)}")
    if desc.kernarg_preload_length:
        d.append(f".amdhsa_user_sgpr_kernarg_preload_length {desc.kernarg_preload_length}")
        d.append(f".amdhsa_user_sgpr_kernarg_preload_offset {desc.kernarg_preload_offset}")
    if desc.user_sgpr_count is not None:
        d.append(f".amdhsa_user_sgpr_count {desc.user_sgpr_count}")
    for i, name in enumerate(EXCEPTION_DIRECTIVES):
        d.append(f".amdhsa_exception_{name} {(desc.exceptions >> i) & 1}")
    return d


def llvm_source(kernels: list[KernelDescription], metadata: dict | None = None, target_id: str | None = None,
                version: int = 5, processor: str = "gfx942") -> str:
    """Assembly for llvm-mc: every kernel's bytes as `.byte`, its `.amdhsa_kernel` block, and (when given)
    the metadata as an `.amdgpu_metadata` YAML document."""
    lines = [f".amdhsa_code_object_version {version}"]
    if target_id:
        lines.append(f'.amdgcn_target "{target_id}"')
    lines.append(".text")
    for k in kernels:
        lines += [f".globl {k.name}", ".p2align 8", f".type {k.name},@function", f".protected {k.name}",
                  f"{k.name}:", "  .byte " + ",".join(str(b) for b in k.code), f".size {k.name}, .-{k.name}"]
    lines.append(".rodata")
    for k in kernels:
        lines += [".p2align 6", f".protected {k.name}.kd", f".amdhsa_kernel {k.name}",
                  *("  " + x for x in amdhsa_directives(k, processor)), ".end_amdhsa_kernel"]
    if metadata is not None:
        lines += [".amdgpu_metadata", "---", llvm_yaml(metadata).rstrip(), "...",
                  ".end_amdgpu_metadata"]
    return "\n".join(lines) + "\n"


def llvm_code_object(tmp: Path, source: str, mcpu: str, xnack: str, sramecc: str, name: str = "llvm") -> Path:
    """llvm-mc -filetype=obj then ld.lld -shared: LLVM's way to the same code object."""
    asm = tmp / f"{name}.s"
    asm.write_text(source)
    obj = tmp / f"{name}.o"
    run([require_tool("llvm-mc"), "-triple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", *mattr(xnack, sramecc),
         "-filetype=obj", str(asm), "-o", str(obj)])
    co = tmp / f"{name}.co"
    run([require_tool("ld.lld"), "-shared", str(obj), "-o", str(co)])
    return co


_NON_ALLOC = (".comment", ".symtab", ".shstrtab", ".strtab", ".AMDGPU.gpr_maximums", ".AMDGPU.csdata")


def readelf_view(path: Path, options: tuple[str, ...] = ("-h", "-l", "-S", "--notes", "--dyn-syms")) -> str:
    """llvm-readelf's report with the lines that legitimately differ (non-allocated sections ld.lld adds,
    such as .comment naming the linker, and the section header table position) removed."""
    text = run([require_tool("llvm-readelf"), *options, str(path)]).decode()
    keep = []
    for line in text.splitlines():
        if any(f" {n} " in line for n in _NON_ALLOC) and "[" in line:
            continue
        if line.strip().startswith("None ") or "section headers" in line.lower() or \
                "Section header string table index" in line or "Start of section headers" in line:
            continue
        if path.name in line:
            continue
        keep.append(line)
    return "\n".join(keep)


def objdump_instructions(path: Path) -> list[str]:
    text = run([require_tool("llvm-objdump"), "-d", "--no-show-raw-insn", "-j", ".text", str(path)]).decode()
    return [line.split("//")[0].strip() for line in text.splitlines() if line.startswith("\t")]


def readelf_metadata(path: Path) -> dict:
    """The metadata note as llvm-readelf decodes it (YAML)."""
    text = run([require_tool("llvm-readelf"), "--notes", str(path)]).decode()
    start = text.index("---")
    end = text.index("\n...", start)
    return llvm_yaml_load(text[start:end])


def objdump_kernel_directives(path: Path) -> dict[str, dict[str, int]]:
    """llvm-objdump's disassembly of each kernel descriptor as `.amdhsa_*` directive values."""
    text = run([require_tool("llvm-objdump"), "-d", "-j", ".rodata", str(path)]).decode()
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"\.amdhsa_kernel (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        m = re.match(r"\.(amdhsa_\w+) (-?\d+)$", line)
        if m and current is not None:
            current[m.group(1)] = int(m.group(2))
    return out


def llvmlite_binding():
    llvmlite = require_module("llvmlite")  # noqa: F841
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def llvmlite_object(ir_text: str, features: str = "", cpu: str = "gfx942") -> bytes:
    """An ET_REL object from LLVM IR through llvmlite (never with module-level inline asm: it aborts)."""
    llvm = llvmlite_binding()
    target = llvm.Target.from_triple("amdgcn-amd-amdhsa")
    machine = target.create_target_machine(cpu=cpu, features=features, opt=2, reloc="pic", codemodel="default")
    module = llvm.parse_assembly(ir_text)
    module.verify()
    return machine.emit_object(module)
