"""OpenCL C kernels compiled by clang-22 for gfx942 (LDS, barriers, atomics, 2-D workgroups, divergent loops,
cross-lane operations) run in the emulator and match numpy.

The kernels use clang's AMDGPU builtins instead of OpenCL library calls (no ROCm device libraries here), so
clang alone turns them into code objects. Integer results must match exactly; float results within the
tolerance stated at each test (fp32 evaluation order differs from numpy's float64 reference).
"""

from __future__ import annotations

import numpy as np
import pytest

from jitgemm.emu import check, emulate
from tests.fixtures.clang_kernels import SOURCE, clang_object


@pytest.fixture(scope="module")
def code_object(tmp_path_factory):
    return clang_object(tmp_path_factory.mktemp("clang_kernels"), SOURCE)


def test_every_instruction_has_semantics(code_object):
    missing = {k: [f"0x{op.pc:x} {op.text}" for op in ops] for k, ops in check(code_object).items() if ops}
    assert not missing


def test_reduce_sum_lds_barrier_atomic(code_object):
    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    emulate(code_object, "reduce_sum", grid=-(-n // 256), block=256, args=[x, out, n], strict=True)
    # four partial sums of 256 fp32 values, added atomically: 1e-5 of the sum of magnitudes
    assert abs(out[0] - x.astype(np.float64).sum()) <= 1e-5 * np.abs(x).sum()


def test_saxpy_hidden_group_size(code_object):
    n = 1000
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expect = np.float32(2.5) * x + y  # one fp32 multiply and add (or fma): within 1 ulp
    emulate(code_object, "saxpy", grid=-(-n // 128), block=128, args=[y, x, 2.5, n], strict=True)
    np.testing.assert_allclose(y, expect, rtol=2e-7, atol=1e-7)


def test_transpose_2d_workgroups(code_object):
    rows, cols = 37, 50
    a = np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32)
    t = np.full((cols, rows), np.nan, np.float32)
    emulate(code_object, "transpose", grid=(-(-cols // 16), -(-rows // 16)), block=(16, 16), args=[a, t, rows, cols],
            strict=True)
    np.testing.assert_array_equal(t, a.T)


def test_collatz_divergent_loops(code_object):
    n = 300
    x = np.random.default_rng(3).integers(1, 100000, n).astype(np.uint32)
    steps = np.zeros(n, np.uint32)
    emulate(code_object, "collatz", grid=-(-n // 64), block=64, args=[x, steps, n], strict=True)

    def count(v):
        s = 0
        while v != 1 and s < 1000:
            v = 3 * v + 1 if v & 1 else v >> 1
            s += 1
        return s

    np.testing.assert_array_equal(steps, [count(int(v)) for v in x])


def test_histogram_lds_and_global_atomics(code_object):
    n = 1000
    x = np.random.default_rng(4).integers(0, 1 << 30, n).astype(np.uint32)
    hist = np.zeros(64, np.uint32)
    emulate(code_object, "histogram", grid=-(-n // 256), block=256, args=[x, hist, n], strict=True)
    np.testing.assert_array_equal(hist, np.bincount(x & 63, minlength=64))


def test_mixed_integer_and_float(code_object):
    n = 1000
    rng = np.random.default_rng(5)
    a = rng.integers(-100000, 100000, n).astype(np.int32)
    f = (rng.standard_normal(n) * 10).astype(np.float32)
    out = np.zeros(n, np.float32)
    iout = np.zeros(n, np.int32)
    emulate(code_object, "mixed", grid=-(-n // 256), block=256, args=[a, f, out, iout, n, 13], strict=True)
    a64 = a.astype(np.int64)
    trunc_div = np.trunc(a64 / 13).astype(np.int64)
    rem7 = a64 - np.trunc(a64 / 7).astype(np.int64) * 7
    iref = (trunc_div + rem7 + np.minimum(a64, 100) * np.maximum(a64, -100)
            + np.trunc(f * np.float32(10)).astype(np.int64) + (a64 >> 2) + ((a64 & 0xFFFFFFFF) >> 3))
    np.testing.assert_array_equal(iout, iref.astype(np.int32))
    x = f.astype(np.float64)
    terms = [x / (1.5 + x * x), a64 * 0.25, np.maximum(x, 0), np.where(a64 & 1, x, -x), np.sqrt(np.abs(x)),
             np.floor(x), np.rint((f * np.float32(3)).astype(np.float64))]
    # seven fp32 terms summed in fp32: 8 * 2^-24 of the sum of magnitudes
    bound = 8 * 2.0 ** -24 * sum(np.abs(t) for t in terms) + 1e-6
    assert np.all(np.abs(out - sum(terms)) <= bound)


def test_buffer_load_to_lds(code_object):
    x = np.random.default_rng(7).standard_normal(68).astype(np.float32)
    out = np.zeros(64, np.float32)
    emulate(code_object, "lds_direct", grid=1, block=64, args=[x, out, 68], strict=True)
    np.testing.assert_array_equal(out, x[4 + 63 - np.arange(64)])


def test_lane_ids_readfirstlane_bpermute(code_object):
    out = np.zeros(128, np.uint32)
    emulate(code_object, "lanes", grid=2, block=64, args=[out], strict=True)
    i = np.arange(128)
    lane = i % 64
    first = (i // 64) * 64  # work-item id of each wave's first lane
    expect = lane * 1000 + ((first * 3) & 0xFF) + ((first + (lane + 1) % 64) << 16)
    np.testing.assert_array_equal(out, expect.astype(np.uint32))


DPP_SOURCE = r"""
__kernel void scan_add(__global const uint *x, __global uint *counter, __global uint *prefix, int n) {
    uint i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
    if (i < (uint)n) prefix[i] = __hip_atomic_fetch_add(counter, x[i], __ATOMIC_RELAXED, 3);
}
"""


@pytest.fixture(scope="module")
def dpp_code_object(tmp_path_factory):
    """LLVM's atomic optimizer with the DPP strategy turns a divergent atomic add into a wave-wide DPP scan
    (row_shr, row_bcast:15/31, wave_shr, v_readlane): LLVM's own cross-lane code, checked by its result."""
    return clang_object(tmp_path_factory.mktemp("clang_dpp"), DPP_SOURCE,
                        extra=("-mllvm", "-amdgpu-atomic-optimizer-strategy=DPP"))


def test_dpp_wave_scan_of_atomic_optimizer(dpp_code_object):
    n = 200
    x = np.random.default_rng(6).integers(0, 1000, n).astype(np.uint32)
    counter = np.zeros(1, np.uint32)
    prefix = np.zeros(n, np.uint32)
    emulate(dpp_code_object, "scan_add", grid=-(-n // 64), block=64, args=[x, counter, prefix, n], strict=True)
    assert counter[0] == x.sum()
    bases = []
    for start in range(0, n, 64):
        seg = slice(start, min(n, start + 64))
        exclusive = np.concatenate([[0], np.cumsum(x[seg])[:-1]])
        np.testing.assert_array_equal(prefix[seg] - prefix[seg][0], exclusive)  # each lane's old value
        bases.append((int(prefix[seg][0]), int(x[seg].sum())))
    running = 0
    for base, total in sorted(bases):  # the waves' single atomics happened one after another
        assert base == running
        running += total


# -- the same kernels from our assembler: clang -S of SOURCE assembled by jitgemm (checked equal to llvm-mc +
# ld.lld's code object and its relocatable object), then run by every test above

@pytest.fixture(scope="module")
def clang_assembly(tmp_path_factory):
    return clang_object(tmp_path_factory.mktemp("clang_s"), SOURCE, extra=("-S",)).decode()


def test_clang_assembly_equals_llvm_mc_and_runs(clang_assembly, tmp_path):
    import inspect

    from jitgemm.codegen.codeobj.relocatable import assemble_source

    from tests.fixtures.asm_support import assert_same_code_object, relocatable_summary
    from tests.fixtures.hand_kernel import llvm_link

    ours, _ = assemble_source(clang_assembly, file="k.s")
    ours_rel, _ = assemble_source(clang_assembly, file="k.s", relocatable=True)
    their_rel, theirs = llvm_link(tmp_path, clang_assembly)
    assert assert_same_code_object(ours, theirs, "clang -S") >= 8
    assert relocatable_summary(ours_rel) == relocatable_summary(their_rel)
    ran = 0
    for name, fn in list(globals().items()):  # every emulator test of those kernels, on our code object
        if name.startswith("test_") and list(inspect.signature(fn).parameters) == ["code_object"]:
            fn(ours)
            ran += 1
    assert ran >= 8
