"""The f8f6f4 MFMA catalog (codegen/mfma_catalog.py `f8f6f4_catalog`): one entry per instruction and format pair,
the CBSZ/BLGP codes and register counts checked against llvm-mc-22 -mcpu=gfx950 (the tuple size it demands per
code) and the emulator's formats (jitgemm/emu/mx_formats.py, proven on Triton's gfx950 mxfp4/mxfp8 dot_scaled
kernels in tests/emu/test_emu_gfx950_kernels.py), and the instructions the MX lowering emits byte-equal to llvm-mc's."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from jitgemm.codegen.dtypes import MX_ELEMENTS, dtype
from jitgemm.codegen.mfma_catalog import F8F6F4_FORMAT_CODES, f8f6f4_catalog, f8f6f4_mfmas_for

from jitgemm import isa
from tests.fixtures.oracles import require_tool

NAMES = ("V_MFMA_F32_16X16X128_F8F6F4", "V_MFMA_F32_32X32X64_F8F6F4", "V_MFMA_SCALE_F32_16X16X128_F8F6F4",
         "V_MFMA_SCALE_F32_32X32X64_F8F6F4")


def test_catalog_has_every_pair_of_every_f8f6f4_mfma():
    spec = isa.load_spec("gfx950")
    cat = f8f6f4_catalog(spec)
    assert sorted({x.name for x in cat}) == sorted(NAMES)
    assert len(cat) == len(NAMES) * len(MX_ELEMENTS) ** 2
    for x in cat:
        assert x.scaled == ("SCALE" in x.name)
        assert (x.a_regs, x.b_regs) == (x.a.bits, x.b.bits)      # 32 elements per lane: bits dwords
        assert x.m * x.n == x.acc_regs * 64 and x.m * x.k == 32 * 64
        assert (x.cbsz, x.blgp) == (F8F6F4_FORMAT_CODES[x.a.name], F8F6F4_FORMAT_CODES[x.b.name])
    assert f8f6f4_catalog(isa.load_spec("gfx942")) == ()
    assert [x.m for x in f8f6f4_mfmas_for(spec, dtype("fp4"), dtype("fp8_e5m2"), True)] == [16, 32]


def test_codes_name_the_emulators_formats():
    from jitgemm.emu.mx_formats import matrix_format

    for name, code in F8F6F4_FORMAT_CODES.items():
        fmt = matrix_format(code)
        assert fmt.bits == dtype(name).bits and fmt.dtype == np.dtype(dtype(name).numpy), (name, code)


def _mc(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([require_tool("llvm-mc"), "-arch=amdgcn", "-mcpu=gfx950", "-show-encoding"], input=text,
                          capture_output=True, text=True)


@pytest.mark.parametrize("scaled", [False, True])
def test_register_counts_per_code_are_llvm_mcs(scaled):
    """llvm-mc takes exactly the catalog's tuple size for each CBSZ and BLGP code and refuses the next larger."""
    spec = isa.load_spec("gfx950")
    for code_name, code in F8F6F4_FORMAT_CODES.items():
        entry = next(x for x in f8f6f4_catalog(spec) if x.scaled == scaled and x.m == 16 and x.a.name == code_name
                     and x.b.name == "fp8_e4m3")
        regs = entry.a_regs
        mnem = entry.name.lower()
        tail = ", v40, v41" if scaled else ""
        ok = _mc(f"{mnem} a[0:3], v[0:{regs - 1}], v[16:23], a[0:3]{tail} cbsz:{code}\n")
        assert ok.returncode == 0, ok.stderr
        if regs < 8:
            bad = _mc(f"{mnem} a[0:3], v[0:{regs + 1}], v[16:23], a[0:3]{tail} cbsz:{code}\n")
            assert bad.returncode != 0 and "tuple size" in bad.stderr, bad.stderr
        ok_b = _mc(f"{mnem} a[0:3], v[16:23], v[0:{regs - 1}], a[0:3]{tail} blgp:{code}\n")
        assert ok_b.returncode == 0, ok_b.stderr


def test_lowered_mx_kernel_encodes_as_llvm_mc():
    """Every instruction of an MX kernel (scaled MFMAs with op_sel/op_sel_hi/cbsz/blgp, buffer loads, the K-tail
    masks) encodes to llvm-mc's bytes."""
    from jitgemm.codegen.direct_generator import compile_gemm
    from jitgemm.codegen.gemm_ir import GemmProblem
    from jitgemm.isa.disasm.printer import format_item

    kernel = compile_gemm(GemmProblem.make(64, 64, 256, "fp4", "fp6_e2m3", a_scale="shuffled", b_scale="plain"),
                          target="gfx950")
    lines = [format_item(i) for i in kernel.lowered.instructions if not format_item(i).endswith(":")]
    lines = [x for x in lines if not x.startswith("s_cbranch") and not x.startswith("s_branch")]
    out = _mc("".join(x + "\n" for x in lines))
    assert out.returncode == 0, out.stderr[:2000]
    theirs = [bytes(int(b, 16) for b in line.split("encoding: [")[1].rstrip("]").split(","))
              for line in out.stdout.splitlines() if "encoding:" in line]
    spec = isa.load_spec("gfx950")
    program = isa.assemble("".join(x + "\n" for x in lines), spec)
    ends = [*program.offsets[1:], len(program.code)]
    ours = [program.code[a:b] for a, b in zip(program.offsets, ends, strict=True)]
    assert len(ours) == len(theirs)
    mism = [(x, a.hex(), b.hex()) for x, a, b in zip(lines, ours, theirs, strict=True) if a != b]
    assert not mism, mism[:5]
    assert any("op_sel_hi" in x for x in lines) and any("cbsz:4 blgp:2" in x for x in lines)
