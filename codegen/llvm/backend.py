"""Running LLVM (through llvmlite's binding) on generated IR: parse, verify, the O3 pipeline, and the AMDGPU
backend to a relocatable object or to assembly text.

LLVM reports parser and verifier errors as exceptions, but its backend reports errors by ending the process
(`report_fatal_error`, or the default diagnostic handler's exit(1)). So the optimiser and the backend run in a
forked child: the parent gets the object bytes, or the child's error output, which is turned into an
`LLVMCompileError` pointing at the IR line involved. Where fork is not available the backend runs in-process.
Module-level inline assembly (which aborts in LLVM's AMDGPU object emission) is never generated.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import LLVMCompileError

TRIPLE = "amdgcn-amd-amdhsa"
OPT_LEVEL = 3
_lock = threading.RLock()   # llvmlite's global context is not thread-safe


@functools.cache
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


@functools.cache
def target_machine(cpu: str = "gfx942", features: str = ""):
    """llvmlite's AMDGPU target machine (PIC, O3 code generation)."""
    llvm = _llvm()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=cpu, features=features, opt=OPT_LEVEL, reloc="pic",
                                        codemodel="default")


def data_layout(cpu: str = "gfx942", features: str = "") -> str:
    return str(target_machine(cpu, features).target_data)


# --- error locations ----------------------------------------------------------------------------------------------
def _line(llir: str, number: int) -> str | None:
    lines = llir.splitlines()
    return lines[number - 1] if 1 <= number <= len(lines) else None


def locate(llir: str, message: str) -> int | None:
    """The IR line an LLVM message is about: an explicit `<string>:LINE:COL`, else the first line holding an
    instruction the message quotes, else the first call of a function (intrinsic) it names, else the
    definition of a function it names."""
    m = re.search(r"<string>:(\d+):(\d+)", message)
    if m:
        return int(m.group(1))
    lines = llir.splitlines()
    for quoted in message.splitlines():
        text = quoted.strip()
        if len(text) > 8 and ("=" in text or text.startswith(("call ", "store ", "br ", "ret "))):
            for i, line in enumerate(lines, 1):
                if line.strip() == text:
                    return i
    names = re.findall(r"[@%]?(llvm\.[A-Za-z0-9_.]+)", message)
    for name in names:
        for i, line in enumerate(lines, 1):
            if f"@{name}(" in line and not line.startswith("declare"):
                return i
    for name in re.findall(r"in function (?:@)?([A-Za-z_.$][\w.$]*)", message) + \
            re.findall(r"In function: ([\w.$]+)", message):
        for i, line in enumerate(lines, 1):
            if line.startswith("define") and f"@{name}(" in line or f'@"{name}"(' in line:
                return i
    return None


def _error(stage: str, llir: str, message: str, kernel: str | None) -> LLVMCompileError:
    line = locate(llir, message)
    text = " ".join(x.strip() for x in message.strip().splitlines() if x.strip())
    return LLVMCompileError(stage, text[:2000] or "LLVM failed without a message", line=line,
                            line_text=_line(llir, line) if line else None, kernel=kernel)


# --- the stages ---------------------------------------------------------------------------------------------------
def parse_and_verify(llir: str, kernel: str | None = None):
    """A verified llvmlite ModuleRef; LLVMCompileError with the IR line otherwise."""
    llvm = _llvm()
    with _lock:
        try:
            module = llvm.parse_assembly(llir)
        except RuntimeError as exc:
            raise _error("LLVM parse", llir, str(exc), kernel) from None
        try:
            module.verify()
        except RuntimeError as exc:
            raise _error("LLVM verifier", llir, str(exc), kernel) from None
    return module


def _optimize(module, tm) -> None:
    llvm = _llvm()
    options = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)


def _isolated(work: Callable[[], bytes]) -> bytes:
    """`work()` in a forked child; its bytes, or RuntimeError carrying the child's stderr when it failed (LLVM
    ended the process) or was killed."""
    with tempfile.TemporaryFile() as err:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's coverage is not collected
            status = 70
            try:
                faulthandler.disable()   # LLVM's abort is the expected way out; no Python stack dump
                os.close(read_fd)
                os.dup2(err.fileno(), 2)
                view = memoryview(work())
                while view:
                    view = view[os.write(write_fd, view):]
                status = 0
            except BaseException as exc:  # noqa: BLE001 - the child reports everything through stderr
                os.write(2, f"\n{type(exc).__name__}: {exc}\n".encode(errors="replace"))
            finally:
                os._exit(status)
        os.close(write_fd)
        chunks = []
        with os.fdopen(read_fd, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            detail = err.read().decode(errors="replace").strip()
            how = f"exit status {code}" if code > 0 else f"signal {-code}"
            raise RuntimeError(f"{detail}\n(LLVM ended with {how})" if detail else f"LLVM ended with {how}")
        return b"".join(chunks)


@dataclass
class BackendResult:
    data: bytes | str
    seconds: dict[str, float] = field(default_factory=dict)


def run_backend(llir: str, *, cpu: str = "gfx942", features: str = "", output: str = "object",
                kernel: str | None = None, isolate: bool = True) -> BackendResult:
    """Parse and verify `llir`, run the O3 pipeline and the AMDGPU backend; `output` is "object" (ET_REL
    bytes) or "assembly" (text). Every LLVM failure is an LLVMCompileError naming the IR line."""
    if output not in ("object", "assembly"):
        raise ValueError(f"output={output!r}; accepted: object, assembly")
    t0 = time.perf_counter()
    module = parse_and_verify(llir, kernel)
    tm = target_machine(cpu, features)
    t1 = time.perf_counter()

    def work() -> bytes:
        _optimize(module, tm)
        if output == "object":
            return bytes(tm.emit_object(module))
        return tm.emit_assembly(module).encode()

    with _lock:
        try:
            data = _isolated(work) if isolate and hasattr(os, "fork") else work()
        except RuntimeError as exc:
            raise _error("LLVM AMDGPU backend", llir, str(exc), kernel) from None
    t2 = time.perf_counter()
    result = data if output == "object" else data.decode()
    return BackendResult(result, {"llvm_parse_verify": t1 - t0, "llvm_opt_codegen": t2 - t1})
