"""The hip runtime up to the boundary this machine allows: without ROCm it says why and `auto` uses the
emulator; with a stand-in for hip-python it makes the right calls, with the kernarg bytes the emulator would
get, and turns any failing return code into an error naming the call."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen import codeobj
from jitgemm.codegen.codeobj.launch import LaunchDescription, pack_kernargs
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm import hip_runtime
from jitgemm.api import MatmulError, _backend
from tests.fixtures.fake_hip import FakeHip
from tests.fixtures.oracles import require_module


def test_without_rocm_hip_is_unavailable_and_auto_uses_emulator():
    ok, why = hip_runtime.hip_available()
    assert not ok and why   # no AMD GPU or ROCm runtime on these machines
    with pytest.raises(MatmulError, match="backend='hip'"):
        _backend("hip")
    assert _backend("auto") == "emu"




@pytest.fixture
def kernel():
    p = GemmProblem.make(32, 32, 32, "fp16")
    compiled = compile_gemm(p)
    return compiled


def _args(d):
    a = np.ones(32 * 32, np.float16)
    b = np.ones(32 * 32, np.float16)
    return [a, b, None, d, None, 32, 32, 32, 1, 32, 32, 32, 32, 0, 0, 0, 1024, 1.0, 0.0]


def test_launch_sequence_and_kernargs(monkeypatch, kernel):
    fake = FakeHip()
    monkeypatch.setattr(hip_runtime, "_hip", lambda: fake)
    hip_runtime._modules.clear()
    d = np.zeros(32 * 32, np.float32)
    args = _args(d)
    hip_runtime.run_hip(kernel.code_object, kernel.name, grid=(1, 1, 1), block=(256, 1, 1), args=args)
    names = [c[0] for c in fake.calls]
    assert names[:3] == ["hipGetDevice", "hipModuleLoadData", "hipModuleGetFunction"]
    assert names.count("hipMalloc") == 3 and names.count("hipFree") == 3
    launch_call = next(c for c in fake.calls if c[0] == "hipModuleLaunchKernel")
    assert launch_call[1:] == ((1, 1, 1), (256, 1, 1), 0)
    assert names.index("hipDeviceSynchronize") < len(names) - 3
    # the segment is what the emulator's packing makes, with the device pointers hipMalloc returned
    meta = codeobj.read(kernel.code_object).kernel(kernel.name)
    ptrs = iter(c[1] for c in fake.calls if c[0] == "hipMalloc")
    device = {i: next(ptrs) for i, v in enumerate(args) if isinstance(v, np.ndarray)}
    expected = pack_kernargs(meta.args, LaunchDescription.make(kernel.name, 1, 256, args),
                             segment_size=meta.metadata[".kernarg_segment_size"],
                             pointer_of=lambda v, i: device[i])
    assert fake.segment == bytes(expected)
    # a second launch reuses the loaded module
    hip_runtime.run_hip(kernel.code_object, kernel.name, grid=(1, 1, 1), block=(256, 1, 1), args=args)
    assert [c[0] for c in fake.calls].count("hipModuleLoadData") == 1


@pytest.mark.parametrize("call", ["hipModuleLoadData", "hipMalloc", "hipModuleLaunchKernel", "hipMemcpy"])
def test_every_return_code_is_checked(monkeypatch, kernel, call):
    fake = FakeHip(fail=call)
    monkeypatch.setattr(hip_runtime, "_hip", lambda: fake)
    hip_runtime._modules.clear()
    with pytest.raises(hip_runtime.HipError, match=f"{call}.* failed: hipErrorInvalidValue"):
        hip_runtime.run_hip(kernel.code_object, kernel.name, grid=(1, 1, 1), block=(256, 1, 1),
                            args=_args(np.zeros(1024, np.float32)))
    assert [c[0] for c in fake.calls].count("hipFree") == [c[0] for c in fake.calls].count("hipMalloc") - \
        (1 if call == "hipMalloc" else 0)


def test_real_hip_python_fails_cleanly(kernel):
    """hip-python imports here but cannot load libamdhip64.so: a HipError, not a crash."""
    require_module("hip")
    hip_runtime._modules.clear()
    with pytest.raises(hip_runtime.HipError, match="ROCm runtime is not available"):
        hip_runtime.run_hip(kernel.code_object, kernel.name, grid=(1, 1, 1), block=(256, 1, 1),
                            args=_args(np.zeros(1024, np.float32)))

