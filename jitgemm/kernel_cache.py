"""The on-disk kernel cache (`~/.cache/jitgemm/kernels`): code objects keyed by everything that shapes the
binary (IR text of the kernel class and config, spec sha256, target, generator and version).

Each entry is two files written atomically: `<key>.co` (the code object, kept a plain ELF so tools can read
it) and `<key>.json` (what was compiled, and the sha256 of the code object), the record sealed with the
sha256 of its own bytes (`util.files.seal`). An entry whose files are missing, unreadable, over the size
limit, fail either hash, or whose record lacks a field the compiler needs is ignored and overwritten: a
corrupt cache costs a recompile, never a wrong kernel or a KeyError.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from jitgemm.isa.spec.cache import cache_root
from jitgemm.util.files import MAX_CACHE_BYTES, atomic_write, read_bounded, read_sealed, sha256_hex, write_sealed

FORMAT = 2   # 2: records sealed with their own sha256


def kernel_dir() -> Path:
    return cache_root() / "kernels"


@functools.cache
def generator_fingerprint() -> str:
    """sha256 of the source of everything that turns IR into bytes (the generators, the encoder, the
    code-object writer): a changed generator never meets a kernel cached by an older one."""
    import hashlib

    from jitgemm import codegen, isa

    digest = hashlib.sha256()
    for package in (codegen, isa):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")) + sorted(root.glob("*.lark")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(ir_text: str, spec_sha256: str, target: str, generator: str, version: str) -> str:
    text = "\n".join((f"format={FORMAT}", ir_text, spec_sha256, target, generator, version,
                      generator_fingerprint()))
    return sha256_hex(text.encode())


def _valid_record(record: object, key: str) -> bool:
    """The fields the compiler reads from a record, with their types (a record lacking one is rebuilt)."""
    return (isinstance(record, dict) and record.get("format") == FORMAT and record.get("key") == key
            and isinstance(record.get("name"), str) and bool(record["name"])
            and isinstance(record.get("contract"), dict) and isinstance(record.get("sha256"), str)
            and isinstance(record.get("config", {}), dict))


def load(key: str) -> tuple[bytes, dict] | None:
    """(code object, record) of a valid entry, or None."""
    folder = kernel_dir()
    raw = read_sealed(folder / f"{key}.json")
    if raw is None:
        return None
    try:
        record = json.loads(raw)
        blob = read_bounded(folder / f"{key}.co", MAX_CACHE_BYTES)
    except (OSError, ValueError):
        return None
    if not _valid_record(record, key):
        return None
    if record.get("sha256") != sha256_hex(blob):
        return None
    return blob, record


def store(key: str, blob: bytes, record: dict) -> None:
    """Write an entry; a read-only or full disk only loses the cache."""
    folder = kernel_dir()
    try:
        atomic_write(folder / f"{key}.co", blob)
        full = {**record, "format": FORMAT, "key": key, "sha256": sha256_hex(blob)}
        write_sealed(folder / f"{key}.json", json.dumps(full, sort_keys=True).encode())
    except OSError as exc:
        from jitgemm.util.cache_notice import notice

        notice(f"kernel cache {folder}: cannot write ({exc.strerror or exc}); running without it (kernels are "
               f"compiled again in every process)")
