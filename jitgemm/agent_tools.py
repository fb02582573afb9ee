"""The tools an agent calls (through `jitgemm mcp`, or directly from Python): plain JSON in, JSON out, every
result with an `ok` field and its findings or diagnostics.

Each tool is a thin layer over the API the CLI uses (the spec model, `codegen.codeobj.relocatable.assemble_source`,
the decoder, `jitgemm.emu.emulate` in strict mode, `jitgemm.battery`, the selector's cost model, the prebuilt
supplier and the tuning database); none holds instruction knowledge of its own. Errors an agent can act on come
back as `{"ok": false, "diagnostics": [...]}` (file:line:col for assembly), never as an exception.

A snippet (assembly text without an `.amdhsa_kernel` block) is wrapped into one kernel named `kernel` with this
ABI (AMDGPUUsage, "Initial Kernel Execution State", GFX9): s[0:1] the kernarg pointer, s2/s3/s4 the workgroup
ids X/Y/Z, v0 the packed work-item ids (X in bits 9:0, Y 19:10, Z 29:20); kernargs are the case's arguments in
order (buffers 8-byte pointers, scalars by value at their natural alignment); registers are allocated for exactly
the ones the snippet names; `s_endpgm` is appended.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_ARCH = "gfx942"
SNIPPET_KERNEL = "kernel"


def _error(message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "diagnostics": [{"severity": "error", "message": message}], **extra}


def _spec(arch: str | None):
    from jitgemm import isa

    return isa.load_spec(arch or DEFAULT_ARCH)


# --- the ISA ---------------------------------------------------------------------------------------------------

def isa_lookup(name: str, arch: str = DEFAULT_ARCH) -> dict[str, Any]:
    """An instruction as the spec describes it: encodings (opcode, bits), operands (field, bit layout, operand
    type, data format, width in bits, direction), flags, functional group and the spec's description; for an
    unknown name the closest names."""
    from jitgemm import isa
    from jitgemm.commands.spec import instruction_facts

    try:
        spec = _spec(arch)
    except isa.SpecError as exc:
        return _error(str(exc))
    inst = spec.find_instruction(str(name).strip())
    if inst is None:
        close = list(spec.closest_instruction_names(str(name).strip()))
        return {"ok": False, "arch": arch, "closest": close, "diagnostics": [{
            "severity": "error", "message": f"{name!r} is not an instruction of {spec.architecture.name}"
            + (f"; closest: {', '.join(close)}" if close else ""), "accepted": close}]}
    from jitgemm import spec_cards

    try:
        facts = spec_cards.card(spec, inst, isa.target_profile(arch))
        timing = {"latency": facts["latency"], "counters": facts["counters"], "passes": facts["passes"],
                  "hazard_classes": facts["classes"], "hazards": facts["hazards"]}
    except (isa.SpecError, ValueError, KeyError):   # a spec given as a path has no target profile
        timing = {}
    return {"ok": True, "arch": arch, "spec": str(spec.source), **instruction_facts(spec, inst), **timing}


# query words -> what the spec's names and prose say for them (names abbreviate: mfma, ds_, f8, ...)
_SYNONYMS = {
    "multiply": ("mul", "fma", "mfma", "multiply", "mad", "dot"), "matrix": ("mfma", "matrix", "smfmac"),
    "fp8": ("fp8", "f8", "bf8", "f8f6f4"), "fp4": ("fp4", "f8f6f4", "mx"), "fp16": ("f16", "fp16", "half"),
    "bf16": ("bf16",), "lds": ("lds", "ds", "local"), "load": ("load", "read"), "store": ("store", "write"),
    "add": ("add",), "convert": ("cvt", "convert"), "wait": ("waitcnt", "wait"), "barrier": ("barrier",),
    "scale": ("scale", "scalef32"), "shuffle": ("permlane", "bpermute", "dpp", "swizzle", "permute"),
    "transpose": ("tr", "transpose"), "atomic": ("atomic",), "int8": ("i8", "int8"), "branch": ("branch", "cbranch"),
}


_STOPWORDS = frozenset({"a", "an", "the", "to", "of", "from", "into", "in", "and", "with", "for", "on", "by"})


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def isa_search(query: str, arch: str = DEFAULT_ARCH, limit: int = 15) -> dict[str, Any]:
    """Instructions by what they do: every query word (with a few synonyms, _SYNONYMS) scored against the
    instruction's name parts, functional group and subgroups, and description; best first."""
    from jitgemm import isa

    try:
        spec = _spec(arch)
    except isa.SpecError as exc:
        return _error(str(exc))
    words = [w for w in _words(str(query)) if w not in _STOPWORDS]
    if not words:
        return _error("query: give a few words (e.g. 'fp8 matrix multiply', 'load to LDS')")
    scored = []
    for inst in spec.instructions:
        name = _words(inst.name)
        group = _words(" ".join([inst.functional_group or "", *(inst.functional_subgroups or ())]))
        prose = _words(inst.description or "")
        score, hits = 0.0, 0
        for w in words:
            best = 0.0
            for alt in (w, *_SYNONYMS.get(w, ())):
                weight = 1.0 if alt == w else 0.7      # the query's own word counts more than a synonym
                if alt in name:
                    best = max(best, 3.0 * weight)
                elif any(part.startswith(alt) for part in name):
                    best = max(best, 2.0 * weight)
                if alt in group:
                    best = max(best, 2.0 * weight)
                if alt in prose:
                    best = max(best, 1.5 * weight)
            score += best
            hits += best > 0
        if hits:
            scored.append((hits, score, -len(inst.name), inst))
    scored.sort(key=lambda t: (-t[0], -t[1], -t[2], t[3].name))
    results = [{"name": inst.name, "group": inst.functional_group, "subgroups": list(inst.functional_subgroups or ()),
                "description": inst.description, "score": round(score, 2), "matched_words": hits}
               for hits, score, _, inst in scored[:max(1, int(limit))]]
    return {"ok": bool(results), "arch": arch, "query": query, "results": results,
            **({} if results else {"diagnostics": [{"severity": "error", "message": f"nothing in "
                                                    f"{spec.architecture.name} matches {query!r}"}]})}


# --- assembly ----------------------------------------------------------------------------------------------------

def _arg_layout(args) -> tuple[list[str], int]:
    """Metadata `.args` lines and the kernarg size for battery.Arg-like objects (buffers: 8-byte pointers;
    scalars: by value at their size)."""
    from jitgemm.battery import numpy_dtype

    lines, offset = [], 0
    for a in args or ():
        if a.shape is None:
            size = numpy_dtype(a.dtype).itemsize
            offset = -(-offset // size) * size
            lines.append(f"      - {{.name: {a.name}, .offset: {offset}, .size: {size}, .value_kind: by_value}}")
        else:
            size = 8
            offset = -(-offset // 8) * 8
            lines.append(f"      - {{.name: {a.name}, .offset: {offset}, .size: 8, .value_kind: global_buffer, "
                         ".address_space: global}")
        offset += size
    return lines, max(8, -(-offset // 8) * 8)


def is_snippet(source: str) -> bool:
    """Whether `source` is a snippet (instructions only) rather than a whole `.s` file with a kernel."""
    return ".amdhsa_kernel" not in source


SNIPPET_HEADER_LINES = 6   # lines of wrap_snippet's text before the snippet's first line


def _snippet_registers(body: str, arch: str) -> dict[str, int]:
    """The highest v, a and s register a snippet names, from its assembled instructions (macros and .irp
    expanded, data such as `.long` tables left out): assembled once with the largest allocation, then scanned."""
    from jitgemm.codegen.codeobj.relocatable import assemble_source
    from jitgemm.isa.instruction import Reg, SrcMods

    _, obj = assemble_source(_wrapped(body, arch, [], 0, {"v": 255, "a": -1, "s": 101}), file="<snippet>",
                             arch=arch)
    top = {"v": -1, "a": -1, "s": 4}
    for item in obj.listing:
        for op in (item.instruction.operands if item.instruction is not None else ()):
            op = op.operand if isinstance(op, SrcMods) else op
            if isinstance(op, Reg) and op.kind in top:
                top[op.kind] = max(top[op.kind], op.index + op.count - 1)
    return top


def wrap_snippet(body: str, arch: str | None = None, args=None, lds_bytes: int = 0) -> str:
    """A whole `.s` file around a snippet (module docstring: the ABI), registers sized from what it names.
    `lds_bytes`: static LDS; a case's `lds_bytes` is the launch's dynamic LDS, as hipModuleLaunchKernel's
    sharedMemBytes, and starts at LDS address 0 when the kernel has no static LDS."""
    arch = arch or DEFAULT_ARCH
    return _wrapped(body, arch, args, lds_bytes, _snippet_registers(body, arch))


def _wrapped(body: str, arch: str, args, lds_bytes: int, top: dict[str, int]) -> str:
    vgprs = max(1, top["v"] + 1)
    accum = -(-vgprs // 4) * 4
    total = accum + top["a"] + 1 if top["a"] >= 0 else vgprs
    sgprs = top["s"] + 1
    lines, size = _arg_layout(args)
    name = SNIPPET_KERNEL
    return f""".amdgcn_target "amdgcn-amd-amdhsa--{arch}"
.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
{body}
  s_endpgm
.L{name}_end:
.size {name}, .L{name}_end-{name}
.rodata
.p2align 6
.amdhsa_kernel {name}
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_sgpr_workgroup_id_y 1
  .amdhsa_system_sgpr_workgroup_id_z 1
  .amdhsa_system_vgpr_workitem_id 2
  .amdhsa_group_segment_fixed_size {lds_bytes}
  .amdhsa_kernarg_size {size}
  .amdhsa_next_free_vgpr {total}
  .amdhsa_next_free_sgpr {sgprs}
  .amdhsa_accum_offset {accum}
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: {size}
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds_bytes}
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: {sgprs}
    .vgpr_count: {total}
    .max_flat_workgroup_size: 1024
    .args:
{chr(10).join(lines) or "      []"}
...
.end_amdgpu_metadata
"""


def _accepted_forms(message: str, source_line: str | None, arch: str | None) -> list[str]:
    """The forms the spec accepts for the mnemonic of a line that did not assemble (operand kinds and widths per
    encoding), so an agent can fix the operands without guessing."""
    from jitgemm.isa.spec.forms import forms_of

    text = (source_line or "").strip()
    mnemonic = text.split()[0].lower() if text else ""
    if not mnemonic or mnemonic.startswith("."):
        return []
    forms = forms_of(_spec(arch))
    found = forms.forms_for(mnemonic) or []
    out = []
    for form in found[:6]:
        slots = ", ".join(f"{s.fname or s.kind}:{s.type_name}" + (f"x{s.nregs}" if s.nregs and s.nregs > 1 else "")
                          for s in form.slots)
        out.append(f"{mnemonic} ({form.enc.name}) {slots}")
    if not found:
        out = [f"closest instruction names: {', '.join(forms.closest(mnemonic))}"]
    return out


def assemble_text(source: str, arch: str | None = None, args=None, lds_bytes: int = 0,
                  file: str = "<source>") -> tuple[bytes | None, dict[str, Any]]:
    """(code object, JSON result) for a `.s` file's text or a snippet; on errors (None, diagnostics)."""
    from jitgemm.codegen.codeobj import CodeObjectError
    from jitgemm.codegen.codeobj.relocatable import assemble_source
    from jitgemm.commands.json_output import diagnostic
    from jitgemm.isa.errors import IsaError

    snippet = is_snippet(source)
    try:
        text = wrap_snippet(source, arch, args, lds_bytes) if snippet else source
        blob, obj = assemble_source(text, file=file, arch=arch)
    except (IsaError, CodeObjectError) as exc:
        diag = diagnostic(exc)
        if snippet and diag.get("file") in ("<snippet>", file) and isinstance(diag.get("line"), int):
            diag["file"] = file       # a line of the snippet, not of the wrapper around it
            diag["line"] = diag["line"] - SNIPPET_HEADER_LINES
        if diag.get("severity") == "error":
            diag["accepted"] = _accepted_forms(str(diag.get("message", "")), diag.get("source")
                                               or getattr(exc, "source_line", None), arch)
        return None, {"ok": False, "snippet": snippet, "diagnostics": [diag]}
    result = {"ok": True, "snippet": snippet, "target": obj.target, "bytes": len(blob),
              "sha256": hashlib.sha256(blob).hexdigest(), "instructions": len(obj.listing),
              "kernels": [{"name": k.name, "descriptor": k.values} for k in obj.kernels], "diagnostics": []}
    return blob, result


def assemble(source: str, arch: str | None = None, args: list | None = None) -> dict[str, Any]:
    """Assemble a `.s` file's text or a snippet to a code object (base64), with file:line:col diagnostics and the
    forms the spec accepts for a line that does not assemble."""
    from jitgemm.battery import Arg, CaseError

    try:
        parsed = [Arg.from_json(a, i) for i, a in enumerate(args or [])]
    except CaseError as exc:
        return _error(str(exc))
    blob, result = assemble_text(source, arch, parsed)
    if blob is not None:
        result["code_object_base64"] = base64.b64encode(blob).decode()
    return result


def _code_object(code_object_base64: str | None = None, path: str | None = None) -> bytes:
    if code_object_base64:
        try:
            return base64.b64decode(code_object_base64, validate=True)
        except ValueError as exc:
            raise ValueError(f"code_object_base64 is not base64 ({exc})") from None
    if path:
        from jitgemm.util.files import read_bounded

        return read_bounded(path, 512 << 20)
    raise ValueError("give code_object_base64 or path")


def disassemble(code_object_base64: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Every kernel of a code object: its instructions (PC, text, bytes) and descriptor facts."""
    from jitgemm import isa
    from jitgemm.codegen.codeobj import CodeObjectError, read
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.targets import base_target

    try:
        co = read(_code_object(code_object_base64, path))
        spec = isa.load_spec(base_target(co.processor) if co.processor else DEFAULT_ARCH)
    except (OSError, ValueError, CodeObjectError, isa.SpecError) as exc:
        return _error(str(exc))
    kernels = []
    for k in co.kernels:
        insts = []
        for d in decode(k.code, spec):
            text = format_instruction(d.instruction) if d.instruction is not None else \
                ".long " + ", ".join(f"0x{w:08x}" for w in d.words)
            insts.append({"pc": d.offset, "text": text})
        desc = k.descriptor
        kernels.append({"name": k.name, "instructions": insts, "lds_bytes": desc.group_segment_fixed_size,
                        "scratch_bytes": desc.private_segment_fixed_size, "args": k.args,
                        "text": "\n".join(f"{i['pc']:#06x}: {i['text']}" for i in insts)})
    return {"ok": True, "target": co.processor, "kernels": kernels}


# --- running and qualifying ---------------------------------------------------------------------------------------

def _load(source: str | None, code_object_base64: str | None, case, arch: str | None):
    """(code object, kernel name or None) from assembly text or a code object; a dict result on failure."""
    if source:
        blob, result = assemble_text(source, arch, case.args if case is not None else None)
        if blob is None:
            return None, result
        return blob, None
    try:
        return _code_object(code_object_base64, None), None
    except ValueError as exc:
        return None, _error(f"{exc} (or source: assembly text)")


def _case(case: Mapping[str, Any] | None):
    import json

    from jitgemm.battery import Case, CaseError

    try:
        if isinstance(case, str):      # some clients send an object argument as its JSON text
            case = json.loads(case)
        return Case.from_json(case or {}), None
    except (CaseError, TypeError, ValueError) as exc:
        return None, _error(f"case: {exc}")


def _case_and_blob(case, source: str | None, code_object_base64: str | None, arch: str | None):
    """(case, code object, None) or (None, None, error dict): the one way run, qualify and profile read their
    case and kernel, so the three tools refuse the same bad input with the same message."""
    parsed, bad = _case(case)
    if bad:
        return None, None, bad
    blob, bad = _load(source, code_object_base64, parsed, arch)
    if bad:
        return None, None, bad
    return parsed, blob, None


def run(case: Mapping[str, Any], source: str | None = None, code_object_base64: str | None = None,
        kernel: str | None = None, arch: str | None = None, strict: bool = True, schedule: str = "lockstep",
        seed: int = 0, input_seed: int = 1) -> dict[str, Any]:
    """Run a kernel once on the case's inputs (drawn with `input_seed`; 1, battery.VISIBLE_INPUT_SEED, is the set
    the battery's first run uses too) in the emulator (strict by default) and compare its outputs with the case's
    numpy reference: max error, findings (violations with PCs)."""
    from jitgemm.battery import CaseError, constant_inputs, make_inputs, run_case

    parsed, blob, bad = _case_and_blob(case, source, code_object_base64, arch)
    if bad:
        return bad
    try:
        out = run_case(blob, kernel, parsed, seed=input_seed, strict=strict, schedule=schedule, schedule_seed=seed)
        out.findings += constant_inputs(parsed, make_inputs(parsed, input_seed), "warning")
    except CaseError as exc:
        return _error(str(exc))
    result = {"ok": not any(f.severity == "error" for f in out.findings), "max_error": out.max_error,
              "findings": [f.to_json() for f in out.findings]}
    if out.stats is not None:
        result["stats"] = {"waves": out.stats.waves, "wave_instructions": out.stats.wave_instructions,
                           "lane_instructions": out.stats.lane_instructions, "strict": out.stats.strict or None}
    result["outputs"] = {name: {"shape": list(v.shape), "dtype": str(v.dtype),
                                "head": [float(x) for x in v.reshape(-1)[:8].astype("float64")]}
                         for name, v in out.outputs.items()}
    return result


def qualify(case: Mapping[str, Any] | None = None, source: str | None = None, code_object_base64: str | None = None,
            kernel: str | None = None, arch: str | None = None,
            contract: str | Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The anti-cheat battery (jitgemm/battery.py): limits, strict emulation, poison, three random schedules
    bit-identical, two random input sets against the reference. A GEMM kernel may give its jitgemm `contract`
    instead of a case: then random legal problems of the contract are its cases (battery.gemm_battery)."""
    from jitgemm.battery import CaseError, battery

    if contract is not None:
        loaded = _gemm_kernel(contract, source, code_object_base64, arch)
        if isinstance(loaded, dict):
            return loaded
        from jitgemm.battery import gemm_battery

        findings = gemm_battery(loaded[1], loaded[0])
        return {"ok": not findings, "findings": [f.to_json() for f in findings]}

    parsed, blob, bad = _case_and_blob(case, source, code_object_base64, arch)
    if bad:
        return bad
    try:
        return battery(blob, kernel, parsed).to_json()
    except CaseError as exc:
        return _error(str(exc))


def profile(case: Mapping[str, Any] | None = None, source: str | None = None, code_object_base64: str | None = None,
            kernel: str | None = None, arch: str | None = None, contract: str | Mapping[str, Any] | None = None,
            problem: Mapping[str, Any] | None = None, device: str | int | None = None) -> dict[str, Any]:
    """Modelled time of a kernel. A GEMM kernel with its jitgemm `contract` and a `problem` ({m, n, k, a, b?, d?,
    layout?, batch?}) gets `jitgemm.timing.predict` (the project's one timing model: time, TFLOP/s, roofline,
    bound, counters) on `device` (name or CU count; default the target's); a kernel with a `case` (no contract) gets
    `estimate_time`, a roofline over its emulated instruction count, labelled as such in `model`."""
    if contract is not None:
        return _profile_gemm(contract, problem, source, code_object_base64, arch, device)
    from jitgemm.battery import CaseError, run_case

    parsed, blob, bad = _case_and_blob(case, source, code_object_base64, arch)
    if bad:
        return bad
    try:
        out = run_case(blob, kernel, parsed, seed=1, strict=False, poison=False, compare=False)
    except CaseError as exc:
        return _error(str(exc))
    if out.stats is None:
        return {"ok": False, "findings": [f.to_json() for f in out.findings]}
    return {"ok": True, **estimate_time(blob, kernel, parsed, out.stats)}


def _gemm_kernel(contract, source, code_object_base64, arch):
    """(Contract, code object) of a GEMM kernel given with its contract, or a result dict saying what is wrong;
    the contract is checked against the kernel's metadata."""
    import yaml

    from jitgemm.codegen.codeobj import CodeObjectError, read
    from jitgemm.contract import Contract, ContractError
    from jitgemm.util.safe_yaml import load_yaml

    try:
        data = load_yaml(contract) if isinstance(contract, str) else dict(contract)
        parsed = Contract.load(data, "contract")
    except (ValueError, TypeError, ContractError, yaml.YAMLError) as exc:
        return _error(f"contract: {exc}")
    if source:
        blob, result = assemble_text(source, arch)
        if blob is None:
            return result
    else:
        try:
            blob = _code_object(code_object_base64)
        except ValueError as exc:
            return _error(str(exc))
    try:
        parsed.check_metadata(read(blob).kernel(parsed.kernel).metadata)
    except (CodeObjectError, ContractError) as exc:
        return _error(str(exc))
    return parsed, blob


def _profile_gemm(contract, problem, source, code_object_base64, arch, device) -> dict[str, Any]:
    """`profile` for a GEMM kernel and its contract: jitgemm.timing.predict on the problem."""
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError
    from jitgemm.timing import TimingError, predict

    loaded = _gemm_kernel(contract, source, code_object_base64, arch)
    if isinstance(loaded, dict):
        return loaded
    parsed, blob = loaded
    if not isinstance(problem, Mapping) or not {"m", "n", "k", "a"} <= set(problem):
        return _error("problem: give {m, n, k, a, b?, d?, layout?, batch?} for a GEMM kernel's profile")
    keys = ("b", "d", "layout", "batch", "a_scale", "b_scale", "scale_mode")
    try:
        gemm = GemmProblem.make(int(problem["m"]), int(problem["n"]), int(problem["k"]), problem["a"],
                                **{k: problem[k] for k in keys if k in problem})
        ok, why = parsed.admits(gemm)
        if not ok:
            return _error(f"the contract does not admit this problem: {why}")
        pred = predict((parsed.data, blob), gemm, device)
    except (IRError, TimingError, ValueError, KeyError) as exc:
        return _error(f"{type(exc).__name__}: {exc}")
    return {"ok": True, "model": "jitgemm.timing.predict", "us": pred.us, "tflops": pred.tflops,
            "bound": pred.bound, "roofline_us": pred.roofline_us, "device": pred.device,
            "counters": pred.counters, "stalls_us": pred.stalls_us}


def estimate_time(code_object: bytes, kernel: str | None, case, stats) -> dict[str, Any]:
    """For kernels without a GEMM contract (jitgemm.timing.predict models GEMM kernels from their contract and
    problem; these have a case instead): a roofline over what the emulated run did -- issue time of its
    wave-instructions spread over the device's SIMDs (4 cycles each: a wave64 VALU op issues over 4 cycles on a
    16-lane SIMD; MFMA passes are not counted) against the bytes of the case's buffers at the HBM bandwidth (the
    default device's, from the target profile), plus the launch overhead and efficiencies jitgemm.timing fitted."""
    import math

    from jitgemm.battery import numpy_dtype
    from jitgemm.emu.engine import _default_spec, _load_code_object
    from jitgemm.isa.spec.targets import target_of_spec, target_profile
    from jitgemm.timing import params

    co = _load_code_object(code_object)
    spec = _default_spec(co)
    prof = target_profile(target_of_spec(spec) or DEFAULT_ARCH)
    p = params(prof)              # the timing model's fitted launch overhead, efficiencies, SIMDs per CU
    simds = p.simds_per_cu * prof.compute_units
    issue_cycles = 4.0 * stats.wave_instructions / max(1, min(stats.waves, simds))
    issue_us = issue_cycles / ((prof.get("clock_mhz") or 2100) * p.clock_efficiency)
    moved = sum(math.prod(a.shape) * numpy_dtype(a.dtype).itemsize for a in case.args if a.shape is not None)
    memory_us = moved / ((prof.hbm_bandwidth_gbs or 1000) * 1e3 * p.hbm_efficiency)
    launch_us = p.launch_us
    us = launch_us + max(issue_us, memory_us)
    return {"model": "emulated-count roofline (agent_tools.estimate_time; jitgemm.timing.predict needs a GEMM "
                     "contract and problem)",
            "us": us, "counters": {"waves": stats.waves, "wave_instructions": stats.wave_instructions,
                                   "issue_us": issue_us, "memory_us": memory_us, "bytes": moved,
                                   "launch_us": launch_us}}


# --- shipping -------------------------------------------------------------------------------------------------

def default_supplier_folder() -> Path:
    """Where `submit` puts kernels unless told: `<jitgemm cache>/agent-kernels` (use_prebuilt reads it)."""
    from jitgemm.isa.spec.cache import cache_root

    return cache_root() / "agent-kernels"


def submit(contract: str | Mapping[str, Any], source: str | None = None, code_object_base64: str | None = None,
           folder: str | None = None, db: str | None = None, cases: int = 3) -> dict[str, Any]:
    """Qualify a GEMM kernel against its contract (battery.gemm_battery: limits, random legal problems in strict
    emulation with poison, three random schedules bit-identical); when it passes, write it with its sidecar contract
    into the supplier folder and record it in the tuning database, so `jitgemm.use_prebuilt(folder)` offers it to
    `jitgemm.matmul`."""
    import yaml

    from jitgemm.battery import gemm_battery

    loaded = _gemm_kernel(contract, source, code_object_base64, None)
    if isinstance(loaded, dict):
        return loaded
    parsed, blob = loaded
    data = parsed.data
    findings = gemm_battery(blob, parsed, cases=cases)
    if findings:
        return {"ok": False, "findings": [f.to_json() for f in findings]}
    out = Path(folder) if folder else default_supplier_folder()
    out.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256(blob).hexdigest()
    co_path = out / f"{parsed.kernel}-{sha[:12]}.co"
    co_path.write_bytes(blob)
    co_path.with_name(co_path.name + ".yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    recorded = _record(parsed, data, blob, sha, db)
    return {"ok": True, "path": str(co_path), "contract": str(co_path) + ".yaml", "cases": cases,
            "tuning_rows": recorded, "use": f"jitgemm.use_prebuilt({str(out)!r})"}


def _record(contract, data: dict, blob: bytes, sha: str, db: str | None) -> int:
    """Tuning-database rows for the submitted kernel: emulator-verified, and the timing model's TFLOP/s (through
    `selector.predicted`, the selector's own call of jitgemm.timing) on a representative problem of its contract
    (the rows `TuningDB.deciding_row` ranks by); no TFLOP/s row when the model cannot time the kernel."""
    import random

    from jitgemm.qualify import draw_problems
    from jitgemm.selector import predicted
    from jitgemm.suppliers import Candidate
    from jitgemm.tuning_db import TuningDB, problem_key

    base = TuningDB(db) if db else TuningDB()
    cand = Candidate("agent", contract.kernel, contract, lambda: (blob, contract.kernel))
    problems = draw_problems(contract, 1, random.Random(0), max_size=512)
    rows = []
    for p in problems:
        common = {"target": contract.target, "problem": problem_key(p), "kernel": contract.kernel,
                  "code_sha256": sha, "origin": "jitgemm mcp submit", "contract": data}
        rows.append({**common, "metric": "emulator_ok", "value": 1.0, "source": "emulator"})
        pred = predicted(cand, p, contract.target)   # a string when the model cannot time the kernel
        if not isinstance(pred, str):
            rows.append({**common, "metric": "tflops", "value": pred.tflops, "source": "model"})
    return base.add(rows) if rows else 0
