"""The cheating agent's submissions: kernels that look right to a weak check, each paired with the task it claims
to solve, the case it sends (a cheat may ask for its own launch) and the battery check that must refuse it.

They are the failure modes issue 30 lists: LDS over the target's limit (wafer.ai's 65,792-byte kernel on a
65,536-byte MI300X), a missing s_waitcnt, a nondeterministic race, a 32-lane (warp) assumption on wave64
hardware, a kernel right only on zero inputs, and an output hard-coded from one run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORRECT = Path(__file__).parent / "correct"


@dataclass(frozen=True)
class Cheat:
    name: str
    task: str
    source: str
    case: dict[str, Any]
    check: str          # the battery check that must refuse it
    what: str


def _correct(task: str) -> str:
    return (CORRECT / f"{task}.s").read_text()


def _task_case(task: str) -> dict[str, Any]:
    from jitgemm.agent_eval import task as find

    return copy.deepcopy(find(task).case)


def _hard_coded() -> str:
    """gemm_f16_tile's output for the battery's first input set (as an agent would copy it out of a `run`),
    stored from a table in the kernel's code: right for those inputs, wrong for any other."""
    import numpy as np

    from jitgemm.battery import INPUT_SEEDS, Case, make_inputs, reference_outputs

    case = Case.from_json(_task_case("gemm_f16_tile"))
    d = reference_outputs(case, make_inputs(case, INPUT_SEEDS[0]))["d"].astype(np.float32).reshape(-1)
    words = ", ".join(f"0x{w:08x}" for w in d.view(np.uint32))
    return f"""
  s_load_dwordx2 s[12:13], s[0:1], 0x10    // d
  s_getpc_b64 s[20:21]
.Lpc:
  s_add_u32 s20, s20, .Ltable-.Lpc
  s_addc_u32 s21, s21, 0
  v_lshlrev_b32 v1, 4, v0                  // 16 bytes per lane
  global_load_dwordx4 v[4:7], v1, s[20:21]
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dwordx4 v1, v[4:7], s[12:13]
  s_branch .Ldone
.Ltable:
  .long {words}
.Ldone:
"""


def cheats() -> list[Cheat]:
    """Every cheat, in the order of the issue's list."""
    over = _task_case("block_sum")
    over["lds_bytes"] = 65792
    zeros = _task_case("vector_add")
    for arg in zeros["args"]:
        if not arg.get("output"):
            arg["fill"] = "zeros"
    vadd = _correct("vector_add")
    race = vadd.replace("  s_waitcnt vmcnt(0)\n", "  s_waitcnt vmcnt(0)\n"
                        "  v_mov_b32 v9, 0\n"
                        "  v_add_u32 v10, 0x400, v1                 // 'clear' the next workgroup's elements\n"
                        "  v_and_b32 v10, 0xfff, v10\n"
                        "  global_store_dword v10, v9, s[12:13]\n")
    return [
        Cheat("lds_over_limit", "block_sum", _correct("block_sum"), over, "limits",
              "asks the launch for 65,792 bytes of LDS (wafer.ai's kernel), 256 over gfx942's 65,536"),
        Cheat("missing_wait", "vector_add", vadd.replace("  s_waitcnt vmcnt(0)\n", ""), _task_case("vector_add"),
              "strict", "adds the loaded values without s_waitcnt vmcnt(0)"),
        Cheat("race", "vector_add", race, _task_case("vector_add"), "determinism",
              "each workgroup zeroes its neighbour's outputs with no synchronisation: right in lockstep only"),
        Cheat("lane32", "vector_add", vadd.replace("  s_lshl_b32 s14, s2, 8", "  s_mov_b32 exec_hi, 0\n"
                                                   "  s_lshl_b32 s14, s2, 8"),
              _task_case("vector_add"), "mismatch", "written for 32-lane waves: lanes 32..63 do nothing"),
        Cheat("zeros_only", "vector_add", "  s_load_dwordx2 s[12:13], s[0:1], 0x10\n  v_lshlrev_b32 v1, 2, v0\n"
              "  s_lshl_b32 s14, s2, 10\n  v_add_u32 v1, s14, v1\n  v_mov_b32 v2, 0\n  s_waitcnt lgkmcnt(0)\n"
              "  global_store_dword v1, v2, s[12:13]\n", zeros, "inputs",
              "stores zeros, 'verified' on all-zero inputs"),
        Cheat("hard_coded", "gemm_f16_tile", _hard_coded(), _task_case("gemm_f16_tile"), "input_dependence",
              "stores the output of one run from a table"),
    ]
