"""Arrays of any framework in and out of `jitgemm.matmul` / `jitgemm.scaled_matmul` through DLPack.

Why here: the API works on numpy arrays (the emulator reads host memory, the hip runtime copies host buffers);
a PyTorch, CuPy or JAX user should not have to convert by hand, and should get their own array type back. Every
`__dlpack__` producer in host memory is taken zero-copy (`np.from_dlpack` shares the producer's memory; the
strides go through, so a transposed view stays a view). numpy cannot import bf16 or fp8 through DLPack (the
DLPack dtype codes kDLBfloat / kDLFloat8_* have no numpy counterpart), so a torch tensor of those dtypes is viewed
as int16 / uint8 (same bytes, `Tensor.view(dtype)`) and reinterpreted with ml_dtypes, and the result goes back
the same way. Device memory is refused here by name: `jitgemm.torch`'s ops pass ROCm tensors' pointers to the
hip launch without copies.

DLPack device codes: dlpack/include/dlpack/dlpack.h, `DLDeviceType` (kDLCPU = 1, kDLCUDA = 2,
kDLCUDAHost = 3, kDLROCM = 10, kDLROCMHost = 11, kDLCUDAManaged = 13, ...).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgemm.codegen.gemm_ir import IRError

# dlpack.h DLDeviceType
DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu", 16: "hexagon",
                17: "maia"}
HOST_DEVICES = (1, 3, 11)      # host memory (pinned host memory reads like any other)

# torch dtype name -> (same-size integer torch dtype for the DLPack export, ml_dtypes name)
_TORCH_VIA_INT = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
                  "float8_e5m2": ("uint8", "float8_e5m2"), "float8_e4m3fnuz": ("uint8", "float8_e4m3fnuz"),
                  "float8_e5m2fnuz": ("uint8", "float8_e5m2fnuz")}


class DLPackError(IRError):
    """An array the API cannot take (device memory, complex, a dtype numpy cannot hold); the API raises its own
    error class instead (`accepts_dlpack(error=...)`: jitgemm.MatmulError)."""


def is_torch(x: Any) -> bool:
    """A torch.Tensor, told without importing torch (an import costs seconds)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _torch_dtype_name(t) -> str:
    return str(t.dtype).removeprefix("torch.")


def from_torch(t, name: str, error: type[Exception] = DLPackError) -> np.ndarray:
    """A host torch tensor as a numpy array over the same memory (bf16/fp8 via integer views + ml_dtypes)."""
    import torch

    if t.device.type != "cpu":
        raise error(f"{name}: a torch tensor on device {t.device}; jitgemm.matmul takes host memory (the emulator "
                     f"and the hip runtime's host path): call torch.ops.jitgemm.mm / bmm / scaled_mm (import "
                     f"jitgemm.torch), which pass ROCm tensors' pointers to the kernel, or pass {name}.cpu()")
    dt = _torch_dtype_name(t)
    if t.is_complex():
        raise error(f"{name}: complex tensors ({dt}) are not supported; jitgemm's GEMMs are real-valued")
    if t.layout != torch.strided:
        raise error(f"{name}: a {t.layout} tensor; only dense (strided) tensors are accepted: {name}.to_dense()")
    t = t.detach()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    if dt in _TORCH_VIA_INT:
        import ml_dtypes

        as_int, ml_name = _TORCH_VIA_INT[dt]
        return np.from_dlpack(t.view(getattr(torch, as_int))).view(getattr(ml_dtypes, ml_name))
    try:
        return np.from_dlpack(t)
    except (BufferError, TypeError, RuntimeError) as exc:
        raise error(f"{name}: torch {dt} cannot be read ({exc}); accepted: float32, float16, bfloat16, "
                     f"float8 (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz), int8, int32") from None


def to_host(x: Any, name: str, error: type[Exception] = DLPackError) -> Any:
    """`x` as a numpy array when it is a DLPack producer in host memory (zero-copy); numpy arrays, numbers,
    None and `jitgemm.mx.MXTensor` pass through unchanged (the API checks them). A producer in device memory, or
    of a dtype numpy cannot hold, is refused with an error naming `name`."""
    if x is None or isinstance(x, (np.ndarray, np.generic, int, float)):
        return x
    if is_torch(x):
        return from_torch(x, name, error)
    if not hasattr(x, "__dlpack__"):
        return x
    kind = type(x).__module__.split(".")[0] + "." + type(x).__name__
    if hasattr(x, "__dlpack_device__"):
        device, index = (int(v) for v in x.__dlpack_device__())
        if device not in HOST_DEVICES:
            raise error(f"{name}: a {kind} array in {DEVICE_NAMES.get(device, f'device type {device}')} memory "
                         f"(device {index}); jitgemm.matmul takes host memory (the emulator, the hip runtime's "
                         f"host path): copy it to the host first, or use jitgemm.torch's ops for ROCm tensors")
    try:
        out = np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError, ValueError) as exc:
        raise error(f"{name}: a {kind} array numpy cannot import through DLPack ({exc}); accepted dtypes: "
                     f"float32, float16, int8, int32 (bf16/fp8: pass numpy arrays of ml_dtypes types or torch "
                     f"tensors)") from None
    if out.dtype.kind == "c":
        raise error(f"{name}: complex arrays ({out.dtype}) are not supported; jitgemm's GEMMs are real-valued")
    return out


def to_torch(d: np.ndarray):
    """A numpy result as a torch tensor over the same memory (bf16/fp8 through integer views)."""
    import torch

    name = d.dtype.name
    for torch_name, (as_int, ml_name) in _TORCH_VIA_INT.items():
        if name == ml_name:
            return torch.from_numpy(d.view(np.dtype(as_int))).view(getattr(torch, torch_name))
    return torch.from_numpy(d)


def back_to(d: np.ndarray, like: Any) -> Any:
    """The result in the array type of `like` (the caller's first non-numpy operand): torch tensors zero-copy,
    other DLPack consumers through their module's `from_dlpack` (CuPy, jax.numpy, ...); numpy when there is
    none."""
    if like is None:
        return d
    if is_torch(like):
        return to_torch(d)
    root = type(like).__module__.split(".")[0]
    for module in (root, f"{root}.numpy"):
        try:
            convert = getattr(importlib.import_module(module), "from_dlpack", None)
        except ImportError:
            continue
        if convert is not None:
            try:
                return convert(d)
            except (BufferError, TypeError, RuntimeError, ValueError):
                break
    return d


def accepts_dlpack(*names: str, error: type[Exception] = DLPackError) -> Callable:
    """Decorator: the named arguments of the API function may be any DLPack producer; the result comes back in
    the type of the first of them that is not a numpy array."""

    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            like = None
            for name in names:
                if name in bound.arguments:
                    value = bound.arguments[name]
                    if like is None and value is not None and not isinstance(value, (np.ndarray, int, float)) \
                            and (hasattr(value, "__dlpack__") or is_torch(value)):
                        like = value
                    bound.arguments[name] = to_host(value, name, error)
            return back_to(fn(*bound.args, **bound.kwargs), like)

        return call

    return wrap
