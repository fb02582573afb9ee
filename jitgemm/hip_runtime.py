"""Running kernels on a real AMD GPU through hip-python (imported lazily).

The launch is the emulator's: the same `LaunchDescription` and the same kernarg packing from the kernel's
metadata (`jitgemm.codegen.codeobj.launch.pack_kernargs`); only where the bytes go differs. Every HIP call's
return code is checked and a failure names the call. Modules are cached per device and code object. Without ROCm
(no `libamdhip64.so`) or without a GPU, `hip_available()` says why and `backend="auto"` uses the emulator.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from jitgemm.codegen.codeobj.launch import LaunchDescription, PackedSegment, pack_kernargs
from jitgemm.isa.errors import IsaError


class HipError(IsaError):
    """A HIP call failed, or HIP is not usable here."""


def runtime_text(exc: BaseException) -> str:
    """hip-python's loader errors embed Python bytes reprs (`failed to dlopen 'b'libamdhip64.so''`); users get
    the text: `failed to dlopen 'libamdhip64.so': libamdhip64.so: cannot open shared object file ...`."""
    text = str(exc)
    text = re.sub(r"'b'([^']*)''", r"'\1'", text)
    text = re.sub(r"\bb'([^']*)'", r"\1", text)
    return re.sub(r'\bb"([^"]*)"', r"\1", text)


def _hip():
    """The hip-python module; HipError when it is not installed."""
    try:
        from hip import hip
    except ImportError as exc:
        raise HipError(f"hip-python is not installed ({exc}); pip install hip-python") from None
    return hip


def _ok(hip, result, call: str):
    """Unpack a hip-python result tuple, raising HipError with the call's name on any error code."""
    if not isinstance(result, tuple):
        result = (result,)
    err, rest = result[0], result[1:]
    if int(err) != int(hip.hipError_t.hipSuccess):
        name = getattr(err, "name", str(err))
        raise HipError(f"{call} failed: {name} ({int(err)})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def hip_available() -> tuple[bool, str]:
    """(usable, reason): ROCm's runtime loads and at least one device is present."""
    try:
        hip = _hip()
        count = _ok(hip, hip.hipGetDeviceCount(), "hipGetDeviceCount")
    except HipError as exc:
        return False, str(exc)
    except RuntimeError as exc:  # hip-python raises this when libamdhip64.so cannot be loaded
        return False, f"the ROCm runtime is not available ({runtime_text(exc)})"
    if not count:
        return False, "no AMD GPU found (hipGetDeviceCount = 0)"
    return True, f"{count} AMD GPU(s)"


_modules: dict[tuple[int, str], Any] = {}


def _module(hip, blob: bytes):
    device = _ok(hip, hip.hipGetDevice(), "hipGetDevice")
    key = (int(device), hashlib.sha256(blob).hexdigest())
    if key not in _modules:
        _modules[key] = _ok(hip, hip.hipModuleLoadData(blob), "hipModuleLoadData")
    return _modules[key]


_timing = threading.local()


@contextmanager
def timed_launches(iterations: int) -> Iterator[list[float]]:
    """Every `run_hip` launch made inside is timed (`timed=iterations`) and its mean seconds appended to the list
    this yields, so a sequence of launches made by code that does not time (a split-K pair: the partial kernel, then
    the reduction, `jitgemm.api.split_launch`) times as the sum of the list."""
    seconds: list[float] = []
    before = getattr(_timing, "state", None)
    _timing.state = (iterations, seconds)
    try:
        yield seconds
    finally:
        _timing.state = before


def run_hip(code_object: bytes, kernel: str, *, grid: Sequence[int], block: Sequence[int], args: Sequence[Any],
            lds_bytes: int = 0, timed: int = 0) -> float | None:
    """Launch `kernel` and wait for it; numpy arrays in `args` are copied to the device and back. `timed` > 0:
    after that first (warm-up) launch, launch it `timed` more times between two hip events and return the
    mean seconds per launch (hipEventElapsedTime), as hipBLASLt's and aiter's tuners time candidates (inside
    `timed_launches`, every launch is timed so)."""
    from jitgemm.codegen import codeobj

    collect = getattr(_timing, "state", None)
    if collect is not None and timed <= 0:
        timed = collect[0]

    try:
        hip = _hip()
        meta_kernel = codeobj.read(code_object).kernel(kernel)
    except codeobj.CodeObjectError as exc:
        raise HipError(f"cannot launch {kernel}: {exc}") from None
    launch = LaunchDescription.make(kernel, grid, block, args, lds_bytes)
    try:
        module = _module(hip, code_object)
        function = _ok(hip, hip.hipModuleGetFunction(module, kernel.encode()), "hipModuleGetFunction")
        device_ptrs: dict[int, Any] = {}
        copies: list[tuple[np.ndarray, Any]] = []
        try:
            packed = launch.args[0] if len(launch.args) == 1 and isinstance(launch.args[0], PackedSegment) else None
            for value in packed.buffers if packed is not None else launch.args:
                if isinstance(value, np.ndarray) and id(value) not in device_ptrs:
                    host = np.ascontiguousarray(value)
                    ptr = _ok(hip, hip.hipMalloc(max(1, host.nbytes)), "hipMalloc")
                    device_ptrs[id(value)] = ptr
                    _ok(hip, hip.hipMemcpy(ptr, host, host.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice),
                        "hipMemcpy (host to device)")
                    if value.flags.writeable:
                        copies.append((value, ptr))
            segment = pack_kernargs(
                meta_kernel.args, launch, segment_size=int(meta_kernel.metadata.get(".kernarg_segment_size", 0)),
                pointer_of=lambda value, index: int(device_ptrs[id(value)]) if id(value) in device_ptrs else int(value))
            # one opaque argument holding the whole segment: hip-python lays `extra` out as given
            blob = (ctypes.c_ubyte * len(segment)).from_buffer_copy(bytes(segment))

            def run_once():
                _ok(hip, hip.hipModuleLaunchKernel(function, *launch.grid, *launch.block,
                                                   sharedMemBytes=launch.lds_bytes, stream=None, kernelParams=None,
                                                   extra=(blob,)), "hipModuleLaunchKernel")

            run_once()
            _ok(hip, hip.hipDeviceSynchronize(), "hipDeviceSynchronize")
            seconds = _timed_launches(hip, run_once, timed) if timed > 0 else None
            for host, ptr in copies:
                out = np.empty_like(np.ascontiguousarray(host))
                _ok(hip, hip.hipMemcpy(out, ptr, out.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost),
                    "hipMemcpy (device to host)")
                host[...] = out
        finally:
            for ptr in device_ptrs.values():
                hip.hipFree(ptr)
    except RuntimeError as exc:
        raise HipError(f"the ROCm runtime is not available ({runtime_text(exc)})") from None
    if collect is not None and seconds is not None:
        collect[1].append(seconds)
    return seconds


def _timed_launches(hip, run_once, count: int) -> float:
    """Mean seconds of `count` launches on the null stream, between two recorded hip events."""
    start = _ok(hip, hip.hipEventCreate(), "hipEventCreate")
    stop = _ok(hip, hip.hipEventCreate(), "hipEventCreate")
    try:
        _ok(hip, hip.hipEventRecord(start, None), "hipEventRecord")
        for _ in range(count):
            run_once()
        _ok(hip, hip.hipEventRecord(stop, None), "hipEventRecord")
        _ok(hip, hip.hipEventSynchronize(stop), "hipEventSynchronize")
        ms = _ok(hip, hip.hipEventElapsedTime(start, stop), "hipEventElapsedTime")
    finally:
        hip.hipEventDestroy(start)
        hip.hipEventDestroy(stop)
    return float(ms) * 1e-3 / count
