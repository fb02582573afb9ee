"""`jitgemm mcp`: the ISA, the assembler, the strict emulator and the anti-cheat battery as an MCP server (stdio),
built on the official `mcp` Python SDK (`pip install 'jitgemm[mcp]'`; both the 1.x `FastMCP` and the 2.x
`MCPServer` spelling of its server class are accepted).

Every tool is one function of `jitgemm.agent_tools` and returns that function's JSON (a text content block holding
one JSON document with an `ok` field); this module only registers them. Resources: instruction cards
(`jitgemm://card/{arch}/{name}`, Markdown) and target profiles (`jitgemm://target/{arch}`, JSON).
"""

from __future__ import annotations

import json
from typing import Any

from jitgemm import agent_tools as tools

INSTRUCTIONS = """\
jitgemm gives you AMD's machine-readable ISA (gfx942 = MI300, gfx950 = MI355) and a strict emulator.
Write kernels in LLVM AMDGPU assembly: either a whole .s file, or a snippet (instructions only) that is
wrapped into kernel `kernel`: s[0:1] kernarg pointer, s2/s3/s4 workgroup id x/y/z, v0 packed work-item ids
(x bits 9:0, y 19:10, z 29:20); kernargs are the case's args in order (buffers: 8-byte pointers, scalars by value).
Waves are 64 lanes. A case is {"grid": [..], "block": [..], "args": [{"name", "dtype", "shape"|"value",
"output"?, "fill"?}], "reference": "numpy expression over the arg names"}.
Loop: isa_search / isa_lookup -> assemble -> run -> qualify (the anti-cheat battery) -> profile -> submit."""


def build_server():
    """The MCP server object with every tool and resource registered (ImportError when `mcp` is missing)."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp >= 2
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x

    server = Server("jitgemm", instructions=INSTRUCTIONS)

    def reply(call, *args) -> str:
        """The tool's JSON; an error the tool did not turn into a diagnostic still comes back as `ok: false`
        (with the exception's type), so one bad call never takes the session down."""
        try:
            result = call(*args)
        except Exception as exc:  # noqa: BLE001 - the agent gets every failure as data
            result = {"ok": False, "diagnostics": [{"severity": "error", "message": f"{type(exc).__name__}: {exc}",
                                                    "internal": True}]}
        return json.dumps(result, default=str)

    @server.tool()
    def isa_lookup(name: str, arch: str = "gfx942") -> str:
        """An instruction's encodings, operands (types, widths, bit fields), flags and the spec's description;
        the closest names for a typo."""
        return reply(tools.isa_lookup, name, arch)

    @server.tool()
    def isa_search(query: str, arch: str = "gfx942", limit: int = 15) -> str:
        """Instructions by what they do, over names, groups and descriptions ("fp8 matrix multiply", "load to
        LDS")."""
        return reply(tools.isa_search, query, arch, limit)

    @server.tool()
    def assemble(source: str, arch: str | None = None, args: list[dict[str, Any]] | None = None) -> str:
        """A .s file's text or a snippet -> code object (base64); file:line:col diagnostics and the accepted
        forms of a line that does not assemble. `args` (a snippet's kernel arguments) as in a case."""
        return reply(tools.assemble, source, arch, args)

    @server.tool()
    def disassemble(code_object_base64: str | None = None, path: str | None = None) -> str:
        """Every kernel of a code object (base64 or a file path): instructions with PCs, LDS, scratch, args."""
        return reply(tools.disassemble, code_object_base64, path)

    @server.tool()
    def run(case: dict[str, Any], source: str | None = None, code_object_base64: str | None = None,
            kernel: str | None = None, arch: str | None = None, strict: bool = True, schedule: str = "lockstep",
            seed: int = 0) -> str:
        """Run the kernel on the case's generated inputs in the emulator (strict: waits, barriers, hazards) and
        compare with the case's numpy reference: max error, findings with PCs."""
        return reply(tools.run, case, source, code_object_base64, kernel, arch, strict, schedule, seed)

    @server.tool()
    def qualify(case: dict[str, Any] | None = None, source: str | None = None, code_object_base64: str | None = None,
                kernel: str | None = None, arch: str | None = None,
                contract: dict[str, Any] | str | None = None) -> str:
        """The anti-cheat battery: target limits (LDS, VGPR/AGPR, SGPR, scratch), strict mode, poisoned
        outputs/LDS/registers, three random schedules bit-identical, out-of-bounds accesses, two random input
        sets against the reference. A GEMM kernel may give its jitgemm contract instead of a case (random legal
        problems become its cases). ok=false lists every finding."""
        return reply(tools.qualify, case, source, code_object_base64, kernel, arch, contract)

    @server.tool()
    def profile(case: dict[str, Any] | None = None, source: str | None = None, code_object_base64: str | None = None,
                kernel: str | None = None, arch: str | None = None, contract: dict[str, Any] | str | None = None,
                problem: dict[str, Any] | None = None, device: str | None = None) -> str:
        """Modelled time (us) and counters: a GEMM kernel with its contract and a problem {m, n, k, a, ...} through
        jitgemm.timing.predict (bound, roofline, counters, stalls); other kernels on their case. `model` names the
        model used."""
        return reply(tools.profile, case, source, code_object_base64, kernel, arch, contract, problem, device)

    @server.tool()
    def submit(contract: dict[str, Any] | str, source: str | None = None, code_object_base64: str | None = None,
               folder: str | None = None, db: str | None = None) -> str:
        """Qualify a GEMM kernel against its jitgemm contract (specs/contract.schema.yaml) and, when it passes,
        write it into a local supplier folder and the tuning database so jitgemm.matmul can pick it."""
        return reply(tools.submit, contract, source, code_object_base64, folder, db)

    @server.tool()
    def agent_task(index: int | None = None) -> str:
        """The agent-eval tasks (all, or one by index): statement, case (launch, args, reference), target."""
        from jitgemm import agent_eval

        return reply(agent_eval.describe, index)

    @server.resource("jitgemm://card/{arch}/{name}", mime_type="text/markdown")
    def instruction_card(arch: str, name: str) -> str:
        """An instruction card: AMD's prose, operand types, timing class, hazards."""
        from jitgemm import spec_cards

        try:
            return spec_cards.card_markdown(spec_cards.cards(arch, [name])[0])
        except KeyError as exc:
            return f"error: {exc.args[0]}\n"

    @server.resource("jitgemm://target/{arch}", mime_type="application/json")
    def target_profile(arch: str) -> str:
        """A target profile (specs/targets/<arch>.yaml): wave size, registers, LDS, clocks, rates, hazards."""
        from jitgemm import isa

        return json.dumps(isa.target_profile(arch).values, default=str)

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server().run("stdio")
