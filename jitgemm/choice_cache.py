"""The on-disk cache of the selector's *choice* (`~/.cache/jitgemm/choices`): which kernel the default selector
ranks first for a problem, so a new process that finds it skips the ranking (every candidate's contract and
`jitgemm.timing.predict`) and goes straight to the kernel cache.

A cached choice must never differ from what the selector would choose now (the old choice cache in
kernel_cache.py was removed for exactly that: keyed by problem only, it outlived a tuning row). So the key is
everything the ranking reads:

- the purpose (`selected_config` with its generator filter, or `Selector.choose`), the exact problem text,
  the operands' alignment and the base target;
- the ISA spec's sha256 and the stamp (path, size, mtime: `warm.code_stamp`) of every file that can move the
  ranking: the jitgemm package, codegen/, isa/, util/ and specs/ (target profiles and devices the timing model
  reads, aiter family files, the contract schema);
- each supplier's stamp (`supplier_stamp`): its type and settings, and the version of the package it wraps
  (llvmlite, Triton) or the registered aiter release's size and mtime. A supplier without a stamp (one a user
  registered: a prebuilt folder, a custom class) turns the cache off for that selector;
- the content of the tuning database's rows for the problem and target (what `TuningDB.deciding_row` and
  `TunedSupplier` read), and the quarantine file's bytes.

Any change to one of them is a different key: a miss, then the selector ranks and the new choice is stored.
Entries are sealed (`util.files.write_sealed`); an unreadable, corrupt or unwritable cache is a miss, never an
error (one notice per process when it cannot be written).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from jitgemm.isa.spec.cache import cache_root
from jitgemm.util.files import MAX_CACHE_BYTES, read_bounded, read_sealed, write_sealed

FORMAT = 1
MAX_ENTRY_BYTES = 1 << 20


def choice_dir() -> Path:
    return cache_root() / "choices"


def source_fingerprint() -> str:
    """The identity of the sources that can change a ranking: jitgemm/, codegen/, isa/, util/ and specs/ (the
    ISA XML is covered by the spec's own sha256 too). It is jitgemm/warm.py's `code_stamp` (one home): path,
    size and mtime of every file, as Python's byte-code cache trusts them, computed once per process -- and
    already computed by the warm path's lookup that runs before any ranking, so a choice miss hashes no source
    file (hashing them all cost a fully cold compile ~15 ms CPU, issue 31)."""
    from .warm import code_stamp

    return code_stamp()


@functools.cache
def _package_version(name: str) -> str:
    """The installed package's version ("" when it is absent): a new llvmlite or Triton can change a kernel.
    llvmlite's `__version__` is what the LLVM generator's own version reads (a cheap import); Triton's import is
    not, so its distribution metadata is read."""
    import importlib.util

    try:
        if importlib.util.find_spec(name) is None:
            return ""
    except (ImportError, ValueError):
        return ""
    if name == "llvmlite":
        try:
            import llvmlite
        except ImportError:
            return ""
        return str(llvmlite.__version__)
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def supplier_stamp(supplier, target: str, problem) -> str | None:
    """What identifies a default supplier's candidate set beside the sources and the selector's tuning rows;
    None for a supplier this module does not know (no caching with it)."""
    from .suppliers import GeneratorSupplier, TritonSupplier
    from .tuned_supplier import TunedSupplier

    if type(supplier) is GeneratorSupplier:
        dep = {"asm": None, "llvm": "llvmlite"}.get(supplier.option, "?")
        if dep == "?":
            return None
        version = _package_version(dep) if dep else ""
        return f"generator {supplier.option} variants={supplier.variants} {dep}={version}"
    if type(supplier) is TunedSupplier:       # its candidates are its own database's rows for the problem
        rows = _tuning_stamp(supplier.db, target, problem)
        return f"tuned {supplier.db.path} {rows}" if rows is not None else None
    if type(supplier) is TritonSupplier:
        if supplier.scope == "mx" and not (problem.scaled or problem.scale_mode != "none"):
            return "triton scope=mx: no candidates for an unscaled problem"     # TritonSupplier.candidates
        return (f"triton scope={supplier.scope} blocks={supplier.blocks} mx_blocks={supplier.mx_blocks} "
                f"warps={supplier.num_warps} mx_variants={supplier.mx_variants} "
                f"triton={_package_version('triton')}")
    from .aiter.registry import LazyInventory
    from .aiter.supplier import AiterSupplier

    if type(supplier) is AiterSupplier and type(supplier.inventory) is LazyInventory:
        try:
            st = os.stat(supplier.inventory.path)
        except OSError:
            return None
        return f"aiter {supplier.name} {supplier.inventory.path} {st.st_size} {st.st_mtime_ns}"
    return None


def _tuning_stamp(db, target: str, problem) -> str | None:
    """sha256 of every row the database holds for the problem on the target (None: the database cannot say)."""
    try:
        rows = db.rows(target, problem)
    except Exception:       # a database that cannot be read is a miss, never an error
        return None
    digest = hashlib.sha256(str(getattr(db, "path", "")).encode())
    for r in rows:
        digest.update(repr(r).encode())
    return digest.hexdigest()


def _file_stamp(path: Path) -> str:
    try:
        return hashlib.sha256(read_bounded(path, MAX_CACHE_BYTES)).hexdigest()
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}" if path.exists() else "absent"


def choice_key(selector, purpose: str, problem, align: dict[str, int] | None) -> str | None:
    """The key of a choice, or None when it cannot be cached (a supplier without a stamp, an unreadable
    tuning database)."""
    from jitgemm import isa
    from jitgemm.codegen.gemm_text import format_problem

    from .kernel_cache import generator_fingerprint

    stamps = []
    for supplier in list(selector.suppliers):
        stamp = supplier_stamp(supplier, selector.target, problem)
        if stamp is None:
            return None
        stamps.append(stamp)
    tuning = _tuning_stamp(selector.tuning, selector.target, problem)
    if tuning is None:
        return None
    text = "\n".join((f"format={FORMAT}", purpose, format_problem(problem), repr(problem),
                      json.dumps(sorted((align or {}).items())), selector.target,
                      isa.load_spec(selector.target).sha256, source_fingerprint(), generator_fingerprint(),
                      *stamps, f"tuning={tuning}", f"quarantine={_file_stamp(selector.quarantine.path)}"))
    return hashlib.sha256(text.encode()).hexdigest()


def load(key: str | None) -> dict | None:
    """The cached choice for a key, or None (absent, corrupt, another key's)."""
    if key is None:
        return None
    raw = read_sealed(choice_dir() / f"{key}.json", MAX_ENTRY_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    return data


def store(key: str | None, entry: dict) -> None:
    """Remember a choice; an unwritable cache folder only loses the cache (said once per process)."""
    if key is None:
        return
    folder = choice_dir()
    full = {**entry, "format": FORMAT, "key": key}
    try:
        text = json.dumps(full, sort_keys=True)
    except (TypeError, ValueError):
        return
    if json.loads(text) != full:       # a value JSON would not give back as it was (a tuple): not cached
        return
    try:
        write_sealed(folder / f"{key}.json", text.encode())
    except OSError as exc:
        from jitgemm.util.cache_notice import notice

        notice(f"choice cache {folder}: cannot write ({getattr(exc, 'strerror', None) or exc}); the selector "
               f"ranks the candidates in every process")
