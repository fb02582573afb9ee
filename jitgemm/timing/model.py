"""`predict`: one launch of one GEMM kernel on one device, timed from the kernel's trace (see `jitgemm.timing`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from jitgemm.codegen.gemm_ir import GemmProblem
from jitgemm.isa.spec.targets import Device, TargetProfile

from .trace import WAVE, KernelTrace, Region, trace


class TimingError(ValueError):
    """A kernel or device the model cannot time; the message says what is missing and what is accepted."""


@dataclass(frozen=True)
class Params:
    """The target profile's `timing` section, resolved (each number's source is beside it in the YAML)."""

    max_waves_per_simd: int
    simds_per_cu: int
    l2_bytes_per_clock_per_cu: float
    lds_bytes_per_clock_per_cu: float
    launch_us: float                 # fitted
    hbm_efficiency: float            # fitted
    mall_efficiency: float           # fitted
    vmem_latency_passes: int         # fitted
    clock_efficiency: float          # fitted: sustained engine clock under MFMA load / the peak engine clock


def params(profile: TargetProfile) -> Params:
    """The timing parameters of a target (TimingError naming the missing key of the profile)."""
    section = profile.get("timing") or {}
    pipe = profile.get("pipeline") or {}
    where = f"specs/targets/{profile.target}.yaml"
    keys = ("max_waves_per_simd", "l2_bytes_per_clock_per_cu", "lds_bytes_per_clock_per_cu", "launch_us",
            "hbm_efficiency", "mall_efficiency", "vmem_latency_passes", "clock_efficiency")
    missing = [k for k in keys if k not in section]
    if missing or "simds_per_cu" not in pipe:
        raise TimingError(f"{where}: timing.{(missing or ['pipeline.simds_per_cu'])[0]} is missing; the timing model "
                          "needs it")
    return Params(int(section["max_waves_per_simd"]), int(pipe["simds_per_cu"]),
                  float(section["l2_bytes_per_clock_per_cu"]), float(section["lds_bytes_per_clock_per_cu"]),
                  float(section["launch_us"]), float(section["hbm_efficiency"]), float(section["mall_efficiency"]),
                  int(section["vmem_latency_passes"]), float(section["clock_efficiency"]))


@dataclass(frozen=True)
class KernelFacts:
    """What the model needs of a kernel besides its trace: target, macro tile, waves per workgroup, resources."""

    name: str
    target: str
    code: bytes                       # the kernel's .text bytes
    tile_m: int
    tile_n: int
    waves: int                        # per workgroup
    vgprs: int                        # unified VGPR + AGPR allocation per lane
    sgprs: int
    lds_bytes: int                    # per workgroup, static + dynamic
    beta: bool = False


@dataclass
class Prediction:
    """A predicted launch: time, throughput, the roofline bound beside it, and rocprof-style counters."""

    kernel: str
    device: str
    m: int
    n: int
    k: int
    split_k: int
    us: float
    tflops: float
    roofline_us: float
    bound: str                        # what limits the launch: compute, latency, hbm, mall, l2, lds, launch
    counters: dict[str, Any] = field(default_factory=dict)
    stalls_us: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "m": self.m, "n": self.n, "k": self.k, "split_k": self.split_k,
                "device": self.device, "predicted_us": self.us, "predicted_tflops": self.tflops,
                "roofline_us": self.roofline_us, "bound": self.bound, "counters": self.counters,
                "stalls_us": self.stalls_us}


def _contract_data(kernel: Any) -> dict:
    contract = getattr(kernel, "contract", None)
    if contract is None and isinstance(kernel, tuple) and len(kernel) == 2:
        contract = kernel[0]
    data = getattr(contract, "data", contract)
    return dict(data) if isinstance(data, dict) else {}


def _code_object(kernel: Any) -> bytes:
    for attr in ("code_object", "code_object_bytes", "blob"):
        blob = getattr(kernel, attr, None)
        if isinstance(blob, (bytes, bytearray)):
            return bytes(blob)
    path = getattr(kernel, "path", None) or getattr(kernel, "code_object_path", None)
    if path is not None:
        from pathlib import Path

        return Path(path).read_bytes()
    if isinstance(kernel, tuple) and len(kernel) == 2 and isinstance(kernel[1], (bytes, bytearray)):
        return bytes(kernel[1])
    load = getattr(kernel, "load", None)
    if callable(load):
        return load()[0]
    raise TimingError(f"{type(kernel).__name__}: no code object (accepted: a compiled Kernel, a selector "
                      "Candidate, an inventory kernel with a code-object path, or (contract, code_object bytes))")


def _tile(kernel: Any, data: dict) -> tuple[int, int]:
    tile = getattr(kernel, "tile", None)
    if isinstance(tile, (tuple, list)) and len(tile) >= 2:
        return int(tile[0]), int(tile[1])
    if isinstance(tile, dict) and "m" in tile:
        return int(tile["m"]), int(tile["n"])
    t = data.get("tile") or {}
    if "m" in t and "n" in t:
        return int(t["m"]), int(t["n"])
    raise TimingError(f"{data.get('identity', {}).get('kernel', type(kernel).__name__)}: no macro tile in the "
                      "contract (tile.m, tile.n) or on the kernel (.tile)")


_FACTS: dict[tuple, KernelFacts] = {}


def kernel_facts(kernel: Any) -> KernelFacts:
    """The facts of a kernel object (cached per code object and contract)."""
    from jitgemm.codegen import codeobj

    data = _contract_data(kernel)
    blob = _code_object(kernel)
    ident = data.get("identity", {})
    key = (hash(blob), ident.get("kernel"), str(data.get("tile")), str(getattr(kernel, "tile", None)))
    hit = _FACTS.get(key)
    if hit is not None:
        return hit
    co = codeobj.read(blob)
    name = ident.get("kernel") or getattr(kernel, "name", None)
    names = [k.name for k in co.kernels]
    k = co.kernel(name if name in names else names[0])
    meta = k.metadata
    target = ident.get("target") or getattr(kernel, "arch", None) or co.target
    from jitgemm.isa.spec.targets import base_target

    wg = data.get("launch", {}).get("workgroup") or [int(meta.get(".max_flat_workgroup_size", 256) or 256)]
    lds = int(k.descriptor.group_segment_fixed_size) + int(data.get("launch", {}).get("lds_bytes", 0) or 0)
    tm, tn = _tile(kernel, data)
    facts = KernelFacts(k.name, base_target(str(target)), bytes(k.code), tm, tn,
                        max(1, math.prod(int(x) for x in wg) // WAVE), int(meta.get(".vgpr_count", 0) or 0),
                        int(meta.get(".sgpr_count", 0) or 0), lds)
    if len(_FACTS) > 4096:
        _FACTS.clear()
    _FACTS[key] = facts
    return facts


def occupancy(facts: KernelFacts, profile: TargetProfile, p: Params) -> dict[str, int]:
    """Workgroups resident per CU and what limits it: the unified VGPR file (`vgprs` registers per lane per SIMD
    in `vgpr_granule` blocks), the CU's LDS, the waves a SIMD can hold; a workgroup's waves spread over the SIMDs."""
    granule = int(profile.get("vgpr_granule", 8) or 8)
    regs = max(granule, -(-facts.vgprs // granule) * granule) if facts.vgprs else granule
    by_regs = min(p.max_waves_per_simd, (profile.vgprs or 512) // regs)
    per_simd = -(-facts.waves // p.simds_per_cu)
    limits = {"vgpr": by_regs // per_simd, "waves": p.max_waves_per_simd // per_simd}
    if facts.lds_bytes:
        limits["lds"] = profile.lds_bytes_per_workgroup // facts.lds_bytes
    wgs = max(1, min(limits.values()))
    return {"workgroups_per_cu": wgs, "waves_per_simd": wgs * per_simd,
            "limited_by": min(limits, key=lambda x: limits[x])}


def _fills(tiles_m: int, tiles_n: int, slices: int, slots: int, xcds: int) -> tuple[int, int, int]:
    """Distinct (A tile, K slice) and (B tile, K slice) pairs each XCD's L2 fetches, summed over dispatch rounds:
    workgroups are dispatched in id order (x over N tiles fastest, then M tiles, then split-K slices and batch),
    round-robin over the XCDs, `slots` at a time. Returns (A fetches, B fetches, rounds).

    Counted per round without visiting each workgroup (issue 31: the per-workgroup sets cost a cold compile
    ~20 ms): workgroup i is in round i // slots on XCD i % xcds and reads A row-of-tiles i // tiles_n (slice and
    M tile) and B tile i % tiles_n of slice i // (tiles_n * tiles_m). A run of L consecutive ids meets
    min(L, xcds) XCDs, and min(L, lcm(xcds, tiles_n)) distinct (XCD, N tile) pairs (i -> (i mod xcds, i mod
    tiles_n) repeats only after lcm ids), so a round's A fetches are the sum over the A rows it touches and its
    B fetches the sum over the slices it touches (tests/jitgemm/test_timing_fills.py: = the per-workgroup sets)."""
    total = tiles_m * tiles_n * slices
    rounds = -(-total // slots)
    period = xcds * tiles_n // math.gcd(xcds, tiles_n)
    row_len, slice_len = tiles_n, tiles_n * tiles_m
    a = b = 0
    for r in range(rounds):
        lo, hi = r * slots, min(total, (r + 1) * slots)
        for row in range(lo // row_len, (hi - 1) // row_len + 1):
            a += min(min(hi, (row + 1) * row_len) - max(lo, row * row_len), xcds)
        for sl in range(lo // slice_len, (hi - 1) // slice_len + 1):
            b += min(min(hi, (sl + 1) * slice_len) - max(lo, sl * slice_len), period)
    return a, b, rounds


def _used(m: int, n: int, k: int, tile_m: int, tile_n: int, tiles_m: int, tiles_n: int, split_k: int,
          k_slice: int) -> tuple[float, float, float]:
    """The mean share of a full tile's rows of A, columns of B and K slice that workgroups really read: an edge
    tile's rows past M (columns past N) and the K past the end in the last split-K slice load nothing (a buffer load
    out of range returns 0 without a memory access), so they cost no L2 fill."""
    return m / (tiles_m * tile_m), n / (tiles_n * tile_n), min(1.0, k / (split_k * k_slice))


def _edge_share(prob: GemmProblem, tile_m: int, tile_n: int, tiles_m: int, tiles_n: int) -> float:
    """The share of a full tile's loop loads every workgroup's tile really reads when all of them are edge tiles
    along M (M below one tile: the rows past M load nothing) or along N; 1 otherwise (a dispatch round then holds
    interior tiles, which set its time). The loop's bytes are taken as A's and B's tile rows in proportion."""
    rows = min(prob.m, tile_m) / tile_m if tiles_m == 1 else 1.0
    cols = min(prob.n, tile_n) / tile_n if tiles_n == 1 else 1.0
    if rows == cols == 1.0:
        return 1.0
    a, b = prob.a.storage_bytes(tile_m * 256), prob.b.storage_bytes(tile_n * 256)
    return (a * rows + b * cols) / (a + b)


def _rounds_clk(workgroups: int, slots: int, wg_clk: float, iter_clk: float, tiles: int, split_k: int, k: int,
                k_slice: int, k_per_iter: int, iters: int) -> float:
    """Clocks of all dispatch rounds of `slots` workgroups (in id order: tiles fastest, then split-K slices, then
    batch), each as long as its longest workgroup. A workgroup of an interior slice runs `iters` iterations
    (`wg_clk`); the last slice holds only the K left (ceil(K / split_k) slices: K - (split_k - 1) x k_slice, or
    nothing), so a round of last-slice workgroups alone is shorter."""
    rounds = -(-workgroups // slots)
    left = [min(k_slice, max(0, k - s * k_slice)) for s in range(split_k)]
    if split_k == 1 or all(x == k_slice for x in left):
        return rounds * wg_clk
    clk = [wg_clk - (iters - -(-x // k_per_iter)) * iter_clk for x in left]       # per slice
    total = 0.0
    for lo in range(0, workgroups, slots):        # the slices a round's workgroups belong to: ids // tiles, mod split_k
        first, last = lo // tiles, (min(lo + slots, workgroups) - 1) // tiles
        total += wg_clk if last - first + 1 >= split_k else max(clk[g % split_k] for g in range(first, last + 1))
    return total


def resolve_device(profile: TargetProfile, device: Any) -> Device:
    if isinstance(device, Device):
        return device
    return profile.device(device)


def predict(kernel: Any, problem: GemmProblem, device: Any = None, *, split_k: int = 1,
            measured: Any = None, streamk: int = 0) -> Prediction:
    """Predicted time of one launch of `kernel` (a compiled Kernel, a selector Candidate, an aiter inventory
    kernel, or (contract, code-object bytes)) on `problem` on `device` (a name, a CU count, a Device; None: the
    target's default device), the K dimension split in `split_k` slices (aiter's splitK: workgroups per output
    tile, each reducing ceil(K / split_k) of K). `measured` (`timing.emu_counters.emu_counters(kernel)`) replaces
    the static trace's loop bytes with the transactions and LDS bank conflicts of the lanes' real addresses.
    `streamk` > 0: a stream-K kernel (codegen/gemm_streamk.py) launched with that many workgroups, each running an
    equal share of the tiles x K iterations, paying the prologue and epilogue once per segment (tile) it touches,
    and writing one partial tile per segment (split_k is then 1)."""
    from jitgemm import isa

    facts = kernel_facts(kernel)
    profile = isa.target_profile(facts.target)
    dev = resolve_device(profile, device)
    p = params(profile)
    tr = trace(facts.code, facts.target, {"vmem": p.vmem_latency_passes})
    return _time(facts, tr, problem, dev, profile, p, max(1, int(split_k)), measured, int(streamk))


SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64)


def best_split(kernel: Any, problem: GemmProblem, device: Any = None, splits: tuple[int, ...] = SPLITS) -> Prediction:
    """The split-K decision: the prediction at the split count (of `splits` the kernel's contract allows for this
    K, `Contract.split_refusal`) the model finds fastest; split 1 for a kernel that does not split K."""
    contract = getattr(kernel, "contract", None)
    if contract is None and isinstance(kernel, tuple):
        contract = kernel[0]
    refusal = getattr(contract, "split_refusal", None)
    allowed = [s for s in splits if s == 1 or (refusal is not None and refusal(problem.k, s) is None)]
    return min((predict(kernel, problem, device, split_k=s) for s in allowed), key=lambda p: (p.us, p.split_k))


def _time(f: KernelFacts, tr: KernelTrace, prob: GemmProblem, dev: Device, profile: TargetProfile, p: Params,
          split_k: int, measured: Any = None, streamk: int = 0) -> Prediction:
    m, n, k, batch = prob.m, prob.n, prob.k, prob.batch
    clock = dev.clock_mhz * 1e6 * p.clock_efficiency
    cpp = tr.clocks_per_pass
    occ = occupancy(f, profile, p)
    o = occ["workgroups_per_cu"]
    tiles_m, tiles_n = -(-m // f.tile_m), -(-n // f.tile_n)
    k_slice = -(-k // split_k)
    loop = tr.loop
    k_per_iter = max(1, round(loop.mfma_flops * f.waves / (2 * f.tile_m * f.tile_n))) if loop.mfma_flops else 32
    iters = max(1, -(-k_slice // k_per_iter))
    workgroups = tiles_m * tiles_n * split_k * batch
    segments, partial_tiles = 1, 0
    if streamk:      # equal shares of tiles x iterations; a segment per tile touched (prologue + epilogue each)
        total_iters = tiles_m * tiles_n * batch * iters
        share = -(-total_iters // streamk)
        workgroups = min(streamk, total_iters)
        segments = min(tiles_m * tiles_n * batch, -(-share // iters) + 1)
        partial_tiles = workgroups * segments
        k_slice = min(k, share * k_per_iter)
        iters = share
    slots = dev.cu_num * o
    # -- per workgroup: one wave's regions, its SIMD shared by waves_per_simd waves, the CU's L2 and LDS ports
    w = occ["waves_per_simd"]
    iter_issue = max(loop.passes, w * loop.mfma_passes) * cpp
    wg_l2_bytes = f.waves * loop.vmem_load_bytes * _edge_share(prob, f.tile_m, f.tile_n, tiles_m, tiles_n)
    lds_factor = 1.0
    if measured is not None:   # the lanes' real addresses: 64-byte transactions, LDS bank conflicts
        wg_l2_bytes = max(wg_l2_bytes, 64 * measured.global_transactions)
        lds_factor = measured.lds_conflict_factor
    iter_l2 = o * wg_l2_bytes / p.l2_bytes_per_clock_per_cu
    iter_lds = o * f.waves * loop.lds_bytes * lds_factor / p.lds_bytes_per_clock_per_cu
    iter_clk = max(iter_issue, iter_l2, iter_lds)
    edge_clk = segments * (tr.prologue.passes + tr.epilogue.passes) * cpp
    wg_clk = edge_clk + iters * iter_clk
    rounds_full, rest = divmod(workgroups, slots)
    rounds = rounds_full + (1 if rest else 0)
    compute_s = _rounds_clk(workgroups, slots, wg_clk, iter_clk, tiles_m * tiles_n, split_k, k, k_slice,
                            k_per_iter, iters) / clock
    # -- memory hierarchy: L2 fills (from MALL/HBM) from the dispatch order, HBM bytes once when A and B fit MALL
    rows_used, cols_used, k_used = _used(m, n, k, f.tile_m, f.tile_n, tiles_m, tiles_n, split_k, k_slice)
    a_bytes_slice = prob.a.storage_bytes(f.tile_m * k_slice) * rows_used * k_used
    b_bytes_slice = prob.b.storage_bytes(f.tile_n * k_slice) * cols_used * k_used
    a_fetch, b_fetch, _ = _fills(tiles_m, tiles_n, max(split_k, workgroups // max(1, tiles_m * tiles_n)) if
                                 streamk else split_k, slots, dev.xcds)
    l2_fill = (a_fetch * a_bytes_slice + b_fetch * b_bytes_slice) * batch
    d_bytes = m * n * batch * (prob.d.bits // 8 if prob.d.bits % 8 == 0 else 2)
    d_traffic = d_bytes * (2 * split_k if split_k > 1 else 1)
    if streamk:      # one partial tile written per segment
        d_traffic = partial_tiles * f.tile_m * f.tile_n * (prob.d.bits // 8 if prob.d.bits % 8 == 0 else 2)
    operands = (prob.a.storage_bytes(m * k) + prob.b.storage_bytes(n * k)) * batch
    hbm = (operands if operands <= dev.mall_bytes else l2_fill) + d_traffic
    hbm_s = hbm / (dev.hbm_gbs * 1e9 * p.hbm_efficiency)
    mall_s = (l2_fill + d_traffic) / (dev.mall_gbs * 1e9 * p.mall_efficiency)
    launch_s = p.launch_us * 1e-6
    body_s = max(compute_s, hbm_s, mall_s)
    total_s = launch_s + body_s
    flops = 2.0 * m * n * k * batch
    rate_key = _rate_key(prob, dev.peak_matrix_tflops)
    peak = dev.peak_matrix_tflops.get(rate_key, 0.0) * 1e12
    roofline_s = max(flops / peak if peak else 0.0, (operands + d_bytes) / (dev.hbm_gbs * 1e9))
    # -- where the time goes (per workgroup, then the launch)
    mfma_clk = iters * w * loop.mfma_passes * cpp
    parts = {"mfma": mfma_clk, "issue": iters * max(0.0, loop.total * cpp - w * loop.mfma_passes * cpp),
             "wait_memory": iters * max(0.0, iter_issue - max(loop.total, w * loop.mfma_passes) * cpp)
             + edge_clk,
             "l2_bandwidth": iters * max(0.0, iter_l2 - iter_issue), "lds_bandwidth": iters * max(0.0, iter_lds -
                                                                                                  max(iter_issue,
                                                                                                      iter_l2))}
    scale = rounds / clock * 1e6
    stalls = {key: round(v * scale, 3) for key, v in parts.items() if v > 0}
    quant = workgroups / (rounds * slots) if rounds else 1.0
    if body_s > compute_s:
        stalls["hbm" if hbm_s >= mall_s else "mall"] = round((body_s - compute_s) * 1e6, 3)
    stalls["launch"] = round(p.launch_us, 3)
    busy = iters * w * loop.mfma_passes * cpp / wg_clk if wg_clk else 0.0
    bounds = {"compute" if busy >= 0.6 else "latency": compute_s, "hbm": hbm_s, "mall": mall_s}
    if iter_clk == iter_l2 and iter_l2 > iter_issue:
        bounds = {**bounds, "l2": bounds.pop("compute", bounds.pop("latency", compute_s))}
    bound = max(bounds, key=lambda x: bounds[x]) if body_s >= launch_s else "launch"
    waves_total = workgroups * f.waves
    per_wave = {c: tr.prologue.instructions.get(c, 0) + tr.epilogue.instructions.get(c, 0)
                + iters * loop.instructions.get(c, 0) for c in set(tr.prologue.instructions)
                | set(loop.instructions) | set(tr.epilogue.instructions)}
    counters = {
        "instructions": {c: v * waves_total for c, v in sorted(per_wave.items())},
        "workgroups": workgroups, "waves": waves_total, "rounds": rounds, "wave_quantization": round(quant, 4),
        "k_per_iteration": k_per_iter, "iterations_per_workgroup": iters,
        "occupancy": occ, "vgprs": f.vgprs, "sgprs": f.sgprs, "lds_bytes_per_workgroup": f.lds_bytes,
        "bytes": {"hbm": int(hbm), "l2_fill_from_mall": int(l2_fill), "l2_to_cu": int(
            waves_total * (tr.prologue.vmem_load_bytes + iters * loop.vmem_load_bytes + tr.epilogue.vmem_load_bytes)),
            "lds": int(waves_total * (tr.prologue.lds_bytes + iters * loop.lds_bytes + tr.epilogue.lds_bytes)),
            "stores": int(waves_total * (tr.prologue.vmem_store_bytes + tr.epilogue.vmem_store_bytes
                                         + iters * loop.vmem_store_bytes))},
        "transactions": {"l2_to_cu_64B": int(workgroups * iters * wg_l2_bytes / 64)},
        "lds_bank_conflicts": (None if measured is None     # the static trace cannot see addresses
                               else int(measured.lds_conflict_cycles * iters * workgroups)),
        "addresses": "emulated" if measured is not None else "static",
        "loop": {"passes_one_wave": loop.passes, "mfma_passes": loop.mfma_passes, "bound_one_wave": tr.bound,
                 "clocks_per_iteration": round(iter_clk, 1)},
        "mfma_utilisation": round(min(1.0, mfma_clk / wg_clk), 4) if wg_clk else 0.0,
    }
    us = total_s * 1e6
    return Prediction(f.name, dev.name, m, n, k, split_k, us, flops / total_s / 1e12, roofline_s * 1e6 + p.launch_us,
                      bound, counters, stalls)


def _rate_key(problem: GemmProblem, rates: dict) -> str:
    """Which peak matrix rate applies: the wider operand's dtype; 8-bit floats of either flavour at fp8's rate;
    fp6/fp4 at their own rate when the device lists one, else fp8's."""
    kind = max((problem.a, problem.b), key=lambda d: d.bits)
    if kind.name in rates:
        return kind.name
    return "fp8" if kind.kind == "float" and kind.bits <= 8 else kind.name


# --- the pre-rank: the same launch model on a trace estimated from the plan, before any instruction exists ------
# Instruction counts of one main-loop iteration and of the prologue/epilogue that the plan cannot give exactly,
# read off the direct generator's traces (bf16/fp8 on gfx942/gfx950, tiles 32x32..256x256, vec 1..16): a scalar
# and wait overhead per iteration, and epilogue passes per accumulator element of a lane (convert, pack, store).
LOOP_OVERHEAD = 9
EPILOGUE_PASSES_PER_ACC = 16


def plan_trace(plan: Any, problem: GemmProblem, target: str) -> KernelTrace:
    """An estimated trace of a kernel following `plan` (codegen.gemm_plan.GemmPlan), made without lowering: one
    main-loop iteration of depth_k has the plan's MFMAs (blocks_m x blocks_n per wave, depth_k / MFMA K each), the
    wave's share of the A and B tile loads (vec elements a lane) and LDS writes, a fragment read per block and
    K group, `LOOP_OVERHEAD` scalar/wait slots; it takes the longer of its MFMA passes and one vector-memory
    latency plus its issue slots (the loads of the next tile overlap the MFMAs). Prologue and epilogue: a memory
    latency each, and `EPILOGUE_PASSES_PER_ACC` passes per accumulator element of a lane. The selector's pre-rank
    (`jitgemm.selector`) compares candidates on `_time` of this trace and lowers only the contenders."""
    from jitgemm import isa

    from .pipeline import mfma_passes, rates, spec_instruction

    spec, profile = isa.load_spec(target), isa.target_profile(target)
    r = rates(spec, profile)
    info = spec_instruction(plan.mfma.name, spec)
    passes = mfma_passes(info.name if info is not None else plan.mfma.name.upper(), r.mfma_passes)
    if not passes:
        raise TimingError(f"{plan.mfma.name}: no entry in the profile's mfma.passes")
    config = plan.config
    waves = max(1, plan.workgroup_size // WAVE)
    depth = config.depth_k
    mfmas = plan.blocks_m * plan.blocks_n * max(1, depth // plan.mfma.k)
    span = 256                                      # elements: storage bytes of sub-byte types without rounding
    a_bytes = problem.a.storage_bytes(config.tile_m * span) / span * depth / waves
    b_bytes = problem.b.storage_bytes(config.tile_n * span) / span * depth / waves
    if plan.a is not None and plan.b is not None:   # staged through LDS: loaded, written, read per block
        loads = -(-config.tile_m * depth // (WAVE * waves * max(1, config.vec_a))) \
            + -(-config.tile_n * depth // (WAVE * waves * max(1, config.vec_b)))
        lds_ops = loads + (plan.blocks_m + plan.blocks_n) * len(plan.groups)
        lds = 2 * (a_bytes + b_bytes)
    else:                                           # fragments straight to registers (the MX plan)
        loads, lds_ops, lds = plan.blocks_m + plan.blocks_n, 0, 0.0
    latency = int(params(profile).vmem_latency_passes)
    issue = mfmas + loads + lds_ops + LOOP_OVERHEAD
    mfma_busy = mfmas * passes
    loop = Region({"mfma": mfmas, "vmem": loads, "lds": lds_ops, "salu": LOOP_OVERHEAD}, mfma_busy,
                  mfmas * plan.mfma.flops, int(a_bytes + b_bytes), 0, int(lds),
                  float(max(mfma_busy, latency + issue)))
    acc = config.wave_tile[0] * config.wave_tile[1] // WAVE
    edge = Region({}, 0, 0, 0, 0, 0, float(latency + EPILOGUE_PASSES_PER_ACC * acc))
    head = Region({}, 0, 0, 0, 0, 0, float(latency))
    return KernelTrace("plan", head, loop, edge, r.clocks_per_pass, "mfma")


def plan_estimate(plan: Any, problem: GemmProblem, target: str, resources: dict, device: Any = None,
                  splits: tuple[int, ...] = (1,)) -> float:
    """Microseconds `_time` gives a kernel following `plan` on `problem` from `plan_trace` (the best of `splits`):
    what a candidate would take, estimated from its config alone. `resources`: its planned vgprs, agprs and LDS
    bytes (the contract's `tile`), which set the occupancy."""
    from jitgemm import isa

    profile = isa.target_profile(target)
    dev = resolve_device(profile, device)
    p = params(profile)
    tr = plan_trace(plan, problem, target)
    facts = KernelFacts("plan", target, b"", plan.config.tile_m, plan.config.tile_n,
                        max(1, plan.workgroup_size // WAVE),
                        int(resources.get("vgprs", 0) or 0) + int(resources.get("agprs", 0) or 0),
                        int(resources.get("sgprs", 0) or 0), int(resources.get("lds", 0) or 0))
    return min(_time(facts, tr, problem, dev, profile, p, s).us for s in splits)
