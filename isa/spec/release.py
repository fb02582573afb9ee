"""Official MR-ISA releases: download (`jitgemm spec fetch`) or import a zip obtained elsewhere
(`jitgemm spec import`), verify size and sha256 against the pins in `specs/releases.yaml`, extract the XML
files into the user cache. An archive or member that does not match its pin is refused, never used.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml
from jitgemm.isa.errors import SpecError
from jitgemm.util.files import FileRefused, atomic_write, read_bounded

from .sources import official_dir

_MEMBER = re.compile(r"^amdgpu_isa_[A-Za-z0-9_]+\.xml$")


@dataclass(frozen=True)
class Pin:
    size: int
    sha256: str


@dataclass(frozen=True)
class Release:
    name: str
    url: str
    archive: Pin
    members: dict[str, Pin] = field(default_factory=dict)


def pinned_releases() -> tuple[dict[str, Release], str]:
    """All pinned releases and the default one's name, from `specs/releases.yaml`."""
    data = yaml.safe_load(resources.files("jitgemm.specs").joinpath("releases.yaml").read_text(encoding="utf-8"))
    out = {}
    for name, r in data["releases"].items():
        members = {m: Pin(int(p["size"]), str(p["sha256"])) for m, p in (r.get("members") or {}).items()}
        out[str(name)] = Release(str(name), r["url"], Pin(int(r["size"]), str(r["sha256"])), members)
    return out, str(data["default"])


def _release(name: str | None, releases: dict[str, Release] | None) -> Release:
    if releases is None:
        releases, default = pinned_releases()
    else:
        default = next(iter(releases))
    name = name or default
    if name not in releases:
        raise SpecError(f"unknown release {name!r}; pinned releases: {', '.join(sorted(releases))}")
    return releases[name]


def verify_archive(blob: bytes, release: Release, origin: str) -> None:
    if len(blob) != release.archive.size:
        raise SpecError(f"archive is {len(blob):,} bytes; release {release.name} pins {release.archive.size:,} "
                        f"bytes. Refusing it", path=origin)
    digest = hashlib.sha256(blob).hexdigest()
    if digest != release.archive.sha256:
        raise SpecError(f"archive sha256 is {digest}; release {release.name} pins {release.archive.sha256}. "
                        f"Refusing it", path=origin)


def extract(blob: bytes, release: Release, origin: str, dest_root: Path | None = None) -> list[Path]:
    """Verify and extract the archive's spec XML files into `<cache>/isa-specs/<release>/`."""
    verify_archive(blob, release, origin)
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile as exc:
        raise SpecError(f"not a zip archive: {exc}", path=origin) from None
    dest = (dest_root or official_dir()) / release.name
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with archive:
        for info in archive.infolist():
            base = info.filename.replace("\\", "/").rsplit("/", 1)[-1]
            if info.is_dir() or not _MEMBER.match(base):
                continue  # only flat spec files by base name: nothing can escape the destination
            content = archive.read(info)
            pin = release.members.get(base)
            if pin is not None:
                digest = hashlib.sha256(content).hexdigest()
                if len(content) != pin.size or digest != pin.sha256:
                    raise SpecError(f"member {base} has {len(content):,} bytes / sha256 {digest}; release "
                                    f"{release.name} pins {pin.size:,} / {pin.sha256}. Refusing it", path=origin)
            atomic_write(dest / base, content)
            written.append(dest / base)
    if not written:
        raise SpecError("archive holds no amdgpu_isa_*.xml file", path=origin)
    return written


def import_archive(path: str | os.PathLike, release: str | None = None, *,
                   releases: dict[str, Release] | None = None, dest_root: Path | None = None) -> list[Path]:
    """`jitgemm spec import FILE.zip`: the same verification as fetch, for a zip obtained elsewhere."""
    rel = _release(release, releases)
    try:  # bounded by the pinned size: /dev/zero or a huge file is refused before a byte is read
        blob = read_bounded(path, rel.archive.size)
    except FileRefused as exc:
        raise SpecError(f"not the pinned archive of release {rel.name} ({rel.archive.size} bytes): "
                        f"{str(exc).split(': ', 1)[-1]}", path=os.fspath(path)) from None
    except OSError as exc:
        raise SpecError(f"cannot read archive: {exc.strerror or exc}", path=os.fspath(path)) from None
    return extract(blob, rel, os.fspath(path), dest_root)


def fetch(release: str | None = None, *, timeout: float = 30.0, releases: dict[str, Release] | None = None,
          dest_root: Path | None = None) -> list[Path]:
    """`jitgemm spec fetch`: download the pinned archive, verify, extract. Offline it fails at once."""
    rel = _release(release, releases)
    try:
        with urllib.request.urlopen(rel.url, timeout=timeout) as resp:  # noqa: S310 (pinned https URL)
            blob = resp.read(rel.archive.size + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SpecError(
            f"cannot download release {rel.name} from {rel.url}: {reason}. Without network access, download "
            f"{rel.url.rsplit('/', 1)[-1]} on another machine and run `jitgemm spec import FILE.zip` "
            f"(verified against the same size and sha256)") from None
    return extract(blob, rel, rel.url, dest_root)


def knows_every_opcode(spec) -> bool:
    """Whether `spec` lists every opcode of its architecture: AMD's whole file of a pinned release (its sha256 is
    a member's, specs/releases.yaml) or the subset jitgemm bundles (built to hold every opcode LLVM 22 decodes,
    tools/isa_subset). An excerpt, a crafted spec or a user's edited copy may lack opcodes the hardware has, so a
    word with an unknown opcode there is more likely a real instruction than data (the decoder keeps its
    encoding's size for those)."""
    from .sources import bundled_dir

    source = getattr(spec, "source", "") or ""
    if source:
        try:
            if Path(source).resolve().parent == bundled_dir().resolve():
                return True
        except OSError:
            pass
    sha = getattr(spec, "sha256", "") or ""
    if not sha:
        return False
    releases, _default = pinned_releases()
    return any(pin.sha256 == sha for r in releases.values() for pin in r.members.values())
