"""OCP fp8 GEMMs on gfx950 through `matmul`: gfx950's fp8 MFMAs read OCP e4m3fn/e5m2 codes (profile
fp8_flavour: ocp; LLVM AMDGPU gfx950 and Triton's gfx950 fp8e4nv/fp8e5 kernels, tests/emu/test_emu_gfx950_kernels.py),
so an OCP array multiplies there and equals numpy in float64, while an FNUZ array is refused rather than misread
(255 of 256 codes mean different numbers)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jitgemm
from jitgemm.selector import SelectionError


@pytest.mark.parametrize("ta,tb", [(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fn),
                                   (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn)])
def test_ocp_fp8_matmul_on_gfx950_equals_numpy(ta, tb):
    rng = np.random.default_rng(950)
    a = rng.standard_normal((40, 70)).astype(ta)
    b = np.ascontiguousarray(rng.standard_normal((36, 70)).astype(tb)).T     # a transposed view
    d = jitgemm.matmul(a, b, arch="gfx950")
    want = a.astype(np.float64) @ b.astype(np.float64)
    # fp32 accumulation of exact fp8 products: relative error of a few fp32 ulps of the row sums
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_fnuz_fp8_is_refused_on_gfx950_and_ocp_on_gfx942():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 32)).astype(ml_dtypes.float8_e4m3fnuz)
    with pytest.raises(SelectionError, match="fp8xfp8"):
        jitgemm.matmul(a, a.T.copy(), arch="gfx950")
    o = rng.standard_normal((16, 32)).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(SelectionError, match="fp8_e4m3"):
        jitgemm.matmul(o, o.T.copy(), arch="gfx942")
