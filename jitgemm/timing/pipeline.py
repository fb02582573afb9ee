"""A static pipeline model of one wave's GEMM main loop: how many passes an iteration of the loop takes, and
so how many clocks each MFMA costs, from the kernel's own instructions and the target profile's rates.

What an instruction is comes from the spec, never from its spelling: the MFMA functional subgroup, the
encoding for LDS (`ENC_DS`) and scalar memory, the VMEM group for global/buffer memory, VALU and SALU groups;
which wait counter a memory instruction counts on is the profile's `wait_counters` (as the emitter reads it,
`isa.hazards.EmitFacts`). Rates are the profile's `pipeline` section (with its sources there): one
instruction issues per pass (a pass is 4 clocks, the time a 16-lane SIMD takes to issue a wave64
instruction); an MFMA holds the matrix pipe for its passes, the profile's `mfma.passes` table (the one source
of MFMA timing, which strict emulation's hazard checks read too; multi-block and sparse MFMAs do not run at
the peak matrix rate, so passes are a table checked against llvm-mca, not a division); LDS, vector-memory and
scalar-memory results arrive after the profile's latencies, and `s_waitcnt` stalls issue until the counters
it names have dropped to its values.

The loop is issued several times in a row, in order (the model has one wave per SIMD, so `s_barrier`
costs one issue slot: the other waves of the workgroup run the same schedule); the steady-state iteration
is the difference between the last two. Like llvm-mca's gfx942 model, this is issue and latency only: no
memory bandwidth, no LDS bank conflicts, no other waves' traffic. `bench/bench_sweep.py` compares it with
`llvm-mca-22 -mcpu=gfx942` on every variant of a sweep.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from jitgemm.isa.disasm.decoder import Decoded, decode
from jitgemm.isa.hazards import emit_facts
from jitgemm.isa.instruction import Counters
from jitgemm.isa.operand_syntax import split_suffix
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

CLASSES = ("mfma", "valu", "salu", "lds", "vmem", "smem", "branch", "wait")


class PipelineModelError(ValueError):
    """The kernel has no loop the model can time, or the profile lacks a rate; the message says which."""


@dataclass(frozen=True)
class Rates:
    """The profile's `pipeline` section, resolved: issue passes per class, result latencies in passes,
    clocks per pass and the MFMA passes per instruction name (the profile's `mfma.passes`)."""

    clocks_per_pass: int
    issue: dict[str, int]
    latency: dict[str, int]
    mfma_passes: dict[str, int]


@dataclass
class LoopModel:
    """The main loop of one wave, statically timed."""

    instructions: list[str]                 # the loop body as text (LLVM syntax), for llvm-mca
    classes: dict[str, int]                 # instructions per class
    mfmas: int
    passes_per_iteration: float
    clocks_per_pass: int
    mfma_passes: int                        # passes the matrix pipe is busy per iteration
    bound: str                              # "mfma" (matrix pipe), "issue" (one instruction per pass) or "wait"
    stalls: dict[str, float] = field(default_factory=dict)   # passes lost per iteration, per counter

    @property
    def cycles_per_iteration(self) -> float:
        return self.passes_per_iteration * self.clocks_per_pass

    @property
    def cycles_per_mfma(self) -> float:
        return self.cycles_per_iteration / self.mfmas if self.mfmas else float("nan")

    @property
    def mfma_utilisation(self) -> float:
        """Share of the iteration the matrix pipe is busy."""
        return self.mfma_passes / self.passes_per_iteration if self.passes_per_iteration else 0.0


def rates(spec: Spec, profile: TargetProfile) -> Rates:
    """The model's rates for a target (PipelineModelError naming the missing profile key)."""
    pipe = profile.get("pipeline") or {}
    where = f"specs/targets/{profile.target}.yaml"
    for key in ("clocks_per_pass", "simds_per_cu", "issue_passes", "latency_passes"):
        if key not in pipe:
            raise PipelineModelError(f"{where}: pipeline.{key} is missing; the static model needs it")
    passes = profile.mfma_passes
    if not passes:
        raise PipelineModelError(f"{where}: mfma.passes is missing; the static model needs each MFMA's passes")
    clocks = int(pipe["clocks_per_pass"])
    return Rates(clocks, {k: int(v) for k, v in pipe["issue_passes"].items()},
                 {k: int(v) for k, v in pipe["latency_passes"].items()}, passes)


_CLASSES: dict[tuple[int, int], tuple] = {}     # (id(spec), id(instruction)) -> (spec, instruction, encoding, class)


def classify(decoded: Decoded, spec: Spec) -> str:
    """The pipeline class of a decoded instruction, from the spec's functional group, subgroup and encoding
    (kept per instruction object: a kernel repeats its instructions, and a trace classifies each several times)."""
    key = (id(spec), id(decoded.instruction))
    hit = _CLASSES.get(key)
    if hit is not None and hit[0] is spec and hit[1] is decoded.instruction and hit[2] == decoded.encoding:
        return hit[3]
    cls = _classify(decoded, spec)
    if len(_CLASSES) > 1 << 16:
        _CLASSES.clear()
    _CLASSES[key] = (spec, decoded.instruction, decoded.encoding, cls)
    return cls


def _classify(decoded: Decoded, spec: Spec) -> str:
    inst = decoded.instruction
    if inst is None:
        return "salu"
    if any(isinstance(op, Counters) for op in inst.operands):
        return "wait"
    info = spec_instruction(inst.name, spec)
    if info is None:
        return "salu"
    if "MFMA" in info.functional_subgroups:
        return "mfma"
    encoding = decoded.encoding or ""
    if encoding == "ENC_DS" or "DATA_SHARE" in info.functional_subgroups:
        return "lds"
    if info.functional_group == "SMEM" or encoding == "ENC_SMEM":
        return "smem"
    if info.functional_group == "VMEM":
        return "vmem"
    if info.flags.get("IsBranch"):
        return "branch"
    if info.functional_group == "VALU":
        return "valu"
    return "salu"


_INFOS: dict[tuple[int, str], tuple] = {}


def spec_instruction(mnemonic: str, spec: Spec):
    """The spec's instruction for an LLVM mnemonic (encoding suffixes such as `_e32` removed)."""
    key = (id(spec), mnemonic)
    hit = _INFOS.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    info = spec.find_instruction(mnemonic) or spec.find_instruction(split_suffix(mnemonic)[0])
    if len(_INFOS) > 1 << 14:
        _INFOS.clear()
    _INFOS[key] = (spec, info)
    return info


def mfma_passes(name: str, table: dict[str, int]) -> int:
    """Passes of an MFMA by spec name; the `_1K` spellings of some releases share the plain name's entry."""
    return table.get(name) or table.get(name.replace("_1K", "")) or 0


def main_loop(code: bytes, spec: Spec) -> list[Decoded]:
    """The body of the backward branch whose body holds the most MFMAs (the branch itself left out)."""
    decoded = decode(code, spec)
    best: list[Decoded] = []
    best_mfmas = 0
    for i, d in enumerate(decoded):
        if d.target is None or d.target >= d.offset:
            continue
        body = [x for x in decoded[:i] if x.offset >= d.target]
        mfmas = sum(classify(x, spec) == "mfma" for x in body)
        if mfmas > best_mfmas:
            best, best_mfmas = body, mfmas
    return best


def model_loop(body: list[Decoded], spec: Spec, profile: TargetProfile, iterations: int = 6,
               latency: dict[str, int] | None = None, text: bool = True) -> LoopModel:
    """Issue the loop `iterations` times in order and time the steady state (see the module docstring);
    `latency` overrides the profile's result latencies per class (the timing model's fitted memory latency).
    With `iterations=1` it times straight-line code (a prologue or epilogue) issued once. `text=False` leaves
    `LoopModel.instructions` (the body as text, for llvm-mca) empty: the timing model's trace reads no text."""
    from jitgemm.isa.disasm.printer import format_instruction

    if not body:
        raise PipelineModelError("the kernel has no loop with an MFMA (no backward branch around one)")
    r = rates(spec, profile)
    if latency:
        r = Rates(r.clocks_per_pass, r.issue, {**r.latency, **latency}, r.mfma_passes)
    facts = emit_facts(spec, profile)
    items = []
    classes: dict[str, int] = {}
    mfma_busy = 0
    for d in body:
        cls = classify(d, spec)
        classes[cls] = classes.get(cls, 0) + 1
        name = d.instruction.name if d.instruction else ""
        info = spec_instruction(name, spec) if name else None
        passes = 0
        if cls == "mfma":
            passes = mfma_passes(info.name if info else name, r.mfma_passes)
            if not passes:
                raise PipelineModelError(f"{name}: no entry in the profile's mfma.passes")
            mfma_busy += passes
        waits = {k: v for op in d.instruction.operands if isinstance(op, Counters) for k, v in op.parts}
        counted = facts.counters_of(info) if info is not None and cls in ("lds", "vmem", "smem") else ()
        items.append((cls, passes, waits, counted, r.latency.get(cls, 1)))
    t = 0.0
    matrix_free = 0.0
    pending: dict[str, deque] = {}
    ends = []
    stalls: dict[str, float] = {}
    for it in range(iterations):
        for cls, passes, waits, counted, latency in items:
            start = t
            if cls == "wait":
                for counter, allowed in waits.items():
                    queue = pending.get(counter, deque())
                    while len(queue) > allowed:
                        done = queue.popleft()
                        if done > start:
                            if it == iterations - 1:
                                stalls[counter] = stalls.get(counter, 0.0) + done - start
                            start = done
            elif cls == "mfma":
                start = max(start, matrix_free)
                matrix_free = start + passes
            for counter in counted:
                queue = pending.setdefault(counter, deque())
                queue.append(max(start + latency, queue[-1] if queue else 0.0))   # counters retire in order
            t = start + r.issue.get(cls, 1)
        ends.append(max(t, matrix_free))
    per_iteration = ends[-1] - ends[-2] if len(ends) > 1 else ends[-1]
    issue = sum(r.issue.get(c, 1) * n for c, n in classes.items())
    bound = "mfma" if mfma_busy >= per_iteration - 1e-9 else ("issue" if issue >= per_iteration - 1e-9 else "wait")
    return LoopModel([format_instruction(d.instruction) for d in body if d.instruction is not None and text],
                     classes,
                     classes.get("mfma", 0), per_iteration, r.clocks_per_pass, mfma_busy, bound, stalls)


def model_kernel(code: bytes, spec: Spec, profile: TargetProfile) -> LoopModel:
    """The static model of a kernel's main loop (its `.text` bytes)."""
    return model_loop(main_loop(code, spec), spec, profile)


# --- the outside check: llvm-mca ----------------------------------------------------------------------------
@dataclass
class McaReport:
    """What `llvm-mca -mcpu=<target>` says about a loop body: cycles per iteration and, per instruction, the
    resource it used with its cycles (e.g. {"HWXDL": 8.0})."""

    cycles_per_iteration: float
    resources: list[dict[str, float]]
    skipped: int                      # instructions llvm-mca's assembler refused (left out)


def llvm_mca(lines: list[str], tool: str, mcpu: str = "gfx942", iterations: int = 100) -> McaReport:
    """Run llvm-mca on loop-body text (what `LoopModel.instructions` holds); PipelineModelError when it fails."""
    import re
    import subprocess

    cmd = [tool, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", f"-iterations={iterations}", "-instruction-info=false"]
    text = "\n".join(lines) + "\n"
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
    skipped = 0
    if proc.returncode:   # e.g. a constant-bus use LLVM's assembler refuses: leave the line out, say how many
        skipped = len(re.findall(r"^<stdin>:\d+:\d+: error", proc.stderr, re.M))
        proc = subprocess.run(cmd + ["-skip-unsupported-instructions=parse-failure"], input=text, capture_output=True,
                              text=True)
    total = re.search(r"Total Cycles:\s+(\d+)", proc.stdout)
    if proc.returncode or not total:
        raise PipelineModelError(f"llvm-mca failed: {proc.stderr.strip()[:300]}")
    names = dict(re.findall(r"^\[(\d+)\]\s+-\s+(\w+)$", proc.stdout, re.M))
    order = [names[str(i)] for i in range(len(names))]
    per_inst = []
    table = proc.stdout.split("Resource pressure by instruction:", 1)[1].splitlines()[2:]
    for row in table:
        cells = row.split(None, len(order))
        if len(cells) <= len(order):
            break
        per_inst.append({order[i]: float(c) for i, c in enumerate(cells[:len(order)]) if c != "-"})
    return McaReport(int(total.group(1)) / iterations, per_inst, skipped)
