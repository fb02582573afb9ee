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
