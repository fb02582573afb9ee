"""Shared helpers for the assembler/disassembler tests: which specs to run on, and the outside
authorities (llvm-mc, llvm-objdump, clang, Triton) used to check them. No tests here."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from tests.oracles import REPO, require_excerpt, require_module, require_tool

SUBSET = REPO / "specs" / "amdgpu_isa_cdna3_subset.xml"

# Every spec the assembler is proven on: AMD's verbatim excerpt (required under JITGEMM_REQUIRE_ORACLES=1)
# and the project's bundled subset when it is present.
SPEC_NAMES = ["excerpt", "subset"]


@functools.cache
def _load(path: str):
    from jitgemm import isa
    return isa.load_spec(path)


def spec_named(name: str):
    if name == "excerpt":
        return _load(str(require_excerpt()))
    assert SUBSET.is_file(), f"the bundled subset {SUBSET} is part of the repository and must exist"
    return _load(str(SUBSET))


def forms_named(name: str):
    from jitgemm.isa.spec.forms import forms_of

    return forms_of(spec_named(name))


# --- llvm-objdump -------------------------------------------------------------------------------------

_OBJDUMP_LINE = re.compile(r"^\s+(.*?)\s*//\s*([0-9A-Fa-f]+):\s*((?:[0-9A-Fa-f]{8}\s?)+)")


def objdump(path: Path) -> list[tuple[int, str, int]]:
    """(offset, text, size in bytes) per instruction, as llvm-objdump -d lists it."""
    tool = require_tool("llvm-objdump")
    out = subprocess.run([tool, "-d", "--mcpu=gfx942", str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = []
    for line in out.splitlines():
        m = _OBJDUMP_LINE.match(line)
        if m:
            rows.append((int(m.group(2), 16), " ".join(m.group(1).split()), 4 * len(m.group(3).split())))
    return rows


def text_section(path: Path) -> tuple[bytes, int]:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        sec = elf.get_section_by_name(".text")
        return sec.data(), sec["sh_addr"]


# --- code objects from other compilers ----------------------------------------------------------------

CLANG_KERNELS = r"""
typedef float v4f __attribute__((ext_vector_type(4)));
typedef float v16f __attribute__((ext_vector_type(16)));
typedef short v4s __attribute__((ext_vector_type(4)));
typedef _Float16 v4h __attribute__((ext_vector_type(4)));
#define TID __builtin_amdgcn_workitem_id_x()
#define BID __builtin_amdgcn_workgroup_id_x()

__attribute__((amdgpu_kernel)) void gemm_naive(const float *A, const float *B, float *C, int M, int N, int K) {
  int row = BID, col = TID;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
__attribute__((amdgpu_kernel)) void mfma_bf16(const v4s *A, const v4s *B, v16f *C, int K) {
  v16f acc = {0};
  for (int k = 0; k < K; ++k)
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(A[k * 64 + TID], B[k * 64 + TID], acc, 0, 0, 0);
  C[TID] = acc;
}
__attribute__((amdgpu_kernel)) void mfma_f16(const v4h *A, const v4h *B, v4f *C, int K) {
  v4f acc = {0};
  for (int k = 0; k < K; ++k)
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(A[k * 64 + TID], B[k * 64 + TID], acc, 1, 2, 3);
  C[TID] = acc;
}
__attribute__((amdgpu_kernel)) void mfma_fp8(const long *A, const long *B, v4f *C, int K) {
  v4f acc = {0};
  for (int k = 0; k < K; ++k)
    acc = __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(A[k * 64 + TID], B[k * 64 + TID], acc, 0, 0, 0);
  C[TID] = acc;
}
__attribute__((amdgpu_kernel)) void elementwise(const float *x, float *y, _Float16 *h, int n, float s) {
  int i = TID + BID * 256;
  if (i < n) {
    float v = x[i];
    y[i] = v / s + __builtin_sqrtf(v);
    h[i] = (_Float16)(v * s);
  }
}
static __attribute__((address_space(3))) float buf[256] __attribute__((loader_uninitialized));
__attribute__((amdgpu_kernel)) void reduce(const float *x, float *out) {
  float v = x[TID + BID * 256];
  buf[TID] = v;
  __builtin_amdgcn_s_barrier();
  for (int s = 128; s > 0; s >>= 1) {
    if (TID < s) buf[TID] += buf[TID + s];
    __builtin_amdgcn_s_barrier();
  }
  int d = __builtin_amdgcn_mov_dpp(__builtin_bit_cast(int, v), 0x111, 0xf, 0xf, 1);
  if (TID == 0) out[BID] = buf[0] + __builtin_bit_cast(float, d);
}
__attribute__((amdgpu_kernel)) void intops(int *a, unsigned *b, long *c, int n) {
  int i = TID + BID * 64;
  a[i] = (a[i] >> 3) * 7 + (b[i] % 13);
  b[i] = b[i] / 7u + __builtin_popcount(b[i]);
  c[i] = c[i] * 3 + ((long)a[i] << 33);
}
"""


def clang_objects(tmp: Path) -> list[Path]:
    """Relocatable code objects compiled by clang for gfx942 at two optimization levels."""
    clang = require_tool("clang")
    src = tmp / "kernels.c"
    src.write_text(CLANG_KERNELS)
    out = []
    for level in ("-O1", "-O3"):
        obj = tmp / f"kernels{level}.o"
        subprocess.run([clang, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx942", level, "-c", str(src), "-o", str(obj)],
                       check=True, capture_output=True)
        out.append(obj)
    return out


def triton_objects(tmp: Path) -> list[Path]:
    """Code objects Triton compiles for gfx942: elementwise add, softmax, bf16/f16/fp8 GEMMs."""
    require_module("triton")
    from tests import test_disasm_triton_support as kernels

    return kernels.build_all(tmp)
