"""Grouped GEMM (MoE experts) in the direct generator: one launch over G groups, as MoE routers lay them out:
A stacked row-major [sum M_g, K] (the tokens sorted by expert), B [G, K, N] (one weight per expert), group
offsets [G + 1] int32 (group g's rows are offsets[g] .. offsets[g+1]; an empty group has equal offsets), D
stacked like A (and C, and a per-row bias [sum M_g]; a column bias is [N] for every group or [G, N], one per
group, by the `stride_bias` argument). Workgroup z is the group; it reads its two offsets
(s_load), narrows `m` to its row count, moves A, C, D and a per-row bias to its first row and B by z * stride_b;
workgroups whose first row is at or past the group's rows end at once (so an empty group touches no memory: a
matrix of 0 rows has no extent to give a buffer). The LLVM generator does the same (codegen/llvm/ir_builder.py
`_group_rows`).
The grid's y covers the largest group (`m` = max M_g, computed by the caller from the offsets).
"""

from __future__ import annotations

from .gemm_ir import GemmProblem

GROUP_DONE = "group_done"


def group_fields(p: GemmProblem, contract: dict) -> dict:
    """A grouped kernel's contract: the batch role is the group count, `group_offsets` the offsets pointer."""
    if not p.grouped:
        return contract
    contract["operation"]["grouped"] = True
    for arg in contract["abi"]["args"]:
        if arg["name"] == "group_offsets":
            arg["role"] = "group_offsets"
        if arg["name"] == "stride_bias" and p.bias != "n":     # only a column bias moves per group
            arg["role"] = "unused"
    contract["legality"]["batch"] = True
    contract["legality"].setdefault("align_bytes", {})
    return contract


def emit_group_rows(low, wg_z) -> None:
    """Direct generator: this workgroup's group rows (before the buffer resources are made)."""
    from jitgemm.isa.instruction import Reg

    from .gemm_plan import log2_exact

    emit, a, p, ra, e = low.emit, low.args, low.p, low.ra, low.e
    bounds = ra.take("s", 2, align=2)
    start, end = Reg("s", bounds.index), Reg("s", bounds.index + 1)
    off = ra.take("s")
    emit("s_lshl_b32", off, wg_z, 2)
    emit("s_load_dwordx2", bounds, a["group_offsets"], off)
    e.wait(lgkmcnt=0)
    emit("s_sub_u32", a["m"], end, start)                 # this group's rows
    emit("s_cmp_ge_u32", low.row0, a["m"])
    e.branch("s_cbranch_scc1", GROUP_DONE)                # nothing of this group's D is this workgroup's
    prod = ra.take("s", 2, align=2)
    lo, hi = Reg("s", prod.index), Reg("s", prod.index + 1)
    mats = [("a", "lda", p.a.bytes), ("d", "ldd", p.d.bytes)]
    if p.c is not None:
        mats.append(("c", "ldc", p.c.bytes))
    for x, ld, eb in mats:
        emit("s_mul_i32", lo, start, a[ld])
        emit("s_mul_hi_u32", hi, start, a[ld])
        if eb > 1:
            emit("s_lshl_b64", prod, prod, log2_exact(eb, "element size"))
        ptr = a[x]
        emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
        emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)
    if p.bias == "m":                                     # a per-row bias is stacked like A's rows (fp32)
        emit("s_lshl_b32", lo, start, 2)
        emit("s_lshr_b32", hi, start, 30)
    elif p.bias == "n":                                   # a column bias per group: z * stride_bias (0: shared)
        emit("s_mul_i32", lo, wg_z, a["stride_bias"])
        emit("s_mul_hi_u32", hi, wg_z, a["stride_bias"])
        emit("s_lshl_b64", prod, prod, 2)
    if p.bias != "none":
        ptr = a["bias"]
        emit("s_add_u32", Reg("s", ptr.index), Reg("s", ptr.index), lo)
        emit("s_addc_u32", Reg("s", ptr.index + 1), Reg("s", ptr.index + 1), hi)
