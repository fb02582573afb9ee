"""The parsed-spec cache: the plain-data form of a spec, msgpack-encoded, keyed by the XML's sha256.

Parsing the official 8 MB XML takes a noticeable fraction of a second; every jitgemm process needs the
spec, so the parsed form is kept on disk. Entries are never trusted: each file is sealed with the sha256 of its
payload (`files.seal`, checked on every load, so a flipped bit is a rebuild and not a wrong opcode), the header
must name this format and the same XML sha256, and anything that fails to decode or build is rebuilt (and
rewritten atomically).
"""

from __future__ import annotations

import os
from pathlib import Path

import msgpack

from .files import read_sealed, write_sealed
from .xml_reader import DATA_FORMAT_VERSION

MAGIC = "jitgemm-parsed-spec"


def cache_root() -> Path:
    """`JITGEMM_CACHE_DIR`, else `$XDG_CACHE_HOME/jitgemm`, else `~/.cache/jitgemm`."""
    env = os.environ.get("JITGEMM_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "jitgemm"


def entry_path(sha256: str) -> Path:
    """Where the parsed form of the spec XML with this sha256 is cached."""
    return cache_root() / "parsed-specs" / f"{sha256}.msgpack"


def load_entry(sha256: str) -> dict | None:
    """Plain spec data for this sha256, or None when absent, corrupt or stale."""
    raw = read_sealed(entry_path(sha256))
    if raw is None:
        return None
    try:
        entry = msgpack.unpackb(raw, raw=False, strict_map_key=False)
    except Exception:  # msgpack raises several unrelated types on garbage; all mean "corrupt"
        return None
    if not isinstance(entry, dict) or entry.get("magic") != MAGIC or entry.get("format") != DATA_FORMAT_VERSION:
        return None
    data = entry.get("data")
    if entry.get("sha256") != sha256 or not isinstance(data, dict) or data.get("sha256") != sha256:
        return None
    return data


def store_entry(data: dict) -> Path | None:
    """Write atomically (temp file + rename); a read-only or full cache is not an error, just no cache."""
    path = entry_path(data["sha256"])
    payload = msgpack.packb({"magic": MAGIC, "format": DATA_FORMAT_VERSION, "sha256": data["sha256"],
                             "data": data}, use_bin_type=True)
    try:
        write_sealed(path, payload)
    except OSError:
        return None
    return path
