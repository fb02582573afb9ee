"""`Kernel.asm` and `jitgemm inspect`: a code object's kernels as text, each instruction annotated from the
spec (encoding, opcode, the first sentence of the spec's description), plus the descriptor's resources."""

from __future__ import annotations

import re

from jitgemm.codegen import codeobj
from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.disasm.printer import format_instruction
from jitgemm.isa.spec.model import Spec


def _first_sentence(text: str, limit: int = 70) -> str:
    text = re.sub(r"<[^>]+>", "", text or "").strip()
    cut = re.split(r"(?<=[.;])\s", text, maxsplit=1)[0]
    return cut if len(cut) <= limit else cut[: limit - 1] + "…"


def annotate(mnemonic: str, encoding: str | None, spec: Spec) -> str:
    inst = spec.find_instruction(re.sub(r"_(e32|e64|dpp|sdwa)$", "", mnemonic))
    if inst is None:
        return ""
    opcode = ""
    for ie in inst.encodings:
        if ie.encoding_name == encoding:
            opcode = f" op {ie.opcode}"
    return f"{encoding or '?'}{opcode}: {_first_sentence(inst.description)}"


def annotated_listing(code_object: bytes, spec: Spec) -> str:
    """Every kernel of a code object: resources, then offset, instruction and its annotation."""
    obj = codeobj.read(code_object)
    lines = []
    for kernel in obj.kernels:
        meta = kernel.metadata
        lines.append(f"; kernel {kernel.name}  ({obj.target or obj.processor})")
        # metadata's .vgpr_count is the unified register file's total (AGPRs included), .agpr_count the AGPRs
        lines.append(f";   vgprs {meta.get('.vgpr_count', '?')} (unified: VGPRs + AGPRs)  agprs "
                     f"{meta.get('.agpr_count', '?')}  "
                     f"sgprs {meta.get('.sgpr_count', '?')}  lds {meta.get('.group_segment_fixed_size', '?')} B  "
                     f"kernarg {meta.get('.kernarg_segment_size', '?')} B  "
                     f"workgroup <= {meta.get('.max_flat_workgroup_size', '?')}")
        lines.append(f"{kernel.name}:")
        for item in decode(kernel.code, spec):
            if item.instruction is None:
                text = f".long 0x{item.words[0]:08x}"
                note = item.warning or "not an instruction of this spec"
            else:
                text = format_instruction(item.instruction)
                note = annotate(item.instruction.name, item.encoding, spec)
            lines.append(f"  /*{item.offset:06x}*/ {text:<60} ; {note}")
    return "\n".join(lines) + "\n"
