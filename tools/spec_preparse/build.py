"""Write (or check) the pre-parsed form of every spec XML bundled in specs/ (`<name>.xml.parsed` beside it) and of
every target profile (`specs/targets/<name>.yaml.parsed`: a fully cold compile then imports no PyYAML, issue 31;
isa/spec/targets.py `preparsed_document` uses one only when it names the sha256 of the YAML beside it). Run it
after changing a target profile too (tests/jitgemm/test_cold_start.py fails while one is stale).

A source checkout ships these files, as the wheel does (setup.py writes them at build time), so the first
compile of a fresh clone parses no XML. The loader never trusts them: each is sealed with the sha256 of its
payload and names the sha256 of its XML (isa/spec/cache.py), so a stale or damaged file is ignored and the XML
is parsed instead. Run this after changing a bundled XML (tools/isa_subset/build.py) or the XML reader;
tests/jitgemm/test_cold_start.py fails while a committed file is stale.

    python3 tools/spec_preparse/build.py           # rewrite every stale specs/*.xml.parsed
    python3 tools/spec_preparse/build.py --check   # exit status 1 when one is stale (nothing written)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))   # this tree's jitgemm (it finds isa/ beside itself)


def stale(xml: Path) -> bool:
    """Whether `xml`'s pre-parsed file is missing, damaged, for another XML, or not what the reader makes now."""
    from jitgemm.isa.spec.cache import load_entry_at, pack_entry, preparsed_path
    from jitgemm.isa.spec.xml_reader import read_xml

    path = preparsed_path(xml)
    if load_entry_at(path, hashlib.sha256(xml.read_bytes()).hexdigest()) is None:
        return True
    return path.read_bytes() != pack_entry(read_xml(xml))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report stale files (exit status 1 if any)")
    ap.add_argument("--specs", type=Path, default=REPO / "specs", help="folder of the bundled spec XML files")
    args = ap.parse_args(argv)
    from jitgemm.isa.spec.cache import write_preparsed

    bad = [xml for xml in sorted(args.specs.glob("*.xml")) if stale(xml)]
    for xml in bad:
        if args.check:
            print(f"stale: {xml.name}.parsed (run python3 tools/spec_preparse/build.py)")
        else:
            print(f"wrote {write_preparsed(xml).relative_to(REPO)}")
    from jitgemm.isa.spec.targets import write_preparsed_profile

    stale_profiles = [y for y in sorted((args.specs / "targets").glob("*.yaml")) if profile_stale(y)]
    for yaml_path in stale_profiles:
        if args.check:
            print(f"stale: targets/{yaml_path.name}.parsed (run python3 tools/spec_preparse/build.py)")
        else:
            print(f"wrote {write_preparsed_profile(yaml_path).relative_to(REPO)}")
    bad += stale_profiles
    return 1 if bad and args.check else 0


def profile_stale(yaml_path: Path) -> bool:
    """Whether a target profile's pre-parsed file is missing, damaged, for another text, or not its document."""
    from jitgemm.isa.spec.targets import preparsed_document
    from jitgemm.util.safe_yaml import load_yaml

    text = yaml_path.read_text(encoding="utf-8")
    document = preparsed_document(text, yaml_path.with_name(yaml_path.name + ".parsed"))
    return document is None or document != load_yaml(text)


if __name__ == "__main__":
    sys.exit(main())
