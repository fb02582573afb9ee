"""`--json` output shared by the commands: one JSON document on stdout, errors as diagnostics.

A diagnostic is what a program needs to act on an error without parsing text: file, line, column, message,
and (when the error says) what would be accepted and the macro instantiation chain.
"""

from __future__ import annotations

import json
from typing import Any


def diagnostic(exc: BaseException) -> dict[str, Any]:
    """An error as a JSON-ready map (assembler errors carry their position and notes)."""
    if hasattr(exc, "to_json"):
        return exc.to_json()
    out: dict[str, Any] = {"severity": "error", "message": getattr(exc, "reason", None) or str(exc)}
    for key, attr in (("file", "file"), ("line", "line"), ("column", "col")):
        value = getattr(exc, attr, None)
        if value is not None:
            out[key] = value
    return out


def emit(document: dict[str, Any]) -> None:
    print(json.dumps(document, indent=1, default=str))


def failure(command: str, exc: BaseException, **extra: Any) -> int:
    """Print `{"ok": false, "diagnostics": [...]}` for `exc` and return the CLI's error status (2)."""
    emit({"command": command, "ok": False, **extra, "diagnostics": [diagnostic(exc)]})
    return 2
