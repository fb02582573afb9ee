"""Access to the outside authorities the tests check against (LLVM tools, Triton).

A missing oracle skips the test with the reason on a user's machine; under JITGEMM_REQUIRE_ORACLES=1 (set
by .ci/run) it fails instead, so CI can never go green by skipping the proof.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest

LLVM_VERSION = 22
REPO = Path(__file__).resolve().parents[1]
# ../shared beside the checkout; a worktree under <root>/wt/<name> finds <root>/shared
SHARED = next((p / "shared" for p in (REPO.parent, REPO.parents[1]) if (p / "shared").is_dir()), REPO.parent / "shared")
EXCERPT = SHARED / "isa-specs" / "excerpts" / "cdna3_excerpt.xml"


def oracles_required() -> bool:
    return os.environ.get("JITGEMM_REQUIRE_ORACLES", "") not in ("", "0")


def _missing(reason: str):
    if oracles_required():
        pytest.fail(f"{reason} (JITGEMM_REQUIRE_ORACLES=1: a missing oracle is a failure)")
    pytest.skip(reason)


def find_tool(name: str) -> str | None:
    """Path of an LLVM tool (`llvm-mc` -> llvm-mc-22 or llvm-mc), or None."""
    return shutil.which(f"{name}-{LLVM_VERSION}") or shutil.which(name)


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        _missing(f"{name}-{LLVM_VERSION} not found (apt-get install llvm-{LLVM_VERSION} lld-{LLVM_VERSION} "
                 f"clang-{LLVM_VERSION})")
    return path  # type: ignore[return-value]


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        _missing(f"Python module {name} not importable ({exc}); pip install {name}")


CDNA4_EXCERPT = SHARED / "isa-specs" / "excerpts" / "cdna4_excerpt.xml"


def require_cdna4_excerpt() -> Path:
    """AMD's verbatim CDNA4 excerpt from ../shared (never copied into the repo)."""
    if not CDNA4_EXCERPT.is_file():
        _missing(f"AMD's CDNA4 excerpt not found at {CDNA4_EXCERPT}")
    return CDNA4_EXCERPT


def require_excerpt() -> Path:
    """AMD's verbatim CDNA3 excerpt from ../shared (never copied into the repo)."""
    if not EXCERPT.is_file():
        _missing(f"AMD's CDNA3 excerpt not found at {EXCERPT}")
    return EXCERPT
