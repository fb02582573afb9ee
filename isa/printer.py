"""AsmInstruction objects -> text in llvm-objdump's syntax.

The decoder already produced operands and modifiers in LLVM's terms and order; this module only spells
them, so any instruction object (decoded, parsed or built by a generator) prints the same way.
"""

from __future__ import annotations

from .instruction import AsmInstruction, Counters, Data, Imm, Label, Off, Reg, SrcMods
from .operand_syntax import HEX_MODIFIERS, UNPRINTED_MODIFIERS, float_text


def format_imm(imm: Imm) -> str:
    if imm.text is not None:
        return imm.text
    value = imm.value
    if isinstance(value, float):
        return float_text(value)
    if imm.hex:
        return f"-0x{-value:x}" if value < 0 else f"0x{value:x}"
    return str(value)


def format_operand(op) -> str:
    t = type(op)
    if t is Reg:
        return str(op)
    if t is Imm:
        return format_imm(op)
    if t is SrcMods:
        inner = format_operand(op.operand)
        if op.abs:
            inner = f"|{inner}|"
        if op.neg:
            inner = f"neg({inner})" if type(op.operand) is Imm else f"-{inner}"
        if op.sext:
            inner = f"sext({inner})"
        return inner
    if t is Label:
        return op.name
    if t is Off:
        return "off"
    if t is Counters:
        return str(op)
    return str(op)


def format_modifier(name: str, value) -> str:
    if value is True:
        return name
    if isinstance(value, tuple):
        return f"{name}:[{','.join(str(x) if isinstance(x, str) else str(int(x)) for x in value)}]"
    if isinstance(value, Imm):
        return f"{name}:{format_imm(value)}"
    if isinstance(value, int) and name in HEX_MODIFIERS:
        return f"{name}:0x{value:x}"
    return f"{name}:{value}"


def format_instruction(inst: AsmInstruction) -> str:
    text = inst.name
    if inst.operands:
        text += " " + ", ".join(format_operand(op) for op in inst.operands)
    shown = [(n, v) for n, v in inst.modifiers if n not in UNPRINTED_MODIFIERS]
    if shown:
        text += " " + " ".join(format_modifier(n, v) for n, v in shown)
    return text


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
    """One line laid out like llvm-objdump: tab, text padded to 59 columns, `// OFFSET: WORDS`."""
    raw = " ".join(f"{w:08X}" for w in words)
    line = f"\t{text:<58} // {offset:012X}: {raw}"
    if comment:
        line += f" {comment}"
    return line


def disassemble(data: bytes, spec, *, base: int = 0, symbols: dict[int, str] | None = None,
                raw: bool = True) -> str:
    """llvm-objdump-style listing of machine code: one instruction per line with offset and raw
    words (when `raw`); words the spec cannot decode print as `.long 0x...`."""
    from .decoder import decode

    lines = []
    for line in disassembly_lines(decode(data, spec, base=base), symbols):
        lines.append(objdump_line(line[0], line[1], line[2], line[3]) if raw else "\t" + line[0])
    return "\n".join(lines) + ("\n" if lines else "")


def disassembly_lines(decoded, symbols: dict[int, str] | None = None):
    """(text, offset, words, comment) per decoded instruction."""
    out = []
    for d in decoded:
        if d.instruction is None:
            text = format_data(Data(d.words))
            comment = f"; {d.warning}" if d.warning else ""
        else:
            text = format_instruction(d.instruction)
            comment = ""
            if d.target is not None and symbols:
                comment = f"<{symbolize(d.target, symbols)}>"
        out.append((text, d.offset, d.words, comment))
    return out


def symbolize(address: int, symbols: dict[int, str]) -> str:
    """`name+0x..` for an address, relative to the closest symbol at or below it."""
    best = None
    for addr, name in symbols.items():
        if addr <= address and (best is None or addr > best[0]):
            best = (addr, name)
    if best is None:
        return f"0x{address:x}"
    delta = address - best[0]
    return best[1] if delta == 0 else f"{best[1]}+0x{delta:x}"
