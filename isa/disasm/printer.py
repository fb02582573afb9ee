"""AsmInstruction objects -> text in llvm-objdump's syntax: lines and listings.

The decoder already produced operands and modifiers in LLVM's terms and order, and each object spells itself
(instruction.py: `str(op)`, `AsmInstruction.asm_text`), so any instruction object (decoded, parsed or built by a
generator) prints the same way; this module lays the texts out as llvm-objdump does (offsets, words, labels,
symbol comments, a target's unprinted modifiers).
"""

from __future__ import annotations

from bisect import bisect_right

from jitgemm.isa.instruction import AsmInstruction, Data, Label


def format_instruction(inst: AsmInstruction, unprinted: frozenset[str] = frozenset()) -> str:
    """The instruction's text (`AsmInstruction.asm_text`); modifiers named in `unprinted` (a target's
    `unprinted_modifiers` for the instruction's encoding) are left out of it, not out of the instruction."""
    return inst.asm_text(unprinted)


def format_data(data: Data) -> str:
    directive = {1: ".byte", 2: ".short", 4: ".long", 8: ".quad"}.get(data.width, ".long")
    digits = 2 * data.width
    return f"{directive} " + ", ".join(f"0x{w:0{digits}x}" for w in data.words)


def format_item(item) -> str:
    if isinstance(item, AsmInstruction):
        return format_instruction(item)
    if isinstance(item, Data):
        return format_data(item)
    return f"{item.name}:"


def objdump_line(text: str, offset: int, words: tuple[int, ...], comment: str = "") -> str:
    """One line laid out like llvm-objdump: tab, text padded to 59 columns (a longer text runs straight
    into the comment, as objdump prints it), `// OFFSET: WORDS`, then any `<target>` comment."""
    head, tail = objdump_parts(text, words)
    line = f"{head}{offset:012X}{tail}"
    if comment:
        line += f" {comment}"
    return line


def objdump_parts(text: str, words: tuple[int, ...]) -> tuple[str, str]:
    """The parts of an objdump line before and after the offset (a listing caches them per instruction)."""
    return f"\t{text:<59}// ", ": " + " ".join(f"{w:08X}" for w in words)


def disassemble(data: bytes, spec, *, base: int = 0, symbols: dict[int, str] | None = None,
                raw: bool = True, unprinted: dict[str, frozenset[str]] | None = None) -> str:
    """llvm-objdump-style listing of machine code: one instruction per line with offset and raw
    words (when `raw`); words the spec cannot decode print as `.long 0x...`. `symbols` (address -> name)
    name branch targets in comments, as objdump's nearest-symbol comment; `unprinted` (a target profile's
    `unprinted_modifiers`) leaves those modifiers out of the text, as LLVM does for that target."""
    from .decoder import decode

    lines = []
    near = sorted((addr, name) for addr, name in (symbols or {}).items())
    for line in disassembly_lines(decode(data, spec, base=base), near, unprinted=unprinted):
        lines.append(objdump_line(line[0], line[1], line[2], line[3]) if raw else "\t" + line[0])
    return "\n".join(lines) + ("\n" if lines else "")


def disassembly_lines(decoded, symbols: list[tuple[int, str]] | None = None, labels: dict[int, str] | None = None,
                      unprinted: dict[str, frozenset[str]] | None = None):
    """(text, offset, words, comment) per decoded instruction.

    A branch whose target is in `labels` (address -> name; llvm-objdump's AMDGPUSymbolizer takes the
    STT_NOTYPE symbols of the section) prints the name as its operand; any other branch keeps its number
    and gets objdump's `<symbol+0x..>` comment from `symbols`, (address, name) sorted as objdump sorts
    them, the last one at or below the target naming it. `unprinted` is the target's `unprinted_modifiers`.
    """
    out = []
    append = out.append
    for d in decoded:
        inst = d.instruction
        if inst is None:
            append((format_data(Data(d.words)), d.offset, d.words, f"; {d.warning}" if d.warning else ""))
            continue
        comment = ""
        if d.target is not None:
            name = labels.get(d.target) if labels else None
            if name is not None:
                ops = list(inst.operands)
                ops[d.target_operand] = Label(name)
                inst = AsmInstruction(inst.name, tuple(ops), inst.modifiers)
            elif symbols:
                comment = symbolize(d.target, symbols)
        hide = unprinted.get(d.encoding, frozenset()) if unprinted else frozenset()
        append((inst.asm_text(hide), d.offset, d.words, comment))
    return out


def symbolize(address: int, symbols: list[tuple[int, str]]) -> str:
    """`<name+0x..>` for an address, relative to the last symbol at or below it ("" when none is)."""
    at = bisect_right(symbols, (address, "\U0010ffff"))
    if not at:
        return ""
    addr, name = symbols[at - 1]
    delta = address - addr
    return f"<{name}>" if delta == 0 else f"<{name}+0x{delta:x}>"
