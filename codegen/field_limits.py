"""Limits of instruction fields the generator plans against, read from the spec (never a hand constant), so a
target whose encoding widens or narrows a field changes the plan with it."""

from __future__ import annotations

from jitgemm.isa.spec.model import Spec


def buffer_offset_limit(spec: Spec) -> int:
    """The largest byte offset a MUBUF load or store holds in its instruction: the unsigned OFFSET field of the
    spec's ENC_MUBUF encoding (12 bits on CDNA 3 and CDNA 4: 4095)."""
    return (1 << spec.encoding("ENC_MUBUF").field("OFFSET").width) - 1


def ds_offset_limit(spec: Spec) -> int:
    """The largest DS instruction offset: the `offset:` operand fills OFFSET1:OFFSET0 of ENC_DS (isa/modifiers.py,
    `_m_ds_offset`; 8 + 8 bits on CDNA3 and CDNA4)."""
    enc = spec.encoding("ENC_DS")
    return (1 << (enc.field("OFFSET0").width + enc.field("OFFSET1").width)) - 1
