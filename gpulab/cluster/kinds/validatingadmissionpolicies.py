"""ValidatingAdmissionPolicies: pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go. Stored;
their CEL rules are not evaluated (docs/fidelity.md)."""
from __future__ import annotations

from ..defaults import admission_config as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import admission_config as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class ValidatingAdmissionPolicyStrategy(SimpleStrategy):
    resource = ResourceType("admissionregistration.k8s.io", "v1",
                            "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
                            categories=("api-extensions",), subresources=("status",))
    has_generation = True
    printer = Printer(printers.validating_policy_columns, printers.validating_policy_cells)
    defaulter = staticmethod(defaults.default_policy)
    validator = staticmethod(validation.validate_validating_policy)
    update_validator = staticmethod(update_of(validation.validate_validating_policy))
