"""A contract describes a kernel another team wrote: a hand-written fp32 GEMM in the style of AMD's aiter kernels
(arguments in 16-byte slots with pads between them, strides in bytes, an f32 alpha, raw buffer resources with
a non-zero stride field and the byte range check doing the bounds work) is described by a minimal hand-written
contract, qualifies in the emulator, is refused by `explain` for illegal shapes with the failing clause, and,
once `jitgemm.use_prebuilt` offers its folder, `jitgemm.matmul` selects it and gives numpy's answer (float64
reference; fp32 tolerance 2^-20 relative plus 1e-6 * K of the largest magnitude, jitgemm.reference).

`jitgemm contract init` writes the starting point of such a contract from the kernel's metadata.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from jitgemm.codegen.codeobj import read as read_co
from jitgemm.codegen.gemm_ir import GemmProblem

from jitgemm.cli import main as cli_main
from jitgemm.contract import Contract, ContractError
from tests.fixtures.contracts import CONTRACT, KERNEL, metadata_args
from tests.fixtures.hand_kernel import llvm_link


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    _, co = llvm_link(root, KERNEL.replace("{args}", metadata_args()))
    (root / "foreign.co").write_bytes(co)
    (root / "foreign.yaml").write_text(yaml.safe_dump(CONTRACT, sort_keys=False))
    return root


def _selector(folder):
    from jitgemm.selector import Selector
    from jitgemm.suppliers import PrebuiltSupplier

    sup = PrebuiltSupplier(folder)
    return Selector([sup], target="gfx942"), sup


def test_minimal_contract_is_accepted_and_qualifies(folder, capsys):
    selector, sup = _selector(folder)
    problem = GemmProblem.make(64, 70, 33, "fp32")
    assert [c.contract.kernel for c in sup.candidates(problem, "gfx942")] == ["foreign_sgemm"], sup.errors
    assert cli_main(["qualify", str(folder), "--cases", "2"]) == 0
    assert "ok          foreign.co:foreign_sgemm: 2 random legal problems match numpy" in capsys.readouterr().out


def test_explain_rejects_illegal_shapes_by_clause(folder):
    selector, _ = _selector(folder)
    for problem, clause in ((GemmProblem.make(64, 70, 300, "fp32"), "legality.max.k"),
                            (GemmProblem.make(63, 70, 33, "fp32"), "legality.divisible.m"),
                            (GemmProblem.make(64, 70, 33, "fp32", ldb=80), "legality.packed.b"),
                            (GemmProblem.make(64, 70, 33, "bf16"), "operation.a/b")):
        table = selector.explain(problem)
        assert "foreign_sgemm" in table and clause in table, table


@pytest.fixture
def user_folder(folder, tmp_path):
    """What a user ships: the foreign code object and its contract, alone in a folder (the assembler's
    intermediate files in `folder` have no contract)."""
    root = tmp_path / "kernels"
    root.mkdir()
    for name in ("foreign.co", "foreign.yaml"):
        (root / name).write_bytes((folder / name).read_bytes())
    return root


@pytest.mark.parametrize("lda_pad", [0, 5])
def test_matmul_through_the_contract_matches_numpy(user_folder, lda_pad, monkeypatch, tmp_path):
    """The public path: `jitgemm.use_prebuilt(folder)` offers the foreign kernel to `jitgemm.matmul`, which
    selects it (legality from the hand-written contract), packs its 16-byte-slot kernarg segment from the
    contract and runs it in the emulator; `jitgemm.last_launch()` names the kernel that ran."""
    import jitgemm
    import jitgemm.selector as selector_module
    from jitgemm.api import prepare
    from jitgemm.reference import check
    from jitgemm.selector import SelectionError

    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(selector_module, "_suppliers", [])     # a process whose only supplier is the user's folder
    monkeypatch.setattr(selector_module, "_selectors", {})
    assert jitgemm.use_prebuilt(str(user_folder)) == []        # nothing refused
    rng = np.random.default_rng(7 + lda_pad)
    m, n, k = 2 * int(rng.integers(2, 5)), int(rng.integers(65, 100)), int(rng.integers(20, 60))
    a_store = rng.standard_normal((m, k + lda_pad)).astype(np.float32)
    a = a_store[:, :k]  # lda = k + pad elements (the kernel gets lda * 4 bytes)
    b = rng.standard_normal((k, n)).astype(np.float32)
    alpha = float(rng.uniform(-2, 2))
    assert prepare(a, b, alpha=alpha).problem.lead["a"] == k + lda_pad
    d = jitgemm.matmul(a, b, alpha=alpha, backend="emu")
    record = jitgemm.last_launch()
    assert record.kernel == "foreign_sgemm"
    assert record.kernel_source == f"prebuilt:{user_folder}:foreign.co:foreign_sgemm"
    assert record.backend == "emu" and record.grid[:2] == (-(-n // 64), m)
    ref = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    check(prepare(a, b, alpha=alpha).problem, d, ref)
    with pytest.raises(SelectionError, match="legality.max.k"):   # the contract refuses K > 200: no kernel left
        jitgemm.matmul(rng.standard_normal((m, 300)).astype(np.float32),
                       rng.standard_normal((300, n)).astype(np.float32), backend="emu")


def test_kernarg_bytes_from_the_contract(folder):
    # the launch packs only the listed arguments (strides scaled to bytes), every pad byte zero
    from jitgemm.api import prepare
    from jitgemm.packing import packed_segment

    a = np.ones((4, 9), np.float32)[:, :8]
    b = np.ones((8, 16), np.float32)
    call = prepare(a, b, alpha=0.5)
    seg = packed_segment(Contract.load(CONTRACT), call.values)
    raw = seg.pack(lambda value, index: 0x1000 * (index + 1))
    words = np.frombuffer(raw, np.uint32).reshape(10, 4)
    assert (words[:, 1:][3:] == 0).all() and (words[:3, 2:] == 0).all()  # pads
    assert words[3, 0] == np.float32(0.5).view(np.uint32)
    np.testing.assert_array_equal(words[4:, 0], [4, 16, 8, 9 * 4, 16 * 4, 16 * 4])  # m n k, lda ldb ldd in bytes
    assert [int(words[i, 0]) | int(words[i, 1]) << 32 for i in range(3)] == [0x1000, 0x2000, 0x3000]


def test_contract_init_writes_a_starting_contract(folder, capsys, tmp_path):
    assert cli_main(["contract", "init", str(folder / "foreign.co")]) == 0
    text = capsys.readouterr().out
    data = yaml.safe_load(text)
    args = data["abi"]["args"]
    assert [(x["name"], x["role"], x["offset"], x["type"]) for x in args] == [
        ("D", "d", 0, "ptr"), ("A", "a", 16, "ptr"), ("B", "b", 32, "ptr"), ("alpha", "alpha", 48, "f32"),
        ("M", "m", 64, "i32"), ("N", "n", 80, "i32"), ("K", "k", 96, "i32"), ("lda", "lda", 112, "i32"),
        ("ldb", "ldb", 128, "i32"), ("ldd", "ldd", 144, "i32")]
    assert "# pad: offset 8, size 8" in text and "# EDIT" in text
    contract = Contract.load(data)  # valid as written; the user edits dtypes, grid and legality
    contract.check_metadata(read_co(
        (folder / "foreign.co").read_bytes()).kernels[0].metadata)
    assert cli_main(["contract", "init", str(tmp_path / "missing.co")]) != 0


def test_qualify_explains_a_refused_contract(tmp_path, folder, capsys):
    bad = dict(CONTRACT, abi=dict(CONTRACT["abi"], args=[dict(a) for a in CONTRACT["abi"]["args"]]))
    bad["abi"]["args"][4]["offset"] = 72  # M placed inside a pad
    (tmp_path / "foreign.co").write_bytes((folder / "foreign.co").read_bytes())
    (tmp_path / "foreign.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
    cli_main(["qualify", str(tmp_path)])
    out = capsys.readouterr().out
    assert "refused:" in out and "at abi.args.4 (M): offset 72 is not an argument of the metadata" in out
    with pytest.raises(ContractError, match=r"at abi.args.3 \(alpha\): size 2"):
        broken = dict(CONTRACT, abi=dict(CONTRACT["abi"], args=[dict(a) for a in CONTRACT["abi"]["args"]]))
        broken["abi"]["args"][3]["size"] = 2
        Contract.load(broken).check_metadata(read_co(
            (folder / "foreign.co").read_bytes()).kernels[0].metadata)


def test_f32_constant_scalar_and_whole_row_allocation():
    # a scalar role may be replaced by an f32 constant; operands are mapped as ld x rows (BLAS allocation)
    from jitgemm.api import prepare
    from jitgemm.packing import packed_segment

    data = dict(CONTRACT, abi=dict(CONTRACT["abi"], args=[dict(a) for a in CONTRACT["abi"]["args"]]),
                features={"alpha": False})
    data["abi"]["args"][3] = {"name": "alpha", "role": "const", "offset": 48, "size": 4, "type": "f32",
                              "value": 2.5}
    store = np.random.default_rng(3).standard_normal((5, 12)).astype(np.float32)
    a = store[:, :9]  # lda = 12: the allocation holds the last row's padding
    call = prepare(a, np.ones((9, 4), np.float32))
    raw = packed_segment(Contract.load(data), call.values).pack(lambda value, index: 0)
    assert np.frombuffer(raw, np.float32)[12] == np.float32(2.5)
    flat = call.values["a"]
    assert flat.size == 5 * 12 and np.shares_memory(flat, store)
    np.testing.assert_array_equal(flat.reshape(5, 12), store)
    inner = store[1:, 2:11]  # the last row's padding would run past the allocation: a zero-padded copy
    flat = prepare(inner, np.ones((9, 4), np.float32)).values["a"]
    assert flat.size == 4 * 12 and not np.shares_memory(flat, store)
    np.testing.assert_array_equal(flat.reshape(4, 12)[:, :9], inner)
    assert (flat.reshape(4, 12)[-1, 9:] == 0).all()
