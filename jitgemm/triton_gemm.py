"""A Triton GEMM kernel, for the selector's Triton supplier. Triton reads a kernel's source from its file,
so the kernel lives in this module (imported only when Triton is installed)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a_ptr, b_ptr, d_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_dm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_INT: tl.constexpr):
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if ACC_INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ka[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(d_ptr + rm[:, None] * stride_dm + rn[None, :], acc.to(d_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _scale_offsets(rows, cols, ld, SHUFFLED: tl.constexpr):
    """Offsets of the E8M0 scales of (rows[:, None], cols[None, :]) in a plain [rows, ld] array, or in the
    pre-shuffled layout of `jitgemm.mx.shuffle_scales` (aiter's e8m0_shuffle: the plain index (r, c) lands at
    (r//32, c//8, c%4, r%16, (c//4)%2, (r//16)%2) of a (R/32, C/8, 4, 16, 2, 2) array, C = ld)."""
    r = rows[:, None]
    c = cols[None, :]
    if SHUFFLED:
        return (r // 32) * 32 * ld + (c // 8) * 256 + (c % 4) * 64 + (r % 16) * 4 + ((c // 4) % 2) * 2 + (r // 16) % 2
    return r * ld + c


@triton.jit
def mx_gemm_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, d_ptr, M, N, K, lda, ldb, ld_a_scale, ld_b_scale, ldd,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   A_FMT: tl.constexpr, B_FMT: tl.constexpr, A_PACK: tl.constexpr, B_PACK: tl.constexpr,
                   A_BYTES: tl.constexpr, D_BYTES: tl.constexpr, A_SCALE: tl.constexpr, B_SCALE: tl.constexpr,
                   B_PRESHUFFLE: tl.constexpr):
    """D = (A * 2^sa) @ (B * 2^sb) with tl.dot_scaled, for jitgemm's block-scaled problems (layout NT: A [M, K]
    and B [N, K] rows, K-contiguous, fp4 packed two per byte along K; leading dimensions in bytes). A_SCALE /
    B_SCALE: 0 no scales, 1 plain [rows, ceil(K/32)], 2 pre-shuffled (jitgemm.mx.shuffle_scales); B_PRESHUFFLE:
    B's bytes in the 16x16 layout of jitgemm.mx.shuffle_weight (n at (n//16, b//32, (b//16)%2, n%16, b%16) of
    an (N/16, Kb/32, 2, 16, 16) array for byte b of row n, Kb = ldb). Elements past K load as 0, their scales as
    127 (1.0), so a short last block adds nothing."""
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    a_bytes_k = tl.cdiv(K, A_PACK)
    b_bytes_k = tl.cdiv(K, B_PACK)
    blocks = tl.cdiv(K, 32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 // A_PACK + tl.arange(0, BLOCK_K // A_PACK)
        kb = k0 // B_PACK + tl.arange(0, BLOCK_K // B_PACK)
        ks = k0 // 32 + tl.arange(0, BLOCK_K // 32)
        a = tl.load(a_ptr + rm[:, None] * (lda // A_BYTES) + ka[None, :],
                    mask=(rm[:, None] < M) & (ka[None, :] < a_bytes_k), other=0.0 if A_PACK == 1 else 0)
        n = rn[None, :]
        kk = kb[:, None]
        if B_PRESHUFFLE:
            b_off = (n // 16) * 16 * ldb + (kk // 32) * 512 + ((kk // 16) % 2) * 256 + (n % 16) * 16 + kk % 16
        else:
            b_off = n * ldb + kk
        b = tl.load(b_ptr + b_off, mask=(n < N) & (kk < b_bytes_k), other=0.0 if B_PACK == 1 else 0)
        if A_SCALE:
            sa = tl.load(a_scale_ptr + _scale_offsets(rm, ks, ld_a_scale, A_SCALE == 2),
                         mask=(rm[:, None] < M) & (ks[None, :] < blocks), other=127)
        else:
            sa = None
        if B_SCALE:
            sb = tl.load(b_scale_ptr + _scale_offsets(rn, ks, ld_b_scale, B_SCALE == 2),
                         mask=(rn[:, None] < N) & (ks[None, :] < blocks), other=127)
        else:
            sb = None
        acc = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT, acc)
    tl.store(d_ptr + rm[:, None] * (ldd // D_BYTES) + rn[None, :], acc.to(d_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def scaled_gemm_kernel(a_ptr, b_ptr, d_ptr, a_scale_ptr, b_scale_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                       stride_bn, stride_dm, ld_a_scale, ld_b_scale,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_INT: tl.constexpr,
                       MODE: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr):
    """D = scaled(A @ B) for jitgemm's scale modes (codegen/gemm_ir.py), with explicit fp32 multiplies:
    MODE 1 tensor (sa * sb after the loop), 2 rowcol (sa[m * ld_a_scale] * sb[n * ld_b_scale] after the loop),
    3 block (BLOCK_K = 128: each K block's dot from zero, then acc += P * sb[n // 128, kb] * sa[m, kb]; A_COL /
    B_COL: the block scales stored column-major, [KB, M] / [KB, NB])."""
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    in_m = rm < M
    in_n = rn < N
    if ACC_INT and MODE != 3:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ka[None, :] * stride_ak,
                    mask=in_m[:, None] & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ka[:, None] < K) & in_n[None, :], other=0.0)
        if MODE == 3:
            kb = k0 // BLOCK_K
            nb = rn // BLOCK_K
            if A_COL:
                sa = tl.load(a_scale_ptr + kb * ld_a_scale + rm, mask=in_m, other=0.0)
            else:
                sa = tl.load(a_scale_ptr + rm * ld_a_scale + kb, mask=in_m, other=0.0)
            if B_COL:
                sb = tl.load(b_scale_ptr + kb * ld_b_scale + nb, mask=in_n, other=0.0)
            else:
                sb = tl.load(b_scale_ptr + nb * ld_b_scale + kb, mask=in_n, other=0.0)
            part = tl.dot(a, b)
            acc += part.to(tl.float32) * sb[None, :] * sa[:, None]
        else:
            acc += tl.dot(a, b)
    if MODE == 1:
        out = acc.to(tl.float32) * tl.load(a_scale_ptr) * tl.load(b_scale_ptr)
    elif MODE == 2:
        sa = tl.load(a_scale_ptr + rm * ld_a_scale, mask=in_m, other=0.0)
        sb = tl.load(b_scale_ptr + rn * ld_b_scale, mask=in_n, other=0.0)
        out = acc.to(tl.float32) * sa[:, None] * sb[None, :]
    else:
        out = acc
    tl.store(d_ptr + rm[:, None] * stride_dm + rn[None, :], out.to(d_ptr.dtype.element_ty),
             mask=in_m[:, None] & in_n[None, :])


@triton.jit
def grouped_gemm_kernel(a_ptr, b_ptr, d_ptr, off_ptr, N, K, stride_am, stride_bg, stride_bk, stride_bn, stride_dm,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_INT: tl.constexpr):
    """The grouped (MoE) GEMM peer of jitgemm.grouped_matmul: program z = group, its rows off[g]..off[g+1] of A and
    D, B advanced by g * stride_bg; grid y covers the largest group (idle programs return)."""
    g = tl.program_id(2)
    start = tl.load(off_ptr + g)
    rows = tl.load(off_ptr + g + 1) - start
    pid_m = tl.program_id(1)
    if pid_m * BLOCK_M >= rows:
        return
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if ACC_INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    a_base = a_ptr + start.to(tl.int64) * stride_am
    b_base = b_ptr + g.to(tl.int64) * stride_bg
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a = tl.load(a_base + rm[:, None] * stride_am + ka[None, :], mask=(rm[:, None] < rows) & (ka[None, :] < K),
                    other=0.0)
        b = tl.load(b_base + ka[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    d_base = d_ptr + start.to(tl.int64) * stride_dm
    tl.store(d_base + rm[:, None] * stride_dm + rn[None, :], acc.to(d_ptr.dtype.element_ty),
             mask=(rm[:, None] < rows) & (rn[None, :] < N))
