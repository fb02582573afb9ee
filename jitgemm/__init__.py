"""jitgemm: a JIT compiler for AMD GPUs driven by AMD's machine-readable ISA specification."""

from __future__ import annotations

__version__ = "0.1.0"
