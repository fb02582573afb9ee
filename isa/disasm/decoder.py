"""Machine code -> instruction objects, finding each encoding through the spec's identifier masks and
encoding conditions (a literal, DPP or SDWA variant shares its identifier with the plain encoding and is
told apart only by its condition, e.g. SRC0 == 255). `decode_form` reads one word in one form; bits LLVM's
syntax does not reach stay in the unprinted `keep_bits` modifier, so a decoded instruction re-encodes to its
bytes wherever its registers are written as encoded.

Words that no instruction of the spec matches become `.long` data with a warning; decoding never fails
on content, so any code object (ours, LLVM's, Triton's) can be listed.
"""

from __future__ import annotations

from typing import NamedTuple

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.asm_errors import DecodeWarning
from jitgemm.isa.instruction import OFF, AsmInstruction, Counters, Data, Imm, Reg, SrcMods
from jitgemm.isa.modifiers import decode_modifiers
from jitgemm.isa.operand_values import ACC_BIT
from jitgemm.isa.spec.field_codec import Mismatch
from jitgemm.isa.spec.forms import Form, Slot, SpecForms, fixed_operand, forms_of
from jitgemm.isa.spec.model import Spec


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


# --- one word in one form ----------------------------------------------------------------------------

def decode_form(form: Form, word: int) -> AsmInstruction:
    """The instruction a word of `form.size` bytes holds in `form`, or Mismatch when a field value is not
    one the operand type defines (then the word is not this form)."""
    zw = form.zero_word
    if zw is not None and word & zw[0] != zw[1] or zw is None and form.zero:
        _check_zero(form, word)
    fv = {}
    for name, simple, offset, mask, codec in form.unpackers:
        fv[name] = (word >> offset) & mask if simple else codec.unpack(word)
    ops = []
    slots = form.slots
    if form.lds_vdata is not None and fv.get("LDS"):
        slots = tuple(s for s in slots if s is not form.lds_vdata)
        if fv.get("ACC"):   # the AGPR bit of the VDATA an lds load does not have (llvm-objdump-22: .long)
            raise Mismatch("ACC is set on an lds load, which has no VDATA (LLVM decodes no such word)")
    if form.return_vdst is not None and not fv.get(syn.FLAG_FIELDS[form.return_flag]):
        slots = tuple(s for s in slots if s is not form.return_vdst)
    for slot in slots:
        cache = slot.decoded
        if cache is not None:  # plain register/constant slot: value -> operand, memoized
            value = fv[slot.fname]
            op = cache.get(value)
            if op is None:
                op = _value_operand(slot, value, slot.nregs)
                cache[value] = op
            if form.shared_literal and value == slot.table.literal and slot.container == 32:
                op = Imm(fv["LITERAL"], hex=True)   # the source names the literal the encoding carries
        else:
            op = _decode_operand(form, slot, fv, word)
            if op is None:  # an optional immediate at 0 is not written (`s_endpgm`)
                continue
        spots = slot.mod_spots
        if spots is not None:
            neg, ab, sx = (spot is not None and bool(fv[spot[0]] >> spot[1] & 1) for spot in spots)
            if neg or ab or sx:
                op = SrcMods(op, neg, ab, sx)
        ops.append(op)
    mods = decode_modifiers(form, fv, word) if form.mods else ()
    return _instruction(form.mnemonic, tuple(ops), mods)

def _check_zero(form: Form, word: int) -> None:
    """Mismatch naming the first field whose bits the instruction gives no meaning and LLVM requires to be zero
    (forms._required_zero): llvm-objdump-22 prints such a word as .long, and so do we, with this reason."""
    for name, bits, why in form.zero:
        value = form.codecs[name].unpack(word) & bits
        if value != form.defaults.get(name, 0) & bits:
            if why:
                raise Mismatch(f"{name} {why} (LLVM decodes no such word)")
            what = f"{name} = {value:#x}" if bits == (1 << form.codecs[name].width) - 1 \
                else f"bits {value:#x} of {name}"
            want = form.defaults.get(name, 0) & bits
            raise Mismatch(f"{what}, which {form.mnemonic} does not use, must be {want:#x} (LLVM decodes no such word)"
                           if want else f"{what}, which {form.mnemonic} does not use, must be 0 (LLVM decodes no such "
                           "word)")


def _decode_operand(form: Form, slot: Slot, fv: dict, word: int):
    kind = slot.kind
    if kind == "fixed":
        return fixed_operand(slot)
    if kind == "literal":
        lit = fv["LITERAL"]
        if slot.container == 16 and form.literal_optional:  # a 16-bit source prints the 16 bits it uses;
            lit &= 0xFFFF  # a K constant (v_madak_f16) prints its whole dword, as LLVM does
        if slot.table is not None and slot.table.partitioned:  # an always-literal imm32 (s_setreg_imm32)
            return Imm(lit, hex=True, text=syn.imm32_text(lit))
        return Imm(lit, hex=True)
    if kind == "label":  # llvm-objdump prints the raw (unsigned) dword offset
        return Imm(fv[slot.fname])
    if kind == "parts":
        if slot is form.optional_imm:  # printed in decimal, and only when it is not 0 (as LLVM)
            return Imm(fv[slot.fname]) if fv[slot.fname] else None
        return _decode_parts(slot, fv[slot.fname], form)
    if kind == "vaddr":
        n = fv.get("OFFEN", 0) + fv.get("IDXEN", 0)
        if n == 0:
            return OFF
        return _reg_from_fields(form, slot, fv, n)
    if slot.width_field is not None:
        return _reg_from_fields(form, slot, fv, syn.f8f6f4_registers(fv[slot.width_field], slot.nregs))
    if kind == "flat_addr":
        if form.scratch:
            if not fv.get("SVE", 0):
                return OFF
            return _reg_from_fields(form, slot, fv, 1)
        n = 2
        if form.flat_saddr is not None:
            saddr = form.slots[form.flat_saddr]
            if fv[saddr.fname] != (1 << saddr.codec.width) - 1:
                n = 1
        return _reg_from_fields(form, slot, fv, n)
    if kind == "saddr":
        if fv[slot.fname] == (1 << slot.codec.width) - 1:
            return OFF
        return _reg_from_fields(form, slot, fv, slot.nregs)
    if kind == "smem_offset":
        if fv.get("SOFFSET_EN", 0):
            return _reg_from_fields(form, slot, fv, slot.nregs)
        if fv.get("IMM", 0):
            return Imm(form.codecs["OFFSET"].unpack_int(word), hex=True)
        # IMM = 0: OFFSET names an SGPR in its low bits, as many as the SOFFSET field has (7); LLVM reads only
        # those (the bits above are kept unprinted, see forms._hidden_bits)
        return _value_operand(slot, fv["OFFSET"] & form.smem_sgpr_mask, slot.nregs)
    if kind == "sdwa_sdst":
        if not fv.get("SD", 0):
            return Reg("vcc", 0, 2)
        return _reg_from_fields(form, slot, fv, slot.nregs)
    return _reg_from_fields(form, slot, fv, slot.nregs)

def _reg_from_fields(form: Form, slot: Slot, fv: dict, nregs: int):
    value = fv[slot.fname]
    if slot.sdwa_s is not None and not fv.get(slot.sdwa_s, 0):
        value |= 1 << slot.codec.width
    if slot.acc is not None:
        fname, pos = slot.acc
        if fv.get(fname, 0) >> pos & 1:
            with_acc = value | (1 << ACC_BIT)
            if with_acc in slot.table.by_value:
                value = with_acc
    elif slot.acc_implied and value not in slot.table.by_value:
        value |= 1 << ACC_BIT
    return _value_operand(slot, value, nregs)


def _instruction(name: str, operands: tuple, modifiers: tuple) -> AsmInstruction:
    """An AsmInstruction from parts already in normal form (skips the constructor's normalization)."""
    inst = object.__new__(AsmInstruction)
    object.__setattr__(inst, "name", name)
    object.__setattr__(inst, "operands", operands)
    object.__setattr__(inst, "modifiers", modifiers)
    return inst



def _value_operand(slot: Slot, value: int, nregs: int):
    table = slot.table
    if table is None:
        return Imm(value)
    op = table.operand_for(value, nregs, slot.elem_bits, slot.container == 16 and not slot.is_float)
    if op is None:
        if table.literal is not None and value == table.literal:
            return Imm(0, hex=True)
        raise Mismatch(f"value {value} is not defined by operand type {table.name}")
    return op



def _decode_parts(slot: Slot, value: int, form: Form):
    table = slot.table
    parts = table.parts
    if parts and set(parts) & set(syn.COUNTER_ORDER):
        # LLVM prints the counters that wait (below their maximum), or all of them when none does.
        order = [n for n in syn.COUNTER_ORDER if n in parts] + [n for n in parts if n not in syn.COUNTER_ORDER]
        written = []
        for n in order:
            f = parts[n]
            pv = f.extract(value)
            if pv != (1 << f.width) - 1:
                written.append((syn.counter_name(n), pv))
        if not written:
            written = [(syn.counter_name(n), parts[n].extract(value)) for n in order]
        return Counters(tuple(written))
    if form.name in syn.HWREG_MNEMONICS:
        return Imm(value, text=syn.hwreg_text(value))
    if table.name == "OPR_SENDMSG":  # the spec's message operand: printed as sendmsg(...), as llvm-objdump does
        return Imm(value, text=syn.sendmsg_text(value))
    if form.name in syn.GPR_IDX_MNEMONICS:
        text = syn.gpr_idx_text(value)
        return Imm(value, text=text) if text else Imm(value, hex=True)
    if form.imm_hex:
        return Imm(value, hex=True)
    if slot.signed_imm and value >> (slot.codec.width - 1):
        return Imm(value - (1 << slot.codec.width))
    return Imm(value, hex=value > 64)  # LLVM prints immediates beyond the inline range in hex


# --- machine code -------------------------------------------------------------------------------------

_CACHE_LIMIT = 1 << 18


def _match(forms: SpecForms, word: int, avail: int, why: list | None = None) -> tuple[Form, AsmInstruction] | None:
    """The first form that decodes `word`; `why` collects (form, reason) of forms whose identifier and
    condition matched but an operand or modifier value did not."""
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
                return form, decode_form(form, w)
            except Mismatch as exc:
                if why is not None:
                    why.append((form, exc))
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
    """A word no form decodes, and the warning that says why: no encoding; an opcode the spec lacks (with a spec
    that knows every opcode of its architecture — the bundled subset, AMD's whole file — it is no instruction:
    one .long for the first word, and decoding goes on at the next, as llvm-objdump does; with an excerpt or a
    crafted spec the opcode is more likely a real instruction the spec leaves out, so the word keeps its
    encoding's size and the listing stays aligned); or the instruction and the operand value (or modifier) the
    spec does not define — named in the warning, sized as an unknown opcode."""
    low = word & 0xFFFFFFFF
    why: list = []
    _match(forms, word, nbytes, why)
    if why:
        form, exc = why[0]
        # with a spec that knows every opcode, LLVM's decoder fails on such a word as on an unknown opcode: one
        # .long, and decoding goes on at the next word (seeded random words, tests/isa/test_decode_unknown.py:
        # 4,888 of 4,890 listings aligned; LLVM instead spans the form on 135 others where it prints the
        # instruction with an operand marked /*Invalid ...*/); an excerpt keeps the form's size (aligned code)
        size = 4 if _knows_every_opcode(forms) else form.size
        return Decoded(base + pos, size, data[pos:pos + size], None, form.enc.name,
                       f"{form.mnemonic}: {exc} (word 0x{low:08x}, encoding {form.enc.name})")
    found = forms.encoding_of_unknown(word, nbytes)
    if found is None:
        return Decoded(base + pos, 4, data[pos:pos + 4], None, None,
                       f"no encoding of the spec matches word 0x{low:08x}")
    name, size = found
    if _knows_every_opcode(forms):   # as LLVM: one .long for the first word, decoding goes on at the next
        size = 4
    return Decoded(base + pos, size, data[pos:pos + size], None, name,
                   f"opcode not in the spec: word 0x{low:08x} is in encoding {name}")


def _knows_every_opcode(forms: SpecForms) -> bool:
    if forms.knows_every_opcode is None:
        from jitgemm.isa.spec.release import knows_every_opcode

        forms.knows_every_opcode = knows_every_opcode(forms.spec)
    return forms.knows_every_opcode


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
