"""The instruction model, learned from AMD's machine-readable ISA (MR-ISA) XML. Depends on nothing else
in the project."""

from __future__ import annotations

from .errors import IsaError, SpecError
from .model import Encoding, Instruction, OperandType, Spec, SpecLookupError
from .spec_sources import SpecLocation, load_spec, locate_spec
from .targets import TargetProfile, target_profile

__all__ = [
    "Encoding",
    "Instruction",
    "IsaError",
    "OperandType",
    "Spec",
    "SpecError",
    "SpecLocation",
    "SpecLookupError",
    "TargetProfile",
    "load_spec",
    "locate_spec",
    "target_profile",
]
