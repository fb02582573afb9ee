"""The Triton peer of each scale mode (jitgemm/triton_gemm.py scaled_gemm_kernel, explicit fp32 multiplies):
its kernel = numpy in the emulator (with a NaN scale and tails), and `explain` ranks it beside the generators'."""

from __future__ import annotations

import numpy as np
import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm.api import launch, prepare
from jitgemm.reference import check, operands, reference, scale_operands
from tests.fixtures.oracles import require_module


@pytest.mark.parametrize("mode, dt, arch", [("block", "fp8", "gfx942"), ("rowcol", "int8", "gfx950"),
                                            ("tensor", "fp8_e5m2", "gfx950")])
def test_triton_peer_matches_numpy_and_is_ranked(mode, dt, arch):
    require_module("triton")
    from jitgemm.suppliers import TritonSupplier

    p = GemmProblem.make(70, 150, 300, dt, d="bf16", layout="NT", scale_mode=mode,
                         **({"a_scale_order": "col"} if mode == "block" else {}))
    x, y, _, _ = operands(p, seed=4)
    sa, sb = scale_operands(p, seed=4)
    if mode == "block":
        sa = np.ascontiguousarray(sa.T).T
    if mode != "tensor":
        sa[2, 0] = np.nan
    (cand,) = TritonSupplier(scope="mx").candidates(p, arch)
    assert cand.contract.data["operation"]["scale_mode"] == mode
    blob, name = cand.load()
    call = prepare(x, y, out_dtype=p.d.numpy, scales=(sa, sb, mode))
    check(p, launch(call, blob, name, cand.contract, backend="emu"), reference(p, x, y, None, None, sa, sb))
    table = jitgemm.explain(p, arch=arch)
    rows = [line for line in table.splitlines() if line.split()[1:2] in (["triton"], ["jitgemm-asm"])]
    assert any("triton" in r and "kept" in r for r in rows) and any("jitgemm-asm" in r and "kept" in r for r in rows)
