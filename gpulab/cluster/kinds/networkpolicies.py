"""NetworkPolicies: pkg/registry/networking/networkpolicy/strategy.go. Stored and served; the embedded cluster
has no CNI to enforce them (kind's kindnet does not either before v0.24; see docs/fidelity.md)."""
from __future__ import annotations

from ..defaults import networking as defaults
from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class NetworkPolicyStrategy(SimpleStrategy):
    resource = ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True,
                            short_names=("netpol",))
    has_generation = True
    printer = Printer(printers.networkpolicy_columns, printers.networkpolicy_cells)
    defaulter = staticmethod(defaults.default_network_policy)
    validator = staticmethod(validation.validate_network_policy)
    update_validator = staticmethod(validation.validate_network_policy_update)
