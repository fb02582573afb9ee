"""V_PERM_B32 (alu_statements.perm) against a plain per-byte reading of the CDNA 3 ISA guide's description:
result byte i = selector byte i picking byte 0-7 of {S0, S1} (S1 is bytes 0-3), 8-11 the sign bit of S1[15],
S1[31], S0[15], S0[31] replicated, 12 zero, 13-255 0xFF. Both of perm's paths: a selector per lane (a VGPR)
and one selector for every lane (an SGPR or a constant, the byte-copy path LLVM's bf16 packing uses)."""

from __future__ import annotations

import numpy as np

from jitgemm.emu.semantics.alu_statements import perm


def _reference(s0: int, s1: int, sel: int) -> int:
    data = (s0 << 32) | s1
    out = 0
    for i in range(4):
        b = (sel >> (8 * i)) & 0xFF
        if b < 8:
            byte = (data >> (8 * b)) & 0xFF
        elif b < 12:
            byte = 0xFF if (data >> (16 * (b - 8) + 15)) & 1 else 0
        else:
            byte = 0 if b == 12 else 0xFF
        out |= byte << (8 * i)
    return out


def _selectors(rng, n):
    codes = rng.integers(0, 16, (n, 4))
    codes[::3] = rng.integers(0, 256, (len(codes[::3]), 4))   # every byte value, 13-255 included
    return (codes[:, 0] | codes[:, 1] << 8 | codes[:, 2] << 16 | codes[:, 3] << 24).astype(np.uint32)


def test_perm_per_lane_selectors_match_the_isa_rule():
    rng = np.random.default_rng(5)
    s0 = rng.integers(0, 1 << 32, (6, 64), dtype=np.uint64).astype(np.uint32)
    s1 = rng.integers(0, 1 << 32, (6, 64), dtype=np.uint64).astype(np.uint32)
    sel = _selectors(rng, 6 * 64).reshape(6, 64)
    got = perm(s0, s1, sel)
    want = np.vectorize(_reference, otypes=[np.uint64])(s0.astype(np.uint64), s1.astype(np.uint64), sel)
    np.testing.assert_array_equal(got, want.astype(np.uint32))


def test_perm_one_selector_for_every_lane_matches_the_isa_rule():
    rng = np.random.default_rng(6)
    for sel in _selectors(rng, 40):
        s0 = rng.integers(0, 1 << 32, (5, 64), dtype=np.uint64).astype(np.uint32)
        s1 = rng.integers(0, 1 << 32, (5, 64), dtype=np.uint64).astype(np.uint32)
        got = perm(s0, s1, np.full((5, 1), sel, np.uint32))   # a uniform operand arrives as (G, 1)
        want = np.vectorize(_reference, otypes=[np.uint64])(s0.astype(np.uint64), s1.astype(np.uint64), int(sel))
        assert got.shape == (5, 64)
        np.testing.assert_array_equal(got, want.astype(np.uint32), err_msg=f"selector 0x{int(sel):08x}")
