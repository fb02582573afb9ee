"""The emulator's semantics registry (jitgemm/emu/registry.py) and `jitgemm emulate --where NAME`.

- Every instruction of the bundled gfx942 and gfx950 specs resolves to a family from its spec form (functional
  group/subgroups, encoding fields), never "other"; the family decides whether the op counts 64 lanes.
- `where` names code that really holds the implementation: each printed file:line is the `def` of the builder
  it names, or the alu_statements table entry holding the very statement the emulator evaluates.
- What `where` reports is what `Builder.build` runs: for the instructions of real kernels (the Triton-compiled
  GEMM of tests/emu/test_emu_triton.py and jitgemm's own), the builder that made each op is the one `where` names.
- The CLI: any case, exit 0 with file:line lines; 1 for an instruction without semantics; 2 and the closest
  names for a name no spec has.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jitgemm import isa
from jitgemm.emu import registry, where
from jitgemm.emu.semantics.alu_statements import semantics_of

REPO = Path(__file__).resolve().parents[2]
TARGETS = ("gfx942", "gfx950")


def _line(place: where.Place) -> str:
    return Path(place.path).read_text().splitlines()[place.line - 1]


@pytest.mark.parametrize("target", TARGETS)
def test_every_instruction_has_a_family_from_its_spec_form(target):
    from jitgemm.isa.spec.forms import forms_of

    spec = isa.load_spec(target)
    forms = forms_of(spec)
    seen = set()
    for inst in spec.instructions:
        for form in forms.forms_for(inst.name) or []:
            fam = registry.family_of(form)
            assert fam != "other", f"{inst.name} ({form.enc.name}): no emulator family for functional group " \
                                   f"{inst.functional_group} {inst.functional_subgroups}"
            seen.add(fam)
    assert seen >= {"salu", "valu", "packed", "mfma", "smem", "ds", "flat", "buffer", "control"}


@pytest.mark.parametrize("target", TARGETS)
def test_where_points_at_the_code_that_implements_each_instruction(target):
    spec = isa.load_spec(target)
    found = 0
    for inst in spec.instructions:
        places = where.where(inst.name, spec)
        if not places:
            assert "no emulator semantics" in where.why_not(inst.name, spec)
            continue
        found += 1
        for place in places:
            text = _line(place)
            if place.function:
                assert f"def {place.function}(" in text, f"{place}: line is {text!r}"
            else:
                assert place.statement, place
                key = inst.name.upper()
                if key in registry_semantics():
                    assert f'"{key}": "{place.statement}"' in text, f"{place}: line is {text!r}"
                else:   # a generated compare: the line holds its operation's expression
                    expr = place.statement.split("=", 1)[1].strip()
                    assert expr in text, f"{place}: line is {text!r}"
                assert semantics_of(key) == place.statement
    assert found > 0.8 * len(spec.instructions)


def registry_semantics():
    from jitgemm.emu.semantics.alu_statements import SEMANTICS

    return SEMANTICS


def _source(prog, name: str) -> str:
    import inspect

    from jitgemm.emu import registry as reg

    entry = next(e for e in [*reg._NAMED.values(), *reg._FAMILIES.values()] if e.build.__name__ == name)
    return inspect.getsource(entry.build)


def _built_by(builder, d) -> str:
    """The name of the builder function whose closure made the op for `d`."""
    op = builder.build(d)
    assert op.run is not None, op.problem
    return op.run.__qualname__.split(".<locals>")[0]


@pytest.mark.parametrize("dtype", ["bf16", "fp32", "fp8"])
def test_where_names_the_builder_that_builds_real_kernels(dtype):
    import ml_dtypes
    import numpy as np
    from jitgemm.codegen.codeobj.reader import read

    from jitgemm import api
    from jitgemm.emu.engine import program_for

    np_type = {"bf16": ml_dtypes.bfloat16, "fp32": np.float32, "fp8": ml_dtypes.float8_e4m3fnuz}[dtype]
    a = np.zeros((256, 256), np_type)
    call = api.prepare(a, a)
    blob, name, _contract, _ = api._choose(call.problem, call.align, "gfx942")
    spec = isa.load_spec("gfx942")
    co = read(blob)
    prog = program_for(co.kernel(name), spec)
    checked = 0
    for d in prog.decoded:
        places = where.where(d.name, spec)
        assert places, d.text
        builders = {p.function for p in places if p.function}
        made_by = _built_by(prog.builder, d)
        # the builder `where` names made the op, or delegated to the one that did (V_PK_MOV_B32 -> _vop3p)
        assert made_by in builders or any(f"{made_by}(" in _source(prog, f) for f in builders), (d.text, builders)
        checked += 1
    assert checked > 100


def _cli(*args: str) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "jitgemm", "emulate", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, check=False)


def test_cli_where_prints_file_line_of_the_implementation_in_any_case():
    out = _cli("--where", "v_Add_F32")
    assert out.returncode == 0, out.stderr
    lines = [x.strip() for x in out.stdout.splitlines()[1:]]
    assert len(lines) == 2
    (stmt_file, stmt_line), (path_file, path_line) = (x.split(":")[:2] for x in lines)
    assert '"V_ADD_F32": "S0 + S1"' in (REPO / stmt_file).read_text().splitlines()[int(stmt_line) - 1]
    assert "def _valu(" in (REPO / path_file).read_text().splitlines()[int(path_line) - 1]
    named = _cli("--where", "s_endpgm")
    assert named.returncode == 0
    where, _ = named.stdout.splitlines()[1].strip().split(": ", 1)
    file, line = where.split(":")
    assert "def _endpgm(" in (REPO / file).read_text().splitlines()[int(line) - 1]


def test_cli_where_on_a_miss_lists_the_closest_names_and_exits_2():
    out = _cli("--where", "v_add_f33")
    assert out.returncode == 2
    assert "closest: V_ADD_F32" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_where_names_the_target_that_has_an_instruction_the_asked_one_lacks():
    out = _cli("--where", "v_bitop3_b32", "--arch", "gfx942")
    assert out.returncode == 2
    assert "gfx950 has it (--arch gfx950)" in out.stderr
    found = _cli("--where", "v_bitop3_b32", "--arch", "gfx950")
    assert found.returncode == 0 and "builder v_bitop3" in found.stdout


def test_cli_where_on_an_instruction_without_semantics_exits_1():
    out = _cli("--where", "s_sethalt")
    assert out.returncode == 1
    assert "S_SETHALT: no emulator semantics" in out.stderr


def test_cli_emulate_without_a_file_is_a_clear_error():
    out = _cli()
    assert out.returncode == 2
    assert "FILE.co" in out.stderr and "Traceback" not in out.stderr


def test_a_name_registered_twice_is_refused():
    def first(b, d):
        return None

    def second(b, d):
        return None

    registry.register("TEST_ONLY_NAME", first)
    try:
        with pytest.raises(ValueError, match="registered twice"):
            registry.register("test_only_name", second)
    finally:
        registry._NAMED.pop("TEST_ONLY_NAME")


def test_the_wave_size_has_one_owner():
    """`WAVE = 64` is defined once (isa/spec/mfma.py WAVE64, checked against the target profiles' wavefront_size);
    the emulator's modules import it."""
    import re

    from jitgemm.isa.spec import mfma
    from jitgemm.isa.spec.targets import target_profile

    from jitgemm.emu import state

    definitions = []
    for folder in ("jitgemm", "isa", "codegen"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if re.match(r"^\s*[A-Z_]*WAVE[A-Z0-9_]*\s*(:\s*int\s*)?=\s*64\b", line):
                    definitions.append(f"{path.relative_to(REPO)}:{i}")
    assert definitions == ["isa/spec/mfma.py:" + str(next(i for i, line in enumerate(
        (REPO / "isa/spec/mfma.py").read_text().splitlines(), 1) if line.startswith("WAVE64 =")))]
    assert state.WAVE is mfma.WAVE64
    for target in TARGETS:
        assert target_profile(target).wavefront_size == mfma.WAVE64
