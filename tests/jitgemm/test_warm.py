"""The warm path (jitgemm/warm.py): a repeated `jitgemm.compile` / matmul choice answered from memory or from the warm
index without the selector, and never a kernel the slow path would not give now. Whether the slow path ran is seen
by counting `selector.selected_config` calls; what a new process loads is seen in its `sys.modules` (never by
timing: speed is measured in bench/bench_compile.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm import kernel as kernel_module
from jitgemm import selector, warm

REPO = Path(__file__).resolve().parents[2]
ALIGN = {x: 256 for x in ("a", "b", "c", "bias")}

# What a disk hit must not load: the selector and the ranking's model, the generators, the spec model, the
# assembler, LLVM's binding, the contract's YAML/jsonschema validation, the tuning database's SQLite, and for fp16
# operands the MX module and ml_dtypes (~0.5 s of CPU to import).
HEAVY = ("llvmlite", "jsonschema", "yaml", "lark", "elftools", "sqlite3", "msgpack", "ml_dtypes", "jitgemm.mx",
         "jitgemm.selector", "jitgemm.timing", "jitgemm.suppliers", "jitgemm.choice_cache", "jitgemm.codegen.generator",
         "jitgemm.codegen.gemm_asm", "jitgemm.isa.spec.model", "jitgemm.isa.spec.targets", "jitgemm.isa.asm",
         "jitgemm.isa.hazards")

PROBE = r"""
import hashlib, json, sys
import jitgemm
from jitgemm.codegen.gemm_ir import GemmProblem
k = jitgemm.compile(GemmProblem.make(64, 128, 64, "bf16", layout="NT"))
after_compile = sorted(sys.modules)
from jitgemm import api
import numpy as np
def aligned(shape):      # 256-byte aligned in every run: the choice is keyed by the operands' alignment
    raw = np.zeros(64 * 64 * 2 + 256, np.uint8)
    start = -raw.ctypes.data % 256
    return raw[start:start + 64 * 64 * 2].view(np.float16).reshape(shape)
call = api.prepare(aligned((64, 64)), aligned((64, 64)))
blob, name, contract, source = api._choose(call.problem, call.align, "gfx942")
print(json.dumps({"compile": [k.from_cache, k.generator, hashlib.sha256(k.code_object).hexdigest(), k.name],
                  "choose": [name, hashlib.sha256(blob).hexdigest(), source],
                  "after_compile": after_compile, "after_choose": sorted(sys.modules)}))
"""


def _heavy(modules: list[str], allowed: tuple[str, ...] = ()) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY) and m not in allowed]


def test_a_disk_hit_in_a_new_process_loads_nothing_heavy(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JITGEMM_CACHE_DIR": str(tmp_path / "cache"),
           "JITGEMM_TUNING_DB": str(tmp_path / "tuning.db")}
    runs = []
    for _ in range(3):   # 1: compiles (and creates the tuning database); 2: its state settled, remembered; 3: hit
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=tmp_path,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, last = runs[0], runs[-1]
    assert "jitgemm.selector" in first["after_compile"], "the first process must rank (the probe would prove nothing)"
    assert last["compile"][0] == "disk"
    assert last["compile"] == [last["compile"][0], *first["compile"][1:]], "the same kernel as the slow path gave"
    assert last["choose"] == first["choose"]
    assert not _heavy(last["after_compile"]), _heavy(last["after_compile"])
    assert "numpy" not in last["after_compile"]
    assert not _heavy(last["after_choose"]), _heavy(last["after_choose"])


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache folder and tuning database of its own, default suppliers built afresh for them, no memory."""
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "tuning.db"))
    for name, value in (("_suppliers", None), ("_selectors", {}), ("_built", None), ("_widened", False)):
        monkeypatch.setattr(selector, name, value)
    warm.forget()
    kernel_module.clear_memory_cache()
    selector.default_selector("gfx942").tuning.rows("gfx942")   # the database exists before the first compile
    calls = []
    real = selector.selected_config

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(selector, "selected_config", counted)
    yield calls
    warm.forget()
    kernel_module.clear_memory_cache()


def _problem() -> GemmProblem:
    rng = random.Random()
    return GemmProblem.make(rng.choice((64, 96, 128)), rng.choice((64, 128)), 64, "bf16", layout="NT")


def _new_process() -> None:
    """What a new process does not have: this one's memory of kernels and choices."""
    warm.forget()
    kernel_module.clear_memory_cache()
    for sel in selector._selectors.values():
        sel.forget()


def test_a_repeated_compile_is_remembered_and_a_tuning_row_is_seen(fresh):
    p = _problem()
    first = jitgemm.compile(p)
    assert len(fresh) == 1
    assert jitgemm.compile(p) is first and len(fresh) == 1, "an in-memory hit asks the selector nothing"
    _new_process()
    again = jitgemm.compile(p)
    assert len(fresh) == 1 and again.from_cache == "disk", "the warm index answers a new process"
    assert (again.code_object, again.name, again.config, again.contract) == \
        (first.code_object, first.name, first.config, first.contract)
    # a measured row makes another kernel the fastest: neither the memory nor the warm index may survive it
    sel = selector.default_selector("gfx942")
    ours = [v for v in sel.evaluate(p, ALIGN) if v.legal and v.candidate.config is not None
            and selector._generator_option(v.candidate) is not None]
    loser = next(v.candidate for v in reversed(ours) if v.candidate.config != first.config)
    sel.tuning.record("gfx942", p, loser.key, 1e-9, contract=loser.contract.data)
    moved = jitgemm.compile(p)
    assert len(fresh) == 2 and moved.config == loser.config
    assert moved.config == selector.selected_config(p, "gfx942")[0]
    _new_process()
    n = len(fresh)
    assert jitgemm.compile(p).config == loser.config and len(fresh) == n


def test_a_matmul_choice_is_remembered_and_a_quarantine_is_seen(fresh):
    from jitgemm import api

    p = _problem()
    first = api._choose(p, ALIGN, "gfx942")
    _new_process()
    sel = selector.default_selector("gfx942")
    ranked = sel.select(p, ALIGN)
    predicted = []
    real = selector.predicted
    selector.predicted = lambda *a: predicted.append(a) or real(*a)
    try:
        again = api._choose(p, ALIGN, "gfx942")
        assert not predicted
        assert (again[0], again[1], again[3], again[2].data) == (first[0], first[1], first[3], first[2].data)
        assert again[3] == f"{ranked.supplier}:{ranked.label}"
        sel.quarantine.add(ranked.key, "a planted failure")
        _new_process()
        moved = api._choose(p, ALIGN, "gfx942")
        assert predicted, "a quarantine change is a miss"
        assert moved[3] != first[3] and moved[3] == (lambda c: f"{c.supplier}:{c.label}")(sel.select(p, ALIGN))
    finally:
        selector.predicted = real


def test_a_registered_supplier_turns_the_warm_path_off(fresh, monkeypatch):
    p = _problem()
    jitgemm.compile(p)
    assert warm.kernel(p, None, "gfx942", None) is not None

    class Custom(selector.Supplier):
        name = "custom"

        def candidates(self, problem, target):
            return []

    monkeypatch.setattr(selector, "_suppliers", list(selector.default_suppliers()))   # restored after the test
    for sel in selector._selectors.values():
        monkeypatch.setattr(sel, "suppliers", selector._suppliers)
    selector.register_supplier(Custom())
    assert warm.state_stamp() is None and warm.kernel(p, None, "gfx942", None) is None
    n = len(fresh)
    jitgemm.compile(p)
    assert len(fresh) == n + 1, "the selector is asked every time"


def test_a_chosen_spec_file_turns_the_warm_path_off(fresh, monkeypatch):
    from jitgemm.isa.spec import sources

    p = _problem()
    jitgemm.compile(p)
    assert warm.kernel(p, None, "gfx942", None) is not None
    monkeypatch.setattr(sources, "_chosen", {})       # restored after the test
    sources.use_spec_file("gfx942", sources.locate_spec("gfx942").path)    # `--spec PATH`
    assert warm.state_stamp() is None and warm.kernel(p, None, "gfx942", None) is None


def test_the_state_stamp_follows_every_file_the_slow_path_reads(fresh, tmp_path, monkeypatch):
    from jitgemm.aiter import registry

    stamps = [warm.state_stamp()]
    sel = selector.default_selector("gfx942")
    p = _problem()
    sel.tuning.record("gfx942", p, "some-kernel", 1e-3)
    stamps.append(warm.state_stamp())
    sel.quarantine.add("some-kernel", "case 1")
    stamps.append(warm.state_stamp())
    release = tmp_path / "aiter.whl"
    release.write_bytes(b"not a wheel")
    registry.register(release)
    stamps.append(warm.state_stamp())
    release.write_bytes(b"another release")
    os.utime(release, ns=(1, 1))
    stamps.append(warm.state_stamp())
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    monkeypatch.setenv("JITGEMM_ISA_SPEC_DIR", str(spec_dir))
    stamps.append(warm.state_stamp())
    (spec_dir / "amdgpu_isa_cdna3.xml").write_text("<spec/>")
    stamps.append(warm.state_stamp())
    official = Path(os.environ["JITGEMM_CACHE_DIR"]) / "isa-specs" / "2026-01"
    official.mkdir(parents=True)
    (official / "amdgpu_isa_cdna3.xml").write_text("<spec/>")
    stamps.append(warm.state_stamp())
    assert None not in stamps and len(set(stamps)) == len(stamps), stamps
    assert warm.state_stamp() == stamps[-1]
    (Path(os.environ["JITGEMM_CACHE_DIR"]) / "tuning").mkdir()    # old JSON rows TuningDB would migrate
    assert warm.state_stamp() is None


def test_the_code_stamp_follows_every_source_file(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    (tree / "sub" / "__pycache__").mkdir(parents=True)
    source = tree / "sub" / "module.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(warm, "_roots", lambda: [str(tree)])
    stamp = warm.code_stamp.__wrapped__
    before = stamp()
    (tree / "sub" / "__pycache__" / "module.cpython.pyc").write_bytes(b"byte code")
    assert stamp() == before, "byte-code caches are not sources"
    st = source.stat()
    source.write_text("x = 2\n")                        # same size, and the mtime put back to the old second
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    changed = stamp()
    assert changed != before
    (tree / "data.yaml").write_text("a: 1\n")
    assert stamp() != changed


def test_a_corrupt_or_unwritable_warm_index_degrades(fresh, tmp_path, monkeypatch):
    p = _problem()
    first = jitgemm.compile(p)
    for f in warm.warm_dir().iterdir():
        f.write_bytes(f.read_bytes()[:-3] + b"xyz")       # breaks the seal
    _new_process()
    n = len(fresh)
    assert jitgemm.compile(p).code_object == first.code_object and len(fresh) == n + 1, "a corrupt entry is a miss"
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the warm folder should be")
    monkeypatch.setattr(warm, "warm_dir", lambda: blocker / "warm")
    _new_process()
    assert jitgemm.compile(p).code_object == first.code_object
    _new_process()
    assert jitgemm.compile(p).code_object == first.code_object and len(fresh) == n + 3, "nothing was remembered"


def test_the_hash_without_hashlib_is_hashlib_s(monkeypatch):
    """util.files.sha256_hex hashes small payloads with CPython's built-in sha256 while hashlib is not loaded (a
    disk hit does not load it): the digests must be hashlib's, or every sealed entry would read as corrupt."""
    import hashlib

    from jitgemm.util import files

    rng = random.Random()
    payloads = [b"", b"x", rng.randbytes(rng.randrange(1, 70_000)), rng.randbytes(files._SMALL + 1)]
    want = [hashlib.sha256(p).hexdigest() for p in payloads]
    assert [files.sha256_hex(p) for p in payloads] == want
    monkeypatch.delitem(sys.modules, "hashlib")
    used = []
    real_import = __import__

    def spy(name, *args, **kwargs):
        used.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", spy)
    assert [files.sha256_hex(p) for p in payloads[:3]] == want[:3]
    assert {"_sha2", "_sha256"} & set(used) and "hashlib" not in used, used
    assert files.unseal(files.seal(payloads[2])) == payloads[2]
