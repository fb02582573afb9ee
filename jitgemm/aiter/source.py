"""Where an aiter release is read from: its wheel (a zip, read in place) or a folder (the unpacked wheel, or the
`aiter_meta/hsa` tree alone as tests/fixtures/aiter_corpus.py extracts it). Two roots matter: the code objects and their
per-family listings under `aiter_meta/hsa/` and the tuning tables under `aiter/configs/`."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

HSA = "aiter_meta/hsa/"
CONFIGS = "aiter/configs/"
# bounded reads: the largest aiter code object is ~1 MB and the largest table ~300 kB
MAX_BYTES = 64 << 20


class AiterSourceError(ValueError):
    """A path that is neither an aiter wheel nor a folder holding one's files."""


class AiterSource:
    """Read-only view of one aiter release: `hsa_files()` / `config_files()` list paths relative to their root,
    `hsa_bytes(rel)` / `config_bytes(rel)` read one file."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._zip: zipfile.ZipFile | None = None
        self._hsa: Path | None = None
        self._configs: Path | None = None
        if self.path.is_file():
            try:
                self._zip = zipfile.ZipFile(self.path)
            except (zipfile.BadZipFile, OSError) as exc:
                raise AiterSourceError(f"{self.path}: not an aiter wheel (a zip file): {exc}") from None
            names = self._zip.namelist()
            if not any(n.startswith(HSA) for n in names):
                raise AiterSourceError(f"{self.path}: a zip without {HSA} (not an amd-aiter wheel)")
            self._names = names
        elif self.path.is_dir():
            if (self.path / HSA).is_dir():
                self._hsa, self._configs = self.path / HSA, self.path / CONFIGS
            elif any((self.path / a).is_dir() for a in ("gfx942", "gfx950")):
                self._hsa = self.path          # the hsa tree alone (tests/fixtures/aiter_corpus.py)
                self._configs = self.path / CONFIGS if (self.path / CONFIGS).is_dir() else None
            else:
                raise AiterSourceError(f"{self.path}: no {HSA} and no gfx*/ folders; pass an amd-aiter wheel, the "
                                       f"unpacked wheel, or its aiter_meta/hsa folder")
        else:
            raise AiterSourceError(f"{self.path}: no such file or folder; pass an amd-aiter wheel or folder")

    @property
    def version(self) -> str:
        """The release's version (aiter/_version.py) when the source has it, else ''."""
        text = self._read_rel("aiter/_version.py")
        if text:
            for line in text.decode(errors="replace").splitlines():
                if line.startswith("__version__"):
                    return line.split("=", 1)[1].strip().strip("'\"")
        return ""

    def _read_rel(self, rel: str) -> bytes | None:
        if self._zip is not None:
            try:
                info = self._zip.getinfo(rel)
            except KeyError:
                return None
            return self._zip.read(info) if info.file_size <= MAX_BYTES else None
        if self._hsa is not None and self._hsa == self.path / HSA:
            p = self.path / rel
            return p.read_bytes() if p.is_file() and p.stat().st_size <= MAX_BYTES else None
        return None

    def _list(self, prefix: str, folder: Path | None) -> list[str]:
        if self._zip is not None:
            return sorted(n[len(prefix):] for n in self._names if n.startswith(prefix) and not n.endswith("/"))
        if folder is None or not folder.is_dir():
            return []
        return sorted(str(p.relative_to(folder)).replace(os.sep, "/") for p in folder.rglob("*") if p.is_file())

    def hsa_files(self) -> list[str]:
        return self._list(HSA, self._hsa)

    def config_files(self) -> list[str]:
        return self._list(CONFIGS, self._configs)

    def _bytes(self, prefix: str, folder: Path | None, rel: str) -> bytes:
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            raise AiterSourceError(f"{rel}: not a path inside the release")
        if self._zip is not None:
            data = self._read_rel(prefix + rel)
            if data is None:
                raise AiterSourceError(f"{self.path}: no {prefix + rel}")
            return data
        if folder is None:
            raise AiterSourceError(f"{self.path}: no {prefix}")
        p = folder / rel
        if not p.is_file():
            raise AiterSourceError(f"{p}: no such file")
        if p.stat().st_size > MAX_BYTES:
            raise AiterSourceError(f"{p}: larger than {MAX_BYTES} bytes")
        return p.read_bytes()

    def hsa_bytes(self, rel: str) -> bytes:
        return self._bytes(HSA, self._hsa, rel)

    def config_bytes(self, rel: str) -> bytes:
        return self._bytes(CONFIGS, self._configs, rel)

    def where(self, root: str, rel: str) -> str:
        """A path for messages: the wheel member or the file."""
        if self._zip is not None:
            return f"{self.path.name}:{root}{rel}"
        folder = self._hsa if root == HSA else self._configs
        return str((folder or self.path) / rel)
