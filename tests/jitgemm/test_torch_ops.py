"""torch.ops.jitgemm.{mm, bmm, scaled_mm, mx_mm}: forward and backward = torch (float64 references, tolerance
per dtype) in the emulator; fake registrations checked by torch.library.opcheck; the ROCm path hands the
tensors' pointers to the hip launch (checked at the runtime boundary with FakeHip); bad inputs -> clear errors."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from jitgemm import hip_runtime
from jitgemm.api import MatmulError
from tests.fixtures.fake_hip import FakeHip
from tests.fixtures.torch_support import assert_close, require_torch


@pytest.fixture
def torch():
    return require_torch()


def _gen(torch, seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16"])
def test_mm_forward_backward(torch, dt):
    g = _gen(torch, 1)
    a = torch.randn(20, 16, generator=g).to(getattr(torch, dt)).requires_grad_()
    b = torch.randn(16, 12, generator=g).to(getattr(torch, dt)).requires_grad_()
    d = torch.ops.jitgemm.mm(a, b)
    assert d.dtype == a.dtype and d.shape == (20, 12)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ref = a64 @ b64
    assert_close(d, ref, dt)
    up = torch.randn(20, 12, generator=g)
    d.backward(up.to(d.dtype))
    ref.backward(up.to(d.dtype).double())
    assert_close(a.grad, a64.grad, dt)
    assert_close(b.grad, b64.grad, dt)


def test_bmm_forward_backward(torch):
    g = _gen(torch, 2)
    a = torch.randn(3, 8, 16, generator=g).requires_grad_()
    b = torch.randn(3, 16, 12, generator=g).requires_grad_()
    d = torch.ops.jitgemm.bmm(a, b)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ref = torch.bmm(a64, b64)
    assert_close(d, ref, "float32")
    d.sum().backward()                  # an expanded (stride 0) gradient: backward makes it readable
    ref.sum().backward()
    assert_close(a.grad, a64.grad, "float32")
    assert_close(b.grad, b64.grad, "float32")


def test_fake_and_autograd_registrations(torch):
    g = _gen(torch, 3)
    a, b = torch.randn(8, 16, generator=g, requires_grad=True), torch.randn(16, 8, generator=g, requires_grad=True)
    result = torch.library.opcheck(torch.ops.jitgemm.mm.default, (a, b))
    assert set(result.values()) == {"SUCCESS"}, result


@pytest.mark.parametrize("case", ["tensor-fnuz-bf16", "rowcol-fnuz-bias", "rowcol-ocp-f16"])
def test_scaled_mm(torch, case):
    g = _gen(torch, 4)
    mode, flavour, extra = case.split("-")
    dt = torch.float8_e4m3fnuz if flavour == "fnuz" else torch.float8_e4m3fn
    m, n, k = 16, 24, 32
    a = torch.randn(m, k, generator=g).to(dt)
    b = torch.randn(n, k, generator=g).to(dt).T            # weights [N, K], as torch._scaled_mm takes mat2
    if mode == "tensor":
        sa, sb = torch.tensor(0.75), torch.tensor(1.5)
    else:
        sa, sb = torch.rand(m, 1, generator=g) + 0.5, torch.rand(1, n, generator=g) + 0.5
    bias = torch.randn(n, generator=g) if extra == "bias" else None
    out = {"bf16": torch.bfloat16, "bias": None, "f16": torch.float16}[extra]
    d = torch.ops.jitgemm.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out)
    assert d.dtype == (out or torch.float32) and d.shape == (m, n)
    ref = (a.double() @ b.double()) * sa.double() * sb.double() + (0 if bias is None else bias.double())
    assert_close(d, ref, str(d.dtype).removeprefix("torch."))


def test_mx_mm(torch):
    from jitgemm import mx
    from jitgemm.dlpack import to_torch

    rng = np.random.default_rng(9)
    m, n, k = 16, 16, 64
    qa = mx.quantize_mx(rng.standard_normal((m, k)), "fp4", axis=1)
    qw = mx.quantize_mx(rng.standard_normal((n, k)), "fp8_e4m3", axis=1)
    d = torch.ops.jitgemm.mx_mm(to_torch(qa.data), to_torch(qa.scales), "fp4", to_torch(qw.data),
                                to_torch(qw.scales), "fp8_e4m3", k)
    ref = qa.dequantize().astype(np.float64) @ qw.dequantize().astype(np.float64).T
    assert_close(d, ref, "float32")


def test_bad_inputs(torch):
    f = torch.randn(4, 8)
    cases = [
        (lambda: torch.ops.jitgemm.mm(f, f), r"inner dimensions 8 and 4 differ"),
        (lambda: torch.ops.jitgemm.mm(f, f.T.double()), r"b is torch.float64; accepted"),
        (lambda: torch.ops.jitgemm.mm(f, f.T.half()), r"a is torch.float32, b is torch.float16"),
        (lambda: torch.ops.jitgemm.mm(f[None], f.T), r"a has 3 dimensions"),
        (lambda: torch.ops.jitgemm.bmm(f, f.T), r"a has 2 dimensions .* \(B, M, K\)"),
        (lambda: torch.ops.jitgemm.scaled_mm(f, f.T, torch.tensor(1.0), torch.tensor(1.0)),
         r"scaled_mm: a is torch.float32; accepted: torch.float8"),
        (lambda: torch.ops.jitgemm.scaled_mm(f.to(torch.float8_e4m3fnuz), f.T.to(torch.float8_e4m3fnuz),
                                             torch.ones(3, 1), torch.tensor(1.0)),
         r"scale_a has shape \(3, 1\); accepted: one value .* \[4, 1\]"),
        (lambda: torch.ops.jitgemm.mx_mm(torch.zeros(4, 64, dtype=torch.uint8), torch.zeros(4, 2, dtype=torch.uint8),
                                         "fp4", torch.zeros(4, 32, dtype=torch.uint8),
                                         torch.zeros(4, 2, dtype=torch.uint8), "fp4", 64),
         r"mx_mm: a is torch.uint8 \(4, 64\); fp4 rows of K=64 take torch.uint8 \[rows, 32\]"),
    ]
    for call, message in cases:
        with pytest.raises(MatmulError, match=message):
            call()


def test_rocm_tensors_pass_pointers_to_the_launch(torch, monkeypatch):
    """The ROCm path up to the runtime boundary: the kernarg segment holds the tensors' own data pointers and
    nothing is allocated or copied (no hipMalloc, no hipMemcpy)."""
    import jitgemm.torch as jt

    fake = FakeHip()
    monkeypatch.setattr(hip_runtime, "_hip", lambda: fake)
    monkeypatch.setattr(jt, "_on_rocm", lambda t: True)      # these CPU tensors stand in for device memory
    g = _gen(torch, 5)
    a, w = torch.randn(24, 16, generator=g), torch.randn(20, 16, generator=g)
    d = torch.ops.jitgemm.mm(a, w.T)
    names = [c[0] for c in fake.calls]
    assert "hipModuleLaunchKernel" in names
    assert not {"hipMalloc", "hipMemcpy"} & set(names), names
    words = {struct.unpack_from("<Q", fake.segment, off)[0] for off in range(0, len(fake.segment) - 7, 8)}
    assert {a.data_ptr(), w.data_ptr(), d.data_ptr()} <= words


def test_rocm_scaled_mm_passes_scale_and_bias_pointers(torch, monkeypatch):
    import jitgemm.torch as jt

    fake = FakeHip()
    monkeypatch.setattr(hip_runtime, "_hip", lambda: fake)
    monkeypatch.setattr(jt, "_on_rocm", lambda t: True)
    g = _gen(torch, 6)
    a = torch.randn(16, 32, generator=g).to(torch.float8_e4m3fnuz)
    w = torch.randn(24, 32, generator=g).to(torch.float8_e4m3fnuz)
    sa, sb = torch.rand(16, 1, generator=g) + 0.5, torch.rand(1, 24, generator=g) + 0.5
    bias = torch.randn(24, generator=g)
    d = torch.ops.jitgemm.scaled_mm(a, w.T, sa, sb, bias=bias, out_dtype=torch.bfloat16)
    assert d.dtype == torch.bfloat16 and d.shape == (16, 24)
    names = {c[0] for c in fake.calls}
    assert "hipModuleLaunchKernel" in names and not {"hipMalloc", "hipMemcpy"} & names
    words = {struct.unpack_from("<Q", fake.segment, off)[0] for off in range(0, len(fake.segment) - 7, 8)}
    assert {a.data_ptr(), w.data_ptr(), sa.data_ptr(), sb.data_ptr(), bias.data_ptr(), d.data_ptr()} <= words


def test_fake_registrations_give_shapes_dtypes_and_packing_rules(torch):
    """Under FakeTensorMode (what torch.compile traces with) no kernel runs: the fake functions say the result's
    shape and dtype and apply the same checks (MX packing: fp4 two per byte, fp6 four in three bytes)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        assert torch.ops.jitgemm.mm(torch.empty(5, 7, dtype=torch.int8),
                                    torch.empty(7, 3, dtype=torch.int8)).dtype == torch.int32
        bf = torch.bfloat16
        d = torch.ops.jitgemm.bmm(torch.empty(2, 5, 7, dtype=bf), torch.empty(2, 7, 3, dtype=bf))
        assert d.shape == (2, 5, 3) and d.dtype == torch.bfloat16
        d = torch.ops.jitgemm.scaled_mm(torch.empty(5, 64, dtype=torch.float8_e4m3fn),
                                        torch.empty(64, 9, dtype=torch.float8_e4m3fn), torch.empty(5, 1),
                                        torch.empty(9), out_dtype=torch.bfloat16)
        assert d.shape == (5, 9) and d.dtype == torch.bfloat16
        u8 = torch.uint8
        d = torch.ops.jitgemm.mx_mm(torch.empty(4, 48, dtype=u8), torch.empty(4, 2, dtype=u8), "fp6_e2m3",
                                    torch.empty(6, 32, dtype=u8), torch.empty(6, 2, dtype=u8), "fp4", 64)
        assert d.shape == (4, 6) and d.dtype == torch.float32
        with pytest.raises(MatmulError, match=r"b is torch.uint8 \(6, 64\); fp4 rows of K=64 take torch.uint8 "
                                              r"\[rows, 32\]"):
            torch.ops.jitgemm.mx_mm(torch.empty(4, 48, dtype=u8), torch.empty(4, 2, dtype=u8), "fp6_e2m3",
                                    torch.empty(6, 64, dtype=u8), torch.empty(6, 2, dtype=u8), "fp4", 64)
        with pytest.raises(MatmulError, match=r"b_scale is torch.uint8 \(6, 1\); expected E8M0 codes"):
            torch.ops.jitgemm.mx_mm(torch.empty(4, 48, dtype=u8), torch.empty(4, 2, dtype=u8), "fp6_e2m3",
                                    torch.empty(6, 32, dtype=u8), torch.empty(6, 1, dtype=u8), "fp4", 64)
