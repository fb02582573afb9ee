"""Spec load times: cold parse (XML -> objects) and cached load in a fresh process, for the bundled subset,
AMD's excerpt (when ../shared is there) and a synthetic spec the size of the official CDNA 3 file.
The baseline column is xml.etree parsing the same file and nothing else (the floor any XML loader pays).

    python bench/bench_spec_load.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic_spec import write_synthetic_spec  # noqa: E402

PROBE = """
import json, sys, time
t0 = time.perf_counter()
from jitgemm import isa
t1 = time.perf_counter()
spec = isa.load_spec(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "n": len(spec.instructions)}))
"""


def fresh_process(path: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    from jitgemm.isa.spec.data import build_spec
    from jitgemm.isa.spec.xml_reader import read_xml

    from jitgemm import isa

    tmp = Path(tempfile.mkdtemp(prefix="jitgemm-bench-"))
    env = dict(os.environ, JITGEMM_CACHE_DIR=str(tmp / "cache"))
    os.environ["JITGEMM_CACHE_DIR"] = env["JITGEMM_CACHE_DIR"]
    files = []
    try:
        files.append(("bundled subset", isa.locate_spec("gfx942").path))
    except isa.SpecError as exc:
        print(f"(bundled subset not available: {exc})")
    excerpt = HERE.parents[1] / "shared" / "isa-specs" / "excerpts" / "cdna3_excerpt.xml"
    if excerpt.is_file():
        files.append(("AMD excerpt", excerpt))
    files.append(("synthetic official-size", write_synthetic_spec(tmp / "synthetic.xml")))

    print(f"{'spec':<24} {'MB':>5} {'instr':>6} {'etree only':>11} {'cold parse':>11} {'ratio':>6} "
          f"{'cached, fresh proc':>19} {'import isa':>11}")
    for label, path in files:
        size = path.stat().st_size / 1e6
        etree = median(lambda p=path: ET.parse(p), 3)
        cold = median(lambda p=path: build_spec(read_xml(p), str(p)), 3)
        fresh_process(path, env)                       # writes the cache entry
        runs = [fresh_process(path, env) for _ in range(5)]
        cached = statistics.median(r["load"] for r in runs)
        imp = statistics.median(r["import"] for r in runs)
        print(f"{label:<24} {size:5.2f} {runs[0]['n']:6d} {etree * 1e3:9.1f}ms {cold * 1e3:9.1f}ms "
              f"{cold / etree:5.2f}x {cached * 1e3:17.1f}ms {imp * 1e3:9.1f}ms")
    print("\ngoals: bundled cached load < 50 ms; official-size cold parse < 1.5 s, cached load < 80 ms")


if __name__ == "__main__":
    main()
