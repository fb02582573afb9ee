"""Which aiter releases `jitgemm aiter import` made part of every selector: `<cache>/aiter/releases.json`, a list
of paths. `selector.default_suppliers()` adds an `AiterSupplier` for each (its inventory read on first use)."""

from __future__ import annotations

import json
from pathlib import Path


def releases_path() -> Path:
    from jitgemm.isa.spec.cache import cache_root

    return cache_root() / "aiter" / "releases.json"


def registered() -> list[str]:
    path = releases_path()
    try:
        data = json.loads(path.read_text()) if path.is_file() and path.stat().st_size < (1 << 20) else []
    except (OSError, ValueError):
        return []
    return [str(p) for p in data if isinstance(p, str)] if isinstance(data, list) else []


def register(path: str | Path) -> None:
    """Remember a release (idempotent)."""
    p = str(Path(path).resolve())
    paths = [x for x in registered() if x != p] + [p]
    out = releases_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(paths, indent=1))


def registered_suppliers() -> list:
    """An AiterSupplier per registered release that still exists (a vanished one is skipped)."""
    from .supplier import AiterSupplier

    out = []
    for p in registered():
        if Path(p).exists():
            out.append(AiterSupplier(LazyInventory(p)))
    return out


class LazyInventory:
    """An inventory read when a selector first asks for candidates (selectors are built at start-up)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def admitted(self, arch: str | None = None):
        from .reader import inventory

        return inventory(self.path).admitted(arch)
