"""Where a spec comes from, and `load_spec`.

Order for a target id: an explicit path; `JITGEMM_ISA_SPEC_DIR`; the user cache (where
`jitgemm spec fetch`/`import` put official files); the subset bundled in `specs/`. `jitgemm spec info`
prints which one was used (`SpecLocation.origin`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from jitgemm.isa.errors import SpecError
from jitgemm.util import progress
from jitgemm.util.files import MAX_SPEC_BYTES, read_bounded, read_sealed, write_sealed

from .cache import cache_root, cannot_write, load_entry, load_entry_at, preparsed_path, store_entry
from .data import CorruptSpecData, build_spec
from .model import Spec
from .targets import TargetProfile, base_target, known_targets, note_spec_target, target_profile
from .xml_reader import read_xml

ENV_SPEC_DIR = "JITGEMM_ISA_SPEC_DIR"


@dataclass(frozen=True)
class SpecLocation:
    path: Path
    origin: str                 # "explicit path", "JITGEMM_ISA_SPEC_DIR", "user cache", "bundled subset"
    target: str | None = None


def official_dir() -> Path:
    """Folder of the official spec files that `jitgemm spec fetch`/`import` extracted."""
    return cache_root() / "isa-specs"


def bundled_dir() -> Path:
    return Path(str(resources.files("jitgemm.specs")))


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.lower().endswith(".xml") or Path(text).exists()


def _spec_in_dir(folder: Path, profile: TargetProfile | None) -> Path | None:
    if profile is not None:
        for name in (profile.spec_file, *profile.legacy_spec_files):
            if (folder / name).is_file():
                return folder / name
        return None
    found = sorted(folder.glob("amdgpu_isa_*.xml")) or sorted(folder.glob("*.xml"))
    if len(found) == 1:
        return found[0]
    names = ", ".join(p.name for p in found) or "none"
    raise SpecError(f"folder holds {len(found)} spec files ({names}); name the file, or a target id "
                    f"({', '.join(known_targets())})", path=str(folder))


_chosen: dict[str, Path] = {}


def use_spec_file(target: str, path: str | os.PathLike) -> SpecLocation:
    """Make `path` the spec of `target` for the rest of this process (the `--spec` option of `compile`, `run`,
    `select`): every later `load_spec(target)` — generators, selector, emulator, kernel-cache keys — uses it."""
    loc = locate_spec(Path(path))
    _chosen[base_target(target)] = loc.path
    return SpecLocation(loc.path, "--spec", base_target(target))


def chosen_specs() -> dict[str, Path]:
    """The spec files `use_spec_file` chose in this process, by target (jitgemm/warm.py takes its slow path
    while there are any)."""
    return dict(_chosen)


def locate_spec(arch_or_path: str | os.PathLike) -> SpecLocation:
    """Find the spec file for a target id or a path, without parsing it."""
    text = os.fspath(arch_or_path)
    if isinstance(arch_or_path, Path) or _looks_like_path(text):
        path = Path(text).expanduser()
        if path.is_dir():
            found = _spec_in_dir(path, None)
            return SpecLocation(found, "explicit path")  # type: ignore[arg-type]
        if not path.is_file():
            raise SpecError("no such spec file", path=text)
        return SpecLocation(path, "explicit path")
    profile = target_profile(text)
    target = base_target(text)
    chosen = _chosen.get(target)
    if chosen is not None:
        return SpecLocation(chosen, "--spec", target)
    env_dir = os.environ.get(ENV_SPEC_DIR)
    if env_dir:
        found = _spec_in_dir(Path(env_dir), profile)
        if found is not None:
            return SpecLocation(found, ENV_SPEC_DIR, target)
    releases = official_dir()
    if releases.is_dir():
        for release in sorted((p for p in releases.iterdir() if p.is_dir()), reverse=True):
            found = _spec_in_dir(release, profile)
            if found is not None:
                return SpecLocation(found, "user cache", target)
    if profile.bundled_spec:
        bundled = bundled_dir() / profile.bundled_spec
        if bundled.is_file():
            return SpecLocation(bundled, "bundled subset", target)
    raise SpecError(
        f"no ISA spec available for {target} ({profile.family}, file {profile.spec_file}): it is not bundled "
        f"and not in {releases} or ${ENV_SPEC_DIR}. Run `jitgemm spec fetch` (or `jitgemm spec import FILE.zip` "
        f"offline), or pass a spec file with `--spec PATH`")


_memo: dict[tuple[str, int, int], Spec] = {}
_sha_memo: dict[tuple[str, int, int], str] = {}


def spec_sha256(path: Path) -> str:
    """sha256 of a spec file, remembered per (path, size, mtime) in this process and in the cache folder, so
    a process that only needs the identity of the spec (a kernel-cache hit) does not hash megabytes."""
    import json

    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _sha_memo:
        return _sha_memo[key]
    index_path = cache_root() / "parsed-specs" / "sha256-index.sealed.json"
    try:  # sealed: a corrupt index must not name another spec's sha256 (and so another spec's kernels)
        index = json.loads(read_sealed(index_path) or b"{}")
    except ValueError:
        index = {}
    entry = index.get(key[0]) if isinstance(index, dict) else None
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == [st.st_size, st.st_mtime_ns]:
        sha = str(entry[2])
    else:
        sha = hashlib.sha256(_read_spec_bytes(path)).hexdigest()
        index = index if isinstance(index, dict) else {}
        index[key[0]] = [st.st_size, st.st_mtime_ns, sha]
        try:
            write_sealed(index_path, json.dumps(index).encode())
        except OSError as exc:
            cannot_write(index_path.parent, exc)
    _sha_memo[key] = sha
    return sha
_memo_lock = threading.Lock()


def _read_spec_bytes(path: Path) -> bytes:
    """A spec file's bytes, refused by size or type before reading (`/dev/zero` is not a spec)."""
    try:
        return read_bounded(path, MAX_SPEC_BYTES)
    except OSError as exc:
        raise SpecError(f"cannot read spec file: {exc.strerror or str(exc).split(': ', 1)[-1]}",
                        path=str(path)) from None


def profile_gaps(data: dict, located: str | None = None) -> list[str]:
    """Warnings for the facts the target profile of the spec's family says LLVM encodes and AMD's files may
    lack (`spec_gaps`: an instruction by name, or an encoding whose identifiers must recognise a word).
    `located`: the target the spec was located for; when its profile's family is the spec's architecture, the
    other profiles are not read (each is a YAML parse in a new process, issue 31)."""
    from .targets import target_for_architecture

    arch = str((data.get("architecture") or {}).get("name") or "")
    target = _family_target(arch, located) or target_for_architecture(arch)
    if target is None:
        return []
    from .data import instruction_heads

    names = set()
    for name, aliases, _opcodes in instruction_heads(data):   # heads only: no instruction record is unpacked
        names.add(str(name).upper())
        names.update(str(a).upper() for a in aliases)
    encodings = {e["name"]: e for e in data.get("encodings") or ()}
    out = []
    for gap in target_profile(target).get("spec_gaps") or ():
        note = " ".join(str(gap.get("note", "")).split())
        if "instruction" in gap and str(gap["instruction"]).upper() not in names:
            out.append(f"{target}: the spec has no instruction {gap['instruction']} ({note})")
        elif "encoding" in gap and gap["encoding"] in encodings:
            enc = encodings[gap["encoding"]]
            word = sum(int(d) << (32 * i) for i, d in enumerate(gap.get("dwords") or ()))
            if not any((word & enc["mask"]) == ident for ident in enc["ids"]):
                out.append(f"{target}: encoding {gap['encoding']}'s identifiers do not match "
                           f"{' '.join(f'{int(d):08X}' for d in gap['dwords'])} ({note})")
    return out


def _family_target(architecture_name: str, located: str | None) -> str | None:
    """`located` when its profile's family is the spec's ArchitectureName (what `target_for_architecture` finds
    by reading every profile), else None."""
    wanted = architecture_name.strip().lower().removeprefix("amd ").strip()
    if located is not None and target_profile(located).family.strip().lower() == wanted:
        return located
    return None


def _with_gaps(data: dict, located: str | None = None) -> dict:
    """The spec data with the profile's gap warnings added (not cached: a profile may learn more gaps)."""
    try:
        gaps = profile_gaps(data, located)
    except (KeyError, TypeError, ValueError, AttributeError):  # malformed data is build_spec's to report
        gaps = []
    return {**data, "warnings": list(data.get("warnings") or ()) + gaps} if gaps else data


def load_spec_file(path: Path, *, use_cache: bool = True, located: str | None = None) -> Spec:
    """Parse (or fetch from the parsed-spec cache) one spec file (`located`: the target it was found for)."""
    path = Path(path)
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise SpecError(f"cannot read spec file: {exc.strerror or exc}", path=str(path)) from None
    with _memo_lock:
        hit = _memo.get(key)
    if hit is not None:
        return hit
    # The XML's identity from the sealed (path, size, mtime) -> sha256 index: a process that finds the parsed
    # form reads neither the XML nor hashes its megabytes (the kernel cache trusts the same index).
    sha = spec_sha256(path) if use_cache else None
    raw = None
    spec = None
    if use_cache:   # the parsed form shipped beside a bundled XML (a fresh install), else the user cache
        for source in (lambda: load_entry_at(preparsed_path(path), sha), lambda: load_entry(sha)):
            data = source()
            if data is not None:
                try:
                    spec = build_spec(_with_gaps(data, located), str(path))
                    break
                except CorruptSpecData:
                    spec = None
    if spec is None:
        raw = _read_spec_bytes(path)
        with progress.task(f"parsing spec {path.name} (first use; cached afterwards)"):
            data = read_xml(path, raw)
        spec = build_spec(_with_gaps(data, located), str(path))
        if use_cache:
            store_entry(data)
    arch = getattr(getattr(spec, "architecture", None), "name", None)
    if arch and _family_target(str(arch), located):
        note_spec_target(spec, str(located))     # target_of_spec reads no other profile for it
    with _memo_lock:
        _memo[key] = spec
    return spec


def load_spec(arch_or_path: str | os.PathLike = "gfx942", *, use_cache: bool = True) -> Spec:
    """The ISA spec for a target id (`gfx942`, `gfx950`, `gfx1100`, `gfx1201`, with or without
    `:feature` suffixes) or for a spec file/folder path. Immutable and shared: repeated calls are free."""
    where = locate_spec(arch_or_path)
    return load_spec_file(where.path, use_cache=use_cache, located=where.target)
