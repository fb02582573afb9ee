"""`jitgemm disasm` on ELF files it cannot list: another machine's object is refused by e_machine, and a
corrupted code object is a clean error (exit status 2, the file named, the structure that does not fit)
or a listing, never a traceback."""

from __future__ import annotations

import random
import struct
import subprocess

import pytest

from jitgemm.cli import main
from tests.fixtures.aiter_corpus import aiter_root
from tests.fixtures.oracles import require_tool

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # the ELF64 header (System V gABI, "ELF Header")


def _small_aiter_object() -> bytes:
    """A small hand-written kernel with local labels (topksoftmax, about 8 KB)."""
    return (aiter_root() / "gfx942" / "topksoftmax" / "topksoftmax_4x128x6.co").read_bytes()


def test_x86_object_is_refused_by_e_machine(tmp_path, capsys):
    clang = require_tool("clang")
    src, obj = tmp_path / "f.c", tmp_path / "f.o"
    src.write_text("int f(int x) { return 3 * x + 1; }\n")
    subprocess.run([clang, "--target=x86_64-linux-gnu", "-O2", "-c", str(src), "-o", str(obj)], check=True,
                   capture_output=True)
    assert main(["disasm", str(obj)]) == 2
    err = capsys.readouterr().err
    assert str(obj) in err and "e_machine=62" in err and "EM_AMDGPU (224)" in err, err


def _patch_header(data: bytes, **fields) -> bytes:
    names = ["ident", "type", "machine", "version", "entry", "phoff", "shoff", "flags", "ehsize", "phentsize",
             "phnum", "shentsize", "shnum", "shstrndx"]
    values = dict(zip(names, EHDR.unpack_from(data), strict=True))
    values.update(fields)
    return EHDR.pack(*(values[n] for n in names)) + data[EHDR.size:]


def _section_headers(data: bytes) -> tuple[int, int]:
    values = EHDR.unpack_from(data)
    return values[6], values[12]  # e_shoff, e_shnum


@pytest.mark.parametrize("case", ["truncated header", "section table past end", "shstrndx beyond sections",
                                  "section data past end", "symtab link beyond sections", "bad entsize"])
def test_targeted_corruptions_are_clean_errors(case, tmp_path, capsys):
    data = _small_aiter_object()
    shoff, shnum = _section_headers(data)
    if case == "truncated header":
        bad = data[:40]
    elif case == "section table past end":
        bad = _patch_header(data, shoff=len(data) - 64)
    elif case == "shstrndx beyond sections":
        bad = _patch_header(data, shstrndx=shnum + 5)
    else:
        bad = bytearray(data)
        for i in range(shnum):  # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, align, entsize
            at = shoff + 64 * i
            kind = struct.unpack_from("<I", bad, at + 4)[0]
            if case == "section data past end" and kind == 1:  # SHT_PROGBITS
                struct.pack_into("<Q", bad, at + 32, 1 << 40)
            if case == "symtab link beyond sections" and kind == 2:  # SHT_SYMTAB
                struct.pack_into("<I", bad, at + 40, 999)
            if case == "bad entsize" and kind == 2:
                struct.pack_into("<Q", bad, at + 56, 17)
        bad = bytes(bad)
    path = tmp_path / "bad.co"
    path.write_bytes(bad)
    assert main(["disasm", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jitgemm disasm: error: ") and str(path) in err, err


def test_random_corruptions_never_traceback(tmp_path, capsys):
    """500 seeded mutations (flipped bytes, overwritten header and section-table words, truncations) of a
    real code object: each is listed (exit 0) or refused with a named error (exit 2)."""
    data = _small_aiter_object()
    shoff, shnum = _section_headers(data)
    rng = random.Random(11)
    path = tmp_path / "m.co"
    outcomes = {0: 0, 2: 0}
    for _ in range(500):
        bad = bytearray(data)
        kind = rng.randrange(4)
        if kind == 0:
            for _ in range(rng.randint(1, 8)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
        elif kind == 1:  # a header word
            at = rng.randrange(16, 64 - 2, 2)
            struct.pack_into("<H", bad, at, rng.choice([0, 1, 0xFFFF, rng.randrange(1 << 16)]))
        elif kind == 2:  # a section-header field
            at = shoff + 64 * rng.randrange(shnum) + 8 * rng.randrange(8)
            struct.pack_into("<Q", bad, at, rng.choice([0, 1 << 63, (1 << 64) - 1, rng.randrange(1 << 20)]))
        else:
            del bad[rng.randrange(len(bad)):]
        path.write_bytes(bytes(bad))
        code = main(["disasm", str(path)])
        out = capsys.readouterr()
        assert code in (0, 2)
        if code == 2:
            assert out.err.startswith("jitgemm disasm: error: "), out.err
        outcomes[code] += 1
    assert outcomes[0] > 20 and outcomes[2] > 100, outcomes
