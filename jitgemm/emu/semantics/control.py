"""Program control: branches (S_BRANCH, S_CBRANCH_*), S_SETPC/S_SWAPPC, S_ENDPGM, S_BARRIER, traps, the MODE
register moves (modes.py), S_GETREG (hardware registers read as 0) and the instructions with no architectural
effect in the emulator (waits, priorities, cache hints)."""

from __future__ import annotations

import numpy as np

from jitgemm.isa.instruction import Imm

from ..errors import EmulatorError, NoSemantics, pc_text
from ..modes import MODE_INSTRUCTIONS, mode_op
from ..ops import Builder, RunFn
from ..program import Decoded
from ..registry import register, semantics
from ..state import AT_BARRIER, DONE

register(sorted(MODE_INSTRUCTIONS), mode_op)


@semantics("S_GETREG_B32")
def _getreg(b: Builder, d: Decoded) -> RunFn:
    """Hardware registers read as 0."""
    dst = b.ops.dst(d.inst.operands[0], 32)
    return lambda ctx, w: dst.write(ctx.st, w, np.zeros(ctx.group_size(w), np.uint32))


# --- program control ---------------------------------------------------------------------------------------

_BRANCH_COND = {
    "S_BRANCH": None,
    "S_CBRANCH_SCC0": lambda st, w: ~st.scc[w],
    "S_CBRANCH_SCC1": lambda st, w: st.scc[w],
    "S_CBRANCH_VCCZ": lambda st, w: st.s64[w, st.vcc_slot // 2] == 0,
    "S_CBRANCH_VCCNZ": lambda st, w: st.s64[w, st.vcc_slot // 2] != 0,
    "S_CBRANCH_EXECZ": lambda st, w: st.exec64(w) == 0,
    "S_CBRANCH_EXECNZ": lambda st, w: st.exec64(w) != 0,
}
_NOOPS = {"S_NOP", "S_WAITCNT", "S_SETPRIO", "S_SLEEP", "S_DCACHE_WB", "S_DCACHE_INV", "S_ICACHE_INV",
          "S_SENDMSG", "S_SENDMSGHALT", "S_TTRACEDATA", "S_CODE_END", "S_WAITCNT_VSCNT",
          "S_INCPERFLEVEL", "S_DECPERFLEVEL", "S_BARRIER_WAIT", "S_WAKEUP", "S_SETKILL", "S_WAITCNT_DEPCTR",
          "BUFFER_WBL2", "BUFFER_INV", "BUFFER_WBINVL1", "BUFFER_WBINVL1_VOL", "S_DCACHE_WB_VOL",
          "S_DCACHE_INV_VOL"}


def _no_op(b: Builder, d: Decoded) -> RunFn:
    def no_op(ctx, w):
        return None
    return no_op


register(sorted(_NOOPS | {"V_NOP"}), _no_op, "no architectural effect here: no caches, no scheduling priorities, "
         "no clocks")
register(("S_SETREG_B32", "S_SETREG_IMM32_B32", "S_DENORM_MODE", "S_ROUND_MODE"), _no_op,
         "mode bits: numpy keeps denormals and rounds to nearest even, whatever the kernel asks")


@semantics("S_ENDPGM")
def _endpgm(b: Builder, d: Decoded) -> RunFn:
    def end(ctx, w):
        ctx.st.status[w] = DONE
        ctx.release_barriers()
    return end


@semantics("S_BARRIER")
def _barrier(b: Builder, d: Decoded) -> RunFn:
    def barrier(ctx, w):
        ctx.st.status[w] = AT_BARRIER
        ctx.release_barriers()
    return barrier


@semantics("S_TRAP", "S_ENDPGM_SAVED")
def _trap(b: Builder, d: Decoded) -> RunFn:
    def trap(ctx, w):
        raise EmulatorError(f"kernel {b.kernel!r}: {d.text} at PC 0x{d.pc:x} (a trap: the kernel "
                            f"aborted, e.g. a failed device-side assert)")
    return trap


@semantics(*_BRANCH_COND)
def _branch(b: Builder, d: Decoded) -> RunFn:
    op = d.inst.operands[0] if d.inst.operands else Imm(0)
    if not isinstance(op, Imm) or not isinstance(op.value, int):
        raise NoSemantics(f"branch target {op} is not an offset")
    simm = op.value - 0x10000 if op.value >= 0x8000 else op.value  # SIMM16 is a signed dword count
    target = d.pc + 4 + 4 * simm
    cond = _BRANCH_COND[d.name]

    def branch(ctx, w):
        if cond is None:
            ctx.st.pc[w] = target
            return
        taken = cond(ctx.st, w)
        ctx.st.pc[w] = np.where(taken, target, d.pc + d.size)
    return branch


@semantics("S_SETPC_B64", "S_SWAPPC_B64")
def _setpc(b: Builder, d: Decoded) -> RunFn:
    pairs = d.operand_pairs()   # S_SWAPPC_B64 also writes the return address to its SDST
    outs = [op for o, op in pairs if o.output]
    src = b.ops.src(next(op for o, op in pairs if not o.output), 64)
    dst = b.ops.dst(outs[0], 64) if outs else None

    base, size = b.code_address, b.code_size

    def run(ctx, w):
        # PCs are addresses in the loaded code object (s_getpc_b64 reads them); a jump outside the kernel's
        # code faults here instead of running whatever a real GPU would find there
        st = ctx.st
        target = np.asarray(src.read(st, w)).astype(np.uint64).astype(np.int64)
        rel = target - base
        outside = (rel < 0) | (rel >= size)
        if outside.any():
            i = int(np.argmax(outside))
            wave = int((np.arange(st.count)[w] if isinstance(w, slice) else np.asarray(w))[i])
            raise EmulatorError(f"kernel {b.kernel!r}: {d.text} at PC {pc_text(d.pc, base)}, wave "
                                f"{wave}: jump to address 0x{int(target[i]) & 0xFFFFFFFFFFFFFFFF:x}, outside the "
                                f"kernel's code [0x{base:x}, 0x{base + size:x})")
        if dst is not None:
            dst.write(st, w, np.full(ctx.group_size(w), np.uint64(base + d.pc + d.size)))
        st.pc[w] = rel
    return run
