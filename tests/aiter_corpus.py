"""Other teams' hand-written kernels: AMD's `amd-aiter` wheel, pinned, sha256-checked, cached.

The wheel ships about 1,300 hand-assembled gfx942 code objects (and gfx950 ones) under `aiter_meta/hsa/`.
They are the outside authority that no LLVM convention shaped, so the disassembler, the emulator and the
contract are proven on them. The files are never committed: tests download the pinned wheel with pip from
the package registry, check its sha256, and extract the code objects into the user cache once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tests.oracles import _missing

AITER_VERSION = "0.1.7.post2.dev18"
AITER_WHEEL = f"amd_aiter-{AITER_VERSION}-py3-none-any.whl"
AITER_SHA256 = "fe139d74438217c35e87e3b961166bac8db2d381eadccb371da2e63615f05a31"
PREFIX = "aiter_meta/hsa/"


def _cache() -> Path:
    base = os.environ.get("JITGEMM_CORPUS_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "jitgemm" / "corpora"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _wheel() -> Path:
    """The pinned wheel in the cache, downloaded (and verified) when absent or wrong."""
    folder = _cache()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / AITER_WHEEL
    if wheel.is_file() and _sha256(wheel) == AITER_SHA256:
        return wheel
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        out = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                              f"amd-aiter=={AITER_VERSION}"], capture_output=True, text=True)
        got = Path(tmp) / AITER_WHEEL
        if out.returncode != 0 or not got.is_file():
            _missing(f"could not download amd-aiter=={AITER_VERSION}: {out.stderr.strip()[-300:]}")
        digest = _sha256(got)
        if digest != AITER_SHA256:
            raise AssertionError(f"amd-aiter=={AITER_VERSION} wheel has sha256 {digest}, pinned {AITER_SHA256}")
        os.replace(got, wheel)
    return wheel


def aiter_root() -> Path:
    """Folder holding `gfx942/...` and `gfx950/...` code objects (and the wheel's CSV tuning tables)."""
    root = _cache() / f"aiter-{AITER_VERSION}"
    stamp = root / ".complete"
    if stamp.is_file() and stamp.read_text() == AITER_SHA256:
        return root
    wheel = _wheel()
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not info.filename.startswith(PREFIX) or info.is_dir():
                continue
            rel = Path(info.filename[len(PREFIX):])
            if rel.is_absolute() or ".." in rel.parts:
                raise AssertionError(f"unsafe member path in the aiter wheel: {info.filename}")
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(zf.read(info))
    stamp.write_text(AITER_SHA256)
    return root


def aiter_wheel() -> Path:
    """The pinned wheel itself (downloaded and verified once): what `jitgemm.aiter.inventory` reads."""
    return _wheel()


def aiter_objects(arch: str = "gfx942") -> list[Path]:
    """Every code object the wheel ships for `arch`, sorted."""
    return sorted((aiter_root() / arch).rglob("*.co"))
