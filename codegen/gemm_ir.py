"""The tiled GEMM IR: a problem (what to compute) and a config (how to tile it), both immutable.

    D = act(alpha * op(A) @ op(B) + beta * C + bias)        (per batch)

Layout letters follow BLAS on row-major storage: `N` means the operand is stored as written (A is M x K
row-major, B is K x N row-major); `T` means it is stored transposed (A as K x M, B as N x K, both
row-major). `NT` — A normal, B transposed — is the common "both K-contiguous" case. C and D are M x N
row-major. Leading dimensions count elements. The problem's sizes are runtime arguments of the kernel;
`kernel_class()` says which properties shape the binary (the compile-cache key).

Block-scaled (OCP MX) problems: an operand of an MX element type (fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4)
may carry E8M0 scales, one per `scale_block` (32) consecutive K elements of each row of A / column of B:
`a_scale` / `b_scale` say how they are stored — "none" (no scales: every scale is 1), "plain" (A: [M, ceil(K/32)],
B: [N, ceil(K/32)] row-major uint8) or "shuffled" (the pre-shuffled layout of `jitgemm.mx.shuffle_scales`, rows
padded to 256 and columns to 8). MX and weight-only problems are stored K-contiguous (layout NT: A as M x K,
B as N x K), the layout the scaled MFMAs read; sub-byte elements are packed along K (fp4 two per byte, low nibble
first; fp6 four per three bytes) and leading dimensions still count elements. `b_preshuffle="16x16"` means B's
bytes are in the 16x16 pre-shuffled weight layout of `jitgemm.mx.shuffle_weight`. Weight-only problems pair a
bf16/fp16 A with an MX B (scaled); activation-and-weight problems pair two MX types (mixed formats allowed).

Scale modes (`scale_mode`, issue 26): fp32 scales applied to an fp8 or int8 product, the way deployed LLM
inference quantizes (hipBLASLt's outer-vector scaling, PyTorch's / vLLM's `scaled_mm`, aiter's a8w8 and I8gemm):

    "tensor":  D = epi(alpha * sa * sb * (A @ B))                       sa, sb: one fp32 value each
    "rowcol":  D = epi(alpha * sa[m] * sb[n] * (A @ B)[m, n])           sa: [M, 1] (per token), sb: [1, N] or [N]
    "block":   D = epi(alpha * sum_kb sa[m, kb] * sb[n // 128, kb] * (A[m, Kb] @ B[Kb, n]))
               A scales 1x128 ([M, ceil(K/128)]), B scales 128x128 ([ceil(N/128), ceil(K/128)]), Kb = K block kb

where epi adds beta*C and the bias and applies the activation (the existing epilogue). The scale arrays are
runtime arguments (kernel_abi.MX_KERNARGS: pointers a_scale/b_scale, ld_a_scale/ld_b_scale, batch strides):
- rowcol: `ld_a_scale` is the distance in elements between the scales of consecutive rows of A (1 for a
  contiguous [M, 1]; 0 broadcasts one value: per-tensor A beside per-channel B, as vLLM's scaled_mm accepts) and
  `ld_b_scale` the same along N;
- block: `a_scale_order` / `b_scale_order` say how the 2-D scale arrays are stored, as their producers write them:
  "row" = row-major [M, KB] / [NB, KB] (vLLM's and SGLang's per_token_group_quant, CK's gemm_a8w8_blockscale
  weights; ld = the row length >= KB) or "col" = column-major, i.e. stored as [KB, M] / [KB, NB] (aiter's
  asm flatmm_a8w8_blockscale takes x_scale [K/128, M] and w_scale [K/128, N/128], aiter
  csrc/include/asm_flatmm_a8w8_blockscale.h; DeepGEMM's TMA-aligned column-major activation scales; ld >= M / NB).
Inputs are 8-bit (fp8/bf8 FNUZ on gfx942, OCP fp8 on gfx950, int8 on both); int8's int32 accumulator is
converted to fp32 before scaling, so a scaled int8 problem writes bf16/fp16/fp32 and its epilogue is fp32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .dtypes import MX_ELEMENTS, DType, dtype

LAYOUTS = ("NN", "NT", "TN", "TT")
BIASES = ("none", "m", "n")          # none, one value per row of D (m), one per column (n)
ACTIVATIONS = ("none", "relu", "gelu")

# (A, B) -> accumulator; the output D may be cast to any float dtype for float accumulators.
_ACCUMULATOR = {
    ("fp32", "fp32"): "fp32", ("fp16", "fp16"): "fp32", ("bf16", "bf16"): "fp32",
    ("fp8", "fp8"): "fp32", ("fp8", "bf8"): "fp32", ("bf8", "fp8"): "fp32", ("bf8", "bf8"): "fp32",
    ("int8", "int8"): "int32",
}
DTYPE_PAIRS: tuple[tuple[str, str], ...] = tuple(_ACCUMULATOR)   # the unscaled pairs of FNUZ-fp8-era targets
# OCP fp8 pairs without scales (gfx950's fp8 MFMAs), every MX pair (activation and weight, mixed formats allowed;
# gfx950's f8f6f4 MFMAs select each side's format by cbsz/blgp) and weight-only pairs (16-bit A x MX B)
OCP_FP8_PAIRS: tuple[tuple[str, str], ...] = tuple((x, y) for x in ("fp8_e4m3", "fp8_e5m2")
                                                  for y in ("fp8_e4m3", "fp8_e5m2"))
MX_PAIRS: tuple[tuple[str, str], ...] = tuple((x, y) for x in MX_ELEMENTS for y in MX_ELEMENTS)
WEIGHT_ONLY_PAIRS: tuple[tuple[str, str], ...] = tuple((x, y) for x in ("bf16", "fp16") for y in MX_ELEMENTS)
_ACCUMULATOR.update({pair: "fp32" for pair in MX_PAIRS + WEIGHT_ONLY_PAIRS})
_FLOAT_OUT = ("fp32", "fp16", "bf16")
SCALE_LAYOUTS = ("none", "plain", "shuffled")
# B pre-shuffle layouts: aiter/ops/shuffle.py shuffle_weight(x, layout=(IN, IK)) on 1-byte elements (16x16 for MX
# weights and aiter's a8w8; 32x16 for aiter's I8gemm, whose host says "B:[N, K] i8 -> shuffle layout(32,16)" in
# aiter_meta/csrc/py_itfs_cu/asm_gemm_a8w8.cu and whose B loads step 1024 bytes per 32 K, 4096 per 128-K tile)
PRESHUFFLES = ("none", "16x16", "32x16")
SCALE_BLOCK = 32        # OCP MX v1.0: one E8M0 scale per 32 elements; gfx950's scaled MFMAs fix the same block
SCALE_MODES = ("none", "tensor", "rowcol", "block")
SCALE_ORDERS = ("row", "col")
# split-K kernel classes (codegen/gemm_split.py): "partial" writes each K range's raw sums to its workspace slice,
# "atomic" adds them into D with fp32/int32 buffer atomics, "streamk" splits the (tile, K step) space evenly
K_SPLITS = ("none", "partial", "atomic", "streamk")
BLOCK_SCALE_K = 128     # scale_mode="block": A scales cover 1x128 (M x K), B scales 128x128 (K x N), DeepSeek-V3's
BLOCK_SCALE_N = 128     # fp8 recipe (arXiv 2412.19437, "Fine-Grained Quantization")


class IRError(ValueError):
    """A problem or config that cannot be compiled, with the reason and what would be accepted."""


@dataclass(frozen=True)
class GemmProblem:
    """What to compute (the module docstring says how each field reads); `make` builds and checks one. (A docstring
    of its own also spares every process dataclasses' signature-built one: `inspect.signature` of ~40 fields.)"""

    m: int
    n: int
    k: int
    a: DType
    b: DType
    d: DType
    acc: DType
    c: DType | None = None
    layout: str = "NN"
    batch: int = 1
    lda: int | None = None
    ldb: int | None = None
    ldc: int | None = None
    ldd: int | None = None
    alpha: float = 1.0
    beta: float = 0.0
    bias: str = "none"
    activation: str = "none"
    a_scale: str = "none"        # "none" | "plain" | "shuffled": how A's E8M0 block scales are stored
    b_scale: str = "none"
    scale_block: int = SCALE_BLOCK
    b_preshuffle: str = "none"   # "none" | "16x16": B's bytes in the 16x16 pre-shuffled weight layout
    scale_mode: str = "none"     # "none" | "tensor" | "rowcol" | "block": fp32 scales of an 8-bit product
    a_scale_order: str = "row"   # block mode: A's [M, KB] scales row-major ("row") or column-major ("col")
    b_scale_order: str = "row"   # block mode: B's [NB, KB] scales row-major ("row") or column-major ("col")
    k_split: str = "none"        # "none" | "partial" | "atomic" | "streamk": split-K classes (codegen/gemm_split.py)
    grouped: bool = False        # MoE grouped GEMM: z = group, rows from a group-offsets array (codegen/gemm_group.py)

    @staticmethod
    def make(m: int, n: int, k: int, a: str | DType = "fp32", b: str | DType | None = None,
             d: str | DType | None = None, *, c: str | DType | None = None, acc: str | DType | None = None,
             layout: str | None = None, batch: int = 1, lda: int | None = None, ldb: int | None = None,
             ldc: int | None = None, ldd: int | None = None, alpha: float = 1.0, beta: float = 0.0,
             bias: str = "none", activation: str = "none", a_scale: str = "none", b_scale: str = "none",
             scale_block: int = SCALE_BLOCK, b_preshuffle: str = "none", scale_mode: str = "none",
             a_scale_order: str = "row", b_scale_order: str = "row", k_split: str = "none",
             grouped: bool = False) -> GemmProblem:
        """Build and validate a problem; dtypes by name, defaults filled in (B = A, accumulator from the pair,
        D = A for 16/32-bit floats, fp32 for 8-bit and narrower floats, int32 for int8; an MX or weight-only
        problem defaults to layout NT). A scaled 8-bit problem (scale_mode tensor/rowcol/block) writes fp32 by
        default, int8 too (its scales are fp32)."""
        da = a if isinstance(a, DType) else dtype(a)
        db = da if b is None else (b if isinstance(b, DType) else dtype(b))
        pair = (da.name, db.name)
        if pair not in _ACCUMULATOR:
            raise IRError(f"no GEMM for A={da.name}, B={db.name}; supported pairs: "
                          + ", ".join(f"{x}x{y}" for x, y in _ACCUMULATOR))
        dacc = dtype(_ACCUMULATOR[pair]) if acc is None else (acc if isinstance(acc, DType) else dtype(acc))
        if d is None:
            dd = dtype("fp32") if scale_mode not in (None, "none") else dacc if da.bits <= 8 else da
        else:
            dd = d if isinstance(d, DType) else dtype(d)
        dc = None if c is None else (c if isinstance(c, DType) else dtype(c))
        if layout is None:
            packed = da.bits < 8 or db.bits < 8
            layout = "NT" if packed or a_scale != "none" or b_scale != "none" else "NN"
        if not isinstance(layout, str):
            raise IRError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
        p = GemmProblem(m=m, n=n, k=k, a=da, b=db, d=dd, acc=dacc, c=dc, layout=layout.upper(), batch=batch,
                        lda=lda, ldb=ldb, ldc=ldc, ldd=ldd, alpha=float(alpha), beta=float(beta), bias=bias,
                        activation=activation, a_scale=a_scale, b_scale=b_scale, scale_block=scale_block,
                        b_preshuffle=b_preshuffle, scale_mode=scale_mode, a_scale_order=a_scale_order,
                        b_scale_order=b_scale_order, k_split=k_split,
                        grouped=bool(grouped))
        p.validate()
        return p

    # --- derived ----------------------------------------------------------------------------------
    @property
    def a_transposed(self) -> bool:
        return self.layout[0] == "T"

    @property
    def b_transposed(self) -> bool:
        return self.layout[1] == "T"

    @property
    def a_shape(self) -> tuple[int, int]:
        """Stored (rows, cols) of A."""
        return (self.k, self.m) if self.a_transposed else (self.m, self.k)

    @property
    def b_shape(self) -> tuple[int, int]:
        return (self.n, self.k) if self.b_transposed else (self.k, self.n)

    @property
    def lead(self) -> dict[str, int]:
        """Leading dimensions with defaults (packed storage)."""
        return {"a": self.lda or self.a_shape[1], "b": self.ldb or self.b_shape[1],
                "c": self.ldc or self.n, "d": self.ldd or self.n}

    def without_packed_lds(self) -> GemmProblem:
        """The same problem with every leading dimension that equals packed storage left out (None): the one
        spelling of a packed problem, as `make`, the CLI and the tuning database write it, so `matmul`'s problem
        (which states its lds), a table's row and `jitgemm select` share one key. The one home of this rule:
        `jitgemm.api.prepare` and `jitgemm.tuning_db.problem_key` call it."""
        packed = {"a": self.a_shape[1], "b": self.b_shape[1], "c": self.n, "d": self.n}
        same = {f"ld{x}": None for x in packed if getattr(self, f"ld{x}") is not None
                and getattr(self, f"ld{x}") == packed[x]}
        return replace(self, **same) if same else self

    def validate(self) -> None:
        for name in ("m", "n", "k", "batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise IRError(f"{name} must be a positive integer, got {value!r}")
        if self.layout not in LAYOUTS:
            raise IRError(f"layout {self.layout!r} is not one of {', '.join(LAYOUTS)}")
        if (self.a.name, self.b.name) not in _ACCUMULATOR:
            raise IRError(f"no GEMM for A={self.a.name}, B={self.b.name}")
        if self.acc.name != _ACCUMULATOR[(self.a.name, self.b.name)]:
            raise IRError(f"accumulator for {self.a.name}x{self.b.name} is "
                          f"{_ACCUMULATOR[(self.a.name, self.b.name)]}, not {self.acc.name}")
        allowed_out = _FLOAT_OUT if self.epilogue_float else ("int32",)
        if self.d.name not in allowed_out:
            raise IRError(f"output dtype {self.d.name} with a {self.acc.name} accumulator; accepted: "
                          f"{', '.join(allowed_out)}")
        if self.c is not None and self.c.name not in allowed_out:
            raise IRError(f"C dtype {self.c.name}; accepted: {', '.join(allowed_out)}")
        if self.beta != 0.0 and self.c is None:
            raise IRError("beta is non-zero but there is no C input")
        if self.bias not in BIASES:
            raise IRError(f"bias {self.bias!r} is not one of {', '.join(BIASES)}")
        if self.activation not in ACTIVATIONS:
            raise IRError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if not self.epilogue_float and (self.activation == "gelu" or self.alpha != int(self.alpha)
                                        or self.beta != int(self.beta)):
            raise IRError("int8 GEMM takes integer alpha/beta and no gelu (a scaled int8 GEMM, scale_mode "
                          "tensor/rowcol/block, takes any)")
        rows = {"a": self.a_shape[1], "b": self.b_shape[1], "c": self.n, "d": self.n}
        for op, ld in (("a", self.lda), ("b", self.ldb), ("c", self.ldc), ("d", self.ldd)):
            if ld is not None and ld < rows[op]:
                raise IRError(f"ld{op}={ld} is smaller than the stored row length {rows[op]}")
        self._validate_scaling()

    @property
    def epilogue_float(self) -> bool:
        """The epilogue computes in fp32: a float accumulator, or an int32 one that is scaled (scale_mode): alpha,
        beta, the bias and C are then fp32, as D is."""
        return self.acc.kind == "float" or self.scale_mode != "none"

    @property
    def scale_args(self) -> bool:
        """The kernel takes scale operands (kernel_abi.MX_KERNARGS): MX block scales or a scale mode."""
        return self.scaled or self.scale_mode != "none"

    def mode_scale_shape(self, op: str) -> tuple[int, int] | None:
        """Logical (rows, columns) of `op`'s fp32 scale array in this problem's scale mode ("a" or "b"): tensor
        (1, 1); rowcol A (M, 1), B (1, N); block A (M, ceil(K/128)), B (ceil(N/128), ceil(K/128)); None: no mode."""
        kb = -(-self.k // BLOCK_SCALE_K)
        return {"none": None, "tensor": (1, 1),
                "rowcol": (self.m, 1) if op == "a" else (1, self.n),
                "block": (self.m, kb) if op == "a" else (-(-self.n // BLOCK_SCALE_N), kb)}[self.scale_mode]

    @property
    def scaled(self) -> bool:
        """Block-scaled or sub-byte operands: the problem needs gfx950's f8f6f4 MFMAs (or a dequant in registers).
        Unscaled OCP fp8 is not: it is an ordinary GEMM on gfx950's fp8 MFMAs, in any layout."""
        return self.a_scale != "none" or self.b_scale != "none" or self.a.bits < 8 or self.b.bits < 8

    @property
    def weight_only(self) -> bool:
        """A 16-bit float activation times an MX weight."""
        return self.a.bits >= 16 and self.b.microscaling

    def scale_shape(self, op: str) -> tuple[int, int] | None:
        """Rows x columns (uint8) of the plain scale array of `op` ("a" or "b"), None when it has no scales."""
        if getattr(self, f"{op}_scale") == "none":
            return None
        rows = self.m if op == "a" else self.n
        return rows, -(-self.k // self.scale_block)

    def _validate_scaling(self) -> None:
        for op in ("a", "b"):
            layout = getattr(self, f"{op}_scale")
            kind = getattr(self, op)
            if layout not in SCALE_LAYOUTS:
                raise IRError(f"{op}_scale {layout!r} is not one of {', '.join(SCALE_LAYOUTS)}")
            if layout != "none" and not kind.microscaling:
                raise IRError(f"{op}_scale={layout}: only MX element types carry block scales "
                              f"({', '.join(MX_ELEMENTS)}), {op.upper()} is {kind.name}")
        self._validate_scale_mode()
        if self.k_split != "none":
            self._validate_partial()
        if self.grouped:
            self._validate_grouped()
        if self.b_preshuffle not in PRESHUFFLES:
            raise IRError(f"b_preshuffle {self.b_preshuffle!r} is not one of {', '.join(PRESHUFFLES)}")
        if self.weight_only and self.b_scale == "none":
            raise IRError("weight-only problem (16-bit A, MX B) needs B's scales: b_scale plain or shuffled")
        if not self.scaled:
            if self.b_preshuffle != "none":
                # aiter's a8w8 / I8gemm assembly GEMMs read 8-bit B pre-shuffled 16x16 too (aiter/ops/shuffle.py
                # shuffle_weight on 1-byte elements: the same byte permutation as MX weights')
                if self.scale_mode == "none" or self.b.bits != 8 or self.layout != "NT":
                    raise IRError("b_preshuffle applies to MX weights (an MX element type for B) or to the 8-bit B "
                                  "of a scaled (scale_mode) NT problem")
                self._check_preshuffle()
            return
        if self.scale_block != SCALE_BLOCK:
            raise IRError(f"scale_block {self.scale_block}: the scaled MFMAs take one scale per {SCALE_BLOCK} "
                          "K elements (OCP MX v1.0); accepted: 32")
        if self.layout != "NT":
            raise IRError(f"layout {self.layout}: MX and weight-only operands are stored K-contiguous; accepted: NT "
                          "(A as M x K, B as N x K row-major)")
        if self.acc.name != "fp32":
            raise IRError(f"MX problems accumulate in fp32, not {self.acc.name}")
        for op in ("a", "b"):
            kind = getattr(self, op)
            ld = self.lead[op]
            if kind.packed and (ld * kind.bits) % 8:
                raise IRError(f"ld{op}={ld}: rows of packed {kind.name} must start on a byte; accepted: a multiple "
                              f"of {8 // math.gcd(8, kind.bits)} elements")
        if self.b_preshuffle == "32x16":
            raise IRError("b_preshuffle=32x16 is aiter's I8gemm int8 layout; MX weights take 16x16")
        if self.b_preshuffle == "16x16":
            self._check_preshuffle()

    def _check_preshuffle(self) -> None:
        kb = self.b.storage_bytes(self.lead["b"])
        rows = int(self.b_preshuffle.split("x")[0])
        if self.n % rows or kb % 32 or self.lead["b"] != self.b_shape[1]:
            raise IRError(f"b_preshuffle={self.b_preshuffle} needs N a multiple of {rows} and packed rows of a "
                          f"multiple of 32 bytes (N={self.n}, {kb} bytes per row, ldb={self.lead['b']})")

    def _validate_grouped(self) -> None:
        """A grouped GEMM (codegen/gemm_group.py): A stacked row-major [sum M_g, K], D [sum M_g, N], B one per
        group; `m` is the largest group's rows, `batch` the group count."""
        if self.a_transposed:
            raise IRError(f"grouped: A is the groups' rows stacked row-major ([sum M, K], layout N); layout "
                          f"{self.layout} stores A transposed")
        if self.scaled or self.scale_mode != "none" or self.k_split != "none":
            raise IRError("grouped: no scales, no split-K")

    def _validate_partial(self) -> None:
        """A split-K partial kernel (codegen/gemm_split.py) writes raw sums: no epilogue of its own, and its z
        dimension holds the K ranges (one GEMM)."""
        if self.k_split not in K_SPLITS:
            raise IRError(f"k_split {self.k_split!r} is not one of {', '.join(K_SPLITS)}")
        if self.scale_mode in ("tensor", "rowcol"):
            raise IRError(f"k_split={self.k_split}: tensor/rowcol scales are applied once by the reduction (the "
                          "partial kernel has scale_mode=none)")
        out = "fp32" if self.scale_mode == "block" else self.acc.name      # block: scaled fp32 running sums
        if self.d.name != out or self.alpha != 1.0 or self.beta != 0.0 or self.c is not None \
                or self.bias != "none" or self.activation != "none":
            raise IRError(f"k_split={self.k_split} writes raw partial sums: d must be the accumulator "
                          f"({out}), alpha 1, beta 0, no C, bias or activation (the reduction kernel applies "
                          "the epilogue)")
        if self.batch != 1 and self.k_split == "streamk":
            raise IRError(f"k_split=streamk: batch={self.batch}; stream-K shares one GEMM's tiles (batch 1 only; "
                          "split-K partial and atomic take batches)")

    def _validate_scale_mode(self) -> None:
        if self.scale_mode not in SCALE_MODES:
            raise IRError(f"scale_mode {self.scale_mode!r} is not one of {', '.join(SCALE_MODES)}")
        for op in ("a", "b"):
            order = getattr(self, f"{op}_scale_order")
            if order not in SCALE_ORDERS:
                raise IRError(f"{op}_scale_order {order!r} is not one of {', '.join(SCALE_ORDERS)} (row-major or "
                              "column-major block scales)")
            if order != "row" and self.scale_mode != "block":
                raise IRError(f"{op}_scale_order={order} describes block scales; scale_mode is {self.scale_mode} "
                              "(accepted: row, the default)")
        if self.scale_mode == "none":
            return
        if self.a_scale != "none" or self.b_scale != "none":
            raise IRError(f"scale_mode={self.scale_mode} takes fp32 scales of fp8/int8 operands; MX block scales "
                          "(a_scale/b_scale plain or shuffled) are the other scaling: give one of them")
        if self.a.bits != 8 or self.b.bits != 8 or self.a.kind != self.b.kind:
            raise IRError(f"scale_mode={self.scale_mode}: A={self.a.name}, B={self.b.name}; accepted: 8-bit operands "
                          "(fp8/bf8 on gfx942, fp8_e4m3/fp8_e5m2 on gfx950, int8xint8)")

    def kernel_class(self) -> GemmProblem:
        """The problem with everything that is a runtime argument normalised away: two problems with the same
        class run with the same kernel."""
        # a scaled class keeps sizes its own validation accepts (its IR text parses back): K of whole 128-element
        # steps (packed rows on byte and 32-byte boundaries), N of 16-row weight tiles
        k, n = (128, 16) if self.scaled else (1, 1)
        return replace(self, m=1, n=n, k=k, batch=1, lda=None, ldb=None, ldc=None, ldd=None,
                       alpha=1.0 if self.alpha == 1.0 else 2.0, beta=0.0 if self.beta == 0.0 else 2.0)


@dataclass(frozen=True)
class GemmConfig:
    """How to tile: macro tile MT_M x MT_N x DEPTH_K per workgroup, WAVES_M x WAVES_N waves, one MFMA."""

    tile_m: int
    tile_n: int
    depth_k: int
    waves_m: int
    waves_n: int
    mfma: str
    lds_pad: int = 0
    prefetch: int = 1
    unroll: int = 1
    vec_a: int = 1      # elements per global load of A along its contiguous dimension
    vec_b: int = 1
    lds_buffers: int = 1  # 2: the next tile is written to a second LDS buffer while this one is multiplied
    extras: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def wave_tile(self) -> tuple[int, int]:
        return self.tile_m // self.waves_m, self.tile_n // self.waves_n

    @property
    def workgroup_size(self) -> int:
        from jitgemm.isa.spec.mfma import WAVE64  # here, not above: the IR's import stays free of the ISA's

        return self.waves_m * self.waves_n * WAVE64
