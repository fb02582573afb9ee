"""PyTorch operators backed by jitgemm: `import jitgemm.torch` registers

- `torch.ops.jitgemm.mm(a, b)` and `torch.ops.jitgemm.bmm(a, b)`, with autograd (the backward GEMMs are the same
  ops, so they go through the same selector);
- `torch.ops.jitgemm.scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=None)`: `torch._scaled_mm`'s /
  vLLM's scaled 8-bit GEMM (per-tensor or per-row x per-column fp32 scales; `jitgemm.scaled_matmul`);
- `torch.ops.jitgemm.mx_mm(a, a_scale, a_format, b, b_scale, b_format, k, out_dtype=None)`: MX operands as
  bytes + E8M0 scales + OCP format names (`jitgemm.mx.MXTensor`), B as nn.Linear's [N, K] weight.

Why custom ops: `torch.library.custom_op` + `register_fake` let `torch.compile(fullgraph=True)` trace a model
that calls them without a graph break (the fake functions give shapes and dtypes; the real kernel never runs
while tracing), which calling a Python GEMM from a model does not.

Where they run: CPU tensors go through `jitgemm.matmul` (DLPack, zero-copy; the emulator without a GPU); tensors
on a ROCm device (device type 'cuda' under a HIP build of torch) pass their data pointers straight into the hip
launch's kernel arguments, nothing copied (`_device_launch`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["mm", "bmm", "scaled_mm", "mx_mm", "ARCH"]

ARCH: str | None = None     # target for CPU tensors (None: gfx942, or the one an fp8 flavour / MX names)

# torch dtypes jitgemm's plain GEMMs take -> their result dtype (jitgemm.matmul's D: same type; int8 -> int32)
MM_DTYPES = {torch.float32: torch.float32, torch.float16: torch.float16, torch.bfloat16: torch.bfloat16,
             torch.int8: torch.int32}
SCALED_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.int8)
OUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MX_FORMATS = ("fp4", "fp6_e2m3", "fp6_e3m2", "fp8_e4m3", "fp8_e5m2")


def _error(message: str) -> Exception:
    from jitgemm.api import MatmulError

    return MatmulError(message)


def _error_type() -> type[Exception]:
    from jitgemm.api import MatmulError

    return MatmulError


def _on_rocm(t: Tensor) -> bool:
    """A tensor in ROCm device memory: torch calls the HIP device 'cuda' (torch.version.hip says it is HIP)."""
    return t.device.type == "cuda" and torch.version.hip is not None


def _device_arch(t: Tensor) -> str:
    """gfx target of the tensor's device ('gfx942:sramecc+:xnack-' -> 'gfx942')."""
    try:
        return torch.cuda.get_device_properties(t.device).gcnArchName.split(":")[0]
    except (AssertionError, RuntimeError, AttributeError):
        return ARCH or "gfx942"


def _readable(t: Tensor) -> Tensor:
    """The tensor unchanged when the kernels can read it in place (one of the last two dimensions has unit
    stride, no broadcast dimension); else a contiguous copy (autograd hands `expand`ed gradients to backward)."""
    last = t.stride()[-2:]
    broadcast = any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape, strict=True))
    if broadcast or (1 not in last and 1 not in t.shape[-2:]):
        return t.contiguous()
    return t


def _check_mm(a: Tensor, b: Tensor, ndim: int, op: str) -> torch.dtype:
    for name, t in (("a", a), ("b", b)):
        if t.dim() != ndim:
            raise _error(f"jitgemm.{op}: {name} has {t.dim()} dimensions {tuple(t.shape)}; {op} takes "
                         f"{'(M, K) @ (K, N)' if ndim == 2 else '(B, M, K) @ (B, K, N)'}")
        if t.dtype not in MM_DTYPES:
            raise _error(f"jitgemm.{op}: {name} is {t.dtype}; accepted: "
                         f"{', '.join(str(d) for d in MM_DTYPES)} (8-bit floats: torch.ops.jitgemm.scaled_mm)")
    if a.dtype != b.dtype:
        raise _error(f"jitgemm.{op}: a is {a.dtype}, b is {b.dtype}; both must have one dtype")
    if a.shape[-1] != b.shape[-2]:
        raise _error(f"jitgemm.{op}: a {tuple(a.shape)} and b {tuple(b.shape)}: inner dimensions "
                     f"{a.shape[-1]} and {b.shape[-2]} differ")
    if ndim == 3 and a.shape[0] != b.shape[0]:
        raise _error(f"jitgemm.{op}: batch sizes differ: a has {a.shape[0]}, b has {b.shape[0]}")
    if a.device != b.device:
        raise _error(f"jitgemm.{op}: a is on {a.device}, b on {b.device}")
    return MM_DTYPES[a.dtype]


# ---- the ROCm path: pointers into the kernel arguments ------------------------------------------------------

def _shadow(t: Tensor) -> np.ndarray:
    """A host array with the tensor's shape, strides and dtype over uninitialised (untouched) memory: what
    `jitgemm.api.prepare` checks to build the problem; its values are never read (the device pointer replaces it)."""
    from jitgemm.dlpack import _TORCH_VIA_INT

    name = str(t.dtype).removeprefix("torch.")
    if name in _TORCH_VIA_INT:
        import ml_dtypes

        np_dtype = np.dtype(getattr(ml_dtypes, _TORCH_VIA_INT[name][1]))
    else:
        np_dtype = np.dtype(torch.empty(0, dtype=t.dtype).numpy().dtype)
    item = np_dtype.itemsize
    count = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    base = np.empty(count, np.dtype(f"u{item}"))
    return np.lib.stride_tricks.as_strided(base, tuple(t.shape), tuple(s * item for s in t.stride())).view(np_dtype)


def _alignment(ptr: int) -> int:
    return min(256, ptr & -ptr) if ptr else 256


def _device_launch(out_dtype: torch.dtype, arch: str, *, a: Tensor, b: Tensor, scale_a: Tensor | None = None,
                   scale_b: Tensor | None = None, bias: Tensor | None = None) -> Tensor:
    """Launch on the tensors' ROCm device: the selector's kernel for the problem their shapes and strides make,
    with the tensors' device pointers as the kernel's pointer arguments (no host copy, no device copy)."""
    from jitgemm import api

    dev = {"a": a, "b": b}
    scales = None
    if scale_a is not None:
        dev["a_scale"] = scale_a.reshape(-1, 1) if scale_a.numel() > 1 else scale_a.reshape(1).contiguous()
        dev["b_scale"] = scale_b.reshape(1, -1) if scale_b.numel() > 1 else scale_b.reshape(1).contiguous()
        dev["a_scale"], dev["b_scale"] = dev["a_scale"].contiguous(), dev["b_scale"].contiguous()
        scales = (_shadow(dev["a_scale"]), _shadow(dev["b_scale"]), None)
    if bias is not None:
        dev["bias"] = bias.contiguous()
    call = api.prepare(_shadow(a), _shadow(b), bias=_shadow(dev["bias"]) if bias is not None else None,
                       out_dtype=_numpy_dtype(out_dtype), scales=scales)
    out = torch.zeros(call.d.shape, dtype=out_dtype, device=a.device)
    dev["d"] = out
    values = dict(call.values)
    align = dict(call.align)
    for role, t in dev.items():
        values[role] = t.data_ptr()
        align[role] = _alignment(t.data_ptr())
    call = api.GemmCall(call.problem, values, call.d, align)
    api.check_target(call.problem, arch)
    blob, name, contract, source = api._choose(call.problem, align, arch)
    api.launch(call, blob, name, contract, backend="hip", source=source,
               split_k=api._split_k(contract, blob, call.problem, arch, source))
    return out


def _numpy_dtype(d: torch.dtype | None):
    if d is None:
        return None
    if d == torch.bfloat16:
        import ml_dtypes

        return ml_dtypes.bfloat16
    return torch.empty(0, dtype=d).numpy().dtype


# ---- mm / bmm -----------------------------------------------------------------------------------------------

def _plain(a: Tensor, b: Tensor, op: str, ndim: int) -> Tensor:
    out_dtype = _check_mm(a, b, ndim, op)
    a, b = _readable(a), _readable(b)
    if _on_rocm(a):
        return _device_launch(out_dtype, _device_arch(a), a=a, b=b)
    from jitgemm.api import matmul

    return matmul(a, b, arch=ARCH or "gfx942")


@torch.library.custom_op("jitgemm::mm", mutates_args=())
def mm(a: Tensor, b: Tensor) -> Tensor:
    """(M, K) @ (K, N) by jitgemm's selected kernel."""
    return _plain(a, b, "mm", 2)


@mm.register_fake
def _mm_fake(a: Tensor, b: Tensor) -> Tensor:
    out = _check_mm(a, b, 2, "mm")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out)


@torch.library.custom_op("jitgemm::bmm", mutates_args=())
def bmm(a: Tensor, b: Tensor) -> Tensor:
    """(B, M, K) @ (B, K, N) by jitgemm's selected kernel (one launch, batch strides as given)."""
    return _plain(a, b, "bmm", 3)


@bmm.register_fake
def _bmm_fake(a: Tensor, b: Tensor) -> Tensor:
    out = _check_mm(a, b, 3, "bmm")
    return a.new_empty((a.shape[0], a.shape[1], b.shape[2]), dtype=out)


def _save_ab(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _mm_backward(ctx, grad: Tensor):
    """dA = dD @ B^T, dB = A^T @ dD: two more jitgemm GEMMs on transposed views (no transposing copies)."""
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)
    ga = torch.ops.jitgemm.mm(grad, b.mT) if ctx.needs_input_grad[0] else None
    gb = torch.ops.jitgemm.mm(a.mT, grad) if ctx.needs_input_grad[1] else None
    return ga, gb


def _bmm_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)
    ga = torch.ops.jitgemm.bmm(grad, b.mT) if ctx.needs_input_grad[0] else None
    gb = torch.ops.jitgemm.bmm(a.mT, grad) if ctx.needs_input_grad[1] else None
    return ga, gb


mm.register_autograd(_mm_backward, setup_context=_save_ab)
bmm.register_autograd(_bmm_backward, setup_context=_save_ab)


# ---- scaled_mm ----------------------------------------------------------------------------------------------

def _check_scaled(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Tensor | None,
                  out_dtype: torch.dtype | None) -> torch.dtype:
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise _error(f"jitgemm.scaled_mm: {name} has shape {tuple(t.shape)}; expected 2-D (M, K) @ (K, N)")
        if t.dtype not in SCALED_DTYPES:
            raise _error(f"jitgemm.scaled_mm: {name} is {t.dtype}; accepted: "
                         f"{', '.join(str(d) for d in SCALED_DTYPES)}")
    if a.shape[1] != b.shape[0]:
        raise _error(f"jitgemm.scaled_mm: a {tuple(a.shape)} and b {tuple(b.shape)}: inner dimensions differ")
    m, n = a.shape[0], b.shape[1]
    for name, t, want in (("scale_a", scale_a, (m, 1)), ("scale_b", scale_b, (1, n))):
        if t.dtype != torch.float32:
            raise _error(f"jitgemm.scaled_mm: {name} is {t.dtype}; scales are torch.float32")
        if t.numel() != 1 and tuple(t.shape) != want and not (name == "scale_b" and tuple(t.shape) == (n,)):
            raise _error(f"jitgemm.scaled_mm: {name} has shape {tuple(t.shape)}; accepted: one value (per "
                         f"tensor) or {list(want)} (per {'row' if name == 'scale_a' else 'column'})")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != n):
        raise _error(f"jitgemm.scaled_mm: bias has shape {tuple(bias.shape)}; expected ({n},)")
    out = torch.float32 if out_dtype is None else out_dtype
    if out not in OUT_DTYPES:
        raise _error(f"jitgemm.scaled_mm: out_dtype {out}; accepted: {', '.join(str(d) for d in OUT_DTYPES)}")
    return out


@torch.library.custom_op("jitgemm::scaled_mm", mutates_args=())
def scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Tensor | None = None,
              out_dtype: torch.dtype | None = None) -> Tensor:
    """D = scale_a * scale_b * (a @ b) + bias for 8-bit a, b (torch._scaled_mm's arguments; out_dtype None means
    float32 here: jitgemm writes no 8-bit result)."""
    out = _check_scaled(a, b, scale_a, scale_b, bias, out_dtype)
    a, b = _readable(a), _readable(b)
    bias32 = None if bias is None else bias.to(torch.float32)
    if _on_rocm(a):
        return _device_launch(out, _device_arch(a), a=a, b=b, scale_a=scale_a, scale_b=scale_b, bias=bias32)
    from jitgemm.api import scaled_matmul

    sa = scale_a.reshape(1) if scale_a.numel() == 1 else scale_a.reshape(-1, 1)
    sb = scale_b.reshape(1) if scale_b.numel() == 1 else scale_b.reshape(1, -1)
    return scaled_matmul(a, b, sa.contiguous(), sb.contiguous(), out_dtype=_numpy_dtype(out), bias=bias32,
                         arch=ARCH)


@scaled_mm.register_fake
def _scaled_mm_fake(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Tensor | None = None,
                    out_dtype: torch.dtype | None = None) -> Tensor:
    out = _check_scaled(a, b, scale_a, scale_b, bias, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out)


# ---- mx_mm --------------------------------------------------------------------------------------------------

def _check_mx(a: Tensor, a_scale: Tensor, a_format: str, b: Tensor, b_scale: Tensor, b_format: str, k: int,
              out_dtype: torch.dtype | None) -> torch.dtype:
    """MX packing rules: rows of K elements in row_bytes(format, K) bytes (fp4 two per byte, fp6 four in three),
    one E8M0 scale byte per 32 elements of K."""
    from jitgemm.mx import BLOCK, row_bytes

    for name, data, scale, fmt in (("a", a, a_scale, a_format), ("b", b, b_scale, b_format)):
        if fmt not in MX_FORMATS:
            raise _error(f"jitgemm.mx_mm: {name}_format {fmt!r}; accepted: {', '.join(MX_FORMATS)}")
        if data.dtype != torch.uint8 or data.dim() != 2 or data.shape[1] != row_bytes(fmt, k):
            raise _error(f"jitgemm.mx_mm: {name} is {data.dtype} {tuple(data.shape)}; {fmt} rows of K={k} take "
                         f"torch.uint8 [rows, {row_bytes(fmt, k)}]")
        want = (data.shape[0], -(-k // BLOCK))
        if scale.dtype != torch.uint8 or tuple(scale.shape) != want:
            raise _error(f"jitgemm.mx_mm: {name}_scale is {scale.dtype} {tuple(scale.shape)}; expected E8M0 "
                         f"codes torch.uint8 {list(want)} (one per {BLOCK} of K)")
    out = torch.float32 if out_dtype is None else out_dtype
    if out not in OUT_DTYPES:
        raise _error(f"jitgemm.mx_mm: out_dtype {out}; accepted: {', '.join(str(d) for d in OUT_DTYPES)}")
    return out


@torch.library.custom_op("jitgemm::mx_mm", mutates_args=())
def mx_mm(a: Tensor, a_scale: Tensor, a_format: str, b: Tensor, b_scale: Tensor, b_format: str, k: int,
          out_dtype: torch.dtype | None = None) -> Tensor:
    """D [M, N] = A [M, K] @ W [N, K]^T for MX A and W (bytes + E8M0 scales along K), on gfx950 (CDNA 4)."""
    out = _check_mx(a, a_scale, a_format, b, b_scale, b_format, k, out_dtype)
    if _on_rocm(a):
        raise _error("jitgemm.mx_mm: ROCm tensors are not wired yet; pass CPU tensors (the emulator)")
    from jitgemm.api import matmul
    from jitgemm.dlpack import from_torch
    from jitgemm.mx import MXTensor

    def mx(data, scale, fmt, name):
        return MXTensor(fmt, 1, 32, (data.shape[0], k), from_torch(data.contiguous(), name, _error_type()),
                        from_torch(scale.contiguous(), f"{name}_scale", _error_type()))

    ta, tb = mx(a, a_scale, a_format, "a"), mx(b, b_scale, b_format, "b")
    return _mx_result(matmul(ta, tb.T, out_dtype=_numpy_dtype(out), arch="gfx950"))


def _mx_result(d) -> Tensor:
    from jitgemm.dlpack import to_torch

    return d if isinstance(d, Tensor) else to_torch(d)


@mx_mm.register_fake
def _mx_mm_fake(a: Tensor, a_scale: Tensor, a_format: str, b: Tensor, b_scale: Tensor, b_format: str, k: int,
                out_dtype: torch.dtype | None = None) -> Tensor:
    out = _check_mx(a, a_scale, a_format, b, b_scale, b_format, k, out_dtype)
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out)
