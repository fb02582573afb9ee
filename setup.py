"""Build hook: ship the bundled spec subset pre-parsed, so a fresh install's first compile parses no XML.

Everything else about the package is declared in pyproject.toml. `build_py` copies the package as usual (with the
`<spec>.xml.parsed` files the source tree ships, tools/spec_preparse/build.py), then writes them afresh beside each
bundled spec XML in the build tree, so a wheel never carries a stale one: the sealed plain-data form the
parsed-spec cache holds (jitgemm.isa.spec.cache.pack_entry), checked at load against the XML's sha256 and the
payload's own hash like any cache entry. If that cannot be made, the wheel is still complete: the loader
parses the XML on first use and caches it, as in a source checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithParsedSpecs(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return   # an editable install reads specs/ from the source tree, which has no pre-parsed files
        specs = Path(self.build_lib) / "jitgemm" / "specs"
        sys.path.insert(0, str(HERE))   # this tree's jitgemm (it finds isa/ beside itself)
        try:
            from jitgemm.isa.spec.cache import write_preparsed
        except ImportError as exc:
            self.warn(f"bundled specs not pre-parsed ({exc}); they are parsed on first use instead")
            return
        finally:
            sys.path.remove(str(HERE))
        for xml in sorted(specs.glob("*.xml")):
            try:
                out = write_preparsed(xml)
            except Exception as exc:   # never fail a build over an optimisation
                self.warn(f"{xml.name} not pre-parsed ({exc}); it is parsed on first use instead")
                continue
            self.announce(f"pre-parsed {xml.name} -> {out.name}", level=2)


# The repository folders that install under the one import name `jitgemm` (pyproject.toml's package-dir).
_ROOTS = {"jitgemm": "jitgemm", "jitgemm.util": "util", "jitgemm.isa": "isa", "jitgemm.codegen": "codegen",
          "jitgemm.specs": "specs"}


def _packages() -> list[str]:
    """Every folder holding an __init__.py under the five roots, as its installed dotted name: a new
    sub-package installs without an edit to a hand-kept list (two branches adding one no longer collide)."""
    names = []
    for name, folder in _ROOTS.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(HERE / folder).parts
            if "__pycache__" not in rel:
                names.append(".".join((name, *rel)))
    return names


setup(cmdclass={"build_py": BuildPyWithParsedSpecs}, packages=_packages())
