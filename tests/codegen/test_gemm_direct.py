"""The direct-assembly generator end to end: compile, run in the emulator, compare with numpy (float64).

The emulator is trusted because it runs Triton's and clang's kernels correctly (tests/test_emu_*); these
tests check the generator against it on every dtype, layout, several tiles, ragged sizes and epilogues.
Tolerances: tests/gemm_cases.OUT_RTOL per output dtype."""

from __future__ import annotations

from dataclasses import replace

import pytest
from jitgemm.codegen.direct_generator import compile_gemm
from jitgemm.codegen.gemm_config import best_lds_pad
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem

import jitgemm
from jitgemm.reference import check, operands, reference


def run(problem: GemmProblem, config: GemmConfig | None = None, seed: int = 0):
    """matmul (the selector's kernel) without a config; with one, that config's kernel launched directly (the
    selector would pick its own candidate)."""
    if config is not None:
        return run_config(problem, config, seed)
    a, b, c, bias = operands(problem, seed)
    d = jitgemm.matmul(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                       activation=problem.activation, backend="emu")
    check(problem, d, reference(problem, a, b, c, bias))
    return d


def run_config(problem: GemmProblem, config: GemmConfig, seed: int = 0):
    from jitgemm.api import launch, prepare
    from jitgemm.contract import Contract

    compiled = compile_gemm(problem, config)
    a, b, c, bias = operands(problem, seed)
    call = prepare(a, b, c, alpha=problem.alpha, beta=problem.beta, out_dtype=problem.d.numpy, bias=bias,
                   activation=problem.activation)
    d = launch(call, compiled.code_object, compiled.name, Contract.load(compiled.contract), backend="emu",
               strict=True)   # the generated kernel must also pass strict emulation
    check(problem, d, reference(problem, a, b, c, bias))
    return compiled


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d", [("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp8", "fp32"),
                                  ("bf8", "bf16"), ("int8", "int32")])
def test_dtypes_and_layouts_ragged(a, d, layout):
    run(GemmProblem.make(17, 33, 65, a, d=d, layout=layout))


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (127, 255, 64), (96, 64, 256)])
def test_sizes(m, n, k):
    run(GemmProblem.make(m, n, k, "bf16", layout="NT"))


def test_vector_loads_all_layouts():
    for layout in ("NN", "NT", "TN", "TT"):
        p = GemmProblem.make(64, 64, 64, "fp16", layout=layout)
        kernel = jitgemm.compile(p)
        assert kernel.config.vec_a > 1 and kernel.config.vec_b > 1, kernel.config
        run(p)


@pytest.mark.parametrize("config", [
    GemmConfig(32, 32, 16, 1, 1, "V_MFMA_F32_32X32X8_BF16"),
    GemmConfig(64, 32, 32, 2, 1, "V_MFMA_F32_16X16X16_BF16", lds_pad=4, prefetch=2),
    GemmConfig(128, 64, 16, 2, 2, "V_MFMA_F32_32X32X8_BF16", prefetch=2),
])
def test_tiles(config):
    run(GemmProblem.make(70, 65, 40, "bf16", layout="NN"), config)


@pytest.mark.parametrize("kw", [
    dict(alpha=0.5),
    dict(c="fp32", beta=-1.5, alpha=2.0),
    dict(bias="m"),
    dict(bias="n", activation="relu"),
    dict(activation="gelu"),
    dict(c="fp32", beta=0.25, bias="n", activation="gelu", alpha=0.75),
])
def test_epilogues(kw):
    run(GemmProblem.make(33, 40, 24, "fp16", d="fp32", layout="NT", **kw))


@pytest.mark.parametrize("bias", ["none", "m", "n"])
def test_int8_epilogue(bias):
    run(GemmProblem.make(20, 36, 50, "int8", c="int32", beta=2.0, alpha=3.0, bias=bias, activation="relu"))


def test_batched():
    run(GemmProblem.make(20, 24, 40, "bf16", layout="TN", batch=3))


# --- the pipeline options: prefetch, LDS double buffer, padding (ragged sizes, every dtype and layout) -----------
DTYPES = [("fp32", "fp32", "V_MFMA_F32_32X32X2_F32"), ("fp16", "fp16", "V_MFMA_F32_32X32X8_F16"),
          ("bf16", "bf16", "V_MFMA_F32_32X32X8_BF16"), ("fp8", "fp32", "V_MFMA_F32_32X32X16_FP8_FP8"),
          ("bf8", "bf16", "V_MFMA_F32_32X32X16_BF8_BF8"), ("int8", "int32", "V_MFMA_I32_32X32X16_I8")]
OPTIONS = [dict(prefetch=1, lds_buffers=1), dict(prefetch=2, lds_buffers=1), dict(prefetch=1, lds_buffers=2),
           dict(prefetch=2, lds_buffers=2)]


def _padded(problem: GemmProblem, config: GemmConfig, whole_vectors: bool = True) -> GemmConfig:
    from jitgemm import isa
    return replace(config, lds_pad=best_lds_pad(problem, config, isa.load_spec("gfx942"),
                                                isa.target_profile("gfx942"), whole_vectors=whole_vectors))


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: f"p{o['prefetch']}b{o['lds_buffers']}")
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d, mfma", DTYPES, ids=[x[0] for x in DTYPES])
def test_pipeline_options_ragged(a, d, mfma, layout, opts):
    """K = 70 with two MFMA substeps per tile: several unguarded iterations, then the guarded tail (and with
    two LDS buffers, both parities of each); M and N end inside a tile; element-wise loads (vec 1), so the
    transposed operands are packed along K from single elements."""
    problem = GemmProblem.make(45, 37, 70, a, d=d, layout=layout)
    k = {"fp32": 2, "fp16": 8, "bf16": 8}.get(a, 16)
    config = _padded(problem, GemmConfig(64, 64, 2 * k, 2, 2, mfma, **opts))
    run_config(problem, config, seed=sum(map(ord, a + layout)) + opts["prefetch"])


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("a, d, mfma", DTYPES, ids=[x[0] for x in DTYPES])
def test_vector_loads_packed_and_split_writes(a, d, mfma, layout):
    """Sizes that allow 16-byte loads but end inside a tile: K-contiguous vectors written whole or, with rows
    that are not 16-byte aligned (padding chosen against bank conflicts), as 8-byte halves; transposed vectors
    packed along K (v_perm_b32, 4x4 byte transposes for 8-bit types)."""
    problem = GemmProblem.make(80, 48, 96, a, d=d, layout=layout)
    wide, word = 16 // problem.a.bytes, 4 // problem.a.bytes     # 4-byte loads: 4 K rows per work-item to pack
    for vec, opts in ((wide, dict(prefetch=2, lds_buffers=2)), (wide, dict(prefetch=2, lds_buffers=1, lds_pad=0)),
                      (word, dict(prefetch=1, lds_buffers=2))):
        config = GemmConfig(64, 64, 64 // problem.a.bytes, 2, 2, mfma, vec_a=vec, vec_b=vec, **opts)
        if "lds_pad" not in opts:
            config = _padded(problem, config, whole_vectors=False)
        compiled = run_config(problem, config, seed=vec + len(layout))
        assert compiled.config == config


def test_default_big_tile_runs():
    """The default for a large problem (256x256 macro tile, 4 waves) on a smaller ragged one, so the emulator
    runs it in a few seconds: a partial tile in M, N and K."""
    from jitgemm.codegen.generator import generator

    from jitgemm import isa

    big = GemmProblem.make(4096, 4096, 4096, "bf16", layout="NT")
    config = generator("asm").choose_config(big, isa.load_spec("gfx942"), isa.target_profile("gfx942"))
    assert (config.tile_m, config.tile_n) == (256, 256)
    run_config(GemmProblem.make(272, 264, 104, "bf16", layout="NT"), config, seed=5)


@pytest.mark.parametrize("a, layout, config", [
    ("bf16", "NT", GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X8_BF16", lds_pad=4, prefetch=2, lds_buffers=2,
                              vec_a=8, vec_b=8)),                                   # 16-byte vectors in halves
    ("fp16", "TN", GemmConfig(64, 64, 16, 2, 2, "V_MFMA_F32_32X32X8_F16", prefetch=2, vec_a=4, vec_b=4)),  # d16_hi
    ("fp8", "TN", GemmConfig(64, 64, 32, 2, 2, "V_MFMA_F32_32X32X16_FP8_FP8", vec_a=8, vec_b=8)),  # byte writes
    ("fp8", "NN", GemmConfig(64, 64, 64, 2, 2, "V_MFMA_F32_32X32X16_FP8_FP8", lds_buffers=2, vec_a=4,
                             vec_b=4)),                                             # 4x4 byte transposes
    ("bf16", "TT", GemmConfig(64, 64, 64, 2, 2, "V_MFMA_F32_16X16X16_BF16", prefetch=2, vec_a=2, vec_b=2)),
], ids=["halves", "d16-hi", "bytes", "byte-transpose", "pack8"])
def test_llvm_mc_assembles_every_staging_form(tmp_path, a, layout, config):
    """Each LDS write form (halves, d16_hi, shifted bytes, v_perm packs), ds_read2 and soffset loads: LLVM's
    assembler takes our text (operand classes, constant bus, offsets) and encodes it to our exact bytes; the
    kernel also computes the right result."""
    import subprocess

    from elftools.elf.elffile import ELFFile
    from jitgemm.isa.disasm.printer import format_item
    from jitgemm.isa.instruction import LabelDef

    from tests.fixtures.oracles import require_tool

    llvm_mc = require_tool("llvm-mc")
    problem = GemmProblem.make(80, 48, 96, a, d="fp32" if a == "fp8" else a, layout=layout)
    compiled = run_config(problem, config, seed=11)
    names = {i.name for i in compiled.lowered.instructions if not isinstance(i, LabelDef)}
    assert "ds_read2_b64" in names or "ds_read2_b32" in names
    lines = [f"{item.name}:" if isinstance(item, LabelDef) else "  " + format_item(item)
             for item in compiled.lowered.instructions]
    src, obj = tmp_path / "k.s", tmp_path / "k.o"
    src.write_text("\n".join(lines) + "\n")
    out = subprocess.run([llvm_mc, "-arch=amdgcn", "-mcpu=gfx942", "-filetype=obj", str(src), "-o", str(obj)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[:2000]
    with open(obj, "rb") as fh:
        assert ELFFile(fh).get_section_by_name(".text").data() == compiled.code


def test_emitter_joins_cover_every_incoming_path():
    """A forward branch joins its hazard history and pending loads with the fall-through path: an MFMA result
    read right after the join waits the MFMA->VALU states of the branch path (gfx942 profile: 19), and a load
    still pending on one path is waited for after the join."""
    from jitgemm.codegen.asm_emit import Emitter
    from jitgemm.isa.hazards import emit_facts
    from jitgemm.isa.instruction import Reg

    from jitgemm import isa

    spec, profile = isa.load_spec("gfx942"), isa.target_profile("gfx942")
    rule = next(h for h in profile.hazards if (h["writer"], h["reader"]) == ("mfma", "valu"))
    e = Emitter(emit_facts(spec, profile), profile.hazards)
    acc, v0, v2 = Reg("a", 0, 16), Reg("v", 0), Reg("v", 2, 2)
    e.emit("v_mfma_f32_32x32x8_bf16", acc, v2, v2, acc)
    e.emit("buffer_load_dword", v0, Reg("v", 1), Reg("s", 4, 4), 0, offen=True)
    e.branch("s_cbranch_scc1", "join")
    e.wait(vmcnt=0)
    for _ in range(rule["wait_states"]):
        e.emit("s_add_u32", Reg("s", 8), Reg("s", 8), 1)
    e.label("join")
    e.emit("v_accvgpr_read_b32", Reg("v", 3), Reg("a", 0))
    e.emit("v_add_u32", Reg("v", 4), v0, v0)
    tail = e.code[[type(x).__name__ for x in e.code].index("LabelDef"):]
    nops = sum(x.operands[0].value + 1 for x in tail if getattr(x, "name", "") == "s_nop")
    assert nops >= rule["wait_states"] - 3              # mfma, load, branch lie between on the branch path
    waits = [x for x in tail if getattr(x, "name", "") == "s_waitcnt"]
    assert waits and "vmcnt(0)" in str(waits[0])
