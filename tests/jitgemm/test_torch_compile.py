"""torch.compile(fullgraph=True) traces a model calling jitgemm's ops with no graph break, forward and
backward equal to eager torch. Backend aot_eager: Dynamo + AOTAutograd trace with the fake registrations (what
fullgraph proves); inductor adds only C++ codegen around the opaque ops and minutes of compile here."""

from __future__ import annotations

from tests.fixtures.torch_support import assert_close, require_torch


def test_compiled_model_has_no_graph_break():
    torch = require_torch()
    from torch._dynamo.utils import counters

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(21)
            self.w1 = torch.nn.Parameter(torch.randn(16, 24, generator=g))
            self.w2 = torch.nn.Parameter(torch.randn(2, 24, 8, generator=g))

        def forward(self, x):
            h = torch.relu(torch.ops.jitgemm.mm(x, self.w1))
            return torch.ops.jitgemm.bmm(torch.stack([h, 2 * h]), self.w2).sum(0)

    torch._dynamo.reset()
    counters.clear()
    model = Model()
    x = torch.randn(12, 16, generator=torch.Generator().manual_seed(22))
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    y = compiled(x)
    assert not counters["graph_break"], dict(counters["graph_break"])
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1

    ref_w1 = model.w1.detach().double().requires_grad_()
    ref_w2 = model.w2.detach().double().requires_grad_()
    h = torch.relu(x.double() @ ref_w1)
    ref = torch.bmm(torch.stack([h, 2 * h]), ref_w2).sum(0)
    assert_close(y, ref, "float32")
    y.square().sum().backward()
    ref.square().sum().backward()
    assert_close(model.w1.grad, ref_w1.grad, "float32")
    assert_close(model.w2.grad, ref_w2.grad, "float32")
