"""AMD's aiter GEMM kernels as jitgemm kernels, from data: `inventory(wheel_or_dir)` reads a release (the wheel or
its files), makes one contract per GEMM kernel from the family descriptions (`specs/aiter/families/*.yaml`) and
lists, for every code object no description covers, why it is left out; `.tuned_rows` are aiter's measured
tuning tables (`specs/aiter/release.yaml` says how each reads). `use_aiter()` offers the admitted kernels to the
selector and the tables to the tuning database; `jitgemm aiter import` does both for every later process.

The release is read as it is: nothing here knows a family, a tile or an argument offset. A new aiter family is
a new YAML file beside the others."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .families import FamilyError
    from .reader import AiterKernel, Inventory, TunedRow, device_of, inventory, release_spec
    from .source import AiterSourceError

# imported on first use: `selector.default_suppliers()` reads `jitgemm.aiter.registry` in every process that
# chooses a kernel, and the reader (YAML family files, the wheel reader) is not needed for that
_LAZY = {"FamilyError": "families", "AiterKernel": "reader", "Inventory": "reader", "TunedRow": "reader",
         "device_of": "reader", "inventory": "reader", "release_spec": "reader", "AiterSourceError": "source"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = ["AiterKernel", "Inventory", "TunedRow", "inventory", "device_of", "release_spec", "use_aiter",
           "default_wheel", "AiterSourceError", "FamilyError"]


def use_aiter(wheel_or_dir: str | os.PathLike | None = None, *, tuning: bool = True) -> Inventory:
    """Offer an aiter release's admitted kernels to `matmul`/`select` on every target and (with `tuning`) import
    its tuning tables into the tuning database as measured rows. Without a path, the pinned wheel in the corpus
    cache (tests/fixtures/aiter_corpus.py's location) is used when present."""
    from ..selector import register_supplier
    from .reader import inventory
    from .supplier import AiterSupplier

    path = Path(wheel_or_dir) if wheel_or_dir is not None else default_wheel()
    inv = inventory(path)
    register_supplier(AiterSupplier(inv))
    if tuning:
        from ..tuning_db import TuningDB
        from .tuned import import_rows

        import_rows(inv, TuningDB())
    return inv


def default_wheel() -> Path:
    """The pinned amd-aiter wheel in the corpus cache (`$JITGEMM_CORPUS_DIR`, else ~/.cache/jitgemm/corpora)."""
    base = os.environ.get("JITGEMM_CORPUS_DIR")
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    folder = Path(base) if base else home / "jitgemm" / "corpora"
    wheels = sorted(folder.glob("amd_aiter-*.whl"))
    if not wheels:
        from .source import AiterSourceError

        raise AiterSourceError(f"no amd-aiter wheel in {folder}; pass its path (pip download --no-deps amd-aiter)")
    return wheels[-1]

