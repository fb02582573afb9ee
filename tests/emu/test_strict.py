"""Strict emulation (jitgemm/emu/strict.py): the emulator refuses what hardware would not forgive.

Each rule is shown twice: a correct kernel passes, and the same kernel with its wait, barrier or wait states
taken away is refused with a report naming both instructions. The hazard table (specs/targets/gfx942.yaml) is
checked against LLVM: MFMA pass counts against llvm-mca-22's scheduling model, and the s_nop LLVM inserts after
an MFMA is exactly what the table requires (removing it is flagged). The mutation test takes kernels written
by others (clang, Triton) and removes each s_waitcnt, s_barrier and s_nop, or weakens each wait by one: every
mutant that gives a different result under some randomized schedule must be flagged.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from jitgemm.emu import EmulatorError, emulate
from jitgemm.emu.strict import StrictViolation
from tests.fixtures.clang_kernels import clang_object, mutants
from tests.fixtures.hand_kernel import BUF, assemble
from tests.fixtures.oracles import require_tool

LOAD_ADD_STORE = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[8:9]
  global_load_dword v3, v1, s[8:9] offset:256
  s_waitcnt vmcnt(0)
  v_add_f32 v2, v2, v3
  global_store_dword v1, v2, s[8:9] offset:512
"""


def _buf():
    return np.random.default_rng(1).standard_normal(192).astype(np.float32)


def test_waits_pass_and_a_missing_wait_is_named(tmp_path):
    x = _buf()
    co = assemble(tmp_path, LOAD_ADD_STORE, [BUF])
    stats = emulate(co, "k", grid=1, block=64, args=[x], strict=True)
    assert "passed" in stats.strict
    np.testing.assert_array_equal(x[128:], x[:64] + x[64:128])
    for weaker, reg in (("s_waitcnt vmcnt(0)", "v2"), ("s_waitcnt vmcnt(1)", "v3")):
        body = LOAD_ADD_STORE.replace("  s_waitcnt vmcnt(0)\n", "" if weaker.endswith("(0)") else weaker + "\n")
        co = assemble(tmp_path, body, [BUF])
        with pytest.raises(StrictViolation) as err:
            emulate(co, "k", grid=1, block=64, args=[_buf()], strict=True)
        text = str(err.value)
        assert "missing s_waitcnt" in text and f"on {reg}" in text and "global_load_dword" in text
        assert "v_add_f32" in text and "wave 0" in text and "lanes 0xffffffffffffffff" in text
    # lgkmcnt: an SMEM result is guaranteed only by lgkmcnt(0)
    co = assemble(tmp_path, LOAD_ADD_STORE.replace("s_waitcnt lgkmcnt(0)", "s_waitcnt lgkmcnt(1)"), [BUF])
    with pytest.raises(StrictViolation, match="on s8"):
        emulate(co, "k", grid=1, block=64, args=[_buf()], strict=True)


def test_a_profile_without_mfma_passes_checks_waits_and_says_that_hazards_are_not_checked(tmp_path, monkeypatch):
    """A profile with a hazard table but no mfma.passes (strict.hazard_gap; gfx950's was one until it got its
    table): strict mode still checks the counters, leaves the hazard table out and says so, in a StrictWarning and
    in RunStats.strict. gfx942's and gfx950's profiles have their passes: nothing is left out there."""
    import dataclasses

    from jitgemm.isa.hazards import hazard_gap
    from jitgemm.isa.spec.targets import target_profile

    from jitgemm.emu.strict import StrictWarning

    for target in ("gfx942", "gfx950"):
        assert hazard_gap(target_profile(target)) is None, target
    full = target_profile("gfx942")
    bare = dataclasses.replace(full, values={**full.values, "mfma": {}})
    assert "has no mfma.passes" in hazard_gap(bare)
    monkeypatch.setattr("jitgemm.isa.spec.targets.target_profile", lambda _t: bare)
    # code no other test runs (the strict facts are cached per program, made by the profile of the first run)
    body = "  s_nop 5\n" + LOAD_ADD_STORE
    x = _buf()
    co = assemble(tmp_path, body, [BUF])
    with pytest.warns(StrictWarning, match="hazards NOT checked: specs/targets/gfx942.yaml has no mfma.passes"):
        stats = emulate(co, "k", grid=1, block=64, args=[x], strict=True)
    assert "passed" in stats.strict and "hazards NOT checked" in stats.strict
    np.testing.assert_array_equal(x[128:], x[:64] + x[64:128])
    co = assemble(tmp_path, body.replace("  s_waitcnt vmcnt(0)\n", ""), [BUF])
    with pytest.warns(StrictWarning), pytest.raises(StrictViolation, match="missing s_waitcnt on v2"):
        emulate(co, "k", grid=1, block=64, args=[_buf()], strict=True)


# two waves: each writes its lane ids to LDS, then reads the other wave's
LDS_SWAP = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_add_u32 v3, 7, v0
  ds_write_b32 v1, v3
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_xor_b32 v2, 256, v1
  ds_read_b32 v4, v2
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v4, s[8:9]
"""


def test_lds_race_without_barrier_or_wait(tmp_path):
    out = np.zeros(128, np.uint32)
    co = assemble(tmp_path, LDS_SWAP, [BUF], lds=512)
    emulate(co, "k", grid=1, block=128, args=[out], strict=True)
    np.testing.assert_array_equal(out, (np.arange(128) ^ 64) + 7)
    for body in (LDS_SWAP.replace("  s_barrier\n", ""), LDS_SWAP.replace("  s_waitcnt lgkmcnt(0)\n  s_barrier",
                                                                            "  s_barrier", 1)):
        co = assemble(tmp_path, body, [BUF], lds=512)
        with pytest.raises(StrictViolation) as err:
            emulate(co, "k", grid=1, block=128, args=[np.zeros(128, np.uint32)], strict=True)
        assert "LDS race" in str(err.value) and "ds_write_b32" in str(err.value) and "ds_read_b32" in str(err.value)


def test_uninitialized_read_warns_or_refuses(tmp_path):
    body = LOAD_ADD_STORE.replace("  v_add_f32 v2, v2, v3", "  v_add_f32 v2, v2, v9")
    co = assemble(tmp_path, body, [BUF])
    with pytest.warns(UserWarning, match="v9 before anything wrote it"):
        emulate(co, "k", grid=1, block=64, args=[_buf()], strict=True)
    with pytest.raises(StrictViolation, match="uninitialized read on v9"):
        emulate(co, "k", grid=1, block=64, args=[_buf()], strict="all")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_mfma_passes_match_llvm_mca(tmp_path, target):
    """The profile's MFMA pass counts are the resource cycles LLVM's scheduling model for the target gives (every
    MFMA of the target's spec is in the table). gfx950's f8f6f4 MFMAs: llvm-mca's MC-level count is the one
    without an FP8 operand; the FP8 one is checked on LLVM's own s_nop (tests/emu/test_strict_gfx950.py)."""
    import yaml

    from jitgemm import isa

    mca = require_tool("llvm-mca")
    spec = isa.load_spec(target)
    passes = yaml.safe_load(open(f"specs/targets/{target}.yaml"))["mfma"]["passes"]
    mfmas = {i.name for i in spec.instructions if i.name.startswith(("V_MFMA_", "V_SMFMAC_"))} - {"V_MFMA_LD_SCALE_B32"}
    assert set(passes) == mfmas
    lines = []
    for name in passes:
        inst = spec.instruction(name)
        ops = []
        for o in sorted((o for o in inst.encodings[0].operands if not o.implicit), key=lambda o: o.order):
            n = max(1, (o.size or 32) // 32)
            base = {"VDST": 0, "SRC2": 0, "SRC0": 40, "SRC1": 60}.get(o.field_name, 80)
            ops.append(f"v[{base}:{base + n - 1}]" if n > 1 else f"v{base}")
        lines.append(f"{name.lower()} {', '.join(ops)}")
    src = tmp_path / "m.s"
    src.write_text("\n".join(lines) + "\n")
    out = subprocess.run([mca, "-mtriple=amdgcn", f"-mcpu={target}", "-instruction-info", str(src)],
                         capture_output=True, text=True, check=True).stdout
    got = {m[2].split()[0].upper(): int(float(m[1])) for m in re.finditer(r"^\s+1\s+\d+\s+([\d.]+)\s+.*?U\s+(.+)$",
                                                                        out, re.M)}
    assert got == {k: int(v) for k, v in passes.items()}


MFMA_SOURCE = r"""
typedef float float4v __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));
typedef short short4v __attribute__((ext_vector_type(4)));
__kernel void f32(__global const float *A, __global const float *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();
    float4v d = __builtin_amdgcn_mfma_f32_16x16x4f32(A[x], B[x], (float4v){0, 0, 0, 0}, 0, 0, 0);
    for (int i = 0; i < 4; ++i) D[x * 4 + i] = d[i];
}
__kernel void sel(__global const float *A, __global const float *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();
    float a = A[x], b = B[x];
    D[x] = a > b ? a * 3.0f : b + 1.0f;    /* LLVM: v_cmp vcc; s_nop 1; v_cndmask (VALU SGPR write -> read) */
}
__kernel void tr(__global const float *A, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();
    float e = __builtin_amdgcn_exp2f(A[x]);   /* LLVM: v_exp_f32; s_nop 0; v_fma (trans forwarding) */
    D[x] = e * A[x] + 1.0f;
}
__kernel void rl(__global const int *A, __global const int *B, __global int *D) {
    uint x = __builtin_amdgcn_workitem_id_x();
    int lane = __builtin_amdgcn_readfirstlane(A[x]);   /* LLVM: s_nop 2 before the v_readlane lane select */
    D[x] = __builtin_amdgcn_readlane(B[x], lane);
}
__kernel void bf16(__global const short4v *A, __global const short4v *B, __global float *D) {
    uint x = __builtin_amdgcn_workitem_id_x();
    float16v d = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(A[x], B[x], (float16v)(0.0f), 0, 0, 0);
    for (int i = 0; i < 16; ++i) D[x * 16 + i] = d[i] * 2.0f;
}
"""






def _llvm_args(kernel: str):
    """Inputs (random), poisoned outputs and the numpy expectation (None: only "every output written")."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    if kernel == "sel":
        return [a, b, np.full(64, np.nan, np.float32)], np.where(a > b, a * 3.0, b + 1.0)
    if kernel == "tr":
        return [a, np.full(64, np.nan, np.float32)], np.exp2(a.astype(np.float64)) * a + 1.0
    if kernel == "f32":
        return [a, b, np.full(256, np.nan, np.float32)], None
    if kernel == "rl":
        lanes, vals = rng.integers(0, 64, 64).astype(np.int32), rng.integers(-1000, 1000, 64).astype(np.int32)
        return [lanes, vals, np.full(64, -7, np.int32)], np.full(64, vals[lanes[0]])
    bits = rng.standard_normal((2, 256)).astype(np.float32).view(np.uint32) >> 16
    return [bits[0].astype(np.int16), bits[1].astype(np.int16), np.full(1024, np.nan, np.float32)], None


@pytest.mark.parametrize("kernel, rule", [
    # v_cmp writes VCC, v_cndmask reads it as its lane mask: LLVM puts s_nop 1 (it asks 2 of every SGPR use on
    # gfx940); the CDNA3 4.5 table asks 2 of a read as a constant only, 0 as carry-in / mask (aiter's hand-written
    # I8gemm relies on it), so without the nop strict mode passes and the result stays right
    ("sel", None),
    ("rl", "(valu|readlane) -> (lanesel|valu) read needs"),   # lane select after readfirstlane: s_nop 2
    ("tr", "trans -> valu_nontrans read needs 1"),  # v_exp_f32 result into a v_fma: s_nop 0
    ("f32", "mfma -> memory read needs 10"),        # 8-pass SMFMA result stored: s_nop 9
    ("bf16", "mfma -> valu read needs 11"),         # 8-pass XDL result into a VALU: s_nop 10
])
def test_llvm_nops_are_exactly_the_table(tmp_path, kernel, rule):
    """Kernels clang compiled pass strict mode with the s_nop LLVM's GCNHazardRecognizer put in, and removing
    any of those s_nop is flagged by the rule the profile's table cites for it."""
    co = clang_object(tmp_path, MFMA_SOURCE)
    args, expect = _llvm_args(kernel)
    emulate(co, kernel, grid=1, block=64, args=args, strict=True)
    out = args[-1]
    assert np.isfinite(out).all() and not (out == -7).all()
    if expect is not None:
        np.testing.assert_allclose(out, expect, rtol=1e-5)
    removed = [m for what, m in mutants(co, kernel) if what.startswith("remove") and "s_nop" in what]
    assert removed, f"LLVM inserted no s_nop in {kernel}"
    for m in removed:
        if rule is None:
            args, expect = _llvm_args(kernel)
            emulate(m, kernel, grid=1, block=64, args=args, strict=True)
            np.testing.assert_allclose(args[-1], expect, rtol=1e-5)
            continue
        with pytest.raises(StrictViolation, match=rule):
            emulate(m, kernel, grid=1, block=64, args=_llvm_args(kernel)[0], strict=True)


def _mutation_run(co: bytes, kernel: str, make_args, run_kwargs: dict, seeds=(1, 2, 3)):
    """Counts (mutants; flagged; of those, shown wrong by a randomized schedule; unflagged and harmless under
    every seed) and the mutants that gave a wrong result unflagged."""
    ref_args = make_args()
    emulate(co, kernel, args=ref_args, strict=True, **run_kwargs)
    for seed in seeds:   # the kernel itself gives the same result under every schedule
        again = make_args()
        emulate(co, kernel, args=again, schedule="random", seed=seed, **run_kwargs)
        for x, y in zip(ref_args, again, strict=True):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
    counts = {"mutants": 0, "flagged": 0, "flagged_shown_wrong": 0, "harmless": 0}
    missed = []

    def wrong_under_some_seed(m) -> bool:
        for seed in seeds:
            got = make_args()
            try:
                emulate(m, kernel, args=got, schedule="random", seed=seed, **run_kwargs)
            except EmulatorError:   # a fault, a barrier deadlock: wrong too
                return True
            if any(isinstance(x, np.ndarray) and not np.array_equal(x, y, equal_nan=True)
                   for x, y in zip(ref_args, got, strict=True)):
                return True
        return False

    for what, m in mutants(co, kernel):
        counts["mutants"] += 1
        try:
            emulate(m, kernel, args=make_args(), strict=True, **run_kwargs)
        except StrictViolation:
            counts["flagged"] += 1
            counts["flagged_shown_wrong"] += wrong_under_some_seed(m)
            continue
        if wrong_under_some_seed(m):
            missed.append(what)
        else:
            counts["harmless"] += 1
    return counts, missed


def test_mutants_of_a_clang_lds_barrier_kernel(tmp_path):
    from tests.fixtures.clang_kernels import SOURCE

    co = clang_object(tmp_path, SOURCE)
    n = 300
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)

    def make_args():
        return [x.copy(), np.zeros(1, np.float32), n]

    counts, missed = _mutation_run(co, "reduce_sum", make_args, {"grid": -(-n // 256), "block": 256})
    print("clang reduce_sum mutants:", counts)
    assert not missed, f"mutants with a wrong result that strict mode did not flag: {missed}"
    assert counts["flagged"] >= 10 and counts["flagged_shown_wrong"] >= 3   # the schedules have teeth


def test_mutants_of_a_triton_bf16_gemm():
    from tests.fixtures.triton_kernels import compile_triton, gemm_kernel

    sig = (("a_ptr", "*bf16"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"), *((n, "i32") for n in
           ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    consts = (("BM", 32), ("BN", 32), ("BK", 16), ("IEEE", False), ("INT", False))
    hsaco, shared, warps, _ = compile_triton(gemm_kernel, sig, consts)
    import ml_dtypes
    from jitgemm.codegen.codeobj.reader import read

    kernel = read(hsaco).kernels[0]
    extra = len([a for a in kernel.args if not str(a.get(".value_kind")).startswith("hidden_")]) - 12
    M = N = 32
    K = 48
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)

    def make_args():
        return [a, b, np.full((M, N), np.nan, np.float32), M, N, K, K, 1, N, 1, N, 1] + [None] * extra

    counts, missed = _mutation_run(hsaco, kernel.name, make_args,
                                   {"grid": 1, "block": 64 * warps, "lds_bytes": shared}, seeds=(1, 2))
    print("Triton bf16 GEMM mutants:", counts)
    assert not missed, f"mutants with a wrong result that strict mode did not flag: {missed}"
    assert counts["flagged"] >= 3


def test_cli_strict_exit_status(tmp_path, capsys):
    from jitgemm.cli import main

    co = assemble(tmp_path, LOAD_ADD_STORE.replace("  s_waitcnt vmcnt(0)\n", ""), [BUF])
    (tmp_path / "bad.co").write_bytes(co)
    args = ["emulate", str(tmp_path / "bad.co"), "--arg", "f32:192:rand"]
    assert main(args) == 0
    assert main(args + ["--strict"]) == 1
    err = capsys.readouterr().err
    assert "missing s_waitcnt" in err and "Traceback" not in err
    assert main(args + ["--schedule", "random", "--seed", "3"]) == 0


@pytest.mark.parametrize("generator", ["asm", "llvm"])
def test_mutants_of_our_generators(generator):
    """Both generators' kernels: every mutant that a randomized schedule shows wrong is flagged."""
    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm
    from jitgemm.api import prepare
    from jitgemm.contract import Contract
    from jitgemm.packing import ordered_args
    from jitgemm.reference import operands

    problem = GemmProblem.make(40, 36, 48, "bf16", d="fp32", layout="NT")
    k = jitgemm.compile(problem, generator=generator, use_disk_cache=False)
    contract = Contract.load(k.contract)
    a, b, c, bias = operands(problem, 0)

    def make_args():
        call = prepare(a, b, c, out_dtype=problem.d.numpy, bias=bias)
        call.d[...] = np.nan
        return ordered_args(contract, call.values)

    grid = contract.grid(problem.m, problem.n, problem.k, problem.batch)
    counts, missed = _mutation_run(k.code_object, k.name, make_args,
                                   {"grid": grid, "block": contract.workgroup, "lds_bytes": contract.lds_bytes},
                                   seeds=(1, 2))
    print(f"{generator} generator mutants:", counts)
    assert not missed, f"mutants with a wrong result that strict mode did not flag: {missed}"
    assert counts["flagged"] >= 3


def test_qualify_is_strict_by_default(tmp_path, monkeypatch, capsys):
    """A prebuilt kernel with a removed wait state gives numpy's answer in plain emulation; `jitgemm qualify`
    quarantines it (strict is the default) and passes it only with --no-strict."""
    import yaml
    from jitgemm.codegen.direct_generator import compile_gemm
    from jitgemm.codegen.gemm_ir import GemmProblem

    from jitgemm.cli import main

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    k = compile_gemm(GemmProblem.make(64, 64, 64, "fp16", layout="NN"), name="nop_less", embed_contract=False)
    nop = next(m for what, m in mutants(k.code_object, "nop_less") if "s_nop" in what)
    folder = tmp_path / "prebuilt"
    folder.mkdir()
    (folder / "k.co").write_bytes(nop)
    (folder / "k.yaml").write_text(yaml.safe_dump(k.contract))
    assert main(["qualify", str(folder), "--cases", "1", "--no-strict"]) == 0
    assert "ok          k.co:nop_less: 1 random legal problems match numpy (not strict" in capsys.readouterr().out
    assert main(["qualify", str(folder), "--cases", "1"]) == 1
    out = capsys.readouterr().out
    assert "QUARANTINED k.co:nop_less (strict=on)" in out and "hazard" in out and "first:  PC 0x" in out


LDS_IN_ORDER = """
  v_lshlrev_b32 v1, 2, v0
  ds_write_b32 v1, v0
  s_waitcnt lgkmcnt(0)
  ds_read_b32 v2, v1
  ds_read_b32 v3, v1
  s_waitcnt lgkmcnt(1)
  v_add_u32 v4, v2, 1
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_add_u32 v4, v4, v3
  global_store_dword v1, v4, s[8:9]
"""


def test_lds_results_return_in_order(tmp_path):
    """lgkmcnt(1) after two LDS reads completes the first (LDS returns in order); the second is still pending."""
    out = np.zeros(64, np.uint32)
    co = assemble(tmp_path, LDS_IN_ORDER, [BUF], lds=256)
    emulate(co, "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, 2 * np.arange(64) + 1)
    co = assemble(tmp_path, LDS_IN_ORDER.replace("v_add_u32 v4, v2, 1", "v_add_u32 v4, v3, 1"), [BUF], lds=256)
    with pytest.raises(StrictViolation, match="missing s_waitcnt on v3"):
        emulate(co, "k", grid=1, block=64, args=[np.zeros(64, np.uint32)], strict=True)


WIDE_STORE = """
  s_load_dwordx2 s[8:9], s[0:1], 0x0
  v_lshlrev_b32 v1, 4, v0
  v_mov_b32 v2, v0
  v_add_u32 v3, 1, v0
  v_add_u32 v4, 2, v0
  v_add_u32 v5, 3, v0
  s_waitcnt lgkmcnt(0)
  global_store_dwordx4 v1, v[2:5], s[8:9]
  s_nop 1
  v_mov_b32 v3, 0
"""


def test_wide_store_data_hazard(tmp_path):
    """A VMEM store of more than 64 bits still reads its data VGPRs after issue: a VALU overwriting them needs
    2 wait states on gfx940+ (LLVM checkVALUHazardsHelper); s_nop 1 gives them."""
    out = np.zeros((64, 4), np.uint32)
    emulate(assemble(tmp_path, WIDE_STORE, [BUF]), "k", grid=1, block=64, args=[out], strict=True)
    np.testing.assert_array_equal(out, np.arange(64)[:, None] + np.arange(4))
    co = assemble(tmp_path, WIDE_STORE.replace("  s_nop 1\n", ""), [BUF])
    with pytest.raises(StrictViolation, match="more than 64 bits of data") as err:
        emulate(co, "k", grid=1, block=64, args=[np.zeros((64, 4), np.uint32)], strict=True)
    assert "global_store_dwordx4" in str(err.value) and "v_mov_b32" in str(err.value) and "on v3" in str(err.value)


def test_setreg_getreg_hazard(tmp_path):
    """s_setreg then s_getreg of the same hardware register needs 2 wait states (LLVM checkGetRegHazards);
    a different register does not."""
    body = """
  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 0xc
  s_nop 1
  s_getreg_b32 s10, hwreg(HW_REG_MODE, 0, 4)
  s_getreg_b32 s11, hwreg(HW_REG_TRAPSTS, 0, 4)
"""
    emulate(assemble(tmp_path, body, [BUF]), "k", grid=1, block=64, args=[np.zeros(4, np.uint32)], strict=True)
    other = body.replace("  s_nop 1\n  s_getreg_b32 s10, hwreg(HW_REG_MODE, 0, 4)\n", "")
    emulate(assemble(tmp_path, other, [BUF]), "k", grid=1, block=64, args=[np.zeros(4, np.uint32)], strict=True)
    with pytest.raises(StrictViolation, match="setreg -> getreg read needs 2 wait states, 0 given") as err:
        emulate(assemble(tmp_path, body.replace("  s_nop 1\n", ""), [BUF]), "k", grid=1, block=64,
                args=[np.zeros(4, np.uint32)], strict=True)
    assert "s_setreg_imm32_b32" in str(err.value) and "s_getreg_b32 s10" in str(err.value)
