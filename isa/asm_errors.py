"""Errors and warnings of the assembler and disassembler.

An `EncodeError` says what is wrong with one instruction (which operand or modifier, what was given,
what the spec accepts); the assembler turns it into an `AsmError` that also says where
(file:line:col), so both the API and the CLI report a place a user can go to.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import IsaError


class AsmError(IsaError):
    """Assembly text or an instruction that cannot be assembled; the message starts with file:line:col."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 col: int | None = None, source_line: str | None = None) -> None:
        self.file = file
        self.line = line
        self.col = col
        self.reason = message
        self.source_line = source_line
        where = ""
        if file is not None or line is not None:
            where = f"{file or '<input>'}:{line if line is not None else '?'}:{col if col is not None else '?'}: "
        super().__init__(where + message)


class EncodeError(IsaError):
    """One instruction that no encoding of the spec can hold.

    `operand` is the 0-based index of the operand at fault (None when it is not one operand) and
    `modifier` the name of the modifier at fault, so a caller with source positions can point at it.
    """

    def __init__(self, message: str, *, operand: int | None = None, modifier: str | None = None) -> None:
        self.operand = operand
        self.modifier = modifier
        self.reason = message
        super().__init__(message)


class DecodeError(IsaError):
    """Bytes that cannot be decoded at all (e.g. a length that is not a multiple of 4)."""


@dataclass(frozen=True, slots=True)
class DecodeWarning:
    """A word the spec has no instruction for; the disassembler prints it as `.long`."""

    offset: int
    word: int
    message: str

    def __str__(self) -> str:
        return f"offset 0x{self.offset:x}: {self.message}"
