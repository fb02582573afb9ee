"""`jitgemm disasm` on AMD's hand-written production kernels (every gfx942 code object of the pinned
amd-aiter wheel, about 1,300 objects and 6.3 M instructions) prints exactly what `llvm-objdump-22 -d` prints,
and every line it prints reassembles to the object's bytes.

Compared: every line of objdump's listing after its per-file `PATH:<tab>file format elf64-amdgpu` header
(which the CLI prints too, with the path as given): section headers, blank lines, `ADDR <label>:` headers
from `.symtab`, and each instruction line byte for byte (text, column padding, offset, raw words, the
`<symbol+0x..>` branch comment). Nothing is normalized.

The whole set runs in one process (the decode tables and line cache are built once) while llvm-objdump
works through batches of files in a second thread, so the test fits in CI's budget on two cores; it
prints its time.
"""

from __future__ import annotations

import subprocess
import threading
import time
from queue import Queue

from jitgemm.isa.asm.assembler import assemble
from jitgemm.isa.spec.forms import forms_of

from jitgemm import isa
from jitgemm.commands.disasm import listing, text_sections
from tests.fixtures.aiter_corpus import aiter_objects
from tests.fixtures.oracles import require_tool

BATCH = 100  # files per llvm-objdump process


def _objdump_batches(objdump: str, paths, out: Queue) -> None:
    """Put {path: listing lines} per batch of files on `out` (None at the end; an exception if one failed)."""
    try:
        for i in range(0, len(paths), BATCH):
            batch = [str(p) for p in paths[i:i + BATCH]]
            text = subprocess.run([objdump, "-d", *batch], capture_output=True, text=True, check=True).stdout
            files: dict[str, list[str]] = {}
            current = None
            for line in text.split("\n"):
                if line.endswith(":\tfile format elf64-amdgpu"):
                    current = files.setdefault(line[: -len(":\tfile format elf64-amdgpu")], [])
                elif current is not None:
                    current.append(line)
            out.put(files)
    except Exception as exc:  # noqa: BLE001 - handed to the test thread, which raises it
        out.put(exc)
    out.put(None)


def _source(lines: list[str]) -> str:
    """Assembly text from a listing: each `<label>:` header becomes a label, each instruction its text."""
    src = []
    for line in lines:
        if line.startswith("\t"):
            src.append(line[1:].split("//", 1)[0].rstrip())
        elif line.endswith(">:"):
            src.append(line.split(" <", 1)[1][:-2] + ":")
    return "\n".join(src) + "\n"


def _named_branch(line: str) -> bool:
    """A branch line whose target operand is a name, not a number."""
    if not line.startswith(("\ts_branch ", "\ts_cbranch_")):
        return False
    target = line[1:].split("//", 1)[0].split()[-1]
    return not target.lstrip("-").isdigit()


def test_every_aiter_gfx942_object_lists_as_objdump_and_reassembles(capsys):
    objdump = require_tool("llvm-objdump")
    paths = aiter_objects("gfx942")
    assert len(paths) > 1200, f"the pinned wheel ships 1,281 gfx942 objects, found {len(paths)}"
    forms = forms_of(isa.load_spec("gfx942"))
    start = time.perf_counter()
    queue: Queue = Queue()
    worker = threading.Thread(target=_objdump_batches, args=(objdump, paths, queue), daemon=True)
    worker.start()
    instructions = labels = named_branches = 0
    differences: list[str] = []
    not_reassembled: list[str] = []
    done = 0
    while True:
        batch = queue.get()
        if batch is None:
            break
        if isinstance(batch, Exception):
            raise batch
        for path in paths[done:done + BATCH]:
            sections, processor = text_sections(path.read_bytes())
            assert processor == "gfx942", f"{path}: e_flags name {processor}"
            ours = listing(sections, forms).lines
            theirs = batch[str(path)]
            while theirs and theirs[-1] == "":
                theirs.pop()
            if ours != theirs:
                bad = next(i for i, (a, b) in enumerate(zip(ours + [""], theirs + [""], strict=False)) if a != b)
                differences.append(f"{path.name} line {bad}: objdump {theirs[bad:bad + 1]} ours {ours[bad:bad + 1]}")
            instructions += sum(1 for line in ours if line.startswith("\t"))
            labels += sum(1 for line in ours if line.endswith(">:"))
            named_branches += sum(1 for line in ours if _named_branch(line))
            code = b"".join(s.body for s in sections)
            try:
                again = assemble(_source(ours), forms).code
            except isa.IsaError as exc:
                not_reassembled.append(f"{path.name}: {exc}")
                continue
            if again != code:
                at = next((i for i, (a, b) in enumerate(zip(again, code, strict=False)) if a != b),
                          min(len(again), len(code)))
                not_reassembled.append(f"{path.name}: reassembled bytes differ at .text+{at:#x}")
        done += BATCH
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\naiter gfx942: {len(paths)} objects, {instructions} instruction lines, {labels} symbol headers, "
              f"{named_branches} branches named by label; listing == llvm-objdump-22 -d in "
              f"{len(paths) - len(differences)}/{len(paths)} objects; reassembled {len(paths) - len(not_reassembled)}"
              f"/{len(paths)}; {seconds:.1f} s")
    assert done >= len(paths)
    assert instructions > 6_000_000 and labels > 17_000 and named_branches > 30_000
    assert not differences, f"{len(differences)} objects differ from llvm-objdump, e.g.:\n" + \
        "\n".join(differences[:10])
    assert not not_reassembled, f"{len(not_reassembled)} objects do not reassemble, e.g.:\n" + \
        "\n".join(not_reassembled[:10])
