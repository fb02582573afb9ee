"""Hostile contracts, sidecars and YAML: every one is refused with one line naming the place — never a traceback,
never a hang, never gigabytes. Grid formulas that divide by zero, call min/max wrongly, nest 30,000 deep or give
more workgroups than a dispatch holds; integers past 32 bits; alias bombs and deep nesting in any YAML the
project reads (one bounded loader); a non-UTF-8 or FIFO sidecar beside a prebuilt kernel.
"""

from __future__ import annotations

import copy
import os
import signal
import time

import pytest
import yaml

from jitgemm.contract import Contract, ContractError, evaluate_formula
from tests.fixtures.contracts import contract

# nine lines of "billion laughs": 9**9 strings once the aliases are expanded
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))


@pytest.fixture
def alarm():
    """Fail instead of hanging: a read that blocks (a FIFO) or a bomb that expands is stopped after 20 s."""
    def stop(*_):
        raise TimeoutError("hung")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("formula, message", [
    ("1//0", "divides by zero"),
    ("m//(n-n)", "divides by zero"),
    ("ceil(m/0)", "divides by zero"),
    ("max()", r"max\(\) takes two or more"),
    ("min(m)", r"min\(\) takes two or more"),
    ("1+" * 30000 + "1", "at most 256|maxLength|is too long"),
    ("(" * 600 + "m" + ")" * 600, "at most 256|is too long"),
    ("n*99999999999999", "constants are 0 to 4294967295"),
    ("True", "unsupported element"),
])
def test_bad_grid_formulas_are_contract_errors(formula, message):
    with pytest.raises(ContractError, match=message):
        Contract.load(contract(launch__grid=[formula, "1", "1"]), "k.yaml")


def test_grid_outside_what_a_dispatch_holds_is_refused_at_launch():
    c = Contract.load(contract(launch__grid=["m-5", "n*n*n", "1"]))
    with pytest.raises(ContractError, match=r"gives -2 at m=3"):
        c.grid(m=3, n=4, k=1)
    with pytest.raises(ContractError, match=r"gives 8589934592 at m=10, n=2048"):
        c.grid(m=10, n=2048, k=1)
    assert evaluate_formula("ceil(m/128)", {"m": 300, "n": 1, "k": 1, "batch": 1}) == 3


@pytest.mark.parametrize("key", ["legality__divisible", "legality__max", "legality__ld_multiple"])
def test_integers_past_32_bits_are_refused_by_the_schema(key):
    with pytest.raises(ContractError, match="greater than the maximum of 4294967295"):
        Contract.load(contract(**{key: {"m" if "ld" not in key else "a": 2 ** 70}}), "k.yaml")


def test_alias_bomb_in_a_contract_is_refused_fast(alarm):
    data = yaml.safe_dump(contract(), sort_keys=False)
    text = BOMB + data.replace("launch:", "launch:\n  bomb: *i", 1)
    t0 = time.perf_counter()
    with pytest.raises(ContractError, match=r"k.yaml:\d+:\d+: not valid YAML: more than 1000000 nodes"):
        Contract.load(text, "k.yaml")
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "[" * 5000, "- " * 3000 + "x", "{a: " * 5000 + "1"])
def test_deep_nesting_is_refused(text, alarm):
    with pytest.raises(ContractError, match="not valid YAML"):
        Contract.load(text, "k.yaml")


def test_non_utf8_contract_bytes_are_refused():
    raw = yaml.safe_dump(contract()).encode().replace(b"gemm_k", b"gemm_\xff")
    with pytest.raises(ContractError, match="not UTF-8"):
        Contract.load(raw, "k.yaml")


def test_one_bounded_yaml_loader_everywhere():
    """Every YAML reader of the project goes through util.safe_yaml (no yaml.load/safe_load left elsewhere,
    except package data the project ships)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    allowed = {"jitgemm/contract.py", "isa/spec/release.py"}  # their own package data, via resources.files
    offenders = []
    for path in [*root.glob("jitgemm/**/*.py"), *root.glob("isa/**/*.py"), *root.glob("codegen/**/*.py")]:
        rel = path.relative_to(root).as_posix()
        if rel.endswith("safe_yaml.py"):
            continue
        for m in re.finditer(r"yaml\.(safe_load|load|full_load|unsafe_load|load_all)\(", path.read_text()):
            line = path.read_text()[:m.start()].count("\n") + 1
            if rel not in allowed or "resources.files" not in path.read_text().splitlines()[line - 1]:
                offenders.append(f"{rel}:{line}")
    assert not offenders, offenders


def test_target_profile_bomb_is_a_spec_error():
    from jitgemm.isa.errors import SpecError
    from jitgemm.isa.spec.targets import parse_profile

    with pytest.raises(SpecError, match="nodes once aliases are expanded"):
        parse_profile(BOMB, "hostile.yaml")


def test_amdgpu_metadata_bomb_in_assembly_is_an_assembly_error():
    from jitgemm.codegen.codeobj.relocatable import assemble_source
    from jitgemm.isa.errors import IsaError

    text = ('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\n.amdgpu_metadata\n' + BOMB
            + "amdhsa.version: *i\n.end_amdgpu_metadata\n")
    with pytest.raises(IsaError, match="nodes once aliases are expanded"):
        assemble_source(text, file="bomb.s")


# -- sidecars beside a prebuilt kernel

@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    from tests.fixtures.contracts import CONTRACT, KERNEL, metadata_args
    from tests.fixtures.hand_kernel import llvm_link

    root = tmp_path_factory.mktemp("foreign-hostile")
    _, co = llvm_link(root, KERNEL.replace("{args}", metadata_args()))
    return co, copy.deepcopy(CONTRACT)


def _scan(folder):
    from jitgemm.suppliers import PrebuiltSupplier

    sup = PrebuiltSupplier(folder)
    return sup._scan(), sup.errors


def test_non_utf8_sidecar_is_reported_not_raised(foreign, tmp_path):
    co, data = foreign
    (tmp_path / "foreign.co").write_bytes(co)
    (tmp_path / "foreign.yaml").write_bytes(yaml.safe_dump(data).encode().replace(b"sgemm", b"sgemm\xfe"))
    entries, errors = _scan(tmp_path)
    assert entries == [] and len(errors) == 1 and "not UTF-8" in errors[0] and "foreign.yaml" in errors[0], errors


def test_fifo_sidecar_does_not_block(foreign, tmp_path, alarm):
    co, _ = foreign
    (tmp_path / "foreign.co").write_bytes(co)
    os.mkfifo(tmp_path / "foreign.yaml")
    entries, errors = _scan(tmp_path)
    assert entries == [] and any("not a regular file" in e for e in errors), errors


def test_fifo_code_object_does_not_block(tmp_path, alarm):
    from jitgemm.emu import emulate
    from jitgemm.emu.errors import EmulatorError
    from jitgemm.suppliers import PrebuiltSupplier

    os.mkfifo(tmp_path / "k.co")
    with pytest.raises(EmulatorError, match="not a regular file"):
        emulate(tmp_path / "k.co")
    sup = PrebuiltSupplier(tmp_path)
    assert sup._scan() == [] and "not a regular file" in sup.errors[0]


def test_read_bounded_judges_what_it_opened(tmp_path, alarm):
    from jitgemm.util.files import FileRefused, read_bounded, require_regular

    os.mkfifo(tmp_path / "fifo")
    for reader in (lambda p: read_bounded(p, 100), require_regular):
        with pytest.raises(FileRefused, match="not a regular file"):
            reader(tmp_path / "fifo")
        with pytest.raises(FileRefused, match="not a regular file"):
            reader(tmp_path)
    with pytest.raises(FileRefused, match="over the"):
        read_bounded(_big(tmp_path), 100)
    with pytest.raises(FileRefused, match="not a regular file"):
        read_bounded("/dev/zero", 100)


def _big(folder):
    path = folder / "big"
    path.write_bytes(bytes(101))
    return path


def test_asm_contract_option_reads_bounded(tmp_path, capsys, alarm):
    from jitgemm.cli import main

    (tmp_path / "k.s").write_text("s_endpgm\n")
    os.mkfifo(tmp_path / "c.yaml")
    assert main(["asm", str(tmp_path / "k.s"), "--contract", f"k={tmp_path / 'c.yaml'}", "-o",
                 str(tmp_path / "k.co")]) == 2
    assert "not a regular file" in capsys.readouterr().err
    (tmp_path / "b.yaml").write_text(BOMB)
    assert main(["asm", str(tmp_path / "k.s"), "--contract", f"k={tmp_path / 'b.yaml'}", "-o",
                 str(tmp_path / "k.co")]) == 2
    assert "nodes once aliases are expanded" in capsys.readouterr().err
