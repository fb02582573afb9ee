"""The decoder's identifier index is cached on disk (sealed, keyed by spec and isa source), so a new process
builds only the forms its words use; decoding through the cached index equals decoding through the full build
over our kernels and AMD's aiter kernels. `jitgemm disasm A B ...` lists several files in one process."""

from __future__ import annotations

import random

import msgpack
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.isa.disasm import decode_index
from jitgemm.isa.disasm.decoder import decode
from jitgemm.isa.spec.forms import SpecForms
from jitgemm.util import files

import jitgemm
from jitgemm import isa
from jitgemm.cli import main
from jitgemm.commands.disasm import text_sections
from tests.fixtures.aiter_corpus import aiter_objects


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))


def _corpus(n: int = 24) -> list[tuple[str, int, bytes]]:
    blobs = [jitgemm.compile(GemmProblem.make(96, 80, 64, dt)).code_object for dt in ("bf16", "fp8", "int8")]
    paths = aiter_objects("gfx942")
    blobs += [p.read_bytes() for p in random.Random(11).sample(paths, n)]
    return [(s.name, s.address, s.body) for blob in blobs for s in text_sections(blob)[0]]


def _listing(forms: SpecForms, kernels) -> list[tuple]:
    from jitgemm.isa.disasm.printer import format_instruction

    return [(d.offset, d.size, d.raw, d.encoding, d.warning,
             format_instruction(d.instruction) if d.instruction else None)
            for _name, address, code in kernels for d in decode(code, forms, base=address)]


def test_cached_index_decodes_like_the_full_build():
    spec = isa.load_spec("gfx942")
    kernels = _corpus()
    # compiling through the selector already decoded its candidates (the timing model traces them), which wrote
    # the index: start this comparison from none
    decode_index.index_path(spec.sha256).unlink(missing_ok=True)
    full = SpecForms(spec)
    expected = _listing(full, kernels)                 # builds every form, writes the index
    assert full._complete and decode_index.load(spec.sha256) is not None
    lazy = SpecForms(spec)
    assert _listing(lazy, kernels) == expected
    assert not lazy._complete and len(lazy._built) < len(full._built) / 2   # only the forms the words used
    assert sum(1 for e in expected if e[5] is not None) > 10000


@pytest.mark.parametrize("damage", ["flip", "truncate", "unsealed", "wrong_shape", "stale_source"])
def test_damaged_index_is_rebuilt(damage):
    spec = isa.load_spec("gfx942")
    kernels = _corpus(4)
    expected = _listing(SpecForms(spec), kernels)
    path = decode_index.index_path(spec.sha256)
    raw = path.read_bytes()
    data = msgpack.unpackb(files.unseal(raw), strict_map_key=False)
    if damage == "flip":       # a coordinate of a candidate form: valid msgpack, a wrong instruction
        mask, rows = data["masks"][0]
        rows[0][1][0][0] ^= 1
        payload = msgpack.packb(data, use_bin_type=True)
        path.write_bytes(raw[: len(files.SEAL_MAGIC) + 65] + payload)    # the old seal over the new payload
    elif damage == "truncate":
        path.write_bytes(raw[:-100])
    elif damage == "unsealed":
        path.write_bytes(msgpack.packb(data, use_bin_type=True))
    elif damage == "wrong_shape":
        data["masks"] = [["ff", [["1", [[1, 2, 3]]]]]]
        files.write_sealed(path, msgpack.packb(data, use_bin_type=True))
    else:
        data["source"] = "0" * 64
        files.write_sealed(path, msgpack.packb(data, use_bin_type=True))
    assert decode_index.load(spec.sha256) is None
    again = SpecForms(spec)
    assert _listing(again, kernels) == expected and again._complete        # rebuilt from every form
    assert decode_index.load(spec.sha256) is not None                       # and rewritten


def test_batch_lists_each_file_under_its_heading(tmp_path, capsys):
    paths = []
    for i, dt in enumerate(("bf16", "fp16")):
        path = tmp_path / f"k{i}.co"
        path.write_bytes(jitgemm.compile(GemmProblem.make(64, 64, 64, dt)).code_object)
        paths.append(str(path))
    singles = []
    for path in paths:
        assert main(["disasm", path]) == 0
        singles.append(capsys.readouterr().out)
    bad = tmp_path / "bad.co"
    bad.write_bytes(b"not an elf")
    assert main(["disasm", paths[0], str(bad), paths[1]]) == 2
    out = capsys.readouterr()
    # each readable file under its own heading, as llvm-objdump lists several files; the bad one only on stderr
    assert all(s.startswith(f"\n{p}:\tfile format elf64-amdgpu\n") for p, s in zip(paths, singles, strict=True))
    assert out.out == singles[0] + singles[1]
    assert out.err.strip() == f"jitgemm disasm: error: {bad} is not an ELF code object (use --raw for bare " \
                              f"machine code)"


def test_disasm_refuses_dev_zero(capsys):
    assert main(["disasm", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err
