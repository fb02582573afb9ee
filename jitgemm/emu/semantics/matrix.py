"""The MFMA family path: operands bound by the spec's formats and sizes, shapes and lane layouts from mfma.py
(D = A x B + C over the lanes). Sparse MFMAs are sparse_mfma.py; gfx950's scaled and f8f6f4 forms gfx950.py."""

from __future__ import annotations

import numpy as np

from ..errors import NoSemantics
from ..mfma import MfmaShapeError, mfma_registers, mfma_shape
from ..operands import VgprDst, register_rows
from ..ops import Builder, RunFn
from ..program import Decoded
from ..registry import family_path
from ..values import Fmt


@family_path("mfma")
def _mfma(b: Builder, d: Decoded) -> RunFn:
    pairs = d.operand_pairs()
    if len(pairs) != 4:
        raise NoSemantics("MFMA without its four operands")
    (od, opd), (oa, opa), (ob, opb), (oc, opc) = pairs
    try:
        shape = mfma_shape(d.name, _element(b.fmt(oa)), _element(b.fmt(ob)), _element(b.fmt(od)), oa.size, ob.size,
                           od.size)
    except MfmaShapeError as exc:
        raise NoSemantics(str(exc)) from None
    dst = b.ops.dst(opd, od.size)
    a = b.ops.src(opa, oa.size)
    bb = b.ops.src(opb, ob.size)
    c = b.ops.src(opc, oc.size)
    cbsz, abid, blgp = (int(d.modifier(k, 0) or 0) for k in ("cbsz", "abid", "blgp"))
    neg = d.modifier("neg", ())   # an f64 MFMA writes its BLGP bits as neg:[a,b,c] (modifiers._f64_matrix)
    if neg:
        blgp = sum(bit << i for i, bit in enumerate(neg))

    in_place = isinstance(dst, VgprDst) and dst.regs == shape.c_regs

    def run(ctx, w):
        st = ctx.st
        a_rows, b_rows = register_rows(a, st, w, shape.a_regs), register_rows(bb, st, w, shape.b_regs)
        c_rows = register_rows(c, st, w, shape.c_regs)
        if in_place and isinstance(w, slice):  # D straight into the register file
            mfma_registers(shape, a_rows, b_rows, c_rows, cbsz, abid, blgp,
                           out=st.v[w, dst.slot:dst.slot + shape.c_regs])
            return
        out = mfma_registers(shape, a_rows, b_rows, c_rows, cbsz, abid, blgp)
        dst.write(st, w, np.swapaxes(out, 1, 2) if shape.c_regs > 1 else out[:, 0])
    return run


def _element(fmt: Fmt) -> Fmt:
    return fmt.component


def _element(fmt: Fmt) -> Fmt:
    return fmt.component
