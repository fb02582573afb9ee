"""e_flags and target-id strings against llvm-mc: for every supported processor and xnack/sramecc setting,
llvm-mc accepts our `amdhsa.target` spelling in `.amdgcn_target` (it rejects a mismatch) and writes the same
e_flags and EI_ABIVERSION."""

from __future__ import annotations

import itertools

import pytest
from jitgemm.codegen.codeobj import TARGETS, KernelDescription, read, write
from jitgemm.codegen.codeobj.elf_reader import ElfFile
from jitgemm.codegen.codeobj.targets import decode_e_flags, target

from tests.fixtures.codeobj_support import mattr, run
from tests.fixtures.oracles import require_tool

CASES = list(itertools.product(sorted(TARGETS), ["any", "on", "off"], ["any", "on", "off"]))


@pytest.mark.parametrize("processor, xnack, sramecc", CASES)
def test_flags_and_target_id_match_llvm_mc(tmp_path, processor, xnack, sramecc):
    ours = write([KernelDescription("k", (0xBF810000).to_bytes(4, "little"))], processor, xnack=xnack,
                 sramecc=sramecc)
    co = read(ours)
    asm = tmp_path / "t.s"
    asm.write_text(f'.amdhsa_code_object_version 5\n.amdgcn_target "{co.target}"\ns_endpgm\n')
    obj = tmp_path / "t.o"
    run([require_tool("llvm-mc"), "-triple=amdgcn-amd-amdhsa", f"-mcpu={processor}", *mattr(xnack, sramecc),
         "-filetype=obj", str(asm), "-o", str(obj)])
    theirs = ElfFile(obj.read_bytes())
    assert ElfFile(ours).flags == theirs.flags
    assert ours[7:9] == obj.read_bytes()[7:9]  # OS/ABI, ABI version
    decoded = decode_e_flags(theirs.flags)
    assert (decoded.processor, decoded.xnack, decoded.sramecc) == (processor, xnack, sramecc)
    assert (co.processor, co.xnack, co.sramecc) == (processor, xnack, sramecc)


def test_unknown_machine_is_reported_not_guessed():
    flags = decode_e_flags(0x041)
    assert flags.processor is None and flags.mach == 0x41
    assert target("GFX942").name == "gfx942"
