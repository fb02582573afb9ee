"""The warm path of `jitgemm.compile(problem)`: the kernel an earlier call (in this process, or in an earlier one
through `~/.cache/jitgemm/warm`) compiled for the same request, found with a few `stat` calls and two small file
reads -- without the selector, the spec, the generators or the choice cache's key (jitgemm/choice_cache.py), whose
imports and file hashing cost a new process about three times the interpreter's own start-up.

A warm entry must never give a kernel the slow path would not give now. Its key is therefore the request (problem,
config, target, generator) and stamps of every input the slow path reads:

- `code_stamp` (once per process): path, size and mtime of every file of the jitgemm package, codegen/, isa/,
  util/ and specs/ (sources, YAML data, the bundled spec XML), and of the installed llvmlite and Triton (their
  `*.dist-info` folder names, which carry the version, and their `__init__.py`) -- what the choice cache's source
  fingerprint, supplier stamps and the kernel cache's generator fingerprint hash by content;
- `state_stamp` (every call): the cache folder, the tuning database (file, and its write-ahead log when it holds
  frames), the quarantine file, the aiter releases `jitgemm aiter import` registered (and each one's file), and
  where a spec could be found (`$JITGEMM_ISA_SPEC_DIR`, the official specs under the cache).

Size and mtime in nanoseconds stand for content, as they do for Python's own byte-code cache and for the spec's
sha256 index (isa/spec/sources.py `spec_sha256`). A process whose suppliers are not the defaults (a
`register_supplier`, `use_triton`, `use_prebuilt`, `use_aiter`; `selector.warm_ready`) or that chose a spec file
(`--spec`) takes the slow path every time. An entry is written only when the state stamp read before the slow
path equals the one read after it (nothing changed under it), and points at a kernel-cache entry whose own seal
and sha256 are checked on every use. Unreadable, corrupt or unwritable: a miss, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from jitgemm.isa.spec.cache import cache_root
from jitgemm.util.files import read_bounded, read_sealed, write_sealed

if TYPE_CHECKING:
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem

    from .kernel import Kernel

FORMAT = 1
MAX_ENTRY_BYTES = 1 << 16
_SKIP = ("__pycache__",)

_memory: dict[tuple, tuple[str, Kernel]] = {}    # request -> (state stamp it was valid under, kernel)
_lock = threading.Lock()


def warm_dir() -> Path:
    return cache_root() / "warm"


def _stat(path: str | os.PathLike) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def _walk(root: str, out: list[str], rel: str = "") -> None:
    """(relative path, size, mtime) of every file under `root`, byte-code folders left out."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        out.append(f"{rel}: unreadable")
        return
    for e in entries:
        if e.name in _SKIP or e.name.startswith("."):
            continue
        name = f"{rel}/{e.name}"
        try:
            if e.is_dir():
                _walk(e.path, out, name)
            else:
                st = e.stat()
                out.append(f"{name} {st.st_size} {st.st_mtime_ns}")
        except OSError:
            out.append(f"{name} -")


def _roots() -> list[str]:
    """The folders whose files can change a choice or a kernel: the package and the four folders
    `jitgemm/__init__.py` maps (beside it in a source checkout, inside it in a wheel)."""
    import importlib.util

    package = os.path.dirname(os.path.abspath(__file__))
    roots = [package]
    for name in ("codegen", "isa", "util", "specs"):
        spec = importlib.util.find_spec(f"jitgemm.{name}")
        folder = os.path.dirname(os.path.abspath(spec.origin)) if spec and spec.origin else f"?{name}"
        if not folder.startswith(package + os.sep):
            roots.append(folder)
    return roots


def _distribution(name: str) -> str:
    """An installed package's identity without importing it: its `*.dist-info` folders (the version is in their
    name) and its `__init__.py`'s size and mtime; "absent" when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "absent"
    if spec is None or not spec.origin:
        return "absent"
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        infos = sorted(n for n in os.listdir(site) if n.startswith(f"{name}-") and n.endswith((".dist-info",
                                                                                                ".egg-info")))
    except OSError:
        infos = ["?"]
    return f"{name} {spec.origin} {_stat(spec.origin)} {' '.join(infos)}"


@functools.cache
def code_stamp() -> str:
    """sha256 of `_roots`' file stats, the Python version and the llvmlite/Triton identities (once per process,
    as the choice cache's source fingerprint is)."""
    lines = [sys.version]
    for root in _roots():
        lines.append(f"[{root}]")
        _walk(root, lines)
    lines += [_distribution("llvmlite"), _distribution("triton")]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _folder_stamp(folder: str, depth: int = 0) -> str:
    """Names and stats of a folder's entries (one level of sub-folders when `depth` is 1)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return "-"
    out = []
    for e in entries:
        if depth and e.is_dir():
            out.append(f"{e.name}/[{_folder_stamp(e.path)}]")
        else:
            out.append(f"{e.name} {_stat(e.path)}")
    return ";".join(out)


def state_stamp() -> str | None:
    """The stamp of what can change between two calls (see the module docstring); None when the slow path reads
    something this stamp cannot follow (a tuning folder of old JSON files it would migrate)."""
    root = cache_root()
    env_db = os.environ.get("JITGEMM_TUNING_DB")
    db = Path(env_db) if env_db else root / "tuning.db"
    if db.is_dir() or (not env_db and (root / "tuning").is_dir()):
        return None
    wal = _stat(f"{db}-wal")
    if wal == "-" or wal.startswith("0:"):   # an empty log holds nothing: opening the database creates one
        wal = "empty"
    releases = root / "aiter" / "releases.json"
    aiter = _stat(releases)
    if aiter != "-":
        try:
            paths = json.loads(read_bounded(releases, 1 << 20))
            aiter += " " + " ".join(f"{p} {_stat(p)}" for p in paths)
        except (OSError, ValueError, TypeError):
            aiter += " unreadable"
    spec_dir = os.environ.get("JITGEMM_ISA_SPEC_DIR")
    return "\n".join((str(root), f"{db} {_stat(db)} {wal}", _stat(root / "quarantine.json"), aiter,
                      f"{spec_dir} {_folder_stamp(spec_dir) if spec_dir else ''}",
                      _folder_stamp(str(root / "isa-specs"), depth=1)))


def _ready() -> bool:
    """Nothing in this process moved away from what a new process starts with (see the module docstring)."""
    selector = sys.modules.get("jitgemm.selector")
    if selector is not None and not selector.warm_ready():
        return False
    sources = sys.modules.get("jitgemm.isa.spec.sources")
    return sources is None or not sources.chosen_specs()


def _request(problem: GemmProblem, config: GemmConfig | None, arch: str, generator: str | None) -> tuple:
    return (problem, config, arch, generator)


def _disk_key(request: tuple, state: str) -> str:
    problem, config, arch, generator = request
    text = "\n".join((f"format={FORMAT}", code_stamp(), state, repr(problem), repr(config), arch, str(generator)))
    return hashlib.sha256(text.encode()).hexdigest()


def kernel(problem: GemmProblem, config: GemmConfig | None, arch: str, generator: str | None) -> Kernel | None:
    """The kernel `jitgemm.compile` gave for this request before, if nothing it depends on changed since: from
    this process's memory, else from the warm index and the kernel cache. None: take the slow path."""
    if not _ready():
        return None
    state = state_stamp()
    if state is None:
        return None
    request = _request(problem, config, arch, generator)
    hit = _memory.get(request)
    if hit is not None and hit[0] == state:
        return hit[1]
    found = _from_disk(request, state)
    if found is not None:
        with _lock:
            _memory[request] = (state, found)
    return found


def _from_disk(request: tuple, state: str) -> Kernel | None:
    key = _disk_key(request, state)
    raw = read_sealed(warm_dir() / f"{key}.json", MAX_ENTRY_BYTES)
    if raw is None:
        return None
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    problem, config, arch, _generator = request
    config = config if config is not None else config_of(entry.get("config"))
    kernel_key, gen_name = entry.get("kernel_key"), entry.get("generator")
    if config is None or not isinstance(kernel_key, str) or not isinstance(gen_name, str):
        return None
    from . import kernel_cache
    from .kernel import Kernel

    cached = kernel_cache.load(kernel_key)
    if cached is None:
        return None
    blob, record = cached
    return Kernel(record["name"], blob, record["contract"], config, problem.kernel_class(), arch,
                  generator=gen_name, from_cache="disk", made_for=problem, cache_key=kernel_key)


def before() -> str | None:
    """The state stamp to hand to `remember` after the slow path (None: nothing will be remembered)."""
    return state_stamp() if _ready() else None


def remember(problem: GemmProblem, config: GemmConfig | None, arch: str, generator: str | None, made: Kernel,
             state: str | None) -> None:
    """Keep what the slow path gave for a request, in memory and in the warm index, if the state it was computed
    under still holds (`state` from `before`) and the kernel is in the kernel cache."""
    if state is None or not made.cache_key or not _ready() or state_stamp() != state:
        return
    request = _request(problem, config, arch, generator)
    with _lock:
        if len(_memory) > 4096:
            _memory.clear()
        _memory[request] = (state, made)
    entry = {"format": FORMAT, "key": _disk_key(request, state), "kernel_key": made.cache_key,
             "generator": made.generator, "config": config_fields(made.config)}
    try:
        write_sealed(warm_dir() / f"{entry['key']}.json", json.dumps(entry, sort_keys=True).encode())
    except OSError:
        pass   # an unwritable cache folder: the kernel cache has said so already (cache_notice)


def forget() -> None:
    """The in-process memory starts over (the tuning database learnt something: `selector.forget_choices`)."""
    with _lock:
        _memory.clear()


def config_fields(config: GemmConfig) -> dict:
    """A config as JSON-ready fields (`config_of` gives it back)."""
    import dataclasses

    return dataclasses.asdict(config)


def config_of(fields: object) -> GemmConfig | None:
    """The config stored as `config_fields`, or None when this version cannot read it back exactly."""
    from jitgemm.codegen.gemm_ir import GemmConfig

    if not isinstance(fields, dict):
        return None
    try:
        config = GemmConfig(**fields)
    except (TypeError, ValueError):
        return None
    return config if config_fields(config) == fields else None
