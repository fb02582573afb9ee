"""Run the notebooks' code cells top to bottom as Jupyter would (one namespace, each cell's last expression
displayed) and, with --write, store what they print and display in the .ipynb files: stdout as stream outputs,
a matplotlib figure as an inline PNG (display_data image/png), any other value as its text. The committed
notebooks then show their figures on GitHub and in a viewer without being run. tests/test_notebooks.py runs the
same `run_cells`.

    python tools/notebooks/execute.py [--write] [NOTEBOOK ...]   (default: every notebooks/*.ipynb)
"""

from __future__ import annotations

import argparse
import ast
import base64
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_cells(path: Path) -> list[tuple[str, list[object]]]:
    """(stdout, displayed values) of every code cell, run in one namespace in order; the displayed value of a
    cell is its last expression statement's value, unless None (what Jupyter shows under the cell)."""
    nb = json.loads(Path(path).read_text())
    namespace: dict = {"__name__": "__main__"}
    out = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        where = f"{Path(path).name}[{i}]"
        tree = ast.parse("".join(cell["source"]), where)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(tree, where, "exec"), namespace)
            value = eval(compile(ast.Expression(last.value), where, "eval"), namespace) if last else None
        out.append((buffer.getvalue(), [value] if value is not None else []))
    return out


def _display(value: object) -> dict:
    from matplotlib.figure import Figure

    if isinstance(value, Figure):
        png = io.BytesIO()
        value.savefig(png, format="png", dpi=72)
        return {"output_type": "display_data", "metadata": {},
                "data": {"image/png": base64.b64encode(png.getvalue()).decode("ascii"), "text/plain": [repr(value)]}}
    return {"output_type": "execute_result", "metadata": {}, "execution_count": None,
            "data": {"text/plain": repr(value).splitlines(keepends=True)}}


def write_outputs(path: Path) -> None:
    """Run the notebook (in a temporary folder, as a user's working folder) and store its outputs in it."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        try:
            results = run_cells(path)
        finally:
            os.chdir(here)
    nb = json.loads(path.read_text())
    count = 0
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for cell, (text, values) in zip(code, results, strict=True):
        count += 1
        outputs = []
        if text:
            outputs.append({"output_type": "stream", "name": "stdout", "text": text.splitlines(keepends=True)})
        for value in values:
            shown = _display(value)
            if shown["output_type"] == "execute_result":
                shown["execution_count"] = count
            outputs.append(shown)
        cell["outputs"], cell["execution_count"] = outputs, count
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--write", action="store_true", help="store the outputs in the notebooks")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    for path in args.notebooks or sorted((REPO / "notebooks").glob("*.ipynb")):
        if args.write:
            write_outputs(path.resolve())
        else:
            run_cells(path)
        print(f"{path.name}: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
