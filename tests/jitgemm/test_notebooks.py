"""The notebooks' code cells run top to bottom (what a user opening them would do)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.oracles import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = json.loads(path.read_text())
    namespace: dict = {}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}[{i}]", "exec"), namespace)


def test_there_are_notebooks():
    assert NOTEBOOKS
