"""A test corpus generated from the spec: every instruction in every encoding, with operand values that
exercise each operand type (each register class at both ends of its range, each named register,
inline constants, literals) and each modifier the encoding has fields for.

It is the bridge to the outside authority: the tests assemble every case with llvm-mc and with this
package and compare bytes (and llvm-mc's printed text with this package's disassembly). Cases are
built as instruction objects and printed, so the same corpus also exercises the printer and parser.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from jitgemm.isa import operand_syntax as syn
from jitgemm.isa.disasm.printer import format_instruction
from jitgemm.isa.instruction import OFF, AsmInstruction, Counters, Imm, Reg, SrcMods
from jitgemm.isa.spec.forms import Form, Slot, SpecForms, TypeTable, forms_of
from jitgemm.isa.spec.model import Spec


@dataclass(frozen=True, slots=True)
class Case:
    """One corpus line: the form it was generated for and what it exercises."""

    instruction: str  # spec instruction name
    encoding: str  # spec encoding name
    condition: str
    what: str  # e.g. "base", "operand 2: s-register", "modifier clamp"
    item: AsmInstruction

    @property
    def text(self) -> str:
        return format_instruction(self.item)


def _register(kind: str, index: int, n: int) -> Reg:
    return Reg(kind, index, n)


def _aligned(kind: str, n: int) -> int:
    if n == 1:
        return 1
    return 2 if kind in ("v", "a") else min(4, n)


def _class_values(table: TypeTable, nregs: int, elem_bits: int = 32) -> dict[str, list]:
    """Representatives of each register class / constant kind a type accepts, for a slot of nregs."""
    by_kind: dict[str, list[int]] = {}
    named: list[str] = []
    pairs: list[str] = []
    for key in table.by_key:
        if key[0] in ("s", "v", "a", "ttmp"):
            by_kind.setdefault(key[0], []).append(key[1])
        elif key[0] == "name":
            named.append(key[1])
        elif key[0] == "pair":
            pairs.append(key[1])
    out: dict[str, list] = {}
    for kind, idx in by_kind.items():
        idx.sort()
        align = _aligned(kind, nregs)
        lo = next((i for i in idx if i % align == 0 and (i + nregs - 1) in idx), None)
        hi = next((i for i in reversed(idx) if i % align == 0 and (i + nregs - 1) in idx), None)
        vals = []
        for i in (lo, hi):
            if i is not None and _register(kind, i, nregs) not in vals:
                vals.append(_register(kind, i, nregs))
        if vals:
            out[f"{kind}-register"] = vals
    if nregs == 1:
        seen = set()
        for name in named:
            if name.startswith("src_") and name[4:] in named:
                continue
            value = table.by_key[("name", name)]
            if value in seen:
                continue
            seen.add(value)
            out[f"register {name}"] = [Reg(name)]
    elif nregs == 2:
        for name in pairs:
            out[f"register {name}"] = [Reg(name, 0, 2)]
    ints = sorted(table.ints)
    if ints:
        picks = [v for v in (0, 1, 7, ints[-1], -1, ints[0]) if v in table.ints]
        out["inline integer"] = [Imm(v) for v in dict.fromkeys(picks)]
    if table.floats:
        out["inline float"] = [Imm(syn.inline_float_value(f, elem_bits)) for f in table.floats]
    return out


def _literals(slot: Slot) -> list[Imm]:
    if slot.elem_bits == 16:
        vals = [Imm(0x1234, hex=True), Imm(-17)]
    else:
        vals = [Imm(0x12345678, hex=True), Imm(-17), Imm(0x3F800000, hex=True)]
    if slot.is_float:
        vals.append(Imm(1.5))
        vals.append(Imm(-0.0))
    return vals


class _Registers:
    """Hands out distinct, aligned registers so swapped fields show up as wrong bytes."""

    def __init__(self) -> None:
        self.next = {"s": 8, "v": 4, "a": 4, "ttmp": 4}

    def take(self, kind: str, n: int, table: TypeTable) -> Reg | None:
        align = max(_aligned(kind, n), 4 if kind in ("s", "ttmp") and n >= 4 else 1)
        start = self.next[kind]
        start += (-start) % align
        for i in range(start, start + 64):
            if i % align == 0 and (kind, i) in table.by_key and (kind, i + n - 1) in table.by_key:
                self.next[kind] = i + n + (2 if kind != "ttmp" else 0)
                return Reg(kind, i, n)
        # wrap around
        for i in range(0, 256):
            if i % align == 0 and (kind, i) in table.by_key and (kind, i + n - 1) in table.by_key:
                return Reg(kind, i, n)
        return None


def _default_operand(slot: Slot, regs: _Registers, form: Form, nregs: int | None = None):
    n = nregs or slot.nregs
    table = slot.table
    kind = slot.kind
    if kind == "fixed":
        from jitgemm.isa.spec.forms import fixed_operand

        return fixed_operand(slot)
    if kind == "literal":
        return _literals(slot)[0]
    if kind == "label":
        return Imm(4)
    if kind == "parts":
        if table is not None and set(table.parts) & set(syn.COUNTER_ORDER):
            return Counters(tuple((syn.counter_name(p), 1) for p in table.parts))
        return Imm(3)
    if kind == "sdwa_sdst":
        return Reg("vcc", 0, 2)
    if table is None:
        return Imm(0)
    for k in ("v", "s", "a", "ttmp"):
        if any(key[0] == k for key in table.by_key):
            reg = regs.take(k, n, table)
            if reg is not None:
                return reg
    values = _class_values(table, n, slot.elem_bits)
    for vals in values.values():
        return vals[0]
    return Imm(0)


def _base_variants(form: Form) -> list[tuple[str, tuple, tuple]]:
    """(label, operands, modifiers) of the base cases: one per addressing variant of the form."""
    regs = _Registers()
    slots = list(form.slots)
    variants: list[tuple[str, tuple, tuple]] = []

    def ops_for(slot_list, overrides=None):
        overrides = overrides or {}
        out = []
        for s in slot_list:
            if s.index in overrides:
                out.append(overrides[s.index])
            else:
                out.append(_default_operand(s, regs, form))
        return tuple(out)

    vaddr = next((s for s in slots if s.kind == "vaddr"), None)
    flat_addr = next((s for s in slots if s.kind == "flat_addr"), None)
    saddr = next((s for s in slots if s.kind == "saddr"), None)
    smem = next((s for s in slots if s.kind == "smem_offset"), None)
    active = slots
    base_mods: tuple = ()
    if form.return_vdst is not None:
        base_mods = ((form.return_flag, True),)
    if "quad_perm" in form.mods:  # LLVM requires a DPP control on every DPP instruction
        base_mods += (("quad_perm", (3, 2, 1, 0)),)
    if vaddr is not None:
        v_one = regs.take("v", 1, vaddr.table)
        v_two = regs.take("v", 2, vaddr.table)
        variants.append(("vaddr off", ops_for(active, {vaddr.index: OFF}), base_mods))
        variants.append(("vaddr offen", ops_for(active, {vaddr.index: v_one}), base_mods + (("offen", True),)))
        variants.append(("vaddr idxen", ops_for(active, {vaddr.index: v_one}), base_mods + (("idxen", True),)))
        variants.append(("vaddr idxen offen", ops_for(active, {vaddr.index: v_two}),
                         base_mods + (("idxen", True), ("offen", True))))
    elif flat_addr is not None:
        if saddr is not None and form.scratch:
            v32 = regs.take("v", 1, flat_addr.table)
            sreg = regs.take("s", saddr.nregs, saddr.table)
            variants.append(("vaddr, saddr off", ops_for(active, {flat_addr.index: v32, saddr.index: OFF}), base_mods))
            variants.append(("vaddr off, saddr", ops_for(active, {flat_addr.index: OFF, saddr.index: sreg}), base_mods))
            variants.append(("vaddr, saddr", ops_for(active, {flat_addr.index: v32, saddr.index: sreg}), base_mods))
            variants.append(("vaddr off, saddr off", ops_for(active, {flat_addr.index: OFF, saddr.index: OFF}),
                             base_mods))
        elif saddr is not None:
            v64 = regs.take("v", 2, flat_addr.table)
            v32 = regs.take("v", 1, flat_addr.table)
            sreg = regs.take("s", saddr.nregs, saddr.table)
            variants.append(("saddr off", ops_for(active, {flat_addr.index: v64, saddr.index: OFF}), base_mods))
            variants.append(("saddr sgpr", ops_for(active, {flat_addr.index: v32, saddr.index: sreg}), base_mods))
    elif smem is not None:
        variants.append(("offset immediate", ops_for(active, {smem.index: Imm(0x10, hex=True)}), base_mods))
        sreg = regs.take("s", 1, smem.table)
        variants.append(("offset sgpr", ops_for(active, {smem.index: sreg}), base_mods))
        if "SOFFSET_EN" in form.codecs:
            variants.append(("offset sgpr+imm", ops_for(active, {smem.index: sreg}),
                             base_mods + (("offset", 0x20),)))
    if not variants:
        variants.append(("base", ops_for(active), base_mods))
    if form.return_vdst is not None:
        label, ops, mods = variants[0]
        keep = [i for i, s in enumerate(active) if s is not form.return_vdst]
        variants.append((label + ", no return", tuple(ops[i] for i in keep),
                         tuple(m for m in mods if m[0] != form.return_flag)))
    return variants


def _modifier_values(form: Form, name: str, kind: str) -> list:
    codecs = form.codecs
    if kind == "flag":
        return [True]
    if kind == "int":
        codec = codecs[syn.INT_FIELDS[name]]
        w = codec.width
        if codec.signed:
            return [1, (1 << (w - 1)) - 1, -1, -(1 << (w - 1))]
        return [1, (1 << w) - 1]
    if kind == "ds_offset":
        return [1, 0xFFFF]
    if kind == "smem_offset":
        return []
    if kind == "list":
        n = form.nsrc
        if name == "op_sel" and form.opsel_dst:
            return [tuple(int(i == j) for j in range(n + 1)) for i in range(n + 1)]
        if name == "op_sel_hi":
            return [tuple(int(i != j) for j in range(n)) for i in range(n)]
        return [tuple(int(i == j) for j in range(n)) for i in range(n)]
    if kind == "omod":
        return [v for (n, v) in syn.OMOD if n == name]
    if kind == "sel":
        return list(syn.SDWA_SEL)
    if kind == "unused":
        return list(syn.SDWA_UNUSED)
    if kind == "dpp":
        if name == "quad_perm":
            return [(1, 0, 3, 2), (3, 3, 3, 3)]
        base, allowed = syn.DPP_CTRL[name]
        if allowed is None:
            return [True]
        return sorted({min(allowed), max(allowed)})
    if kind == "bound_ctrl":
        return [1]
    if kind == "bitop3":
        return [1, 10, 11, 63, 64, 0x9A, 0xFF]
    if kind == "format":
        return [0, 0x7F, ("BUF_DATA_FORMAT_32", "BUF_NUM_FORMAT_FLOAT"), ("BUF_NUM_FORMAT_SINT",),
                ("BUF_DATA_FORMAT_16_16",)]
    return []


def cases_for_form(form: Form) -> list[Case]:
    """Every corpus case of one form."""
    out: list[Case] = []
    inst_name = form.spec_inst.name
    enc = form.enc.name
    cond = form.cond_name

    def add(what: str, ops: tuple, mods: tuple) -> None:
        mods = tuple(sorted(mods, key=lambda m: syn.MODIFIER_RANK.get(m[0], 999)))
        out.append(Case(inst_name, enc, cond, what, AsmInstruction(form.mnemonic, ops, mods)))

    variants = _base_variants(form)
    for label, ops, mods in variants:
        add(label, ops, mods)
    label, base_ops, base_mods = variants[0]
    active = [s for s in form.slots]
    if form.return_vdst is not None and not any(m[0] == form.return_flag for m in base_mods):
        active = [s for s in active if s is not form.return_vdst]
    # Operand variants: each register class / constant kind of each operand's type.
    for pos, slot in enumerate(active):
        if pos >= len(base_ops):
            break
        current = base_ops[pos]
        if slot.kind == "literal":
            for lit in _literals(slot):
                add(f"operand {pos + 1}: literal {lit}", base_ops[:pos] + (lit,) + base_ops[pos + 1:], base_mods)
            continue
        if slot.kind == "label":
            for v in (1, 0x7FFF, 0xFFFF):  # llvm-objdump prints the offset unsigned
                add(f"operand {pos + 1}: branch offset {v}", base_ops[:pos] + (Imm(v),) + base_ops[pos + 1:],
                    base_mods)
            continue
        if slot.kind == "parts":
            table = slot.table
            if table is not None and set(table.parts) & set(syn.COUNTER_ORDER):
                for part in table.parts:
                    f = table.parts[part]
                    for pv in (0, (1 << f.width) - 2):
                        add(f"operand {pos + 1}: {syn.counter_name(part)}({pv})",
                            base_ops[:pos] + (Counters(((syn.counter_name(part), pv),)),) + base_ops[pos + 1:],
                            base_mods)
                add(f"operand {pos + 1}: raw immediate", base_ops[:pos] + (Imm(0),) + base_ops[pos + 1:], base_mods)
            else:
                w = slot.codec.width
                for v in (0, (1 << (w - 1)) - 1, (1 << w) - 1 if not slot.signed_imm else -1):
                    add(f"operand {pos + 1}: immediate {v}",
                        base_ops[:pos] + (Imm(v, hex=form.imm_hex),) + base_ops[pos + 1:], base_mods)
            continue
        if slot.table is None or slot.kind in ("fixed", "sdwa_sdst"):
            if slot.kind == "sdwa_sdst":
                sreg = _Registers().take("s", 2, slot.table)
                if sreg is not None:
                    add(f"operand {pos + 1}: sgpr pair", base_ops[:pos] + (sreg,) + base_ops[pos + 1:], base_mods)
            continue
        if type(current) is not Reg and slot.kind in ("vaddr", "flat_addr", "saddr"):
            continue
        nregs = current.count if type(current) is Reg else slot.nregs
        for cls, values in _class_values(slot.table, nregs, slot.elem_bits).items():
            if slot.kind in ("vaddr", "flat_addr") and not cls.endswith("-register"):
                continue
            for value in values:
                if value == current:
                    continue
                add(f"operand {pos + 1}: {cls} {value}", base_ops[:pos] + (value,) + base_ops[pos + 1:], base_mods)
        # input modifiers
        if slot.src is not None:
            flags = []
            if ("neg", slot.src) in form.srcmods and slot.is_float:
                flags += [("neg",), ("abs",), ("neg", "abs")]
            elif ("abs", slot.src) in form.srcmods and slot.is_float:
                flags += [("abs",)]
            if ("sext", slot.src) in form.srcmods and not slot.is_float:
                flags.append(("sext",))
            for fl in flags:
                if ("abs" in fl and ("abs", slot.src) not in form.srcmods) or \
                        ("neg" in fl and ("neg", slot.src) not in form.srcmods):
                    continue
                op = SrcMods(current, neg="neg" in fl, abs="abs" in fl, sext="sext" in fl)
                add(f"operand {pos + 1}: {'+'.join(fl)}", base_ops[:pos] + (op,) + base_ops[pos + 1:], base_mods)
    # Modifier variants.
    written = {m[0] for m in base_mods}
    for name, kind in form.mods.items():
        if name in written or (kind == "flag" and name in ("offen", "idxen")):
            continue
        for value in _modifier_values(form, name, kind):
            mods = base_mods + ((name, value),)
            if kind == "dpp":
                mods = tuple(m for m in base_mods if m[0] != "quad_perm") + ((name, value),)
            ops = base_ops
            if name == "lds" and form.lds_vdata is not None:
                keep = [i for i, s in enumerate(active) if s is not form.lds_vdata]
                ops = tuple(base_ops[i] for i in keep)
            if kind == "flag" and name == form.return_flag:
                continue
            add(f"modifier {name}:{value}", ops, mods)
    return out


def corpus(spec: Spec | SpecForms) -> list[Case]:
    """The whole corpus for a spec, in spec order."""
    forms = spec if isinstance(spec, SpecForms) else forms_of(spec)
    out: list[Case] = []
    for form in forms.forms:
        out.extend(cases_for_form(form))
    return out


@dataclass
class CaseResult:
    case: Case
    llvm: bytes | None  # None when llvm-mc rejects the line
    llvm_text: str | None  # llvm-mc's printing of the instruction
    llvm_error: str | None
    ours: bytes | None  # None when we reject it
    our_error: str | None
    our_text: str | None  # our disassembly of our bytes
    llvm_inconsistent: str | None = None  # LLVM's bytes disassemble (by LLVM) to other text than it printed

    @property
    def agree(self) -> bool:
        return self.llvm is not None and self.ours == self.llvm

    @property
    def text_agree(self) -> bool:
        return self.llvm_text is not None and self.our_text is not None and \
            " ".join(self.llvm_text.split()) == " ".join(self.our_text.split())


def coverage_table(results: list[CaseResult]) -> str:
    """Per encoding: instructions, forms tried, accepted by LLVM, byte agreement, text agreement, and the
    number LLVM rejects (listed separately, never dropped)."""
    rows: dict[str, Counter] = {}
    insts: dict[str, set] = {}
    for r in results:
        enc = r.case.encoding
        c = rows.setdefault(enc, Counter())
        insts.setdefault(enc, set()).add(r.case.instruction)
        c["forms"] += 1
        if r.llvm is None:
            c["llvm_rejects"] += 1
            if r.ours is None:
                c["both_reject"] += 1
        elif r.llvm_inconsistent is not None:
            c["llvm_inconsistent"] += 1
        else:
            c["llvm_accepts"] += 1
            c["agree"] += r.agree
            c["text"] += r.text_agree
    head = (f"{'encoding':26} {'instr':>5} {'forms':>6} {'llvm ok':>7} {'agree':>6} {'text':>6} {'llvm rej':>8} "
            f"{'llvm bug':>8}")
    lines = [head, "-" * len(head)]
    total = Counter()
    all_insts = set()
    for enc in rows:
        c = rows[enc]
        total.update(c)
        all_insts |= insts[enc]
        lines.append(f"{enc:26} {len(insts[enc]):5d} {c['forms']:6d} {c['llvm_accepts']:7d} {c['agree']:6d} "
                     f"{c['text']:6d} {c['llvm_rejects']:8d} {c['llvm_inconsistent']:8d}")
    lines.append("-" * len(head))
    lines.append(f"{'total':26} {len(all_insts):5d} {total['forms']:6d} {total['llvm_accepts']:7d} "
                 f"{total['agree']:6d} {total['text']:6d} {total['llvm_rejects']:8d} {total['llvm_inconsistent']:8d}")
    pct = 100.0 * total["agree"] / total["llvm_accepts"] if total["llvm_accepts"] else 0.0
    lines.append(f"byte agreement on forms llvm-mc accepts: {total['agree']}/{total['llvm_accepts']} ({pct:.2f}%); "
                 f"encodings covered: {len(rows)}")
    lines.append("columns: llvm ok = llvm-mc accepts the form (and its own disassembler reads its bytes back as "
                 "printed); agree = our bytes equal; text = our disassembly equals llvm-mc's printing; llvm rej = "
                 "llvm-mc rejects the form; llvm bug = llvm-mc accepts it but its bytes disassemble (by LLVM) to "
                 "something else")
    return "\n".join(lines)


def llvm_mc_encodings(lines: list[str], llvm_mc: str, mcpu: str = "gfx942") -> list[tuple[bytes | None, str]]:
    """Run an external llvm-mc once over many lines: per line (bytes, printed text) or (None, error).

    The caller supplies the tool's path (the tests find it through tests/oracles.py); nothing in the
    package needs LLVM.
    """
    import re
    import subprocess

    src = "\n".join(lines) + "\n"
    proc = subprocess.run([llvm_mc, "-arch=amdgcn", f"-mcpu={mcpu}", "-show-encoding"], input=src,
                          capture_output=True, text=True, check=False)
    errors: dict[int, str] = {}
    for m in re.finditer(r"<stdin>:(\d+):(\d+): error: (.*)", proc.stderr):
        errors.setdefault(int(m.group(1)), m.group(3))
    encoded = []
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*(.*?)\s*; encoding: \[(.*)\]", line)
        if m:
            data = bytes(int(x, 16) for x in m.group(2).split(",") if x)
            encoded.append((data, m.group(1)))
    out: list[tuple[bytes | None, str]] = []
    it = iter(encoded)
    for i in range(1, len(lines) + 1):
        if i in errors:
            out.append((None, errors[i]))
        else:
            out.append(next(it, (None, "no output from llvm-mc")))
    return out


def run_corpus(cases: list[Case], forms: SpecForms, llvm_mc: str, mcpu: str | None = None) -> list[CaseResult]:
    """Assemble every case with llvm-mc and with this package; disassemble our bytes for the text check.
    llvm-mc's -mcpu is the target the spec describes (its ArchitectureName, through the target profiles)
    unless `mcpu` says otherwise."""
    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.asm_errors import AsmError, EncodeError
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.spec.targets import target_of_spec

    mcpu = mcpu or target_of_spec(forms.spec)
    lines = [c.text for c in cases]
    ref = llvm_mc_encodings(lines, llvm_mc, mcpu)
    results = []
    for case, line, (lbytes, ltext) in zip(cases, lines, ref, strict=False):
        ours = our_err = our_text = None
        try:
            ours = assemble(line, forms).code
        except (AsmError, EncodeError) as exc:
            our_err = str(exc)
        if ours is not None:
            decoded = decode(ours, forms)
            our_text = "; ".join(format_instruction(d.instruction) if d.instruction else "<undecodable>"
                                 for d in decoded)
        results.append(CaseResult(case, lbytes, ltext if lbytes is not None else None,
                                  ltext if lbytes is None else None, ours, our_err, our_text))
    # Where we differ, ask LLVM's disassembler what LLVM's own bytes mean: if that is not what llvm-mc
    # printed for the line, llvm-mc dropped part of it (e.g. a modifier it accepts but does not encode).
    for r in results:
        if r.llvm is not None and r.ours != r.llvm:
            back = llvm_mc_disassemble(r.llvm, llvm_mc, mcpu)
            if back is not None and " ".join(back.split()) != " ".join((r.llvm_text or "").split()):
                r.llvm_inconsistent = f"llvm-mc encodes {r.case.text!r} as {back!r}"
    return results


def llvm_mc_disassemble(data: bytes, llvm_mc: str, mcpu: str = "gfx942") -> str | None:
    """LLVM's disassembly of one instruction's bytes, or None when it cannot read them."""
    import subprocess

    src = ",".join(f"0x{b:02x}" for b in data) + "\n"
    proc = subprocess.run([llvm_mc, "-arch=amdgcn", f"-mcpu={mcpu}", "--disassemble"], input=src,
                          capture_output=True, text=True, check=False)
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip() and not line.strip().startswith(".")]
    return lines[0] if len(lines) == 1 else None


def llvm_disassembly(codes: list[bytes], llvm_mc: str, mcpu: str = "gfx942") -> list[str | None]:
    """LLVM's disassembly of each instruction (one llvm-mc process; each code is one whole instruction): where
    llvm-mc's assembler prints a parsed line differently from what its own disassembler prints for the same bytes
    (`v_max_u16 v1, 0.5, v2` assembles to inline 0.5 and disassembles as `0x3800`), the disassembler is the
    authority for a disassembler."""
    import subprocess

    src = "\n".join(" ".join(f"0x{b:02x}" for b in code) for code in codes) + "\n"
    proc = subprocess.run([llvm_mc, "-arch=amdgcn", f"-mcpu={mcpu}", "--disassemble", "-show-encoding"], input=src,
                          capture_output=True, text=True, check=False)
    texts = [line.split(";")[0].strip() for line in proc.stdout.splitlines() if "encoding:" in line]
    if len(texts) != len(codes) or "warning" in proc.stderr:
        return [llvm_mc_disassemble(code, llvm_mc, mcpu) for code in codes]
    return texts
