"""Limits of instruction fields the generator plans against, read from the spec (never a hand constant), so a
target whose encoding widens or narrows a field changes the plan with it."""

from __future__ import annotations

from jitgemm.isa.spec.model import Spec


def buffer_offset_max(spec: Spec) -> int:
    """The largest byte offset a MUBUF load or store holds in its instruction: the unsigned OFFSET field of the
    spec's ENC_MUBUF encoding (12 bits on CDNA 3 and CDNA 4: 4095)."""
    return (1 << spec.encoding("ENC_MUBUF").field("OFFSET").width) - 1
