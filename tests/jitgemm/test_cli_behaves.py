"""The command line behaves: --version, help for every option, --spec where the errors promise it, one-line errors
(never a traceback) for bad --waves/--tile, Ctrl-C, emulations that cannot fit in memory, qualify --cases 0,
missing folders and hip-python's bytes; progress only on a terminal."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitgemm import __version__
from jitgemm.cli import build_parser, main
from tests.fixtures.spec_factory import toy_spec

REPO = Path(__file__).resolve().parents[2]
SUBSET = REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"


def _cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "jitgemm", *args], capture_output=True, text=True, env=full,
                          timeout=timeout, cwd=REPO)


def _one_line_error(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, err)


def test_version():
    out = _cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"jitgemm {__version__}"


def _walk(parser, path=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))
        else:
            yield path, action


def test_every_option_of_every_command_has_help():
    missing = [f"jitgemm {' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
               for path, a in _walk(build_parser()) if not a.help]
    assert not missing, missing
    commands = {path for path, _ in _walk(build_parser()) if path}
    assert {("compile",), ("run",), ("select",), ("qualify",), ("disasm",), ("emulate",)} <= commands


@pytest.mark.parametrize("command", ["compile", "run", "select"])
def test_spec_option_is_used(tmp_path, command, capsys):
    toy = tmp_path / "toy.xml"
    toy.write_text(toy_spec())
    common = ["--m", "64", "--n", "64", "--k", "64"] + (["-o", str(tmp_path / "k.co")] if command == "compile" else [])
    assert main([command, *common, "--spec", str(toy)]) == 2
    _one_line_error(capsys.readouterr().err, f"jitgemm {command}: error:", "TOY ARCH")    # that spec was asked
    copy = tmp_path / "copy" / SUBSET.name
    copy.parent.mkdir()
    shutil.copyfile(SUBSET, copy)
    assert main([command, *common, "--spec", str(copy)]) == 0
    capsys.readouterr()
    assert main([command, *common, "--spec", str(tmp_path / "missing.xml")]) == 2
    _one_line_error(capsys.readouterr().err, str(tmp_path / "missing.xml"), "no such spec file")


@pytest.fixture(autouse=True)
def _forget_spec_choice():
    from jitgemm.isa.spec import sources as spec_sources

    yield
    spec_sources._chosen.clear()


@pytest.mark.parametrize("option, value", [("--waves", "2"), ("--waves", "0x2"), ("--waves", "ax2"),
                                           ("--waves", "2x2x2"), ("--waves", "2x"), ("--tile", "64x0x16"),
                                           ("--tile", "64x64"), ("--tile", "64x-64x16")])
def test_bad_waves_and_tile_are_one_line_errors(tmp_path, capsys, option, value):
    args = ["compile", "--m", "64", "--n", "64", "--k", "64", "-o", str(tmp_path / "k.co"), "--tile", "64x64x16",
            option, value]
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, option, repr(value), "positive integers")


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_sizes_must_be_positive(capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["select", "--m", value, "--n", "64", "--k", "64"])
    assert info.value.code == 2
    assert "argument --m" in capsys.readouterr().err


def test_run_that_cannot_fit_in_memory_says_what_it_needs():
    out = _cli("run", "--m", "1048576", "--n", "1048576", "--k", "65536")     # terabytes: no machine has them
    assert out.returncode == 2                # refused up front: allocating them would have raised MemoryError
    _one_line_error(out.stderr, "needs about", "GiB of memory", "available")


def test_emulate_buffers_that_cannot_fit_are_refused_before_allocating(tmp_path):
    from jitgemm.util.memory_budget import available_bytes

    have = available_bytes()
    assert have is not None
    side = int((have / 4) ** 0.5) + 1024        # one f32 buffer bigger than what is available
    co = tmp_path / "k.co"
    assert _cli("compile", "--m", "64", "--n", "64", "--k", "64", "-o", str(co)).returncode == 0
    out = _cli("emulate", str(co), "--arg", f"f32:{side}x{side}:rand")
    assert out.returncode == 2
    _one_line_error(out.stderr, "jitgemm emulate: error:", "needs about", "available")


def test_memory_estimate_counts_operands_copies_and_reference():
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.util.memory_budget import WAVE_STATE_BYTES, OutOfMemory, check_fits, gemm_run_bytes

    p = GemmProblem.make(1000, 300, 70, "bf16")
    need = gemm_run_bytes(p, 128, 128, 4)
    buffers = 1000 * 70 * 2 + 70 * 300 * 2 + 1000 * 300 * 2
    assert need == 2 * buffers + 8 * 3 * 4 * WAVE_STATE_BYTES + 8 * (1000 * 70 + 70 * 300 + 2 * 1000 * 300)
    with pytest.raises(OutOfMemory, match="needs about"):
        check_fits(need, "x", available=need - 1)
    check_fits(need, "x", available=need)


def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), JITGEMM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "jitgemm", "run", "--m", "1024", "--n", "1024", "--k", "8192"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    time.sleep(4.0)     # in the middle of the emulation (about 20 CPU seconds in all)
    assert proc.poll() is None, "finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130             # a run that went on to the end would print its result and exit 0
    assert err.strip() == "jitgemm run: interrupted", err
    assert "max relative error" not in out


def test_qualify_cases_zero_is_refused_and_quarantines_nothing(tmp_path):
    cache = tmp_path / "cache"
    out = _cli("qualify", str(tmp_path), "--cases", "0", env={"JITGEMM_CACHE_DIR": str(cache)})
    assert out.returncode == 2 and "argument --cases: 0 is not a positive integer" in out.stderr
    assert "Traceback" not in out.stderr and not (cache / "quarantine.json").exists()


def test_missing_folders_are_refused(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["select", "--m", "64", "--n", "64", "--k", "64", "--prebuilt", str(missing)]) == 2
    _one_line_error(capsys.readouterr().err, "--prebuilt", str(missing), "does not exist")
    (tmp_path / "file").write_text("x")
    assert main(["qualify", str(tmp_path / "file")]) == 2
    _one_line_error(capsys.readouterr().err, "is not a folder")


def test_hip_errors_are_text_not_bytes():
    from jitgemm.hip_runtime import hip_available, runtime_text

    raw = RuntimeError("failed to dlopen 'b'libamdhip64.so'': b'libamdhip64.so: cannot open shared object file'")
    assert runtime_text(raw) == "failed to dlopen 'libamdhip64.so': libamdhip64.so: cannot open shared object file"
    ok, why = hip_available()
    if not ok:
        assert "b'" not in why and 'b"' not in why, why


def test_progress_only_on_a_terminal_or_when_asked(tmp_path):
    import shutil

    from jitgemm.isa.spec import sources as spec_sources

    env = {"JITGEMM_CACHE_DIR": str(tmp_path / "cache")}
    # a spec file without the pre-parsed form the bundled one ships with: its first use parses the XML
    xml = shutil.copy(spec_sources.locate_spec("gfx942").path, tmp_path / "cdna3.xml")
    args = ("run", "--m", "64", "--n", "64", "--k", "32", "--dtype", "fp16", "--spec", str(xml))
    quiet = _cli(*args, env=env)              # stderr is a pipe: no bar
    assert quiet.returncode == 0 and quiet.stderr == ""
    shown = _cli(*args, env={**env, "JITGEMM_PROGRESS": "always", "JITGEMM_CACHE_DIR": str(tmp_path / "c2")})
    assert shown.returncode == 0
    assert "parsing spec cdna3.xml" in shown.stderr and "running m=64" in shown.stderr
    import re

    def timeless(text: str) -> str:
        return re.sub(r"wall time \([^)]*\): [0-9.]+ s", "wall time", text)

    assert timeless(shown.stdout) == timeless(quiet.stdout)


@pytest.mark.parametrize("args", [["disasm"], ["inspect"], ["emulate"], ["readobj"], ["asm"]])
def test_input_files_are_read_bounded(tmp_path, args):
    """/dev/zero (endless), a FIFO (blocks) and a 1 GiB file are refused before reading, in one line each."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.co"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    for path, reason in (("/dev/zero", "not a regular file"), (str(fifo), "not a regular file"),
                         (str(big), "over the 512.0 MiB limit")):
        out = _cli(*args, path, timeout=120)
        assert out.returncode == 2, (args, path, out.stderr)
        _one_line_error(out.stderr, f"jitgemm {args[0]}: error: cannot read {path}", reason)


@pytest.mark.parametrize("arg", ["f32:-5:zeros", "f32:4x:zeros", "f32:0:ones", "i32:abc", "q9:4:zeros"])
def test_bad_emulate_arguments_are_one_line_errors(tmp_path, capsys, arg):
    co = tmp_path / "k.co"
    assert main(["compile", "--m", "64", "--n", "64", "--k", "64", "-o", str(co)]) == 0
    capsys.readouterr()
    assert main(["emulate", str(co), "--arg", arg]) == 2
    _one_line_error(capsys.readouterr().err, "jitgemm emulate: error: --arg #1", repr(arg))
