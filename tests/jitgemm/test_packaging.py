"""The wheel: one top-level import package, `jitgemm` (isa/, codegen/ and specs/ inside it), no path twice.

Other PyPI distributions own top-level `isa` and `codegen`; a wheel that claimed those names would make an
environment depend on install order (the conflict that rolled back AMD's first multi-generator integration).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections import Counter

from tests.fixtures.oracles import REPO

# repository folder -> installed package
FOLDERS = {"jitgemm": "jitgemm", "isa": "jitgemm/isa", "codegen": "jitgemm/codegen", "specs": "jitgemm/specs"}


def test_wheel_has_one_top_level_name_and_each_path_once(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("jitgemm-*.whl"))
    zf = zipfile.ZipFile(wheel)
    names = zf.namelist()
    dupes = [n for n, c in Counter(names).items() if c > 1]
    assert dupes == []
    tops = {n.split("/", 1)[0] for n in names if not n.startswith("jitgemm-")}
    assert tops == {"jitgemm"}
    top_level = [n for n in names if n.endswith("top_level.txt")]
    if top_level:
        assert zf.read(top_level[0]).decode().split() == ["jitgemm"]
    assert "jitgemm/specs/releases.yaml" in names and "jitgemm/specs/targets/gfx942.yaml" in names
    assert "jitgemm/specs/amdgpu_isa_cdna3_subset.xml" in names
    for folder, installed in FOLDERS.items():      # every sub-package of the source tree is shipped
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.relative_to(REPO / folder).as_posix()
            assert f"{installed}/{rel}" in names, f"{folder}/{rel} missing from the wheel"
    for grammar in (REPO / "isa").glob("*.lark"):
        assert f"jitgemm/isa/{grammar.name}" in names
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry and b"jitgemm = jitgemm.cli:main" in zf.read(entry[0])
    # the bundled spec ships pre-parsed (setup.py), sealed, for exactly the XML beside it
    import hashlib

    import msgpack
    from jitgemm.util import files

    xml = zf.read("jitgemm/specs/amdgpu_isa_cdna3_subset.xml")
    entry = msgpack.unpackb(files.unseal(zf.read("jitgemm/specs/amdgpu_isa_cdna3_subset.xml.parsed")),
                            strict_map_key=False)
    assert entry["sha256"] == entry["data"]["sha256"] == hashlib.sha256(xml).hexdigest()


def test_installed_wheel_compiles_first_time_without_parsing_xml(tmp_path):
    """A fresh install (no caches at all) uses the pre-parsed spec; its kernel equals the source tree's."""
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("jitgemm-*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)      # what pip install puts in site-packages
    probe = (
        "import sys, hashlib\n"
        "from jitgemm.isa.spec import sources as spec_sources\n"
        "def no_parse(*a, **k): raise AssertionError('the XML was parsed')\n"
        "spec_sources.read_xml = no_parse\n"
        "import jitgemm\n"
        "from jitgemm.codegen.gemm_ir import GemmProblem\n"
        "assert jitgemm.__file__.startswith(sys.argv[1]), jitgemm.__file__\n"
        "k = jitgemm.compile(GemmProblem.make(256, 512, 512, 'bf16', layout='NT'))\n"
        "print(k.from_cache, hashlib.sha256(k.code_object).hexdigest())\n")
    env = {"PATH": "/usr/bin:/bin", "JITGEMM_CACHE_DIR": str(tmp_path / "empty-cache"), "HOME": str(tmp_path)}
    ran = subprocess.run([sys.executable, "-c", probe, str(site)], capture_output=True, text=True, cwd=tmp_path,
                         env={**env, "PYTHONPATH": str(site)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    source, digest = ran.stdout.split()
    import hashlib

    from jitgemm.codegen.gemm_ir import GemmProblem

    import jitgemm

    ours = jitgemm.compile(GemmProblem.make(256, 512, 512, "bf16", layout="NT"), use_disk_cache=False)
    assert source == "compiled" and digest == hashlib.sha256(ours.code_object).hexdigest()


def test_source_tree_uses_only_the_jitgemm_namespace():
    """No module imports the repository folders by their bare names (`import isa`, `from codegen...`)."""
    import re

    bare = re.compile(r"^\s*(?:import|from)\s+(isa|codegen|specs)\b", re.M)
    offenders = []
    for folder in ("jitgemm", "isa", "codegen", "tests", "bench", "tools"):
        for path in (REPO / folder).rglob("*.py"):
            for m in bare.finditer(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(REPO)}: {m.group(0).strip()}")
    assert offenders == []
