"""Wave modes that change how vector instructions run: VSKIP and GPR indexing (CDNA3 ISA, SOPC/SOPP/SOP1
descriptions of S_SETVSKIP and S_SET_GPR_IDX_ON/OFF/MODE/IDX).

- S_SETVSKIP S0, S1: VSKIP = S0[S1[4:0]]. While it is set the wave issues no vector instruction (VALU, VMEM,
  LDS, FLAT); scalar ones run and the PC moves on. Hand-written kernels use it to step over a block of vector
  code per wave without branching.
- S_SET_GPR_IDX_ON S0, mode: GPR indexing on; M0[7:0] = S0[7:0], M0[15:12] = mode (bit 0 SRC0, bit 1 SRC1,
  bit 2 SRC2, bit 3 DST). While on, each enabled VGPR operand of a VALU instruction addresses VGPR
  (number + M0[7:0]). S_SET_GPR_IDX_OFF turns it off, S_SET_GPR_IDX_MODE rewrites M0[15:12] and
  S_SET_GPR_IDX_IDX rewrites M0[7:0].

The engine asks `run_modal` only while some wave has a mode on (`Context.modes`), so kernels that never use
them pay nothing. An indexed instruction is rebuilt once per (PC, index, mode) with its operands renumbered.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jitgemm.isa.instruction import Imm, Reg, SrcMods

from .errors import EmulatorError, NoSemantics

MODE_INSTRUCTIONS = frozenset({"S_SETVSKIP", "S_SET_GPR_IDX_ON", "S_SET_GPR_IDX_OFF", "S_SET_GPR_IDX_MODE",
                               "S_SET_GPR_IDX_IDX"})
_MODE_BIT = {"SRC0": 0, "SRC1": 1, "VSRC1": 1, "SRC2": 2, "VDST": 3}


def _refresh(ctx) -> None:
    ctx.modes = bool(ctx.st.vskip.any() or ctx.st.gpr_idx.any())


def mode_op(b, d):
    """The run function of one of MODE_INSTRUCTIONS."""
    name = d.name
    ops = d.inst.operands
    if name == "S_SET_GPR_IDX_OFF":
        def off(ctx, w):
            ctx.st.gpr_idx[w] = False
            _refresh(ctx)
        return off
    if name == "S_SET_GPR_IDX_MODE":
        if not ops or not isinstance(ops[0], Imm):
            raise NoSemantics("s_set_gpr_idx_mode without its immediate mode")
        mode = int(ops[0].value) & 0xF

        def set_mode(ctx, w):
            st = ctx.st
            st.s[w, st.m0_slot] = (st.s[w, st.m0_slot] & np.uint32(~0xF000 & 0xFFFFFFFF)) | np.uint32(mode << 12)
        return set_mode
    src = b.ops.src(ops[0], 32)
    if name == "S_SET_GPR_IDX_IDX":
        def set_idx(ctx, w):
            st = ctx.st
            idx = np.asarray(src.read(st, w)).astype(np.uint32) & np.uint32(0xFF)
            st.s[w, st.m0_slot] = (st.s[w, st.m0_slot] & np.uint32(0xFFFFFF00)) | idx
        return set_idx
    if name == "S_SET_GPR_IDX_ON":
        if len(ops) < 2 or not isinstance(ops[1], Imm):
            raise NoSemantics("s_set_gpr_idx_on without its immediate mode")
        mode = int(ops[1].value) & 0xF

        def on(ctx, w):
            st = ctx.st
            idx = np.asarray(src.read(st, w)).astype(np.uint32) & np.uint32(0xFF)
            keep = st.s[w, st.m0_slot] & np.uint32(0xFFFF0F00)
            st.s[w, st.m0_slot] = keep | idx | np.uint32(mode << 12)
            st.gpr_idx[w] = True
            _refresh(ctx)
        return on
    bit = b.ops.src(ops[1], 32)  # S_SETVSKIP

    def setvskip(ctx, w):
        st = ctx.st
        value = np.asarray(src.read(st, w)).astype(np.uint32)
        sel = np.asarray(bit.read(st, w)).astype(np.uint32) & np.uint32(31)
        st.vskip[w] = ((value >> sel) & np.uint32(1)) != 0
        _refresh(ctx)
    return setvskip


def indexed(d, index: int, mode: int, vgprs: int):
    """The decoded instruction `d` with its VGPR operands that `mode` enables renumbered by `index`."""
    fields = {}
    for o, op in d.operand_pairs():
        bit = _MODE_BIT.get(o.field_name or "")
        if bit is not None and mode >> bit & 1:
            fields[id(op)] = op
    new = []
    for op in d.inst.operands:
        if id(op) in fields:
            base = op.operand if isinstance(op, SrcMods) else op
            if isinstance(base, Reg) and base.kind == "v":
                moved = dataclasses.replace(base, index=base.index + index)
                if moved.index + moved.count > vgprs:
                    raise EmulatorError(f"{d.text} at PC 0x{d.pc:x}: GPR index {index} moves v{base.index} to "
                                        f"v{moved.index}, past the kernel's {vgprs} VGPRs")
                op = dataclasses.replace(op, operand=moved) if isinstance(op, SrcMods) else moved
        new.append(op)
    return dataclasses.replace(d, inst=dataclasses.replace(d.inst, operands=tuple(new)))


def run_modal(prog, ctx, op, w):
    """Run vector op `op` for the waves `w` that a mode affects; returns the waves left to run normally
    (an index array, possibly empty)."""
    st = ctx.st
    waves = np.arange(st.count)[w] if isinstance(w, slice) else np.asarray(w)
    waves = waves[~st.vskip[waves]]
    if not prog.indexable(op.pc):
        return waves
    on = st.gpr_idx[waves]
    if not on.any():
        return waves
    m0 = st.s[waves[on], st.m0_slot].astype(np.int64)
    keys = (m0 & 0xFF) | ((m0 >> 12) & 0xF) << 8
    for key in np.unique(keys):
        group = waves[on][keys == key]
        prog.indexed_op(op.pc, int(key) & 0xFF, int(key) >> 8).run(ctx, group)
    return waves[~on]
