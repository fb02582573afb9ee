"""One line on stderr, once per process, when a cache cannot be used as it should (a read-only
`JITGEMM_CACHE_DIR`, a damaged tuning database, an unwritable parsed-spec cache): caches degrade, they never stop
the work, and the user hears about it once rather than never or on every call. In `util` so that every layer (the
spec cache in `isa` as much as the tuning database) says it the same way."""

from __future__ import annotations

import sys
import threading

_said: set[str] = set()
_lock = threading.Lock()


def notice(message: str) -> bool:
    """Print `jitgemm: warning: <message>` on stderr unless this process said it already; True when printed."""
    with _lock:
        if message in _said:
            return False
        _said.add(message)
    print(f"jitgemm: warning: {message}", file=sys.stderr)
    return True
