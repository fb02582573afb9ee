"""The notebooks' code cells run top to bottom (what a user opening them would do), each cell's last expression
displayed as Jupyter displays it: a notebook that plots shows its figure (the cell ends with it, an image a
notebook renders inline), and a notebook writes its files into a temporary folder, never beside itself or in
the folder it runs from."""

from __future__ import annotations

import io
import json

import pytest

from tests.fixtures.oracles import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def run_cells(path) -> list[list[object]]:
    """Per code cell, the values Jupyter would display (tools/notebooks/execute.py, the one runner)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebook_execute", REPO / "tools" / "notebooks" / "execute.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return [values for _, values in runner.run_cells(path)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_shows_its_figures_and_writes_nothing_beside_itself(path, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    if "import torch" in path.read_text():
        from tests.fixtures.torch_support import require_torch

        require_torch()          # skipped without torch on a user's machine, a failure in CI
    monkeypatch.chdir(tmp_path)
    before = {p.name for p in path.parent.iterdir()}
    shown = run_cells(path)
    assert list(tmp_path.iterdir()) == []                              # nothing in the folder it runs from
    assert {p.name for p in path.parent.iterdir()} == before           # nor beside the notebook
    text = path.read_text()
    if ".plot(" in text:
        figures = [v for values in shown for v in values if isinstance(v, Figure)]
        assert figures, "a notebook that plots ends a cell with the figure, so Jupyter shows it"
        for fig in figures:
            png = io.BytesIO()
            fig.savefig(png, format="png")
            assert png.getvalue().startswith(b"\x89PNG") and fig.axes and all(ax.has_data() for ax in fig.axes)


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_show_their_outputs(path):
    """The committed notebooks carry what they print and show (tools/notebooks/execute.py --write), a plotting
    notebook its figure as an inline PNG, so a viewer shows them without running anything."""
    import base64

    code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert all(c.get("outputs") for c in code if "print(" in "".join(c["source"])), path.name
    images = [o["data"]["image/png"] for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert bool(images) == (".plot(" in path.read_text())
    assert all(base64.b64decode(x).startswith(b"\x89PNG") for x in images)


def test_gitignore_covers_what_the_tools_leave():
    """Files the project's tools may leave in a working folder (tuning databases and their WAL files and
    set-aside copies, notebook checkpoints, plots named after the README's examples) are ignored by git."""
    import subprocess

    names = ["tuning.db", "tuning.db-wal", "tuning.db-shm", "tuning.db.corrupt-20260101-000000-1",
             "notebooks/.ipynb_checkpoints/x.ipynb", "sweep.png", "k.co"]
    out = subprocess.run(["git", "check-ignore", *names], cwd=REPO, capture_output=True, text=True)
    assert sorted(out.stdout.split()) == sorted(names), out.stdout
