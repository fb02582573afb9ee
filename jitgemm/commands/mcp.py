"""`jitgemm mcp`: serve the agent tools over MCP on stdin/stdout (jitgemm/mcp_server.py), and `jitgemm agent-eval`:
score kernels for the twelve kernel-writing tasks (jitgemm/agent_eval.py)."""

from __future__ import annotations

import argparse

from jitgemm.cli import CliError


def _mcp(args: argparse.Namespace) -> int:
    from jitgemm.mcp_server import build_server

    try:
        server = build_server()
    except ImportError as exc:
        raise CliError(f"the MCP server needs the official MCP SDK ({exc}); install it with: "
                       "pip install 'jitgemm[mcp]'") from None
    server.run("stdio")
    return 0


def _agent_eval(args: argparse.Namespace) -> int:
    from jitgemm import agent_eval

    return agent_eval.main(args)


def register(sub) -> None:
    p = sub.add_parser("mcp", help="serve the ISA, assembler, strict emulator and anti-cheat battery to an agent "
                       "over MCP (stdio)",
                       description="An MCP server on stdin/stdout (the official `mcp` SDK: pip install "
                       "'jitgemm[mcp]'): tools isa_lookup, isa_search, assemble, disassemble, run, qualify, profile, "
                       "submit, agent_task; resources jitgemm://card/{arch}/{name}, jitgemm://target/{arch}.")
    p.set_defaults(func=_mcp)

    e = sub.add_parser("agent-eval", help="the twelve kernel-writing tasks: list them, or score a folder of "
                       "solutions with the anti-cheat battery and the timing model")
    e.add_argument("folder", nargs="?", help="solutions: <folder>/<task name>.s for each task attempted")
    e.add_argument("--list", action="store_true", help="list the tasks (statement, target, case)")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=_agent_eval)
