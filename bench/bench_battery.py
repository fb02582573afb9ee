"""The anti-cheat battery's cost beside one plain emulated run, per agent-eval task, and an MCP round trip (the SDK's
client over stdio to `python -m jitgemm mcp`) beside the same tool called in-process.

    python bench/bench_battery.py            # all twelve tasks' reference solutions (tests/fixtures/agents/correct)

The battery runs the kernel five times (strict lockstep with poison, three random schedules, a second input set)
plus the limit checks; plain is one non-strict lockstep run. Times are wall-clock on this machine, best of 3.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from jitgemm import agent_eval, agent_tools, battery  # noqa: E402

SOLUTIONS = REPO / "tests" / "fixtures" / "agents" / "correct"


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'task':<18} {'plain run ms':>12} {'battery ms':>11} {'ratio':>6}")
    for t in agent_eval.TASKS:
        case = battery.Case.from_json(t.case)
        blob, _ = agent_tools.assemble_text((SOLUTIONS / f"{t.name}.s").read_text(), t.arch, case.args)
        battery.battery(blob, None, case)          # warm: decode, spec, program cache
        plain = best(lambda blob=blob, case=case: battery.run_case(blob, None, case, seed=1, strict=False,
                                                                   poison=False, compare=False))
        full = best(lambda blob=blob, case=case: battery.battery(blob, None, case))
        print(f"{t.name:<18} {plain * 1e3:>12.1f} {full * 1e3:>11.1f} {full / plain:>6.1f}")
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("MCP round trip: skipped (pip install 'jitgemm[mcp]')")
        return
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session() -> tuple[float, float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "jitgemm", "mcp"], cwd=str(REPO))
        t0 = time.perf_counter()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await s.call_tool("isa_lookup", {"name": "s_nop"})
                start = time.perf_counter() - t0
                t1 = time.perf_counter()
                for _ in range(20):
                    json.loads((await s.call_tool("isa_lookup", {"name": "v_mfma_f32_32x32x8_bf16"})).content[0].text)
                return start, (time.perf_counter() - t1) / 20

    start, per_call = asyncio.run(session())
    direct = best(lambda: agent_tools.isa_lookup("v_mfma_f32_32x32x8_bf16"), 20)
    print(f"MCP server start + first call {start * 1e3:.0f} ms; isa_lookup over MCP {per_call * 1e3:.2f} ms "
          f"vs in-process {direct * 1e3:.2f} ms (ratio {per_call / direct:.1f})")


if __name__ == "__main__":
    main()
