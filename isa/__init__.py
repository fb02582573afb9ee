"""The instruction model, learned from AMD's machine-readable ISA (MR-ISA) XML. Depends on nothing else
in the project."""

from __future__ import annotations

from .errors import IsaError, SpecError
from .model import SpecLookupError

__all__ = ["IsaError", "SpecError", "SpecLookupError"]
