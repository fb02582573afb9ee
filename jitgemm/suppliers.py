"""Kernel suppliers for the selector: each offers candidates for a problem, described by contracts.

A candidate's contract is all the selector reads to decide legality; its code object is produced only for
the winner (generators compile on demand), so offering a candidate is cheap.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jitgemm import isa
from jitgemm.codegen.gemm_config import scalar_config
from jitgemm.codegen.gemm_contract import gemm_contract
from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem, IRError
from jitgemm.codegen.generator import generator, target_id
from jitgemm.codegen.kernel_abi import LoweredKernel
from jitgemm.util.files import read_bounded

from .contract import Contract, ContractError

MAX_CODE_OBJECT_BYTES = 512 << 20  # a prebuilt folder's code objects and assembly files (as the CLI's inputs)
MAX_CONTRACT_BYTES = 1 << 20  # a sidecar contract is a few KiB


@dataclass
class Candidate:
    """One kernel a supplier can provide. `load()` returns (code object bytes, kernel name)."""

    supplier: str
    label: str
    contract: Contract
    load: Callable[[], tuple[bytes, str]] = field(repr=False)
    config: GemmConfig | None = None
    fallback: bool = False

    @property
    def key(self) -> str:
        """Stable identity of this kernel *with this contract* (qualification judges the pair), for ranking
        ties, tuning and quarantine."""
        text = json.dumps(self.contract.data, sort_keys=True, default=str)
        return hashlib.sha256(f"{self.supplier}\n{self.label}\n{text}".encode()).hexdigest()


class Refusal(Exception):
    """A supplier has no kernel for this kind of problem, and says why (e.g. a generator that does not lower
    block-scaled GEMMs): the selector shows it as a rejected row with the reason."""


class Supplier:
    name = "supplier"

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        raise NotImplementedError


class GeneratorSupplier(Supplier):
    """One of the project's generators as a supplier (one instance per generator): its choice of config for the
    problem, with `variants` a few other tiles, and the fallback (scalar loads in a tile that fits the register
    budget: any shape, leading dimension and alignment). Each candidate's contract comes from the generator's
    plan and its own planned resources; the kernel is compiled only when chosen."""

    def __init__(self, option: str, variants: bool = False) -> None:
        self.option = option
        self.variants = variants

    @property
    def name(self) -> str:   # asked of the generator when needed: a cached choice never imports LLVM's generator
        return generator(self.option).name

    def available(self) -> bool:
        return generator(self.option).available()[0]

    def configs(self, problem: GemmProblem, target: str) -> list[tuple[str, GemmConfig, bool]]:
        gen = generator(self.option)
        spec = isa.load_spec(target)
        profile = isa.target_profile(target)
        base = gen.choose_config(problem, spec, profile)
        out = [("default", base, False)]
        if self.variants:
            # 256x256: big wave tiles halve the L2-to-CU bytes per flop of kernels whose waves load their own
            # fragments (the MX plan); jitgemm.timing ranks it (MXFP4 8192^3 on MI355X: 442 -> 291 us predicted)
            for tm, tn, wm, wn in ((256, 256, 2, 2), (128, 128, 2, 2), (64, 64, 2, 2), (32, 32, 1, 1)):
                cfg = replace(base, tile_m=tm, tile_n=tn, waves_m=wm, waves_n=wn)
                if cfg == base:
                    continue
                try:
                    gen.plan(problem, cfg, spec, profile)
                except IRError:
                    continue
                out.append((f"{tm}x{tn}", cfg, False))
            try:    # block-scaled problems have no scalar-load fallback (their plan loads straight to registers)
                out.append(("fallback", scalar_config(problem, base, spec, profile, gen.accept), True))
            except IRError:
                if not problem.scaled:
                    raise
        return out

    def planned_contract(self, problem: GemmProblem, config: GemmConfig, target: str) -> dict:
        """The contract the generator's kernel will carry, known before compiling (legality needs no binary);
        the register figures are the generator's plan of them (tile.registers: planned)."""
        gen = generator(self.option)
        spec, profile = isa.load_spec(target), isa.target_profile(target)
        cls = problem.kernel_class()
        plan = gen.plan(cls, config, spec, profile)
        res = gen.planned_resources(plan, profile)
        lowered = LoweredKernel(gen.kernel_name(cls, config), (), res["lds"], res["vgprs"], res["sgprs"],
                                res["agprs"], plan.workgroup_size, plan.grid, res["scratch"])
        data = gemm_contract(cls, config, lowered, target_id(profile), None, generator=gen.name,
                             version=gen.version())
        data["tile"]["registers"] = "planned"
        return data

    _contracts: dict[tuple, Contract] = {}      # planned contracts depend on the kernel class and config only

    def _contract(self, problem: GemmProblem, config: GemmConfig, target: str, label: str) -> Contract:
        key = (self.option, problem.kernel_class(), config, target, isa.load_spec(target).sha256, label)
        hit = GeneratorSupplier._contracts.get(key)
        if hit is None:
            hit = Contract.planned(self.planned_contract(problem, config, target), f"{self.name}:{label}")
            if len(GeneratorSupplier._contracts) > 4096:
                GeneratorSupplier._contracts.clear()
            GeneratorSupplier._contracts[key] = hit
        return hit

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        if not self.available():
            return []
        from jitgemm.kernel import compile as jit_compile

        if problem.scaled:
            why = block_scaled_refusal(self.option, problem, target)
            if why is not None:
                raise Refusal(why)
        try:
            configs = self.configs(problem, target)
        except IRError as exc:
            raise Refusal(f"{self.name} has no kernel for this problem: {exc}") from None
        found = []
        for label, cfg, is_fallback in configs:
            contract = self._contract(problem, cfg, target, label)

            def load(cfg=cfg):
                kernel = jit_compile(problem, cfg, arch=target, generator=self.option)
                return kernel.code_object, kernel.name

            found.append(Candidate(self.name, label, contract, load, cfg, is_fallback))
        return found


def block_scaled_refusal(option: str, problem: GemmProblem, target: str) -> str | None:
    """Why generator `option` has no kernel for the block-scaled `problem` (None: it plans one). A generator
    without an MX lowering may still plan a scaled OCP fp8 problem on the shared unscaled plan (gfx950 has
    unscaled fp8 MFMAs), whose kernel would read no scales: a wrong answer, so that plan is refused too. The MX
    lowerings plan otherwise (the shared GemmPlan carries its `mx` part, for both generators)."""
    gen = generator(option)
    spec, profile = isa.load_spec(target), isa.target_profile(target)
    try:
        plan = gen.plan(problem.kernel_class(), gen.choose_config(problem, spec, profile), spec, profile)
    except IRError as exc:
        return f"{gen.name} has no kernel for this problem: {exc}"
    if plan.mx is None:
        return (f"{gen.name} does not lower block-scaled (MX) problems yet: it plans {problem.a.name} x "
                f"{problem.b.name} as an unscaled GEMM, whose kernel would ignore the scales")
    return None


def DirectAsmSupplier() -> GeneratorSupplier:  # noqa: N802 (a supplier, as the other suppliers' classes)
    """The direct-assembly generator: its default config, a few tile variants and the scalar-load fallback."""
    return GeneratorSupplier("asm", variants=True)


def LlvmSupplier() -> GeneratorSupplier:  # noqa: N802
    """The LLVM generator (llvmlite + LLVM's AMDGPU backend): its default config for the problem, compiled on
    demand when chosen; no candidates when llvmlite is not installed."""
    return GeneratorSupplier("llvm")


class PrebuiltSupplier(Supplier):
    """Code objects in a folder, each kernel described by its embedded contract (`jitgemm.contract` in the
    metadata) or a sidecar `<file>.yaml` / `<file>.<kernel>.yaml`. Assembly files (`*.s`) count as the code
    objects they assemble to (issue 13), built in memory when the folder is read. A contract that
    contradicts its code object's metadata, or a `.s` that does not assemble, is refused when the folder is
    read, with the reason (`errors`)."""

    def __init__(self, folder: str | Path, name: str = "prebuilt", custom_yaml: str | Path | None = None) -> None:
        """`folder`: a folder of kernels, or one kernel file. hipBLASLt GFA kernels (a `custom.config` in their
        metadata) are read by jitgemm.gfa, completed by `custom_yaml` (a Tensile test YAML) when given."""
        self.folder = Path(folder)
        self.name = name
        self.custom_yaml = custom_yaml
        self.errors: list[str] = []
        self._entries: list[tuple[Contract, Path, str]] | None = None
        self._assembled: dict[Path, bytes] = {}

    def _files(self) -> list[Path]:
        if self.folder.is_file():
            return [self.folder]
        found = sorted(self.folder.glob("*.co")) + sorted(self.folder.glob("*.hsaco")) + sorted(self.folder.glob("*.s"))
        if not found:    # a GFA CustomKernels tree: its kernels sit in one folder per origin
            found = sorted(self.folder.glob("*/*.s")) + sorted(self.folder.glob("*/*.co"))
        return found

    def _bytes(self, path: Path) -> bytes:
        """A code object's bytes; an assembly file is assembled (once) by the project's assembler and linker, for
        the target it names (a GFA kernel without `.amdgcn_target`: the one its manifest or test YAML names)."""
        if path.suffix != ".s":
            return read_bounded(path, MAX_CODE_OBJECT_BYTES)
        if path not in self._assembled:
            from jitgemm.codegen.codeobj.relocatable import assemble_source

            from .gfa import assembly_target

            text = read_bounded(path, MAX_CODE_OBJECT_BYTES).decode()  # UnicodeDecodeError: reported by _scan
            self._assembled[path] = assemble_source(text, file=str(path),
                                                    arch=assembly_target(path, text, self.custom_yaml))[0]
        return self._assembled[path]

    def _gfa_contract(self, path: Path, kernel: str) -> tuple[Any, str] | None:
        """(contract, source) of a GFA kernel, None when the file carries no custom.config; GfaError refuses."""
        from .gfa import read_kernel, to_contract
        from .gfa.source import has_custom_config

        if self.custom_yaml is None and not has_custom_config(path):
            return None
        gk = read_kernel(path, custom_yaml=self.custom_yaml, name=kernel)
        gk._code = self._bytes(path)
        return to_contract(gk), f"{path} (GFA custom.config of {kernel})"

    def _scan(self) -> list[tuple[Contract, Path, str]]:
        from jitgemm.codegen import codeobj

        if self._entries is not None:
            return self._entries
        entries = []
        from jitgemm.isa.errors import IsaError

        for path in self._files():
            try:
                obj = codeobj.read(self._bytes(path))
            except (OSError, UnicodeDecodeError, codeobj.CodeObjectError, IsaError) as exc:
                # an assembly error already names file:line:col (its first line; the rest shows the source)
                text = str(exc)
                self.errors.append(text.split("\n")[0] if getattr(exc, "line", None) or text.startswith(str(path))
                                   else f"{path}: {text}")
                continue
            for kernel in obj.kernels:
                data = kernel.contract
                source = f"{path} (embedded contract of {kernel.name})"
                for sidecar in (path.with_name(f"{path.name}.{kernel.name}.yaml"), path.with_name(f"{path.name}.yaml"),
                                path.with_suffix(".yaml")):
                    if data is None and _exists(sidecar):
                        try:  # a regular file of bounded size (a FIFO here would block the scan forever)
                            data, source = read_bounded(sidecar, MAX_CONTRACT_BYTES), str(sidecar)
                        except OSError as exc:
                            data, source = None, str(sidecar)
                            self.errors.append(f"{sidecar}: cannot read the sidecar contract: "
                                               f"{exc.strerror or str(exc).split(': ', 1)[-1]}")
                            break
                if data is None:
                    try:
                        found = self._gfa_contract(path, kernel.name)
                    except IsaError as exc:   # jitgemm.gfa.GfaError: the key path and what is accepted
                        self.errors.append(str(exc))
                        continue
                    if found is not None:
                        entries.append((found[0], path, kernel.name))
                        continue
                    self.errors.append(f"{path}: kernel {kernel.name} has no contract (embedded, sidecar or GFA "
                                       f"custom.config); skipped")
                    continue
                try:
                    contract = Contract.load(data, source)
                    if contract.kernel != kernel.name:
                        raise ContractError(f"{source}: contract names kernel {contract.kernel!r}, the code object "
                                            f"has {kernel.name!r}")
                    contract.check_metadata(kernel.metadata)
                except ContractError as exc:
                    self.errors.append(str(exc))
                    continue
                entries.append((contract, path, kernel.name))
        self._entries = entries
        return entries

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        out = []
        for contract, path, kernel in self._scan():
            def load(path=path, kernel=kernel):
                return self._bytes(path), kernel

            out.append(Candidate(self.name, f"{path.name}:{kernel}", contract, load))
        return out


def _exists(path: Path) -> bool:
    """Path.exists, False for a name the file system refuses (a sidecar name of a kernel with a 200-character
    symbol, as Triton's GFA demo kernel has, is too long for it)."""
    try:
        return path.exists()
    except OSError:
        return False


class TritonSupplier(Supplier):
    """Triton, when installed: compiles `jitgemm.triton_gemm.gemm_kernel` (or, for block-scaled problems on
    gfx950, `mx_gemm_kernel` with tl.dot_scaled) for the target on the CPU and describes the result with a
    contract made from its compile metadata and the code object's `.args`; Triton's own argument order is
    mapped to roles there. The kernels compute D = A @ B only (no alpha, C, bias or activation): legality says so
    per clause."""

    name = "triton"
    _TYPES = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8e4b8", "bf8": "fp8e5b16", "int8": "i8",
              "int32": "i32"}
    # tl.dot_scaled's operand formats in Triton 3.9 on AMD (triton/language/semantic.py dot_scaled; fp6 e2m3/e3m2
    # raise "NYI" for AMD targets, a 16-bit side takes no scales): IR dtype -> (format, pointer type, elements
    # per byte of the pointer's storage, bytes per pointer element)
    MX_FORMATS = {"fp4": ("e2m1", "*u8", 2, 1), "fp8_e4m3": ("e4m3", "*fp8e4nv", 1, 1),
                  "fp8_e5m2": ("e5m2", "*fp8e5", 1, 1), "bf16": ("bf16", "*bf16", 1, 2),
                  "fp16": ("fp16", "*fp16", 1, 2)}
    _SCALE_CODE = {"none": 0, "plain": 1, "shuffled": 2}
    # scale modes (codegen/gemm_ir.py): scaled_gemm_kernel's MODE, and the 8-bit pointer types it takes (Triton's
    # names: fp8e4b8/fp8e5b16 are the FNUZ formats of gfx942, fp8e4nv/fp8e5 the OCP ones of gfx950)
    _MODE_CODE = {"tensor": 1, "rowcol": 2, "block": 3}
    _SCALED_TYPES = {"fp8": "fp8e4b8", "bf8": "fp8e5b16", "fp8_e4m3": "fp8e4nv", "fp8_e5m2": "fp8e5", "int8": "i8"}

    def __init__(self, blocks: tuple[tuple[int, int, int], ...] = ((64, 64, 32),), num_warps: int = 4,
                 mx_blocks: tuple[tuple[int, int, int], ...] = ((64, 64, 128),), scope: str = "all",
                 mx_variants: tuple[str, ...] = ("generic", "div16")) -> None:
        """`scope="mx"` offers kernels for scaled problems only, MX block scales and the fp32 scale modes, and
        the grouped (MoE) peer for grouped problems (the
        default selectors' Triton supplier, so these problems see Triton's tl.dot_scaled and explicit-multiply
        kernels beside the generators without `use_triton()`); "all": every
        problem Triton can take. `mx_variants`: "generic" (any size, alignment and leading dimension) and/or
        "div16", the specialization Triton's launcher compiles when pointers, sizes and leading dimensions are
        multiples of 16 (`tt.divisibility` 16: wide loads, fewer masks), legal only for such problems."""
        if scope not in ("all", "mx"):
            raise ValueError(f"scope={scope!r}; accepted: all, mx")
        unknown = set(mx_variants) - {"generic", "div16"}
        if unknown or not mx_variants:
            raise ValueError(f"mx_variants={mx_variants!r}; accepted: generic, div16 (one or both)")
        self.scope = scope
        self.mx_variants = tuple(mx_variants)
        self.blocks = blocks
        self.mx_blocks = mx_blocks
        self.num_warps = num_warps
        self._compiled: dict[tuple, tuple[bytes, str, dict]] = {}

    @staticmethod
    def available() -> bool:
        try:
            import triton  # noqa: F401
        except ImportError:
            return False
        return True

    def _build(self, key: tuple, fn, sig: dict, constexprs: dict, target: str,
               attrs: dict | None = None) -> tuple[bytes, str, dict]:
        if key not in self._compiled:
            import warnings

            from triton.backends.compiler import GPUTarget
            from triton.compiler import ASTSource
            from triton.compiler import compile as triton_compile

            src = ASTSource(fn, sig, constexprs=constexprs, attrs=attrs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # Triton warns about its own deprecations
                compiled = triton_compile(src, target=GPUTarget("hip", isa.spec.targets.base_target(target), 64),
                                          options={"num_warps": self.num_warps})
            blob = compiled.asm["hsaco"]
            meta = compiled.metadata
            self._compiled[key] = (blob, meta.name, {"shared": int(getattr(meta, "shared", 0) or 0),
                                                     "num_warps": int(meta.num_warps)})
        return self._compiled[key]

    def _compile(self, problem: GemmProblem, target: str, block: tuple[int, int, int]) -> tuple[bytes, str, dict]:
        from .triton_gemm import gemm_kernel

        key = (problem.a.name, problem.b.name, problem.d.name, problem.layout, target, block)
        t = self._TYPES
        sig = {"a_ptr": f"*{t[problem.a.name]}", "b_ptr": f"*{t[problem.b.name]}", "d_ptr": f"*{t[problem.d.name]}"}
        sig.update({name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                                             "stride_dm")})
        sig.update({name: "constexpr" for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "ACC_INT")})
        bm, bn, bk = block
        return self._build(key, gemm_kernel, sig, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                                   "ACC_INT": problem.acc.kind == "int"}, target)

    def compile_grouped(self, problem: GemmProblem, target: str,
                        block: tuple[int, int, int] = (32, 64, 32)) -> tuple[bytes, str, dict]:
        """triton_gemm.grouped_gemm_kernel for a grouped problem's dtypes (the peer `explain` shows beside
        jitgemm.grouped_matmul's kernel); compiled once per dtypes/target/block."""
        from .triton_gemm import grouped_gemm_kernel

        key = ("grouped", problem.a.name, problem.b.name, problem.d.name, target, block)
        t = self._TYPES
        sig = {"a_ptr": f"*{t[problem.a.name]}", "b_ptr": f"*{t[problem.b.name]}", "d_ptr": f"*{t[problem.d.name]}",
               "off_ptr": "*i32"}
        sig.update({name: "i32" for name in ("N", "K", "stride_am", "stride_bg", "stride_bk", "stride_bn",
                                             "stride_dm")})
        sig.update({name: "constexpr" for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "ACC_INT")})
        bm, bn, bk = block
        return self._build(key, grouped_gemm_kernel, sig, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                                           "ACC_INT": problem.acc.kind == "int"}, target)

    def compile_scaled(self, problem: GemmProblem, target: str,
                       block: tuple[int, int, int]) -> tuple[bytes, str, dict]:
        """scaled_gemm_kernel for a scale-mode problem's dtypes, mode and block-scale orders (compiled once)."""
        from .triton_gemm import scaled_gemm_kernel

        p = problem
        key = ("scaled", p.a.name, p.b.name, p.d.name, p.scale_mode, p.a_scale_order, p.b_scale_order, target, block)
        t = self._SCALED_TYPES
        sig = {"a_ptr": f"*{t[p.a.name]}", "b_ptr": f"*{t[p.b.name]}", "d_ptr": f"*{self._TYPES[p.d.name]}",
               "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32"}
        sig.update({name: "i32" for name in SCALED_TRITON_ARGS[5:]})
        consts = {"BLOCK_M": block[0], "BLOCK_N": block[1], "BLOCK_K": block[2], "ACC_INT": p.acc.kind == "int",
                  "MODE": self._MODE_CODE[p.scale_mode], "A_COL": p.a_scale_order == "col",
                  "B_COL": p.b_scale_order == "col"}
        sig.update(dict.fromkeys(consts, "constexpr"))
        return self._build(key, scaled_gemm_kernel, sig, consts, target)

    def _scaled_contract(self, problem: GemmProblem, target: str, block, blob: bytes, name: str, info: dict) -> dict:
        a_n, b_n = not problem.a_transposed, not problem.b_transposed
        roles = {"a_ptr": ("a", None), "b_ptr": ("b", None), "d_ptr": ("d", None), "a_scale_ptr": ("a_scale", None),
                 "b_scale_ptr": ("b_scale", None), "M": ("m", None), "N": ("n", None), "K": ("k", None),
                 "stride_am": ("lda", None) if a_n else ("const", 1),
                 "stride_ak": ("const", 1) if a_n else ("lda", None),
                 "stride_bk": ("ldb", None) if b_n else ("const", 1),
                 "stride_bn": ("const", 1) if b_n else ("ldb", None),
                 "stride_dm": ("ldd", None), "ld_a_scale": ("ld_a_scale", None), "ld_b_scale": ("ld_b_scale", None)}
        operation = {"scale_mode": problem.scale_mode}
        if problem.scale_mode == "block":
            operation.update({"a_scale_order": problem.a_scale_order, "b_scale_order": problem.b_scale_order})
        data = self._describe(problem, target, block, blob, name, info,
                              [(arg, roles[arg]) for arg in SCALED_TRITON_ARGS], "scaled_gemm_kernel", "elements",
                              operation)
        data["legality"]["align_bytes"] = {"a_scale": 4, "b_scale": 4}
        return data

    def scaled_refusal(self, problem: GemmProblem) -> str | None:
        """Why scaled_gemm_kernel does not take this scale-mode problem (None: it does)."""
        if problem.a.name not in self._SCALED_TYPES or problem.b.name not in self._SCALED_TYPES:
            return f"scaled_gemm_kernel takes {', '.join(self._SCALED_TYPES)}, not {problem.a.name}x{problem.b.name}"
        if problem.batch != 1:
            return "scaled_gemm_kernel is not batched"
        return None

    def mx_refusal(self, problem: GemmProblem, target: str) -> str | None:
        """Why Triton has no tl.dot_scaled kernel for this block-scaled problem (None: it has one)."""
        from .mx_operands import target_has_mx

        if not target_has_mx(target):
            return f"tl.dot_scaled kernels need a target with block-scaled MFMAs (gfx950), not {target}"
        mx_b = [n for n, v in self.MX_FORMATS.items() if v[3] == 1]
        if problem.a.name not in self.MX_FORMATS or problem.b.name not in mx_b:
            return (f"Triton {_triton_version()}'s tl.dot_scaled does not take {problem.a.name} x {problem.b.name} on "
                    f"AMD; it takes A in {', '.join(self.MX_FORMATS)} and B in {', '.join(mx_b)}")
        if problem.d.name not in self._TYPES:
            return f"output {problem.d.name}"
        return None

    @classmethod
    def mx_signature(cls, problem: GemmProblem, block: tuple[int, int, int]) -> tuple[dict, dict]:
        """(signature, constexprs) of `mx_gemm_kernel` for a block-scaled problem's formats and layouts."""
        fa, fb = cls.MX_FORMATS[problem.a.name], cls.MX_FORMATS[problem.b.name]
        sig = {"a_ptr": fa[1], "a_scale_ptr": "*u8", "b_ptr": fb[1], "b_scale_ptr": "*u8",
               "d_ptr": f"*{cls._TYPES[problem.d.name]}"}
        sig.update({name: "i32" for name in MX_TRITON_ARGS[5:]})
        consts = {"BLOCK_M": block[0], "BLOCK_N": block[1], "BLOCK_K": block[2], "A_FMT": fa[0], "B_FMT": fb[0],
                  "A_PACK": fa[2], "B_PACK": fb[2], "A_BYTES": fa[3], "D_BYTES": problem.d.bytes,
                  "A_SCALE": cls._SCALE_CODE[problem.a_scale], "B_SCALE": cls._SCALE_CODE[problem.b_scale],
                  "B_PRESHUFFLE": int(problem.b_preshuffle == "16x16")}
        sig.update(dict.fromkeys(consts, "constexpr"))
        return sig, consts

    @staticmethod
    def mx_div16_attrs() -> dict:
        """Triton's `tt.divisibility` 16 on the arguments its launcher finds divisible by 16 for a problem of
        16-multiple sizes and leading dimensions with 16-byte aligned buffers (the scale arrays' leading
        dimensions, ceil(K/32) or a multiple of 8, are left generic)."""
        return {(MX_TRITON_ARGS.index(n),): [["tt.divisibility", 16]] for n in MX_DIV16_ARGS}

    def compile_mx(self, problem: GemmProblem, target: str, block: tuple[int, int, int],
                   variant: str = "generic") -> tuple[bytes, str, dict]:
        """The tl.dot_scaled kernel for a block-scaled problem's formats and layouts (compiled once)."""
        from .triton_gemm import mx_gemm_kernel

        key = ("mx", problem.a.name, problem.b.name, problem.d.name, problem.a_scale, problem.b_scale,
               problem.b_preshuffle, target, block, variant)
        sig, consts = self.mx_signature(problem, block)
        return self._build(key, mx_gemm_kernel, sig, consts, target,
                           self.mx_div16_attrs() if variant == "div16" else None)

    def _contract(self, problem: GemmProblem, target: str, block, blob: bytes, name: str, info: dict) -> dict:
        a_n, b_n = not problem.a_transposed, not problem.b_transposed
        roles = [("a", None), ("b", None), ("d", None), ("m", None), ("n", None), ("k", None),
                 ("lda", None) if a_n else ("const", 1), ("const", 1) if a_n else ("lda", None),
                 ("ldb", None) if b_n else ("const", 1), ("const", 1) if b_n else ("ldb", None), ("ldd", None)]
        names = ["a_ptr", "b_ptr", "d_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                 "stride_dm"]
        return self._describe(problem, target, block, blob, name, info, list(zip(names, roles, strict=True)),
                              "gemm_kernel", "elements", {})

    def _grouped_contract(self, problem: GemmProblem, target: str, block, blob: bytes, name: str, info: dict) -> dict:
        """grouped_gemm_kernel's contract: z = group (the batch role is G), offsets from `group_offsets`; B
        advanced by g * stride_b; A's rows stacked (row-major), B [G, K, N] (NN) or [G, N, K] (NT)."""
        b_n = not problem.b_transposed
        roles = [("a", None), ("b", None), ("d", None), ("group_offsets", None), ("n", None), ("k", None),
                 ("lda", None), ("stride_b", None), ("ldb", None) if b_n else ("const", 1),
                 ("const", 1) if b_n else ("ldb", None), ("ldd", None)]
        names = ["a_ptr", "b_ptr", "d_ptr", "off_ptr", "N", "K", "stride_am", "stride_bg", "stride_bk", "stride_bn",
                 "stride_dm"]
        data = self._describe(problem, target, block, blob, name, info, list(zip(names, roles, strict=True)),
                              "grouped_gemm_kernel", "elements", {"grouped": True})
        data["launch"]["grid"][2] = "batch"
        data["legality"]["batch"] = True
        return data

    def _mx_contract(self, problem: GemmProblem, target: str, block, blob: bytes, name: str, info: dict,
                     variant: str = "generic") -> dict:
        roles = {"a_ptr": "a", "a_scale_ptr": "a_scale" if problem.a_scale != "none" else "unused", "b_ptr": "b",
                 "b_scale_ptr": "b_scale" if problem.b_scale != "none" else "unused", "d_ptr": "d", "M": "m",
                 "N": "n", "K": "k", "lda": "lda", "ldb": "ldb", "ld_a_scale": "ld_a_scale",
                 "ld_b_scale": "ld_b_scale", "ldd": "ldd"}
        args = [(arg, (roles[arg], None)) for arg in MX_TRITON_ARGS]
        operation = {"a_scale": problem.a_scale, "b_scale": problem.b_scale, "scale_block": problem.scale_block,
                     "b_preshuffle": problem.b_preshuffle}
        data = self._describe(problem, target, block, blob, name, info, args, "mx_gemm_kernel", "bytes", operation)
        if variant == "div16":   # what the tt.divisibility 16 arguments promise (leading dimensions: 16 bytes)
            data["legality"].update({
                "divisible": dict.fromkeys("mnk", 16),
                "align_bytes": dict.fromkeys(("a", "b", "d", "a_scale", "b_scale"), 16),
                "ld_multiple": {"a": 128 // problem.a.bits, "b": 128 // problem.b.bits, "d": 16 // problem.d.bytes}})
        return data

    def _describe(self, problem: GemmProblem, target: str, block, blob: bytes, name: str, info: dict,
                  args_roles: list, source: str, strides_in: str, operation: dict) -> dict:
        from jitgemm.codegen import codeobj

        kernel = codeobj.read(blob).kernel(name)
        explicit = [a for a in kernel.args if not str(a.get(".value_kind", "")).startswith("hidden_")]
        # Triton 3 appends scratch-buffer pointers (global and profile scratch) that a launch passes as null
        extra = explicit[len(args_roles):]
        if len(explicit) < len(args_roles) or any(a.get(".value_kind") != "global_buffer" for a in extra):
            raise ContractError(f"Triton kernel {name} has {len(explicit)} explicit arguments, expected "
                                f"{len(args_roles)} plus trailing scratch pointers")
        args_roles = args_roles + [(f"scratch{i}", ("unused", None)) for i in range(len(extra))]
        args = []
        for (arg_name, (role, value)), meta in zip(args_roles, explicit, strict=True):
            entry = {"name": arg_name, "role": role, "offset": int(meta[".offset"]), "size": int(meta[".size"]),
                     "type": "ptr" if meta.get(".value_kind") == "global_buffer" else "i32"}
            if value is not None:
                entry["value"] = value
            args.append(entry)
        bm, bn, bk = block
        return {
            "contract_version": 1,
            "identity": {"generator": "triton", "generator_version": _triton_version(), "kernel": name,
                         "source": f"jitgemm/triton_gemm.py:{source}", "target": isa.spec.targets.base_target(target),
                         "code_sha256": hashlib.sha256(kernel.code).hexdigest()},
            "operation": {"kind": "gemm", "a": problem.a.name, "b": problem.b.name, "c": None, "d": problem.d.name,
                          "acc": problem.acc.name, "layout": problem.layout, **operation},
            "abi": {"kernarg_size": int(kernel.metadata.get(".kernarg_segment_size", 0)), "strides_in": strides_in,
                    "args": args},
            "launch": {"workgroup": [info["num_warps"] * 64, 1, 1],
                       "grid": [f"ceil(n/{bn})", f"ceil(m/{bm})", "1"], "lds_bytes": info["shared"]},
            "legality": {"batch": False, "split_k": False,
                         "max": {"m": 2**31 - 1, "n": 2**31 - 1, "k": 2**31 - 1}},
            "features": {"alpha": False, "beta": False, "c_input": False, "bias": ["none"], "activation": ["none"],
                         "output_cast": problem.d != problem.acc},
            "tile": {"m": bm, "n": bn, "k": bk, "vgprs": int(kernel.metadata.get(".vgpr_count", 128)),
                     "agprs": int(kernel.metadata.get(".agpr_count", 0)), "lds": info["shared"]},
        }

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        scaled = problem.scaled or problem.scale_mode != "none"
        if self.scope == "mx" and not (scaled or problem.grouped):
            return []
        if not self.available():
            if scaled or problem.grouped:
                raise Refusal("Triton is not installed (pip install triton)")
            return []
        if problem.grouped:             # the MoE peer: D = A_g @ B_g only (legality refuses C, bias, alpha)
            if problem.a.name not in self._TYPES or problem.d.name not in self._TYPES:
                raise Refusal(f"grouped_gemm_kernel takes {', '.join(self._TYPES)}, not {problem.a.name} -> "
                              f"{problem.d.name}")
            kernels = [((32, 64, 32), "generic", self.compile_grouped, self._grouped_contract)]
        elif problem.scale_mode != "none":
            why = self.scaled_refusal(problem)
            if why is not None:
                raise Refusal(why)
            # block mode: one K block per iteration (its scales apply to that iteration's dot)
            blocks = [(bm, bn, 128 if problem.scale_mode == "block" else bk) for bm, bn, bk in self.blocks]
            kernels = [(block, "generic", self.compile_scaled, self._scaled_contract) for block in blocks]
        elif problem.scaled:
            why = self.mx_refusal(problem, target)
            if why is not None:
                raise Refusal(why)
            kernels = [(block, variant, functools.partial(self.compile_mx, variant=variant),
                        functools.partial(self._mx_contract, variant=variant))
                       for block in self.mx_blocks for variant in self.mx_variants]
        elif problem.a.name not in self._TYPES or problem.d.name not in self._TYPES:
            return []
        else:
            kernels = [(block, "generic", self._compile, self._contract) for block in self.blocks]
        out = []
        for block, variant, compile_, describe in kernels:
            try:
                blob, name, info = compile_(problem, target, block)
            except Exception as exc:     # Triton's own refusal (e.g. an fp8 format the target lacks)
                if problem.scale_mode == "none" and not problem.grouped:
                    raise
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
                kind = "grouped_gemm_kernel" if problem.grouped else "scaled_gemm_kernel"
                raise Refusal(f"Triton cannot compile {kind} for {problem.a.name}x{problem.b.name} on "
                              f"{target}: {first}") from None
            contract = Contract.load(describe(problem, target, block, blob, name, info), f"triton:{name}")

            def load(blob=blob, name=name):
                return blob, name

            label = f"{block[0]}x{block[1]}x{block[2]}" + ("" if variant == "generic" else f"/{variant}")
            out.append(Candidate(self.name, label, contract, load))
        return out


# mx_gemm_kernel's explicit arguments in Triton's order (pointers, then i32 sizes and byte strides), and those
# the "div16" variant takes as multiples of 16
MX_TRITON_ARGS = ("a_ptr", "a_scale_ptr", "b_ptr", "b_scale_ptr", "d_ptr", "M", "N", "K", "lda", "ldb",
                  "ld_a_scale", "ld_b_scale", "ldd")
SCALED_TRITON_ARGS = ("a_ptr", "b_ptr", "d_ptr", "a_scale_ptr", "b_scale_ptr", "M", "N", "K", "stride_am",
                      "stride_ak", "stride_bk", "stride_bn", "stride_dm", "ld_a_scale", "ld_b_scale")
MX_DIV16_ARGS = ("a_ptr", "a_scale_ptr", "b_ptr", "b_scale_ptr", "d_ptr", "M", "N", "K", "lda", "ldb", "ldd")


def _triton_version() -> str:
    import triton

    return str(triton.__version__)
