"""How fast code objects are written, read and linked, beside LLVM's tools doing the same job.

    python bench/bench_codeobj.py [--repeat N]

Rows:
  write  codegen.codeobj.write  vs  llvm-mc -filetype=obj + ld.lld -shared on the equivalent assembly
  read   codegen.codeobj.read   vs  llvm-readelf -h -l -S --notes --dyn-syms  (and pyelftools, in process)
  link   codegen.codeobj.link   vs  ld.lld -shared on the same llvmlite object
The LLVM columns include process start-up: that is what a JIT pays when it shells out to them.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jitgemm.codegen.codeobj import KernelArg, KernelDescription, link, read, write  # noqa: E402
from jitgemm.codegen.codeobj.metadata import STANDARD_HIDDEN_ARGS  # noqa: E402

from tests.fixtures.codeobj_support import SCALE_KERNEL  # noqa: E402


def tool(name: str) -> str | None:
    return shutil.which(f"{name}-22") or shutil.which(name)


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def kernels(count: int, code_dwords: int) -> list[KernelDescription]:
    code = (0xBF800000).to_bytes(4, "little") * (code_dwords - 1) + (0xBF810000).to_bytes(4, "little")
    return [KernelDescription(f"gemm_{i}", code, args=[KernelArg.buffer("a"), KernelArg.buffer("b"),
                                                      KernelArg.buffer("c"), KernelArg.scalar("m"),
                                                      KernelArg.scalar("n"), KernelArg.scalar("k")],
                              hidden_args=STANDARD_HIDDEN_ARGS, group_segment_size=32768, next_free_vgpr=128,
                              next_free_agpr=128, next_free_sgpr=64, workgroup_id=(True, True, False),
                              contract={"op": "gemm", "tile": [256, 256, 64], "dtypes": ["bf16", "bf16", "f32"]})
            for i in range(count)]


SCALE_IR = """target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()""" + SCALE_KERNEL + """!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""


def llvmlite_object() -> bytes:
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple("amdgcn-amd-amdhsa").create_target_machine(cpu="gfx942", opt=2, reloc="pic")
    module = llvm.parse_assembly(SCALE_IR)
    return machine.emit_object(module)


def pyelftools_read(data: bytes) -> None:
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    list(elf.get_section_by_name(".dynsym").iter_symbols())
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_NOTE":
            list(seg.iter_notes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from tests.fixtures.codeobj_support import llvm_source

    mc, lld, readelf = tool("llvm-mc"), tool("ld.lld"), tool("llvm-readelf")
    rows: list[tuple[str, float, str, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for count, dwords in ((1, 256), (3, 4096)):
            ks = kernels(count, dwords)
            ours = write(ks)
            label = f"{count} kernel(s), {dwords * 4 // 1024} KiB code each"
            asm = tmp / f"k{count}.s"
            asm.write_text(llvm_source(ks, read(ours).metadata))
            obj, co = tmp / f"k{count}.o", tmp / f"k{count}.co"

            def llvm_write(asm=asm, obj=obj, co=co) -> None:
                subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", str(asm), "-o",
                                str(obj)], check=True)
                subprocess.run([lld, "-shared", str(obj), "-o", str(co)], check=True)

            rows.append((f"write ({label})", median_ms(lambda ks=ks: write(ks), args.repeat),
                         "llvm-mc + ld.lld", median_ms(llvm_write, args.repeat) if mc and lld else None))
            path = tmp / f"ours{count}.co"
            path.write_bytes(ours)

            def llvm_read(path=path) -> None:
                subprocess.run([readelf, "-h", "-l", "-S", "--notes", "--dyn-syms", str(path)], check=True,
                               stdout=subprocess.DEVNULL)

            ours_read = median_ms(lambda ours=ours: read(ours), args.repeat)
            rows.append((f"read ({label})", ours_read, "llvm-readelf", median_ms(llvm_read, args.repeat)
                         if readelf else None))
            rows.append((f"read ({label})", ours_read, "pyelftools (syms+notes)",
                         median_ms(lambda ours=ours: pyelftools_read(ours), args.repeat)))
        obj_bytes = llvmlite_object()
        obj = tmp / "scale.o"
        obj.write_bytes(obj_bytes)

        def lld_link() -> None:
            subprocess.run([lld, "-shared", str(obj), "-o", str(tmp / "scale.co")], check=True)

        rows.append(("link (llvmlite object, 1 kernel)", median_ms(lambda: link(obj_bytes), args.repeat),
                     "ld.lld -shared", median_ms(lld_link, args.repeat) if lld else None))

    print(f"{'operation':44} {'ours ms':>9}  {'competitor':26} {'theirs ms':>9}  {'theirs/ours':>11}")
    for name, ours_ms, other, theirs_ms in rows:
        theirs = f"{theirs_ms:9.3f}" if theirs_ms is not None else "  missing"
        ratio = f"{theirs_ms / ours_ms:10.1f}x" if theirs_ms is not None else ""
        print(f"{name:44} {ours_ms:9.3f}  {other:26} {theirs}  {ratio:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
