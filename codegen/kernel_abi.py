"""The GEMM kernel ABI every generator of this project implements: the kernel-argument layout, the buffer
resource constants, the extent rule for a matrix's buffer, the grid formula, the kernel's symbol name and
what a lowering hands to the code-object writer. No generator owns it, so neither lowering imports the other
(codegen/gemm_asm.py and codegen/llvm/ both read it from here).

Facts and their authorities:
- Kernel arguments are one by-value kernarg segment (AMDGPUUsage, "Kernel Argument Passing"): 8-byte
  global pointers, then 4-byte integers/floats, naturally aligned. LLVM lays out the LLVM generator's
  `amdgpu_kernel` arguments by the same rule; codegen/llvm/llvm_generator.py checks that it did (`_check_abi`).
- A raw buffer resource's word 3 (CDNA 3 ISA guide, "Buffer resource descriptor"): DST_SEL/NUM_FORMAT zero
  and DATA_FORMAT 32 (bits 15..18 = 4 in the 0x00020000 that LLVM and Triton use on gfx942 for raw buffers;
  tests/codegen/test_llvm_codegen.py compares with LLVM's own kernels).
- Out of range: a buffer access whose offset is at or past num_records reads 0 and drops a store (ISA guide,
  "Buffer addressing: range checking", raw buffers with stride 0), so every matrix's num_records is exactly
  its bytes, `(rows - 1) * ld + cols` elements, and a lane that must not touch memory uses offset OOB.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .gemm_ir import GemmConfig, GemmProblem

# name, offset, size, type ("ptr", "i32", or "f32" -- i32 in integer GEMMs)
KERNARGS: tuple[tuple[str, int, int, str], ...] = (
    ("a", 0, 8, "ptr"), ("b", 8, 8, "ptr"), ("c", 16, 8, "ptr"), ("d", 24, 8, "ptr"), ("bias", 32, 8, "ptr"),
    ("m", 40, 4, "i32"), ("n", 44, 4, "i32"), ("k", 48, 4, "i32"), ("batch", 52, 4, "i32"),
    ("lda", 56, 4, "i32"), ("ldb", 60, 4, "i32"), ("ldc", 64, 4, "i32"), ("ldd", 68, 4, "i32"),
    ("stride_a", 72, 4, "i32"), ("stride_b", 76, 4, "i32"), ("stride_c", 80, 4, "i32"), ("stride_d", 84, 4, "i32"),
    ("alpha", 88, 4, "f32"), ("beta", 92, 4, "f32"),
)
KERNARG_SIZE = 96
# A block-scaled problem (GemmProblem.scaled) appends its scale operands: one pointer per scaled side (0 when the
# side has no scales), the scale arrays' leading dimensions (uint8 entries per row: ceil(k/32) when plain, the
# padded column count when shuffled) and their per-batch strides (entries). Unscaled kernels keep the 96 bytes.
# A problem with a scale mode (GemmProblem.scale_mode, fp32 scales) takes the same six arguments: the pointers to
# its fp32 scale arrays, their leading dimensions in fp32 elements (rowcol: the stride between consecutive rows of
# A / columns of B, 0 broadcasting one value; block: the row length of the stored array, gemm_ir's a_scale_order)
# and their per-batch strides (elements).
MX_KERNARGS: tuple[tuple[str, int, int, str], ...] = (
    ("a_scale", 96, 8, "ptr"), ("b_scale", 104, 8, "ptr"),
    ("ld_a_scale", 112, 4, "i32"), ("ld_b_scale", 116, 4, "i32"),
    ("stride_a_scale", 120, 4, "i32"), ("stride_b_scale", 124, 4, "i32"),
)
MX_KERNARG_SIZE = 128
OOB = 0x80000000          # an offset past any num_records the kernel sets (matrices are < 2 GiB)
RSRC_WORD3 = 0x00020000   # raw buffer, DATA_FORMAT 32 (the value LLVM and Triton use on gfx942)


# A grouped GEMM (GemmProblem.grouped, codegen/gemm_group.py) appends the pointer to its int32 group offsets [G + 1]
# (group g's rows of A and D are offsets[g] .. offsets[g+1]) and the per-group stride of a column bias (elements:
# 0 = one [N] bias for every group, N = a bias per group [G, N], as MoE experts with biases have); the segment is
# padded to 128 bytes (the kernel loads its arguments 32 bytes at a time).
GROUP_KERNARGS: tuple[tuple[str, int, int, str], ...] = (("group_offsets", 96, 8, "ptr"),
                                                         ("stride_bias", 104, 4, "i32"))


def kernargs(problem: GemmProblem) -> tuple[tuple[str, int, int, str], ...]:
    """The kernel-argument layout of a kernel for `problem` (name, offset, size, type)."""
    if problem.grouped:
        return KERNARGS + GROUP_KERNARGS
    return KERNARGS + MX_KERNARGS if problem.scale_args else KERNARGS


def kernarg_size(problem: GemmProblem) -> int:
    return MX_KERNARG_SIZE if problem.scale_args or problem.grouped else KERNARG_SIZE


def mode_scale_extent(problem: GemmProblem, op: str) -> tuple[str, str, str]:
    """How many fp32 elements `op`'s scale array spans in a scale mode, as (rows, cols, ld) expressions over the
    kernel's arguments and the block counts "kb" = ceil(k/128), "nb" = ceil(n/128): the buffer holds
    `(rows - 1) * ld + cols` elements (the extent rule of every matrix), so a lowering sets num_records to
    exactly that many bytes x 4. Tensor: 1 element (rows = cols = "1"); rowcol: M (A) or N (B) entries `ld`
    apart; block: the stored array ([M, KB] / [NB, KB] row-major, or their transposes when column-major)."""
    p = problem
    mode = p.scale_mode
    if mode == "tensor":
        return "1", "1", f"ld_{op}_scale"
    if mode == "rowcol":
        return ("m" if op == "a" else "n"), "1", f"ld_{op}_scale"
    rows = "m" if op == "a" else "nb"
    if getattr(p, f"{op}_scale_order") == "col":
        return "kb", rows, f"ld_{op}_scale"
    return rows, "kb", f"ld_{op}_scale"


def matrix_bytes(kind, rows: int, cols: int, ld: int) -> int:
    """Bytes a row-major rows x cols matrix of dtype `kind` with leading dimension `ld` (elements) spans; packed
    sub-byte rows start on a byte (GemmProblem.validate), so this is the extent rule in whole bytes."""
    return kind.storage_bytes(extent(rows, cols, ld))


def scale_layout_shape(problem: GemmProblem, op: str) -> tuple[int, int] | None:
    """(rows, columns) of `op`'s scale array as stored: plain [rows, ceil(k/32)], or the shuffled layout's
    padding (rows to 256, columns to 8; jitgemm.mx.shuffle_scales). None when `op` has no scales."""
    plain = problem.scale_shape(op)
    if plain is None:
        return None
    if getattr(problem, f"{op}_scale") == "shuffled":
        return -(-plain[0] // 256) * 256, -(-plain[1] // 8) * 8
    return plain


def matrix_extent(problem: GemmProblem, x: str) -> tuple[str, str, str, int]:
    """(rows argument, cols argument, leading-dimension argument, element bytes) of matrix `x` ("a", "b", "c",
    "d") as stored: its buffer holds `(rows - 1) * ld + cols` elements (the extent rule both lowerings use for
    num_records, and `jitgemm.api` for the flat view it passes)."""
    p = problem
    rows, cols = {"a": ("k", "m") if p.a_transposed else ("m", "k"),
                  "b": ("n", "k") if p.b_transposed else ("k", "n"),
                  "c": ("m", "n"), "d": ("m", "n")}[x]
    eb = {"a": p.a, "b": p.b, "c": p.c or p.d, "d": p.d}[x].bytes
    return rows, cols, f"ld{x}", eb


def extent(rows: int, cols: int, ld: int) -> int:
    """Elements a row-major rows x cols matrix with leading dimension `ld` spans."""
    return (rows - 1) * ld + cols


def grid_formula(config: GemmConfig) -> tuple[str, str, str]:
    """The launch grid in workgroups, as the contract writes it: x over N tiles, y over M tiles, z batch."""
    return (f"ceil(n/{config.tile_n})", f"ceil(m/{config.tile_m})", "batch")


def kernel_name(problem: GemmProblem, config: GemmConfig, suffix: str = "") -> str:
    """The kernel's symbol: dtypes, layout, tile and a digest of the kernel class and config; a generator
    other than the direct one appends its suffix (e.g. "_llvm") so both can live in one code object."""
    from .gemm_text import format_ir

    p = problem
    tail = f"{p.layout}_{config.tile_m}x{config.tile_n}x{config.depth_k}"
    digest = hashlib.sha256(format_ir(p.kernel_class(), config).encode()).hexdigest()[:8]
    return f"jitgemm_{p.a.name}_{p.b.name}_{p.d.name}_{tail}_{digest}{suffix}"


@dataclass(frozen=True)
class LoweredKernel:
    """What a lowering produced, as the code-object writer and the contract need it. `instructions` is empty
    for LLVM kernels (LLVM's object carries its own code); `scratch_bytes` > 0 means the kernel spills."""

    name: str
    instructions: tuple
    lds_bytes: int
    next_free_vgpr: int
    next_free_sgpr: int
    next_free_agpr: int
    workgroup_size: int
    grid: tuple[str, str, str]
    scratch_bytes: int = 0
