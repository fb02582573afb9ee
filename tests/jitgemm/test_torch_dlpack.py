"""DLPack in jitgemm.matmul / scaled_matmul: torch tensors and other `__dlpack__` producers in, the caller's
array type out, zero-copy (the kernel's buffers are the caller's memory), clear errors for what cannot go."""

from __future__ import annotations

import numpy as np
import pytest

import jitgemm
from jitgemm import api
from jitgemm.api import MatmulError
from jitgemm.dlpack import to_host
from tests.fixtures.torch_support import assert_close, require_torch


@pytest.fixture
def torch():
    return require_torch()


@pytest.fixture
def launches(monkeypatch):
    """Every launch's argument buffers (the arrays the kernel reads and writes) and its result array."""
    seen = []
    real = api.launch

    def spy(call, *args, **kwargs):
        out = real(call, *args, **kwargs)
        seen.append((dict(call.values), out))
        return out

    monkeypatch.setattr(api, "launch", spy)
    return seen


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def test_torch_in_torch_out_zero_copy(torch, launches):
    g = torch.Generator().manual_seed(7)
    a = torch.randn(24, 16, generator=g)
    w = torch.randn(20, 16, generator=g)      # nn.Linear's [N, K]: B is its transposed view
    d = jitgemm.matmul(a, w.T, backend="emu")
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32 and d.shape == (24, 20)
    assert_close(d, a.double() @ w.double().T, "float32")
    values, out = launches[-1]
    assert _address(values["a"]) == a.data_ptr()          # the kernel read the caller's memory
    assert _address(values["b"]) == w.data_ptr()          # the transposed view: layout T, no copy
    assert d.data_ptr() == _address(out)                  # the result wraps the kernel's output buffer


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_half_precision_through_integer_views(torch, launches, dt):
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 12, 16, generator=g).to(getattr(torch, dt))
    b = torch.randn(2, 16, 8, generator=g).to(getattr(torch, dt))
    d = jitgemm.matmul(a, b, backend="emu")
    assert d.dtype == getattr(torch, dt) and d.shape == (2, 12, 8)
    assert_close(d, a.double() @ b.double(), dt)
    values, _ = launches[-1]
    assert _address(values["a"]) == a.data_ptr() and _address(values["b"]) == b.data_ptr()


def test_to_host_shares_memory(torch):
    t = torch.randn(5, 7).to(torch.bfloat16)
    h = to_host(t, "a")
    assert _address(h) == t.data_ptr() and h.dtype.name == "bfloat16" and h.shape == (5, 7)
    h[0, 0] = 3.0                                          # a write through the view shows in the tensor
    assert float(t[0, 0]) == 3.0
    f8 = torch.randn(4, 4).to(torch.float8_e4m3fnuz)
    assert to_host(f8, "b").dtype.name == "float8_e4m3fnuz" and _address(to_host(f8, "b")) == f8.data_ptr()


class _Producer:
    """A foreign `__dlpack__` producer (what CuPy/JAX arrays look like to jitgemm): host or device memory."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.array, self.device = array, device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def test_numpy_and_foreign_producers(launches):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 8)).astype(np.float32)
    d = jitgemm.matmul(_Producer(a), _Producer(b), backend="emu")   # module has no from_dlpack: numpy back
    assert isinstance(d, np.ndarray)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    values, _ = launches[-1]
    assert _address(values["a"]) == _address(a) and _address(values["b"]) == _address(b)
    with pytest.raises(MatmulError, match=r"^b: .*rocm memory \(device 1\)"):
        jitgemm.matmul(a, _Producer(b, (10, 1)), backend="emu")


def test_numpy_into_torch_via_dlpack(torch):
    """numpy memory handed to torch by DLPack and back through jitgemm: one buffer all along."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 12)).astype(np.float32)
    ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
    assert ta.data_ptr() == _address(a)
    d = jitgemm.matmul(ta, tb, backend="emu")
    assert_close(d, a.astype(np.float64) @ b, "float32")


def test_scaled_matmul_takes_torch(torch):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(16, 32, generator=g).to(torch.float8_e4m3fnuz)
    b = torch.randn(32, 16, generator=g).to(torch.float8_e4m3fnuz)
    sa, sb = torch.rand(16, 1, generator=g) + 0.5, torch.rand(1, 16, generator=g) + 0.5
    d = jitgemm.scaled_matmul(a, b, sa, sb, out_dtype=np.float32, backend="emu")
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32
    assert_close(d, (a.double() @ b.double()) * sa.double() * sb.double(), "float32")


def test_bad_inputs_name_the_argument(torch):
    a = torch.randn(4, 4)
    with pytest.raises(MatmulError, match=r"^a: complex tensors"):
        jitgemm.matmul(torch.randn(4, 4, dtype=torch.complex64), a, backend="emu")
    with pytest.raises(MatmulError, match=r"^b: a torch tensor on device meta"):
        jitgemm.matmul(a, torch.empty(4, 4, device="meta"), backend="emu")
    with pytest.raises(MatmulError, match=r"^c: .*sparse|^c: a torch.sparse_coo"):
        jitgemm.matmul(a, a, torch.eye(4).to_sparse(), backend="emu")
    with pytest.raises(MatmulError, match=r"^a: .*float64"):
        jitgemm.matmul(torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 4, dtype=torch.float64),
                       backend="emu")
