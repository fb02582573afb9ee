"""Every gfx942 and gfx950 code object of AMD's hand-written amd-aiter kernels (the pinned wheel,
tests/fixtures/aiter_corpus.py) passes `jitgemm emulate --check`: the emulator has semantics for every instruction of
every kernel.

These kernels were written by hand, not by LLVM, so they use what LLVM never emits: raw buffers with a
non-zero stride, s_setvskip, GPR indexing, scalar stores and atomics, buffer atomics on f32 and f16 pairs.
Before the rules of tests/emu/test_emu_isa_rules.py were modelled, 197 of the 1,281 objects had unsupported
instructions.
"""

from __future__ import annotations

from jitgemm.emu import check
from tests.fixtures.aiter_corpus import aiter_objects


def test_every_gfx942_aiter_object_has_emulator_semantics():
    from jitgemm import isa

    spec = isa.load_spec("gfx942")
    objects = aiter_objects("gfx942")
    assert len(objects) == 1281
    problems = []
    for path in objects:
        for kernel, ops in check(path.read_bytes(), spec=spec).items():
            problems += [f"{path.name} {kernel} 0x{op.pc:x} {op.text}: {op.problem}" for op in ops]
    assert not problems, f"{len(problems)} unsupported instructions, e.g. " + "; ".join(problems[:5])


def test_every_gfx950_aiter_object_has_emulator_semantics():
    """The same for the 1,220 gfx950 objects with the gfx950 spec. Before bf16 pairs were modelled,
    buffer_atomic_pk_add_bf16 was unsupported at 556 PCs (the MXFP4 GEMMs' split-K accumulation)."""
    from jitgemm import isa

    spec = isa.load_spec("gfx950")
    objects = aiter_objects("gfx950")
    assert len(objects) == 1220
    problems = []
    for path in objects:
        for kernel, ops in check(path.read_bytes(), spec=spec).items():
            problems += [f"{path.name} {kernel} 0x{op.pc:x} {op.text}: {op.problem}" for op in ops]
    assert not problems, f"{len(problems)} unsupported instructions, e.g. " + "; ".join(problems[:5])
