"""Machine code -> instruction objects, finding each encoding through the spec's identifier masks and
encoding conditions (a literal, DPP or SDWA variant shares its identifier with the plain encoding and is
told apart only by its condition, e.g. SRC0 == 255).

Words that no instruction of the spec matches become `.long` data with a warning; decoding never fails
on content, so any code object (ours, LLVM's, Triton's) can be listed.
"""

from __future__ import annotations

from typing import NamedTuple

from .asm_errors import DecodeWarning
from .forms import Form, Mismatch, SpecForms, forms_of
from .instruction import AsmInstruction, Data
from .model import Spec


class Decoded(NamedTuple):
    """One decoded instruction (or an undecodable word, with `instruction` None)."""

    offset: int
    size: int
    raw: bytes
    instruction: AsmInstruction | None
    encoding: str | None = None
    warning: str | None = None
    target: int | None = None  # branch target address, for branches
    target_operand: int | None = None  # which operand holds the branch offset

    @property
    def words(self) -> tuple[int, ...]:
        """The instruction as 32-bit words, as llvm-objdump lists them."""
        raw = self.raw
        return tuple(int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4))

    def as_item(self):
        """An item `encode` accepts: the instruction, or the raw word as `Data`."""
        if self.instruction is not None:
            return self.instruction
        return Data(self.words)


_CACHE_LIMIT = 1 << 18


def _match(forms: SpecForms, word: int, avail: int) -> tuple[Form, AsmInstruction] | None:
    for mask, table in forms.decode_by_top.get((word >> 23) & 0x1FF, ()):
        candidates = table.get(word & mask)
        if not candidates:
            continue
        for form in candidates:
            size = form.size
            if size > avail:
                continue
            w = word & ((1 << (size * 8)) - 1)
            if form.cond is not None:
                codecs = form.codecs
                values = {name: codecs[name].unpack(w) for name in form.cond_fields}
                if not form.cond(values):
                    continue
            try:
                return form, form.decode(w)
            except Mismatch:
                continue
    return None


def decode_at(data: bytes, pos: int, forms: SpecForms, base: int = 0) -> Decoded:
    """Decode the instruction at byte `pos` of `data`."""
    avail = len(data) - pos
    if avail < 4:
        chunk = data[pos:]
        return Decoded(base + pos, avail, chunk, None, None,
                       f"{avail} trailing byte(s) do not make a 32-bit word")
    low = int.from_bytes(data[pos:pos + 4], "little")
    cache = forms.decode_cache
    hit = cache.get(low)
    if hit is None:
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        nbytes = min(avail, forms.max_size)
        word = int.from_bytes(data[pos:pos + nbytes], "little")
        key = (word, nbytes)
        hit = cache.get(key)
        if hit is None:
            hit = _match(forms, word, nbytes)
            if hit is None:
                return _unknown(data, pos, word, nbytes, forms, base)
            form = hit[0]
            if form.size == 4:
                if nbytes >= forms.max_size:  # decided with every longer form in view: safe for any tail
                    cache[low] = hit
            else:
                cache[(word & ((1 << (form.size * 8)) - 1), form.size)] = hit
                if nbytes != form.size:
                    cache[key] = hit
    form, inst = hit
    target = None
    slot = form.label_slot
    if slot is not None:
        delta = inst.operands[slot.index].value
        width = slot.codec.width
        if delta >> (width - 1):
            delta -= 1 << width
        target = base + pos + 4 + 4 * delta
    return Decoded(base + pos, form.size, data[pos:pos + form.size], inst, form.enc.name, None, target,
                   None if slot is None else slot.index)


def _unknown(data: bytes, pos: int, word: int, nbytes: int, forms: SpecForms, base: int) -> Decoded:
    low = word & 0xFFFFFFFF
    found = forms.encoding_of_unknown(word, nbytes)
    if found is None:
        return Decoded(base + pos, 4, data[pos:pos + 4], None, None,
                       f"no encoding of the spec matches word 0x{low:08x}")
    name, size = found
    return Decoded(base + pos, size, data[pos:pos + size], None, name,
                   f"opcode not in the spec: word 0x{low:08x} is in encoding {name}")


def decode(data: bytes, spec: Spec | SpecForms, *, base: int = 0) -> list[Decoded]:
    """Every instruction of `data` in order; `base` is the address of its first byte."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    data = bytes(data)
    out = []
    append = out.append
    cache = forms.decode_cache
    pos = 0
    n = len(data)
    from_bytes = int.from_bytes
    while pos < n:
        if pos + 4 <= n:  # fast path: a 32-bit instruction seen before
            hit = cache.get(from_bytes(data[pos:pos + 4], "little"))
            if hit is not None and hit[0].label_slot is None:
                append(Decoded(base + pos, 4, data[pos:pos + 4], hit[1], hit[0].enc.name))
                pos += 4
                continue
        d = decode_at(data, pos, forms, base)
        append(d)
        pos += d.size if d.size else 4
    return out


def warnings_of(decoded: list[Decoded]) -> list[DecodeWarning]:
    return [DecodeWarning(d.offset, d.words[0] if d.words else 0, d.warning) for d in decoded if d.warning]
