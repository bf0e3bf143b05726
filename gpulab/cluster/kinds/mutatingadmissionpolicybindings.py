"""MutatingAdmissionPolicyBindings: pkg/registry/admissionregistration/mutatingadmissionpolicybinding/strategy.go."""
from __future__ import annotations

from ..defaults import admission_config as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import admission_config as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


def _validate(binding: dict) -> list:
    return validation.validate_policy_binding(binding, validating=False)


class MutatingAdmissionPolicyBindingStrategy(SimpleStrategy):
    resource = ResourceType("admissionregistration.k8s.io", "v1",
                            "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", False,
                            categories=("api-extensions",))
    has_generation = True
    printer = Printer(printers.policy_binding_columns, printers.policy_binding_cells)
    defaulter = staticmethod(defaults.default_policy_binding)
    validator = staticmethod(_validate)
    update_validator = staticmethod(update_of(_validate))
