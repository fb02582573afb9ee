"""The `.amdhsa_kernel` block (kernel descriptor fields, AMDGPUUsage "Kernel Descriptor" / "AMDGPU Assembler") and
the `.amdgpu_metadata` block (the code object's metadata text) of a `.s` file; the block's lines are read by
FileAssembler.kernel_line."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from jitgemm.isa.instruction import Data

from .macros import (
    AsmFileError,
    Loc,
)
from .sections import (
    KernelBlock,
)

if TYPE_CHECKING:
    from .file import FileAssembler


def d_kernel(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    name = rest.strip().strip('"')
    if not re.fullmatch(r"[A-Za-z_.$][\w.$]*", name):
        raise AsmFileError(".amdhsa_kernel needs the kernel's symbol name", loc, col)
    if any(k.name == name for k in a.obj.kernels):
        raise AsmFileError(f".amdhsa_kernel {name} is given twice", loc, col)
    # The descriptor goes into the current section where it stands, without aligning it (llvm-mc does not:
    # compilers write `.p2align 6` before the block, as the packet processor needs 64 bytes); its bytes are
    # computed by the code-object writer from the values.
    a.define_label(name + ".kd", loc, col)
    attrs = a.attr(name + ".kd")
    attrs.setdefault("type", "object")
    a.emit(Data((0,) * 64, 1), loc)
    a.kernel = KernelBlock(name, a.section, 0, loc)


def d_metadata(a: FileAssembler, d: str, rest: str, loc: Loc, col: int) -> None:
    if a.obj.metadata is not None:
        raise AsmFileError(".amdgpu_metadata is given twice", loc, col)
    a.meta = []
    a.obj.metadata_loc = loc
