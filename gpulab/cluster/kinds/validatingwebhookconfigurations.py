"""ValidatingWebhookConfigurations: pkg/registry/admissionregistration/validatingwebhookconfiguration/strategy.go.
Stored; the embedded API server calls no admission webhooks (docs/fidelity.md)."""
from __future__ import annotations

from ..defaults import admission_config as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import admission_config as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class ValidatingWebhookConfigurationStrategy(SimpleStrategy):
    resource = ResourceType("admissionregistration.k8s.io", "v1",
                            "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False,
                            categories=("api-extensions",))
    has_generation = True
    printer = Printer(printers.webhook_columns, printers.webhook_cells)
    defaulter = staticmethod(defaults.default_webhook_configuration)
    validator = staticmethod(validation.validate_webhook_configuration)
    update_validator = staticmethod(update_of(validation.validate_webhook_configuration))
