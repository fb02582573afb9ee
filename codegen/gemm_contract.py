"""The kernel contract of a kernel from the direct generator (plain data; `jitgemm.contract` validates it).

What a generated kernel can take follows from its kernel class and config: vector loads need the
contiguous dimension and leading dimension to be multiples of the vector width and the pointer aligned to
the vector's bytes; everything else (ragged M/N/K, any batch) is handled by bounds-checked buffer accesses.
"""

from __future__ import annotations

from .gemm_group import group_fields
from .gemm_ir import GemmConfig, GemmProblem
from .gemm_split import contract_fields
from .gemm_text import format_ir
from .kernel_abi import LoweredKernel, kernarg_size, kernargs


def gemm_contract(problem: GemmProblem, config: GemmConfig, lowered: LoweredKernel, target_id: str,
                  code_sha256: str | None, generator: str, version: str) -> dict:
    """The contract of a generated kernel. `lowered` holds the register, LDS and scratch figures the kernel
    really has (after compiling) or the generator's plan of them (a candidate not compiled yet)."""
    p = problem
    integer = not p.epilogue_float       # alpha/beta are i32 in an unscaled int8 GEMM
    args = []
    for name, offset, size, kind in kernargs(p):
        role = {"stride_a": "stride_a", "stride_b": "stride_b", "stride_c": "stride_c",
                "stride_d": "stride_d"}.get(name, name)
        if kind == "f32" and integer:
            kind = "i32"
        args.append({"name": name, "role": role, "offset": offset, "size": size, "type": kind})
    legality: dict = {"batch": True, "split_k": False, "max": {"m": 2**31 - 1, "n": 2**31 - 1, "k": 2**31 - 1}}
    ld_multiple, align, divisible = {}, {}, {}
    for op, vec, kind, transposed in (("a", config.vec_a, p.a, p.a_transposed),
                                      ("b", config.vec_b, p.b, p.b_transposed)):
        if vec > 1:
            ld_multiple[op] = vec
            align[op] = kind.storage_bytes(vec)
            # the contiguous dimension must hold whole vectors
            contiguous = {("a", False): "k", ("a", True): "m", ("b", False): "n", ("b", True): "k"}[(op, transposed)]
            divisible[contiguous] = max(divisible.get(contiguous, 1), vec)
    if ld_multiple:
        legality["ld_multiple"] = ld_multiple
        legality["align_bytes"] = align
    if divisible:
        legality["divisible"] = divisible
    if p.scale_mode != "none":     # fp32 scale arrays, read a dword at a time
        legality.setdefault("align_bytes", {}).update({"a_scale": 4, "b_scale": 4})
    if p.scaled:
        # the direct MX kernels read a row's last partial dword as the 4 bytes ending at the row's end (raw buffers
        # range-check per dword; codegen/gemm_plan_mx.py), so every matrix holds at least one dword: K * bits >= 32
        legality["min"] = {"k": max(-(-32 // p.a.bits), -(-32 // p.b.bits))}
    mfma = config.mfma
    return group_fields(p, contract_fields(p, config, {
        "contract_version": 1,
        "identity": {"generator": generator, "generator_version": version, "kernel": lowered.name,
                     "source": format_ir(p.kernel_class(), config), "target": target_id,
                     **({"code_sha256": code_sha256} if code_sha256 else {})},
        "operation": {"kind": "gemm", "a": p.a.name, "b": p.b.name, "c": p.c.name if p.c else None,
                      "d": p.d.name, "acc": p.acc.name, "layout": p.layout,
                      **({"a_scale": p.a_scale, "b_scale": p.b_scale, "scale_block": p.scale_block,
                          "b_preshuffle": p.b_preshuffle} if p.scaled else {}),
                      **(_scale_mode_fields(p) if p.scale_mode != "none" else {})},
        "abi": {"kernarg_size": kernarg_size(p), "strides_in": "elements", "args": args},
        "launch": {"workgroup": [lowered.workgroup_size, 1, 1], "grid": list(lowered.grid),
                   "lds_bytes": 0},
        "legality": legality,
        "features": {"alpha": p.alpha != 1.0, "beta": p.c is not None and p.beta != 0.0,
                     "c_input": p.c is not None and p.beta != 0.0, "bias": [p.bias],
                     "activation": [p.activation], "output_cast": p.d != p.acc},
        "tile": {"m": config.tile_m, "n": config.tile_n, "k": config.depth_k, "mfma": mfma,
                 "vgprs": lowered.next_free_vgpr, "agprs": lowered.next_free_agpr, "sgprs": lowered.next_free_sgpr,
                 "lds": lowered.lds_bytes, "scratch": lowered.scratch_bytes,
                 **({"load_bytes": _mx_load_bytes(p)} if p.scaled else {})},
    }))


def _scale_mode_fields(p: GemmProblem) -> dict:
    """operation fields of a scaled 8-bit problem (gemm_ir's scale modes): the mode, and for block scales how
    each side's [M, KB] / [NB, KB] fp32 array is stored."""
    out = {"scale_mode": p.scale_mode}
    if p.scale_mode == "block":
        out.update({"a_scale_order": p.a_scale_order, "b_scale_order": p.b_scale_order})
    return out


def _mx_load_bytes(p: GemmProblem) -> int:
    """Bytes each lane reads per global load in both generators' MX lowerings, whatever the pointers' alignment:
    a lane's MFMA fragment is a contiguous K run of its row (K-contiguous storage), read with 16-byte buffer
    loads, 6-bit runs in 8-byte pieces (codegen/gemm_asm_mx.py, codegen/llvm/mx_builder.py). The cost model
    reads it where `legality.align_bytes` says nothing (selector._load_width)."""
    return 8 if 6 in (p.a.bits, p.b.bits) else 16
