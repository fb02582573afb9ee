"""The one parser of MFMA names (isa/spec/mfma.py): every instruction the spec files under the MFMA functional
subgroup is named V_MFMA_<acc>_<M>X<N>X<K>[_<B>B]_<types> and parses; the shape agrees with the operands
for every single-block MFMA the catalog offers (M*N/64 accumulators and M*K/64 A elements per lane), and
llvm-mc-22 knows each catalog entry by the same name."""

from __future__ import annotations

import subprocess

from jitgemm.codegen.mfma_catalog import mfma_catalog
from jitgemm.isa.spec.mfma import WAVE64, parse_mfma_name

from jitgemm import isa
from tests.fixtures.oracles import require_tool

SPEC = isa.load_spec("gfx942")


def test_every_spec_mfma_parses():
    mfmas = [i for i in SPEC.instructions if "MFMA" in i.functional_subgroups and i.name.startswith("V_MFMA")]
    assert len(mfmas) >= 20
    for inst in mfmas:
        shape = parse_mfma_name(inst.name)
        assert shape is not None and shape.m * shape.n * shape.blocks >= WAVE64, inst.name
    assert parse_mfma_name("V_MFMA_F32_32X32X2_2B_F32").blocks == 2
    assert parse_mfma_name("V_MFMA_F32_16X16X8_XF32").xf32
    assert parse_mfma_name("V_ADD_U32") is None and parse_mfma_name("V_MFMA_F32_X_BF16") is None


def test_catalog_shapes_agree_with_operands_and_llvm():
    catalog = mfma_catalog(SPEC)
    assert {"V_MFMA_F32_32X32X8_BF16", "V_MFMA_I32_32X32X16_I8", "V_MFMA_F32_16X16X32_FP8_FP8"} <= {x.name for x in
                                                                                                  catalog}
    text = ""
    for x in catalog:
        assert x.acc_regs * WAVE64 == x.m * x.n * (x.acc.bits // 32) and x.a_regs * 32 * WAVE64 == x.m * x.k * x.a.bits
        regs = lambda kind, first, count: f"{kind}[{first}:{first + count - 1}]" if count > 1 else f"{kind}{first}"  # noqa: E731
        text += (f"{x.name.lower()} {regs('a', 0, x.acc_regs)}, {regs('v', 0, x.a_regs)}, "
                 f"{regs('v', 8, x.b_regs)}, {regs('a', 0, x.acc_regs)}\n")
    mc = require_tool("llvm-mc-22")
    run = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"], input=text,
                         capture_output=True, text=True)
    assert run.returncode == 0 and "error" not in run.stderr, run.stderr[:2000]
    assert run.stdout.count("v_mfma_") == len(catalog)
