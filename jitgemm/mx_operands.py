"""MX operands of `matmul`: MXTensors (and the plain arrays beside them) turned into the storage a block-scaled
kernel reads, plus the values of its scale arguments.

How the logical operands map to the kernel's storage (GemmProblem's block-scaled rule: layout NT, both operands
K-contiguous, sub-byte elements packed along K):
- A is the logical (M, K) operand: an MXTensor quantized along K (axis 1), stored as its [M, K bytes] rows; or a
  bf16/fp16 array (weight-only) or an OCP fp8 array (an unscaled side), copied K-contiguous when it is not.
- B is the logical (K, N) operand of `a @ b`: an MXTensor quantized along K (axis 0), stored transposed as
  [N, K bytes] rows, one scale row per column of B. PyTorch-style [N, K] weights are `jitgemm.mx.weights(w, fmt)`
  (a transposed view, so nothing is copied); a (K, N) tensor made by `quantize_mx(b, fmt, axis=0)` is copied
  to the [N, K] rows once.
- Scales: plain ones are passed as [rows, ceil(K/32)] (ld = ceil(K/32)); shuffled ones as stored (ld = the
  padded column count), jitgemm.codegen.kernel_abi.MX_KERNARGS. B's bytes may be 16x16 pre-shuffled
  (`MXTensor.shuffle(weight=True)`), A's not (the scaled MFMAs' weight layout is B's).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from jitgemm.codegen.dtypes import DType, dtype, of_numpy
from jitgemm.codegen.gemm_ir import SCALE_BLOCK, IRError

if TYPE_CHECKING:    # imported where used: jitgemm.mx imports ml_dtypes (~0.5 s CPU), which `target_has_mx`
    from .mx import MXTensor  # (the selector's MX check) does not need (issue 31)


class MXOperandError(IRError):
    """An MX operand `matmul` cannot use: the message names the argument and what is accepted."""


@dataclass(frozen=True)
class MXOperand:
    """One operand as a block-scaled kernel reads it: `rows` x `k` logical elements, `storage` the flat buffer of
    its rows (leading dimension `ld` elements), `scales` the flat scale buffer (None: no scales)."""

    dtype: DType
    rows: int
    k: int
    storage: np.ndarray
    ld: int
    scale: str = "none"              # GemmProblem's a_scale / b_scale
    scales: np.ndarray | None = None
    ld_scale: int = 0
    preshuffle: str = "none"         # GemmProblem's b_preshuffle


def _elements_per_row(kind: DType, row_bytes: int) -> int:
    """Leading dimension in elements of rows `row_bytes` long (packed rows start on a byte)."""
    return row_bytes * 8 // kind.bits


def _tensor(x: MXTensor, name: str, k_axis: int) -> MXOperand:
    logical = "(M, K)" if name == "a" else "(K, N)"
    if len(x.shape) != 2:
        raise MXOperandError(f"{name}: MX operands are 2-D {logical}; this MXTensor has shape {x.shape} (batched MX "
                             "GEMMs are not supported)")
    if x.axis != k_axis:
        hint = (" (for PyTorch-style [N, K] weights use jitgemm.mx.weights(w, fmt), which returns the (K, N) B)"
                if name == "b" else "")
        raise MXOperandError(f"{name}: the MXTensor's blocks run along axis {x.axis} of its {x.shape} shape; as the "
                             f"{logical} operand it must be quantized along K (axis {k_axis}){hint}")
    if x.block != SCALE_BLOCK:
        raise MXOperandError(f"{name}: block {x.block}; the scaled MFMAs take one E8M0 scale per {SCALE_BLOCK} K "
                             f"elements (OCP MX v1.0): quantize_mx(..., block={SCALE_BLOCK})")
    if name == "a" and x.data_layout != "plain":
        raise MXOperandError("a: data_layout 16x16 is the pre-shuffled weight layout, taken for B only; pass "
                             "a.unshuffle() or shuffle A's scales alone (a.shuffle(scales=True, weight=False))")
    kind = dtype(x.fmt)
    k = x.shape[k_axis]
    rows = x.shape[1 - k_axis]
    data = np.ascontiguousarray(x.data if x.data_layout == "16x16" else x.kernel_bytes())
    if x.scale_layout == "plain":
        scales = np.ascontiguousarray(x.scale_rows())
    else:
        scales = np.ascontiguousarray(x.scales)
    return MXOperand(kind, rows, k, data.reshape(-1), _elements_per_row(kind, data.shape[1]), x.scale_layout,
                     scales.reshape(-1), scales.shape[1], "16x16" if x.data_layout == "16x16" else "none")


def _array(x, name: str, k_axis: int) -> MXOperand:
    logical = "(M, K)" if name == "a" else "(K, N)"
    if not isinstance(x, np.ndarray):
        raise MXOperandError(f"{name}: expected an MXTensor or a numpy array, got {type(x).__name__}")
    if x.ndim != 2:
        raise MXOperandError(f"{name}: with an MX operand, {name} is a 2-D {logical} array; got shape {x.shape}")
    try:
        kind = of_numpy(x.dtype)
    except ValueError as exc:
        raise MXOperandError(f"{name}: {exc}") from None
    accepted = ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2") if name == "a" else ("fp8_e4m3", "fp8_e5m2")
    if kind.name not in accepted:
        other = "b" if name == "a" else "a"
        extra = (" (weight-only GEMMs take the 16-bit activations as A and the MX weights as B: compute "
                 "(b.T @ a.T).T)" if name == "b" and kind.name in ("bf16", "fp16") else "")
        raise MXOperandError(f"{name}: a {kind.name} array beside an MX {other}; accepted for {name}: an MXTensor or "
                             f"a numpy array of {', '.join(accepted)}{extra}")
    rows_major = x if k_axis == 1 else x.T          # [rows, K]
    data = np.ascontiguousarray(rows_major)
    return MXOperand(kind, data.shape[0], data.shape[1], data.reshape(-1), data.shape[1])


@functools.cache
def target_has_mx(arch: str) -> bool:
    """Whether the target's spec has matrix instructions with operands of an MX sub-byte element format (the
    spec's data formats, read as IR dtypes: FMT_NUM_PK32_FP6 and friends on CDNA 4), i.e. the f8f6f4 MFMAs."""
    from jitgemm import isa
    from jitgemm.codegen.dtypes import element_of

    spec = isa.load_spec(arch)
    flavour = isa.target_profile(isa.spec.targets.base_target(arch)).fp8_flavour
    used = {o.data_format for inst in spec.instructions for enc in inst.encodings for o in enc.operands
            if o.data_format}
    for name in used:
        fmt = spec.data_formats.get(name)
        kind = element_of(fmt, flavour) if fmt is not None else None
        if kind is not None and kind.microscaling and kind.packed:
            return True
    return False


def mx_operands(a, b) -> tuple[MXOperand, MXOperand]:
    """A and B of an MX `matmul` (at least one an MXTensor) in the kernel's storage, checked against each other."""
    from .mx import MXTensor

    oa = _tensor(a, "a", 1) if isinstance(a, MXTensor) else None
    ob = _tensor(b, "b", 0) if isinstance(b, MXTensor) else None
    if oa is None:
        oa = _array(a, "a", 1)
    if ob is None:
        ob = _array(b, "b", 0)
    if oa.k != ob.k:
        raise MXOperandError(f"a is ({oa.rows}, {oa.k}), b is ({ob.k}, {ob.rows}): inner dimensions {oa.k} and "
                             f"{ob.k} differ")
    if oa.dtype.bits >= 16 and ob.scale == "none":
        raise MXOperandError("b: a weight-only GEMM (16-bit A) needs MX weights with scales as B")
    return oa, ob
