"""A fast cold start that stays correct: what a new process loads for `jitgemm disasm`, the lazily built
instruction table, and the pre-parsed specs a source checkout ships (issue 17, "Speed from a cold start").

Speed itself is measured in bench/bench_disasm_cli.py and bench/bench_compile.py; these tests pin the
mechanisms (which modules a disasm process imports, that no XML is parsed, that lazy equals eager) and that the
output is still llvm-objdump's.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jitgemm.isa.spec import cache as spec_cache
from jitgemm.isa.spec import sources as spec_sources
from jitgemm.isa.spec.data import build_spec
from jitgemm.isa.spec.instruction_table import head_of
from jitgemm.isa.spec.xml_reader import read_xml

from jitgemm import cli, isa
from tests.fixtures.asm_support import objdump_instruction_lines
from tests.fixtures.oracles import require_tool
from tests.fixtures.spec_factory import private_spec_cache, toy_spec  # noqa: F401 - autouse fixture

REPO = Path(__file__).resolve().parents[2]
BUNDLED = sorted((REPO / "specs").glob("*.xml"))


def _env(tmp_path) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "JITGEMM_CACHE_DIR": str(tmp_path / "fresh-cache")}


# --- the CLI imports only the command it runs ------------------------------------------------------------------

def test_every_command_module_registers_exactly_its_listed_commands():
    """cli.COMMANDS is what lets `jitgemm disasm` import one command module; it must name every command."""
    for module, names in cli.COMMANDS.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(module).register(sub)
        assert tuple(sub.choices) == names, module
    full = cli.build_parser()
    assert set(next(a for a in full._actions if isinstance(a, argparse._SubParsersAction)).choices) == \
        {n for names in cli.COMMANDS.values() for n in names}


@pytest.mark.parametrize("argv, expected", [(["disasm", "x.co"], "jitgemm.commands.disasm"),
                                             (["run", "--m", "1"], "jitgemm.commands.gemm"),
                                             (["tuning", "show"], "jitgemm.commands.sweep"),
                                             (["--help"], None), (["disasmm"], None), ([], None)])
def test_command_line_names_its_module(argv, expected):
    assert cli._command_module(argv) == expected


def test_misspelt_command_still_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["disasmm"])
    err = capsys.readouterr().err
    assert "invalid choice" in err and "'disasm'" in err and "'compile'" in err


def _kernel(tmp_path) -> Path:
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm

    rng = random.Random(17)
    m, n, k = (rng.choice((64, 128, 192)) for _ in range(3))
    path = tmp_path / "k.co"
    path.write_bytes(jitgemm.compile(GemmProblem.make(m, n, k, "bf16", layout="NT")).code_object)
    return path


def test_disasm_process_loads_only_the_decoder_and_agrees_with_objdump(tmp_path):
    """A new `jitgemm disasm` process imports neither the compiler, nor numpy, nor the XML parser, nor PyYAML
    (the target profiles' documents are cached after the first process), nor the code-object writer, nor the
    other commands; and its listing is still llvm-objdump's."""
    objdump = require_tool("llvm-objdump")
    co = _kernel(tmp_path)
    probe = ("import json, sys\nfrom jitgemm.cli import main\nstatus = main(['disasm', sys.argv[1]])\n"
             "sys.stdout.flush()\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\nsys.exit(status)\n")
    env = _env(tmp_path)
    subprocess.run([sys.executable, "-m", "jitgemm", "disasm", str(co)], env=env, check=True, capture_output=True)
    out = subprocess.run([sys.executable, "-c", probe, str(co)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    modules = set(json.loads(out.stderr.strip().splitlines()[-1]))
    forbidden = {"numpy", "lark", "yaml", "xml.etree.ElementTree", "jitgemm.api", "jitgemm.kernel",
                 "jitgemm.selector", "jitgemm.codegen.gemm_ir", "jitgemm.codegen.codeobj.writer",
                 "jitgemm.codegen.codeobj.linker", "jitgemm.codegen.codeobj.metadata", "jitgemm.isa.asm.assembler"}
    forbidden |= {m for m in cli.COMMANDS if m != "jitgemm.commands.disasm"}
    assert not modules & forbidden, sorted(modules & forbidden)
    theirs = subprocess.run([objdump, "-d", "--mcpu=gfx942", str(co)], capture_output=True, text=True, check=True)
    ours = objdump_instruction_lines(out.stdout.splitlines())
    assert len(ours) > 50 and ours == objdump_instruction_lines(theirs.stdout.splitlines())


# --- the lazily built instruction table ------------------------------------------------------------------------

def test_cached_spec_builds_only_what_is_asked_and_equals_a_fresh_parse(tmp_path):
    """From the cache, loading builds no instruction; each one built on demand equals the XML's; the name and
    opcode look-ups (made from the heads) agree with the instructions themselves."""
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    eager = build_spec(read_xml(path), str(path))
    isa.load_spec(path)                                  # writes the cache entry
    spec_sources._memo.clear()
    lazy = isa.load_spec(path)
    assert not lazy.instructions._built                  # loaded without building any instruction
    order = list(range(len(eager.instructions)))
    random.Random(3).shuffle(order)
    for i in order:
        assert lazy.instructions[i] == eager.instructions[i]
        assert head_of(lazy.instructions[i]) == lazy.instructions.heads[i]
    assert list(lazy.instructions) == list(eager.instructions) and lazy.instructions[-1] is lazy.instructions[
        len(lazy.instructions) - 1]
    for inst in eager.instructions:
        for name in (inst.name, *inst.aliases):
            assert lazy.find_instruction(name.lower()) == eager.find_instruction(name)
        for ie in inst.encodings:
            assert lazy.instruction_by_opcode(ie.encoding_name, ie.opcode) == \
                eager.instruction_by_opcode(ie.encoding_name, ie.opcode)


@pytest.mark.parametrize("target, family", [("gfx942", "cdna3"), ("gfx950", "cdna4")])
def test_bundled_spec_lazy_equals_eager_everywhere(target, family):
    """A bundled subset as the loader gives it (pre-parsed, lazy) equals a fresh XML parse: instructions one by one,
    encodings (CDNA 4's 128-bit ENC_VOP3PX2 masks included), operand types, data formats, look-up tables."""
    xml = next(p for p in BUNDLED if family in p.name)
    lazy = isa.load_spec(target)
    eager = build_spec(read_xml(xml), str(xml))
    assert len(lazy.instructions) == len(eager.instructions) > 1000
    assert lazy.instructions == eager.instructions
    assert dict(lazy.encodings) == dict(eager.encodings) and dict(lazy.operand_types) == dict(eager.operand_types)
    assert dict(lazy.data_formats) == dict(eager.data_formats)
    names = {i.name for i in eager.instructions}
    for name in random.Random(5).sample(sorted(names), 50):
        assert lazy.instruction(name) == eager.instruction(name)


def test_malformed_record_is_a_spec_error_naming_the_file(tmp_path):
    """A record that only fails when built (sealed, so only a writer bug can cause it) is a SpecError naming
    the spec, never a KeyError in the middle of a disassembly."""
    path = tmp_path / "toy.xml"
    path.write_text(toy_spec())
    data = read_xml(path)
    broken = {**data, "instructions": [{k: v for k, v in r.items() if k != "flags"} for r in data["instructions"]]}
    spec = build_spec(broken, str(path))
    with pytest.raises(isa.SpecError, match="malformed instruction record") as info:
        spec.instructions[0]
    assert str(path) in str(info.value)


def test_target_profile_document_cache_is_sealed_and_only_a_shortcut(tmp_path):
    """The cached YAML document of a profile is used only for the exact text it came from; a damaged entry is
    parsed again; either way the profile equals the one parsed from YAML (validation runs every time)."""
    from jitgemm.isa.spec import targets

    text = (REPO / "specs" / "targets" / "gfx942.yaml").read_text()
    want = targets.parse_profile(text, "gfx942.yaml")            # parses, fills the cache
    entries = list((tmp_path / "cache" / "target-profiles").glob("*.msgpack"))
    assert len(entries) == 1
    assert targets.parse_profile(text, "gfx942.yaml").values == want.values    # from the cache, the same profile
    raw = bytearray(entries[0].read_bytes())
    raw[-3] ^= 0x20                                              # one bit of the payload
    entries[0].write_bytes(bytes(raw))
    assert targets.parse_profile(text, "gfx942.yaml").values == want.values
    changed = text.replace("wavefront_size: 64", "wavefront_size: 32")
    assert changed != text and targets.parse_profile(changed, "x.yaml").wavefront_size == 32
    with pytest.raises(isa.SpecError, match="malformed target profile"):
        targets.parse_profile(text + "\n  - : [\n", "bad.yaml")


def test_preparsed_profile_is_used_only_for_the_text_it_was_parsed_from(tmp_path):
    """The target profiles ship pre-parsed (`<name>.yaml.parsed`, issue 31: a fully cold compile imports no
    PyYAML). The document is taken only for the exact text it names; a damaged, foreign or stale file is
    ignored and the YAML parsed; either way the profile equals the YAML's (validation runs every time)."""
    from jitgemm.isa.spec import targets

    yaml_path = REPO / "specs" / "targets" / "gfx942.yaml"
    text = yaml_path.read_text()
    shipped = yaml_path.with_name("gfx942.yaml.parsed")
    want = targets.parse_profile(text, "gfx942.yaml").values
    assert targets.preparsed_document(text, shipped) is not None
    assert targets.parse_profile(text, "gfx942.yaml", shipped).values == want
    changed = text.replace("wavefront_size: 64", "wavefront_size: 32")
    assert targets.preparsed_document(changed, shipped) is None                    # stale for that text
    assert targets.parse_profile(changed, "x.yaml", shipped).wavefront_size == 32
    copy = tmp_path / "gfx942.yaml"
    copy.write_text(text.replace("wavefront_size: 64", "wavefront_size: 64   # same value, another text"))
    made = targets.write_preparsed_profile(copy)
    assert targets.preparsed_document(copy.read_text(), made) == targets.preparsed_document(text, shipped)
    raw = bytearray(made.read_bytes())
    raw[-3] ^= 0x20                                              # one bit of the payload: the seal refuses it
    made.write_bytes(bytes(raw))
    assert targets.preparsed_document(copy.read_text(), made) is None
    assert targets.preparsed_document(text, tmp_path / "absent.yaml.parsed") is None


def test_fully_cold_compile_imports_no_yaml(tmp_path):
    """A new process with an empty cache folder compiles the selector's choice reading the shipped pre-parsed
    profile (PyYAML's import and parse were ~25 ms of a ~400 ms fully cold compile)."""
    probe = ("import sys, jitgemm\nfrom jitgemm import GemmProblem\n"
             "k = jitgemm.compile(GemmProblem.make(256, 256, 128, 'bf16', layout='NT'), arch='gfx942')\n"
             "print(k.from_cache, 'yaml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["compiled", "False"], out.stdout


def test_emulated_fp16_matmul_imports_no_ml_dtypes(tmp_path):
    """The emulator imports ml_dtypes (~0.5 s CPU) only for its own formats (bf16, fp8, fp6, fp4): a new process's
    first fp16 matmul, emulated, does not pay for it -- and is still numpy's product."""
    probe = ("import sys, numpy as np, jitgemm\nrng = np.random.default_rng(3)\n"
             "a = rng.standard_normal((48, 40)).astype(np.float16)\n"
             "b = rng.standard_normal((40, 56)).astype(np.float16)\n"
             "d = jitgemm.matmul(a, b)\nref = a.astype(np.float64) @ b.astype(np.float64)\n"
             "print(float(np.abs(d - ref).max() / np.abs(ref).max()), 'ml_dtypes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    err, imported = out.stdout.split()
    assert float(err) < 2e-3 and imported == "False", out.stdout


def test_the_selectors_mx_check_imports_no_ml_dtypes(tmp_path):
    """Whether a target has MX MFMAs (what the Triton supplier asks before offering tl.dot_scaled kernels) is read
    from the spec: a fully cold MX compile does not import ml_dtypes for it (jitgemm.mx does, ~0.5 s CPU)."""
    probe = ("import sys\nfrom jitgemm.mx_operands import target_has_mx\n"
             "print(target_has_mx('gfx950'), target_has_mx('gfx942'), 'ml_dtypes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False", "False"], out.stdout


# --- the pre-parsed specs of a source checkout -------------------------------------------------------------------

def test_committed_preparsed_specs_are_fresh():
    """specs/*.xml.parsed (and specs/targets/*.yaml.parsed) must be what the reader makes of the XML (YAML)
    beside it today; otherwise a fresh clone's first compile parses it again. Fix: python3
    tools/spec_preparse/build.py."""
    out = subprocess.run([sys.executable, str(REPO / "tools" / "spec_preparse" / "build.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    for xml in BUNDLED:
        entry = spec_cache.load_entry_at(spec_cache.preparsed_path(xml), hashlib.sha256(xml.read_bytes()).hexdigest())
        assert entry is not None and len(entry["instructions"]) > 1000


def test_fresh_checkout_loads_every_bundled_spec_without_parsing_xml(tmp_path):
    probe = ("import sys\nfrom jitgemm import isa\nfrom jitgemm.isa.spec import sources as spec_sources\n"
             "spec_sources.read_xml = lambda *a, **k: sys.exit(3)\n"
             "for t in ('gfx942', 'gfx950'):\n"
             "    s = isa.load_spec(t)\n    print(t, s.instruction('V_MFMA_F32_32X32X8_BF16').name, s.sha256)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    shas = {line.split()[0]: line.split()[2] for line in out.stdout.splitlines()}
    for target, xml in (("gfx942", "cdna3"), ("gfx950", "cdna4")):
        path = next(p for p in BUNDLED if xml in p.name)
        assert shas[target] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not list((tmp_path / "fresh-cache" / "parsed-specs").glob("*.sealed.msgpack"))   # nothing was parsed


@pytest.mark.parametrize("damage", ["stale", "flipped", "truncated"])
def test_preparsed_file_that_does_not_fit_its_xml_is_not_used(tmp_path, damage):
    """A pre-parsed file beside an XML that changed since (stale), or damaged, is ignored: the XML is parsed."""
    folder = tmp_path / "specs"
    folder.mkdir()
    xml = folder / "toy.xml"
    xml.write_text(toy_spec())
    out = spec_cache.write_preparsed(xml)
    if damage == "stale":      # the XML renames an instruction after its parsed form was written
        xml.write_text(toy_spec().replace("T_STOP", "T_STOX"))
    else:
        raw = bytearray(out.read_bytes())
        if damage == "flipped":
            at = bytes(raw).find(b"T_STOP")
            raw[at + 5] ^= 1
        else:
            raw = raw[: len(raw) // 2]
        out.write_bytes(bytes(raw))
    spec = isa.load_spec(xml)
    want = "T_STOX" if damage == "stale" else "T_STOP"
    assert spec.instruction(want).name == want
    assert spec.sha256 == hashlib.sha256(xml.read_bytes()).hexdigest()


def test_copied_tree_without_preparsed_files_still_works(tmp_path):
    """Without the pre-parsed files (an older checkout, or a spec folder copied elsewhere) the XML is parsed once
    and cached; the spec is the same."""
    folder = tmp_path / "specs"
    folder.mkdir()
    xml = next(p for p in BUNDLED if "cdna3" in p.name)
    shutil.copy(xml, folder / xml.name)
    spec = isa.load_spec(folder / xml.name)
    assert spec.sha256 == hashlib.sha256(xml.read_bytes()).hexdigest()
    assert spec_cache.load_entry(spec.sha256) is not None
    assert spec.instructions == isa.load_spec("gfx942").instructions


# --- batch listing: one process, and --jobs ----------------------------------------------------------------------

def _kernels(tmp_path, n: int) -> list[Path]:
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm

    rng = random.Random(23)
    out = []
    for i in range(n):
        problem = GemmProblem.make(*(rng.choice((64, 128, 256)) for _ in range(3)), rng.choice(("bf16", "fp16")),
                                   layout=rng.choice(("NN", "NT", "TN")))
        path = tmp_path / f"k{i}.co"
        path.write_bytes(jitgemm.compile(problem).code_object)
        out.append(path)
    return out


def test_batch_equals_objdump_and_jobs_change_nothing(tmp_path):
    """`jitgemm disasm A B C` lists each file under objdump's 'FILE:' heading in the order given, as one
    llvm-objdump run over the same list does; `--jobs 2` prints the same bytes; a file that cannot be read is one
    error line naming it, the status is 2, and the files after it are still listed."""
    objdump = require_tool("llvm-objdump")
    files = [str(p) for p in _kernels(tmp_path, 4)]
    bad = tmp_path / "broken.co"
    bad.write_bytes(b"\x7fELF" + bytes(random.Random(2).getrandbits(8) for _ in range(60)))
    env = _env(tmp_path)
    cmd = [sys.executable, "-m", "jitgemm", "disasm"]
    one = subprocess.run([*cmd, *files], env=env, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    theirs = subprocess.run([objdump, "-d", "--mcpu=gfx942", *files], capture_output=True, text=True, check=True)
    assert objdump_instruction_lines(one.stdout.splitlines()) == objdump_instruction_lines(theirs.stdout.splitlines())
    headings = [line for line in one.stdout.splitlines() if line.endswith("file format elf64-amdgpu")]
    assert headings == [line for line in theirs.stdout.splitlines() if line.endswith("file format elf64-amdgpu")]
    assert headings == [f"{f}:\tfile format elf64-amdgpu" for f in files]
    jobs = subprocess.run([*cmd, "--jobs", "2", *files], env=env, capture_output=True, text=True)
    assert jobs.returncode == 0 and jobs.stdout == one.stdout
    mixed = [files[0], str(bad), *files[1:]]
    for extra in ([], ["--jobs", "2"], ["-j", "0"]):
        run = subprocess.run([*cmd, *extra, *mixed], env=env, capture_output=True, text=True)
        assert run.returncode == 2, run.stderr
        assert run.stdout == one.stdout   # every good file, in order
        assert run.stderr.count("error:") == 1 and str(bad) in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_jobs_option_refuses_what_is_not_a_count(tmp_path, value):
    run = subprocess.run([sys.executable, "-m", "jitgemm", "disasm", "--jobs", value, "x.co"], env=_env(tmp_path),
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--jobs" in run.stderr and "Traceback" not in run.stderr


def test_jobs_stop_quietly_when_the_reader_goes_away(tmp_path):
    """`jitgemm disasm --jobs 2 ... | head`: every worker stops (none waits for a turn that never comes), no
    traceback, status 0, as in one process."""
    files = [str(p) for p in _kernels(tmp_path, 3)] * 4
    proc = subprocess.Popen([sys.executable, "-m", "jitgemm", "disasm", "--jobs", "2", *files], env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(200)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err, err


def test_a_fresh_process_reaches_every_lazy_codeobj_name_and_compiles_through_llvm(tmp_path):
    """codegen.codeobj loads its names (and submodules, `codeobj.targets`) on first use: a new process that
    compiles with the LLVM generator before anything else imported them must work (it raised AttributeError)."""
    probe = ("import jitgemm\nfrom jitgemm.codegen.gemm_ir import GemmProblem\n"
             "k = jitgemm.compile(GemmProblem.make(64, 64, 64, 'bf16'), generator='llvm')\n"
             "print(k.name, len(k.code_object) > 0)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("_llvm True")
    from jitgemm.codegen import codeobj

    for module in set(codeobj._EXPORTS.values()):
        assert getattr(codeobj, module).__name__ == f"jitgemm.codegen.codeobj.{module}"
