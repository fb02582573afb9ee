"""The wheel: three top-level packages, specs/ inside as isa.specs, and no path installed twice."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections import Counter

from tests.oracles import REPO


def test_wheel_has_each_path_once(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("jitgemm-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    dupes = [n for n, c in Counter(names).items() if c > 1]
    assert dupes == []
    tops = {n.split("/", 1)[0] for n in names if not n.startswith("jitgemm-")}
    assert tops == {"isa", "codegen", "jitgemm"}
    assert "isa/specs/releases.yaml" in names and "isa/specs/targets/gfx942.yaml" in names
    assert "isa/specs/amdgpu_isa_cdna3_subset.xml" in names
    assert not any(n.startswith("specs/") for n in names)
    for package in ("isa", "codegen", "jitgemm"):     # every sub-package of the source tree is shipped
        for init in (REPO / package).rglob("__init__.py"):
            assert str(init.relative_to(REPO)) in names, f"{init.relative_to(REPO)} missing from the wheel"
    for grammar in (REPO / "isa").glob("*.lark"):
        assert f"isa/{grammar.name}" in names
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry and b"jitgemm = jitgemm.cli:main" in zipfile.ZipFile(wheel).read(entry[0])
