"""Access to the outside authorities the tests check against (LLVM tools, Triton, AMD's spec excerpts).

A missing oracle skips the test with the reason on a user's machine; under JITGEMM_REQUIRE_ORACLES=1 (set
by .ci/run) it fails instead, so CI can never go green by skipping the proof.

AMD's verbatim spec excerpts are different: they live in ../shared/isa-specs, outside the repository (never
committed), so a user's plain clone has none even when every tool is installed, and `bash .ci/run` there must
pass. They are required when the environment says it is CI (`CI=true`, as CI services set it); elsewhere the
tests that read them skip with the reason.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest

LLVM_VERSION = 22
REPO = Path(__file__).resolve().parents[1]
# ../shared beside the clone; JITGEMM_SHARED_DIR names it elsewhere (a git worktree sits one folder deeper)
SHARED = Path(os.environ.get("JITGEMM_SHARED_DIR") or REPO.parent / "shared")
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


def excerpts_required() -> bool:
    """Whether a missing ../shared excerpt fails (CI) or skips (a user's clone); see the module docstring."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


CDNA4_EXCERPT = SHARED / "isa-specs" / "excerpts" / "cdna4_excerpt.xml"


def require_shared(path: Path, what: str) -> Path:
    """A file of AMD's from ../shared (never copied into the repo): skipped with the reason in a user's clone,
    a failure under CI=true (see the module docstring)."""
    if not path.is_file():
        reason = f"{what} not found at {path} (AMD's files live in ../shared/isa-specs, outside the repository)"
        if excerpts_required():
            pytest.fail(f"{reason}; CI=true: the excerpt tests must run")
        pytest.skip(reason)
    return path


def require_cdna4_excerpt() -> Path:
    """AMD's verbatim CDNA4 excerpt from ../shared."""
    return require_shared(CDNA4_EXCERPT, "AMD's CDNA4 excerpt")


def require_excerpt() -> Path:
    """AMD's verbatim CDNA3 excerpt from ../shared."""
    return require_shared(EXCERPT, "AMD's CDNA3 excerpt")
