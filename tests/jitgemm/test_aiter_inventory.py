"""The aiter inventory (jitgemm.aiter, issue 24): every GEMM code object of the pinned amd-aiter wheel is admitted
with a contract made from its family's data file (specs/aiter/families/*.yaml) and listing CSV, or listed with
the reason; the tuning tables read as measured rows labelled by library and device."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from jitgemm.aiter import device_of, inventory
from jitgemm.aiter.families import contract_data, families, load_family
from jitgemm.aiter.reader import _no_pads
from jitgemm.contract import Contract, ContractError
from tests.fixtures.aiter_corpus import aiter_root, aiter_wheel


@pytest.fixture(scope="module")
def inv():
    return inventory(aiter_wheel())


def test_every_listed_gemm_kernel_is_admitted_or_refused_with_a_reason(inv):
    admitted = Counter((k.arch, k.family) for k in inv.kernels if k.admitted)
    assert admitted == {("gfx942", "bf16gemm_outf32"): 4, ("gfx950", "bf16gemm_outf32"): 4,
                        ("gfx950", "f4gemm_bf16_per1x32Fp4"): 35, ("gfx942", "i8gemm_bf16_perTokenI8"): 2,
                        ("gfx942", "gemm_a8w8_m128"): 2, ("gfx942", "flatmm_a8w8_blockscale"): 1,
                        ("gfx950", "f8_block_scale_mi350"): 4}
    flatmm = inv.kernel("gfx942/flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32").contract.data["operation"]
    assert (flatmm["b_preshuffle"], flatmm["scale_mode"], flatmm["a_scale_order"], flatmm["d"]) == \
        ("16x16", "block", "col", "fp16")
    mi350 = inv.kernel("gfx950/f8_block_scale_mi350_x64").contract
    assert (mi350.data["operation"]["a"], mi350.data["operation"]["b_scale_order"]) == ("fp8_e4m3", "row")
    assert mi350.grid(100, 512, 512) == (2, 2, 1)                  # host: gdx = ceil(n / 256), gdy = ceil(m / TileM)
    i8 = inv.kernel("gfx942/I8gemm_bf16_perTokenI8_BpreShuffle_128x128").contract.data["operation"]
    assert (i8["scale_mode"], i8["b_preshuffle"], i8["d"]) == ("rowcol", "32x16", "bf16")
    for k in inv.refused():
        assert k.refusal, k.label
    # every GEMM object of the wheel has a family description now; one without would be listed, never guessed
    assert [k.label for k in inv.kernels if k.family is None] == []
    f4 = [k for k in inv.admitted("gfx950") if k.family == "f4gemm_bf16_per1x32Fp4"]
    assert sum(k.split_k for k in f4) == 2 and sum(not k.preshuffle for k in f4) == 1


def test_an_object_no_family_covers_is_listed_with_the_reason(monkeypatch):
    """Without its family file the mi350 objects are GEMM objects of the release (release.yaml's patterns) that
    nothing describes: listed with the reason, never guessed."""
    from jitgemm.aiter import reader
    from jitgemm.aiter.source import AiterSource

    fams = tuple(f for f in families() if f.name != "f8_block_scale_mi350")
    monkeypatch.setattr(reader, "families", lambda: fams)
    kernels = reader._read_kernels(AiterSource(str(aiter_wheel())), "test")
    uncovered = sorted(k.label for k in kernels if k.family is None)
    assert uncovered == [f"gfx950/f8_block_scale_mi350_x{w}" for w in (128, 32, 64, 96)]
    assert all("no family description" in k.refusal for k in kernels if k.family is None)


def test_the_contract_follows_the_listing_row(inv):
    k = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256")
    c = k.contract
    assert c.kernel == "_ZN5aiter42f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256E"
    assert c.data["operation"]["b_preshuffle"] == "16x16" and c.data["legality"]["divisible"]["n"] == 32
    assert c.grid(300, 512, 1024, split_k=4) == (2, 2, 4)          # gdz = ceil(K / roundup(K/4, 256))
    assert c.grid(300, 512, 1024) == (2, 2, 1)
    assert c.split_refusal(1024, 3) and c.split_refusal(1024, 32) and not c.split_refusal(1024, 4)
    plain = inv.kernel("gfx950/f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256").contract
    assert plain.data["operation"]["b_preshuffle"] == "none" and plain.split_k is None
    assert "log2_k_split" not in [a["name"] for a in plain.args]
    bf16 = inv.kernel("gfx942/bf16gemm_outf32_tn_96x64_pf3").contract
    assert bf16.grid(100, 128, 640, split_k=5) == (2, 2, 5)
    assert bf16.data["abi"]["strides_in"] == "bytes"


def test_a_wrong_fact_in_a_family_file_is_refused_against_the_object(inv):
    """The family data is checked against each code object's own metadata: an argument moved off its 16-byte slot
    is refused, not believed."""
    fam = next(f for f in families() if f.name == "bf16gemm_outf32")
    data = copy.deepcopy(dict(fam.data))
    data["abi"]["args"][4]["offset"] = 84          # beta moved inside alpha's pad
    broken = load_family(__import__("yaml").safe_dump(data), "broken.yaml")
    k = inv.kernel("gfx942/bf16gemm_outf32_tn_32x64_pf3")
    row = {"name": k.name, "file": "x.co", "tile_m": 32, "tile_n": 64}
    from jitgemm.codegen.codeobj import read

    meta = next(x for x in read(k.code).kernels if x.name == k.name).metadata
    contract = Contract.load(contract_data(broken, "gfx942", row, k.code_sha256, "test"), "broken")
    contract.check_metadata(meta)          # offset 84 is an argument of the metadata: a pad
    with pytest.raises(ContractError, match="offset 84 lands on a pad"):
        _no_pads(contract, meta)


def test_inventory_reads_the_wheel_and_the_extracted_tree_alike(inv):
    tree = inventory(aiter_root())
    assert sorted(k.label for k in tree.admitted()) == sorted(k.label for k in inv.admitted())
    assert tree.tuned_rows == [] or len(tree.tuned_rows) == len(inv.tuned_rows)


def test_tuned_rows_name_device_library_and_family(inv):
    rows = inv.tuned_rows
    assert len(rows) > 4000
    asm = [r for r in rows if r.asm]
    by_family = Counter(r.family for r in asm)
    assert by_family == {"f4gemm_bf16_per1x32Fp4": 796, "i8gemm_bf16_perTokenI8": 35, "gemm_a8w8_m128": 34,
                         "bf16gemm_outf32": 8}
    assert {r.library for r in rows if not r.asm} >= {"ck"}
    bf16 = next(r for r in rows if r.table == "bf16_tuned_gemm.csv" and r.m == 150)
    assert (bf16.cu_num, bf16.device, bf16.arch, bf16.split_k, bf16.us) == (80, "MI308X", "gfx942", 5, 11.7)
    assert bf16.problem is not None and bf16.problem.d.name == "fp32"
    assert device_of(256) == ("MI355X", "gfx950") and device_of(304)[1] == "gfx942" and device_of(7) is None
    # asm_a8w8_gemm.csv has no kernel column: the family's rule names the object by its log2 split
    a8 = [r for r in rows if r.table == "asm_a8w8_gemm.csv"]
    assert {r.kernel_label for r in a8} == {"gfx942/gemm_a8w8_m128_noSplitK", "gfx942/gemm_a8w8_m128_splitK"}
    assert all((r.split_k == 1) == (r.kernel_label.endswith("noSplitK")) for r in a8)
    # and no cu_num column: the target is its kernels' (gfx942), the device is stated as unknown, never guessed
    assert all(r.arch == "gfx942" and r.device is None and r.cu_num is None and "no cu_num" in r.caveat for r in a8)
    # 1483.54 us is line 14's (M=16384 N=1280 K=8192) and recurs on ten rows of 340x less work: copies, labelled,
    # not imported as measurements (so they cannot rank a kernel); the first row with the time stays a measurement
    copied = sorted(r.line for r in a8 if not r.measured)
    assert copied == [5, 6, *range(25, 36)] and next(r for r in a8 if r.line == 14).measured
    assert all("time copied" in r.caveat for r in a8 if not r.measured)
    from jitgemm.aiter.tuned import db_rows

    origins = {row["origin"].rsplit(" ", 1)[1] for row in db_rows(inv)}
    assert "asm_a8w8_gemm.csv:14" in origins and "asm_a8w8_gemm.csv:25" not in origins
    assert "13 rows repeat" in inv.tables["asm_a8w8_gemm.csv"]
    assert "tuned_fmoe.csv" in inv.tables and "not a GEMM" in inv.tables["tuned_fmoe.csv"]
    # an asm int8 winner's problem has B as its kernel reads it (32x16; CK's rows of the same table 16x16), so the
    # selector can offer the measured winner: every I8gemm row is legal for its kernel
    i8 = [r for r in asm if r.family == "i8gemm_bf16_perTokenI8"]
    assert i8 and all(r.problem.b_preshuffle == "32x16" for r in i8)
    assert all(inv.kernel(r.kernel_label).contract.admits(r.problem)[0] for r in i8)
    ck = next(r for r in rows if r.table == "a8w8_bpreshuffle_tuned_gemm.csv" and not r.asm and r.problem)
    assert ck.problem.b_preshuffle == "16x16"


@pytest.mark.parametrize("argv, message", [
    (["aiter", "import", "/nonexistent/aiter.whl"], "no such file or folder"),
    (["inventory", "--arch", "gfx999"], "unknown target"),
])
def test_bad_input_is_one_line_and_status_2(argv, message, capsys):
    from jitgemm.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_zip_that_is_not_a_wheel_is_refused(tmp_path, capsys):
    from jitgemm.cli import main

    bad = tmp_path / "x.whl"
    bad.write_bytes(b"not a zip")
    assert main(["aiter", "import", str(bad)]) == 2
    assert "not an aiter wheel" in capsys.readouterr().err
