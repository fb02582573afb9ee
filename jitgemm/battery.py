"""The anti-cheat battery: what a kernel must survive before an agent's "it passed" is believed.

Models write kernels that pass a weak check and fail on hardware (issue 30): a "104x" kernel that asked for 65,792
bytes of LDS on a 65,536-byte MI300X and read garbage (wafer.ai's report, caught only by a determinism check),
32-lane assumptions on wave64 hardware, missing waits, outputs hard-coded for the one input that was tried. The
battery runs a kernel on a *case* (its launch, argument buffers, a numpy reference) and collects findings:

- limits: LDS (static + dynamic), VGPRs/AGPRs, SGPRs and scratch against the target profile, from the
  metadata and descriptor, and from the registers the code really names (a kernel that touches v40 with 32
  VGPRs allocated reads another wave's registers on hardware);
- inputs: every input buffer random, never all zero or all one (the battery draws its own);
- strict emulation (jitgemm/emu/strict.py): waits, barriers, wait states, with violations naming both PCs;
  out-of-bounds reads and writes are memory faults with the PC, address and buffer;
- poison: outputs start as NaN bytes, LDS and every register the ABI leaves undefined as emu's POISON;
- determinism: three random schedules (delayed loads, random wave interleaving) give bit-identical outputs;
- correctness on two independent random input sets -- the one `run` shows and one drawn from the kernel's own
  hash, as are the schedules (`hidden_seeds`) -- against the numpy reference (max error, first bad element;
  errors only in lanes 32..63 of each wave's 64 elements are called out as a 32-lane assumption).

This module orchestrates the emulator and the reference; it holds no instruction knowledge of its own.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Names of element types an agent writes (as `jitgemm emulate --arg` does) -> numpy / ml_dtypes names.
DTYPES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16", "fp8": "float8_e4m3fnuz",
          "bf8": "float8_e5m2fnuz", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "i8": "int8",
          "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64",
          "u64": "uint64"}
VISIBLE_INPUT_SEED = 1   # the input set `run` draws by default: the one an agent can see


def hidden_seeds(code_object: bytes) -> tuple[int, tuple[int, int, int]]:
    """(second input seed, three schedule seeds) for a kernel: drawn from its code object's sha256, so they are
    fixed for a kernel (verdicts reproduce) but unknown until the kernel is: an output hard-coded from a visible run,
    or a race tuned to survive known schedules, meets inputs and interleavings it could not have seen."""
    import hashlib

    digest = hashlib.sha256(bytes(code_object)).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") & 0x7FFFFFFF for i in range(0, 16, 4)]
    return words[0] | 1 << 20, (words[1], words[2], words[3])


class CaseError(ValueError):
    """A case (launch, arguments, reference) that cannot be run as given; the message names the field."""


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an element-type name of DTYPES (CaseError naming the accepted ones)."""
    import ml_dtypes

    if name not in DTYPES:
        raise CaseError(f"dtype {name!r}: accepted {', '.join(DTYPES)}")
    full = DTYPES[name]
    return np.dtype(getattr(np, full) if hasattr(np, full) else getattr(ml_dtypes, full))


@dataclass
class Arg:
    """One kernel argument: a buffer (`shape`; `output` when the kernel writes it and the reference defines it)
    or a scalar (`value`). `fill`: randn | uniform | int:LO:HI | zeros | ones | iota, or `data` (a nested list)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None = None
    value: float | int | None = None
    output: bool = False
    fill: str | None = None
    data: Any = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], index: int) -> Arg:
        where = f"args[{index}]"
        if not isinstance(raw, Mapping) or "name" not in raw or "dtype" not in raw:
            raise CaseError(f"{where}: expected an object with name, dtype and shape (buffer) or value (scalar)")
        numpy_dtype(str(raw["dtype"]))
        shape = raw.get("shape")
        if shape is not None:
            shape = (int(shape),) if isinstance(shape, int) else tuple(int(x) for x in shape)
            if not shape or min(shape) < 1 or math.prod(shape) > 1 << 24:
                raise CaseError(f"{where} ({raw['name']}): shape {list(shape)} must be positive and hold at most "
                                f"2^24 elements")
        elif raw.get("value") is None:
            raise CaseError(f"{where} ({raw['name']}): give shape (a buffer) or value (a scalar)")
        return cls(str(raw["name"]), str(raw["dtype"]), shape, raw.get("value"), bool(raw.get("output", False)),
                   raw.get("fill"), raw.get("data"))


@dataclass
class Case:
    """A launch with its arguments and the numpy reference of its outputs. `reference`: an expression over the
    argument names (inputs as float64, integers as int64) for the single output, a map output -> expression, or
    (tasks) a Python callable taking the inputs and returning that map."""

    args: list[Arg]
    grid: tuple[int, ...] = (1,)
    block: tuple[int, ...] = (64,)
    reference: str | Mapping[str, str] | Callable[..., Mapping[str, np.ndarray]] | None = None
    lds_bytes: int = 0
    rtol: float | None = None
    atol: float | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Case:
        if not isinstance(raw, Mapping):
            raise CaseError("case: expected an object with args, grid, block and reference")
        args = raw.get("args")
        if not isinstance(args, list) or not args:
            raise CaseError("case.args: expected a list of {name, dtype, shape|value, output?, fill?}")
        dims = {}
        for key in ("grid", "block"):
            value = raw.get(key, 1 if key == "grid" else 64)
            value = (value,) if isinstance(value, int) else tuple(value)
            if not 1 <= len(value) <= 3 or min(value) < 1:
                raise CaseError(f"case.{key}: 1 to 3 positive integers")
            dims[key] = tuple(int(x) for x in value)
        tol = raw.get("tolerance") or {}
        if not isinstance(tol, Mapping):
            raise CaseError("case.tolerance: expected {rtol, atol}")
        return cls([Arg.from_json(a, i) for i, a in enumerate(args)], dims["grid"], dims["block"],
                   raw.get("reference"), int(raw.get("lds_bytes", 0) or 0), tol.get("rtol"), tol.get("atol"))

    @property
    def outputs(self) -> list[Arg]:
        return [a for a in self.args if a.output]


@dataclass
class Finding:
    """One thing the battery (or a run) found. `check` names the test; `pc` the kernel offset when one applies."""

    check: str
    message: str
    severity: str = "error"
    pc: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {"check": self.check, "severity": self.severity, "message": self.message}
        if self.pc is not None:
            out["pc"] = self.pc
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass
class Outcome:
    """One emulated run: outputs by name, the findings it raised, the emulator's statistics."""

    outputs: dict[str, np.ndarray]
    findings: list[Finding]
    max_error: float | None = None
    stats: Any = None


# --- inputs --------------------------------------------------------------------------------------------------

def make_inputs(case: Case, seed: int) -> dict[str, Any]:
    """Every argument's value: buffers filled (random unless the case says otherwise), outputs poisoned with NaN
    bytes (0xFF), scalars as their numpy type."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for a in case.args:
        dt = numpy_dtype(a.dtype)
        if a.shape is None:
            out[a.name] = np.array(a.value).astype(dt)[()]
            continue
        if a.output:
            arr = np.empty(a.shape, dt)
            arr.view(np.uint8)[...] = 0xFF
            out[a.name] = arr
            continue
        if a.data is not None:
            try:
                out[a.name] = np.asarray(a.data, np.float64 if dt.kind == "V" or dt.kind == "f" else dt).astype(dt) \
                    .reshape(a.shape)
            except ValueError as exc:
                raise CaseError(f"argument {a.name}: data does not fit shape {list(a.shape)} ({exc})") from None
            continue
        fill = a.fill or ("randn" if dt.kind in "fV" else "int")
        if fill == "randn":
            arr = rng.standard_normal(a.shape)
        elif fill == "uniform":
            arr = rng.uniform(-1.0, 1.0, a.shape)
        elif fill == "zeros":
            arr = np.zeros(a.shape)
        elif fill == "ones":
            arr = np.ones(a.shape)
        elif fill == "iota":
            arr = np.arange(math.prod(a.shape)).reshape(a.shape)
        elif fill.startswith("int"):
            parts = fill.split(":")
            if dt.kind in "iu" and len(parts) == 1:
                info = np.iinfo(dt)
                lo, hi = max(info.min, -100), min(info.max, 100)
            else:
                try:
                    lo, hi = (int(parts[1]), int(parts[2])) if len(parts) == 3 else (-8, 8)
                except ValueError:
                    raise CaseError(f"argument {a.name}: fill {fill!r}: write int:LO:HI") from None
            arr = rng.integers(lo, hi + 1, a.shape)
        else:
            raise CaseError(f"argument {a.name}: fill {fill!r}: accepted randn, uniform, int:LO:HI, zeros, ones, iota")
        out[a.name] = np.asarray(arr).astype(dt)
    return out


def wide(x: np.ndarray) -> np.ndarray:
    """float64 (floats, including ml_dtypes) or int64 (integers) for the reference."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):      # poisoned (signalling-NaN) elements stay NaN, quietly
        return x.astype(np.int64) if x.dtype.kind in "iub" else x.astype(np.float64)


def constant_inputs(case: Case, values: Mapping[str, Any], severity: str = "error") -> list[Finding]:
    """Inputs that are all zero or all one: a kernel right only on those proves nothing (the battery refuses such
    a case; a single `run` warns)."""
    found = []
    for a in case.args:
        if a.output or a.shape is None:
            continue
        v = wide(values[a.name])
        for const in (0, 1):
            if v.size > 1 and (v == const).all():
                found.append(Finding("inputs", f"input {a.name} is all {const}s: a kernel that ignores it (or only "
                                     "handles that value) would pass; use random inputs (fill randn/int)",
                                     severity))
    return found


def reference_outputs(case: Case, values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The reference's outputs for these inputs (CaseError for an expression that does not evaluate)."""
    inputs = {a.name: wide(values[a.name]) for a in case.args if not a.output}
    ref = case.reference
    if ref is None:
        raise CaseError("case.reference: give a numpy expression over the argument names (e.g. 'a + b')")
    if callable(ref):
        return {k: np.asarray(v) for k, v in ref(**inputs).items()}
    exprs = {case.outputs[0].name: ref} if isinstance(ref, str) else dict(ref)
    if isinstance(ref, str) and len(case.outputs) != 1:
        raise CaseError(f"case.reference: {len(case.outputs)} outputs; give a map output -> expression")
    out = {}
    scope = {"np": np, "mx_dequant": mx_dequant, "__builtins__": _REFERENCE_BUILTINS}
    for name, text in exprs.items():
        try:
            out[name] = np.asarray(eval(compile(str(text), f"reference[{name}]", "eval"), scope, dict(inputs)))  # noqa: S307
        except Exception as exc:   # the agent's expression: any error is a message for the agent
            raise CaseError(f"case.reference[{name}] = {text!r}: {type(exc).__name__}: {exc}") from None
    return out


def _numpy_import(name, *args, **kwargs):
    """The only import a reference expression may cause: numpy's own lazy imports (C methods such as ndarray.max
    import through the calling frame's builtins)."""
    import builtins

    if name.split(".")[0] not in ("numpy", "ml_dtypes"):
        raise ImportError(f"a reference expression may not import {name!r}")
    return builtins.__import__(name, *args, **kwargs)


_REFERENCE_BUILTINS = {"__import__": _numpy_import, "abs": abs, "min": min, "max": max, "range": range, "len": len,
                       "float": float, "int": int, "sum": sum}


def mx_dequant(codes: np.ndarray, scales: np.ndarray, fmt: str = "fp4", block: int = 32) -> np.ndarray:
    """Reference helper: MX element codes along the last axis (fp4: two per byte, low nibble first; fp8: one per
    byte) times one E8M0 scale per `block` values (jitgemm.mx's decoders), as float64."""
    from jitgemm import mx

    raw = np.asarray(codes).astype(np.uint8)
    values = mx.codes_to_float(mx.unpack_fp4(raw, raw.shape[-1] * 2) if fmt == "fp4" else raw, fmt)
    scale = np.repeat(mx.e8m0_to_float(np.asarray(scales).astype(np.uint8)), block, axis=-1)
    return values * scale[..., :values.shape[-1]]


def tolerance(case: Case, dtype: np.dtype, k: int = 1) -> tuple[float, float]:
    """(rtol, atol) for an output dtype: the case's, else by precision (exact for integers)."""
    if case.rtol is not None or case.atol is not None:
        return float(case.rtol or 0.0), float(case.atol or 0.0)
    if dtype.kind in "iu":
        return 0.0, 0.0
    eps = {2: 2.0 ** -7, 4: 2.0 ** -20, 8: 2.0 ** -40}.get(dtype.itemsize, 2.0 ** -3)
    if dtype.itemsize == 2 and dtype.name == "float16":
        eps = 2.0 ** -10
    return 4 * eps, 4 * eps


# --- running -------------------------------------------------------------------------------------------------

def run_case(code_object: bytes, kernel: str | None, case: Case, *, seed: int, strict: bool | str = True,
             schedule: str = "lockstep", schedule_seed: int = 0, poison: bool = True, compare: bool = True) -> Outcome:
    """Emulate the kernel on the case's inputs drawn with `seed`; findings for strict violations, faults, launch
    errors, outputs never written and mismatches against the reference."""
    from jitgemm.codegen.codeobj.launch import LaunchError
    from jitgemm.emu import EmulatorError, MemoryFault, StrictViolation, StrictWarning, emulate
    from jitgemm.emu.errors import StepLimitExceeded, UnsupportedInstruction
    from jitgemm.isa.errors import IsaError

    values = make_inputs(case, seed)
    argv = [values[a.name] for a in case.args]
    findings: list[Finding] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StrictWarning)
        try:
            stats = emulate(code_object, kernel, grid=case.grid, block=case.block, args=argv, lds_bytes=case.lds_bytes,
                            strict=strict, schedule=schedule, seed=schedule_seed, poison=poison)
        except StrictViolation as exc:
            detail = {"rule": exc.rule, "wave": exc.wave, "lanes": f"0x{exc.lanes:016x}", "where": exc.where,
                      "second": {"pc": exc.second[0], "text": exc.second[1]}}
            if exc.first is not None:
                detail["first"] = {"pc": exc.first[0], "text": exc.first[1]}
            return Outcome({}, [Finding("strict", str(exc), pc=exc.second[0], detail=detail)])
        except MemoryFault as exc:
            return Outcome({}, [Finding("out_of_bounds", str(exc), pc=exc.pc,
                                        detail={"address": exc.address, "wave": exc.wave, "lane": exc.lane})])
        except UnsupportedInstruction as exc:
            return Outcome({}, [Finding("unsupported", str(exc), pc=exc.pc)])
        except StepLimitExceeded as exc:
            return Outcome({}, [Finding("step_limit", str(exc))])
        except (LaunchError, MemoryError) as exc:      # MemoryError: emulate() refuses what will not fit
            return Outcome({}, [Finding("launch", str(exc) or "out of memory")])
        except (EmulatorError, IsaError) as exc:
            return Outcome({}, [Finding("emulator", str(exc))])
    for w in caught:
        if issubclass(w.category, StrictWarning):
            findings.append(Finding("strict", str(w.message), "warning"))
    outputs = {a.name: values[a.name] for a in case.outputs}
    out = Outcome(outputs, findings, stats=stats)
    if compare:
        ref = reference_outputs(case, values)
        out.max_error = compare_outputs(case, outputs, ref, findings)
    return out


def compare_outputs(case: Case, outputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray],
                    findings: list[Finding]) -> float:
    """Append mismatch findings (elements never written, the worst error, a 32-lane pattern); the max error."""
    worst = 0.0
    for a in case.outputs:
        got = outputs[a.name]
        if a.name not in ref:
            raise CaseError(f"case.reference defines no value for output {a.name}")
        try:
            want = np.broadcast_to(np.asarray(ref[a.name]), got.shape)
        except ValueError:
            raise CaseError(f"case.reference for {a.name}: shape {list(np.shape(ref[a.name]))} does not fit the "
                            f"output's {list(got.shape)}") from None
        raw = got.view(np.uint8).reshape(got.size, -1)
        unwritten = (raw == 0xFF).all(axis=1)
        g, w = wide(got).reshape(-1), wide(want).reshape(-1).astype(np.float64)
        rtol, atol = tolerance(case, got.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(g - w)
            bad = ~(err <= atol + rtol * np.abs(w)) | (np.isnan(g) != np.isnan(w))
        finite = err[np.isfinite(err)]
        worst = max(worst, float(finite.max()) if finite.size else 0.0, math.inf if np.isnan(err).any() and
                    not np.isnan(w).any() else 0.0)
        if unwritten.any() and got.dtype.itemsize > 1:
            idx = np.flatnonzero(unwritten)
            findings.append(Finding("unwritten", f"output {a.name}: {idx.size} of {got.size} elements never written "
                                    f"(still the poison bytes 0xFF), first at flat index {int(idx[0])}",
                                    detail={"count": int(idx.size), "first": int(idx[0])}))
        if bad.any():
            idx = np.flatnonzero(bad)
            lanes = idx % 64
            hint = ""
            if got.size >= 64 and (lanes >= 32).all():
                hint = ("; every wrong element sits in lanes 32..63 of its 64: a 32-lane (warp) assumption? gfx9 "
                        "waves are 64 lanes")
            i = int(idx[0])
            findings.append(Finding("mismatch", f"output {a.name}: {idx.size} of {got.size} elements differ from the "
                                    f"reference (rtol {rtol:g}, atol {atol:g}); first at flat index {i}: got "
                                    f"{float(g[i]):.7g}, expected {float(w[i]):.7g}; max error {worst:.3g}{hint}",
                                    detail={"count": int(idx.size), "first": i, "got": float(g[i]),
                                            "expected": float(w[i]), "lane_pattern_32": bool(hint)}))
    return worst


# --- limits ------------------------------------------------------------------------------------------------

def reachable(decoded, entry: int = 0) -> list:
    """The decoded instructions control can reach from `entry`, by the spec's branch flags (IsBranch,
    IsConditionalBranch, IsIndirectBranch, IsProgramTerminator): data words in the code (a `.long` table after
    an s_branch) are not instructions the kernel runs. An indirect branch makes every instruction count."""
    by_pc = {d.pc: d for d in decoded}
    seen: set[int] = set()
    todo = [entry]
    while todo:
        pc = todo.pop()
        d = by_pc.get(pc)
        if d is None or pc in seen:
            continue
        seen.add(pc)
        flags = d.spec_inst.flags if d.spec_inst is not None else {}
        if d.inst is None or flags.get("IsProgramTerminator"):
            continue
        if flags.get("IsIndirectBranch"):
            return [x for x in decoded if x.inst is not None]
        if flags.get("IsBranch"):
            imm = next((op.value for op in d.inst.operands if hasattr(op, "value")), 0)
            todo.append(pc + d.size + 4 * (int(imm) - (1 << 16) if int(imm) & 0x8000 else int(imm)))
            if not flags.get("IsConditionalBranch"):
                continue
        todo.append(pc + d.size)
    return [by_pc[pc] for pc in sorted(seen) if by_pc[pc].inst is not None]


def wave64_findings(decoded) -> list[Finding]:
    """Warnings for code written as if a wave had 32 lanes (CUDA's warp, RDNA's wave32), which gfx9 hardware does
    not have: a 32-bit write of half of EXEC as its first destination (`s_mov_b32 exec_hi, 0` switches off lanes
    32..63), or a lane id from v_mbcnt_lo alone (it counts lanes 0..31; v_mbcnt_hi adds the upper half). Warnings:
    a kernel may mean it; the outputs decide."""
    from jitgemm.isa.instruction import Reg

    out, mbcnt_lo, mbcnt_hi = [], None, False
    for d in decoded:
        ops = d.inst.operands
        first = ops[0] if ops else None
        if isinstance(first, Reg) and first.kind in ("exec_lo", "exec_hi") and d.name.endswith("_B32"):
            out.append(Finding("wave64", f"{d.text} writes only {first.kind}: half of a 64-lane wave's EXEC (a "
                               "32-lane assumption?)", "warning", pc=d.pc))
        if d.name == "V_MBCNT_LO_U32_B32" and mbcnt_lo is None:
            mbcnt_lo = d
        mbcnt_hi |= d.name == "V_MBCNT_HI_U32_B32"
    if mbcnt_lo is not None and not mbcnt_hi:
        out.append(Finding("wave64", f"{mbcnt_lo.text} without v_mbcnt_hi_u32_b32: a lane id that counts lanes 0..31 "
                           "only (gfx9 waves have 64)", "warning", pc=mbcnt_lo.pc))
    return out


def limit_findings(code_object: bytes, kernel: str | None, case: Case) -> tuple[list[Finding], dict[str, Any]]:
    """The target's limits against what the metadata and descriptor declare and what the code names."""
    from jitgemm.emu.engine import _default_spec, _load_code_object, _pick_kernel, program_for
    from jitgemm.isa.instruction import Reg, SrcMods
    from jitgemm.isa.spec.targets import target_of_spec, target_profile

    co = _load_code_object(code_object)
    k = _pick_kernel(co, kernel)
    spec = _default_spec(co)
    target = target_of_spec(spec) or "gfx942"
    prof = target_profile(target)
    desc, meta = k.descriptor, k.metadata
    found: list[Finding] = []
    lds_static = desc.group_segment_fixed_size
    lds_meta = int(meta.get(".group_segment_fixed_size", lds_static) or 0)
    lds_total = max(lds_static, lds_meta) + case.lds_bytes
    if lds_total > prof.lds_bytes_per_workgroup:
        found.append(Finding("limits", f"LDS: {max(lds_static, lds_meta)} static + {case.lds_bytes} dynamic = "
                             f"{lds_total} bytes exceed the {prof.lds_bytes_per_workgroup} bytes of a {target} "
                             f"workgroup (by {lds_total - prof.lds_bytes_per_workgroup}); hardware would not launch "
                             "it, or the kernel would read another workgroup's LDS",
                             detail={"lds": lds_total, "limit": prof.lds_bytes_per_workgroup}))
    if lds_meta != lds_static:
        found.append(Finding("limits", f"metadata .group_segment_fixed_size {lds_meta} differs from the kernel "
                             f"descriptor's {lds_static}"))
    allocated = (desc.granulated_workitem_vgpr_count + 1) * int(prof.get("vgpr_granule", 8))
    prog = program_for(k, spec)
    top = {"v": -1, "a": -1, "s": -1}
    code = reachable(prog.decoded, 256 if desc.kernarg_preload_spec_length else 0)
    found += wave64_findings(code)
    for d in code:
        for op in d.inst.operands:
            op = op.operand if isinstance(op, SrcMods) else op
            if isinstance(op, Reg) and op.kind in top:
                top[op.kind] = max(top[op.kind], op.index + op.count - 1)
    scan_v, scan_a, max_s = max(1, top["v"] + 1), top["a"] + 1, top["s"]
    accum = desc.accum_offset_registers if scan_a else allocated
    used = {"vgprs": scan_v, "agprs": scan_a, "sgprs": max_s + 1, "vgprs_allocated": allocated,
            "lds_bytes": lds_total, "scratch_bytes_per_lane": desc.private_segment_fixed_size}
    if scan_v > min(accum, prof.arch_vgprs):
        found.append(Finding("limits", f"VGPRs: the code names v{scan_v - 1} but the descriptor allocates "
                             f"{min(accum, allocated)} architected VGPRs (.amdhsa_next_free_vgpr / accum_offset); on "
                             "hardware those registers belong to another wave"))
    if scan_a and accum + scan_a > allocated:
        found.append(Finding("limits", f"AGPRs: the code names a{scan_a - 1}; with accum_offset {accum} that needs "
                             f"{accum + scan_a} unified VGPRs, the descriptor allocates {allocated}"))
    if allocated > int(prof.get("vgprs", 512)):
        found.append(Finding("limits", f"VGPRs: {allocated} allocated exceed the {prof.get('vgprs')} of {target}"))
    if max_s + 1 > prof.sgprs:
        found.append(Finding("limits", f"SGPRs: the code names s{max_s} beyond the {prof.sgprs} of {target}"))
    meta_s = meta.get(".sgpr_count")
    if isinstance(meta_s, int) and max_s + 1 > meta_s:
        found.append(Finding("limits", f"SGPRs: the code names s{max_s} but the metadata declares .sgpr_count "
                             f"{meta_s}", "warning"))
    meta_v = meta.get(".vgpr_count")
    if isinstance(meta_v, int) and scan_v > meta_v:
        found.append(Finding("limits", f"VGPRs: the code names v{scan_v - 1} but the metadata declares .vgpr_count "
                             f"{meta_v}", "warning"))
    if desc.private_segment_fixed_size:
        found.append(Finding("limits", f"scratch: {desc.private_segment_fixed_size} bytes per lane of private memory "
                             "(spills are slow; the emulator bounds every access to it)", "warning"))
    return found, {"target": target, **used}


# --- the battery ---------------------------------------------------------------------------------------------

@dataclass
class Report:
    """The battery's verdict: ok when no finding has severity error."""

    findings: list[Finding]
    max_error: float | None
    resources: dict[str, Any]
    runs: int

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [f.to_json() for f in self.findings], "max_error": self.max_error,
                "resources": self.resources, "runs": self.runs}


def battery(code_object: bytes, kernel: str | None, case: Case) -> Report:
    """Run every check of the module docstring; stop at the first run that cannot complete (its finding says
    why). Strict mode throughout; the determinism runs compare raw output bytes."""
    findings, resources = limit_findings(code_object, kernel, case)
    runs = 0
    hidden_input, schedule_seeds = hidden_seeds(code_object)
    first = make_inputs(case, VISIBLE_INPUT_SEED)
    findings += constant_inputs(case, first)
    if any(f.severity == "error" for f in findings):
        return Report(findings, None, resources, runs)
    base = run_case(code_object, kernel, case, seed=VISIBLE_INPUT_SEED)
    runs += 1
    findings += base.findings
    if not base.outputs:
        return Report(findings, None, resources, runs)
    for sched in schedule_seeds:
        other = run_case(code_object, kernel, case, seed=VISIBLE_INPUT_SEED, schedule="random", schedule_seed=sched,
                         compare=False)
        runs += 1
        if not other.outputs:
            findings += [Finding(f.check, f"schedule random seed {sched}: {f.message}", f.severity, f.pc, f.detail)
                         for f in other.findings]
            break
        for a in case.outputs:
            x, y = base.outputs[a.name], other.outputs[a.name]
            elems = np.flatnonzero((x.reshape(-1).view(np.uint8).reshape(x.size, -1)
                                    != y.reshape(-1).view(np.uint8).reshape(y.size, -1)).any(axis=1))
            if elems.size:
                findings.append(Finding("determinism", f"output {a.name}: schedule random seed {sched} gives "
                                        f"different bits than lockstep in {elems.size} element(s), first at flat "
                                        f"index {int(elems[0])}: the result depends on timing (a race)",
                                        detail={"seed": sched, "count": int(elems.size), "first": int(elems[0])}))
                break
        if any(f.check == "determinism" for f in findings):
            break
    again = run_case(code_object, kernel, case, seed=hidden_input)
    runs += 1
    if again.findings and not any(f.severity == "error" for f in base.findings):
        for f in again.findings:
            if f.check == "mismatch":
                f.check = "input_dependence"
                f.message = ("right on one random input set, wrong on another (hard-coded or input-independent "
                             f"output?): {f.message}")
            findings.append(f)
    errors = [e for e in (base.max_error, again.max_error) if e is not None]
    return Report(_dedupe(findings), max(errors) if errors else None, resources, runs)


def gemm_battery(code_object: bytes, contract, cases: int = 3, seed: int = 0) -> list[Finding]:
    """The battery for a GEMM kernel described by its jitgemm contract (what `submit` ships): the target's limits;
    then random legal problems drawn from the contract (jitgemm.qualify.draw_problems) in strict mode with the
    output and the undefined state poisoned, against jitgemm.reference; and on the first problem, three random
    schedules that must reproduce the lockstep output bit for bit."""
    import random

    from .api import MatmulError, launch, prepare
    from .emu import EmulatorError
    from .qualify import draw_problems, problem_text
    from .reference import Mismatch, check, operands, reference

    findings = [f for f in limit_findings(code_object, contract.kernel, Case([]))[0] if f.severity == "error"]
    if findings:
        return findings
    problems = draw_problems(contract, cases, random.Random(seed))
    if not problems:
        return [Finding("qualify", "its contract admits no problem that could be drawn")]
    for i, problem in enumerate(problems):
        a, b, c, bias = operands(problem, seed + i)
        schedules = [{"poison": True}]
        if i == 0:
            schedules += [{"poison": True, "schedule": "random", "seed": s} for s in hidden_seeds(code_object)[1]]
        first = None
        for opts in schedules:
            call = prepare(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                           activation=problem.activation)
            call.d.view(np.uint8)[...] = 0xFF
            where = f"{problem_text(problem)}" + (f", schedule random seed {opts['seed']}" if "seed" in opts else "")
            try:
                d = launch(call, code_object, contract.kernel, contract, strict=True, emu_options=opts)
                if first is None:
                    check(problem, d, reference(problem, a, b, c, bias))
                    first = d.copy()
                elif not np.array_equal(first.view(np.uint8), d.view(np.uint8)):
                    count = int((first.reshape(-1).view(np.uint8).reshape(first.size, -1)
                                 != d.reshape(-1).view(np.uint8).reshape(d.size, -1)).any(axis=1).sum())
                    return [Finding("determinism", f"{where}: {count} output element(s) differ in their bits from "
                                    "the lockstep run: the result depends on timing (a race)")]
            except Mismatch as exc:
                return [Finding("mismatch", f"{where}: {exc}")]
            except (EmulatorError, MatmulError) as exc:
                kind = {"StrictViolation": "strict", "MemoryFault": "out_of_bounds"}.get(type(exc).__name__, "emulator")
                return [Finding(kind, f"{where}: {exc}", pc=getattr(exc, "pc", None))]
    return []


def _dedupe(findings: Sequence[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        key = (f.check, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
