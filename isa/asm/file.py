"""Whole `.s` files -> an object description (sections, symbols, relocations, kernel blocks, metadata).

This is the front end llvm-mc puts before its ELF writer: directives, sections, symbols and expressions,
macros and repetition, conditionals and includes, the `.amdhsa_kernel` and `.amdgpu_metadata` blocks.
Instructions go through the spec-driven parser and encoder (parser.py, encoder.py); everything here follows
LLVM MC's documented behaviour (AsmParser, ELFAsmParser, AMDGPUAsmParser; AMDGPUUsage "AMDGPU Assembler"),
and where it is silent, GNU as. By phase: this module reads lines (labels, assignments, instructions, LLVM's
spellings) and resolves symbols and fixups at the end; directives.py handles the directives, macros.py the text-level
constructs (`.macro`, `.rept`, `.irp`, conditionals' blocks), metadata.py the kernel-descriptor and metadata blocks,
sections.py holds the object model the result is made of.

The result, an `AsmObject`, knows nothing about ELF: codegen/codeobj/relocatable.py writes it as a
relocatable object (what `llvm-mc -filetype=obj` writes) and the project's linker makes it loadable.
Kernel descriptors are left as 64 zero bytes plus the `.amdhsa_*` values, since computing them is the
code-object layer's job (descriptor.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.asm_errors import AsmError
from jitgemm.isa.instruction import Align, AsmInstruction, Data, Label, LabelDef, identifier_operand
from jitgemm.isa.spec.forms import SpecForms, forms_of
from jitgemm.isa.spec.model import Spec

from . import expressions as X
from .directives import (
    DIRECTIVES,
)
from .encoder import StatementError, encode_items
from .fastpath import parse_line
from .macros import (
    CLOSERS,
    OPENERS,
    AsmFileError,
    AsmFileErrors,
    Collect,
    Loc,
    Macro,
    bind_args,
    blank_block_comments,
    loc_chain,
    parse_macro_header,
    split_args,
    split_with_offsets,
    strip_comment,
    substitute,
)
from .parser import Statement, locate, parse
from .sections import (
    DEFAULT_SECTIONS,
    AsmObject,
    Fixup,
    KernelBlock,
    Listed,
    Relocation,
    Section,
    Symbol,
    normalize_target,
)

# Directives that only produce debug information or non-loaded sections llvm-mc derives itself (line
# tables from .loc, call frame information from .cfi_*, .comment from .ident, the address-significance
# table): accepted and not emitted, so the loaded image is unaffected.
_DEBUG_ONLY = {".file", ".loc", ".ident", ".addrsig", ".addrsig_sym", ".loc_mark_labels", ".amdgpu_hsa_kernel"}
_PLACEHOLDER = 0x12345678  # a literal no inline constant equals: a fixup's value is written over it
_LABEL = re.compile(r"\s*([A-Za-z_.$][\w.$]*|\"[^\"]+\")\s*:(?![:\w])")
_WORD = re.compile(r"\s*([A-Za-z_.$][\w.$@]*)")
# Operands the instruction parser reads as they are (registers, numbers, `off`, counters, trailing modifiers):
# no expression to evaluate unless one of their words is a .set symbol.
_SIMPLE_OPERAND = re.compile(r"\s*-?\|?(?:[A-Za-z_]\w*(?:\[\d+(?::\d+)?\])?|-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?"
                             r"(?:[eE][-+]?\d+)?))\|?(?:\s+[A-Za-z_]\w*(?:\(\d+\))?(?::\S+)?)*\s*$")
_SKIP_PREFIXES = frozenset({"\t.loc", "\t.cfi", " .loc", " .cfi", ".loc ", ".loc\t", ".cfi_"})
_SKIP_LINE = re.compile(r"\s*\.(?:loc|cfi_[a-z_]+)\b")
_MNEMONIC_REST = re.compile(r"(\s*\S+)(\s*)(.*)$")
_ASSIGN = re.compile(r"\s*=(?!=)(.*)$")
_OPERAND = (r"(?>-?\|?(?>[A-Za-z_]\w*+(?:\(\d++\)(?:\s*+&?\s*+[A-Za-z_]\w*+\(\d++\))*+|\[\d++(?::\d++)?\])?"
            r"|-?(?>0x[0-9a-fA-F]++|\d++(?:\.\d++)?(?:[eE][-+]?\d++)?))\|?)")
# An instruction whose operands are all plain (registers, numbers, counters such as vmcnt(0)), then flag or
# key:value modifiers: nothing for the expression evaluator (atomic groups: this runs on every line).
_SIMPLE_INSTRUCTION = re.compile(rf"\s*+[A-Za-z_]\w*+(?:\s++{_OPERAND}(?:\s*+,\s*+{_OPERAND})*+)?"
                                 r"(?:\s++[A-Za-z_]\w*+(?::[\w\[\],.-]++)?)*+\s*+$")
# A line that starts with a mnemonic-like word (not a directive, not a label); assignments are told by '='.
_PLAIN_INSTRUCTION = re.compile(r"\s*([a-z_][a-z0-9_]*)(?:\s|$)")
_WORDS = re.compile(r"[A-Za-z_.$][\w.$]*")
_HEX_FLOAT = re.compile(r"(?<![\w.])(0[xX][0-9a-fA-F]*(?:\.[0-9a-fA-F]*)?[pP][-+]?\d+)(?![\w.])")
_REG_INDEX = re.compile(r"(?<![\w:\]])(v|s|a|ttmp|acc)\[([^\[\]]*)\]")
# words of the instruction syntax that are not operands: modifiers, flags, DPP/SDWA/format names
_SYNTAX_WORDS = frozenset(n.lower() for n in (*syn.FLAG_MODIFIERS, *syn.MODIFIER_RANK, *syn.FLAG_FIELDS))
_MOD_LIST = re.compile(r"(?<![\w.])([A-Za-z_]\w*):\[([^\[\]]*)\]")
_PLAIN_ITEM = re.compile(r"-?(?:\d+|0x[0-9a-fA-F]+)|[A-Za-z_]\w*")
_COUNTER_EXPR = re.compile(r"(?<![\w.])((?:vm|lgkm|exp)cnt)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_KNOWN_WORDS: set[str] = set()
# a name that is a whole operand (between the mnemonic or a comma and a comma or the end of the line)
_BARE_OPERAND = re.compile(r"(?:^\s*[\w.]+\s+|,\s*)([A-Za-z_.$][\w.$]*)\s*(?=,|$)")
# a first look for any of them: a hex float, a register index or modifier list entry that is not a plain number,
# a counter value that is not a number
_ODD_SPELLING = re.compile(r"0[xX][0-9a-fA-F.]*[pP]|(?<![\w:\]])(?:v|s|a|ttmp|acc)\[(?![\d:]*\])"
                           r"|:\[[^\]]*[^\w\s,\]-]|cnt\((?!\s*\d+\s*\))")
# llvm-mc takes the comma between operands as optional (AMDGPUAsmParser::ParseInstruction: "Eat the comma or space
# if there is one"): an operand-looking word right after another operand with only spaces between
_MNEMONIC = re.compile(r"\s*\S+\s*")
_MISSING_COMMA = re.compile(r"[\w\])|]\s+[-|]?(?:[vsa]\[|[vsa]\d|ttmp\d|ttmp\[|acc\d|0[xX]|\d|vcc\b|exec\b|m0\b|"
                            r"abs\(|neg\(|sext\()")
_OPERAND_START = re.compile(r"[-|]*(?:[vsa]\[|[vsa]\d|ttmp\d|ttmp\[|acc\d|0[xX]|\d|vcc|exec|m0\b|off\b|abs\(|neg\(|"
                            r"sext\(|\()")
_SCALAR_E32 = re.compile(r"(\s*)(s_\w+_e32)(?=\s|$)")






















_PACKED_HALF = frozenset({"FMT_NUM_PK2_F16", "FMT_NUM_PK2_BF16"})   # LLVM's v2f16/v2bf16 operands
_GPR_COUNTERS = {"v": ".amdgcn.next_free_vgpr", "s": ".amdgcn.next_free_sgpr"}


class FileAssembler:
    def __init__(self, forms: SpecForms, file: str, read: Callable[[Path], str]) -> None:
        self.forms = forms
        self.obj = AsmObject(file)
        self.read = read
        self.sources: list[Iterator[tuple[str, Loc]]] = []
        self.section = ""
        self.section_stack: list[tuple[str, str]] = []
        self.previous = ""
        self.macros: dict[str, Macro] = {}
        self.macro_count = 0
        self.depth = 0
        self.conds: list[list[bool]] = []  # [active, taken, parent_active]
        self.cond_locs: list[Loc] = []
        self.collect: Collect | None = None
        self.kernel: KernelBlock | None = None
        self.meta: list[str] | None = None
        self.sets: dict[str, X.Value | X.Node] = {}
        self.set_locs: dict[str, Loc] = {}
        self.labels: dict[str, tuple[str, Loc]] = {}
        self.fixups: list[Fixup] = []
        self.attrs: dict[str, dict] = {}
        self.order: dict[str, None] = {}  # symbols in the order they were first named (llvm-mc's table order)
        self.sizes: list[tuple[str, X.Node, Loc]] = []
        self.dots = 0
        self.ended = False
        self.errors: list[AsmFileError] = []
        self.label_operands = False
        self.wide_operand = False
        # llvm-mc (AMDGPUAsmParser::initializeGprCountSymbol / updateGprCountSymbols, LLVM 22) defines these two
        # symbols at 0 for an HSA target and raises them past every v/s register an instruction names, so
        # `.amdhsa_next_free_sgpr .amdgcn.next_free_sgpr` counts the registers used so far
        self.sets.update({name: X.Value(0) for name in _GPR_COUNTERS.values()})
        self.switch(".text", loc=None)

    # -- sources
    def push_text(self, text: str, file: str, parent: Loc | None = None) -> None:
        lines = blank_block_comments(text).split("\n")
        raw = text.split("\n")
        self.sources.append((line, Loc(file, i, raw[i - 1] if i <= len(raw) else line, parent))
                            for i, line in enumerate(lines, 1))

    def run(self) -> None:
        while self.sources and not self.ended:
            try:
                text, loc = next(self.sources[-1])
            except StopIteration:
                self.sources.pop()
                continue
            try:
                self.line(text, loc)
            except AsmFileError as exc:   # llvm-mc reports every error of a file: go on with the next line
                self.error(exc)
        try:
            self.end_of_input()
        except AsmFileError as exc:
            self.error(exc)

    def error(self, exc: AsmFileError) -> None:
        """Record one error; past AsmFileErrors.MAX_ERRORS, stop with what was found."""
        self.errors.extend(exc.errors if isinstance(exc, AsmFileErrors) else [exc])
        if len(self.errors) >= AsmFileErrors.MAX_ERRORS:
            raise AsmFileErrors(self.errors[:AsmFileErrors.MAX_ERRORS], truncated=True)

    def end_of_input(self) -> None:
        if self.collect is not None:
            raise AsmFileError(f"no matching '.end{'m' if self.collect.kind == 'macro' else 'r'}' for "
                               f"'.{self.collect.kind}'", self.collect.loc, 1)
        if self.conds:
            raise AsmFileError("unmatched .if (no .endif before the end of the file)", self.cond_locs[-1], 1)
        if self.kernel is not None:
            raise AsmFileError(".amdhsa_kernel block is not closed by .end_amdhsa_kernel", self.kernel.loc, 1)
        if self.meta is not None:
            raise AsmFileError(".amdgpu_metadata block is not closed by .end_amdgpu_metadata",
                               self.obj.metadata_loc or self._eof_loc(), 1)

    def _eof_loc(self) -> Loc:
        return Loc(self.obj.file, 0, "")

    # -- one line
    def line(self, raw: str, loc: Loc) -> None:
        if self.meta is not None:
            if re.match(r"\s*\.end_amdgpu_metadata\b", raw):
                self.obj.metadata = "\n".join(self.meta)
                self.meta = None
            else:
                self.meta.append(raw)
            return
        text = strip_comment(raw)
        if self.collect is None and not self.conds and self.kernel is None:
            if text[:5] in _SKIP_PREFIXES and _SKIP_LINE.match(text):
                return  # debug-only directives (.loc, .cfi_*), the bulk of compiler output
            m = _PLAIN_INSTRUCTION.match(text)  # the common line: an instruction, no label, no macro
            if m and m.group(1) not in self.macros and "=" not in text and ":" not in text[:m.end()]:
                self.instruction(text, loc, m.start(1) + 1)
                return
        if self.collect is not None:
            self.collect_line(text, raw, loc)
            return
        word_m = _WORD.match(text)
        word = word_m.group(1).lower() if word_m else ""
        if self.conds and not self.conds[-1][0]:
            if word.startswith(".if"):
                self.conds.append([False, True, False])
                self.cond_locs.append(loc)
            elif word in (".else", ".elseif", ".endif", ".endc"):
                self.conditional(word, text[word_m.end():], loc, word_m.start(1) + 1)
            return
        if self.kernel is not None:
            self.kernel_line(word, text, word_m, loc)
            return
        pos = 0
        while True:  # labels
            m = _LABEL.match(text, pos)
            if not m:
                break
            name = m.group(1).strip('"')
            self.define_label(name, loc, m.start(1) + 1)
            pos = m.end()
        if pos:
            text = " " * pos + text[pos:]
            word_m = _WORD.match(text)
            word = word_m.group(1).lower() if word_m else ""
        if not text.strip():
            return
        if word_m is None:
            col = len(text) - len(text.lstrip()) + 1
            raise AsmFileError("unexpected token at start of statement", loc, col)
        col = word_m.start(1) + 1
        rest = text[word_m.end():]
        name = word_m.group(1)
        if name.lower() in self.macros or name in self.macros:
            self.expand_macro(self.macros.get(name) or self.macros[name.lower()], rest, loc)
            return
        m = _ASSIGN.match(rest) if "=" in rest else None
        if m:
            self.do_set(name, m.group(1), loc, col)
            return
        if word.startswith("."):
            handler = DIRECTIVES.get(word)
            if handler is not None:
                handler(self, word, rest, loc, col)
                return
            if word.startswith(".cfi_") or word in _DEBUG_ONLY:
                return
            if word.startswith(".amdhsa_"):
                raise AsmFileError(f"{word} is only valid inside an .amdhsa_kernel block", loc, col)
            raise AsmFileError(f"unknown directive {word}", loc, col)
        self.instruction(text, loc, col)

    # -- macro and repetition bodies
    def collect_line(self, text: str, raw: str, loc: Loc) -> None:
        c = self.collect
        assert c is not None
        m = _WORD.match(text)
        word = m.group(1).lower() if m else ""
        if word in OPENERS:
            c.depth += 1
        elif word in CLOSERS or word == ".endr":
            if c.depth == 0:
                want_macro = c.kind == "macro"
                if (word == ".endr") == want_macro:
                    raise AsmFileError(f"unexpected {word} inside .{c.kind}", loc, m.start(1) + 1)
                self.collect = None
                self.finish_collect(c)
                return
            c.depth -= 1
        c.lines.append((raw, loc))

    def finish_collect(self, c: Collect) -> None:
        if c.kind == "macro":
            name, params = parse_macro_header(c.header, c.loc)
            self.macros[name] = Macro(name, params, c.lines, c.loc)
            return
        if c.kind == "rept":
            count = self.absolute(c.header, c.loc, c.loc.text.find(c.header.strip()) + 1, ".rept count")
            if not 0 <= count <= 1 << 20:
                raise AsmFileError(f".rept count {count} must be in 0..{1 << 20}", c.loc, 1)
            self.push_lines([(line, loc) for _ in range(count) for line, loc in c.lines], None)
            return
        args = split_args(c.header)
        if not args or not re.fullmatch(r"[A-Za-z_.$][\w.$]*", args[0]):
            raise AsmFileError(f"expected a parameter name after .{c.kind}", c.loc, 1)
        param = args[0]
        if c.kind == "irp":
            values = args[1:]
        else:
            values = list("".join(args[1:]).strip())
        expanded = []
        for value in values:
            expanded += [(substitute(line, {param: value}, None), loc) for line, loc in c.lines]
        self.push_lines(expanded, None)

    def push_lines(self, lines: list[tuple[str, Loc]], parent: Loc | None) -> None:
        if parent is not None:
            lines = [(t, Loc(loc.file, loc.line, t, parent)) for t, loc in lines]
        self.sources.append(iter(lines))

    def expand_macro(self, macro: Macro, rest: str, loc: Loc) -> None:
        self.depth = sum(1 for _ in loc_chain(loc))
        if self.depth > 64:
            raise AsmFileError(f"macros cannot be nested more than 64 levels deep (expanding '{macro.name}')",
                               loc, 1)
        values = bind_args(macro, rest, loc)
        counter = self.macro_count
        self.macro_count += 1
        self.push_lines([(substitute(line, values, counter), bloc) for line, bloc in macro.body], loc)

    # -- conditionals
    def conditional(self, word: str, rest: str, loc: Loc, col: int) -> None:
        if word in (".else", ".elseif", ".endif", ".endc"):
            if not self.conds:
                raise AsmFileError(f"unexpected {word} (no .if before it)", loc, col)
            top = self.conds[-1]
            if word in (".endif", ".endc"):
                self.conds.pop()
                self.cond_locs.pop()
            elif word == ".else":
                top[0] = top[2] and not top[1]
                top[1] = True
            else:
                if top[2] and not top[1]:
                    ok = bool(self.absolute(rest, loc, col + len(word), ".elseif condition"))
                    top[0], top[1] = ok, ok
                else:
                    top[0] = False
            return
        parent = not self.conds or self.conds[-1][0]
        arg = rest.strip()
        if word in (".ifdef", ".ifndef", ".ifnotdef"):
            defined = arg in self.sets or arg in self.labels
            ok = defined if word == ".ifdef" else not defined
        elif word in (".ifb", ".ifnb"):
            ok = (arg == "") == (word == ".ifb")
        elif word in (".ifc", ".ifnc"):
            parts = split_args(arg)
            if len(parts) != 2:
                raise AsmFileError(f"{word} takes two strings separated by a comma", loc, col)
            same = parts[0].strip("'\"") == parts[1].strip("'\"")
            ok = same if word == ".ifc" else not same
        else:
            value = self.absolute(rest, loc, col + len(word), f"{word} condition")
            tests = {".if": value != 0, ".ifne": value != 0, ".ifeq": value == 0, ".ifgt": value > 0,
                     ".ifge": value >= 0, ".iflt": value < 0, ".ifle": value <= 0}
            if word not in tests:
                raise AsmFileError(f"unknown directive {word}", loc, col)
            ok = tests[word]
        self.conds.append([parent and ok, ok, parent])
        self.cond_locs.append(loc)

    # -- symbols and expressions
    def lookup_now(self, name: str) -> X.Value | None:
        v = self.sets.get(name)
        if isinstance(v, X.Value):
            return v
        if v is not None:
            return X.evaluate(v, self.lookup_now)
        return None

    def absolute(self, text: str, loc: Loc, col: int, what: str) -> int:
        try:
            node = X.parse_expr(text)
            v = X.evaluate(node, self.lookup_now)
        except X.ExprSyntaxError as exc:
            raise AsmFileError(f"{what}: {exc}", loc, col + exc.col) from None
        except X.ExprValueError as exc:
            raise AsmFileError(f"{what}: {exc}", loc, col) from None
        if not v.absolute:
            raise AsmFileError(f"{what} must be an absolute expression (known constants), but it uses "
                               f"{v.symbol or v.minus!r}", loc, col)
        return v.const

    def define_label(self, name: str, loc: Loc, col: int) -> None:
        if name in self.labels or name in self.sets:
            raise AsmFileError(f"invalid symbol redefinition of {name!r}", loc, col)
        self.labels[name] = (self.section, loc)
        self.order.setdefault(name, None)
        self.emit(LabelDef(name), loc)

    def do_set(self, name: str, text: str, loc: Loc, col: int) -> None:
        name = name.strip().strip('"')
        if name in self.labels:
            raise AsmFileError(f"invalid symbol redefinition of {name!r} (it is a label)", loc, col)
        at = loc.text.find(text) if text else -1
        expr_col = at + 1 if at >= 0 else col
        try:
            node = X.parse_expr(text)
        except X.ExprSyntaxError as exc:
            raise AsmFileError(f"invalid expression for {name}: {exc}", loc, expr_col + exc.col) from None
        if isinstance(node, X.Dot) or any(isinstance(n, X.Dot) for n in _walk(node)):
            node = X.Sym(self.dot_label(loc))
        try:
            value = X.evaluate(node, self.lookup_now)
            self.sets[name] = value if value.absolute else node
        except X.ExprValueError:
            self.sets[name] = node
        self.set_locs[name] = loc
        self.order.setdefault(name, None)

    def dot_label(self, loc: Loc) -> str:
        name = f".Ljitgemm.dot.{self.dots}"
        self.dots += 1
        self.labels[name] = (self.section, loc)
        self.emit(LabelDef(name), loc)
        return name

    def attr(self, name: str) -> dict:
        self.order.setdefault(name, None)
        return self.attrs.setdefault(name, {})

    # -- sections
    def switch(self, name: str, loc: Loc | None, flags: str | None = None, kind: str | None = None,
               entsize: int = 0) -> None:
        sections = self.obj.sections
        if name not in sections:
            base = next((v for k, v in DEFAULT_SECTIONS.items() if name == k or name.startswith(k + ".")), None)
            if flags is None:
                flags = base[0] if base else ""
            if kind is None:
                kind = base[1] if base else ("note" if name.startswith(".note") else "progbits")
            sections[name] = Section(name, flags, kind, entsize)
        self.previous, self.section = self.section, name

    def emit(self, item, loc: Loc, statement=None, text: str = "") -> int:
        sec = self.obj.sections[self.section]
        sec.items.append(item)
        sec.places.append((loc, statement, text))
        return len(sec.items) - 1

    # -- instructions
    def instruction(self, text: str, loc: Loc, col: int) -> None:
        sec = self.obj.sections[self.section]
        if sec.type == "nobits":
            raise AsmFileError(f"instruction in section {self.section}, which holds no data (nobits)", loc, col)
        text = self.llvm_spellings(text)
        text, fixups = self.operand_expressions(text, loc)
        fast = parse_line(text)  # the parser's fast path for one line (what parse() tries first)
        if fast is not None and not fast[0] and fast[1] is not None:
            self.count_registers(fast[1])
            index = self.emit(fast[1], loc, Statement("instruction", loc.line, col, fast[1]), text)
            for node, fcol in fixups:
                self.fixups.append(Fixup(self.section, index, 4, node, loc, fcol, True))
            return
        try:
            statements = parse(text, loc.file)
        except AsmError as exc:
            raise AsmFileError(exc.reason, loc, exc.col or col) from None
        for st in statements:
            if st.kind != "instruction":
                raise AsmFileError("expected one instruction", loc, st.col)
            self.count_registers(st.instruction)
            index = self.emit(st.instruction, loc, st, text)
            for node, fcol in fixups:
                self.fixups.append(Fixup(self.section, index, 4, node, loc, fcol, True))

    def llvm_spellings(self, text: str) -> str:
        """Spellings llvm-mc-22 accepts that the instruction grammar does not, rewritten to ones it does (each
        keeps its meaning; found by mutating corpus lines beside llvm-mc, tests/isa/test_asm_mutations.py): a
        trailing comma after the operands; a hex float (`0x1p3` is 8.0); a register index written as an
        expression (`v[0x10:0x11]`, `s[2+2]`); `_e32` on a scalar instruction, which has only that size."""
        if text.rstrip().endswith(","):
            text = text.rstrip()[:-1]
        body = text.lstrip()
        if body.count(" ") + body.count("\t") - body.count(", ") > 1:   # blanks besides the mnemonic's and commas
            head = _MNEMONIC.match(text)
            if head and _MISSING_COMMA.search(text, head.end()):
                text = _with_commas(text, head.end())
        m = _SCALAR_E32.match(text) if "_e32" in text else None
        if m and self.forms.forms_for(m.group(2)) is None and self.forms.forms_for(m.group(2)[:-4]) is not None:
            text = text[:m.start(2)] + m.group(2)[:-4] + text[m.end(2):]
        if _ODD_SPELLING.search(text) is None:   # the common line: none of the spellings below
            return text
        text = _HEX_FLOAT.sub(_hex_float, text)
        text = _REG_INDEX.sub(self._register_index, text)
        text = _MOD_LIST.sub(self._list_items, text)
        return _COUNTER_EXPR.sub(self._counter_value, text)

    def _absolute(self, text: str) -> int | None:
        try:
            v = X.evaluate(X.parse_expr(text), self.lookup_now)
        except (X.ExprSyntaxError, X.ExprValueError):
            return None
        return v.const if v.absolute else None

    def _list_items(self, m: re.Match) -> str:
        """`quad_perm:[3,!2,1,0]`: llvm-mc reads each entry of a modifier's list as an absolute expression."""
        items = m.group(2).split(",")
        if all(_PLAIN_ITEM.fullmatch(i.strip()) for i in items) or "." in m.group(2):
            return m.group(0)   # plain, or a float (from a hex float) that llvm-mc refuses here
        values = [self._absolute(i) if not _PLAIN_ITEM.fullmatch(i.strip()) else i.strip() for i in items]
        if any(v is None for v in values):
            return m.group(0)
        return f"{m.group(1)}:[{','.join(str(v) for v in values)}]"

    def _counter_value(self, m: re.Match) -> str:
        """`vmcnt(1+1)`, `expcnt(!1)`: a counter's value is an absolute expression in llvm-mc."""
        if m.group(2).strip().isdigit():
            return m.group(0)
        v = self._absolute(m.group(2))
        return m.group(0) if v is None else f"{m.group(1)}({v})"

    def _register_index(self, m: re.Match) -> str:
        """`v[<expr>]` or `v[<expr>:<expr>]` with decimal indexes, when the expressions are absolute."""
        parts = m.group(2).split(":")
        if all(p.strip().isdigit() for p in parts) or len(parts) > 2:
            return m.group(0)
        values = []
        for part in parts:
            try:
                v = X.evaluate(X.parse_expr(part), self.lookup_now)
            except (X.ExprSyntaxError, X.ExprValueError):
                return m.group(0)
            if not v.absolute or v.const < 0:
                return m.group(0)
            values.append(str(v.const))
        return f"{m.group(1)}[{':'.join(values)}]"

    def undefined_name(self, word: str) -> bool:
        """A word that is no register, no syntax keyword and no `.set` symbol: an undefined name or a label (as an
        operand of an instruction without a branch target, llvm-mc makes either a literal with a fixup)."""
        if word in _KNOWN_WORDS:
            return False
        if type(identifier_operand(word)) is not Label or word.lower() in _SYNTAX_WORDS:
            if len(_KNOWN_WORDS) < 1 << 16:
                _KNOWN_WORDS.add(word)   # registers and keywords stay what they are: remembered
            return False
        return word not in self.sets

    def operand_wider_than_32(self, mnemonic: str, index: int) -> bool:
        """Whether operand `index` holds 64 bits in every form of the instruction: llvm-mc refuses a relocatable
        value (an undefined name) there ("invalid operand for instruction"): its literal has 32 bits."""
        forms = self.forms.forms_for(mnemonic)
        sizes = [f.slots[index].size for f in forms or () if index < len(f.slots)]
        return bool(sizes) and min(sizes) > 32

    def no_relocation(self, mnemonic: str, index: int) -> bool:
        """Whether operand `index` takes no relocatable value in any form: a packed operand (LLVM's
        isVSrc_v2f16/v2b16 accept no expression) or the mandatory K literal of v_fmamk/v_fmaak (isKImmFP32 wants a
        number); llvm-mc says "invalid operand for instruction" there (LLVM AMDGPUAsmParser.cpp)."""
        forms = self.forms.forms_for(mnemonic)
        slots = [f.slots[index] for f in forms or () if index < len(f.slots)]
        return bool(slots) and all(s.kind == "literal" and not f.literal_optional or s.data_format in _PACKED_HALF
                                   for f, s in zip(forms, slots, strict=False))

    def takes_label(self, mnemonic: str) -> bool:
        """Whether the instruction has a branch-target operand (a name there is a label, defined later or not)."""
        forms = self.forms.forms_for(mnemonic)
        return forms is None or any(s.kind == "label" for f in forms for s in f.slots)

    def count_registers(self, inst: AsmInstruction) -> None:
        """Raise `.amdgcn.next_free_{v,s}gpr` past the v/s registers `inst` names (see __init__)."""
        for op in inst.operands:
            reg = getattr(op, "operand", op)
            name = _GPR_COUNTERS.get(getattr(reg, "kind", ""))
            if name is not None:
                old = self.sets.get(name)
                top = reg.index + reg.count
                if isinstance(old, X.Value) and old.absolute and old.const < top:
                    self.sets[name] = X.Value(top)

    def operand_expressions(self, text: str, loc: Loc) -> tuple[str, list[tuple[X.Node, int]]]:
        """The instruction text with each operand that is an expression replaced: by its value when that is
        known now, else by a placeholder literal with a fixup (a label difference, `sym@rel32@lo+4`), as
        llvm-mc encodes a non-constant operand as a 32-bit literal with a fixup."""
        if _SIMPLE_INSTRUCTION.match(text):
            if self.sets.keys().isdisjoint(_WORDS.findall(text)) and \
                    not any(map(self.undefined_name, _BARE_OPERAND.findall(text))):
                return text, []
        m = _MNEMONIC_REST.match(text)
        if not m or not m.group(3):
            return text, []
        self.label_operands = self.takes_label(m.group(1).strip())
        start = m.end(2)
        body = m.group(3)
        parts = split_with_offsets(body)
        out = text
        fixups = []
        shift = 0
        sets = self.sets
        named = bool(sets) and not sets.keys().isdisjoint(_WORDS.findall(body))  # a .set symbol is used
        mnemonic = m.group(1).strip()
        placeholder = _placeholder(text)
        for i, (part, off) in enumerate(parts):
            self.wide_operand = self.operand_wider_than_32(mnemonic, i) or self.no_relocation(mnemonic, i)
            if _SIMPLE_OPERAND.match(part) and not (named and not sets.keys().isdisjoint(_WORDS.findall(part))) \
                    and not (not self.label_operands and self.undefined_name(part.strip())):
                continue
            last = i == len(parts) - 1
            lead = len(part) - len(part.lstrip())
            try:
                node, end = X.parse_prefix(part)
            except X.ExprSyntaxError:
                continue
            rest = part[end:]
            if rest.strip() and (not last or not rest[:1].isspace()):
                continue
            if not self.is_expression(node) and not part.lstrip().startswith(("(", "-(")):
                continue   # a register, a plain number: the instruction parser reads it (`(1)` it cannot)
            try:
                value = X.evaluate(node, self.lookup_now)
            except X.ExprValueError as exc:
                raise AsmFileError(str(exc), loc, start + off + lead + 1) from None
            if value.absolute:
                replacement = str(value.const)
            else:
                replacement = hex(placeholder)
                fixups.append((node, start + off + lead + 1))
            expr_text = part[lead:end].rstrip()
            replacement = replacement.ljust(len(expr_text))
            a = start + off + lead + shift
            out = out[:a] + replacement + out[a + len(expr_text):]
            shift += len(replacement) - len(expr_text)
        return out, fixups

    def is_expression(self, node: X.Node) -> bool:
        syms = X.symbols_of(node)
        for name in syms:
            op = identifier_operand(name)
            if type(op) is not Label:
                return False  # a register or `off`: an operand the instruction parser reads
        if isinstance(node, X.Num):
            return False
        if isinstance(node, X.Sym):
            # a name that is no register, no label and no symbol yet: llvm-mc makes it a literal with a
            # relocation (an undefined symbol), unless the line defines it later as a label
            return node.specifier is not None or node.name in self.sets or (
                not self.label_operands and self.undefined_name(node.name) and not self.wide_operand)
        if isinstance(node, X.Unary) and isinstance(node.arg, X.Num) and node.op == "-":
            return False   # `-5`: the instruction parser's (a negative constant, or neg of a float)
        if isinstance(node, X.Unary) and node.op in ("~", "!"):
            return True
        if not syms and not any(isinstance(n, X.Binary | X.Call) for n in _walk(node)):
            return False
        return True

    def encode_section(self, sec: Section):
        """The section encoded; every instruction that cannot be is reported (AsmFileErrors, bounded), each
        found by encoding again without the ones already reported, as llvm-mc reports each bad line."""
        errors: list[AsmFileError] = []
        items, places = list(sec.items), list(sec.places)
        while True:
            try:
                result = encode_items(items, self.forms)
            except StatementError as exc:
                loc, st, text = places[exc.index]
                col = 1
                if st is not None:
                    from .assembler import _place
                    col = _place(locate(st, text, loc.file), exc.error)
                errors.append(AsmFileError(exc.error.reason, loc, col))
                if len(errors) >= AsmFileErrors.MAX_ERRORS:
                    raise AsmFileErrors(errors, truncated=True) from None
                del items[exc.index], places[exc.index]
                continue
            if errors:
                raise AsmFileErrors(sorted(errors, key=lambda e: (e.file or "", e.line or 0))) from None
            return result

    # -- end of file: layout, fixups, symbols
    def finish(self) -> AsmObject:
        obj = self.obj
        positions: dict[str, tuple[str, int]] = {}
        offsets: dict[str, tuple[int, ...]] = {}
        for sec in obj.sections.values():
            if sec.type == "nobits":
                pos = 0
                for item, (loc, _st, _t) in zip(sec.items, sec.places, strict=True):
                    if isinstance(item, LabelDef):
                        positions[item.name] = (sec.name, pos)
                    elif isinstance(item, Align):
                        gap = -pos % item.boundary
                        pos += gap if item.max_skip is None or gap <= item.max_skip else 0
                    elif isinstance(item, Data):
                        pos += len(item.words) * item.width
                    else:
                        raise AsmFileError(f"section {sec.name} holds no data (nobits)", loc, 1)
                sec.size = pos
                continue
            result = self.encode_section(sec)
            sec.data = result.code
            sec.size = len(result.code)
            offsets[sec.name] = result.offsets
            for name, off in result.symbols.items():
                positions[name] = (sec.name, off)
            ends = list(result.offsets[1:]) + ([len(result.code)] if result.offsets else [])
            listing = obj.listing
            name = sec.name
            align = sec.align
            for item, place, off, end in zip(sec.items, sec.places, result.offsets, ends, strict=True):
                t = type(item)
                if t is AsmInstruction:
                    listing.append(Listed(name, off, end - off, place[0], item))
                    if align < 4:
                        align = 4  # a section holding instructions is at least dword aligned, as llvm-mc makes it
                elif t is Align and item.boundary > align:
                    align = item.boundary
            sec.align = align
        for sec in obj.sections.values():
            if sec.type == "nobits":
                sec.align = max([sec.align, *(i.boundary for i in sec.items if type(i) is Align)])
            sec.items = []
        for name in obj.sections:  # a section's name is a symbol for its start (`.long .debug_abbrev`)
            positions.setdefault(name, (name, 0))
        self.positions = positions
        obj.labels = [(n, *positions[n]) for n in self.labels if n in positions and not n.startswith(".Ljitgemm.")]
        data = {name: bytearray(sec.data) for name, sec in obj.sections.items()}
        for fx in self.fixups:
            sec = obj.sections[fx.section]
            start = offsets[fx.section][fx.index]
            if fx.literal:
                end = offsets[fx.section][fx.index + 1] if fx.index + 1 < len(offsets[fx.section]) else sec.size
                if end - start < 8:
                    raise AsmFileError("this operand needs a 32-bit literal, which the instruction's encoding does "
                                       "not have", fx.loc, fx.col)
                at = end - 4
            else:
                at = start
            self.apply(fx, at, data[fx.section])
        for name, sec in obj.sections.items():
            sec.data = bytes(data[name])
        self.symbols()
        return obj

    def resolve(self, name: str, seen: frozenset = frozenset()) -> X.Value | None:
        """A symbol's final value: labels stay symbolic (their position is looked up by `place`)."""
        if name in self.labels:
            return X.Value(0, name)
        v = self.sets.get(name)
        if v is None:
            return None
        if isinstance(v, X.Value):
            return v
        if name in seen:
            raise X.ExprValueError(f"symbol {name!r} is defined in terms of itself")
        return X.evaluate(v, lambda n: self.resolve(n, seen | {name}))

    def final(self, node: X.Node, loc: Loc, col: int) -> X.Value:
        try:
            v = X.evaluate(node, self.resolve)
        except X.ExprValueError as exc:
            raise AsmFileError(str(exc), loc, col) from None
        if v.minus is not None:  # a difference of labels: constant when both lie in one section
            a, b = self.positions.get(v.symbol or ""), self.positions.get(v.minus)
            if v.symbol is None or a is None or b is None or a[0] != b[0]:
                raise AsmFileError(f"cannot represent {v.symbol} - {v.minus} (the symbols must be labels of "
                                   "one section)", loc, col)
            v = X.Value(v.const + a[1] - b[1], specifier=v.specifier)
        return v

    def apply(self, fx: Fixup, at: int, buf: bytearray) -> None:
        v = self.final(fx.node, fx.loc, fx.col)
        width = fx.width
        if v.symbol is None:
            if v.specifier:
                raise AsmFileError(f"@{v.specifier} needs a symbol", fx.loc, fx.col)
            value = v.const
            if not -(1 << (8 * width - 1)) <= value < (1 << (8 * width)):
                raise AsmFileError(f"value {value} does not fit in {width} byte(s)", fx.loc, fx.col)
            buf[at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            return
        spec = v.specifier
        # an instruction's literal is PC-relative or absolute by how the operand is written (X.needs_pcrel)
        pcrel = fx.literal and X.needs_pcrel(fx.node)
        kinds = {None: {4: "REL32" if pcrel else "ABS32", 8: "ABS64"}, "abs32@lo": {4: "ABS32_LO"},
                 "abs32@hi": {4: "ABS32_HI"},
                 "abs64": {8: "ABS64"}, "rel32@lo": {4: "REL32_LO"}, "rel32@hi": {4: "REL32_HI"},
                 "rel32": {4: "REL32"}, "rel64": {8: "REL64"}, "gotpcrel": {4: "GOTPCREL"},
                 "gotpcrel32@lo": {4: "GOTPCREL32_LO"}, "gotpcrel32@hi": {4: "GOTPCREL32_HI"}}[spec]
        if width not in kinds:
            raise AsmFileError(f"{'@' + spec if spec else 'an address'} cannot be stored in {width} byte(s)",
                               fx.loc, fx.col)
        kind = kinds[width]
        where = self.positions.get(v.symbol)
        binding = self.attrs.get(v.symbol, {}).get("binding", "local")
        if kind == "REL32" and where is not None and where[0] == fx.section and binding == "local":
            # PC-relative to a local label of this section, no specifier: resolved here, as llvm-mc does; a
            # specifier (`@rel32@lo`) keeps its relocation (llvm-mc-22's object, tests/isa/test_asm_relocations.py)
            delta = where[1] + v.const - at
            buf[at:at + width] = (delta & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            return
        buf[at:at + width] = bytes(width)  # RELA: the addend is in the relocation, the field is zero
        if where is not None and binding == "local" and not kind.startswith("GOT"):
            self.obj.relocations.append(Relocation(fx.section, at, kind, where[0], where[1] + v.const, True))
        else:
            self.obj.relocations.append(Relocation(fx.section, at, kind, v.symbol, v.const))
            self.attr(v.symbol).setdefault("referenced", True)

    def symbols(self) -> None:
        obj = self.obj
        aliases: dict[str, str] = {}  # .set symbol -> the label it is relative to
        for name, (sec, off) in self.positions.items():
            if name.startswith(".L") and name not in self.attrs or name in obj.sections and name not in self.labels:
                continue
            obj.symbols[name] = Symbol(name, sec, off, defined=True)
        for name in self.sets:
            if name.startswith(".L") or name not in self.set_locs:  # the GPR counters llvm-mc made itself
                continue
            loc = self.set_locs[name]
            v = self.final(self.sets[name] if isinstance(self.sets[name], X.Node | X.Num) else X.Num(0), loc, 1) \
                if not isinstance(self.sets[name], X.Value) else self.sets[name]
            if v.absolute:
                obj.symbols[name] = Symbol(name, None, v.const & (2**64 - 1), absolute=True, defined=True)
            elif v.symbol in self.positions:
                sec, off = self.positions[v.symbol]
                obj.symbols[name] = Symbol(name, sec, off + v.const, defined=True)
                aliases[name] = v.symbol
        for name, attrs in self.attrs.items():
            sym = obj.symbols.get(name)
            if sym is None:
                if name in self.positions:  # a .L label given attributes
                    sec, off = self.positions[name]
                    sym = obj.symbols[name] = Symbol(name, sec, off, defined=True)
                else:
                    sym = obj.symbols[name] = Symbol(name, binding="global")
            sym.binding = attrs.get("binding", sym.binding)
            sym.type = attrs.get("type", sym.type)
            sym.visibility = attrs.get("visibility", sym.visibility)
        for name, node, loc in self.sizes:
            v = self.final(node, loc, 1)
            if not v.absolute:
                raise AsmFileError(f".size of {name} must be a constant (e.g. .Lend-{name})", loc, 1)
            if name in obj.symbols:
                obj.symbols[name].size = v.const
        sized = {name for name, _n, _l in self.sizes}
        for name, base in aliases.items():  # an alias without .size has its base's (ELFObjectWriter)
            if name not in sized and base in obj.symbols:
                obj.symbols[name].size = obj.symbols[base].size
        rank = {name: i for i, name in enumerate(self.order)}
        obj.symbols = dict(sorted(obj.symbols.items(), key=lambda kv: rank.get(kv[0], len(rank))))
        for k in obj.kernels:
            k.offset = self.positions[k.name + ".kd"][1]

    # -- kernel descriptor block
    def kernel_line(self, word: str, text: str, m, loc: Loc) -> None:
        k = self.kernel
        assert k is not None
        if not word:
            if text.strip():
                raise AsmFileError("expected .amdhsa_ directive or .end_amdhsa_kernel", loc, 1)
            return
        col = m.start(1) + 1
        if word == ".end_amdhsa_kernel":
            self.obj.kernels.append(k)
            self.kernel = None
            return
        if not word.startswith(".amdhsa_"):
            raise AsmFileError("expected .amdhsa_ directive or .end_amdhsa_kernel", loc, col)
        key = word[len(".amdhsa_"):]
        if key in k.values:
            raise AsmFileError(f"{word} directive given twice in this .amdhsa_kernel block", loc, col)
        k.values[key] = self.absolute(text[m.end():], loc, m.end() + 1, word)
        k.places[key] = loc


_walk = X.walk  # iterative: expression trees may be deeper than Python's recursion limit


def _hex_float(m: re.Match) -> str:
    """A hex float's value (`0x1p3` is 8.0) — but not inside a modifier's list (`quad_perm:[3,0x1.8p1,1,0]`), where
    llvm-mc wants integers ("expected a 2-bit value"): left as written there, for the parser to refuse."""
    before = m.string[:m.start()]
    if before.rfind(":[") > before.rfind("]"):
        return m.group(1)
    return repr(float.fromhex(m.group(1)))


def _with_commas(text: str, start: int) -> str:
    """`text` with a comma put between two operands that only spaces separate (before the first modifier), as
    llvm-mc reads them: `v_med3_i32 v4, v7 v10, v13` is `v_med3_i32 v4, v7, v10, v13`."""
    words: list[tuple[int, int, bool]] = []   # (start, end, a comma before it)
    depth, i, n, comma = 0, start, len(text), False
    while i < n:
        c = text[i]
        if depth == 0 and c in " \t":
            i += 1
            continue
        if depth == 0 and c == ",":
            comma = True
            i += 1
            continue
        j = i
        while j < n and (depth or text[j] not in " \t,"):
            if text[j] in "[(":
                depth += 1
            elif text[j] in ")]":
                depth = max(depth - 1, 0)
            j += 1
        words.append((i, j, comma))
        comma = False
        i = j
    out, last = [], 0
    for k, (a, b, comma) in enumerate(words):
        word = text[a:b]
        if not _OPERAND_START.match(word):
            break    # a modifier (`offset:4`, `glc`) or an operator: the rest is the parser's
        if k and not comma and _OPERAND_START.match(text[words[k - 1][0]:words[k - 1][1]]):
            out.append(text[last:a].rstrip() + ", ")
            last = a
    return "".join(out) + text[last:]
_NUMBER = re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+)")


def _placeholder(text: str) -> int:
    """The literal a relocatable operand is encoded with until its fixup is applied: one no number of the line
    equals, so the encoder counts it as a literal of its own ("only one unique literal operand is allowed" in
    llvm-mc: `s_sub_u32 s8, sym, 0x12345678` has two)."""
    value = _PLACEHOLDER
    if any(c.isdigit() for c in text):
        seen = set()
        for tok in _NUMBER.findall(text):
            try:
                seen.add(syn.integer_value(tok) & 0xFFFFFFFF)
            except ValueError:
                pass
        while value in seen:
            value += 1
    return value








# -- directive handlers: (assembler, directive, rest of line, loc, column of the directive)













_replace_dot = X.replace_dot


































def assemble_file(text: str, spec: Spec | SpecForms, *, file: str = "<input>",
                  read: Callable[[Path], str] | None = None) -> AsmObject:
    """Assemble a whole `.s` file into an AsmObject; AsmFileError (file:line:col plus the macro chain) on
    anything llvm-mc would reject. `read` reads `.include`d files (default: from disk, relative to `file`)."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    from jitgemm.util.files import MAX_SOURCE_BYTES, read_bounded

    asm = FileAssembler(forms, file, read or (lambda p: read_bounded(p, MAX_SOURCE_BYTES).decode()))
    asm.push_text(text, file)
    asm.run()
    if not asm.errors:
        return asm.finish()
    try:   # the lines that parsed may still fail to encode: report those too, as llvm-mc does
        asm.finish()
    except AsmFileError as exc:
        asm.errors.extend(exc.errors if isinstance(exc, AsmFileErrors) else [exc])
    except Exception:  # noqa: BLE001 (a state the first errors left inconsistent: they are what to report)
        pass
    errors = sorted(asm.errors, key=lambda e: (e.file != file, e.line or 0, e.col or 0))
    limit = AsmFileErrors.MAX_ERRORS
    raise AsmFileErrors(errors[:limit], truncated=len(errors) >= limit)


def find_target(text: str) -> str | None:
    """The target id a file names in `.amdgcn_target` (normalized), found without assembling it."""
    m = re.search(r'^\s*\.amdgcn_target\s+"([^"]*)"', text, re.M)
    return normalize_target(m.group(1)) if m else None


__all__ = ["FileAssembler", "assemble_file", "find_target"]
