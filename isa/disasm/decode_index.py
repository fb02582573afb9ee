"""The decoder's identifier index, cached on disk per spec and per version of the code that builds forms.

To find the form of a machine word the decoder groups every (instruction, encoding) form of the spec by its
identifier mask and the identifier bits under it. Building that index means building all ~2,450 forms of the
official spec, about a second of Python, in every process that disassembles anything: most of
`jitgemm disasm FILE.co`'s time. The index itself is small: for each mask, identifier value -> the
(instruction, encoding) coordinates of the candidate forms, in the order the decoder tries them. Cached, a new
process builds only the forms the words it meets actually use (see `forms.SpecForms`).

An entry is keyed by the spec's sha256 and a fingerprint of the isa package's source (a change to how forms are
built or ordered can never meet an index made by older code), sealed with the sha256 of its payload
(`files.seal`), and checked for shape on load; anything wrong is rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from jitgemm.util.files import read_sealed, write_sealed

FORMAT = 1


@functools.cache
def source_fingerprint() -> str:
    """sha256 of the isa package's Python source (what decides which forms exist and in what order)."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def index_path(spec_sha256: str) -> Path:
    from jitgemm.isa.spec.cache import cache_root

    return cache_root() / "decode-index" / f"{spec_sha256}-{source_fingerprint()[:16]}.msgpack"


def _valid(data: object, spec_sha256: str) -> bool:
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("spec") != spec_sha256:
        return False
    if data.get("source") != source_fingerprint() or not isinstance(data.get("max_size"), int):
        return False
    masks, by_top = data.get("masks"), data.get("by_top")
    if not isinstance(masks, list) or not isinstance(by_top, list):
        return False
    for entry in masks:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], list)):
            return False
        for row in entry[1]:
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], list)
                    and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) for x in p)
                            for p in row[1])):
                return False
    return all(isinstance(t, list) and len(t) == 2 and isinstance(t[0], int) and isinstance(t[1], list)
               and all(isinstance(i, int) and 0 <= i < len(masks) for i in t[1]) for t in by_top)


def load(spec_sha256: str) -> dict | None:
    """The cached index of a spec (plain data, as `store` wrote it), or None when absent, corrupt or stale."""
    from jitgemm.isa.spec.cache import unpack

    raw = read_sealed(index_path(spec_sha256))
    if raw is None:
        return None
    try:
        data = unpack(raw)
    except Exception:   # msgpack raises several unrelated types on garbage; all mean "corrupt"
        return None
    return data if _valid(data, spec_sha256) else None


def store(spec_sha256: str, data: dict) -> None:
    """Write the index atomically; a read-only or full cache only costs the next process the full build."""
    from jitgemm.isa.spec.cache import pack

    full = {**data, "format": FORMAT, "spec": spec_sha256, "source": source_fingerprint()}
    try:
        write_sealed(index_path(spec_sha256), pack(full))
    except OSError:
        pass
