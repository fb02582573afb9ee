"""Instruction cards: what a model needs of one instruction in a few lines of its context -- the spec's prose
(AMD's, when the official XML is in use), operand types and widths, the wait counters it increments, its hazard
classes and pass count from the target profile, and the hazard rows that involve it.

Everything is read from the spec and the target profile (`specs/targets/<arch>.yaml`) through the same facts the
direct generator's emitter and strict emulation use (`isa.hazards.emit_facts`); nothing here is a table of
its own.
"""

from __future__ import annotations

from typing import Any


def card(spec, inst, profile) -> dict[str, Any]:
    """One instruction's card as a JSON-ready map."""
    from jitgemm.isa.hazards import emit_facts

    facts = emit_facts(spec, profile)
    classes = sorted(facts.classes_of(inst))
    counters = list(facts.counters_of(inst))
    passes = profile.mfma_passes.get(inst.name.upper()) if hasattr(profile, "mfma_passes") else None
    operands = []
    first = inst.encodings[0] if inst.encodings else None
    if first is not None:
        for op in first.operands:
            if op.implicit:
                continue
            operands.append({"field": op.field_name or None, "type": op.operand_type or None,
                             "format": op.data_format or None, "bits": op.size,
                             "dir": ("in" if op.input else "") + ("/" if op.input and op.output else "")
                             + ("out" if op.output else "")})
    kind = ""
    if "mfma" in classes:
        from jitgemm.isa.hazards import mfma_timing

        _, kind = mfma_timing(inst, profile)
    hazards = []
    for rule in profile.hazard_rules:
        role = [r for r, cls in (("writer", rule.writer), ("reader", rule.reader)) if cls in classes]
        if role:
            # as the writer, an MFMA's own pass count decides the wait (the profile's passes_plus terms)
            states = rule.required(int(passes or 0), kind) if "writer" in role and kind else rule.wait_states
            hazards.append({"as": "/".join(role), "writer": rule.writer, "reader": rule.reader,
                            "wait_states": states, "regs": rule.regs, "source": rule.source})
    if passes:
        latency = f"MFMA, {passes} passes ({4 * passes} cycles)"
    elif "mfma" in classes:
        latency = "MFMA (the profile has no pass count for it)"
    elif counters:
        latency = f"memory: returns on {' and '.join(counters)}; needs s_waitcnt before its result is read"
    elif "trans" in classes:
        latency = "VALU transcendental (quarter rate)"
    elif "valu" in classes:
        latency = "VALU (full rate, 4 cycles per wave64 instruction)"
    else:
        latency = "scalar"
    return {"name": inst.name.lower(), "aliases": [a.lower() for a in inst.aliases], "group": inst.functional_group,
            "subgroups": list(inst.functional_subgroups or ()), "description": inst.description,
            "encodings": [ie.encoding_name for ie in inst.encodings], "operands": operands,
            "classes": classes, "counters": counters, "passes": passes, "latency": latency, "hazards": hazards,
            "target": profile.target}


def card_markdown(c: dict[str, Any]) -> str:
    """A card as a few lines of Markdown."""
    lines = [f"### {c['name']}" + (f" (aliases: {', '.join(c['aliases'])})" if c["aliases"] else ""),
             c["description"] or "(no description in this spec)",
             f"- group: {c['group'] or '-'}" + (f" / {', '.join(c['subgroups'])}" if c["subgroups"] else "")
             + f"; encodings: {', '.join(c['encodings'])}",
             "- operands: " + (", ".join(_operand_text(o) for o in c["operands"]) or "none"),
             f"- timing ({c['target']}): {c['latency']}; hazard classes: {', '.join(c['classes']) or '-'}"]
    for h in c["hazards"]:
        lines.append(f"- hazard as {h['as']}: {h['writer']} writes, {h['reader']} touches ({h['regs']}): "
                     f"{h['wait_states']} wait states between")
    return "\n".join(lines) + "\n"


def _operand_text(o: dict[str, Any]) -> str:
    fmt = f"[{o['format']}]" if o["format"] else ""
    return f"{o['field'] or '?'}:{o['type']}{fmt} {o['bits']}b {o['dir']}"


def cards(arch: str, names: list[str] | None = None) -> list[dict[str, Any]]:
    """Cards for `names` (every instruction of the spec when None); KeyError naming the closest for a typo."""
    from jitgemm import isa

    spec, profile = isa.load_spec(arch), isa.target_profile(arch)
    if names is None:
        return [card(spec, inst, profile) for inst in spec.instructions]
    out = []
    for name in names:
        inst = spec.find_instruction(name)
        if inst is None:
            close = spec.closest_instruction_names(name)
            raise KeyError(f"{name!r} is not an instruction of {spec.architecture.name}"
                           + (f"; closest: {', '.join(close)}" if close else ""))
        out.append(card(spec, inst, profile))
    return out
