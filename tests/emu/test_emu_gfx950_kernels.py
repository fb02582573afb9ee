"""Triton 3.9 kernels compiled for gfx950 (GPUTarget("hip", "gfx950", 64)) on the CPU, run in the emulator, equal
numpy in float64 over ml_dtypes' formats.

Nobody here wrote these kernels' instruction sequences: Triton chose the MFMAs (v_mfma_f32_32x32x16_bf16,
16x16x32_f16, the f8f6f4 MFMAs, v_mfma_scale_f32_*_f8f6f4), the transposing LDS reads (ds_read_b64_tr_b8/b16)
and v_bitop3 address arithmetic, so a wrong lane layout, K placement, scale rule, transpose or truth-table
order gives errors of the order of the values. The scaled kernels use random E8M0 scales (2^-7..2^6) so that
a scale applied to the wrong K block or row is visible, plus the extremes: E8M0 0 (2^-127), 254 (2^127) and
0xFF (NaN). Sizes are not tile multiples (masked loads and stores).

Tolerances, |C - C_ref| <= tol * (|A| @ |B|) elementwise (+ output rounding):
- bf16 / fp16 / fp8 / fp4 inputs, f32 accumulation: 1e-5 (products exact in f32; f32 sums over K <= 256);
- bf16 output: plus 2^-8 |C_ref| (one rounding);
- scaled: the reference applies scales in float64; where it overflows f32 (2^127 scales) C must be +-inf
  with the reference's sign, and NaN exactly where the reference is NaN.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.fixtures.asm_support import objdump_instruction_lines
from tests.fixtures.oracles import require_module

triton = require_module("triton")
tl = require_module("triton.language")

from tests.fixtures.triton_kernels import assert_close, compile_triton, gemm_kernel, launch  # noqa: E402


@triton.jit
def mx_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              AF: tl.constexpr, BF: tl.constexpr, APK: tl.constexpr, BPK: tl.constexpr):
    pid = tl.program_id(0)
    npn = tl.cdiv(N, BN)
    pm = pid // npn
    pn = pid % npn
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        ka = k * (BK // APK) + tl.arange(0, BK // APK)
        kb = k * (BK // BPK) + tl.arange(0, BK // BPK)
        ks = k * (BK // 32) + tl.arange(0, BK // 32)
        am = (rm[:, None] < M) & (ka[None, :] < K // APK)
        bm = (kb[:, None] < K // BPK) & (rn[None, :] < N)
        a = tl.load(a_ptr + rm[:, None] * (K // APK) + ka[None, :], mask=am, other=0.0 if APK == 1 else 0)
        b = tl.load(b_ptr + kb[:, None] * N + rn[None, :], mask=bm, other=0.0 if BPK == 1 else 0)
        sa = tl.load(as_ptr + rm[:, None] * (K // 32) + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K // 32),
                     other=127)
        sb = tl.load(bs_ptr + rn[:, None] * (K // 32) + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K // 32),
                     other=127)
        acc = tl.dot_scaled(a, sa, AF, b, sb, BF, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def mx_bf16_kernel(a_ptr, as_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    npn = tl.cdiv(N, BN)
    rm = (pid // npn) * BM + tl.arange(0, BM)
    rn = (pid % npn) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        ka = k * (BK // 2) + tl.arange(0, BK // 2)
        kb = k * BK + tl.arange(0, BK)
        ks = k * (BK // 32) + tl.arange(0, BK // 32)
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K // 2),
                    other=0)
        b = tl.load(b_ptr + kb[:, None] * N + rn[None, :], mask=(kb[:, None] < K) & (rn[None, :] < N), other=0.0)
        sa = tl.load(as_ptr + rm[:, None] * (K // 32) + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K // 32),
                     other=127)
        acc = tl.dot_scaled(a, sa, "e2m1", b, None, "bf16", acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp8e4nv": ml_dtypes.float8_e4m3fn,
          "fp8e5": ml_dtypes.float8_e5m2}


def _gemm(a_t, c_t, block, shape, nonkdim, seed=0):
    M, N, K = shape
    sig = (("a_ptr", f"*{a_t}"), ("b_ptr", f"*{a_t}"), ("c_ptr", f"*{c_t}"), *((n, "i32") for n in
           ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")),
           *((n, "constexpr") for n in ("BM", "BN", "BK", "IEEE", "INT")))
    consts = (("BM", block[0]), ("BN", block[1]), ("BK", block[2]), ("IEEE", False), ("INT", False))
    compiled = compile_triton(gemm_kernel, sig, consts, arch="gfx950",
                              options=(("matrix_instr_nonkdim", nonkdim),) if nonkdim else ())
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(DTYPES[a_t])
    b = rng.standard_normal((K, N)).astype(DTYPES[a_t])
    c = np.full((M, N), 7, DTYPES[c_t])
    launch(compiled, -(-M // block[0]) * -(-N // block[1]), [a, b, c, M, N, K, K, 1, N, 1, N, 1])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return c.astype(np.float64), a64 @ b64, np.abs(a64) @ np.abs(b64), compiled


@pytest.mark.parametrize("a_t,c_t,block,shape,nonkdim,mfma,out_rounding", [
    ("bf16", "fp32", (64, 64, 64), (100, 90, 70), 0, "v_mfma_f32_32x32x16_bf16", 0.0),
    ("bf16", "bf16", (128, 128, 64), (130, 140, 80), 0, "v_mfma_f32_32x32x16_bf16", 2.0 ** -8),
    ("fp16", "fp32", (64, 64, 64), (70, 100, 50), 16, "v_mfma_f32_16x16x32_f16", 0.0),
    ("fp8e4nv", "fp32", (64, 64, 128), (100, 90, 170), 0, "v_mfma_f32_32x32x64_f8f6f4", 0.0),
    ("fp8e5", "fp32", (64, 64, 128), (70, 80, 150), 16, "v_mfma_f32_16x16x128_f8f6f4", 0.0),
])
def test_triton_gfx950_gemm(a_t, c_t, block, shape, nonkdim, mfma, out_rounding):
    c, ref, scale, compiled = _gemm(a_t, c_t, block, shape, nonkdim)
    assert mfma in compiled[3]
    assert_close(c, ref, scale, 1e-5, out_rounding)


_MX = {"e2m1": (ml_dtypes.float4_e2m1fn, 2, "*u8"), "e4m3": (ml_dtypes.float8_e4m3fn, 1, "*fp8e4nv"),
       "e5m2": (ml_dtypes.float8_e5m2, 1, "*fp8e5")}


def _e8m0(s: np.ndarray) -> np.ndarray:
    return np.where(s == 255, np.nan, np.ldexp(1.0, s.astype(np.int64) - 127))


def run_mx(af, bf, shape, scales="random", nonkdim=0, seed=0, block=(64, 64, 128), warps=0):
    M, N, K = shape
    (adt, apk, apt), (bdt, bpk, bpt) = _MX[af], _MX[bf]
    sig = (("a_ptr", apt), ("as_ptr", "*u8"), ("b_ptr", bpt), ("bs_ptr", "*u8"), ("c_ptr", "*fp32"), ("M", "i32"),
           ("N", "i32"), ("K", "i32"), *((n, "constexpr") for n in ("BM", "BN", "BK", "AF", "BF", "APK", "BPK")))
    consts = (("BM", block[0]), ("BN", block[1]), ("BK", block[2]), ("AF", af), ("BF", bf), ("APK", apk),
              ("BPK", bpk))
    options = ((("matrix_instr_nonkdim", nonkdim),) if nonkdim else ()) + ((("num_warps", warps),) if warps else ())
    compiled = compile_triton(mx_kernel, sig, consts, arch="gfx950", options=options)
    rng = np.random.default_rng(seed)
    ac = rng.standard_normal((M, K)).astype(adt).view(np.uint8) & (0xF if apk == 2 else 0xFF)
    bc = rng.standard_normal((K, N)).astype(bdt).view(np.uint8) & (0xF if bpk == 2 else 0xFF)
    # Triton's e2m1 operands: two values per byte along K, the lower K index in the low nibble
    a = (ac[:, 0::2] | (ac[:, 1::2] << 4)).astype(np.uint8) if apk == 2 else ac.view(adt)
    b = (bc[0::2, :] | (bc[1::2, :] << 4)).astype(np.uint8) if bpk == 2 else bc.view(bdt)
    sa = rng.integers(120, 134, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (N, K // 32)).astype(np.uint8)
    if scales == "extremes":
        sa[0, 0], sa[3, 1], sb[2, 0], sb[5, 2] = 0, 255, 254, 0     # 2^-127, NaN, 2^127, 2^-127
    c = np.full((M, N), 7, np.float32)
    launch(compiled, -(-M // block[0]) * -(-N // block[1]), [a, sa, b, sb, c, M, N, K])
    av = ac.view(adt).astype(np.float64) * np.repeat(_e8m0(sa), 32, axis=1)
    bv = bc.view(bdt).astype(np.float64) * np.repeat(_e8m0(sb), 32, axis=1).T
    with np.errstate(invalid="ignore", over="ignore"):
        return c.astype(np.float64), av @ bv, np.abs(av) @ np.abs(bv), compiled


@pytest.mark.parametrize("af,bf,shape,nonkdim", [
    ("e2m1", "e2m1", (100, 90, 256), 0),
    ("e4m3", "e4m3", (70, 100, 128), 0),
    ("e2m1", "e4m3", (100, 90, 256), 0),
    ("e5m2", "e2m1", (50, 60, 128), 0),
    ("e2m1", "e2m1", (40, 70, 256), 16),
])
def test_triton_gfx950_dot_scaled(af, bf, shape, nonkdim):
    c, ref, scale, compiled = run_mx(af, bf, shape, nonkdim=nonkdim)
    assert "v_mfma_scale_f32_" in compiled[3]
    assert_close(c, ref, scale, 1e-5)


@pytest.mark.parametrize("af,bf", [("e2m1", "e2m1"), ("e4m3", "e5m2")])
def test_triton_gfx950_dot_scaled_extreme_and_nan_scales(af, bf):
    c, ref, scale, _ = run_mx(af, bf, (50, 70, 128), scales="extremes")
    nan = np.isnan(ref)
    assert nan.any() and np.array_equal(np.isnan(c), nan), "NaN exactly where a scale byte 0xFF reaches"
    big = ~nan & (np.abs(ref) > float(np.finfo(np.float32).max))
    assert big.any() and np.array_equal(c[big], np.sign(ref[big]) * np.inf), "2^127 scales overflow f32 to inf"
    ok = ~nan & ~big
    assert_close(np.where(ok, c, 0), np.where(ok, ref, 0), np.where(ok, scale, 0), 1e-5)


def test_cli_disasm_of_triton_gfx950_kernels_equals_llvm_objdump(tmp_path, capsys):
    """`jitgemm disasm` takes the target from the code object (gfx950) and lists Triton's gfx950 kernels as
    llvm-objdump-22 does (scaled MFMAs with op_sel/cbsz/blgp, 4-register fp4 operands, transposing LDS reads,
    v_bitop3, bf16 packs)."""
    import subprocess

    from jitgemm.cli import main
    from tests.fixtures.oracles import require_tool

    objdump = require_tool("llvm-objdump")
    kernels = [run_mx("e2m1", "e2m1", (40, 50, 128))[3], run_mx("e4m3", "e5m2", (40, 50, 128))[3],
               _gemm("bf16", "bf16", (128, 128, 64), (40, 50, 64), 0)[3], _gemm("fp8e5", "fp32", (64, 64, 128),
                                                                              (40, 50, 128), 16)[3]]
    total = 0
    for i, compiled in enumerate(kernels):
        path = tmp_path / f"k{i}.hsaco"
        path.write_bytes(compiled[0])
        listing = subprocess.run([objdump, "-d", "--mcpu=gfx950", str(path)], capture_output=True, text=True,
                                 check=True).stdout
        theirs = objdump_instruction_lines(listing.splitlines())
        assert main(["disasm", str(path)]) == 0
        captured = capsys.readouterr()
        assert ".long" not in captured.out and "warning" not in captured.err
        ours = objdump_instruction_lines(captured.out.splitlines())
        assert ours == theirs
        total += len(ours)
    assert total > 2000


def test_triton_gfx950_mxfp4_times_bf16_upcasts_with_v_cvt_scalef32():
    """Triton upcasts the scaled fp4 operand to bf16 with v_cvt_scalef32_pk_bf16_fp4 (byte chosen by op_sel, times
    the f32 scale), then a bf16 MFMA: fp4 x 2^k is exact in bf16, so the f32-accumulation bound applies."""
    M, N, K = 70, 90, 256
    sig = (("a_ptr", "*u8"), ("as_ptr", "*u8"), ("b_ptr", "*bf16"), ("c_ptr", "*fp32"), ("M", "i32"), ("N", "i32"),
           ("K", "i32"), ("BM", "constexpr"), ("BN", "constexpr"), ("BK", "constexpr"))
    compiled = compile_triton(mx_bf16_kernel, sig, (("BM", 64), ("BN", 64), ("BK", 128)), arch="gfx950")
    assert "v_cvt_scalef32_pk_bf16_fp4" in compiled[3]
    rng = np.random.default_rng(3)
    ac = rng.standard_normal((M, K)).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    a = (ac[:, 0::2] | (ac[:, 1::2] << 4)).astype(np.uint8)
    sa = rng.integers(120, 134, (M, K // 32)).astype(np.uint8)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.full((M, N), 7, np.float32)
    launch(compiled, -(-M // 64) * -(-N // 64), [a, sa, b, c, M, N, K])
    av = ac.view(ml_dtypes.float4_e2m1fn).astype(np.float64) * np.repeat(_e8m0(sa), 32, axis=1)
    bv = b.astype(np.float64)
    assert_close(c.astype(np.float64), av @ bv, np.abs(av) @ np.abs(bv), 1e-5)


def test_triton_gfx950_gemm_with_launch_specializations_loads_to_lds():
    """With the specializations Triton's launcher applies (unit strides as constants, 16-divisible pointers and
    sizes), Triton's gfx950 pipeline copies tiles straight to LDS with global_load_lds_dwordx4 (16 bytes per
    lane at M0 + offset + 16 * lane); the product must still equal numpy."""

    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "sam": "i32",
           "sak": "constexpr", "sbk": "i32", "sbn": "constexpr", "scm": "i32", "scn": "constexpr",
           **{n: "constexpr" for n in ("BM", "BN", "BK", "IEEE", "INT")}}
    consts = {"BM": 64, "BN": 64, "BK": 64, "IEEE": False, "INT": False, "sak": 1, "sbn": 1, "scn": 1}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 7, 9)}
    compiled = compile_triton(gemm_kernel, sig, consts, arch="gfx950", options={"num_stages": 2}, attrs=attrs)
    assert "global_load_lds_dwordx4" in compiled[3]
    M, N, K = 96, 80, 128
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.full((M, N), 7, np.float32)
    launch(compiled, -(-M // 64) * -(-N // 64), [a, b, c, M, N, K, K, N, N])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_close(c.astype(np.float64), a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)


def test_triton_gfx950_spilling_kernel_runs_with_scratch():
    """A 256x256 mxfp8 tile does not fit the registers: Triton spills to scratch (scratch_store/load_dword[x2,x4]
    with `off, off offset:N`, hundreds of them); the emulator gives each work-item its private segment."""
    from jitgemm.codegen.codeobj.reader import read

    c, ref, scale, compiled = run_mx("e4m3", "e4m3", (260, 200, 256), block=(256, 256, 128), warps=4)
    assert read(compiled[0]).kernels[0].descriptor.private_segment_fixed_size > 0
    assert compiled[3].count("scratch_load") > 100 and compiled[3].count("scratch_store") > 100
    assert_close(c, ref, scale, 1e-5)


@pytest.mark.parametrize("a_dtype,out_dtype,rtol", [(ml_dtypes.bfloat16, np.float32, 1e-5),
                                                    (np.float16, np.float32, 1e-5)])
def test_jitgemm_generated_gfx950_gemm_in_the_emulator(a_dtype, out_dtype, rtol):
    """jitgemm's own generators target gfx950 through its spec and profile (the doubled-K MFMAs, 16-byte LDS
    fragment reads): matmul(arch="gfx950") on the emulator equals numpy."""
    import jitgemm

    rng = np.random.default_rng(11)
    a = rng.standard_normal((70, 50)).astype(a_dtype)
    b = rng.standard_normal((50, 60)).astype(a_dtype)
    d = jitgemm.matmul(a, b, arch="gfx950", backend="emu", out_dtype=out_dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_close(np.asarray(d, np.float64), a64 @ b64, np.abs(a64) @ np.abs(b64), rtol)
    from jitgemm.codegen.codeobj.reader import read

    from jitgemm.api import prepare
    from jitgemm.kernel import compile as compile_gemm

    kernel = compile_gemm(prepare(a, b, out_dtype=out_dtype).problem, arch="gfx950")
    assert read(kernel.code_object).processor == "gfx950"
    assert kernel.config.mfma in ("V_MFMA_F32_32X32X16_BF16", "V_MFMA_F32_16X16X32_BF16", "V_MFMA_F32_32X32X16_F16",
                                  "V_MFMA_F32_16X16X32_F16"), kernel.config.mfma
