"""AsmInstruction objects -> machine code, choosing for each the shortest encoding the spec allows.

Every candidate is a `Form` (one instruction in one encoding of the spec); the first, shortest form
that accepts the operands wins, which reproduces LLVM's choice between e32, literal and e64 variants.
Branch targets are resolved in a second pass once every label has an address; encoded words of
label-free instructions are cached per spec, since generated kernels repeat instructions a lot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .asm_errors import EncodeError
from .forms import Mismatch, SpecForms, encode_error, forms_of
from .instruction import Align, AsmInstruction, Data, Imm, Label, LabelDef
from .model import Spec


@dataclass(frozen=True)
class Assembled:
    """Machine code with the address of every label and of every statement given."""

    code: bytes
    symbols: dict[str, int] = field(default_factory=dict)
    offsets: tuple[int, ...] = ()

    def __bytes__(self) -> bytes:
        return self.code


_CACHE_LIMIT = 1 << 18  # cached encodings per spec (generated kernels repeat instructions a lot)


class _Placeholder:
    """Symbols for the sizing pass: every label resolves to the next instruction (offset 0)."""

    __slots__ = ("pc",)

    def __init__(self, pc: int) -> None:
        self.pc = pc

    def get(self, name: str, default=None):
        return self.pc + 4


def unknown_mnemonic(name: str, forms: SpecForms) -> EncodeError:
    close = forms.closest(name)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return EncodeError(f"unknown instruction {name!r} (not in spec {forms.spec.architecture.name}){hint}")


def encode_word(inst: AsmInstruction, forms: SpecForms, pc: int = 0, symbols=None) -> tuple[int, int]:
    """(word, size in bytes) of one instruction; EncodeError says why no form fits."""
    candidates = forms.forms_for(inst.name)
    if candidates is None:
        raise unknown_mnemonic(inst.name, forms)
    failures = []
    for form in candidates:
        try:
            return form.encode(inst, pc, symbols), form.size
        except Mismatch as exc:
            failures.append(exc)
    raise encode_error(inst, failures)


def _has_label(inst: AsmInstruction) -> bool:
    for op in inst.operands:
        if type(op) is Label:
            return True
    return False


def encode_instruction(inst: AsmInstruction, spec: Spec | SpecForms, pc: int = 0,
                       symbols: dict[str, int] | None = None) -> bytes:
    """Bytes of one instruction at address `pc` (branch labels looked up in `symbols`)."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    if symbols is None and not _has_label(inst):
        cached = forms.encode_cache.get(inst)
        if cached is not None:
            return cached
        word, size = encode_word(inst, forms, pc, None)
        data = word.to_bytes(size, "little")
        if len(forms.encode_cache) > _CACHE_LIMIT:
            forms.encode_cache.clear()
        forms.encode_cache[inst] = data
        return data
    word, size = encode_word(inst, forms, pc, symbols)
    return word.to_bytes(size, "little")


class StatementError(Exception):
    """An EncodeError at statement `index` of the list given to `encode_items` (for positions)."""

    def __init__(self, index: int, error: EncodeError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def encode_items(items: Iterable, spec: Spec | SpecForms) -> Assembled:
    """Encode instructions, label definitions and data; raises StatementError naming the item."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    items = list(items)
    cache = forms.encode_cache
    chunks: list[bytes | None] = []
    offsets: list[int] = []
    symbols: dict[str, int] = {}
    pending: list[tuple[int, int, AsmInstruction]] = []
    pc = 0
    for i, item in enumerate(items):
        offsets.append(pc)
        t = type(item)
        if t is AsmInstruction:
            data = cache.get(item)
            if data is None:
                try:
                    if _has_label(item):
                        word, size = encode_word(item, forms, pc, _Placeholder(pc))
                        pending.append((len(chunks), i, item))
                        data = b"\0" * size
                    else:
                        word, size = encode_word(item, forms, pc, None)
                        data = word.to_bytes(size, "little")
                        if len(cache) > _CACHE_LIMIT:
                            cache.clear()
                        cache[item] = data
                except EncodeError as exc:
                    raise StatementError(i, exc) from None
            chunks.append(data)
            pc += len(data)
        elif t is LabelDef:
            if item.name in symbols:
                raise StatementError(i, EncodeError(f"label {item.name!r} is defined twice"))
            symbols[item.name] = pc
        elif t is Data:
            data = b"".join(int(w & ((1 << (8 * item.width)) - 1)).to_bytes(item.width, "little")
                            for w in item.words)
            chunks.append(data)
            pc += len(data)
        elif t is Align:
            data = _padding(item, pc, forms)
            chunks.append(data)
            pc += len(data)
        else:
            raise StatementError(i, EncodeError(f"cannot encode {item!r}: expected AsmInstruction, LabelDef, Data "
                                                "or Align"))
    for chunk_index, item_index, inst in pending:
        try:
            word, size = encode_word(inst, forms, offsets[item_index], symbols)
        except EncodeError as exc:
            raise StatementError(item_index, exc) from None
        chunks[chunk_index] = word.to_bytes(size, "little")
    return Assembled(b"".join(chunks), symbols, tuple(offsets))  # type: ignore[arg-type]


def _padding(item: Align, pc: int, forms: SpecForms) -> bytes:
    boundary = item.boundary
    if boundary <= 0 or boundary & (boundary - 1):
        raise EncodeError(f"alignment {boundary} is not a power of two")
    n = (-pc) % boundary
    if not n:
        return b""
    if item.fill is not None:
        width = item.fill_width
        unit = (item.fill & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        return (unit * (n // width + 1))[:n]
    head = b"\0" * (n % 4)
    try:  # code is padded with the spec's s_nop 0, as LLVM does
        nop = encode_instruction(AsmInstruction("s_nop", (Imm(0),)), forms)
    except EncodeError:
        nop = b"\0\0\0\0"
    if len(nop) != 4:
        nop = b"\0\0\0\0"
    return head + nop * (n // 4)


def encode(instructions: Iterable, spec: Spec | SpecForms) -> Assembled:
    """Machine code for a list of `AsmInstruction`, `LabelDef` and `Data` items (the generators' path).

    Raises EncodeError naming the failing item (its index and text) when one cannot be encoded.
    """
    try:
        return encode_items(instructions, spec)
    except StatementError as exc:
        err = exc.error
        raise EncodeError(f"item {exc.index}: {err.reason}", operand=err.operand, modifier=err.modifier) from None
