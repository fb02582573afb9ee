"""The instruction model, learned from AMD's machine-readable ISA (MR-ISA) XML. Depends on nothing else in the
project but `util`.

Sub-packages by concern: `spec` (the spec model: loading, the XML reader, caches, target profiles, the instruction
table, encoding conditions and fields, forms), `asm` (the assembler), `disasm` (the disassembler). Beside them, what
all three share: `instruction` (AsmInstruction objects), `operand_syntax`/`operand_values`/`modifiers` (LLVM's
spelling of operands and modifiers), `errors`/`asm_errors`, and `hazards` (the machine facts the direct generator's
emitter and strict emulation share)."""

from __future__ import annotations

import sys

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

# Every name loads on first use (PEP 562), the spec model too: a process that only finds its kernel in the disk
# cache imports `jitgemm.isa.spec.mfma` or `jitgemm.isa.spec.cache` (the package runs this file) and must not pay
# for the spec model, the target profiles or the assembler. `isa.Instruction` is the spec's instruction; the
# assembly-level instruction object is `isa.AsmInstruction`.
_EXPORTS = {
    "IsaError": "errors", "SpecError": "errors", "Encoding": "spec.model", "Instruction": "spec.model",
    "OperandType": "spec.model", "Spec": "spec.model", "SpecLookupError": "spec.model",
    "SpecLocation": "spec.sources", "load_spec": "spec.sources", "locate_spec": "spec.sources",
    "TargetProfile": "spec.targets", "target_profile": "spec.targets",
    "assemble": "asm.assembler", "encode": "asm.encoder", "decode": "disasm.decoder", "disassemble": "disasm.printer",
    "format_instruction": "disasm.printer", "AsmError": "asm_errors", "EncodeError": "asm_errors",
    "AsmInstruction": "instruction", "Reg": "instruction", "Imm": "instruction", "Label": "instruction",
    "LabelDef": "instruction", "Off": "instruction", "OFF": "instruction", "SrcMods": "instruction",
    "Counters": "instruction", "Data": "instruction", "Align": "instruction",
}
__all__ += sorted(set(_EXPORTS) - set(__all__))


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        return submodule(__name__, name)
    # looked up on every access, not kept in this namespace (a test that patches `isa.spec.targets.target_profile`
    # must not leave its stand-in behind here); sys.modules first: import_module costs ~10 us a call
    loaded = sys.modules.get(f"{__name__}.{module}")
    if loaded is None:
        import importlib

        loaded = importlib.import_module(f".{module}", __name__)
    return getattr(loaded, name)


def submodule(package: str, name: str):
    """`package.name` imported on first attribute access (`isa.spec.targets` without an import statement), or
    the AttributeError an absent attribute gives."""
    import importlib

    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":
                raise
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
