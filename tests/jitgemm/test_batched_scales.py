"""3-D (batched) scale arrays in `jitgemm.scaled_matmul` / `prepare`: [batch, ...] gives each batch entry its own
fp32 scales (the kernel moves its scale pointers by z * stride_{a,b}_scale, as it moves A and B), [1, ...] and 2-D
arrays are shared. Each mode x generator = numpy float64 per entry in strict emulation; the entries' scales are
different (a kernel reading entry 0's scales for every entry fails); D starts as NaN poison."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm.api import MatmulError, launch, prepare
from jitgemm.contract import Contract
from jitgemm.kernel import compile as compile_kernel
from jitgemm.reference import check, operands, reference, scale_operands

CASES = [  # mode, arch, generator, A/B, D, layout, which sides are per batch entry, block-scale orders
    ("tensor", "gfx942", "asm", "fp8", "fp32", "NT", "ab", {}),
    ("rowcol", "gfx950", "llvm", "int8", "bf16", "NN", "a", {}),
    ("block", "gfx942", "llvm", "fp8", "bf16", "NT", "ab", {"b_scale_order": "col"}),
    ("block", "gfx950", "asm", "fp8_e4m3", "fp32", "NT", "b", {"a_scale_order": "col"}),
]
BATCH = 3


def _stored(x: np.ndarray, order: str) -> np.ndarray:
    return x if order == "row" else np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)


@pytest.mark.parametrize("mode, arch, gen, dt, d, layout, per, orders", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[6]}" for c in CASES])
def test_per_entry_scales_equal_numpy(mode, arch, gen, dt, d, layout, per, orders):
    p = GemmProblem.make(40, 150, 300, dt, d=d, layout=layout, batch=BATCH, scale_mode=mode, **orders)
    x, y, _, _ = operands(p, seed=4)
    assert x.ndim == 3 and y.ndim == 3
    entries = [scale_operands(p, seed=s) for s in range(BATCH)]          # different scales per entry
    sa = np.stack([e[0] for e in entries]) if "a" in per else entries[0][0]
    sb = np.stack([e[1] for e in entries]) if "b" in per else entries[0][1]
    sa, sb = _stored(sa, p.a_scale_order), _stored(sb, p.b_scale_order)
    kernel = compile_kernel(p, arch=arch, generator=gen)
    call = prepare(x, y, out_dtype=p.d.numpy, scales=(sa, sb, None if mode != "tensor" else mode))
    assert call.problem.kernel_class() == p.kernel_class()
    assert np.isnan(call.d).all()
    out = launch(call, kernel.code_object, kernel.name, Contract.load(kernel.contract), backend="emu", strict=True)
    one = GemmProblem.make(40, 150, 300, dt, d=d, layout=layout, scale_mode=mode, **orders)
    for z in range(BATCH):
        za = sa[z] if sa.ndim == 3 else sa
        zb = sb[z] if sb.ndim == 3 else sb
        check(one, out[z], reference(one, x[z], y[z], None, None, za, zb))


def test_scaled_matmul_takes_3d_scales_and_names_a_wrong_batch():
    p = GemmProblem.make(20, 24, 64, "int8", d="fp32", scale_mode="rowcol", batch=2)
    x, y, _, _ = operands(p, seed=5)
    sa = np.stack([scale_operands(p, seed=s)[0] for s in (1, 2)])            # [2, M, 1]
    sb = scale_operands(p, seed=3)[1][None]                                  # [1, 1, N]: shared
    out = jitgemm.scaled_matmul(x, y, sa, sb, arch="gfx942", backend="emu")
    one = GemmProblem.make(20, 24, 64, "int8", d="fp32", scale_mode="rowcol")
    for z in range(2):
        check(one, out[z], reference(one, x[z], y[z], None, None, sa[z], sb[0]))
    with pytest.raises(MatmulError, match=r"scale_a has shape \(3, 20, 1\).*batch=2"):
        jitgemm.scaled_matmul(x, y, np.concatenate([sa, sa[:1]]), sb, arch="gfx942", backend="emu")
