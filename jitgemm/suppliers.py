"""Kernel suppliers for the selector: each offers candidates for a problem, described by contracts.

A candidate's contract is all the selector reads to decide legality; its code object is produced only for
the winner (generators compile on demand), so offering a candidate is cheap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import isa
from codegen.gemm_compile import choose_config
from codegen.gemm_config import validate_config
from codegen.gemm_ir import GemmConfig, GemmProblem, IRError

from .contract import Contract, ContractError


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
        """Stable identity for ranking ties, tuning and quarantine."""
        c = self.contract.data
        return c["identity"].get("code_sha256") or hashlib.sha256(
            (self.supplier + self.label + c["identity"]["kernel"]).encode()).hexdigest()


class Supplier:
    name = "supplier"

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        raise NotImplementedError


def _planned_contract(problem: GemmProblem, config: GemmConfig, target: str, generator: str) -> dict:
    """The contract a generator's kernel will carry, known before compiling (legality needs no binary)."""
    from codegen.gemm_asm import GemmLowering, LoweredKernel
    from codegen.gemm_contract import gemm_contract

    spec = isa.load_spec(target)
    profile = isa.target_profile(target)
    lowering = GemmLowering(problem.kernel_class(), config, spec, profile)
    res = lowering.res
    lowered = LoweredKernel("planned", (), lowering.lds_bytes, res.vgprs, 0, res.agprs, config.workgroup_size,
                            (f"ceil(n/{config.tile_n})", f"ceil(m/{config.tile_m})", "batch"))
    data = gemm_contract(problem.kernel_class(), config, lowered, target, generator=generator)
    data["tile"]["lds"] = lowering.lds_bytes
    return data


class DirectAsmSupplier(Supplier):
    """The direct-assembly generator: the default config for the problem (widest legal vector loads), a few
    tile variants, and the fallback (scalar loads: any shape, any alignment)."""

    name = "jitgemm-asm"

    def configs(self, problem: GemmProblem, target: str) -> list[tuple[str, GemmConfig, bool]]:
        spec = isa.load_spec(target)
        profile = isa.target_profile(target)
        base = choose_config(problem, spec, profile)
        out = [("default", base, False)]
        for tm, tn, wm, wn in ((128, 128, 2, 2), (64, 64, 2, 2), (32, 32, 1, 1)):
            cfg = replace(base, tile_m=tm, tile_n=tn, waves_m=wm, waves_n=wn)
            if cfg == base:
                continue
            try:
                validate_config(problem, cfg, spec, profile)
                from codegen.gemm_asm import GemmLowering

                GemmLowering(problem.kernel_class(), cfg, spec, profile)
            except IRError:
                continue
            out.append((f"{tm}x{tn}", cfg, False))
        fallback = replace(base, vec_a=1, vec_b=1)
        out.append(("fallback", fallback, True))
        return out

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        from .compiler import compile as jit_compile

        found = []
        for label, cfg, is_fallback in self.configs(problem, target):
            contract = Contract.load(_planned_contract(problem, cfg, target, self.name), f"{self.name}:{label}")

            def load(cfg=cfg):
                kernel = jit_compile(problem, cfg, arch=target)
                return kernel.code_object, kernel.name

            found.append(Candidate(self.name, label, contract, load, cfg, is_fallback))
        return found


class PrebuiltSupplier(Supplier):
    """Code objects in a folder, each kernel described by its embedded contract (`jitgemm.contract` in the
    metadata) or a sidecar `<file>.yaml` / `<file>.<kernel>.yaml`. A contract that contradicts its code
    object's metadata is refused when the folder is read, with the reason (`errors`)."""

    def __init__(self, folder: str | Path, name: str = "prebuilt") -> None:
        self.folder = Path(folder)
        self.name = name
        self.errors: list[str] = []
        self._entries: list[tuple[Contract, Path, str]] | None = None

    def _scan(self) -> list[tuple[Contract, Path, str]]:
        from codegen import codeobj

        if self._entries is not None:
            return self._entries
        entries = []
        for path in sorted(self.folder.glob("*.co")) + sorted(self.folder.glob("*.hsaco")):
            try:
                obj = codeobj.read(path.read_bytes())
            except (OSError, codeobj.CodeObjectError) as exc:
                self.errors.append(f"{path}: {exc}")
                continue
            for kernel in obj.kernels:
                data = kernel.contract
                source = f"{path} (embedded contract of {kernel.name})"
                for sidecar in (path.with_name(f"{path.name}.{kernel.name}.yaml"), path.with_name(f"{path.name}.yaml"),
                                path.with_suffix(".yaml")):
                    if data is None and sidecar.is_file():
                        data, source = sidecar.read_text(), str(sidecar)
                if data is None:
                    self.errors.append(f"{path}: kernel {kernel.name} has no contract (embedded or sidecar); skipped")
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
                return path.read_bytes(), kernel

            out.append(Candidate(self.name, f"{path.name}:{kernel}", contract, load))
        return out
