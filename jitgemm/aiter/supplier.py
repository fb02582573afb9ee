"""The admitted kernels of an aiter inventory as a selector supplier."""

from __future__ import annotations

from ..suppliers import Candidate, Supplier


class AiterSupplier(Supplier):
    """Offers every admitted kernel of an `Inventory` for its own target (the selector checks each contract)."""

    def __init__(self, inv, name: str = "aiter") -> None:
        self.inventory = inv
        self.name = name

    def candidates(self, problem, target: str) -> list[Candidate]:
        from jitgemm.isa.spec.targets import base_target

        base = base_target(target)
        out = []
        for k in self.inventory.admitted(base):
            def load(k=k):
                return k.code, k.name

            out.append(Candidate(self.name, k.label, k.contract, load))
        return out
