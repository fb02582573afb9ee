"""The ISA emulator: runs gfx942 and gfx950 code objects on the CPU, all waves of a grid vectorized with numpy;
numeric rules that differ by target (fp8 flavour, LDS size) come from the target profile.

Instructions are decoded from the loaded MR-ISA spec (isa.disasm.decoder); their semantics are this package's own,
one module per kind of instruction in semantics/ (see its __init__), built into executable ops by ops.py.
`emulate()` is the entry point; `check()` lists what a code object needs that is missing.
"""

from __future__ import annotations

from .engine import Program, RunStats, check, emulate
from .errors import EmulatorError, MemoryFault, StepLimitExceeded, UnsupportedInstruction
from .strict import StrictViolation, StrictWarning

__all__ = ["EmulatorError", "MemoryFault", "Program", "RunStats", "StepLimitExceeded", "StrictViolation",
           "StrictWarning", "UnsupportedInstruction", "check", "emulate"]
