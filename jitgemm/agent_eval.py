"""`jitgemm agent-eval`: twelve kernel-writing tasks of rising difficulty for an agent (or a person), each a case
(launch, argument buffers, numpy reference) judged by the anti-cheat battery and scored on correctness and
modelled time.

A solution is AMDGPU assembly for the task's target: a whole `.s` file or a snippet in the ABI of
`jitgemm.agent_tools` (s[0:1] kernarg pointer, s2/s3/s4 workgroup ids, v0 packed work-item ids; kernargs are the
case's args in order). Score per task: `level` points when the battery passes, times
min(1, bound / modelled time), where `bound` is the same timing model's floor for the task's bytes (launch + HBM
traffic); a refused kernel scores 0 and its findings say why.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Task:
    level: int
    name: str
    arch: str
    statement: str
    case: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "name": self.name, "arch": self.arch, "statement": self.statement,
                "case": self.case}


def _buf(name: str, dtype: str, shape, *, output: bool = False, fill: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "dtype": dtype, "shape": shape}
    if output:
        out["output"] = True
    if fill:
        out["fill"] = fill
    return out


TASKS: tuple[Task, ...] = (
    Task(1, "vector_add", "gfx942", "c[i] = a[i] + b[i] for 1024 f32 elements, 4 workgroups of 256 work-items.",
         {"grid": 4, "block": 256, "args": [_buf("a", "f32", 1024), _buf("b", "f32", 1024),
                                            _buf("c", "f32", 1024, output=True)], "reference": "a + b"}),
    Task(2, "saxpy", "gfx942", "out[i] = alpha * x[i] + y[i], alpha an f32 kernel argument (1.75), 2048 elements.",
         {"grid": 8, "block": 256, "args": [{"name": "alpha", "dtype": "f32", "value": 1.75}, _buf("x", "f32", 2048),
                                            _buf("y", "f32", 2048), _buf("out", "f32", 2048, output=True)],
          "reference": "alpha * x + y"}),
    Task(3, "row_bias", "gfx942", "out[r, c] = a[r, c] + bias[r] for a 16x256 f32 matrix; a 2-D grid (4, 16) of "
         "64-item workgroups: workgroup y is the row.",
         {"grid": [4, 16], "block": 64, "args": [_buf("a", "f32", [16, 256]), _buf("bias", "f32", 16),
                                                 _buf("out", "f32", [16, 256], output=True)],
          "reference": "a + bias[:, None]"}),
    Task(4, "block_sum", "gfx942", "out[g] = sum of a[256 g : 256 g + 256] (f32) for 8 workgroups of 256 work-items "
         "(4 waves each: combine the waves through the launch's 1024 bytes of LDS, with barriers).",
         {"grid": 8, "block": 256, "args": [_buf("a", "f32", 2048), _buf("out", "f32", 8, output=True)],
          "reference": "a.reshape(8, 256).sum(axis=1)", "tolerance": {"rtol": 1e-5, "atol": 1e-5},
          "lds_bytes": 1024}),
    Task(5, "wave_max", "gfx942", "out[w] = max of a[64 w : 64 w + 64] (f32) for 16 waves in one workgroup of "
         "1024: a cross-lane reduction over all 64 lanes of a wave (DPP, ds_swizzle, permlane or readlane).",
         {"grid": 1, "block": 1024, "args": [_buf("a", "f32", 1024), _buf("out", "f32", 16, output=True)],
          "reference": "a.reshape(16, 64).max(axis=1)"}),
    Task(6, "transpose_lds", "gfx942", "out = a.T for a 64x64 f32 matrix, through LDS: a grid (2, 2) of 256-item "
         "workgroups, each moving one 32x32 tile (coalesced loads and stores; the launch gives 4224 bytes of LDS).",
         {"grid": [2, 2], "block": 256, "args": [_buf("a", "f32", [64, 64]), _buf("out", "f32", [64, 64], output=True)],
          "reference": "a.T", "lds_bytes": 4224}),
    Task(7, "gemv", "gfx942", "y = A @ x for A 64x128 f32 (row-major) and x of 128: one workgroup of 64, a loop "
         "over K.",
         {"grid": 1, "block": 64, "args": [_buf("A", "f32", [64, 128]), _buf("x", "f32", 128),
                                           _buf("y", "f32", 64, output=True)],
          "reference": "A @ x", "tolerance": {"rtol": 1e-5, "atol": 1e-4}}),
    Task(8, "gemm_f16_tile", "gfx942", "d = a @ bt.T for a, bt 16x16 f16 (row-major), d 16x16 f32: one wave, one "
         "MFMA (v_mfma_f32_16x16x16_f16).",
         {"grid": 1, "block": 64, "args": [_buf("a", "f16", [16, 16]), _buf("bt", "f16", [16, 16]),
                                           _buf("d", "f32", [16, 16], output=True)],
          "reference": "a @ bt.T", "tolerance": {"rtol": 1e-5, "atol": 1e-5}}),
    Task(9, "gemm_i8_tile", "gfx942", "d = a @ bt.T for a, bt 16x32 int8 (row-major), d 16x16 int32 exact: one "
         "wave (v_mfma_i32_16x16x32_i8).",
         {"grid": 1, "block": 64, "args": [_buf("a", "i8", [16, 32]), _buf("bt", "i8", [16, 32]),
                                           _buf("d", "i32", [16, 16], output=True)],
          "reference": "a @ bt.T"}),
    Task(10, "gemm_bf16_kloop", "gfx942", "d = a @ bt.T for a, bt 32x64 bf16 (row-major), d 32x32 f32: one wave, a "
         "loop of 32x32x8 MFMAs over K.",
         {"grid": 1, "block": 64, "args": [_buf("a", "bf16", [32, 64]), _buf("bt", "bf16", [32, 64]),
                                           _buf("d", "f32", [32, 32], output=True)],
          "reference": "a @ bt.T", "tolerance": {"rtol": 1e-5, "atol": 1e-4}}),
    Task(11, "gemm_fp8_scaled", "gfx942", "d = sa * sb * (a @ bt.T) for a, bt 16x32 fp8 (gfx942's E4M3 FNUZ, "
         "row-major) and f32 scales sa = 0.5, sb = 0.25 (kernel arguments), d 16x16 f32.",
         {"grid": 1, "block": 64, "args": [_buf("a", "fp8", [16, 32]), _buf("bt", "fp8", [16, 32]),
                                           {"name": "sa", "dtype": "f32", "value": 0.5},
                                           {"name": "sb", "dtype": "f32", "value": 0.25},
                                           _buf("d", "f32", [16, 16], output=True)],
          "reference": "sa * sb * (a @ bt.T)", "tolerance": {"rtol": 1e-5, "atol": 1e-5}}),
    Task(12, "gemm_mxfp4_tile", "gfx950", "d = (fp4(a) * e8m0(sa)) @ (fp4(bt) * e8m0(sb)).T on gfx950: a, bt 16x128 "
         "MXFP4 (16x64 bytes, two E2M1 codes per byte, low nibble first), sa, sb 16x4 E8M0 scales (one per 32 "
         "values along K), d 16x16 f32: v_mfma_scale_f32_16x16x128_f8f6f4.",
         {"grid": 1, "block": 64, "args": [_buf("a", "u8", [16, 64], fill="int:0:255"),
                                           _buf("bt", "u8", [16, 64], fill="int:0:255"),
                                           _buf("sa", "u8", [16, 4], fill="int:122:132"),
                                           _buf("sb", "u8", [16, 4], fill="int:122:132"),
                                           _buf("d", "f32", [16, 16], output=True)],
          "reference": "mx_dequant(a, sa, 'fp4') @ mx_dequant(bt, sb, 'fp4').T",
          "tolerance": {"rtol": 1e-5, "atol": 1e-5}}),
)


def task(name_or_level: str | int) -> Task:
    """A task by name or level (KeyError naming the tasks)."""
    for t in TASKS:
        if t.name == name_or_level or t.level == name_or_level:
            return t
    raise KeyError(f"no task {name_or_level!r}; tasks: {', '.join(t.name for t in TASKS)}")


def describe(index: int | None = None) -> dict[str, Any]:
    """The tasks as JSON (all, or the one at `index`, a level 1..12)."""
    if index is None:
        return {"ok": True, "tasks": [t.to_json() for t in TASKS]}
    try:
        return {"ok": True, "task": task(int(index)).to_json()}
    except KeyError as exc:
        return {"ok": False, "diagnostics": [{"severity": "error", "message": str(exc.args[0])}]}


def score(t: Task, source: str) -> dict[str, Any]:
    """Judge one solution: the battery's verdict, the modelled time and the points (module docstring)."""
    from jitgemm import agent_tools

    verdict = agent_tools.qualify(t.case, source=source, arch=t.arch)
    out = {"task": t.name, "level": t.level, "ok": bool(verdict.get("ok")),
           "findings": verdict.get("findings") or verdict.get("diagnostics") or [],
           "max_error": verdict.get("max_error"), "us": None, "points": 0.0}
    if not out["ok"]:
        return out
    prof = agent_tools.profile(t.case, source=source, arch=t.arch)
    if prof.get("ok"):
        counters = prof["counters"]
        bound = counters["launch_us"] + counters["memory_us"]
        out["us"] = prof["us"]
        out["model"] = prof["model"]
        out["points"] = round(t.level * min(1.0, bound / prof["us"]), 3)
    return out


def main(args: argparse.Namespace) -> int:
    """The CLI: `--list`, or score `<folder>/<task>.s` for every task present."""
    from jitgemm.cli import CliError

    if args.list or not args.folder:
        if args.json:
            print(json.dumps(describe(), indent=1))
        else:
            for t in TASKS:
                print(f"{t.level:>2}  {t.name:<18} {t.arch}  {t.statement}")
        return 0
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CliError(f"{folder}: not a folder (expected <folder>/<task name>.s files)")
    results = []
    for t in TASKS:
        path = folder / f"{t.name}.s"
        if path.is_file():
            results.append(score(t, path.read_text()))
        else:
            results.append({"task": t.name, "level": t.level, "ok": False, "points": 0.0,
                            "findings": [{"check": "missing", "severity": "error", "message": f"no {path}"}]})
    total = sum(r["points"] for r in results)
    if args.json:
        print(json.dumps({"ok": all(r["ok"] for r in results), "points": total,
                          "max_points": sum(t.level for t in TASKS), "results": results}, indent=1, default=str))
    else:
        for r in results:
            why = "" if r["ok"] else (r["findings"][0]["message"].split("\n")[0] if r["findings"] else "")
            us = f"{r['us']:.2f} us" if r.get("us") else "-"
            print(f"{r['level']:>2} {r['task']:<18} {'pass' if r['ok'] else 'FAIL':<5} {us:>10} "
                  f"{r['points']:>6.2f}  {why}")
        print(f"total {total:.2f} of {sum(t.level for t in TASKS)} points")
        sys.stdout.flush()
    return 0 if all(r["ok"] for r in results) else 1
