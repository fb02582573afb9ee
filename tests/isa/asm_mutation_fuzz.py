"""Mutated assembly lines beside llvm-mc-22 (tests/isa/test_asm_mutations.py samples them; bench/fuzz_hostile.py
runs many): lines from the spec-generated corpus, each changed in one way a person or a fuzzer would — a trailing
comma, an undefined name as an operand (llvm-mc makes it a symbol relocation), `~ ! -(...)` and `1<<64` in an
operand, `_e32` on a scalar instruction, an operand dropped, a hex register index, a hex float, a character
deleted or doubled — and the verdicts compared: both accept with the same bytes, or both refuse."""

from __future__ import annotations

import random
import re

MUTATIONS = ("trailing_comma", "undefined_name", "tilde", "bang", "neg_paren", "shift64", "e32_suffix",
             "drop_operand", "hex_register", "hex_float", "delete_char", "double_char", "swap_operands")


def _numbers(line: str) -> list[re.Match]:
    return list(re.finditer(r"(?<![\w\[:.])(-?\d+|0x[0-9a-fA-F]+)(?![\w\]:.])", line))


def mutate(line: str, kind: str, rng: random.Random) -> str | None:
    """`line` changed by mutation `kind`, or None when the kind does not apply to it."""
    mnemonic, _, rest = line.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest else []
    nums = _numbers(line)
    if kind == "trailing_comma":
        return line + "," if ops else None
    if kind == "undefined_name" and nums:
        m = rng.choice(nums)
        return line[:m.start()] + "undefined_sym" + line[m.end():]
    if kind in ("tilde", "bang", "neg_paren", "shift64") and nums:
        m = rng.choice(nums)
        value = m.group(0)
        new = {"tilde": f"~{value}", "bang": f"!{value}", "neg_paren": f"-({value})",
               "shift64": f"{value}+(1<<64)"}[kind]
        return line[:m.start()] + new + line[m.end():]
    if kind == "e32_suffix" and mnemonic.startswith("s_") and not mnemonic.endswith(("_e32", "_e64")):
        return f"{mnemonic}_e32 {rest}".rstrip()
    if kind == "drop_operand" and len(ops) > 1:
        i = rng.randrange(len(ops))
        return f"{mnemonic} " + ", ".join(o for j, o in enumerate(ops) if j != i)
    if kind == "hex_register":
        m = re.search(r"\b([vsa])\[(\d+):(\d+)\]", line) or re.search(r"\b([vsa])(\d+)\b", line)
        if m is None:
            return None
        if m.lastindex == 3:
            return line[:m.start()] + f"{m.group(1)}[{hex(int(m.group(2)))}:{hex(int(m.group(3)))}]" + line[m.end():]
        return line[:m.start()] + f"{m.group(1)}[{hex(int(m.group(2)))}]" + line[m.end():]
    if kind == "hex_float" and nums:
        m = rng.choice(nums)
        return line[:m.start()] + rng.choice(["0x1p3", "0x1.8p1", "-0x1p-2"]) + line[m.end():]
    if kind == "delete_char" and len(line) > 2:
        i = rng.randrange(len(line))
        return line[:i] + line[i + 1:]
    if kind == "double_char" and line:
        i = rng.randrange(len(line))
        return line[:i] + line[i] + line[i:]
    if kind == "swap_operands" and len(ops) > 1:
        i, j = rng.sample(range(len(ops)), 2)
        ops[i], ops[j] = ops[j], ops[i]
        return f"{mnemonic} " + ", ".join(ops)
    return None


def mutated_lines(base: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """`count` (kind, line) pairs: random corpus lines, each mutated once."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    tries = 0
    while len(out) < count and tries < 20 * count:
        tries += 1
        kind = rng.choice(MUTATIONS)
        line = mutate(rng.choice(base), kind, rng)
        if line is not None and "\n" not in line and ";" not in line:
            out.append((kind, line))
    return out


def base_lines(mcpu: str = "gfx942") -> list[str]:
    """The corpus' base case of every form of the target's spec."""
    from jitgemm.isa.spec.forms import forms_of
    from jitgemm.isa.spec.sources import load_spec

    from tests.asm_corpus import cases_for_form

    forms = forms_of(load_spec(mcpu))
    out = []
    for form in forms.forms:
        base = next((c.text for c in cases_for_form(form) if c.what == "base"), None)
        if base is not None:
            out.append(base)
    return out


def differences(lines: list[str], llvm_mc: str, mcpu: str = "gfx942") -> list[tuple[str, str, str]]:
    """(line, llvm-mc's verdict, ours) where acceptance or bytes differ. Ours assembles the line as a file (so
    undefined names become relocations, as in llvm-mc's object); only the instruction bytes are compared."""
    from jitgemm.isa.asm.file import assemble_file
    from jitgemm.isa.asm_errors import AsmError
    from jitgemm.isa.spec.forms import forms_of
    from jitgemm.isa.spec.sources import load_spec

    from tests.asm_corpus import llvm_mc_encodings

    forms = forms_of(load_spec(mcpu))
    theirs = llvm_mc_encodings(lines, llvm_mc, mcpu)
    out = []
    for line, (ref, text) in zip(lines, theirs, strict=True):
        try:
            obj = assemble_file(line + "\n", forms, file="m.s")
            ours = obj.sections[".text"].data if ".text" in obj.sections else b""
            why = ours.hex()
        except AsmError as exc:
            ours, why = None, str(exc).split("\n")[0]
        except Exception as exc:  # noqa: BLE001 (a traceback is a finding, reported with its type)
            ours, why = None, f"TRACEBACK {type(exc).__name__}: {exc}"
        if ref is not None and ours is not None and len(ref) == len(ours) and ref[-4:] == b"\x0a" * 4 \
                and obj.relocations:
            ours = ref = ref[:-4] if ref[:-4] == ours[:-4] else ref   # llvm-mc's fixup bytes print as A,A,A,A
        if ours != ref or why.startswith("TRACEBACK"):
            out.append((line, ref.hex() if ref is not None else f"refused: {text}", why))
    return out
