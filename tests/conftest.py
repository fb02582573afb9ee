from __future__ import annotations

import pytest

from tests.oracles import require_excerpt


@pytest.fixture(scope="session")
def excerpt_path():
    """Path of AMD's verbatim CDNA3 excerpt (../shared); skips, or fails under JITGEMM_REQUIRE_ORACLES=1."""
    return require_excerpt()


@pytest.fixture(scope="session")
def excerpt_spec(excerpt_path):
    """AMD's own CDNA3 excerpt loaded through the project's loader."""
    import isa

    return isa.load_spec(excerpt_path)
