"""The instruction model, learned from AMD's machine-readable ISA (MR-ISA) XML. Depends on nothing else in the
project but `util`.

Sub-packages by concern: `spec` (the spec model: loading, the XML reader, caches, target profiles, the instruction
table, encoding conditions and fields, forms), `asm` (the assembler), `disasm` (the disassembler). Beside them, what
all three share: `instruction` (AsmInstruction objects), `operand_syntax`/`operand_values`/`modifiers` (LLVM's
spelling of operands and modifiers), `errors`/`asm_errors`, and `hazards` (the machine facts the direct generator's
emitter and strict emulation share)."""

from __future__ import annotations

from .errors import IsaError, SpecError
from .spec.model import Encoding, Instruction, OperandType, Spec, SpecLookupError
from .spec.sources import SpecLocation, load_spec, locate_spec
from .spec.targets import TargetProfile, target_profile

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

# Assembler and disassembler, loaded on first use so that `from jitgemm import isa` stays light for code
# that only reads specs. `isa.Instruction` above is the spec's instruction; the assembly-level instruction
# object is `isa.AsmInstruction`.
_ASM_EXPORTS = {
    "assemble": "asm.assembler", "encode": "asm.encoder", "decode": "disasm.decoder", "disassemble": "disasm.printer",
    "format_instruction": "disasm.printer", "AsmError": "asm_errors", "EncodeError": "asm_errors",
    "AsmInstruction": "instruction", "Reg": "instruction", "Imm": "instruction", "Label": "instruction",
    "LabelDef": "instruction", "Off": "instruction", "OFF": "instruction", "SrcMods": "instruction",
    "Counters": "instruction", "Data": "instruction", "Align": "instruction",
}
__all__ += sorted(_ASM_EXPORTS)


def __getattr__(name: str):
    import importlib

    module = _ASM_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jitgemm.isa' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
