"""Reading a GFA kernel: its `custom.config` (from a `.s` file's `.amdgpu_metadata` block, or a code object's
metadata note), completed by the CustomKernel / ProblemType / predicates of a Tensile test or logic YAML, its
origin's `manifest.yaml` entry, and its target.

Layout and rules restated from hipBLASLt (ROCm/rocm-libraries, projects/hipblaslt/tensilelite/Tensile):
CustomKernels.py @ 0132ec78 reads the YAML between `---` and `...` of the `.s` and takes its `custom.config`;
CustomKernels/README.md @ 3b85eda1: the test/logic YAML's ProblemType, MatrixInstruction and tuning state are
merged on top of `custom.config`; an origin folder's manifest.yaml (MetaVersion 1) gives Source, Target.ISA and
per kernel Version, ContentHash and Features.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from jitgemm.isa.errors import IsaError
from jitgemm.util.safe_yaml import load_yaml


class GfaError(IsaError):
    """A GFA kernel or file jitgemm cannot read: the message names the file, the key path and what is accepted."""


@functools.cache
def gfa_data() -> dict:
    """specs/gfa.yaml: what every GFA name means in jitgemm's contract."""
    return load_yaml(resources.files("jitgemm.specs").joinpath("gfa.yaml").read_text(encoding="utf-8"))


@dataclass
class GfaKernel:
    """One GFA kernel as read: `config` is the merged custom.config; `code` the code object (a `.s` is
    assembled by jitgemm's assembler on first use)."""

    name: str
    path: Path
    target: str
    config: dict
    manifest: dict = field(default_factory=dict)
    problem_sizes: list = field(default_factory=list)   # Tensile Exact sizes [Free0, Free1, batch, Sum, ...]
    notes: list = field(default_factory=list)
    _code: bytes | None = field(default=None, repr=False)

    @property
    def origin(self) -> str:
        source = self.config.get("Source")
        return str(source.get("Origin")) if isinstance(source, Mapping) and source.get("Origin") else "tensile"

    @property
    def code(self) -> bytes:
        if self._code is None:
            if self.path.suffix == ".s":
                from jitgemm.codegen.codeobj.relocatable import assemble_source

                self._code = assemble_source(self.path.read_text(), file=str(self.path), arch=self.target)[0]
            else:
                self._code = self.path.read_bytes()
        return self._code

    def metadata(self) -> dict:
        """This kernel's entry of the code object's amdhsa.kernels."""
        from jitgemm.codegen import codeobj

        return codeobj.read(self.code).kernel(self.name).metadata


# -- the .amdgpu_metadata YAML of a .s file -----------------------------------------------------------------
_BLOCK = re.compile(r"^[ \t]*\.amdgpu_metadata\b.*?$(.*?)^[ \t]*\.end_amdgpu_metadata\b", re.M | re.S)


def _metadata_of_text(text: str, where: str) -> dict:
    m = _BLOCK.search(text)
    if m is None:
        raise GfaError(f"{where}: no .amdgpu_metadata block (a GFA kernel carries custom.config there)")
    body = m.group(1)
    try:
        data = load_yaml(body)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = text[:m.start(1)].count("\n") + (mark.line + 1 if mark else 1)
        raise GfaError(f"{where}:{line}: .amdgpu_metadata is not valid YAML: {getattr(exc, 'problem', exc)}") \
            from None
    if not isinstance(data, dict):
        raise GfaError(f"{where}: .amdgpu_metadata is not a YAML mapping")
    return data


def _target_of_text(text: str) -> str | None:
    m = re.search(r'^\s*\.amdgcn_target\s+"[^"]*?--(gfx[0-9a-f]+)', text, re.M)
    return m.group(1) if m else None


def _manifest(path: Path) -> dict:
    file = path.parent / "manifest.yaml"
    if not file.is_file():
        return {}
    try:
        data = load_yaml(file.read_text())
    except yaml.YAMLError as exc:
        raise GfaError(f"{file}: not valid YAML: {exc}") from None
    return data if isinstance(data, dict) else {}


def _bool(value: Any, where: str) -> bool:
    """A GFA boolean as YAML 1.1 (Tensile's PyYAML), LLVM's note (True stays the string 'True') or 0/1 spell it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise GfaError(f"{where}: {value!r} is not a boolean (accepted: true, false, 1, 0)")


# -- Tensile test / logic YAML -------------------------------------------------------------------------------
def yaml_files(custom_yaml: str | Path | list) -> list[Path]:
    """The Tensile test YAMLs named: a file, a folder of them (every *.yaml, e.g. Tensile/Tests/custom), or a
    list of either."""
    items = custom_yaml if isinstance(custom_yaml, list | tuple) else [custom_yaml]
    out: list[Path] = []
    for item in items:
        p = Path(item)
        out.extend(sorted(p.glob("*.yaml")) if p.is_dir() else [p])
    return out


def test_records(path: Path) -> list[dict]:
    """Every CustomKernel of a Tensile test YAML with the ProblemType and fork parameters around it:
    [{"name", "ProblemType", "params" (single-valued fork parameters, CustomKernel included), "sizes",
    "arch"}] (read once per file version: the hipKittens test YAMLs are 300 KB)."""
    import copy

    try:
        stat = path.stat()
    except OSError as exc:
        raise GfaError(f"{path}: cannot read the CustomKernel YAML: {exc.strerror or exc}") from None
    return copy.deepcopy(_test_records(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _test_records(path: Path, _mtime: int, _size: int) -> list[dict]:
    try:
        data = load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise GfaError(f"{path}: cannot read the CustomKernel YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("BenchmarkProblems"), list):
        raise GfaError(f"{path}: not a Tensile test YAML (expected BenchmarkProblems: [[ProblemType, group...]])")
    arch = (data.get("LibraryLogic") or {}).get("ArchitectureName")
    out = []
    for pi, problem in enumerate(data["BenchmarkProblems"]):
        if not isinstance(problem, list) or not problem:
            raise GfaError(f"{path}: BenchmarkProblems.{pi} is not a list [ProblemType, size groups...]")
        ptype = problem[0]
        for group in problem[1:]:
            if not isinstance(group, dict):
                continue
            params: dict = {}
            kernels = []
            for item in group.get("ForkParameters") or []:
                for key, values in (item or {}).items():
                    if key == "CustomKernel":
                        kernels.extend(values)
                    elif isinstance(values, list) and len(values) == 1:
                        params[key] = values[0]
            sizes = []
            for item in group.get("BenchmarkFinalParameters") or []:
                for entry in (item or {}).get("ProblemSizes") or []:
                    if isinstance(entry, dict) and "Exact" in entry:
                        sizes.append(list(entry["Exact"]))
            for kernel in kernels:
                record = dict(params)
                record["CustomKernel"] = kernel
                out.append({"name": kernel.get("name"), "ProblemType": ptype, "params": record, "sizes": sizes,
                            "arch": arch})
    return out


# -- reading ------------------------------------------------------------------------------------------------
def read_kernel(path: str | Path, *, custom_yaml: str | Path | None = None, arch: str | None = None,
                name: str | None = None) -> GfaKernel:
    """A GFA kernel from a `.s` or a code object (`.co`, `.hsaco`), with `custom_yaml` (a Tensile test YAML
    naming it) merged on top of its custom.config; the target from `arch`, else `.amdgcn_target` / the code
    object, else the origin's manifest `Target.ISA`, else the YAML's LibraryLogic.ArchitectureName."""
    path = Path(path)
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise GfaError(f"{where}: cannot read: {exc.strerror or exc}") from None
    code = None
    if path.suffix == ".s" or not raw.startswith(b"\x7fELF"):
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            raise GfaError(f"{where}: neither an ELF code object nor assembly text") from None
        meta = _metadata_of_text(text, where)
        named_target = _target_of_text(text)
        kernels = [k.get(".name") for k in meta.get("amdhsa.kernels") or [] if isinstance(k, dict)]
    else:
        from jitgemm.codegen import codeobj

        try:
            obj = codeobj.read(raw)
        except codeobj.CodeObjectError as exc:
            raise GfaError(f"{where}: {exc}") from None
        meta = dict(obj.metadata or {})
        named_target = obj.processor
        kernels = [k.name for k in obj.kernels]
        code = raw
    config = meta.get("custom.config")
    if config is not None and not isinstance(config, dict):
        raise GfaError(f"{where}: custom.config is not a mapping")
    config = dict(config or {})
    manifest = _manifest(path)
    record = None
    if custom_yaml is not None:
        files = yaml_files(custom_yaml)
        records = [r for f in files for r in test_records(f)]
        wanted = name or (config.get("CustomKernel") or {}).get("name") or (kernels[0] if len(kernels) == 1 else None)
        matches = [r for r in records if wanted is None or r["name"] in (wanted, path.stem)]
        if not matches and len(files) == 1 and Path(custom_yaml).is_file():
            raise GfaError(f"{custom_yaml}: no CustomKernel named {wanted!r} (it names: "
                           f"{', '.join(str(r['name']) for r in records) or 'none'})")
        record = matches[0] if matches else None
    if record is not None:
        config.update(record["params"])   # the test YAML is merged on top of custom.config (README)
        config["ProblemType"] = {**(config.get("ProblemType") or {}), **(record["ProblemType"] or {})}
    target = arch or named_target or (manifest.get("Target") or {}).get("ISA") or (record or {}).get("arch")
    if target is None:
        raise GfaError(f"{where}: no target: the file has no .amdgcn_target, there is no manifest.yaml with "
                       f"Target.ISA beside it and no test YAML names LibraryLogic.ArchitectureName; pass arch=")
    target = str(target).split(":")[0]
    refused = gfa_data()["refused_targets"].get(target)
    if refused:
        raise GfaError(f"{where}: target {target} refused: {refused}")
    if not config:
        raise GfaError(f"{where}: no custom.config in the .amdgpu_metadata (not a GFA kernel); pass the Tensile "
                       f"test YAML that describes it (--custom-yaml)")
    ck = config.get("CustomKernel")
    kname = name or (ck.get("name") if isinstance(ck, dict) and ck.get("name") else None)
    if kname is None:
        if len(kernels) != 1:
            raise GfaError(f"{where}: the file holds kernels {kernels}; name the one to read (CustomKernel.name)")
        kname = kernels[0]
    if kernels and kname not in kernels:
        raise GfaError(f"{where}: CustomKernel.name {kname!r} is not a kernel of the file (it has: "
                       f"{', '.join(map(str, kernels))})")
    entry = ((manifest.get("Kernels") or {}).get(kname)) or {}
    kernel = GfaKernel(kname, path, target, config, entry, (record or {}).get("sizes", []), [], code)
    if isinstance(entry, dict) and entry.get("ContentHash") and path.suffix == ".s":
        import hashlib

        have = "sha256:" + hashlib.sha256(raw).hexdigest()
        if have != entry["ContentHash"]:
            kernel.notes.append(f"manifest ContentHash {entry['ContentHash']} differs from the file's {have}")
    return kernel


def has_custom_config(path: Path) -> bool:
    """Whether a kernel file carries hipBLASLt's custom.config (cheap: no assembly, no full parse)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    return b"custom.config" in raw


def assembly_target(path: Path, text: str, custom_yaml: str | Path | None = None) -> str | None:
    """The target to assemble a `.s` for: None when it names one in `.amdgcn_target` (the assembler reads it),
    else the GFA target (manifest Target.ISA, the test YAML's ArchitectureName), else None."""
    named = _target_of_text(text)
    if named in gfa_data()["refused_targets"]:
        raise GfaError(f"{path}: target {named} refused: {gfa_data()['refused_targets'][named]}")
    if named is not None or "custom.config" not in text and custom_yaml is None:
        return None
    manifest = _manifest(path)
    target = (manifest.get("Target") or {}).get("ISA")
    if target is None and custom_yaml is not None:
        names = {path.stem}
        records = [r for f in yaml_files(custom_yaml) for r in test_records(f)]
        target = next((r["arch"] for r in records if r["arch"] and (r["name"] in names or
                                                                      Path(custom_yaml).is_file())), None)
    return str(target).split(":")[0] if target else None


def target_of(path: str | Path, custom_yaml: str | Path | None = None) -> str:
    """The target a GFA kernel file is for (see read_kernel)."""
    return read_kernel(path, custom_yaml=custom_yaml).target
