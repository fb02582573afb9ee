"""The per-kernel trace the timing model extrapolates: what one wave of a workgroup issues before its main loop,
in one iteration of it, and after it -- instructions by class, MFMA passes and flops, bytes moved by vector memory
and LDS -- and how long each region takes one wave issued alone (the pipeline model).

The trace depends on the code only, so it is computed once per code object (keyed by the sha256 of its `.text`)
and reused for every problem shape: predicting many shapes of one kernel costs a dictionary lookup each.

Regions come from the code's control flow: the main loop is the backward branch whose body holds the most MFMAs
(`pipeline.main_loop`); the prologue is the code before its target, the epilogue the code after the branch. Code
on paths a launch does not take (edge-tile variants, a split-K store beside a plain one) is counted as if taken:
the static trace over-counts epilogues with several paths (the module docstring of `jitgemm.timing` says so).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field

from jitgemm.isa.disasm.decoder import Decoded, decode
from jitgemm.isa.spec.mfma import WAVE64 as WAVE
from jitgemm.isa.spec.model import Spec
from jitgemm.isa.spec.targets import TargetProfile

from .pipeline import CLASSES, PipelineModelError, classify, mfma_passes, model_loop, rates, spec_instruction

_SHAPE = re.compile(r"(\d+)X(\d+)X(\d+)(?:_(\d+)B)?")
_WIDTH = (
    (re.compile(r"DWORDX(\d)"), lambda m: 4 * int(m.group(1))),
    (re.compile(r"_B(\d+)$|_B(\d+)_|_[IUF](\d+)$"), lambda m: int(next(g for g in m.groups() if g)) // 8),
    (re.compile(r"DWORD"), lambda m: 4),
    (re.compile(r"SHORT|D16"), lambda m: 2),
    (re.compile(r"BYTE"), lambda m: 1),
)


def lane_bytes(name: str) -> int:
    """Bytes one lane moves by a memory instruction, from its spec name (DWORDX4 16, B128 16, UBYTE 1, ...)."""
    for pattern, width in _WIDTH:
        m = pattern.search(name)
        if m:
            return width(m)
    return 4


def mfma_flops(name: str) -> int:
    """Flops of one MFMA (2 x M x N x K x blocks) from its spec name (V_MFMA_F32_32X32X8_BF16: 16384)."""
    m = _SHAPE.search(name)
    if not m:
        return 0
    blocks = int(m.group(4) or 1)
    return 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3)) * blocks


@dataclass(frozen=True)
class Region:
    """One region of a wave's code, as issued once (the loop: one iteration)."""

    instructions: dict[str, int]           # by pipeline class
    mfma_passes: int                       # passes the matrix pipe is busy
    mfma_flops: int                        # flops of its MFMAs (one wave)
    vmem_load_bytes: int                   # bytes one wave reads from global memory (all lanes)
    vmem_store_bytes: int                  # bytes one wave writes or atomically updates in global memory
    lds_bytes: int                         # bytes one wave reads or writes in LDS
    passes: float                          # passes one wave alone takes (issue, MFMA pipe, waits)
    stalls: dict[str, float] = field(default_factory=dict)   # of them, passes waiting on each counter

    @property
    def total(self) -> int:
        return sum(self.instructions.values())


@dataclass(frozen=True)
class KernelTrace:
    """The three regions of one kernel's code (see the module docstring)."""

    code_sha256: str
    prologue: Region
    loop: Region
    epilogue: Region
    clocks_per_pass: int
    bound: str                             # the loop's limit for one wave: "mfma", "issue" or "wait"


def _region(body: list[Decoded], spec: Spec, profile: TargetProfile, iterations: int,
            latency: dict[str, int]) -> Region:
    classes = dict.fromkeys(CLASSES, 0)
    passes_mfma = flops = loads = stores = lds = 0
    table = rates(spec, profile).mfma_passes
    for d in body:
        cls = classify(d, spec)
        classes[cls] += 1
        if d.instruction is None:
            continue
        info = spec_instruction(d.instruction.name, spec)
        name = info.name if info is not None else d.instruction.name.upper()
        if cls == "mfma":
            passes_mfma += mfma_passes(name, table)
            flops += mfma_flops(name)
        elif cls in ("vmem", "lds"):
            size = lane_bytes(name) * WAVE
            if cls == "lds":
                lds += size
            elif any(w in name for w in ("STORE", "ATOMIC")):
                stores += size
            elif "LOAD" in name:
                loads += size
                if cls == "vmem" and "LDS" in name.split("_"):   # buffer_load ... lds: lands in LDS as well
                    lds += size
    if not body:
        return Region(classes, 0, 0, 0, 0, 0, 0.0)
    try:
        timed = model_loop(body, spec, profile, iterations=iterations, latency=latency, text=False)
        took, stalls = timed.passes_per_iteration, timed.stalls
    except PipelineModelError:
        # straight-line code without an MFMA table entry: one issue slot per instruction
        took, stalls = float(len(body)), {}
    return Region({k: v for k, v in classes.items() if v}, passes_mfma, flops, loads, stores, lds, took, stalls)


def instructions(code: bytes, spec: Spec) -> list[Decoded]:
    """The kernel's instructions as the decoder lists them: from the generator's own instruction objects when this
    process lowered the kernel (`jitgemm.kernel.lowered_items`: no decoding, whose index alone cost a fully cold
    compile ~0.5 s, issue 31), else decoded from the bytes. tests/jitgemm/test_trace_items.py checks both give
    the same trace."""
    from jitgemm.kernel import lowered_items

    found = lowered_items(code)
    if found is None:
        return decode(code, spec)
    decoded = from_items(code, *found, spec)
    return decode(code, spec) if decoded is None else decoded


def from_items(code: bytes, items: tuple, offsets: tuple[int, ...], spec: Spec) -> list[Decoded] | None:
    """`Decoded` records of encoded instruction items (what `decode` gives, for the fields the trace reads:
    offset, size, bytes, instruction, encoding, branch target); None when the items hold data or alignment
    (decoded as before)."""
    from jitgemm.isa.instruction import AsmInstruction, Label, LabelDef
    from jitgemm.isa.spec.forms import forms_of

    forms = forms_of(spec)
    labels = {item.name: offsets[i] for i, item in enumerate(items) if type(item) is LabelDef}
    first: dict = {}
    out = []
    end = len(code)
    for i, item in enumerate(items):
        kind = type(item)
        if kind is LabelDef:
            continue
        if kind is not AsmInstruction:
            return None
        start = offsets[i]
        stop = offsets[i + 1] if i + 1 < len(offsets) else end
        form = first.get(id(item))     # the emitter hands out one object per repeated instruction
        if form is None:    # the form the encoder chose: the first of the mnemonic's forms that gives these bytes
            form = _form_of(item, forms, start, labels, code[start:stop])
            if form is None:
                return None
            first[id(item)] = form
        target = slot = None
        if form.label_slot is not None:
            slot = form.label_slot.index
            target = next((labels.get(op.name) for op in item.operands if type(op) is Label), None)
        out.append(Decoded(start, stop - start, code[start:stop], item, form.enc.name, None, target, slot))
    return out


def _form_of(item, forms, pc: int, labels: dict[str, int], raw: bytes):
    from jitgemm.isa.asm.encoder import encode_form
    from jitgemm.isa.spec.field_codec import Mismatch

    chosen = forms.encoded_by.get(item)     # the encoder's own choice (an instruction without a label operand)
    if chosen is not None and chosen.size == len(raw):
        return chosen
    sized = [form for form in forms.forms_for(item.name) or () if form.size == len(raw)]
    if sized and all((f.enc.name, f.label_slot) == (sized[0].enc.name, sized[0].label_slot) for f in sized):
        return sized[0]        # what the trace reads of the form is the same whichever the encoder took
    for form in sized:
        try:
            if encode_form(form, item, pc, labels).to_bytes(form.size, "little") == raw:
                return form
        except Mismatch:
            continue
    return None


def _split(code: bytes, spec: Spec) -> tuple[list[Decoded], list[Decoded], list[Decoded]]:
    decoded = instructions(code, spec)
    best, best_mfmas, span = None, 0, (0, 0)
    for i, d in enumerate(decoded):
        if d.target is None or d.target >= d.offset:
            continue
        body = [x for x in decoded[:i] if x.offset >= d.target]
        mfmas = sum(classify(x, spec) == "mfma" for x in body)
        if mfmas > best_mfmas:
            best, best_mfmas, span = body, mfmas, (d.target, d.offset)
    if best is None:
        raise PipelineModelError("the kernel has no loop with an MFMA (no backward branch around one)")
    start, branch = span
    return ([x for x in decoded if x.offset < start], best, [x for x in decoded if x.offset > branch])


@functools.lru_cache(maxsize=256)
def _cached(code: bytes, target: str, latency_items: tuple) -> KernelTrace:
    from jitgemm import isa

    spec, profile = isa.load_spec(target), isa.target_profile(target)
    latency = dict(latency_items)
    prologue, body, epilogue = _split(code, spec)
    loop = _region(body, spec, profile, 6, latency)
    bound = "mfma" if loop.mfma_passes >= loop.passes - 1e-9 else ("issue" if loop.total >= loop.passes - 1e-9
                                                                    else "wait")
    return KernelTrace(hashlib.sha256(code).hexdigest(), _region(prologue, spec, profile, 1, latency), loop,
                       _region(epilogue, spec, profile, 1, latency), rates(spec, profile).clocks_per_pass, bound)


def trace(code: bytes, target: str, latency: dict[str, int] | None = None) -> KernelTrace:
    """The trace of a kernel's `.text` bytes for a target (cached per code and latency table)."""
    return _cached(bytes(code), target, tuple(sorted((latency or {}).items())))
