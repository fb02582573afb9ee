"""Hand-written test kernels: one `.amdhsa_kernel` skeleton around a body of instructions, and one way to turn
assembly text into a code object with the outside authorities (llvm-mc-22 + ld.lld-22), so the emulator's rule
tests, its image tests and the strict tests are run on objects nobody here produced.

The skeleton follows AMDGPUUsage ("Code Object V5 Metadata", "Kernel Descriptor"): kernarg pointer in s[0:1],
workgroup id X (Y, Z on request) after the user SGPRs, the `.args` metadata listing what the kernel reads.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.oracles import require_tool

BUF = (0, 8, "global_buffer")

_SKELETON = """\
.amdgcn_target "amdgcn-amd-amdhsa--{target}"
{version}.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
{body}
  s_endpgm
.L{name}_end:
.size {name}, .L{name}_end-{name}
{data}
.rodata
.p2align 6
.amdhsa_kernel {name}
{descriptor}
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_sgpr_workgroup_id_y {wg_y}
  .amdhsa_system_sgpr_workgroup_id_z {wg_z}
  .amdhsa_system_vgpr_workitem_id {vid}
  .amdhsa_group_segment_fixed_size {lds}
  .amdhsa_private_segment_fixed_size {private}
  .amdhsa_next_free_vgpr {vgprs}
  .amdhsa_next_free_sgpr {sgprs}
  .amdhsa_accum_offset {vgprs}
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--{target}
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: {kernarg_size}
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: {private}
    .wavefront_size: 64
    .sgpr_count: {sgprs}
    .vgpr_count: {vgprs}
    .max_flat_workgroup_size: {max_workgroup}
    .args:
{args}
...
.end_amdgpu_metadata
"""


def metadata_args(args: list[tuple[int, int, str]]) -> str:
    """`.args` lines for (offset, size, value_kind) triples (global buffers in the global address space)."""
    lines = [f"      - {{.offset: {o}, .size: {s}, .value_kind: {k}"
             + (", .address_space: global}" if k == "global_buffer" else "}") for o, s, k in args]
    return "\n".join(lines) or "      []"


def kernel_source(body: str, args: list[tuple[int, int, str]], *, name: str = "k", target: str = "gfx942",
                  wg_y: int = 0, wg_z: int = 0, vid: int = 0, lds: int = 0, private: int = 0, vgprs: int = 16,
                  sgprs: int = 24, descriptor: tuple[str, ...] = (), data: str = "", max_workgroup: int = 1024,
                  code_object_version: int | None = None) -> str:
    """Assembly text of one kernel: `body` between the label and s_endpgm, `descriptor` extra `.amdhsa_*`
    directives, `data` sections after the code, `args` (offset, size, value_kind) in the metadata."""
    return _SKELETON.format(
        target=target, name=name, body=body, data=data, wg_y=wg_y, wg_z=wg_z, vid=vid, lds=lds, private=private,
        vgprs=vgprs, sgprs=sgprs, max_workgroup=max_workgroup, args=metadata_args(args),
        kernarg_size=max((o + s for o, s, _ in args), default=0),
        descriptor="\n".join(f"  {line}" for line in descriptor),
        version=f".amdhsa_code_object_version {code_object_version}\n" if code_object_version else "")


def llvm_link(folder: Path, text: str, cpu: str = "gfx942", include: Path | None = None,
              stem: str = "llvm") -> tuple[bytes, bytes]:
    """(relocatable object, linked code object) of assembly text from llvm-mc-22 and ld.lld-22; Triton 3.9's
    target line, which llvm-mc rejects, is normalized to the target it names."""
    mc, lld = require_tool("llvm-mc"), require_tool("ld.lld")
    src, obj, co = folder / f"{stem}.s", folder / f"{stem}.o", folder / f"{stem}.co"
    src.write_text(re.sub(r'\.amdgcn_target "amdgpu9\.42-amd-amdhsa-unknown-gfx942"',
                          '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"', text))
    run = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-filetype=obj",
                          *(["-I", str(include)] if include else []), str(src), "-o", str(obj)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([lld, "-shared", str(obj), "-o", str(co)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return obj.read_bytes(), co.read_bytes()


def assemble(folder: Path, body: str, args: list[tuple[int, int, str]], *, cpu: str | None = None,
             **options) -> bytes:
    """The linked code object of `kernel_source(body, args, **options)`, made by llvm-mc-22 + ld.lld-22."""
    target = options.get("target", "gfx942")
    return llvm_link(folder, kernel_source(body, args, **options), cpu or target, stem="k")[1]
