"""Progress on long work (the first parse of a spec, an emulation, a qualification run), shown on a terminal only.

A user who waits seconds for a first spec parse or a 1024^3 emulation should see that something is happening;
a script or CI log should not be filled with bars. So a bar (rich) appears only when stderr is a terminal, or
when `JITGEMM_PROGRESS=always`; `JITGEMM_PROGRESS=never` (or `0`) turns it off everywhere. rich is imported
only when a bar is shown, so quiet runs pay nothing for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ENV = "JITGEMM_PROGRESS"


def enabled() -> bool:
    """Whether a bar would be shown now (see the module docstring)."""
    mode = os.environ.get(ENV, "auto").strip().lower()
    if mode in ("never", "0", "no", "off"):
        return False
    if mode in ("always", "1", "yes", "on"):
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def _noop(advance: int = 1) -> None:
    return None


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A bar (with `total`) or a spinner with elapsed time (without) for the duration of the block; yields
    `advance(n=1)`. Quiet, and free, when `enabled()` is false. Removed from the terminal when the block ends."""
    if not enabled():
        yield _noop
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    force = os.environ.get(ENV, "").strip().lower() in ("always", "1", "yes", "on")
    console = Console(file=sys.stderr, force_terminal=True if force else None)
    with Progress(*columns, console=console, transient=True) as bar:
        handle = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(handle, n)

        yield advance
