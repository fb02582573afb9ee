"""Tuning files users already have, in and out of the tuning database: PyTorch TunableOp CSV files and hipBLASLt
offline-tuning override files. Their rows are facts about hipBLASLt's / rocBLAS's solutions (a kernel jitgemm
does not hold): `generator` names the library, `kernel` its solution, as jitgemm/aiter labels aiter's rows.

PyTorch TunableOp (torch/cuda/tunable.py, module docstring and `_process_single_offline_gemm`):
- `Validator,KEY,VALUE` lines: PT_VERSION, ROCM_VERSION, HIPBLASLT_VERSION, ROCBLAS_VERSION (newer torch adds
  more, e.g. GCN_ARCH_NAME). TunableOp rejects a file whose validators differ from the running software; so do
  we: a mismatch against what is known here is reported and the file is not imported unless the caller says so
  (`accept_mismatch=True`, `--accept-validator-mismatch`). A validator this machine cannot check is reported too.
- result lines `OP,PARAMS,SOLUTION,MS`: OP = `GemmTunableOp_<dtype>_<L>` / `GemmStridedBatchedTunableOp_<dtype>_<L>`
  / `ScaledGemmTunableOp_<A>_<B>_<D>_<L>`, L = two BLAS letters (transB, transA of torch's operands: BLAS is
  column-major, so torch's row-major D = A @ B is BLAS's D^T = B^T A^T); PARAMS = `tn_N_M_K_ld_LDB_LDA_LDC`
  (n first, same reason), batched `..._K_B_BATCH_ld_...`, scaled `..._ld_LDB_LDA_LDC_rw_R_bias_T`; MS = mean
  milliseconds.
hipBLASLt override files (HIPBLASLT_TUNING_OVERRIDE_FILE; rocm.docs.amd.com/projects/hipBLASLt, "Using hipBLASLt
offline tuning"; field order from hipBLASLt's `TensileLite::HeaderFields`): a `Git Version: ...` line, then
`transA,transB,batch_count,m,n,k,a_type,b_type,c_type,compute_type,solution_index[,solution_name]` in BLAS
(column-major) terms; no time, so each row is recorded as metric `chosen` = 1 (the library's tuned choice).

Rows jitgemm's IR cannot express (double, complex, GemmAndBias, leading dimensions no layout gives) are not
imported (the database holds problems the project can make) and are listed in the report (`skipped`), so an
export gives back exactly the rows that went in.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from jitgemm.codegen.gemm_ir import GemmProblem, IRError

from .tuning_db import TuningDB, TuningDBError, problem_key

# TunableOp dtype names (c10 ScalarType names as torch writes them) -> jitgemm dtype names
TUNABLEOP_DTYPES = {"float": "fp32", "tf32": "fp32", "Half": "fp16", "BFloat16": "bf16",
                    "Float8_e4m3fnuz": "fp8", "Float8_e5m2fnuz": "bf8", "Float8_e4m3fn": "fp8_e4m3",
                    "Float8_e5m2": "fp8_e5m2"}
# hipblaslt-bench type names -> jitgemm dtype names
HIPBLASLT_DTYPES = {"f32_r": "fp32", "f16_r": "fp16", "bf16_r": "bf16", "i8_r": "int8", "i32_r": "int32",
                    "f8_fnuz_r": "fp8", "bf8_fnuz_r": "bf8", "f8_r": "fp8_e4m3", "bf8_r": "fp8_e5m2"}
VALIDATOR_KEYS = ("PT_VERSION", "ROCM_VERSION", "HIPBLASLT_VERSION", "ROCBLAS_VERSION")


class TuningFileError(TuningDBError):
    """A tuning file that cannot be read or applied; the message names the file (and line)."""


@dataclass(frozen=True)
class ValidatorCheck:
    key: str
    in_file: str
    running: str | None      # None: this machine cannot tell
    status: str              # "match", "mismatch" or "unknown"

    def describe(self) -> str:
        here = self.running if self.running is not None else "unknown here"
        return f"{self.key}: file {self.in_file!r}, running {here!r} ({self.status})"


@dataclass
class ImportReport:
    """What an import did: rows added, validator checks, and whether a mismatch was overridden."""

    path: str
    rows: int = 0
    checks: list[ValidatorCheck] = field(default_factory=list)
    accepted_mismatch: bool = False
    skipped: list[str] = field(default_factory=list)     # "file:line: row" the IR cannot express

    @property
    def mismatches(self) -> list[ValidatorCheck]:
        return [c for c in self.checks if c.status == "mismatch"]


def running_versions() -> dict[str, str | None]:
    """The software versions TunableOp validates, as far as this machine can tell without importing torch
    (installed distribution metadata): torch's base version; ROCm only from a ROCm build's local version tag
    (`2.x+rocm6.2`); hipBLASLt and rocBLAS are unknown without the ROCm libraries' headers."""
    from importlib import metadata

    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        version = None
    base, _, local = (version or "").partition("+")
    rocm = local.removeprefix("rocm") if local.startswith("rocm") else None
    return {"PT_VERSION": base or None, "ROCM_VERSION": rocm, "HIPBLASLT_VERSION": None, "ROCBLAS_VERSION": None}


def check_validators(validators: dict[str, str], running: dict[str, str | None] | None = None) -> list[ValidatorCheck]:
    """Each validator against the running software: PT_VERSION exactly (torch's base version), ROCM_VERSION by
    major.minor (TunableOp writes the full build string, torch's wheel tag only major.minor), others exactly."""
    running = running_versions() if running is None else running
    out = []
    for key, value in validators.items():
        here = running.get(key)
        if here is None:
            out.append(ValidatorCheck(key, value, None, "unknown"))
            continue
        if key == "ROCM_VERSION":
            same = value.split(".")[:2] == here.split(".")[:2]
        else:
            same = value == here
        out.append(ValidatorCheck(key, value, here, "match" if same else "mismatch"))
    return out


def _tunableop_problem(op: str, params: str) -> str | None:
    """The jitgemm problem key of a TunableOp result line, or None when the IR cannot express it."""
    parts, fields_ = op.split("_"), params.split("_")
    kind, letters = parts[0], parts[-1]
    if len(letters) != 2 or set(letters) - {"N", "T"}:
        return None
    layout = letters[1] + letters[0]                  # BLAS (transB, transA) -> jitgemm A then B
    try:
        n, m, k = (int(v) for v in fields_[1:4])
        if kind == "GemmTunableOp" and len(parts) == 3:
            a = b = d = TUNABLEOP_DTYPES.get(parts[1])
            ldb, lda, ldd = (int(v) for v in fields_[5:8])
            extra, batch = {}, 1
        elif kind == "GemmStridedBatchedTunableOp" and len(parts) == 3:
            a = b = d = TUNABLEOP_DTYPES.get(parts[1])
            batch = int(fields_[5])
            ldb, lda, ldd = (int(v) for v in fields_[7:10])
            extra = {}
        elif kind == "ScaledGemmTunableOp" and len(parts) in (7, 8):
            names = parts[1:-1]
            a = TUNABLEOP_DTYPES.get(f"{names[0]}_{names[1]}")
            b = TUNABLEOP_DTYPES.get(f"{names[2]}_{names[3]}")
            d = TUNABLEOP_DTYPES.get("_".join(names[4:]))
            ldb, lda, ldd = (int(v) for v in fields_[5:8])
            if fields_[8] != "rw" or fields_[10] != "bias":
                return None
            extra = {"scale_mode": "rowcol" if fields_[9] == "1" else "tensor",
                     "bias": "none" if fields_[11] == "None" else "n"}
            batch = 1
        else:
            return None
        if None in (a, b, d):
            return None
        problem = GemmProblem.make(m, n, k, a, b, d, layout=layout, batch=batch, lda=lda, ldb=ldb, ldd=ldd,
                                   **extra)
    except (ValueError, IndexError, IRError):
        return None
    return problem_key(problem)


def _library(solution: str) -> str:
    low = solution.lower()
    return "hipblaslt" if "hipblaslt" in low else "rocblas" if "rocblas" in low else "torch-default"


def read_tunableop(path: str | os.PathLike) -> tuple[dict[str, str], list[tuple[int, list[str]]]]:
    """(validators, [(line number, [op, params, solution, ms])]) of a TunableOp CSV file."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TuningFileError(f"{path}: cannot read ({exc})") from None
    validators: dict[str, str] = {}
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.strip().split(",")
        if cells[0] == "Validator":
            if len(cells) < 3:
                raise TuningFileError(f"{path}:{number}: a Validator line needs KEY,VALUE: {line[:80]!r}")
            validators[cells[1]] = ",".join(cells[2:])
        elif cells[0].startswith(("Gemm", "ScaledGemm")) and len(cells) in (3, 4):
            rows.append((number, cells))
        else:
            raise TuningFileError(f"{path}:{number}: not a TunableOp line (Validator,KEY,VALUE or "
                                  f"OP,PARAMS,SOLUTION[,MS]): {line[:80]!r}")
    return validators, rows


def import_tunableop(path: str | os.PathLike, db: TuningDB, *, target: str | None = None,
                     accept_mismatch: bool = False) -> ImportReport:
    """Add a TunableOp file's rows to `db` (see the module docstring). `target` names the GPU that measured them
    (default: the file's GCN_ARCH_NAME validator). A validator that mismatches the running software refuses the
    import (TuningFileError listing them) unless `accept_mismatch`."""
    validators, lines = read_tunableop(path)
    report = ImportReport(str(path), checks=check_validators(validators))
    if report.mismatches and not accept_mismatch:
        raise TuningFileError(f"{path}: validators do not match this environment: "
                              + "; ".join(c.describe() for c in report.mismatches)
                              + " (TunableOp would reject the file; pass accept_mismatch=True / "
                                "--accept-validator-mismatch to import it anyway)")
    report.accepted_mismatch = bool(report.mismatches)
    arch = target or validators.get("GCN_ARCH_NAME", "").split(":")[0]
    if not arch:
        raise TuningFileError(f"{path}: which GPU measured it? the file has no GCN_ARCH_NAME validator: pass "
                              f"target= / --target")
    rows = []
    for number, cells in lines:
        op, params, solution = cells[:3]
        ms_text = cells[3] if len(cells) > 3 else ""
        try:
            ms = float(ms_text) if ms_text else 0.0
        except ValueError:
            raise TuningFileError(f"{path}:{number}: time {ms_text!r} is not a number") from None
        key = _tunableop_problem(op, params)
        if key is None:
            report.skipped.append(f"{Path(path).name}:{number}: {op},{params}")
            continue
        rows.append({"target": arch, "problem": key, "kernel": solution, "generator": _library(solution),
                     "metric": "seconds", "value": ms * 1e-3, "source": "hardware",
                     "origin": f"{Path(path).name}:{number}",
                     "tools": {"format": "tunableop", "op": op, "params": params, "solution": solution,
                               "ms": ms_text, "validators": list(validators.items())}})   # pairs: file order
    report.rows = db.add(rows) if rows else 0
    return report


def export_tunableop(db: TuningDB, path: str | os.PathLike, *, target: str | None = None) -> int:
    """Write the TunableOp rows of `db` (imported ones; in import order) as a TunableOp file: the validators
    they were imported with, then `OP,PARAMS,SOLUTION,MS` lines. Returns the number of result lines."""
    validators: dict[str, str] = {}
    lines = []
    for r in db.rows(target=target, metric="seconds"):
        try:
            tools = json.loads(r.tools or "{}")
        except json.JSONDecodeError:
            continue
        if tools.get("format") != "tunableop":
            continue
        for k, v in tools.get("validators", []):
            validators.setdefault(k, v)
        cells = [tools["op"], tools["params"], tools["solution"]] + ([tools["ms"]] if tools.get("ms") else [])
        lines.append(",".join(cells))
    text = "".join(f"Validator,{k},{v}\n" for k, v in validators.items()) + "".join(f"{x}\n" for x in lines)
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise TuningFileError(f"{path}: cannot write ({exc})") from None
    return len(lines)


def import_hipblaslt(path: str | os.PathLike, db: TuningDB, *, target: str, hipblaslt_version: str | None = None,
                     accept_mismatch: bool = False) -> ImportReport:
    """Add a hipBLASLt override file's rows to `db` as hipBLASLt's tuned choices (metric `chosen`, value 1). Its
    `Git Version` line is checked against `hipblaslt_version` when given (solution indices do not carry across
    hipBLASLt builds, as its documentation says); a mismatch refuses the import unless `accept_mismatch`."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TuningFileError(f"{path}: cannot read ({exc})") from None
    if not target:
        raise TuningFileError(f"{path}: which GPU was it tuned on? pass target= / --target")
    report = ImportReport(str(path))
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if "Git Version" in stripped:
            version = stripped.split(":", 1)[-1].strip()
            report.checks.append(check_validators({"HIPBLASLT_VERSION": version},
                                                  {"HIPBLASLT_VERSION": hipblaslt_version})[0])
            continue
        if "," not in stripped:
            continue
        cells = [c.strip() for c in stripped.split(",")]
        if len(cells) < 11:
            raise TuningFileError(f"{path}:{number}: {len(cells)} fields; an override row has transA,transB,"
                                  f"batch_count,m,n,k,a_type,b_type,c_type,compute_type,solution_index"
                                  f"[,solution_name]")
        try:
            ta, tb = cells[0], cells[1]
            batch, m, n, k, index = int(cells[2]), int(cells[3]), int(cells[4]), int(cells[5]), int(cells[10])
        except ValueError as exc:
            raise TuningFileError(f"{path}:{number}: {exc}") from None
        a, b, d = (HIPBLASLT_DTYPES.get(c) for c in cells[6:9])
        key = None
        if None not in (a, b, d) and {ta, tb} <= {"N", "T"}:
            try:     # BLAS column-major -> jitgemm row-major: swap the operands (and M with N)
                key = problem_key(GemmProblem.make(n, m, k, b, a, d, layout=tb + ta, batch=batch))
            except IRError:
                key = None
        if key is None:
            report.skipped.append(f"{Path(path).name}:{number}: {stripped}")
            continue
        name = cells[11] if len(cells) > 11 and cells[11] else f"solution {index}"
        rows.append({"target": target, "problem": key, "kernel": name,
                     "generator": "hipblaslt", "metric": "chosen", "value": 1.0, "source": "hardware",
                     "origin": f"{Path(path).name}:{number}",
                     "tools": {"format": "hipblaslt-override", "row": stripped, "solution_index": index}})
    if report.mismatches and not accept_mismatch:
        raise TuningFileError(f"{path}: " + "; ".join(c.describe() for c in report.mismatches)
                              + " (solution indices do not carry across hipBLASLt builds; pass accept_mismatch=True"
                                " / --accept-validator-mismatch to import anyway)")
    report.accepted_mismatch = bool(report.mismatches)
    report.rows = db.add(rows) if rows else 0
    return report
