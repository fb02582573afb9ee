"""Reading and writing cache and data files so that a reader never sees a half-written, oversized or corrupt one.

Three rules every cache in the project follows through these helpers:
- writes are atomic (temporary file + rename), so a crash leaves the old entry or the new one, never half;
- reads are bounded: the size is checked (stat) before a byte is read, so `/dev/zero`, a FIFO, or a 1 GiB file
  placed where a cache entry or a spec should be is refused instead of filling memory;
- cache entries are sealed: a header names the format and the sha256 of the payload, checked on every load, so a
  flipped bit costs a rebuild, never a wrong answer (a corrupt parsed spec once turned v_add_u32 into v_sub_u32).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

SEAL_MAGIC = b"jitgemm-sealed-v1 sha256="
_DIGEST_HEX = 64

# Upper bounds for what a reader accepts. AMD's largest official spec (CDNA4) is 8.7 MB; its parsed form is
# smaller. Anything far beyond that is not one of our files.
MAX_SPEC_BYTES = 64 << 20
MAX_CACHE_BYTES = 256 << 20
MAX_SOURCE_BYTES = 256 << 20  # an assembly file pulled in by .include


class FileRefused(OSError):
    """A file that is not read at all: not a regular file, or larger than the reader's limit."""


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over `path` (atomic on POSIX). The folder is
    created when missing; OSError propagates so callers decide whether a failed write matters."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def require_regular(path: str | os.PathLike) -> None:
    """Raise FileRefused unless `path` (followed through symlinks) is a regular file; FileNotFoundError when
    absent. For files another library opens (sqlite3 on a FIFO blocks forever in open())."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{os.fspath(path)}: not a regular file")


def read_bounded(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. Refuses (FileRefused, an OSError) before reading:
    a device such as /dev/zero, a FIFO, a folder, or a file over the limit; a file that grows past the limit
    while being read is refused too. The file is opened without blocking and judged by fstat of what was
    opened, so a FIFO swapped in after a check cannot block the reader. Other OSErrors propagate."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)   # follows symlinks: a cache entry linked to /dev/zero is judged by its target
    except IsADirectoryError:
        raise FileRefused(f"{os.fspath(path)}: not a regular file (a folder)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileRefused(f"{os.fspath(path)}: not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > limit:
            raise FileRefused(f"{os.fspath(path)}: {_size_text(st.st_size)}, over the {_size_text(limit)} limit")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{os.fspath(path)}: more than {_size_text(limit)} (it grew while being read)")
    return data


_SMALL = 1 << 20


def sha256_hex(data: bytes) -> str:
    """The sha256 of `data` in hex. hashlib (OpenSSL's libcrypto) costs a new process ~2.5 ms of CPU to load; while
    nothing has loaded it yet, a small payload (a disk-cache hit's few records) is hashed by CPython's built-in
    implementation instead (`_sha2` from 3.12, `_sha256` before: hashlib's own fallback, the same digests). Large
    payloads (parsed specs) and processes that have hashlib already use hashlib, which is faster per byte."""
    if len(data) < _SMALL and "hashlib" not in sys.modules:
        for name in ("_sha2", "_sha256"):
            try:
                return __import__(name).sha256(data).hexdigest()
            except (ImportError, AttributeError):
                continue
    import hashlib

    return hashlib.sha256(data).hexdigest()


def seal(payload: bytes) -> bytes:
    """`payload` behind a header carrying its sha256 (see `unseal`)."""
    return SEAL_MAGIC + sha256_hex(payload).encode() + b"\n" + payload


def unseal(blob: bytes) -> bytes | None:
    """The payload of a sealed blob, or None when the header is missing or the payload's hash differs."""
    head = len(SEAL_MAGIC)
    if not blob.startswith(SEAL_MAGIC) or blob[head + _DIGEST_HEX:head + _DIGEST_HEX + 1] != b"\n":
        return None
    payload = blob[head + _DIGEST_HEX + 1:]
    if sha256_hex(payload).encode() != blob[head:head + _DIGEST_HEX]:
        return None
    return payload


def write_sealed(path: Path, payload: bytes) -> None:
    """Atomically write a sealed cache entry; OSError propagates."""
    atomic_write(path, seal(payload))


def read_sealed(path: Path, limit: int = MAX_CACHE_BYTES) -> bytes | None:
    """The payload of a sealed cache entry, or None when it is absent, unreadable, refused by size or type, or
    fails its hash: every one of those means "rebuild"."""
    try:
        blob = read_bounded(path, limit)
    except OSError:
        return None
    return unseal(blob)
