"""`jitgemm mcp` through a real MCP client session: the official SDK's client starts `python -m jitgemm mcp` over
stdio, and two scripted agents use it -- one writes correct kernels for the agent-eval tasks (hand-written AMDGPU
assembly in tests/fixtures/agents/correct, each checked against llvm-mc-22 in test_battery.py), the other submits the
known cheats (tests/fixtures/agents/cheats.py). Every correct kernel must pass the battery and every cheat must be
refused with its finding."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.fixtures.agents.cheats import CORRECT, cheats
from tests.fixtures.oracles import REPO, require_module

# The tasks the correct agent solves through the session (all twelve: one battery each, a few seconds in all).
SESSION_TASKS = ("vector_add", "saxpy", "row_bias", "block_sum", "wave_max", "transpose_lds", "gemv",
                 "gemm_f16_tile", "gemm_i8_tile", "gemm_bf16_kloop", "gemm_fp8_scaled", "gemm_mxfp4_tile")


async def _session(script):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "jitgemm", "mcp"], cwd=str(REPO))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)


async def _call(session, tool: str, **arguments) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not getattr(result, "isError", getattr(result, "is_error", False)), result
    return json.loads(result.content[0].text)


async def _correct_agent(session, submission=None) -> dict:
    """Reads each task, looks up the instruction it means to use, assembles, runs, qualifies and profiles; then
    ships a GEMM kernel with its contract (`submission`: the submit tool's arguments)."""
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    out: dict = {"tools": names, "tasks": {}}
    tasks = (await _call(session, "agent_task"))["tasks"]
    assert [t["level"] for t in tasks] == list(range(1, 13))
    for task in tasks:
        if task["name"] not in SESSION_TASKS:
            continue
        source = (CORRECT / f"{task['name']}.s").read_text()
        asm = await _call(session, "assemble", source=source, arch=task["arch"], args=task["case"]["args"])
        run = await _call(session, "run", case=task["case"], source=source, arch=task["arch"])
        verdict = await _call(session, "qualify", case=task["case"], code_object_base64=asm["code_object_base64"])
        prof = await _call(session, "profile", case=task["case"], code_object_base64=asm["code_object_base64"])
        out["tasks"][task["name"]] = (asm, run, verdict, prof)
    out["lookup"] = await _call(session, "isa_lookup", name="v_mfma_f32_16x16x16f16")
    out["typo"] = await _call(session, "isa_lookup", name="v_mfma_f32_16x16x16_f61")
    out["search"] = await _call(session, "isa_search", query="fp8 matrix multiply")
    out["lds_search"] = await _call(session, "isa_search", query="load to LDS")
    out["bad_asm"] = await _call(session, "assemble", source="  v_add_f32 v1, s[0:1], v2\n")
    out["disasm"] = await _call(session, "disassemble",
                                code_object_base64=out["tasks"]["vector_add"][0]["code_object_base64"])
    card = await session.read_resource("jitgemm://card/gfx942/v_mfma_f32_16x16x16_f16")
    out["card"] = card.contents[0].text
    target = await session.read_resource("jitgemm://target/gfx950")
    out["target"] = json.loads(target.contents[0].text)
    out["bad_arch"] = await _call(session, "isa_lookup", name="s_nop", arch="gfx9999")
    out["given"] = await _call(session, "run", source=(CORRECT / "vector_add.s").read_text(), case={
        "grid": 1, "block": 64, "reference": "a + b",
        "args": [{"name": "a", "dtype": "f32", "shape": 64, "data": [float(i) for i in range(64)]},
                 {"name": "b", "dtype": "f32", "shape": 64, "data": [0.5] * 64},
                 {"name": "c", "dtype": "f32", "shape": 64, "output": True}]})
    if submission is not None:
        lying = dict(submission["contract"], operation=dict(submission["contract"]["operation"], layout="TN"))
        out["lying"] = await _call(session, "qualify", contract=lying,
                                   code_object_base64=submission["code_object_base64"])
        out["submit"] = await _call(session, "submit", **submission)
        out["gemm_profile"] = await _call(session, "profile", contract=submission["contract"],
                                          code_object_base64=submission["code_object_base64"],
                                          problem={"m": 4096, "n": 4096, "k": 4096, "a": "bf16", "d": "fp32",
                                                   "layout": "NN"})
    return out


async def _cheating_agent(session) -> dict:
    out = {c.name: await _call(session, "qualify", case=c.case, source=c.source) for c in cheats()}
    zeros = next(c for c in cheats() if c.name == "zeros_only")      # the same kernel on the task's own case
    from jitgemm.agent_eval import task

    out["zeros_only on random inputs"] = await _call(session, "qualify", case=task("vector_add").case,
                                                     source=zeros.source)
    return out


@pytest.fixture(scope="module")
def mcp_sdk():
    return require_module("mcp")


def test_correct_agent_session(mcp_sdk, tmp_path):
    import base64

    import jitgemm
    from jitgemm.selector import Selector
    from jitgemm.suppliers import PrebuiltSupplier

    kernel = jitgemm.compile(jitgemm.GemmProblem.make(64, 64, 64, "bf16", d="fp32", layout="NN"))
    submission = {"contract": kernel.contract, "code_object_base64": base64.b64encode(kernel.code_object).decode(),
                  "folder": str(tmp_path / "agent-kernels"), "db": str(tmp_path / "tuning.db")}
    out = asyncio.run(_session(lambda s: _correct_agent(s, submission)))
    assert {"isa_lookup", "isa_search", "assemble", "disassemble", "run", "qualify", "profile",
            "submit"} <= out["tools"]
    assert set(out["tasks"]) == set(SESSION_TASKS)
    for name, (asm, run, verdict, prof) in out["tasks"].items():
        assert asm["ok"] and asm["snippet"], (name, asm)
        assert run["ok"] and run["findings"] == [] and run["max_error"] is not None, (name, run)
        assert verdict["ok"] and verdict["findings"] == [], (name, verdict["findings"])
        assert verdict["runs"] == 5          # lockstep, three random schedules, a second input set
        assert prof["ok"] and prof["us"] > 0 and "roofline" in prof["model"], (name, prof)
    assert out["lookup"]["ok"] and out["lookup"]["name"] == "V_MFMA_F32_16X16X16_F16"
    assert out["lookup"]["passes"] == 4 and any(h["as"] == "writer" for h in out["lookup"]["hazards"])
    assert {o["operand_type"] for e in out["lookup"]["encodings"] for o in e["operands"]} >= {"OPR_VGPR_OR_ACCVGPR"}
    assert not out["typo"]["ok"] and "V_MFMA_F32_16X16X16_F16" in out["typo"]["closest"]
    assert out["search"]["results"][0]["name"].startswith("V_MFMA_F32_") and \
        "FP8" in out["search"]["results"][0]["name"]
    assert out["lds_search"]["results"][0]["name"].startswith("GLOBAL_LOAD_LDS_")
    diag = out["bad_asm"]["diagnostics"][0]
    assert not out["bad_asm"]["ok"] and (diag["line"], diag["column"]) == (1, 17), diag
    assert any("v_add_f32 (ENC_VOP2)" in form for form in diag["accepted"]), diag
    texts = [i["text"] for i in out["disasm"]["kernels"][0]["instructions"]]
    assert "v_add_f32_e32 v2, v2, v3" in texts and texts[-1] == "s_endpgm"
    assert "4 passes" in out["card"] and "hazard" in out["card"]
    assert out["target"]["lds_bytes_per_workgroup"] == 160 * 1024
    assert not out["bad_arch"]["ok"] and "gfx9999" in out["bad_arch"]["diagnostics"][0]["message"]
    assert out["given"]["ok"] and out["given"]["outputs"]["c"]["head"][:3] == [0.5, 1.5, 2.5]
    assert out["given"]["findings"] == []
    assert not out["lying"]["ok"] and out["lying"]["findings"][0]["check"] in ("mismatch", "out_of_bounds")
    assert out["submit"]["ok"], out["submit"]
    gemm = out["gemm_profile"]
    assert gemm["ok"] and gemm["model"] == "jitgemm.timing.predict" and gemm["us"] > 0 and gemm["bound"], gemm
    chosen = Selector([PrebuiltSupplier(tmp_path / "agent-kernels")]).select(
        jitgemm.GemmProblem.make(96, 64, 32, "bf16", d="fp32", layout="NN"))
    assert chosen.contract.kernel == kernel.name


def test_cheating_agent_session(mcp_sdk):
    """The cheat table: every cheat refused, each with the finding that names its trick."""
    out = asyncio.run(_session(_cheating_agent))
    table = []
    for c in cheats():
        verdict = out[c.name]
        checks = [f["check"] for f in verdict["findings"]]
        table.append((c.name, verdict["ok"], checks))
        assert not verdict["ok"], (c.name, verdict)
        assert c.check in checks, (c.name, verdict["findings"])
    lane32 = next(f for f in out["lane32"]["findings"] if f["check"] == "mismatch")
    assert "32-lane" in lane32["message"] and lane32["detail"]["lane_pattern_32"]
    wave64 = next(f for f in out["lane32"]["findings"] if f["check"] == "wave64")
    assert wave64["severity"] == "warning" and "exec_hi" in wave64["message"] and wave64["pc"] == 16
    wait = out["missing_wait"]["findings"][0]
    assert wait["detail"]["rule"] == "missing s_waitcnt" and wait["detail"]["first"]["text"].startswith("global_load")
    assert "65792" in out["lds_over_limit"]["findings"][0]["message"]
    on_random = out["zeros_only on random inputs"]
    assert not on_random["ok"] and [f["check"] for f in on_random["findings"]] == ["mismatch"]
    print("\n".join(f"{name:<16} refused={not ok} findings={checks}" for name, ok, checks in table))


def test_mcp_without_sdk_is_one_line(tmp_path):
    """Without the SDK, `jitgemm mcp` says how to install it (status 2), no traceback."""
    import subprocess

    blocker = tmp_path / "mcp.py"
    blocker.write_text("raise ImportError('mcp is blocked for this test')\n")
    env = {"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "jitgemm", "mcp"], cwd=str(Path(REPO)), env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "pip install 'jitgemm[mcp]'" in proc.stderr and "Traceback" not in proc.stderr
