"""`jitgemm disasm`: lists every kernel of a code object like llvm-objdump (same instruction text, same
offsets and raw words), prints undecodable words as `.long` with one warning, and rejects non-ELF input
with exit status 2."""

from __future__ import annotations

import re

from jitgemm.cli import main
from tests.fixtures.asm_support import SUBSET, clang_objects, objdump

_LINE = re.compile(r"^\t(.*?)\s*// ([0-9A-F]{12}): ((?:[0-9A-F]{8} ?)+)")


def _rows(text: str) -> list[tuple[int, str, int]]:
    rows = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            rows.append((int(m.group(2), 16), " ".join(m.group(1).split()), 4 * len(m.group(3).split())))
    return rows


def test_listing_equals_objdump(tmp_path, capsys):
    obj = clang_objects(tmp_path)[0]
    assert main(["disasm", str(obj), "--spec", str(SUBSET)]) == 0
    out = capsys.readouterr()
    ours = _rows(out.out)
    blocks = []  # each kernel's [start, end) as we list it; objdump also lists padding between kernels
    for block in out.out.split("\n\n"):
        rows = _rows(block)
        if rows:
            blocks.append((rows[0][0], rows[-1][0] + rows[-1][2]))
    assert len(blocks) >= 5
    theirs = [r for r in objdump(obj) if any(lo <= r[0] < hi for lo, hi in blocks)]
    assert [(o, s) for o, _t, s in ours] == [(o, s) for o, _t, s in theirs]
    known = [(a, b) for a, b in zip(ours, theirs, strict=False) if not a[1].startswith(".long")]
    assert known and all(a == b for a, b in known)
    unknown = len(ours) - len(known)
    if unknown:
        assert f"{unknown} word(s) not decodable" in out.err


def test_raw_round_trip_with_asm(tmp_path, capsys):
    src = tmp_path / "k.s"
    src.write_text("v_mov_b32 v1, 0x3fc00000\ns_waitcnt vmcnt(0)\n.long 0xffffffff\ns_endpgm\n")
    binary = tmp_path / "k.bin"
    assert main(["asm", str(src), "--spec", str(SUBSET), "--raw", "-o", str(binary)]) == 0
    assert main(["disasm", "--raw", str(binary), "--spec", str(SUBSET), "--no-show-raw-insn"]) == 0
    out = capsys.readouterr()
    listing = [line.strip() for line in out.out.splitlines() if line.startswith("\t")]
    assert listing[0] == "v_mov_b32_e32 v1, 0x3fc00000" and listing[-1] == "s_endpgm"
    assert ".long 0xffffffff" in listing and "not decodable" in out.err
    again = tmp_path / "again.s"
    again.write_text("\n".join(listing) + "\n")
    assert main(["asm", str(again), "--spec", str(SUBSET), "--raw", "-o", str(tmp_path / "again.bin")]) == 0
    assert (tmp_path / "again.bin").read_bytes() == binary.read_bytes()


def test_bad_inputs_exit_2(tmp_path, capsys):
    junk = tmp_path / "junk.co"
    junk.write_bytes(b"not an elf at all")
    assert main(["disasm", str(junk)]) == 2
    assert "not an ELF" in capsys.readouterr().err
    assert main(["disasm", str(tmp_path / "missing.co")]) == 2
    assert "cannot read" in capsys.readouterr().err
    truncated = tmp_path / "trunc.co"
    truncated.write_bytes(b"\x7fELF" + b"\0" * 20)
    assert main(["disasm", str(truncated)]) == 2
