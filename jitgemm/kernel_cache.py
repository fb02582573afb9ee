"""The on-disk kernel cache (`~/.cache/jitgemm/kernels`): code objects keyed by everything that shapes the
binary (IR text of the kernel class and config, spec sha256, target, generator and version).

Each entry is two files written atomically: `<key>.co` (the code object) and `<key>.json` (what was
compiled, and the sha256 of the code object). An entry whose files are missing, unreadable or whose hash
does not match is ignored and overwritten: a corrupt cache costs a recompile, never a wrong kernel.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from jitgemm.isa.files import atomic_write
from jitgemm.isa.spec_cache import cache_root

FORMAT = 1


def kernel_dir() -> Path:
    return cache_root() / "kernels"


@functools.cache
def generator_fingerprint() -> str:
    """sha256 of the source of everything that turns IR into bytes (the generators, the encoder, the
    code-object writer): a changed generator never meets a kernel cached by an older one."""
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
    return hashlib.sha256(text.encode()).hexdigest()


def problem_key(problem_text: str, spec_sha256: str, target: str, generator: str, version: str) -> str:
    """Key of the default kernel chosen for one exact problem (sizes included): lets a new process find its
    kernel without loading the spec or choosing a config."""
    return cache_key("problem:" + problem_text, spec_sha256, target, generator, version)


def load_choice(pkey: str) -> str | None:
    try:
        key = (kernel_dir() / "by-problem" / pkey).read_text().strip()
    except OSError:
        return None
    return key if len(key) == 64 and all(c in "0123456789abcdef" for c in key) else None


def store_choice(pkey: str, key: str) -> None:
    try:
        atomic_write(kernel_dir() / "by-problem" / pkey, key.encode())
    except OSError:
        pass


def load(key: str) -> tuple[bytes, dict] | None:
    """(code object, record) of a valid entry, or None."""
    folder = kernel_dir()
    try:
        record = json.loads((folder / f"{key}.json").read_text())
        blob = (folder / f"{key}.co").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
        return None
    if record.get("sha256") != hashlib.sha256(blob).hexdigest():
        return None
    return blob, record


def store(key: str, blob: bytes, record: dict) -> None:
    """Write an entry; a read-only or full disk only loses the cache."""
    folder = kernel_dir()
    try:
        atomic_write(folder / f"{key}.co", blob)
        full = {**record, "format": FORMAT, "key": key, "sha256": hashlib.sha256(blob).hexdigest()}
        atomic_write(folder / f"{key}.json", json.dumps(full, sort_keys=True).encode())
    except OSError:
        pass
