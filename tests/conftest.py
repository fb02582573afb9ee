from __future__ import annotations

import pytest

from tests.fixtures.oracles import require_excerpt


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Tests never read or write the user's ~/.cache/jitgemm (a stale kernel there could hide a bug)."""
    import os

    old = os.environ.get("JITGEMM_CACHE_DIR")
    os.environ["JITGEMM_CACHE_DIR"] = str(tmp_path_factory.mktemp("jitgemm-cache"))
    yield
    if old is None:
        os.environ.pop("JITGEMM_CACHE_DIR", None)
    else:
        os.environ["JITGEMM_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def excerpt_path():
    """Path of AMD's verbatim CDNA3 excerpt (../shared); skips when absent, or fails under CI=true."""
    return require_excerpt()


@pytest.fixture(scope="session")
def excerpt_spec(excerpt_path):
    """AMD's own CDNA3 excerpt loaded through the project's loader."""
    from jitgemm import isa
    return isa.load_spec(excerpt_path)
