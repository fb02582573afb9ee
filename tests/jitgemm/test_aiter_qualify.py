"""aiter kernels qualified in strict emulation (jitgemm.aiter.qualify): a sample of every admitted family equals
numpy's float64 result on small problems its contract allows (partial M tiles, split-K counts through the
split_k / log2_split_k arguments, bf16 atomics), a wrong contract fails, a failing kernel is quarantined with its
reason, and with the tuning tables imported the selector picks the measured winner and `explain` cites the row."""

from __future__ import annotations

import copy
import json
import re

import pytest

from jitgemm.aiter import inventory
from jitgemm.aiter.qualify import candidate_key, load_verdicts, qualify, run_case, save_verdicts
from jitgemm.api import MatmulError
from jitgemm.contract import Contract
from jitgemm.emu import EmulatorError
from jitgemm.reference import Mismatch
from tests.fixtures.aiter_corpus import aiter_wheel


@pytest.fixture(scope="module")
def inv():
    return inventory(aiter_wheel())


@pytest.mark.parametrize("label, m, n, k, split", [
    ("gfx942/bf16gemm_outf32_tn_32x64_pf3", 45, 128, 192, 3),       # 2 N tiles, partial M tile, split 3
    ("gfx950/bf16gemm_outf32_tn_96x64_pf3", 100, 64, 128, 1),
    ("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128", 37, 256, 512, 1),
    ("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_128x512", 20, 512, 512, 2),   # log2_k_split = 1, bf16 atomics
])
def test_aiter_kernels_equal_numpy_in_strict_emulation(inv, label, m, n, k, split):
    run_case(inv.kernel(label), m, n, k, split, seed=7, strict=True)



@pytest.mark.parametrize("label, m, n, k, split", [
    ("gfx942/I8gemm_bf16_perTokenI8_BpreShuffle_128x128", 150, 256, 256, 1),   # 2 M, 2 N tiles, 2 K steps
    ("gfx942/I8gemm_bf16_perTokenI8_BpreShuffle_192x128", 250, 256, 384, 1),   # 2 M tiles (one partial), 3 K steps
    ("gfx942/gemm_a8w8_m128_noSplitK", 256, 256, 256, 1),
    ("gfx942/gemm_a8w8_m128_splitK", 256, 128, 512, 2),                       # log2 split 1, 2 K steps per split
])
def test_int8_aiter_gemms_equal_numpy_in_strict_emulation(inv, label, m, n, k, split):
    """aiter's int8 GEMMs (per-token x per-channel scales, bias, bf16 out) read B shuffled 32x16 and broadcast each
    column's scale and bias with DPP row_newbcast (once run as a plain VOP2: results unrelated to numpy); their
    NaN select reads a v_cmp's SGPR mask 1 wait state later (a lane-mask read: specs/targets/gfx942.yaml
    except_formats). With 2 K steps or 2 M tiles strict emulation used to refuse them: the K loop's last iteration
    reads the next tile from LDS speculatively and prefetches one more with a load-to-LDS, and the epilogue stages
    C through the same bytes with no barrier or vmcnt wait. The read values are dead (strict: a race on an unused
    value is no violation) and the prefetch is overwritten after s_barriers (accepted with a StrictWarning);
    tests/emu/test_strict_hand_written_rules.py shows both rules, and their refusals, on minimal kernels."""
    run_case(inv.kernel(label), m, n, k, split, seed=4, strict=True)


def test_a_wrong_contract_fails_qualification(inv):
    """The same kernel with B's stride put in strideB1's slot (the kernel reads strideB0: B's rows collapse) and
    with D's stride in strideC1's (D is never written where numpy wants it): both are caught. (alpha and beta
    are not read by these kernels: aiter's host always passes 1 and 0.)"""
    k = inv.kernel("gfx942/bf16gemm_outf32_tn_32x64_pf3")
    for name, offset in (("stride_B0", 208), ("stride_C0", 144)):
        data = copy.deepcopy(dict(k.contract.data))
        for arg in data["abi"]["args"]:
            if arg["name"] == name:
                arg["offset"] = offset
        bad = copy.copy(k)
        bad.contract = Contract.load(data)
        with pytest.raises((Mismatch, EmulatorError)):
            run_case(bad, 40, 64, 128, 1, seed=1, strict=True)


def test_split_k_is_refused_where_the_contract_does_not_allow_it(inv):
    f4 = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_128x512")
    with pytest.raises(MatmulError, match="power_of_two"):
        run_case(f4, 20, 512, 768, 3, seed=0)
    one = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128")
    with pytest.raises(MatmulError, match="does not split K"):
        run_case(one, 20, 128, 512, 2, seed=0)


@pytest.fixture(scope="module")
def f4_quarantined(inv):
    """The one f4gemm object without pre-shuffled B, qualified and its verdict saved (a fixture, so every test
    that needs the stored quarantine has it whatever order the tests run in)."""
    k = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256")
    v = qualify(k, cases=1)
    save_verdicts([v])
    return k, v


def test_quarantine_keeps_the_reason(inv, f4_quarantined):
    """The one f4gemm object without pre-shuffled B reads past B's end at K = 256 (its next-tile prefetch) in
    strict emulation: quarantined with the fault, and the selector then refuses it with that reason."""
    from jitgemm.aiter.supplier import AiterSupplier
    from jitgemm.selector import Selector

    k, v = f4_quarantined
    assert not v.ok and "MemoryFault" in v.failure and "m=" in v.failure
    assert load_verdicts()[candidate_key(k)]["failure"] == v.failure
    sel = Selector([AiterSupplier(inv)], target="gfx950")
    problem = None
    from jitgemm.codegen.gemm_ir import GemmProblem

    problem = GemmProblem.make(256, 256, 512, "fp4", "fp4", "bf16", layout="NT", a_scale="shuffled",
                               b_scale="shuffled")
    verdict = next(x for x in sel.evaluate(problem) if x.candidate.label == k.label)
    assert not verdict.legal and "quarantined" in verdict.reason and "MemoryFault" in verdict.reason


def test_import_then_the_selector_picks_the_measured_winner_and_cites_the_row(inv, f4_quarantined, tmp_path, capsys):
    from jitgemm.aiter.supplier import AiterSupplier
    from jitgemm.cli import main
    from jitgemm.selector import Selector
    from jitgemm.tuning_db import TuningDB

    db = tmp_path / "t.db"
    assert main(["aiter", "import", str(aiter_wheel()), "--db", str(db)]) == 0
    assert "4066 measured rows added" in capsys.readouterr().out
    assert main(["inventory", "--json", "--db", str(db), "--arch", "gfx950"]) == 0
    doc = json.loads(capsys.readouterr().out)["targets"]["gfx950"]
    assert doc["families"]["f4gemm_bf16_per1x32Fp4"]["quarantined"] == 1
    assert doc["measured_rows"]["total"] > 2000 and "ck" in doc["measured_rows"]["by_generator"]
    # bf16_tuned_gemm.csv line 5: M=150 N=256 K=5120 on MI308X, winner bf16gemm_outf32_tn_48x64_pf3 (11.7 us)
    row = next(r for r in inv.tuned_rows if r.table == "bf16_tuned_gemm.csv" and r.line == 5)
    with_tables = Selector([AiterSupplier(inv)], target="gfx942", tuning=TuningDB(db))
    best = with_tables.evaluate(row.problem)[0]
    assert best.candidate.label == "gfx942/bf16gemm_outf32_tn_48x64_pf3" == row.kernel_label
    assert best.basis == "tuning" and best.row.origin.endswith("bf16_tuned_gemm.csv:5")
    assert "bf16_tuned_gemm.csv:5" in with_tables.explain(row.problem)
    model_only = Selector([AiterSupplier(inv)], target="gfx942", tuning=TuningDB(tmp_path / "empty.db"))
    assert model_only.evaluate(row.problem)[0].basis == "model"


def test_the_abi_proof_runs_on_the_qualification_and_finds_an_undeclared_read(inv):
    """Qualification traces the kernarg reads of its own runs (jitgemm.abi_proof): the family's contract covers
    every read; the same contract without ptr_C (the kernels read it though aiter passes null) is refused, naming
    the load and its PC."""
    k = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128")
    good = qualify(k, cases=1)
    assert good.ok and not any(x.startswith("error") for x in good.abi)
    data = copy.deepcopy(dict(k.contract.data))
    data["abi"]["args"] = [a for a in data["abi"]["args"] if a["name"] != "ptr_C"]
    bad = copy.copy(k)
    bad.contract = Contract.load(data)
    v = qualify(bad, cases=1)
    assert not v.ok and "ABI proof" in v.failure and "undeclared" in v.failure and "PC 0x" in v.failure


def test_use_aiter_offers_the_kernels_to_matmul_selection(inv, tmp_path, monkeypatch):
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm
    from jitgemm.selector import _selectors, default_suppliers

    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "t.db"))
    before = list(default_suppliers())
    try:
        got = jitgemm.use_aiter(aiter_wheel())
        assert len(got.admitted("gfx950")) == 43                 # bf16gemm 4, f4gemm 35, f8_block_scale_mi350 4
        p = GemmProblem.make(64, 256, 512, "fp4", "fp4", "bf16", layout="NT", a_scale="shuffled", b_scale="shuffled",
                             b_preshuffle="16x16")
        text = jitgemm.explain(p, arch="gfx950")
        assert "f4gemm_bf16_per1x32Fp4_BpreShuffle_32x256" in text
    finally:
        default_suppliers()[:] = before
        for sel in list(_selectors.values()):
            sel.forget()


def test_matmul_launches_a_tuned_winner_with_its_rows_split(inv, tmp_path, monkeypatch):
    """bf16_tuned_gemm.csv line 2 (MI308X): M=64 N=256 K=5120 ran fastest on bf16gemm_outf32_tn_32x64_pf3 with
    splitK 10. With the tables imported, `matmul` picks that kernel (the measured row ranks it) and launches it
    with the row's split -- the time that made it the winner -- not the timing model's (16 here) or 1; the
    emulated result equals numpy."""
    import ml_dtypes
    import numpy as np

    import jitgemm
    from jitgemm.aiter.tuned import import_rows
    from jitgemm.api import tuned_split
    from jitgemm.selector import _selectors, default_selector, default_suppliers
    from jitgemm.timing import best_split
    from jitgemm.tuning_db import TuningDB

    row = next(r for r in inv.tuned_rows if r.table == "bf16_tuned_gemm.csv" and r.line == 2)
    kernel = inv.kernel(row.kernel_label)
    assert (row.m, row.n, row.k, row.split_k) == (64, 256, 5120, 10)
    assert best_split((kernel.contract, kernel.code), row.problem).split_k != row.split_k
    db = TuningDB(tmp_path / "t.db")
    import_rows(inv, db)
    monkeypatch.setenv("JITGEMM_TUNING_DB", str(tmp_path / "t.db"))
    monkeypatch.setattr(default_selector("gfx942"), "tuning", db)
    before = list(default_suppliers())
    try:
        jitgemm.use_aiter(aiter_wheel(), tuning=False)
        source = f"aiter:{kernel.label}"
        assert tuned_split(kernel.contract, row.problem, "gfx942", source) == 10
        rng = np.random.default_rng(5)
        a = rng.standard_normal((64, 5120)).astype(ml_dtypes.bfloat16)
        bt = rng.standard_normal((256, 5120)).astype(ml_dtypes.bfloat16)
        d = jitgemm.matmul(a, bt.T, out_dtype="float32", arch="gfx942", backend="emu")
        rec = jitgemm.last_launch()
        assert rec.kernel_source == source and rec.split_k == 10 and rec.grid[2] == 10
        ref = a.astype(np.float64) @ bt.T.astype(np.float64)
        assert np.allclose(d, ref, rtol=1e-4, atol=1e-3 * np.abs(ref).max())
    finally:
        default_suppliers()[:] = before
        for sel in list(_selectors.values()):
            sel.forget()


def _abi_errors(kernel, run) -> list[str]:
    """The ABI proof (jitgemm.abi_proof) of the kernarg reads `run()` makes: its errors (an undeclared read...)."""
    from jitgemm.codegen import codeobj

    from jitgemm.abi_proof import compare
    from jitgemm.emu.kernarg_trace import kernarg_reads

    with kernarg_reads() as reads:
        run()
    meta = codeobj.read(kernel.code).kernel(kernel.name).metadata
    return [str(f) for f in compare(kernel.contract, reads, meta) if f.severity == "error"]


def test_flatmm_reads_b_as_shuffle_weight_16x16(inv):
    """aiter's flatmm host names B's layout only as "[N/128, K*128]"; its op test builds it as
    weight.view(n//16, 16, k//64, 4, 16).permute(0, 2, 3, 1, 4) (ROCm/aiter@81c1fc2f
    op_tests/test_gemm_a8w8_blockscale.py), which is byte for byte aiter's shuffle_weight(layout=(16, 16)):
    the contract's b_preshuffle 16x16, numpy twin `jitgemm.mx.shuffle_weight`. The kernel equals numpy with it
    (fp8 FNUZ, column-major 1x128 / 128x128 fp32 scales, fp16 out; every kernarg read declared: the ABI proof)
    and not with B's plain rows. Strict emulation quarantines it: its K loop reads an MFMA's D in a v_fmac 5 wait
    states after the MFMA (PC 0x780 -> 0x798) where the CDNA3 table and LLVM ask 7 (4 passes + 3), even counting
    the matrix pipe's stall at the independent MFMA between (profile mfma.next_issue; LLVM counts it 1: 2 given)."""
    import numpy as np

    from jitgemm.mx import shuffle_weight

    w = np.random.default_rng(0).integers(0, 256, (256, 384), dtype=np.uint8)
    flat = w.reshape(256 // 16, 16, 384 // 64, 4, 16).transpose(0, 2, 3, 1, 4).reshape(256, -1)
    assert np.array_equal(flat, shuffle_weight(w, 16))
    k = inv.kernel("gfx942/flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32")
    assert _abi_errors(k, lambda: run_case(k, 128, 256, 256, 1, seed=2, strict=False)) == []
    data = copy.deepcopy(dict(k.contract.data))
    data["operation"]["b_preshuffle"] = "none"
    plain = copy.copy(k)
    plain.contract = Contract.load(data)
    with pytest.raises(Mismatch):
        run_case(plain, 128, 256, 256, 1, seed=2, strict=False)
    v = qualify(k, cases=1)
    assert not v.ok and "mfma -> valu read needs 7 wait states, 5 given (an MFMA's matrix-pipe stall" in v.failure
    assert "[PC 0x780 v_mfma_f32_16x16x32_fp8_fp8 v[56:59]" in v.failure and "PC 0x798 v_fmac_f32" in v.failure


def test_mi350_blockscale_equals_numpy_when_waves_interleave(inv):
    """gfx950's f8_block_scale_mi350 (OCP fp8, 1x128 / 128x128 fp32 scales, B shuffled 16x16, bf16 out): with
    waves interleaved at random, as hardware may run them, it equals numpy on a partial M tile; the w_scale
    order is the op test's ([N/128, K/128] row-major), not the host comment's [K/128, N/128]. Its MFMA -> VALU
    reads (an independent 8-pass MFMA and s_nop 5 between: 14 wait states with the matrix pipe's stall, 12
    needed) pass strict emulation; the quarantine is the epilogue's: it stages C with ds_write into LDS bytes
    that the last K iteration's buffer_load ... lds may still write (issued in the same barrier epoch, no
    s_waitcnt vmcnt since: the load can land on top of C), a race LLVM's SIInsertWaitcnts would close with a
    vmcnt wait (the lowest-PC-first schedule shows it as wrong 16x32 blocks of D)."""
    k = inv.kernel("gfx950/f8_block_scale_mi350_x32")
    assert _abi_errors(k, lambda: run_case(k, 20, 256, 512, 1, seed=3, strict=False,
                                           emu_options={"schedule": "random", "seed": 1})) == []
    data = copy.deepcopy(dict(k.contract.data))
    data["operation"]["b_scale_order"] = "col"
    swapped = copy.copy(k)
    swapped.contract = Contract.load(data)
    with pytest.raises(Mismatch):
        run_case(swapped, 20, 256, 512, 1, seed=3, strict=False, emu_options={"schedule": "random", "seed": 1})
    v = qualify(k, cases=1)
    assert not v.ok and "StrictViolation" in v.failure and "hazard" not in v.failure
    assert "load-to-LDS of wave" in v.failure and "no s_barrier between" in v.failure
    dma_then_write = r"\[PC 0x[0-9a-f]+ buffer_load_dwordx4 \S+, s\[\d+:\d+\], 0 offen lds -> "
    dma_then_write += r"PC 0x[0-9a-f]+ ds_write_b64"
    assert re.search(dma_then_write, v.failure)
