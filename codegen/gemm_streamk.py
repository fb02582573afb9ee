"""Stream-K for the direct generator (issue 26): `GemmProblem.k_split == "streamk"`.

A GEMM with few output tiles leaves most compute units idle even with split-K's fixed ranges. Stream-K (Osama,
Merrill, Cecka, Garland, Seshadri: "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
Multiplication on the GPU", arXiv 2301.03598, section 4 and Algorithm 5) launches `g` workgroups (one per compute
unit) and gives each an equal share of the whole iteration space: tiles x iters, iters = ceil(K / depth_k) K
steps per tile, tile-major (a tile's K steps are consecutive). Workgroup w takes iterations [w * share,
min((w + 1) * share, total)), share = ceil(total / g), and walks them as *segments*: a segment is the part of one
tile its range covers (K steps [kb, ke) of tile t), so a workgroup computes at most two partial tiles (its first
and last) and whole tiles between them.

Fixup. The paper and Tensile (hipBLASLt tensilelite/Tensile/Components/StreamK.py, `partialsWriteProcedure`: a
MacroTile0 x MacroTile1 partials tile per workgroup at workspace + cta * MT0 * MT1 * bytes, flags, the tile's
first workgroup waiting on them) fix partial tiles up inside the kernel. Here the fixup is a separate pass, as
CUTLASS's "separate reduction" stream-K mode does: no workgroup waits for another (an in-kernel wait needs every
waited-on workgroup resident, and its flag protocol the memory model's release/acquire, which an emulator cannot
prove), and the result is bit-reproducible. Segment (t, w) writes its raw sums to slot w - first(t) of a
workspace of `slots` x M x N (first(t) = t * iters // share, the workgroup holding the tile's first K step); the
reduction kernel (codegen/llvm/split_reduce.py, stream-K variant) sums tile t's count(t) = last(t) - first(t) + 1
slots in slot order (deterministic) and applies the epilogue once. With few tiles (tiles < g) share ~ tiles *
iters / g, so slots ~ g / tiles + 1 and the workspace ~ (g + tiles) tiles: the paper's one partials tile per
workgroup.

The kernel: the K-loop body of codegen/gemm_asm.py, run once per segment inside a loop over the workgroup's
segments (arguments reloaded each segment, a barrier between segments so one segment's LDS tiles are read before
the next one's are written). Integer divisions (a segment's tile, its row and column) use the float reciprocal
estimate then exact scalar correction loops (any estimate error is corrected; CDNA has no integer divide).
Kernel arguments: the `batch` slot holds g (role split_k, grid x = g); D the workspace (stride_d = M * N).
"""

from __future__ import annotations

from jitgemm.isa.instruction import Reg

from .gemm_ir import GemmConfig, GemmProblem

MAX_WORKGROUPS = 65535
UNIT, DONE = "sk_segment", "sk_done"


def plan(m: int, n: int, k: int, tile_m: int, tile_n: int, depth_k: int, workgroups: int) -> dict:
    """The host's view of a stream-K launch: iters per tile, the share per workgroup, the slots (workspace
    slices) the busiest tile uses, and each tile's first workgroup and segment count."""
    iters = -(-k // depth_k)
    tiles = -(-m // tile_m) * -(-n // tile_n)
    total = tiles * iters
    share = -(-total // workgroups)
    first = [t * iters // share for t in range(tiles)]
    count = [((t + 1) * iters - 1) // share - first[t] + 1 for t in range(tiles)]
    return {"iters": iters, "tiles": tiles, "total": total, "share": share, "slots": max(count),
            "first": first, "count": count}


def contract_fields(p: GemmProblem, config: GemmConfig, contract: dict) -> dict:
    """A stream-K kernel's contract: grid x = split_k workgroups (the batch slot), D the slot workspace."""
    for arg in contract["abi"]["args"]:
        if arg["name"] == "batch":
            arg["name"] = arg["role"] = "split_k"
    contract["launch"]["grid"] = ["split_k", "1", "1"]
    tiles = f"ceil(m/{config.tile_m})*ceil(n/{config.tile_n})"
    iters = f"ceil(k/{config.depth_k})"
    slots = f"(ceil({iters}/ceil({tiles}*{iters}/split_k))+1)"
    contract["launch"]["split_k"] = {
        "max": MAX_WORKGROUPS, "partials": True, "workspace_bytes": f"{p.acc.bytes}*m*n*{slots}",
        "stream_k": {"tile_m": config.tile_m, "tile_n": config.tile_n, "step": config.depth_k, "slots": slots}}
    contract["legality"]["batch"] = False
    contract["legality"]["split_k"] = True
    contract["operation"]["k_split"] = "streamk"
    contract["workspace"] = {"type": "stream_k_with_reduction", "bytes_per_c_element": p.acc.bytes}
    return contract


class StreamKLoop:
    """The segment loop of one workgroup (methods emit into a GemmLowering `low`)."""

    def __init__(self, low, wg_x: Reg) -> None:
        from .gemm_plan import log2_exact as l2

        self.low = low
        emit, a, c, ra, e = low.emit, low.args, low.c, low.ra, low.e
        self._divs = 0
        self.iters, self.tiles_n, self.share, self.it, self.end = (ra.take("s") for _ in range(5))
        # the segment's own values live until its K range is set (k_range releases them: SGPRs are scarce with
        # block scales)
        self.marks = ra.next["s"], ra.next["v"]
        self.vt = ra.take("v", 2)
        self.tile, self.tx, self.ty, self.slot, self.kb, self.steps, self.t0, self.t1 = (ra.take("s") for _ in range(8))
        emit("s_add_u32", self.iters, a["k"], c.depth_k - 1)
        emit("s_lshr_b32", self.iters, self.iters, l2(c.depth_k, "depth_k"))
        emit("s_add_u32", self.tiles_n, a["n"], c.tile_n - 1)
        emit("s_lshr_b32", self.tiles_n, self.tiles_n, l2(c.tile_n, "tile_n"))
        emit("s_add_u32", self.t0, a["m"], c.tile_m - 1)
        emit("s_lshr_b32", self.t0, self.t0, l2(c.tile_m, "tile_m"))
        emit("s_mul_i32", self.t0, self.t0, self.tiles_n)
        emit("s_mul_i32", self.end, self.t0, self.iters)          # total iterations
        emit("s_add_u32", self.t0, self.end, a["batch"])
        emit("s_sub_u32", self.t0, self.t0, 1)
        self.udiv(self.share, self.t1, self.t0, a["batch"])       # share = ceil(total / g)
        emit("s_mul_i32", self.it, wg_x, self.share)
        emit("s_add_u32", self.t0, self.it, self.share)
        emit("s_min_u32", self.end, self.end, self.t0)
        emit("s_cmp_ge_u32", self.it, self.end)
        e.branch("s_cbranch_scc1", DONE)                          # no iterations left for this workgroup
        e.label(UNIT)
        # this segment: tile = it / iters (K step kb), ends at min(end, the tile's end): `steps` K steps
        tile = self.tile
        self.udiv(tile, self.kb, self.it, self.iters)
        emit("s_sub_u32", self.steps, self.it, self.kb)           # the tile's first iteration
        emit("s_sub_u32", self.t0, self.end, self.steps)
        emit("s_min_u32", self.t0, self.t0, self.iters)           # the segment's end step in the tile
        emit("s_add_u32", self.it, self.steps, self.t0)           # the next segment's first iteration
        emit("s_sub_u32", self.steps, self.t0, self.kb)
        # slot = w - first(tile), first(tile) = tile * iters // share
        emit("s_mul_i32", self.t0, tile, self.iters)
        self.udiv(self.t1, self.slot, self.t0, self.share)        # t1 = first(tile) (the remainder is dropped)
        emit("s_sub_u32", self.slot, wg_x, self.t1)
        self.udiv(self.ty, self.tx, tile, self.tiles_n)           # row and column of the tile

    def udiv(self, q: Reg, r: Reg, num: Reg, den: Reg) -> None:
        """q = num // den, r = num % den (unsigned, num < 2^31): a float estimate, corrected exactly."""
        low = self.low
        emit, e = low.emit, low.e
        n = self._divs
        self._divs += 1
        v0, v1 = Reg("v", self.vt.index), Reg("v", self.vt.index + 1)
        emit("v_cvt_f32_u32", v0, num)
        emit("v_cvt_f32_u32", v1, den)
        emit("v_rcp_f32", v1, v1)
        emit("v_mul_f32", v0, v0, v1)
        emit("v_cvt_u32_f32", v0, v0)
        emit("v_readfirstlane_b32", q, v0)
        emit("s_mul_i32", r, q, den)
        emit("s_sub_i32", r, num, r)
        e.label(f"sk_div{n}_down")                                # the estimate too big: r < 0
        emit("s_cmp_lt_i32", r, 0)
        e.branch("s_cbranch_scc0", f"sk_div{n}_up")
        emit("s_sub_u32", q, q, 1)
        emit("s_add_u32", r, r, den)
        e.branch("s_branch", f"sk_div{n}_down")
        e.label(f"sk_div{n}_up")                                  # too small: r >= den
        emit("s_cmp_ge_u32", r, den)
        e.branch("s_cbranch_scc0", f"sk_div{n}_done")
        emit("s_add_u32", q, q, 1)
        emit("s_sub_u32", r, r, den)
        e.branch("s_branch", f"sk_div{n}_up")
        e.label(f"sk_div{n}_done")

    def k_range(self) -> None:
        """Narrow K to this segment: K steps [kb, kb + steps) of the tile (A and B advanced, `k` its length)."""
        from .gemm_plan import log2_exact as l2

        low = self.low
        emit, a, c, ra = low.emit, low.args, low.c, low.ra
        mark = ra.next["s"]
        k0 = ra.take("s")
        prod = ra.take("s", 2, align=2)
        log_depth = l2(c.depth_k, "depth_k")
        emit("s_lshl_b32", k0, self.kb, log_depth)
        emit("s_lshl_b32", self.t0, self.steps, log_depth)
        emit("s_sub_i32", a["k"], a["k"], k0)
        emit("s_min_i32", a["k"], a["k"], self.t0)
        low._advance_k(k0, prod)
        ra.release("s", mark)
        ra.release("s", self.marks[0])
        ra.release("v", self.marks[1])

    def close(self, reload) -> None:
        """After a segment's epilogue: the arguments again (the segment moved A, B, D and K), a barrier (this
        segment's LDS reads before the next one's writes), the next segment while any iteration is left."""
        low = self.low
        e = low.e
        reload()
        low._barrier()
        low.emit("s_cmp_lt_u32", self.it, self.end)
        e.branch("s_cbranch_scc1", UNIT)
        e.label(DONE)
