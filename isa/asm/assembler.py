"""Assembly text -> machine code: parse (asm_parser), then encode (encoder), with every error placed at
file:line:col of the mnemonic, operand or modifier at fault.

Only `.text` content is produced. Directives that only matter to an ELF writer (`.globl`, `.type`,
`.amdhsa_*` kernel descriptors, the metadata block) are accepted and skipped; data (`.long`) and
alignment (`.p2align`) directives emit bytes; anything else is an error, so a typo is never silently
ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from jitgemm.isa.asm_errors import AsmError
from jitgemm.isa.instruction import Align, AsmInstruction, Data, LabelDef
from jitgemm.isa.spec.forms import SpecForms, forms_of
from jitgemm.isa.spec.model import Spec

from .encoder import Assembled, StatementError, encode_items
from .parser import Statement, locate, parse

DATA_WIDTH = {".byte": 1, ".short": 2, ".hword": 2, ".2byte": 2, ".long": 4, ".int": 4, ".4byte": 4,
               ".quad": 8, ".8byte": 8}

_SKIPPED = {".text", ".globl", ".global", ".type", ".size", ".section", ".amdgcn_target", ".file", ".ident",
            ".amdhsa_code_object_version", ".amdgpu_hsa_kernel", ".weak", ".hidden", ".protected", ".local",
            ".addrsig", ".addrsig_sym", ".rodata", ".data", ".previous", ".popsection", ".pushsection", ".set",
            ".cfi_sections", ".cfi_startproc", ".cfi_endproc", ".loc", ".end_amdhsa_kernel",
            ".amdhsa_kernel", ".note", ".end", ".reloc"}

# Blocks whose body is not assembly (YAML metadata, kernel descriptors): blanked before parsing so
# line numbers stay right.
_BLOCKS = (
    (re.compile(r"^\s*\.amdgpu_metadata\b"), re.compile(r"^\s*\.end_amdgpu_metadata\b")),
    (re.compile(r"^\s*\.amdhsa_kernel\b"), re.compile(r"^\s*\.end_amdhsa_kernel\b")),
)


@dataclass(frozen=True)
class Program:
    """Assembled text: the code, labels, and per instruction statement its source line and bytes."""

    code: bytes
    symbols: dict[str, int] = field(default_factory=dict)
    lines: tuple[tuple[int, AsmInstruction, int, int], ...] = ()  # (line, instruction, offset, size)

    def __bytes__(self) -> bytes:
        return self.code


_DIRECTIVE = re.compile(r"\s*(?:[A-Za-z_$.@][\w.$@]*:\s*)*(\.[A-Za-z_][\w.]*)(.*)$")


def _text_only(text: str) -> str:
    """The source with everything outside `.text` and every ELF-only directive blanked (line numbers
    kept), so compiler output (`clang -S`) assembles: its metadata, kernel descriptors and `.set`/`.size`
    expressions never reach the instruction grammar."""
    if "." not in text:
        return text
    out = []
    inside = None  # end pattern of a block being skipped
    in_text = True
    stack: list[bool] = []
    for line in text.split("\n"):
        if inside is not None:
            out.append("")
            if inside.match(line):
                inside = None
            continue
        if any(start.match(line) for start, _end in _BLOCKS):
            inside = next(end for start, end in _BLOCKS if start.match(line))
            out.append("")
            continue
        m = _DIRECTIVE.match(line)
        name = m.group(1).lower() if m else None
        if name in (".text", ".section", ".data", ".rodata", ".bss", ".pushsection", ".popsection", ".previous"):
            target = m.group(2).strip().split(",")[0].strip().strip('"') if m else ""
            if name == ".pushsection":
                stack.append(in_text)
                in_text = target.startswith(".text")
            elif name in (".popsection", ".previous"):
                in_text = stack.pop() if stack else True
            elif name == ".section":
                in_text = target.startswith(".text")
            else:
                in_text = name == ".text"
            prefix = line[: m.start(1)] if m else ""  # keep a label written before the directive
            out.append(prefix if in_text else "")
            continue
        if not in_text:
            out.append("")
            continue
        if name is not None and (name in _SKIPPED or name.startswith(".amdhsa_") or name.startswith(".cfi_")):
            out.append(line[: m.start(1)])
            continue
        out.append(line)
    return "\n".join(out)


def _items(statements: list[Statement], file: str, lines: list[str]) -> tuple[list, list[Statement]]:
    items = []
    owners = []
    for st in statements:
        if st.kind == "instruction":
            items.append(st.instruction)
        elif st.kind == "label":
            items.append(LabelDef(st.name))
        else:
            name = st.name
            if name in DATA_WIDTH:
                words = []
                for arg in st.args:
                    if not isinstance(arg, int):
                        raise AsmError(f"{name} takes integers, got {arg!r}", file=file, line=st.line, col=st.col,
                                       source_line=lines[st.line - 1])
                    width = DATA_WIDTH[name]
                    if not -(1 << (8 * width - 1)) <= arg < (1 << (8 * width)):
                        raise AsmError(f"{name} value {arg} does not fit {width} byte(s)", file=file,
                                       line=st.line, col=st.col, source_line=lines[st.line - 1])
                    words.append(arg)
                items.append(Data(tuple(words), DATA_WIDTH[name]))
            elif name == ".fill":  # .fill count[, size[, value]]
                args = list(st.args) + [1, 0][len(st.args) - 1:] if st.args else []
                if len(args) < 3 or not all(isinstance(x, int) for x in args[:3]) or args[1] not in (1, 2, 4, 8) \
                        or not 0 <= args[0] <= 1 << 20:
                    raise AsmError(".fill takes count, size (1, 2, 4 or 8) and value", file=file, line=st.line,
                                   col=st.col, source_line=lines[st.line - 1])
                items.append(Data((args[2],) * args[0], args[1]))
            elif name == ".p2alignl":  # .p2alignl power, 32-bit fill value
                if len(st.args) != 2 or not all(isinstance(x, int) for x in st.args) or not 0 <= st.args[0] <= 16:
                    raise AsmError(".p2alignl takes a power of two and a 32-bit fill value", file=file,
                                   line=st.line, col=st.col, source_line=lines[st.line - 1])
                items.append(Align(1 << st.args[0], st.args[1], 4))
            elif name in (".p2align", ".balign", ".align"):
                if not st.args or not isinstance(st.args[0], int) or isinstance(st.args[0], bool) \
                        or (name == ".p2align" and not 0 <= st.args[0] <= 16):
                    what = "a power of two 0..16" if name == ".p2align" else "bytes"
                    raise AsmError(f"{name} needs an alignment ({what})", file=file, line=st.line, col=st.col)
                power = st.args[0]
                boundary = 1 << power if name == ".p2align" else power
                fill = st.args[1] if len(st.args) > 1 and isinstance(st.args[1], int) else None
                items.append(Align(boundary, fill))
            elif name in _SKIPPED or name.startswith(".amdhsa_") or name.startswith(".cfi_"):
                continue
            else:
                raise AsmError(f"unsupported directive {name} (supported: data {', '.join(sorted(DATA_WIDTH))}, "
                               ".p2align/.balign, and ELF-only directives which are skipped)", file=file,
                               line=st.line, col=st.col, source_line=lines[st.line - 1])
        owners.append(st)
    return items, owners


def _place(st: Statement, error) -> int:
    if error.operand is not None and error.operand < len(st.operand_cols):
        return st.operand_cols[error.operand]
    if error.modifier is not None:
        for name, col in st.modifier_cols:
            if name == error.modifier:
                return col
    return st.col


def assemble_program(text: str, spec: Spec | SpecForms, *, file: str = "<input>") -> Program:
    """Assemble text, keeping each instruction's line, object, offset and size."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    lines = text.split("\n")
    statements = parse(_text_only(text), file)
    items, owners = _items(statements, file, lines)
    try:
        result: Assembled = encode_items(items, forms)
    except StatementError as exc:
        st = owners[exc.index]
        if st.line <= len(lines):
            st = locate(st, lines[st.line - 1], file)
        raise AsmError(exc.error.reason, file=file, line=st.line, col=_place(st, exc.error),
                       source_line=lines[st.line - 1] if st.line <= len(lines) else None) from None
    ends = list(result.offsets[1:]) + ([len(result.code)] if result.offsets else [])
    info = tuple((st.line, item, off, end - off)
                 for st, item, off, end in zip(owners, items, result.offsets, ends, strict=True)
                 if isinstance(item, AsmInstruction))
    return Program(result.code, result.symbols, info)


def assemble(text: str, spec: Spec | SpecForms, *, file: str = "<input>") -> Assembled:
    """Machine code and label addresses for LLVM-syntax AMDGPU assembly text (the `.text` bytes)."""
    program = assemble_program(text, spec, file=file)
    return Assembled(program.code, program.symbols, tuple(off for _l, _i, off, _s in program.lines))
