"""Errors of the emulator. Each names what a user needs to find the problem: the instruction, its PC and
kernel for a missing semantic; address, PC, wave and lane for a memory fault (as a GPU memory violation
report would)."""

from __future__ import annotations

from jitgemm.isa.errors import IsaError


class EmulatorError(IsaError):
    """Something the emulator cannot run: an instruction without semantics, a bad launch, a step limit."""


class UnsupportedInstruction(EmulatorError):
    def __init__(self, name: str, pc: int, kernel: str, detail: str = "") -> None:
        self.name = name
        self.pc = pc
        self.kernel = kernel
        extra = f": {detail}" if detail else ""
        super().__init__(f"kernel {kernel!r}: instruction {name} at PC 0x{pc:x} has no emulator semantics{extra} "
                         f"(`jitgemm emulate FILE --check` lists every unsupported instruction)")


def pc_text(pc: int, code_address: int) -> str:
    """A PC as fault messages print it: the loaded address (what s_getpc_b64 returns and the data addresses
    sit beside), then the offset into the kernel (what the disassembly of the kernel shows)."""
    return f"0x{code_address + pc:x} (kernel offset 0x{pc:x})" if code_address else f"0x{pc:x}"


class MemoryFault(EmulatorError):
    """An access outside every launched buffer or code object segment (or a store into a read-only one), like
    a GPU memory violation. `pc` is the offset into the kernel, `loaded_pc` its address in the loaded object."""

    def __init__(self, what: str, address: int, pc: int, wave: int, lane: int, kernel: str, detail: str = "",
                 *, code_address: int = 0) -> None:
        self.address = address
        self.pc = pc
        self.loaded_pc = code_address + pc
        self.wave = wave
        self.lane = lane
        self.kernel = kernel
        extra = f" ({detail})" if detail else ""
        super().__init__(f"memory fault in kernel {kernel!r}: {what} at address 0x{address:x}, PC "
                         f"{pc_text(pc, code_address)}, wave {wave}, lane {lane}{extra}")


class StepLimitExceeded(EmulatorError):
    pass


class NoSemantics(Exception):
    """Internal: raised while building an op for an instruction the emulator has no semantics for."""
