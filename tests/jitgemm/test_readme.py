"""README's Python usage blocks run as written (in a scratch folder, with a private cache)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

from tests.fixtures.aiter_corpus import AITER_WHEEL, aiter_wheel
from tests.fixtures.oracles import REPO
from tests.fixtures.torch_support import require_torch


def test_readme_python_blocks_run(tmp_path):
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    if AITER_WHEEL in text:   # the aiter example names the pinned wheel in the current folder (`pip download`)
        (tmp_path / AITER_WHEEL).symlink_to(aiter_wheel())
    for i, block in enumerate(blocks):
        if "import torch" in block and importlib.util.find_spec("torch") is None:
            require_torch()       # a user's machine without torch: skip (after the blocks above ran); CI: fail
        out = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True,
                             env=dict(os.environ, JITGEMM_CACHE_DIR=str(tmp_path / "cache")), timeout=600)
        assert out.returncode == 0, f"README python block {i} failed:\n{block}\n{out.stderr[-3000:]}"
