"""The aiter inventory: `inventory(wheel_or_dir)` reads a release (the wheel or
its files), makes one contract per GEMM kernel from the family descriptions (`specs/aiter/families/*.yaml`) and
lists, for every code object no description covers, why it is left out; `.tuned_rows` are aiter's measured
tuning tables (`specs/aiter/release.yaml` says how each reads). `use_aiter()` offers the admitted kernels to the
selector and the tables to the tuning database.

The release is read as it is: nothing here knows a family, a tile or an argument offset. A new aiter family is
a new YAML file beside the others."""

from __future__ import annotations

import csv
import fnmatch
import functools
import hashlib
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jitgemm.util.safe_yaml import load_yaml

from .families import Family, FamilyError, contract_data, families, listing_rows
from .source import HSA, AiterSource


@functools.cache
def release_spec() -> Mapping[str, Any]:
    """specs/aiter/release.yaml: devices, GEMM object patterns, tuning tables."""
    text = resources.files("jitgemm.specs").joinpath("aiter/release.yaml").read_text(encoding="utf-8")
    return load_yaml(text)


def device_of(cu_num: int | None) -> tuple[str, str] | None:
    """(device name, arch) of the GPU an aiter table's `cu_num` names, from the target profiles' devices
    (`TargetProfile.device`, interface 3), or None when no profile of release.yaml's `targets` has one."""
    if cu_num is None:
        return None
    from jitgemm.isa.errors import IsaError
    from jitgemm.isa.spec import targets

    for arch in release_spec()["targets"]:
        try:
            dev = targets.target_profile(arch).device(int(cu_num))
        except (IsaError, KeyError, ValueError, LookupError):
            continue
        if dev is not None:
            return str(getattr(dev, "name", dev)), arch
    return None


@dataclass
class AiterKernel:
    """One GEMM code object of the release: admitted (`contract` set) or refused (`refusal` says why)."""

    family: str | None
    arch: str
    name: str                     # the kernel symbol in the code object
    file: str                     # path under aiter_meta/hsa/
    where: str                    # the wheel member or file, for messages
    code: bytes = field(repr=False, default=b"")
    contract: Any = None          # jitgemm.contract.Contract when admitted
    tile: tuple[int, int] | None = None
    split_k: bool = False         # the kernel can split K (its listing's splitK flag)
    preshuffle: bool = False      # B pre-shuffled (its listing's bpreshuffle flag)
    refusal: str | None = None

    @property
    def admitted(self) -> bool:
        return self.contract is not None

    @property
    def label(self) -> str:
        """Unique within a release: arch/file-stem (two objects may share a symbol)."""
        return f"{self.arch}/{Path(self.file).stem}"

    @property
    def code_object(self) -> bytes:
        """The object's bytes (the name jitgemm.timing.predict and the runtimes read)."""
        return self.code

    @property
    def code_sha256(self) -> str:
        return hashlib.sha256(self.code).hexdigest() if self.code else ""


@dataclass(frozen=True)
class TunedRow:
    """One row of an aiter tuning table: a kernel's measured time for one shape on one GPU."""

    table: str
    line: int
    arch: str | None
    cu_num: int | None
    device: str | None
    m: int
    n: int
    k: int
    batch: int
    split_k: int
    us: float
    kernel_name: str
    library: str                  # asm (an aiter assembly kernel) or another library: ck, hipblaslt, skinny, ...
    asm: bool
    family: str | None            # the family of an asm winner that the inventory holds
    kernel_label: str | None      # that kernel's AiterKernel.label
    problem: Any = None           # GemmProblem, or None when the IR cannot express the table's operation yet
    problem_text: str = ""
    unexpressed: str = ""         # why `problem` is None
    caveat: str = ""              # what the table does not say about this row (no device), or why it is no measurement
    measured: bool = True         # False: a time release.yaml marks as copied (kept as a labelled fact only)


@dataclass
class Inventory:
    source: str
    version: str
    kernels: list[AiterKernel]
    tuned_rows: list[TunedRow]
    tables: dict[str, str]        # table -> "read N rows" or why it was skipped

    def admitted(self, arch: str | None = None) -> list[AiterKernel]:
        return [k for k in self.kernels if k.admitted and (arch is None or k.arch == arch)]

    def refused(self, arch: str | None = None) -> list[AiterKernel]:
        return [k for k in self.kernels if not k.admitted and (arch is None or k.arch == arch)]

    def kernel(self, label: str) -> AiterKernel:
        for k in self.kernels:
            if k.label == label:
                return k
        raise KeyError(label)


def _gemm_objects(files: list[str]) -> list[str]:
    spec = release_spec()["gemm_objects"]
    out = []
    for rel in files:
        if not rel.endswith(".co"):
            continue
        parts = rel.split("/")
        if len(parts) == 3 and parts[1] in spec["folders"]:
            out.append(rel)
        elif len(parts) == 2 and any(fnmatch.fnmatch(parts[1], pat) for pat in spec["top_level"]):
            out.append(rel)
    return out


def _admit(kernel: AiterKernel, fam: Family, row: Mapping[str, Any], version: str) -> None:
    from jitgemm.codegen import codeobj

    from ..contract import Contract, ContractError

    try:
        obj = codeobj.read(kernel.code)
    except Exception as exc:  # noqa: BLE001 - any unreadable object is a refusal with its reason
        kernel.refusal = f"code object does not read: {exc}"
        return
    meta = next((k for k in obj.kernels if k.name == kernel.name), None)
    if meta is None:
        kernel.refusal = (f"{fam.path}: the listing names kernel {kernel.name!r}, the object has "
                          f"{[k.name for k in obj.kernels]}")
        return
    try:
        data = contract_data(fam, kernel.arch, row, kernel.code_sha256, version)
        contract = Contract.load(data, f"{fam.path} [{kernel.label}]")
        contract.check_metadata(meta.metadata)
        _no_pads(contract, meta.metadata)
    except (ContractError, FamilyError) as exc:
        kernel.refusal = f"the family description does not make a valid contract: {exc}"
        return
    kernel.contract = contract


def _no_pads(contract, metadata: Mapping[str, Any]) -> None:
    """aiter's objects name their pad slots `pad` in the metadata: a value the family puts on a pad is a wrong
    fact (an offset off its 16-byte slot), refused."""
    from ..contract import ContractError

    pads = {int(a[".offset"]) for a in metadata.get(".args", []) if a.get(".name") == "pad"}
    for arg in contract.args:
        if arg["offset"] in pads:
            raise ContractError(f"{contract.source}: abi.args {arg['name']} at offset {arg['offset']} lands on a pad "
                                f"of the object's metadata")


def _read_kernels(src: AiterSource, version: str) -> list[AiterKernel]:
    files = src.hsa_files()
    present = set(files)
    claimed: set[str] = set()
    kernels: list[AiterKernel] = []
    csv_text: dict[str, str | None] = {}

    def read_csv(rel: str) -> str | None:
        if rel not in csv_text:
            csv_text[rel] = src.hsa_bytes(rel).decode("utf-8", "replace") if rel in present else None
        return csv_text[rel]

    for fam in families():
        for arch in fam.archs:
            rows, listing = listing_rows(fam, arch, read_csv)
            folder = listing.rsplit("/", 1)[0] if listing else arch
            for row in rows:
                rel = f"{folder}/{row['file']}"
                k = AiterKernel(fam.name, arch, str(row["name"]), rel, src.where(HSA, rel),
                                tile=(int(row.get("tile_m", 0)), int(row.get("tile_n", 0))),
                                split_k=bool(int(row.get("split_k", 0) or 0)),
                                preshuffle=bool(int(row.get("preshuffle", 0) or 0)))
                if rel not in present:
                    k.refusal = f"{fam.path}: listed in {listing or 'the family rows'} but absent from the release"
                    kernels.append(k)
                    continue
                claimed.add(rel)
                k.code = src.hsa_bytes(rel)
                _admit(k, fam, row, version)
                kernels.append(k)
    for rel in _gemm_objects(files):
        if rel in claimed:
            continue
        code = src.hsa_bytes(rel)
        arch = rel.split("/")[0]
        try:
            from jitgemm.codegen import codeobj

            names = [k.name for k in codeobj.read(code).kernels]
        except Exception:  # noqa: BLE001
            names = ["?"]
        for name in names:
            kernels.append(AiterKernel(None, arch, name, rel, src.where(HSA, rel), code,
                                       refusal="no family description covers this GEMM object (add a file to "
                                               "specs/aiter/families/ stating its KernelArgs, launch, legality "
                                               "and operation from aiter's host source)"))
    return kernels


def _torch(name: str) -> str:
    return release_spec()["torch"].get(name.strip(), name.strip())


def _problem(op: Mapping[str, Any], row: Mapping[str, str], m: int, n: int, k: int) -> tuple[Any, str, str]:
    """(GemmProblem or None, its text, why None)."""
    from jitgemm.codegen.gemm_ir import GemmProblem, IRError

    from .families import _substitute

    fields = {key: _torch(v) for key, v in row.items() if key and v is not None}
    try:
        o = _substitute(dict(op), fields, "operation")
    except FamilyError as exc:
        return None, f"m={m} n={n} k={k}", str(exc)
    kwargs = {key: v for key, v in o.items() if key not in ("a", "b", "d")}
    if "batch" in kwargs:
        kwargs["batch"] = int(kwargs["batch"])
    text = f"m={m} n={n} k={k} " + " ".join(f"{key}={v}" for key, v in o.items())
    try:
        p = GemmProblem.make(m, n, k, o["a"], o.get("b"), o.get("d"), **kwargs)
    except TypeError as exc:
        return None, text, f"the IR has no field for this operation yet ({exc})"
    except (IRError, ValueError) as exc:
        return None, text, str(exc)
    from ..tuning_db import problem_key

    return p, problem_key(p), ""


def _read_tables(src: AiterSource, kernels: list[AiterKernel]) -> tuple[list[TunedRow], dict[str, str]]:
    spec = release_spec()
    prefix = spec["asm_prefix"]
    by_name: dict[tuple[str, str], AiterKernel] = {}
    for kern in kernels:
        by_name.setdefault((kern.arch, kern.name), kern)
        by_name.setdefault((kern.arch, Path(kern.file).stem), kern)
    present = set(src.config_files())
    rows: list[TunedRow] = []
    status: dict[str, str] = {}
    described = {t["file"] for t in spec["tables"]}
    for rel in sorted(present):
        if rel.endswith(".csv") and "tuned" in rel.replace("untuned", "") and rel not in described:
            status[rel] = spec.get("skip", {}).get(rel, "no description in specs/aiter/release.yaml: not read")
    for table in spec["tables"]:
        rel = table["file"]
        if rel not in present:
            continue
        text = src.config_bytes(rel).decode("utf-8", "replace")
        count = copies = 0
        first_with: dict[float, tuple[int, tuple[int, int, int]]] = {}   # time -> (line, shape) of its first row
        for line, raw in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            raw = {(key or "").strip(): (v or "").strip() for key, v in raw.items()}
            try:
                m, n, k = int(raw["M"]), int(raw["N"]), int(raw["K"])
                us = float(raw["us"])
            except (KeyError, ValueError):
                continue
            cu = int(raw["cu_num"]) if raw.get("cu_num", "").isdigit() else None
            dev = device_of(cu)
            arch = table.get("arch") or (dev[1] if dev else None)
            name = raw.get("kernelName", "")
            if not name:
                for rule in table.get("kernel", []):
                    if all(raw.get(c) == v for c, v in rule.get("when", {}).items()):
                        name = rule["name"]
                        break
            split = int(float(raw.get("splitK") or 0))
            if table.get("split_k_log2"):
                split = 1 << split
            owner = by_name.get((arch or "", name))
            asm = name.startswith(prefix) or owner is not None
            library = "asm" if asm else str(table.get("library", "")).format(**raw) or "unknown"
            op = {**table["operation"], **(table.get("asm_operation", {}) if asm else {})}
            problem, ptext, why = _problem(op, raw, m, n, k)
            batch = int(raw["B"]) if raw.get("B", "").isdigit() else 1
            caveats, measured = [], True
            if "cu_num" not in raw:
                caveats.append(table.get("device_note", "the table has no cu_num column: no device"))
            seen = first_with.setdefault(us, (line, (m, n, k)))
            if table.get("repeated_times") == "copies" and seen[1] != (m, n, k):
                measured = False
                caveats.append(f"time copied: {us} us is line {seen[0]}'s (M={seen[1][0]} N={seen[1][1]} "
                               f"K={seen[1][2]}), not a measurement of this shape")
                copies += 1
            rows.append(TunedRow(rel, line, arch, cu, dev[0] if dev else None, m, n, k, batch, max(split, 1), us,
                                 owner.name if owner else name, library, asm,
                                 owner.family if owner else None, owner.label if owner else None, problem, ptext,
                                 why, "; ".join(caveats), measured))
            count += 1
        status[rel] = f"read {count} rows" + (f" ({table['device_note']})" if table.get("device_note") else "") + \
            (f"; {copies} rows repeat an earlier row's time for another shape: labelled copies, not imported as "
             "measurements" if copies else "")
    return rows, status


@functools.lru_cache(maxsize=4)
def _inventory(path: str, stamp: tuple) -> Inventory:
    src = AiterSource(path)
    version = src.version
    kernels = _read_kernels(src, version)
    rows, tables = _read_tables(src, kernels)
    return Inventory(str(path), version, kernels, rows, tables)


def inventory(wheel_or_dir: str | os.PathLike) -> Inventory:
    """Every GEMM kernel of an aiter release (admitted with its contract, or refused with the reason) and its
    tuning tables' rows. `wheel_or_dir`: the amd-aiter wheel, the unpacked wheel, or its aiter_meta/hsa folder."""
    p = Path(wheel_or_dir).resolve()
    try:
        st = p.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = ()
    return _inventory(str(p), stamp)
