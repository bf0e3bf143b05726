"""MutatingAdmissionPolicies: pkg/registry/admissionregistration/mutatingadmissionpolicy/strategy.go. Stored; their
CEL mutations are not applied (docs/fidelity.md)."""
from __future__ import annotations

from ..defaults import admission_config as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import admission_config as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class MutatingAdmissionPolicyStrategy(SimpleStrategy):
    resource = ResourceType("admissionregistration.k8s.io", "v1",
                            "mutatingadmissionpolicies", "MutatingAdmissionPolicy", False,
                            categories=("api-extensions",))
    has_generation = True
    printer = Printer(printers.mutating_policy_columns, printers.mutating_policy_cells)
    defaulter = staticmethod(defaults.default_policy)
    validator = staticmethod(validation.validate_mutating_policy)
    update_validator = staticmethod(update_of(validation.validate_mutating_policy))
