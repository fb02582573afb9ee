"""`jitgemm readobj`: a code object as YAML; a bad file as one line naming the problem, exit status 2."""

from __future__ import annotations

import subprocess
import sys

import yaml
from jitgemm.codegen.codeobj import KernelArg, KernelDescription, write

from jitgemm.cli import main


def _object(tmp_path):
    k = KernelDescription("gemm_bf16", (0xBF810000).to_bytes(4, "little") * 2,
                          args=[KernelArg.buffer("a"), KernelArg.scalar("m")], group_segment_size=4096,
                          contract={"op": "gemm", "tile": [128, 128, 32]})
    path = tmp_path / "k.co"
    path.write_bytes(write([k, KernelDescription("other", (0xBF810000).to_bytes(4, "little"))], sramecc="on"))
    return path


def test_readobj_prints_kernels_as_yaml(tmp_path, capsys):
    assert main(["readobj", str(_object(tmp_path))]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["processor"] == "gfx942" and out["sramecc"] == "on" and out["code_object_version"] == 5
    assert out["target"] == "amdgcn-amd-amdhsa--gfx942:sramecc+"
    first = out["kernels"][0]
    assert first["name"] == "gemm_bf16" and first["code_bytes"] == 8
    assert first["descriptor"]["group_segment_fixed_size"] == 4096
    assert [a[".name"] for a in first["args"]] == ["a", "m"]
    assert first["contract"] == {"op": "gemm", "tile": [128, 128, 32]}
    assert first["metadata"][".sgpr_count"] == 6
    assert [k["name"] for k in out["kernels"]] == ["gemm_bf16", "other"]


def test_readobj_one_kernel(tmp_path, capsys):
    assert main(["readobj", str(_object(tmp_path)), "--kernel", "other"]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert [k["name"] for k in out["kernels"]] == ["other"]
    assert main(["readobj", str(_object(tmp_path)), "--kernel", "missing"]) == 2
    assert "no kernel 'missing'" in capsys.readouterr().err


def test_bad_files_give_one_line_and_exit_2(tmp_path):
    good = _object(tmp_path).read_bytes()
    cases = {
        "text.co": (b"hello, not an ELF", "bad magic"),
        "short.co": (good[:200], "runs past the end of the file"),
        "missing.co": (None, "cannot read"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        proc = subprocess.run([sys.executable, "-m", "jitgemm", "readobj", str(path)], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
        assert lines[0].startswith("jitgemm readobj: error:")
