"""Source positions, comments, and the text-level constructs of `.s` files: `.macro`, `.rept`, `.irp`, `.irpc`.

These expand to lines before the statements are assembled, as in GNU as and LLVM MC (AsmParser's
handleMacroEntry / parseDirectiveRept / parseDirectiveIrp): `\\name` is replaced by an argument, `\\()`
joins text, `\\@` counts macro invocations. Each expanded line keeps its origin (file and line of the body)
and the chain of instantiations it came from, so an error inside a macro can say where the macro was used,
as llvm-mc's "note: while in macro instantiation" does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from jitgemm.isa.asm_errors import AsmError


class Loc(NamedTuple):
    """Where a line comes from: file and 1-based line, and the instantiation that produced it (if any).
    A NamedTuple: one is made per source line, so it must be cheap."""

    file: str
    line: int
    text: str
    parent: Loc | None = None


class AsmFileError(AsmError):
    """An AsmError with the macro instantiation chain below it (llvm-mc's notes)."""

    def __init__(self, message: str, loc: Loc, col: int = 1) -> None:
        super().__init__(message, file=loc.file, line=loc.line, col=col, source_line=loc.text)
        self.chain: list[tuple[str, int, int, str]] = []
        parent = loc.parent
        while parent is not None:
            col0 = len(parent.text) - len(parent.text.lstrip()) + 1
            self.chain.append((parent.file, parent.line, col0, parent.text))
            parent = parent.parent
        self.args = (self.render(),)

    def render(self) -> str:
        """The llvm-mc layout: `file:line:col: error: message`, the line, a caret, then the notes."""
        out = [f"{self.file}:{self.line}:{self.col}: error: {self.reason}"]
        if self.source_line is not None:
            out += [self.source_line, " " * (max(1, self.col or 1) - 1) + "^"]
        for file, line, col, text in self.chain:
            out += [f"{file}:{line}:{col}: note: while in macro instantiation", text, " " * (col - 1) + "^"]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.col, "severity": "error",
                "message": self.reason, "source": self.source_line,
                "notes": [{"file": f, "line": ln, "column": c, "message": "while in macro instantiation"}
                          for f, ln, c, _t in self.chain]}


class AsmFileErrors(AsmFileError):
    """Every error of a file (up to MAX_ERRORS), as llvm-mc reports them all instead of stopping at the first.
    Its position, reason and macro chain are the first error's, so a caller that handles one error still works;
    `errors` holds each, and the message prints them all in llvm-mc's layout."""

    MAX_ERRORS = 100

    def __init__(self, errors: list[AsmFileError], truncated: bool = False) -> None:
        first = errors[0]
        AsmError.__init__(self, first.reason, file=first.file, line=first.line, col=first.col,
                          source_line=first.source_line)
        self.chain = first.chain
        self.errors = list(errors)
        self.truncated = truncated
        self.args = (self.render(),)

    def render(self) -> str:
        text = "\n".join(e.render() for e in self.errors)
        if self.truncated:
            text += f"\n{self.file}: note: stopped after {len(self.errors)} errors"
        return text

    def to_json(self) -> dict:
        return {**self.errors[0].to_json(), "errors": [e.to_json() for e in self.errors]}


def strip_comment(line: str) -> str:
    """The line without its `;` or `//` comment (quotes respected)."""
    if ";" not in line and "/" not in line:
        return line
    if '"' not in line:
        cut = line.find(";")
        slash = line.find("//")
        if slash >= 0 and (cut < 0 or slash < cut):
            cut = slash
        return line if cut < 0 else line[:cut]
    quote = False
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == '"':
            quote = not quote
        elif c == "\\" and quote:
            i += 1
        elif not quote and (c == ";" or (c == "/" and i + 1 < n and line[i + 1] == "/")):
            return line[:i]
        i += 1
    return line


def blank_block_comments(text: str) -> str:
    """`/* ... */` replaced by spaces (newlines kept), so line and column numbers stay right."""
    if "/*" not in text:
        return text
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def split_args(text: str) -> list[str]:
    """Comma-separated arguments at bracket depth 0 (quotes respected), stripped."""
    out, depth, quote, cur = [], 0, False, []
    for c in text:
        if c == '"':
            quote = not quote
        elif not quote:
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c == "," and depth == 0:
                out.append("".join(cur).strip())
                cur = []
                continue
        cur.append(c)
    last = "".join(cur).strip()
    if last or out:
        out.append(last)
    return out


@dataclass
class MacroParam:
    name: str
    default: str = ""
    required: bool = False
    vararg: bool = False


@dataclass
class Macro:
    name: str
    params: list[MacroParam]
    body: list[tuple[str, Loc]]
    loc: Loc


_PARAM = re.compile(r"\s*([A-Za-z_.$][\w.$]*)\s*(?::\s*(req|vararg))?\s*(?:=\s*(.*))?$")


def parse_macro_header(rest: str, loc: Loc) -> tuple[str, list[MacroParam]]:
    """`.macro NAME p1, p2=default, p3:req, rest:vararg` -> name and parameters."""
    rest = rest.strip()
    m = re.match(r"([A-Za-z_.$][\w.$]*)\s*,?\s*(.*)$", rest)
    if not m:
        raise AsmFileError("expected identifier in '.macro' directive", loc, _col(loc, rest))
    name, params_text = m.group(1), m.group(2)
    parts = split_args(params_text) if "," in params_text else params_text.split()
    params = []
    for part in parts:
        pm = _PARAM.match(part)
        if not pm:
            raise AsmFileError(f"invalid macro parameter {part!r} (write NAME, NAME=default, NAME:req or "
                               "NAME:vararg)", loc, _col(loc, part))
        params.append(MacroParam(pm.group(1), (pm.group(3) or "").strip(), pm.group(2) == "req",
                                 pm.group(2) == "vararg"))
    return name, params


def bind_args(macro: Macro, text: str, loc: Loc) -> dict[str, str]:
    """Macro arguments of one invocation, positional or `name=value`, with defaults."""
    text = text.strip()
    values = split_args(text) if ("," in text or len(macro.params) <= 1) else text.split()
    if macro.params and macro.params[-1].vararg and len(values) > len(macro.params):
        keep = len(macro.params) - 1
        values = values[:keep] + [", ".join(values[keep:])]
    if len(values) > len(macro.params) and any(values[len(macro.params):]):
        raise AsmFileError(f"too many positional arguments for macro '{macro.name}' (it takes "
                           f"{len(macro.params)})", loc, _col(loc, values[len(macro.params)]))
    bound: dict[str, str] = {}
    names = {p.name for p in macro.params}
    positional = 0
    for value in values:
        m = re.match(r"([A-Za-z_.$][\w.$]*)\s*=(?!=)\s*(.*)$", value)
        if m and m.group(1) in names:
            bound[m.group(1)] = m.group(2).strip()
            continue
        if positional < len(macro.params):
            bound.setdefault(macro.params[positional].name, value)
        positional += 1
    for p in macro.params:
        if not bound.get(p.name):
            if p.required:
                raise AsmFileError(f"missing value for required parameter '{p.name}' in macro '{macro.name}'",
                                   loc, _col(loc, macro.name))
            bound[p.name] = bound.get(p.name) or p.default
    return bound


def substitute(body_line: str, values: dict[str, str], counter: int | None) -> str:
    """One body line with `\\param`, `\\()` and `\\@` replaced."""
    if "\\" not in body_line:
        return body_line
    names = sorted(values, key=len, reverse=True)

    def repl(m: re.Match) -> str:
        word = m.group(1)
        if word == "()":
            return ""
        if word == "@":
            return str(counter) if counter is not None else m.group(0)
        for name in names:
            if word.startswith(name) and (len(word) == len(name)):
                return values[name]
        return m.group(0)

    return re.sub(r"\\(\(\)|@|[A-Za-z_.$][\w.$]*)", repl, body_line)


def _col(loc: Loc, fragment: str) -> int:
    at = loc.text.find(fragment) if fragment else -1
    return at + 1 if at >= 0 else len(loc.text) - len(loc.text.lstrip()) + 1
