"""Triton kernels compiled for gfx942 by the disassembler tests (elementwise, reduction, GEMMs in bf16,
f16 and fp8). Kernels must live at module level for triton.jit; no tests here."""

from __future__ import annotations

from pathlib import Path

try:
    import triton
    import triton.language as tl
except ImportError:  # the tests that need Triton skip (or fail under JITGEMM_REQUIRE_ORACLES=1)
    triton = None

if triton is not None:

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @triton.jit
    def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < n_cols
        x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=m)

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BN)
        pm = pid // npn
        pn = pid % npn
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            av = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
            bv = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
            acc += tl.dot(av, bv)
            a += BK * sak
            b += BK * sbk
        c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _build(fn, signature: dict, constexprs: dict, path: Path) -> Path:
    from triton.backends.compiler import GPUTarget

    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=constexprs)
    kernel = triton.compile(src, target=GPUTarget("hip", "gfx942", 64))
    path.write_bytes(kernel.asm["hsaco"])
    path.with_suffix(".s").write_text(kernel.asm["amdgcn"])  # Triton's assembly text, beside its code object
    return path


def build_all(tmp: Path) -> list[Path]:
    ints = {k: "i32" for k in "M N K sam sak sbk sbn scm scn".split()}
    mm = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", **ints, "BM": "constexpr", "BN": "constexpr",
          "BK": "constexpr"}
    return [
        _build(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                            "BLOCK": "constexpr"}, {"BLOCK": 1024}, tmp / "add.hsaco"),
        _build(softmax_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16", "stride": "i32", "n_cols": "i32",
                                "BLOCK": "constexpr"}, {"BLOCK": 1024}, tmp / "softmax.hsaco"),
        _build(matmul_kernel, mm, {"BM": 128, "BN": 128, "BK": 64}, tmp / "mm_bf16.hsaco"),
        _build(matmul_kernel, dict(mm, a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp32"), {"BM": 64, "BN": 64, "BK": 32},
               tmp / "mm_f16.hsaco"),
        _build(matmul_kernel, dict(mm, a_ptr="*fp8e4b8", b_ptr="*fp8e4b8", c_ptr="*fp32"),
               {"BM": 64, "BN": 64, "BK": 64}, tmp / "mm_fp8.hsaco"),
    ]
