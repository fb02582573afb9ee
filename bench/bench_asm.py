"""Assembler and disassembler speed beside LLVM's (llvm-mc, llvm-objdump) on the same input.

Input: real kernels (clang-22 and, when installed, Triton code objects for gfx942, decoded with our
decoder), as instruction objects, as text and as machine code; plus the spec-generated corpus (every
form, nearly all distinct) for the encoder. Our numbers are given cold (caches cleared, the first
time an instruction is seen) and warm (kernels repeat instructions; generators re-encode them), and
LLVM's as whole-process throughput on a file large enough that start-up is small.

    python bench/bench_asm.py [--spec PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

KERNELS_C = REPO / "tests" / "test_asm_support.py"


def _tool(name: str) -> str | None:
    return shutil.which(f"{name}-22") or shutil.which(name)


def _best(fn, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _real_instructions(forms, tmp: Path) -> list:
    """Instructions of clang (and Triton, if importable) kernels for gfx942, decoded by us."""
    from jitgemm.codegen import codeobj
    from jitgemm.isa.disasm.decoder import decode

    from tests.fixtures.asm_support import CLANG_KERNELS

    paths = []
    clang = _tool("clang")
    if clang:
        src = tmp / "k.c"
        src.write_text(CLANG_KERNELS)
        for level in ("-O1", "-O3"):
            obj = tmp / f"k{level}.o"
            subprocess.run([clang, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", level, "-c", str(src), "-o",
                            str(obj)], check=True, capture_output=True)
            paths.append(obj)
    try:
        from tests.fixtures import triton_kernels as tri

        if tri.triton is not None:
            paths += tri.build_all(tmp)
    except Exception as exc:  # noqa: BLE001 - Triton is optional here
        print(f"(Triton kernels skipped: {exc})")
    insts = []
    for path in paths:
        for kernel in codeobj.read(path.read_bytes()).kernels:
            insts += [d.instruction for d in decode(kernel.code, forms) if d.instruction is not None]
    return insts


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1000:8.1f}k/s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"))
    ap.add_argument("--repeat", type=int, default=40, help="copies of the kernels in the big input (default 40)")
    args = ap.parse_args(argv)

    from jitgemm.isa.asm.assembler import assemble
    from jitgemm.isa.asm.encoder import encode, encode_word
    from jitgemm.isa.asm.fastpath import _LINES, _MODIFIERS, _OPERANDS
    from jitgemm.isa.asm.parser import parse
    from jitgemm.isa.disasm.decoder import decode
    from jitgemm.isa.disasm.printer import format_instruction
    from jitgemm.isa.spec.forms import forms_of

    from jitgemm import isa
    from tests.fixtures.asm_corpus import corpus

    spec = isa.load_spec(args.spec)
    forms = forms_of(spec)
    mc, objdump = _tool("llvm-mc"), _tool("llvm-objdump")
    rows = []

    def clear():
        forms.encode_cache.clear()
        forms.decode_cache.clear()
        _LINES.clear()
        _OPERANDS.clear()
        _MODIFIERS.clear()

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        real = _real_instructions(forms, tmp)
        distinct = []
        for case in corpus(forms):
            try:
                encode_word(case.item, forms)
                distinct.append(case.item)
            except isa.IsaError:
                pass
        big = real * args.repeat
        text = "\n".join(format_instruction(i) for i in big) + "\n"
        src = tmp / "big.s"
        src.write_text(text)
        obj = tmp / "big.o"
        llvm_asm = None
        if mc:
            llvm_asm = _best(lambda: subprocess.run([mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src),
                                                     "-o", str(obj)], check=True))
        code = encode(big, forms).code

        # encode instruction objects
        t_distinct = _best(lambda: [encode_word(i, forms) for i in distinct])
        t_real_cold = _best(lambda: [encode_word(i, forms) for i in real])

        def warm():
            encode(big, forms)
        encode(big, forms)
        t_real_warm = _best(warm)
        llvm_rate = f"{len(big) / llvm_asm / 1000:8.1f}k/s" if llvm_asm else "   n/a"
        rows.append(("encode objects: corpus, all distinct, no cache", len(distinct), t_distinct, llvm_rate))
        rows.append(("encode objects: real kernels, no cache", len(real), t_real_cold, llvm_rate))
        rows.append((f"encode objects: real kernels x{args.repeat}, cached", len(big), t_real_warm, llvm_rate))

        # assemble text
        one_text = "\n".join(format_instruction(i) for i in real) + "\n"

        def asm_one_cold():
            clear()
            assemble(one_text, forms)
        t_asm_one = _best(asm_one_cold)
        rows.append((f"assemble text: real kernels ({len(real)} lines), cold caches", len(real), t_asm_one,
                     llvm_rate))

        def asm_cold():
            clear()
            assemble(text, forms)
        t_asm_cold = _best(asm_cold, 2)
        t_asm_warm = _best(lambda: assemble(text, forms), 2)
        t_parse_lark = _best(lambda: parse(text[: len(text) // args.repeat], fast=False), 2) * args.repeat
        rows.append((f"assemble text: x{args.repeat} ({len(big)} lines), cold caches", len(big), t_asm_cold,
                     llvm_rate))
        rows.append((f"assemble text: x{args.repeat}, warm caches", len(big), t_asm_warm, llvm_rate))
        rows.append(("  parse only, LALR grammar without fast path", len(big), t_parse_lark, llvm_rate))

        # decode
        llvm_dis = None
        if objdump and obj.exists():
            llvm_dis = _best(lambda: subprocess.run([objdump, "-d", "--mcpu=gfx942", str(obj)], check=True,
                                                    stdout=subprocess.DEVNULL))
        dis_rate = f"{len(big) / llvm_dis / 1000:8.1f}k/s" if llvm_dis else "   n/a"
        one = encode(real, forms).code

        def dec_cold():
            forms.decode_cache.clear()
            for form in forms.forms:
                for slot in form.slots:
                    if slot.decoded is not None:
                        slot.decoded.clear()
            decode(one, forms)
        t_dec_cold = _best(dec_cold)
        t_dec_warm = _best(lambda: decode(code, forms), 2)
        t_print = _best(lambda: [format_instruction(d.instruction) for d in decode(code, forms)], 2)
        rows.append(("decode machine code: real kernels, cold caches", len(real), t_dec_cold, dis_rate))
        rows.append((f"decode machine code: x{args.repeat}, warm caches", len(big), t_dec_warm, dis_rate))
        rows.append(("decode + print text (disassemble)", len(big), t_print, dis_rate))

    print(f"spec: {spec.source} ({len(spec.instructions)} instructions); input: {len(real)} instructions from "
          f"real kernels, {len(distinct)} distinct corpus forms; LLVM tools: {mc}, {objdump}")
    print(f"{'task':52} {'items':>8} {'ours':>11} {'LLVM':>11} {'ours/LLVM':>9}")
    for what, n, seconds, llvm in rows:
        ours = n / seconds
        ratio = ""
        if llvm.strip() != "n/a":
            ratio = f"{ours / (float(llvm.strip()[:-3]) * 1000):8.2f}x"
        print(f"{what:52} {n:8d} {_rate(n, seconds):>11} {llvm:>11} {ratio:>9}")
    print("LLVM column: llvm-mc -filetype=obj (encode/assemble rows) and llvm-objdump -d (decode rows) on the "
          f"x{args.repeat} file, whole process, best of 3.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
