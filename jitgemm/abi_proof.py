"""Proof that a kernel's binary matches the argument ABI its contract declares, by what it does: run it in the
emulator with its kernarg reads traced (jitgemm.emu.kernarg_trace) and compare every read with the contract.

hipBLASLt's GFA validator checks that metadata fields are present; its design note says that "is not a complete
proof that a binary matches its declared argument ABI" (projects/hipblaslt/jit-design/kfa-producer-convergence.md
in ROCm/rocm-libraries). The findings here are that proof's failures, each naming the argument and the PC:

- `undeclared`: a load reads kernarg bytes no declared argument (and no hidden argument of the metadata) covers;
  `error` when the load covers no declared argument at all, `warning` when it is a wide load that also covers
  declared ones (compilers load several arguments at once across the gaps between them);
- `never_read`: a declared argument no load reads (`error` for a value the problem gives, e.g. ldb: the kernel
  ignores it; `warning` for a constant or padding);
- `width`: a load covers part of an argument only (a 64-bit pointer read as one dword, a 32-bit value read from
  its middle);
- `short_segment`: a load reads past the end of the kernarg segment the contract and metadata declare.

Kernarg bytes the kernel descriptor preloads into SGPRs (gfx950's kernarg preload) count as read, at the
pseudo-PC -1 ("the kernarg preload").

Reads depend on the path taken (beta != 0 reads C), so `prove` runs every problem it is given (by default two
drawn from the contract's legal region, one with alpha/beta/C when the contract takes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .contract import Contract
from .emu.kernarg_trace import KernargRead, kernarg_reads


@dataclass(frozen=True)
class Finding:
    kind: str          # undeclared | never_read | width | short_segment
    severity: str      # error | warning
    argument: str      # the contract argument concerned (or the nearest one / "(none)")
    pc: int | None     # the load's PC (byte offset in the kernel's code), None for never_read
    message: str

    def __str__(self) -> str:
        where = "" if self.pc is None else " at the kernarg preload" if self.pc < 0 else f" at PC 0x{self.pc:x}"
        return f"{self.severity}: {self.kind}: {self.argument}{where}: {self.message}"


@dataclass
class Proof:
    kernel: str
    reads: list[KernargRead]
    findings: list[Finding]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def summary(self) -> str:
        errors = sum(f.severity == "error" for f in self.findings)
        warnings = len(self.findings) - errors
        return (f"{self.kernel}: {len(self.reads)} kernarg load(s) traced on {len(self.problems)} problem(s); "
                f"{errors} error(s), {warnings} warning(s)")


def _hidden_spans(metadata: Mapping[str, Any] | None) -> list[tuple[int, int, str]]:
    out = []
    for arg in (metadata or {}).get(".args", []) or []:
        kind = str(arg.get(".value_kind", ""))
        if kind.startswith("hidden_"):
            out.append((int(arg[".offset"]), int(arg[".offset"]) + int(arg[".size"]), kind))
    return out


def compare(contract: Contract, reads: Iterable[KernargRead], metadata: Mapping[str, Any] | None = None,
            ) -> list[Finding]:
    """The findings of a set of traced reads against a contract (and the code object's metadata, whose hidden
    arguments a kernel may read)."""
    reads = sorted(set(reads), key=lambda r: (r.offset, r.pc, r.width))
    args = sorted(contract.args, key=lambda a: a["offset"])
    hidden = _hidden_spans(metadata)
    declared_end = max([contract.data["abi"]["kernarg_size"]] + [e for _s, e, _k in hidden])
    meta_size = int((metadata or {}).get(".kernarg_segment_size", 0) or 0)
    segment_end = max(declared_end, meta_size)
    findings: list[Finding] = []
    read_by: dict[str, list[KernargRead]] = {a["name"]: [] for a in args}

    def nearest(offset: int) -> str:
        best = min(args, key=lambda a: min(abs(offset - a["offset"]), abs(offset - a["offset"] - a["size"] + 1)),
                   default=None)
        return f"near {best['name']} (offset {best['offset']})" if best else "(none)"

    for r in reads:
        lo, hi = r.offset, r.offset + r.width
        if hi > segment_end:
            findings.append(Finding("short_segment", "error", nearest(lo), r.pc,
                                    f"{r.text} reads bytes {lo}..{hi - 1}, past the end of the {segment_end}-byte "
                                    f"kernarg segment (contract abi.kernarg_size {contract.data['abi']['kernarg_size']}"
                                    f", metadata {meta_size or 'none'})"))
        covered = [False] * r.width
        touched = []
        for a in args:
            a_lo, a_hi = a["offset"], a["offset"] + a["size"]
            if a_hi <= lo or a_lo >= hi:
                continue
            touched.append(a)
            for byte in range(max(lo, a_lo), min(hi, a_hi)):
                covered[byte - lo] = True
            read_by[a["name"]].append(r)
            if a_lo < lo or a_hi > hi:
                findings.append(Finding("width", "error", a["name"], r.pc,
                                        f"{r.text} reads bytes {lo}..{hi - 1} ({r.width} bytes), which cover only part "
                                        f"of {a['name']} (role {a['role']}, {a.get('type', 'i32')}, bytes "
                                        f"{a_lo}..{a_hi - 1})"))
        for start, end, _kind in hidden:
            for byte in range(max(lo, start), min(hi, end)):
                covered[byte - lo] = True
        loose = [lo + i for i, c in enumerate(covered) if not c and lo + i < segment_end]
        if loose:
            real = [a for a in touched if a["role"] != "unused"]
            severity = "warning" if real else "error"
            span = f"{loose[0]}..{loose[-1]}" if len(loose) > 1 else str(loose[0])
            findings.append(Finding("undeclared", severity, nearest(loose[0]), r.pc,
                                    f"{r.text} reads byte(s) {span} that no declared argument covers"
                                    + (" (a wide load across arguments: " + ", ".join(a["name"] for a in real) + ")"
                                       if real else "")))
    leg = contract.data.get("legality", {})
    batched = bool(leg.get("batch"))
    one_row = leg.get("max", {}).get("m") == 1     # D (and C) one row: their leading dimension changes nothing
    for a in args:
        if not read_by[a["name"]]:
            # a batch stride of a kernel that takes one batch, the leading dimension of a one-row C/D, a constant or
            # padding: the value changes nothing
            value_role = a["role"] not in ("const", "unused") and (batched or not a["role"].startswith("stride_")) \
                and not (one_row and a["role"] in ("ldc", "ldd"))
            findings.append(Finding("never_read", "error" if value_role else "warning", a["name"], None,
                                    f"declared (role {a['role']}, bytes {a['offset']}..{a['offset'] + a['size'] - 1})"
                                    f" but no load reads it" + (": the kernel ignores the value the problem gives"
                                                                  if value_role else "")))
    return findings


def trace(contract: Contract, code_object: bytes, kernel: str, problems: Sequence | None = None, *,
          seed: int = 0, strict: bool | str = False) -> tuple[list[KernargRead], list[str]]:
    """Run the kernel on `problems` (default: drawn from its contract) with its kernarg reads traced."""
    import random

    from .api import launch
    from .qualify import draw_problems, problem_call, problem_text

    if problems is None:
        problems = draw_problems(contract, 2, random.Random(seed), max_size=96)
    if not problems:
        raise ValueError(f"{contract.source}: its contract admits no problem that could be drawn; pass problems=")
    texts = []
    with kernarg_reads(reuse=True) as reads:
        for i, problem in enumerate(problems):
            call, _want = problem_call(problem, seed + i)
            launch(call, code_object, kernel, contract, backend="emu", strict=strict)
            texts.append(problem_text(problem))
    return list(reads), texts


def prove(contract: Contract, code_object: bytes, kernel: str | None = None, problems: Sequence | None = None, *,
          seed: int = 0) -> Proof:
    """Trace the kernel's kernarg reads on `problems` and compare them with its contract (see the module)."""
    from jitgemm.codegen import codeobj

    from .emu import EmulatorError

    name = kernel or contract.kernel
    meta = codeobj.read(code_object).kernel(name).metadata
    failure = None
    with kernarg_reads() as reads:
        try:
            _reads, texts = trace(contract, code_object, name, problems, seed=seed)
        except EmulatorError as exc:     # e.g. a load past the kernarg segment faults: the reads so far still count
            failure, texts = str(exc).split("\n")[0], []
    findings = compare(contract, reads, meta)
    if failure:    # the loads after the fault never ran: "never read" says nothing then
        findings = [f for f in findings if f.kind != "never_read"]
        findings.append(Finding("run_failed", "error", "(none)", None, failure))
    return Proof(name, list(reads), findings, texts)
