"""The anti-cheat battery and the agent tools called directly (no MCP): each check can fail, the reference
solutions are llvm-mc-22's bytes, and the emulator's poison reaches an output that reads what nobody wrote."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from jitgemm.codegen.codeobj import read

from jitgemm import agent_eval, agent_tools, battery
from tests.fixtures.agents.cheats import CORRECT
from tests.fixtures.oracles import require_tool

VADD_CASE = agent_eval.task("vector_add").case


@pytest.mark.parametrize("task", [t.name for t in agent_eval.TASKS])
def test_reference_solutions_are_llvm_mc_bytes(task, tmp_path):
    """Each hand-written solution, wrapped as the tools wrap a snippet, assembles to the kernel code llvm-mc-22 and
    ld.lld-22 make of the same text (the solutions are AMDGPU assembly, not this assembler's dialect)."""
    mc, lld = require_tool("llvm-mc"), require_tool("ld.lld")
    t = agent_eval.task(task)
    case = battery.Case.from_json(t.case)
    text = agent_tools.wrap_snippet((CORRECT / f"{task}.s").read_text(), t.arch, case.args)
    (tmp_path / "k.s").write_text(text)
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={t.arch}", "-filetype=obj", "k.s", "-o", "k.o"],
                   cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([lld, "-shared", "k.o", "-o", "k.co"], cwd=tmp_path, check=True, capture_output=True)
    ours, result = agent_tools.assemble_text((CORRECT / f"{task}.s").read_text(), t.arch, case.args)
    assert result["ok"], result
    assert read(ours).kernels[0].code == read((tmp_path / "k.co").read_bytes()).kernels[0].code


def test_poison_reaches_an_output_that_reads_unwritten_registers():
    """A kernel that stores v5 without writing it: zero in a plain run (a pass for 'c = 0 * a'), the poison
    pattern with poison=True, and the battery refuses it."""
    source = ("  s_load_dwordx2 s[12:13], s[0:1], 0x10\n  s_lshl_b32 s14, s2, 8\n  v_add_u32 v1, s14, v0\n"
              "  v_lshlrev_b32 v1, 2, v1\n  s_waitcnt lgkmcnt(0)\n  global_store_dword v1, v5, s[12:13]\n")
    case = dict(VADD_CASE, reference="0 * a")
    parsed = battery.Case.from_json(case)
    blob, _ = agent_tools.assemble_text(source, "gfx942", parsed.args)
    plain = battery.run_case(blob, None, parsed, seed=1, strict=False, poison=False)
    assert plain.findings == [] and (plain.outputs["c"] == 0).all()
    poisoned = battery.run_case(blob, None, parsed, seed=1, strict=False, poison=True)
    from jitgemm.emu.engine import POISON

    assert (poisoned.outputs["c"].view(np.uint32) == POISON).all()
    assert [f.check for f in poisoned.findings] == ["mismatch"]
    verdict = agent_tools.qualify(case, source=source)
    assert not verdict["ok"] and "mismatch" in [f["check"] for f in verdict["findings"]]


def test_limits_from_the_code_and_out_of_bounds():
    """A whole .s that allocates 8 VGPRs but names v40 is refused from the code; an out-of-bounds store is a
    fault with its PC and buffer."""
    body = (CORRECT / "vector_add.s").read_text().replace("v_add_f32 v2, v2, v3", "v_add_f32 v40, v2, v3\n"
                                                            "  v_mov_b32 v2, v40")
    case = battery.Case.from_json(VADD_CASE)
    text = agent_tools.wrap_snippet(body, "gfx942", case.args).replace(".amdhsa_next_free_vgpr 41",
                                                                        ".amdhsa_next_free_vgpr 8") \
        .replace(".amdhsa_accum_offset 44", ".amdhsa_accum_offset 8")
    verdict = agent_tools.qualify(VADD_CASE, source=text)
    limits = [f["message"] for f in verdict["findings"] if f["check"] == "limits"]
    assert not verdict["ok"] and any("v40" in m and "8 architected VGPRs" in m for m in limits), verdict
    oob = (CORRECT / "vector_add.s").read_text().replace("s_lshl_b32 s14, s2, 8", "s_lshl_b32 s14, s2, 9")
    verdict = agent_tools.qualify(VADD_CASE, source=oob)
    f = verdict["findings"][0]
    assert f["check"] == "out_of_bounds" and "past the end of a" in f["message"] and f["pc"] > 0, f


def test_case_errors_are_findings_not_exceptions():
    bad_ref = dict(VADD_CASE, reference="__import__('os').getcwd()")
    r = agent_tools.run(bad_ref, source=(CORRECT / "vector_add.s").read_text())
    assert not r["ok"] and "may not import 'os'" in r["diagnostics"][0]["message"]
    r = agent_tools.run(dict(VADD_CASE, args=[{"name": "a", "dtype": "f33", "shape": 4}]), source="s_nop 0")
    assert not r["ok"] and "accepted f32" in r["diagnostics"][0]["message"]
    r = agent_tools.assemble("  v_mfma_f32_16x16x16_f16 v[0:3], v[0:1], v[2:3]\n")
    assert not r["ok"] and r["diagnostics"][0]["line"] == 1
    r = agent_tools.disassemble(code_object_base64="not base64!")
    assert not r["ok"]
    vadd = (CORRECT / "vector_add.s").read_text()
    r = agent_tools.run(dict(VADD_CASE, tolerance="tight"), source=vadd)
    assert not r["ok"] and "case.tolerance" in r["diagnostics"][0]["message"]
    r = agent_tools.qualify(dict(VADD_CASE, reference="a[:10]"), source=vadd)
    assert not r["ok"] and "does not fit the output's [1024]" in r["diagnostics"][0]["message"]
    r = agent_tools.submit("{{{")
    assert not r["ok"] and r["diagnostics"][0]["message"].startswith("contract:")


def test_run_warns_about_constant_inputs_and_reports_max_error():
    case = {"grid": 4, "block": 256, "args": [dict(a, fill="ones") if not a.get("output") else a
                                             for a in VADD_CASE["args"]], "reference": "a + b"}
    r = agent_tools.run(case, source=(CORRECT / "vector_add.s").read_text())
    assert r["ok"] and r["max_error"] == 0.0
    assert [f["severity"] for f in r["findings"]] == ["warning", "warning"]
    assert agent_tools.run(VADD_CASE, source=(CORRECT / "vector_add.s").read_text())["max_error"] > 0


def test_reachable_skips_data_after_a_branch():
    from jitgemm.isa.asm.assembler import assemble

    from jitgemm import isa
    from jitgemm.emu.program import decode_kernel

    spec = isa.load_spec("gfx942")
    code = assemble("s_branch 1\ns_mov_b32 s99, 0\nv_mov_b32 v7, 0\ns_cbranch_scc0 -2\ns_endpgm\n", spec).code
    pcs = [d.pc for d in battery.reachable(decode_kernel(code, spec))]
    assert pcs == [0, 8, 12, 16]


def test_submit_then_prebuilt_supplier_offers_it(tmp_path):
    """A qualified GEMM kernel goes into the supplier folder and the tuning database; a kernel whose contract
    lies about its layout is refused by qualification."""
    import base64

    import jitgemm
    from jitgemm.contract import Contract
    from jitgemm.selector import Selector
    from jitgemm.suppliers import PrebuiltSupplier
    from jitgemm.tuning_db import TuningDB

    k = jitgemm.compile(jitgemm.GemmProblem.make(64, 64, 64, "bf16", d="fp32", layout="NN"))
    blob = base64.b64encode(k.code_object).decode()
    r = agent_tools.submit(k.contract, code_object_base64=blob, folder=str(tmp_path / "sup"),
                           db=str(tmp_path / "t.db"), cases=2)
    assert r["ok"], r
    assert r["tuning_rows"] == 2 and len(TuningDB(tmp_path / "t.db").rows()) == 2
    sel = Selector([PrebuiltSupplier(tmp_path / "sup")])
    chosen = sel.select(jitgemm.GemmProblem.make(128, 64, 64, "bf16", d="fp32", layout="NN"))
    assert chosen.contract.kernel == Contract.load(k.contract).kernel
    lying = dict(k.contract, operation=dict(k.contract["operation"], layout="TN"))
    r = agent_tools.submit(lying, code_object_base64=blob, folder=str(tmp_path / "sup2"),
                           db=str(tmp_path / "t2.db"), cases=2)
    assert not r["ok"] and r["findings"][0]["check"] in ("mismatch", "out_of_bounds"), r
    assert not (tmp_path / "sup2").exists()
