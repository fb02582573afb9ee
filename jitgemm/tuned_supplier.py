"""The tuning database as a kernel supplier: the variants a sweep (or `jitgemm tune`) recorded for a problem
come back as selector candidates, so the best one found can be chosen even when no other supplier offers
its config. Each candidate carries the contract its compiled kernel embedded (stored beside the row), and
compiles through `jitgemm.compile` on demand; legality is still the contract's, ranking the database's."""

from __future__ import annotations

import json

from jitgemm.codegen.gemm_ir import GemmConfig, GemmProblem
from jitgemm.codegen.generator import by_name

from .contract import Contract, ContractError
from .suppliers import Candidate, Supplier
from .tuning_db import TuningDB


class TunedSupplier(Supplier):
    """Candidates from the tuning database's rows that carry a config and a contract (see
    `TuningDB.tuned`). A row whose contract no longer loads, or names a generator that is not registered
    here (the registry, `codegen.generator.by_name`, maps the contract's identity.generator to its option), is
    skipped and listed in `errors`."""

    name = "tuned"

    def __init__(self, db: TuningDB | None = None) -> None:
        self.db = db or TuningDB()
        self.errors: list[str] = []

    def candidates(self, problem: GemmProblem, target: str) -> list[Candidate]:
        from jitgemm.kernel import compile as jit_compile

        out = []
        for row in self.db.tuned(target, problem):
            try:
                data = json.loads(row.contract)
                config = GemmConfig(**json.loads(row.config))
                contract = Contract.load(data, f"{self.db.path} row {row.id}")
            except (ValueError, TypeError, ContractError) as exc:
                self.errors.append(f"{self.db.path} row {row.id}: {exc}")
                continue
            made_by = str(data.get("identity", {}).get("generator"))
            gen = by_name(made_by)
            if gen is None:
                self.errors.append(f"{self.db.path} row {row.id}: identity.generator {made_by!r} is not a "
                                   f"registered generator here")
                continue
            generator = gen.option

            def load(config=config, generator=generator):
                kernel = jit_compile(problem, config, arch=target, generator=generator)
                return kernel.code_object, kernel.name

            out.append(Candidate(self.name, row.kernel, contract, load, config))
        return out
