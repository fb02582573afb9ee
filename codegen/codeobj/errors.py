"""The one error type of the code-object package.

Every malformed input, bad kernel description or unsupported relocation ends as a `CodeObjectError` whose
message names what was wrong and where (section, kernel, field), so callers never see an IndexError or a
struct.error leak out of an ELF parse.
"""

from __future__ import annotations


class CodeObjectError(ValueError):
    """A code object (or a kernel description meant for one) is malformed or unsupported."""
