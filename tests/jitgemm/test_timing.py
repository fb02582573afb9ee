"""The timing model (jitgemm.timing): structure and consistency on our own kernels. Its accuracy against hardware
timings is tests/jitgemm/test_timing_accuracy.py."""

from __future__ import annotations

import dataclasses

import pytest
from jitgemm.codegen.gemm_ir import GemmProblem

import jitgemm
from jitgemm import isa
from jitgemm.timing import predict, trace
from jitgemm.timing.trace import lane_bytes, mfma_flops


def _default_128(layout: str):
    """The direct generator's default 128x128x32 kernel for 256^3 bf16 (pinned: the selector may rank another)."""
    from jitgemm.codegen.gemm_config import default_config

    p = GemmProblem.make(256, 256, 256, "bf16", layout=layout)
    config = default_config(p, isa.load_spec("gfx942"), isa.target_profile("gfx942"))
    assert (config.tile_m, config.tile_n, config.depth_k) == (128, 128, 32)
    return jitgemm.compile(p, config)


@pytest.fixture(scope="module")
def kernel():
    return _default_128("NT")


def test_names_give_widths_and_flops():
    assert [lane_bytes(n) for n in ("BUFFER_LOAD_DWORDX4", "GLOBAL_LOAD_DWORD", "DS_READ_B128", "DS_WRITE_B64",
                                    "BUFFER_LOAD_UBYTE", "GLOBAL_LOAD_SHORT_D16")] == [16, 4, 16, 8, 1, 2]
    assert mfma_flops("V_MFMA_F32_32X32X8_BF16") == 16384 and mfma_flops("V_MFMA_F32_16X16X4_4B_F16") == 8192
    assert mfma_flops("V_MFMA_SCALE_F32_32X32X64_F8F6F4") == 131072


def test_trace_regions_of_our_kernel(kernel):
    """One loop iteration of the 128x128x32 kernel: its 4 waves' MFMAs cover the tile for K per iteration, and it
    loads exactly the A and B tiles' bytes of that K (bf16: 2 bytes) through vector memory."""
    from jitgemm.codegen import codeobj

    k = codeobj.read(kernel.code_object).kernel(kernel.name)
    tr = trace(k.code, "gfx942")
    tile = kernel.contract["tile"] if isinstance(kernel.contract, dict) else kernel.contract.data["tile"]
    waves = 4
    k_iter = tr.loop.mfma_flops * waves // (2 * tile["m"] * tile["n"])
    assert k_iter % tile["k"] == 0 and k_iter >= tile["k"]
    assert tr.loop.vmem_load_bytes * waves == (tile["m"] + tile["n"]) * k_iter * 2
    assert tr.loop.instructions["mfma"] * 8 == tr.loop.mfma_passes      # 32x32x8 bf16: 8 passes each
    assert tr.prologue.total > 0 and tr.epilogue.vmem_store_bytes > 0 and tr.loop.passes >= tr.loop.mfma_passes


def test_prediction_is_consistent(kernel):
    small, big = (predict(kernel, GemmProblem.make(s, s, s, "bf16", layout="NT")) for s in (512, 8192))
    dev = isa.target_profile("gfx942").device()
    assert small.device == dev.name == "MI300X" and small.us < big.us
    for p in (small, big):
        assert 0 < p.tflops <= dev.peak_matrix_tflops["bf16"] and p.us >= p.roofline_us > 0
        assert p.tflops == pytest.approx(2 * p.m * p.n * p.k / p.us / 1e6)
    c = big.counters
    assert c["workgroups"] == 64 * 64 and c["rounds"] == -(-4096 // (304 * c["occupancy"]["workgroups_per_cu"]))
    mfmas = c["instructions"]["mfma"]
    assert mfmas * 16384 >= 2 * 8192 ** 3 and mfmas * 16384 < 2 * 8192 ** 3 * 1.1   # flops of the MFMAs issued
    assert c["bytes"]["hbm"] >= 2 * 8192 * 8192 * 3 and big.bound in ("compute", "latency", "hbm", "mall", "l2")


def test_devices_and_split_k_change_the_time(kernel):
    """The MI308X (80 CUs) takes longer than the MI300X (304) on a big problem; splitting K of a tall-skinny problem
    over more workgroups fills more CUs; past the slots a second round appears (wave quantization)."""
    p = GemmProblem.make(4096, 4096, 4096, "bf16", layout="NT")
    assert predict(kernel, p, "MI308X").us > 2 * predict(kernel, p, 304).us
    skinny = GemmProblem.make(128, 128, 65536, "bf16", layout="NT")
    one, eight = predict(kernel, skinny), predict(kernel, skinny, split_k=8)
    assert eight.counters["workgroups"] == 8 and eight.us < one.us
    slots = 304 * predict(kernel, p).counters["occupancy"]["workgroups_per_cu"]
    n_tiles = slots // 8
    fits, spills = (predict(kernel, GemmProblem.make(128 * 8 * r, 128 * n_tiles, 1024, "bf16", layout="NT"))
                    for r in (1, 2))
    assert (fits.counters["rounds"], spills.counters["rounds"]) == (1, 2)
    with pytest.raises(isa.IsaError, match="no device 'MI999'"):
        predict(kernel, p, "MI999")


def test_trace_is_cached_per_code(kernel):
    import importlib

    trace_module = importlib.import_module("jitgemm.timing.trace")

    before = trace_module._cached.cache_info().hits
    for m in range(64, 64 * 40, 64):
        predict(kernel, GemmProblem.make(m, 1024, 1024, "bf16", layout="NT"))
    assert trace_module._cached.cache_info().hits - before >= 38


def test_emulated_addresses_give_bank_conflicts_and_transactions(kernel):
    """One macro tile in the emulator: the NT kernel's padded LDS rows are conflict-free, the NN kernel's B
    staging is not; both read their tiles in whole 64-byte segments (A and B tile bytes of one iteration). The
    conflicts cost LDS time in the prediction."""
    from jitgemm.timing.emu_counters import emu_counters

    nn = _default_128("NN")
    clean, conflicted = emu_counters(kernel), emu_counters(nn)
    assert clean.lds_conflict_cycles == 0 and clean.lds_bank_cycles > 0
    assert conflicted.lds_conflict_cycles > 0 and conflicted.lds_conflict_factor > 1.5
    for c in (clean, conflicted):
        assert c.global_bytes == (128 + 128) * 32 * 2 and c.global_transactions * 64 == c.global_bytes
    p = GemmProblem.make(4096, 4096, 4096, "bf16", layout="NN")
    plain, measured = predict(nn, p), predict(nn, p, measured=conflicted)
    assert plain.counters["lds_bank_conflicts"] is None and measured.counters["lds_bank_conflicts"] > 0
    assert measured.us > plain.us and measured.stalls_us.get("lds_bandwidth", 0) > plain.stalls_us.get(
        "lds_bandwidth", 0)


def test_edge_tiles_and_empty_k_slices_cost_what_they_read_and_run(kernel):
    """Partial tiles are not timed as interior ones. M/N edges: a tile's rows past M (columns past N) load nothing,
    so the L2 fill of a 2x2-tile problem whose last tile row holds 1 row of 128 drops by A's share x 127/256
    (likewise B's for N), and the two shares add up to the full problem's fill. K tail: split 64 of K = 100 gives
    slices of 2, the last 14 empty (prologue and epilogue only), so on one CU (rounds of one or two workgroups) it
    is faster than K = 128 in 64 full slices of 2 -- the same slice, iterations and workgroups otherwise."""
    fill = {}
    for m, n in ((256, 256), (129, 256), (256, 129)):
        pred = predict(kernel, GemmProblem.make(m, n, 4096, "bf16", layout="NT"))
        assert pred.counters["workgroups"] == 4 and pred.counters["iterations_per_workgroup"] == 4096 // 32
        fill[m, n] = pred.counters["bytes"]["l2_fill_from_mall"]
    a_fill = (fill[256, 256] - fill[129, 256]) / (127 / 256)
    b_fill = (fill[256, 256] - fill[256, 129]) / (127 / 256)
    assert a_fill > 0 and b_fill > 0 and a_fill + b_fill == pytest.approx(fill[256, 256], abs=4)
    one_cu = dataclasses.replace(isa.target_profile("gfx942").device(), cu_num=1)
    tail, full = (predict(kernel, GemmProblem.make(128, 128, k, "bf16", layout="NT"), one_cu, split_k=64)
                  for k in (100, 128))
    assert tail.counters["iterations_per_workgroup"] == full.counters["iterations_per_workgroup"] == 1
    assert tail.counters["workgroups"] == full.counters["workgroups"] == 64
    assert tail.bound == full.bound == "latency" and tail.us < full.us
