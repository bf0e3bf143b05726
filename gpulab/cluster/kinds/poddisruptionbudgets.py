"""PodDisruptionBudgets: pkg/registry/policy/poddisruptionbudget/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import disruption_budgets as validation
from .strategy import Context, Strategy


class PodDisruptionBudgetStrategy(Strategy):
    resource = ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
                            short_names=("pdb",), subresources=("status",))
    has_generation = True
    printer = Printer(printers.pdb_columns, printers.pdb_cells)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        # The zero PodDisruptionBudgetStatus: these four counters have no omitempty (policy/v1 types.go).
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def validate(self, obj: dict) -> list:
        return validation.validate_pdb(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_pdb_status_update(new, old)
        return validation.validate_pdb(new)
