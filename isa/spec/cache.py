"""The parsed-spec cache: the plain-data form of a spec, msgpack-encoded, keyed by the XML's sha256.

Parsing the official 8 MB XML takes a noticeable fraction of a second; every jitgemm process needs the
spec, so the parsed form is kept on disk. Entries are never trusted: each file is sealed with the sha256 of its
payload (`files.seal`, checked on every load, so a flipped bit is a rebuild and not a wrong opcode), the header
must name this format and the same XML sha256, and anything that fails to decode or build is rebuilt (and
rewritten atomically).

Layout (`LAYOUT` 2): each instruction's record is packed on its own, and beside the records every instruction's
head (name, aliases, (encoding, opcode) pairs). Loading unpacks the heads and the small tables; an instruction's
record (most of the bytes: descriptions) is unpacked when the spec first builds that instruction
(`instruction_table.InstructionTable`), so a process that disassembles one kernel reads 50 records, not 1,150.
The seal covers the whole file, records included, before anything is used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from jitgemm.util.files import atomic_write, read_sealed, seal

MAGIC = "jitgemm-parsed-spec"
LAYOUT = 2   # 2: instruction records packed one by one, with their heads beside them (see the module docstring)
_BIG_INT = 1  # msgpack extension type: an int beyond 64 bits (128-bit encodings' masks and identifiers)


def _widen(value):
    """`value` with every int that msgpack cannot hold (beyond 64 bits) as an extension object."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -(1 << 63) <= value < (1 << 64):
            return value
        import msgpack

        return msgpack.ExtType(_BIG_INT, value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True))
    if isinstance(value, dict):
        return {k: _widen(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_widen(v) for v in value]
    return value


def _ext_hook(code: int, data: bytes):
    if code == _BIG_INT:
        return int.from_bytes(data, "little", signed=True)
    import msgpack

    return msgpack.ExtType(code, data)


def pack(obj) -> bytes:
    """msgpack bytes of plain data whose ints may exceed 64 bits (CDNA 4's 128-bit ENC_VOP3PX2 masks and
    identifiers); every cache of spec-derived numbers should pack with this and read with `unpack`. msgpack loads
    here, not with the module: `cache_root` is on the path of a disk-cache hit, which packs nothing."""
    import msgpack

    try:
        return msgpack.packb(obj, use_bin_type=True)
    except OverflowError:
        return msgpack.packb(_widen(obj), use_bin_type=True)


def unpack(raw: bytes):
    """Inverse of `pack` (msgpack errors propagate: the caller treats them as a corrupt entry)."""
    import msgpack

    return msgpack.unpackb(raw, raw=False, strict_map_key=False, ext_hook=_ext_hook)


def cache_root() -> Path:
    """`JITGEMM_CACHE_DIR`, else `$XDG_CACHE_HOME/jitgemm`, else `~/.cache/jitgemm`."""
    env = os.environ.get("JITGEMM_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "jitgemm"


def entry_path(sha256: str) -> Path:
    """Where the parsed form of the spec XML with this sha256 is cached."""
    return cache_root() / "parsed-specs" / f"{sha256}.sealed.msgpack"   # never the unsealed files of older versions


def preparsed_path(xml_path: Path) -> Path:
    """The parsed form shipped beside a bundled spec XML (`<name>.xml.parsed`: committed in the source tree by
    tools/spec_preparse/build.py, rewritten when the wheel is built by setup.py): the first compile of a fresh
    clone or install needs no XML parse. Verified exactly like a cache entry, so a stale one is never used."""
    return xml_path.with_name(xml_path.name + ".parsed")


def load_entry(sha256: str) -> dict | None:
    """Plain spec data for this sha256 from the user cache, or None when absent, corrupt or stale."""
    return load_entry_at(entry_path(sha256), sha256)


class PackedRecords(Sequence):
    """A cache entry's instruction records: record i is unpacked each time it is asked for (the instruction
    table asks once per instruction). A record that does not unpack raises ValueError."""

    __slots__ = ("_packed",)

    def __init__(self, packed: list[bytes]) -> None:
        self._packed = packed

    def __len__(self) -> int:
        return len(self._packed)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [unpack(p) for p in self._packed[index]]
        try:
            return unpack(self._packed[index])
        except IndexError:
            raise
        except Exception as exc:   # msgpack's several error types
            raise ValueError(f"instruction record {index} does not unpack: {exc}") from None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (PackedRecords, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None   # type: ignore[assignment]


def load_entry_at(path: Path, sha256: str) -> dict | None:
    """Plain spec data from a sealed entry file, or None when absent, corrupt, or not the XML with this sha256.

    `data["instructions"]` is a `PackedRecords` (each record unpacked on use) and `data["instruction_heads"]`
    the heads stored beside them; both are checked for shape here, the records' contents when first built."""
    raw = read_sealed(path)
    if raw is None:
        return None
    try:
        entry = unpack(raw)
    except Exception:  # msgpack raises several unrelated types on garbage; all mean "corrupt"
        return None
    from .xml_reader import DATA_FORMAT_VERSION  # here: `cache_root` alone (a disk-cache hit) needs no reader

    if not isinstance(entry, dict) or entry.get("magic") != MAGIC or entry.get("format") != DATA_FORMAT_VERSION \
            or entry.get("layout") != LAYOUT:
        return None
    data = entry.get("data")
    if entry.get("sha256") != sha256 or not isinstance(data, dict) or data.get("sha256") != sha256:
        return None
    records, heads = data.get("instructions"), data.get("instruction_heads")
    if not (isinstance(records, list) and isinstance(heads, list) and len(records) == len(heads)
            and all(isinstance(r, bytes) for r in records)
            and all(isinstance(h, list) and len(h) == 3 and isinstance(h[1], list) and isinstance(h[2], list)
                    and all(isinstance(p, list) and len(p) == 2 for p in h[2]) for h in heads)):
        return None
    return {**data, "instructions": PackedRecords(records)}


def pack_entry(data: dict) -> bytes:
    """The sealed file content for plain spec data (the user cache and the wheel's pre-parsed spec alike)."""
    from .data import instruction_heads

    records = data["instructions"]
    stored = {**data,
              "instructions": [pack(r) for r in records] if not isinstance(records, PackedRecords) else records._packed,
              "instruction_heads": [[n, list(a), [list(p) for p in pairs]] for n, a, pairs in instruction_heads(data)]}
    from .xml_reader import DATA_FORMAT_VERSION

    payload = pack({"magic": MAGIC, "format": DATA_FORMAT_VERSION, "layout": LAYOUT, "sha256": data["sha256"],
                    "data": stored})
    return seal(payload)


def store_entry(data: dict) -> Path | None:
    """Write atomically (temp file + rename); a read-only or full cache is not an error, just no cache (said once
    per process: `cannot_write`)."""
    path = entry_path(data["sha256"])
    try:
        atomic_write(path, pack_entry(data))
    except OSError as exc:
        cannot_write(path.parent, exc)
        return None
    return path


def cannot_write(folder: Path, exc: OSError) -> None:
    """Tell the user once per process that the parsed-spec cache folder takes no writes: the work goes on, but every
    process parses (or hashes) the spec XML again, a cost the user should be able to trace to its cause."""
    from jitgemm.util.cache_notice import notice

    notice(f"parsed-spec cache {folder}: cannot write ({exc.strerror or exc}); running without it (each process "
           "reads the spec XML again)")


def write_preparsed(xml_path: Path, out_path: Path | None = None) -> Path:
    """Parse a spec XML and write its sealed parsed form (by default beside it, see `preparsed_path`)."""
    from .xml_reader import read_xml

    out = out_path or preparsed_path(xml_path)
    atomic_write(out, pack_entry(read_xml(xml_path)))
    os.chmod(out, 0o644)   # shipped data (a wheel, a checkout), read by every user; a cache entry stays private
    return out
