"""Split-K for the direct generator: the partial-sum kernel class and its reduction (issue 26).

A split-K GEMM runs in two launches. The *partial* kernel (`GemmProblem.k_split == "partial"`) is the tiled GEMM
with workgroup z naming a K range instead of a batch entry: with `split_k` ranges (a power of two, passed in the
batch argument's slot), range z covers K tiles [z * per, (z + 1) * per) where per = ceil(ceil(K / depth_k) /
split_k), so every range but the last is whole tiles and the last takes the K tail through the kernel's guarded
(bounds-checked) loads. Each range writes its raw accumulator (fp32, int32 for int8) to D + z * stride_d, a
workspace of split_k x M x N. The *reduction* kernel (codegen/llvm/split_reduce.py) sums the ranges in order
z = 0, 1, ... (deterministic: the same bits every run) and applies the epilogue once: alpha, beta * C, bias,
activation, the output cast. `jitgemm/split_k.py` runs the pair.

Why a workspace and not atomics: fp32 atomic adds land in whatever order the workgroups finish, so results
differ run to run in the last bits; the workspace reduction is bit-reproducible and lets the epilogue (which is
not linear: bias, beta * C, activation, rounding) run once. Cost: 4 * split_k * M * N bytes written and read.

*Atomic* split-K (`k_split == "atomic"`, where the contract says so: `launch.split_k.zero_output` and `atomic`)
has the same K ranges but adds each range's sums into D itself with buffer atomics (fp32 or int32 D, no
epilogue): one launch and no workspace, at the price of run-to-run differences in the last bits for fp32.

Every range must be non-empty (per * (split_k - 1) < tiles; `split_refusal`), because a kernel whose K is 0 would
run its loop 2^32 times.
"""

from __future__ import annotations

from .dtypes import dtype
from .gemm_asm_epilogue import ATOMIC_ADD
from .gemm_ir import GemmConfig, GemmProblem, IRError

MAX_SPLIT = 64


def partial_problem(p: GemmProblem, mode: str = "partial") -> GemmProblem:
    """The split-K kernel class `mode` (partial, atomic, streamk) of problem `p`: same operands, raw accumulator
    out."""
    from dataclasses import replace

    if p.scaled and p.b_preshuffle != "none":
        # a range's pre-shuffled B (16-column groups of 32-byte K runs 512 bytes apart) is not a smaller matrix of
        # the same layout: its descriptor extent (rows - 1) * ld + K would reach past the weights
        raise IRError("split-K: MX weights pre-shuffled 16x16 do not split K yet (b_preshuffle=none does)")
    if p.scale_mode == "block":     # each range scales its own 128-blocks into fp32 sums (advance_scales)
        q = replace(p, d=dtype("fp32"), c=None, ldc=None, ldd=None, alpha=1.0, beta=0.0, bias="none",
                    activation="none", k_split=mode)
        q.validate()
        return q
    q = replace(p, d=p.acc, c=None, ldc=None, ldd=None, alpha=1.0, beta=0.0, bias="none", activation="none",
                k_split=mode, scale_mode="none")      # tensor/rowcol scales: once, in the reduction
    q.validate()
    return q


def k_per_split(k: int, depth_k: int, split_k: int) -> int:
    """K elements of every range but the last (whole depth_k tiles)."""
    tiles = -(-k // depth_k)
    return -(-tiles // split_k) * depth_k


def split_refusal(p: GemmProblem, depth_k: int, split_k: int) -> str | None:
    """Why `p` cannot run in `split_k` K ranges of `depth_k` tiles (None: it can)."""
    if split_k < 1 or split_k > MAX_SPLIT or split_k & (split_k - 1):
        return f"split_k={split_k}: a power of two in 1..{MAX_SPLIT}"
    per = k_per_split(p.k, depth_k, split_k)
    if per * (split_k - 1) >= p.k:
        return (f"split_k={split_k}: K={p.k} in ranges of {per} (whole {depth_k}-deep tiles) leaves range "
                f"{split_k - 1} empty; at most {max_split(p.k, depth_k)} ranges")
    return None


def max_split(k: int, depth_k: int) -> int:
    """The largest power-of-two split with no empty range."""
    best = 1
    s = 2
    while s <= MAX_SPLIT and k_per_split(k, depth_k, s) * (s - 1) < k:
        best, s = s, s * 2
    return best


def contract_fields(p: GemmProblem, config: GemmConfig, contract: dict) -> dict:
    """A split-K kernel's contract: the batch slot is the split count, z is the K range; D the workspace
    (partial) or the output the ranges add into (atomic, zeroed first); stream-K: codegen/gemm_streamk.py."""
    if p.k_split == "atomic":
        return _atomic_fields(p, config, contract)
    if p.k_split == "streamk":
        from .gemm_streamk import contract_fields as streamk_fields

        return streamk_fields(p, config, contract)
    if p.k_split != "partial":
        return contract
    for arg in contract["abi"]["args"]:
        if arg["name"] == "batch":
            arg["name"] = arg["role"] = "split_k"
    # the direct generator's z = entry x split_k + range; the LLVM generator's partial kernel takes one GEMM
    from .generator import by_name

    gen = by_name(contract["identity"]["generator"])
    batched = gen is None or gen.split_batches
    contract["launch"]["grid"][2] = "batch*split_k" if batched else "split_k"
    contract["launch"]["split_k"] = {"max": MAX_SPLIT, "power_of_two": True, "partials": True,
                                     "k_tail_step": config.depth_k,
                                     "workspace_bytes": f"{p.d.bytes}*m*n*{'batch*' if batched else ''}split_k"}
    contract["legality"]["batch"] = batched
    contract["legality"]["split_k"] = True
    contract["operation"]["k_split"] = "partial"
    contract["workspace"] = {"type": "split_k", "bytes_per_c_element": p.acc.bytes * MAX_SPLIT}
    return contract


def _atomic_fields(p: GemmProblem, config: GemmConfig, contract: dict) -> dict:
    """Atomic split-K: every K range adds its raw sums into D with a buffer atomic (gemm_asm_epilogue.ATOMIC_ADD),
    so D must be zero before the launch (`zero_output`) and no reduction kernel runs. fp32 adds land in whatever
    order the workgroups finish: a result may differ run to run by the rounding of split_k - 1 additions
    (|error| <= (split_k - 1) * 2^-24 * sum |partials|, as any fp32 summation order); int32 adds are exact."""
    for arg in contract["abi"]["args"]:
        if arg["name"] == "batch":
            arg["name"] = arg["role"] = "split_k"
    contract["launch"]["grid"][2] = "batch*split_k"
    contract["launch"]["split_k"] = {"max": MAX_SPLIT, "power_of_two": True, "zero_output": True,
                                     "k_tail_step": config.depth_k, "atomic": ATOMIC_ADD[p.d.name],
                                     "deterministic": p.d.kind != "float"}
    contract["legality"]["batch"] = True
    contract["legality"]["split_k"] = True
    contract["operation"]["k_split"] = "atomic"
    return contract


def emit_split_z(low, wg_z):
    """(batch entry, K range) of workgroup z = entry * split_k + range (split_k a power of two, in the batch
    argument's slot): SGPRs that live to the end of the set-up."""
    emit, ra, split = low.emit, low.ra, low.args["batch"]
    zb, zr = ra.take("s"), ra.take("s")
    emit("s_ff1_i32_b32", zr, split)
    emit("s_lshr_b32", zb, wg_z, zr)
    emit("s_sub_u32", zr, split, 1)
    emit("s_and_b32", zr, wg_z, zr)
    return zb, zr


def emit_k_range(low, wg_z) -> None:
    """Direct generator: narrow this workgroup to its K range before the buffer resources are made. `args["k"]`
    becomes the range's length (the loop, the guards and A's/B's extents all read it) and A/B start at its
    first element. The split count is in the batch argument's slot; log2 of it by s_ff1 (a power of two)."""
    from .gemm_plan import log2_exact as l2

    emit, a, c, ra = low.emit, low.args, low.c, low.ra

    mark = ra.next["s"]
    split = a["batch"]
    log_split, per, k0 = ra.take("s"), ra.take("s"), ra.take("s")
    prod = ra.take("s", 2, align=2)
    log_depth = l2(c.depth_k, "depth_k")
    emit("s_ff1_i32_b32", log_split, split)
    emit("s_add_u32", per, a["k"], c.depth_k - 1)
    emit("s_lshr_b32", per, per, log_depth)            # K tiles
    emit("s_add_u32", per, per, split)
    emit("s_sub_u32", per, per, 1)
    emit("s_lshr_b32", per, per, log_split)            # tiles per range
    emit("s_lshl_b32", per, per, log_depth)            # K per range
    emit("s_mul_i32", k0, wg_z, per)                   # first K of this range
    emit("s_sub_i32", a["k"], a["k"], k0)
    emit("s_min_i32", a["k"], a["k"], per)             # this range's K (the last one's tail)
    low._advance_k(k0, prod)
    ra.release("s", mark)


def advance_scales(low, k0, prod) -> None:
    """Block mode (scale_mode=block): the fp32 scale arrays start at K block k0 / 128 too (a range is whole
    128-deep tiles, gemm_plan's depth_k rule), row-major [rows, KB] by kb0 elements, column-major [KB, rows] by kb0
    rows of `ld_*_scale`; the kernel then scales each of its blocks into fp32 running sums as unsplit."""
    from jitgemm.isa.instruction import Reg

    from .gemm_plan import log2_exact as l2

    emit, a, p = low.emit, low.args, low.p
    if p.scale_mode != "block":
        return
    lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
    for op in ("a", "b"):
        emit("s_lshr_b32", lo, k0, l2(low.c.depth_k, "depth_k"))       # kb0
        if getattr(p, f"{op}_scale_order") == "col":
            emit("s_mul_hi_u32", hi, lo, a[f"ld_{op}_scale"])
            emit("s_mul_i32", lo, lo, a[f"ld_{op}_scale"])
        else:
            emit("s_mov_b32", hi, 0)
        emit("s_lshl_b64", prod, prod, 2)
        ptr = a[f"{op}_scale"]
        emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
        emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)


def advance_ab(low, k0, prod) -> None:
    """A and B start at K element `k0` (SGPR): each pointer += k0 x its K stride x element bytes (64-bit, `prod`
    a scratch SGPR pair)."""
    from jitgemm.isa.instruction import Reg

    from .gemm_plan import log2_exact as l2

    emit, a, p = low.emit, low.args, low.p
    lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
    for x, step in (("a", "lda" if p.a_transposed else None), ("b", None if p.b_transposed else "ldb")):
        if step:
            emit("s_mul_i32", lo, k0, a[step])
            emit("s_mul_hi_u32", hi, k0, a[step])
        else:
            emit("s_mov_b32", lo, k0)
            emit("s_mov_b32", hi, 0)
        eb = getattr(p, x).bytes
        if eb > 1:
            emit("s_lshl_b64", prod, prod, l2(eb, "element size"))
        ptr = a[x]
        emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
        emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)
