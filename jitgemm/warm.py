"""The warm path of `jitgemm.compile(problem)` and of `matmul`'s choice (`api._choose`): the kernel an earlier call
(in this process, or in an earlier one through `~/.cache/jitgemm/warm`) gave for the same request, found with a
few `stat` calls and three small file reads (the warm entry, the kernel cache's record and code object) -- without
the selector, the spec, the generators or the choice cache's key (jitgemm/choice_cache.py), whose imports and file
hashing cost a new process about three times the interpreter's own start-up (issue 31).

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
import json
import os
import stat
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from jitgemm.isa.spec.cache import cache_root
from jitgemm.util.files import read_bounded, read_sealed, sha256_hex, write_sealed

if TYPE_CHECKING:
    from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem

    from .kernel import Kernel

FORMAT = 1
MAX_ENTRY_BYTES = 1 << 20        # a choice's entry carries its contract
_SKIP = ("__pycache__",)

_memory: dict[tuple, tuple[str, object]] = {}   # request -> (state stamp it was valid under, Kernel or choice)
_lock = threading.Lock()


def warm_dir() -> Path:
    return cache_root() / "warm"


def _stat(path: str) -> str:
    """A file's size, mtime and inode ("-": absent or unreadable; "dir": a folder)."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
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
    infos = sorted(n for n in _listing(site) if n.startswith(f"{name}-") and n.endswith((".dist-info", ".egg-info")))
    return f"{name} {spec.origin} {_stat(spec.origin)} {' '.join(infos)}"


@functools.cache
def _listing(folder: str) -> tuple[str, ...]:
    """A folder's names, read once per process (llvmlite and Triton share site-packages)."""
    try:
        return tuple(os.listdir(folder))
    except OSError:
        return ("?",)


@functools.cache
def code_stamp() -> str:
    """sha256 of `_roots`' file stats, the Python version and the llvmlite/Triton identities (once per process,
    as the choice cache's source fingerprint is)."""
    lines = [sys.version]
    for root in _roots():
        lines.append(f"[{root}]")
        _walk(root, lines)
    lines += [_distribution("llvmlite"), _distribution("triton")]
    return sha256_hex("\n".join(lines).encode())


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
    something this stamp cannot follow (a tuning folder of old JSON files it would migrate) or the process is not
    as a new one starts (`_ready`). Plain strings and `os.stat`: this runs on every `jitgemm.compile`."""
    root = str(cache_root())
    env_db = os.environ.get("JITGEMM_TUNING_DB")    # as tuning_db.default_path spells it
    db = str(Path(env_db)) if env_db else os.path.join(root, "tuning.db")
    quarantine = os.path.join(root, "quarantine.json")
    if not _ready(db, quarantine):
        return None
    main = _stat(db)
    if main == "dir" or _stat(os.path.join(root, "tuning")) == "dir":   # TuningDB() migrates that folder
        return None
    wal = _stat(f"{db}-wal")
    if wal == "-" or wal.startswith("0:"):   # an empty log holds nothing: opening the database creates one
        wal = "empty"
    releases = os.path.join(root, "aiter", "releases.json")
    aiter = _stat(releases)
    if aiter != "-":
        try:
            paths = json.loads(read_bounded(releases, 1 << 20))
            aiter += " " + " ".join(f"{p} {_stat(p)}" for p in paths)
        except (OSError, ValueError, TypeError):
            aiter += " unreadable"
    spec_dir = os.environ.get("JITGEMM_ISA_SPEC_DIR")
    return "\n".join((root, f"{db} {main} {wal}", _stat(quarantine), aiter,
                      f"{spec_dir} {_folder_stamp(spec_dir) if spec_dir else ''}",
                      _folder_stamp(os.path.join(root, "isa-specs"), depth=1)))


def _ready(db: str, quarantine: str) -> bool:
    """Nothing in this process moved away from what a new process starts with (see the module docstring): the
    default suppliers, reading the tuning database `db` and the `quarantine` file; no spec file chosen."""
    selector = sys.modules.get("jitgemm.selector")
    if selector is not None and not selector.warm_ready(db, quarantine):
        return False
    sources = sys.modules.get("jitgemm.isa.spec.sources")
    return sources is None or not sources.chosen_specs()


def _disk_key(request: tuple, state: str) -> str:
    """The warm index's file name of a request: the request's repr (problem and config are dataclasses whose repr
    names every field that shapes a kernel), the code stamp and the state stamp."""
    text = "\n".join((f"format={FORMAT}", code_stamp(), state, *map(repr, request)))
    return sha256_hex(text.encode())


def _recall(request: tuple) -> tuple[str | None, object]:
    """(state stamp, what this process or the warm index remembers for the request, or None)."""
    state = state_stamp()
    if state is None:
        return None, None
    hit = _memory.get(request)
    if hit is not None and hit[0] == state:
        return state, hit[1]
    key = _disk_key(request, state)
    raw = read_sealed(warm_dir() / f"{key}.json", MAX_ENTRY_BYTES)
    try:
        entry = json.loads(raw) if raw is not None else None
    except ValueError:
        return state, None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return state, None
    return state, entry


def _keep(request: tuple, state: str, value: object) -> None:
    _forget_with_kernels()
    with _lock:
        if len(_memory) > 4096:
            _memory.clear()
        _memory[request] = (state, value)


def _cached_kernel(entry: dict) -> tuple[bytes, dict, str] | None:
    """(code object, record, kernel-cache key) of the kernel-cache entry a warm entry names, checked by the kernel
    cache (seal, sha256, fields); None when it is gone or damaged."""
    key = entry.get("kernel_key")
    if not isinstance(key, str):
        return None
    from . import kernel_cache

    cached = kernel_cache.load(key)
    return (cached[0], cached[1], key) if cached is not None else None


def kernel(problem: GemmProblem, config: GemmConfig | None, arch: str, generator: str | None) -> Kernel | None:
    """The kernel `jitgemm.compile(problem, config, arch=arch, generator=generator)` gave before, if nothing it
    depends on changed since: from this process's memory, else from the warm index and the kernel cache. None:
    take the slow path (and `remember` what it gives)."""
    request = ("compile", problem, config, arch, generator)
    state, found = _recall(request)
    if not isinstance(found, dict):
        return found      # None, or the Kernel this process remembered
    chosen = config if config is not None else config_of(found.get("config"))
    cached = _cached_kernel(found)
    if chosen is None or cached is None or not isinstance(found.get("generator"), str):
        return None
    from .kernel import Kernel

    blob, record, key = cached
    made = Kernel(record["name"], blob, record["contract"], chosen, problem.kernel_class(), arch,
                  generator=found["generator"], from_cache="disk", made_for=problem, cache_key=key)
    _keep(request, state, made)
    return made


def choice(problem: GemmProblem, align: dict[str, int], arch: str) -> tuple[bytes, str, object, str] | None:
    """What the default selector's `choose(problem, align)` gave before on `arch` -- (code object, kernel name,
    Contract, "supplier:label") -- if nothing it depends on changed since; None: ask the selector."""
    request = ("choose", problem, tuple(sorted(align.items())), arch)
    state, found = _recall(request)
    if not isinstance(found, dict):
        return found      # None, or the tuple this process remembered
    cached = _cached_kernel(found)
    if cached is None or not isinstance(found.get("contract"), dict) or not isinstance(found.get("source"), str):
        return None
    from .contract import Contract

    blob, record, _key = cached
    chosen = (blob, record["name"], Contract(found["contract"], str(found.get("contract_source", ""))),
              found["source"])
    _keep(request, state, chosen)
    return chosen


def before() -> str | None:
    """The state stamp to hand to `remember` or `remember_choice` after the slow path (None: nothing will be
    remembered)."""
    return state_stamp()


def _store(request: tuple, state: str | None, value: object, entry: dict) -> None:
    """Keep what the slow path gave, in memory and in the warm index, if the state it was computed under still
    holds (`state` from `before`): nothing changed under the slow path."""
    if state is None or not entry.get("kernel_key") or state_stamp() != state:
        return
    _keep(request, state, value)
    key = _disk_key(request, state)
    try:
        write_sealed(warm_dir() / f"{key}.json",
                     json.dumps({**entry, "format": FORMAT, "key": key}, sort_keys=True).encode())
    except (OSError, TypeError, ValueError):
        pass   # an unwritable cache folder is said once by the kernel cache (cache_notice); no warm entry


def remember(problem: GemmProblem, config: GemmConfig | None, arch: str, generator: str | None, made: Kernel,
             state: str | None) -> None:
    """Remember the kernel the slow path of `jitgemm.compile` gave for a request (see `_store`)."""
    _store(("compile", problem, config, arch, generator), state, made,
           {"kernel_key": made.cache_key, "generator": made.generator, "config": config_fields(made.config)})


def remember_choice(problem: GemmProblem, align: dict[str, int], arch: str, chosen: tuple, kernel_key: str | None,
                    state: str | None) -> None:
    """Remember the default selector's choice (`choose`'s tuple) when it is a kernel of the kernel cache
    (`kernel_key`: one a generator of this project compiled; None for a prebuilt, Triton or aiter kernel, which
    the selector ranks again in a new process)."""
    if kernel_key is None:
        return
    _store(("choose", problem, tuple(sorted(align.items())), arch), state, chosen,
           {"kernel_key": kernel_key, "contract": chosen[2].data, "contract_source": chosen[2].source,
            "source": chosen[3]})


def forget() -> None:
    """The in-process memory starts over (the tuning database learnt something: `selector.forget_choices`; the
    kernels' memory cache was cleared: `kernel.clear_memory_cache`)."""
    with _lock:
        _memory.clear()


_hooked = False


def _forget_with_kernels() -> None:
    """Clearing the kernels' memory cache clears this memo too (registered once, when it first keeps something)."""
    global _hooked
    if not _hooked:
        from .kernel import on_clear_memory_cache

        on_clear_memory_cache(forget)
        _hooked = True


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
