"""Qualification of aiter kernels: each admitted kernel runs in strict emulation on small random problems its
contract admits (one or two tiles, a sample of split-K counts it declares) and must equal numpy's float64 result
within the output dtype's tolerance (jitgemm.reference.check); a kernel that faults, races (a missing wait,
barrier or wait state) or differs is quarantined with the case and the reason. Results are kept per candidate
key (`<cache>/aiter/qualified.json`), so `jitgemm inventory` can say which kernels qualified."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..contract import Contract


@dataclass
class Verdict:
    """What qualification found for one kernel."""

    label: str
    family: str | None
    arch: str
    key: str
    cases: list[str] = field(default_factory=list)
    failure: str | None = None
    strict: bool = True
    seconds: float = 0.0
    abi: list[str] = field(default_factory=list)    # the ABI proof's findings (jitgemm.abi_proof), errors first

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.cases)


def candidate_key(kernel) -> str:
    """The selector's key for this kernel as the aiter supplier offers it (quarantine and tuning use it)."""
    from ..suppliers import Candidate

    return Candidate("aiter", kernel.label, kernel.contract, lambda: (b"", "")).key


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def sample_cases(kernel, count: int, rng: random.Random) -> list[tuple[int, int, int, int]]:
    """(m, n, k, split_k) cases inside the kernel's legal region, small enough for the emulator: M within one or
    two tiles (often not a multiple of the tile: the kernels bound M themselves), N one tile, K one or two
    steps per split; the first case unsplit, the next ones at split counts the contract allows."""
    c: Contract = kernel.contract
    leg = c.data.get("legality", {})
    div = leg.get("divisible", {})
    tm, tn = kernel.tile or (64, 64)
    tm = tm or 64
    tn = _round_up(tn or 64, div.get("n", 1))
    # a partial last N tile when the contract allows one (N a multiple of less than the tile)
    tn_partial = tn + div.get("n", 1) if div.get("n", 1) < tn else tn
    kstep = max(div.get("k", 1), c.data.get("tile", {}).get("k", 1))
    spec = c.split_k
    splits = [1]
    if spec:
        choices = [s for s in (2, 3, 4) if s <= spec["max"] and not (spec.get("power_of_two") and s & (s - 1))]
        splits += choices
    out = []
    for i in range(count):
        split = splits[i % len(splits)] if i < len(splits) else rng.choice(splits)
        m = rng.randint(1, tm) if i % 2 == 0 else tm + rng.randint(1, max(1, tm // 2))
        m = max(_round_up(m, div.get("m", 1)), leg.get("min", {}).get("m", 1))
        k_unit = (spec or {}).get("k_multiple", kstep) if split > 1 else kstep
        k = _round_up(max(k_unit * split * rng.choice([1, 2]), leg.get("min", {}).get("k", 1)), kstep)
        out.append((m, tn if i % 2 == 0 else tn_partial, k, split))
    return out


def _partials(a: np.ndarray, b: np.ndarray, k: int, split: int, step: int) -> list[np.ndarray]:
    """Each split's partial product: splits of ceil(K / split) rounded up to `step` (aiter's k_per_tg)."""
    if split <= 1:
        return []
    per = _round_up(_round_up(k, split) // split, step)
    return [a[:, i:i + per] @ b[i:i + per, :] for i in range(0, k, per)]


def _operands(c: Contract, m: int, n: int, k: int, seed: int, split: int = 1):
    """(call, reference D, split partials): random operands in the storage the contract's operation names."""
    step = (c.split_k or {}).get("k_multiple", 1)
    from ..api import prepare

    op = c.data["operation"]
    rng = np.random.default_rng(seed)
    from jitgemm.codegen.dtypes import dtype

    d = dtype(op["d"]).numpy
    if op.get("a_scale", "none") != "none" or op.get("b_scale", "none") != "none":
        from .. import mx

        a = mx.quantize_mx(rng.standard_normal((m, k)), op["a"]).shuffle(scales=op["a_scale"] == "shuffled",
                                                                        weight=False)
        b = mx.weights(rng.standard_normal((n, k)), op["b"]).shuffle(scales=op["b_scale"] == "shuffled",
                                                                     weight=op.get("b_preshuffle") == "16x16")
        fa, fb = a.dequantize(), b.dequantize()
        return prepare(a, b, out_dtype=d), fa @ fb, _partials(fa, fb, k, split, step)
    da, db = dtype(op["a"]), dtype(op["b"])
    if op.get("scale_mode", "none") != "none":
        return _scaled_operands(c, m, n, k, rng, split, step)

    def rand(shape, dt):
        if dt.kind == "int":
            return rng.integers(-9, 10, size=shape).astype(dt.numpy)
        return (rng.standard_normal(shape) * 1.5).astype(np.float32).astype(dt.numpy)

    a = rand((m, k), da)
    bt = rand((n, k), db)                              # B as [N, K] rows: the layouts aiter's kernels read (NT)
    b = bt.T if op["layout"][1] == "T" else np.ascontiguousarray(bt.T)
    if op["layout"][0] == "T":
        a = np.ascontiguousarray(a.T).T
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    return prepare(a, b, out_dtype=d), fa @ fb, _partials(fa, fb, k, split, step)


def _scaled_operands(c: Contract, m: int, n: int, k: int, rng, split: int, step: int):
    """A scale-mode problem (aiter's a8w8 / I8gemm: int8 A [M, K] and B [N, K] (pre-shuffled 16x16 or
    32x16 when the contract says so), fp32 per-token / per-channel scales, fp32 bias): the call is built here, as
    `jitgemm.scaled_matmul` would, since `prepare` takes no scales."""
    from jitgemm.codegen.dtypes import dtype
    from jitgemm.codegen.gemm_ir import GemmProblem

    from ..api import GemmCall
    from ..mx import shuffle_weight
    from ..reference import reference, scale_operands

    op, feat = c.data["operation"], c.data.get("features", {})
    bias_kind = next((b for b in feat.get("bias", ["none"]) if b != "none"), "none")
    p = GemmProblem.make(m, n, k, op["a"], op["b"], op["d"], layout="NT", scale_mode=op["scale_mode"],
                         b_preshuffle=op.get("b_preshuffle", "none"), bias=bias_kind,
                         a_scale_order=op.get("a_scale_order", "row"), b_scale_order=op.get("b_scale_order", "row"))
    da, db = dtype(op["a"]), dtype(op["b"])

    def rand(shape, dt):
        if dt.kind == "int":
            return rng.integers(-9, 10, size=shape).astype(dt.numpy)
        return rng.standard_normal(shape).astype(np.float32).astype(dt.numpy)

    a, bt = rand((m, k), da), rand((n, k), db)
    sa, sb = scale_operands(p, int(rng.integers(1 << 30)))
    # block scales stored column-major ("col": aiter's [K/128, M] and [K/128, N/128]) are passed transposed
    store_a = np.asarray(sa, np.float32).T if p.a_scale_order == "col" else np.asarray(sa, np.float32)
    store_b = np.asarray(sb, np.float32).T if p.b_scale_order == "col" else np.asarray(sb, np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if bias_kind == "n" else None
    stored_b = (shuffle_weight(bt.view(np.uint8), int(p.b_preshuffle.split("x")[0])).view(db.numpy)
                if p.b_preshuffle != "none" else bt)
    d = np.full((m, n), np.nan, dtype(op["d"]).numpy)
    values = {"a": a.reshape(-1), "b": np.ascontiguousarray(stored_b).reshape(-1), "d": d.reshape(-1),
              "a_scale": np.ascontiguousarray(store_a).reshape(-1),
              "b_scale": np.ascontiguousarray(store_b).reshape(-1), "bias": bias, "c": None,
              "m": m, "n": n, "k": k, "batch": 1, "lda": k, "ldb": k, "ldc": n, "ldd": n, "alpha": 1.0,
              "beta": 0.0, "stride_a": 0, "stride_b": 0, "stride_c": 0, "stride_d": m * n}
    ref = reference(p, a, bt.T, None, bias, sa, sb)
    fa, fb = a.astype(np.float64), bt.T.astype(np.float64)
    return GemmCall(p, values, d, {}), ref, _partials(fa, fb, k, split, step)


def run_case(kernel, m: int, n: int, k: int, split: int, seed: int, strict: bool | str = True,
             emu_options: dict | None = None) -> None:
    """One strict emulation of the kernel against numpy; raises on a fault, a race or a mismatch. `emu_options`
    go to the emulator (e.g. `schedule="random"`: waves interleaved at random, as hardware may run them)."""
    from ..api import launch
    from ..reference import check

    call, ref, parts = _operands(kernel.contract, m, n, k, seed, split)
    d = launch(call, kernel.code, kernel.name, kernel.contract, backend="emu", source=f"aiter:{kernel.label}",
               strict=strict, split_k=split, emu_options=emu_options)
    if split > 1 and call.problem.d.bits < 32:
        split_check(call.problem, d, ref, parts)
    else:
        check(call.problem, d, ref)


def split_check(problem, got: np.ndarray, ref: np.ndarray, parts: list[np.ndarray]) -> None:
    """The check of a split-K launch whose splits add into a 16-bit D (bf16 atomics): each split's partial sum
    is rounded to D's type and every addition rounds again, so the error is bounded by D's rounding of the
    partials' magnitudes, not the final sum's: tolerance = 2 x rtol(D) x (|ref| + sum |partial|)."""
    from ..reference import OUT_RTOL, Mismatch

    g = got.astype(np.float64)
    if not np.all(np.isfinite(g)):
        raise Mismatch(f"non-finite output at {tuple(int(i) for i in np.argwhere(~np.isfinite(g))[0])}")
    bound = np.abs(ref) + sum(np.abs(p) for p in parts)
    tol = 2 * OUT_RTOL[problem.d.name] * bound + 1e-6 * problem.k * max(1.0, float(np.abs(ref).max()))
    bad = np.abs(g - ref) > tol
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Mismatch(f"{int(bad.sum())} of {bad.size} elements off; first at {idx}: got {g[idx]}, want {ref[idx]} "
                       f"(split-K tolerance {tol[idx]:.3g})")


def _pcs(exc) -> str:
    """A strict violation's two instructions (the first is the writer / the older access, when known), so a
    quarantine reason names where the kernel breaks the rule, not only which rule."""
    second = getattr(exc, "second", None)
    if not second:
        return ""
    first = getattr(exc, "first", None)
    where = f"PC 0x{first[0]:x} {first[1]} -> " if first else ""
    return f" [{where}PC 0x{second[0]:x} {second[1]}]"


def qualify(kernel, cases: int = 2, seed: int = 0, strict: bool | str = True) -> Verdict:
    """Run `cases` sampled problems (see `sample_cases`); the first failure ends it and is the verdict's reason."""
    from ..api import MatmulError
    from ..emu import EmulatorError
    from ..reference import Mismatch

    v = Verdict(kernel.label, kernel.family, kernel.arch, candidate_key(kernel) if kernel.admitted else "",
                strict=bool(strict))
    if not kernel.admitted:
        v.failure = f"not admitted: {kernel.refusal}"
        return v
    from ..abi_proof import compare
    from ..emu.kernarg_trace import kernarg_reads

    start = time.perf_counter()
    rng = random.Random(f"{seed}:{kernel.label}")
    with kernarg_reads() as reads:      # the ABI proof traces the same runs (jitgemm.abi_proof, issue 23)
        for i, (m, n, k, split) in enumerate(sample_cases(kernel, cases, rng)):
            case = f"m={m} n={n} k={k} split_k={split}"
            try:
                run_case(kernel, m, n, k, split, seed + i, strict)
            except (Mismatch, EmulatorError, MatmulError) as exc:
                v.failure = f"{case}: {type(exc).__name__}: {str(exc).splitlines()[0][:400]}{_pcs(exc)}"
                break
            v.cases.append(case)
    if v.failure is None:
        from jitgemm.codegen import codeobj

        meta = codeobj.read(kernel.code).kernel(kernel.name).metadata
        findings = sorted(compare(kernel.contract, reads, meta), key=lambda f: f.severity != "error")
        v.abi = [str(f) for f in findings]
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            v.failure = f"ABI proof: {errors[0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    v.seconds = time.perf_counter() - start
    return v


def store_path() -> Path:
    from jitgemm.isa.spec.cache import cache_root

    return cache_root() / "aiter" / "qualified.json"


def load_verdicts() -> dict[str, dict]:
    """Stored verdicts by candidate key ({} when none or unreadable)."""
    path = store_path()
    try:
        data = json.loads(path.read_text()) if path.is_file() and path.stat().st_size < (16 << 20) else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_verdicts(verdicts: list[Verdict]) -> None:
    """Keep the verdicts (and put the failures in the selector's quarantine, which every selector consults)."""
    from ..selector import Quarantine

    data = load_verdicts()
    quarantine = Quarantine()
    for v in verdicts:
        if not v.key:
            continue
        data[v.key] = {**asdict(v), "ok": v.ok, "time": time.time()}
        if v.failure:
            quarantine.add(v.key, v.failure)
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)
