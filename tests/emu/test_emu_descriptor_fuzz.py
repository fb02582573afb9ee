"""`jitgemm emulate` on code objects whose kernel descriptor was mutated (random values in random fields): every
run ends with a result or a one-line error, never a traceback. Kernarg preloading past the segment or past the
user SGPRs used to raise numpy's "could not broadcast" ValueError from the engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import random

import pytest
from jitgemm.codegen.codeobj.descriptor import BIT_FIELDS
from jitgemm.codegen.codeobj.reader import read

from jitgemm.cli import main
from tests.fixtures.hand_kernel import assemble

BODY = """
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v1, 2, v0
  global_store_dword v1, v0, s[4:5]
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("descriptor-fuzz")
    co = assemble(folder, BODY, [(0, 8, "global_buffer")])
    k = read(co).kernels[0]
    raw = k.descriptor.to_bytes()
    at = co.find(raw)
    assert at >= 0 and co.find(raw, at + 1) < 0
    return folder, co, k.descriptor, at


def _run(folder, co, desc, at, changes) -> tuple[int, str]:
    blob = co[:at] + dataclasses.replace(desc, **changes).to_bytes() + co[at + 64:]
    path = folder / "mutated.co"
    path.write_bytes(blob)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["emulate", str(path), "--arg", "f32:64:zeros", "--max-steps", "2000"])
    return rc, out.getvalue()


@pytest.mark.parametrize("changes, message", [
    ({"kernarg_preload_spec_length": 127}, "preloads 127 kernarg dwords"),
    ({"kernarg_preload_spec_length": 14, "kernarg_preload_spec_offset": 500}, "from dword 500"),
    ({"kernarg_preload_spec_length": 82, "user_sgpr_count": 14}, "at most 32 user SGPRs"),
])
def test_preload_outside_segment_or_sgprs_is_an_error(kernel, changes, message):
    rc, out = _run(*kernel, changes)
    assert rc == 2 and message in out and "Traceback" not in out, out


def test_mutated_descriptors_never_traceback(kernel):
    rng = random.Random(27)
    for _ in range(150):
        changes = {}
        for _ in range(rng.randint(1, 3)):
            name, _, _, width = rng.choice(BIT_FIELDS)
            changes[name] = rng.choice([0, 1, (1 << width) - 1, rng.randrange(1 << width)])
        if rng.random() < 0.3:
            name = rng.choice(["group_segment_fixed_size", "private_segment_fixed_size", "kernarg_size"])
            changes[name] = rng.choice([0, 4, 1 << 20, 0xFFFFFFFF, rng.randrange(1 << 32)])
        rc, out = _run(*kernel, changes)   # an exception other than a user error propagates and fails here
        assert rc in (0, 1, 2) and "Traceback" not in out, (changes, out)
