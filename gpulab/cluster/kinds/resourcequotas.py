"""ResourceQuotas: pkg/registry/core/resourcequota/strategy.go. The status (hard and used) is written by the
quota controller and charged by the ResourceQuota admission plugin (:mod:`gpulab.cluster.admission.resourcequota`)."""
from __future__ import annotations

from ..defaults import storage as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import quota as validation
from .simple import SimpleStrategy


class ResourceQuotaStrategy(SimpleStrategy):
    resource = ResourceType("", "v1", "resourcequotas", "ResourceQuota", True, short_names=("quota",),
                            subresources=("status",))
    printer = Printer(printers.resourcequota_columns, printers.resourcequota_cells)
    defaulter = staticmethod(defaults.default_resource_quota)
    validator = staticmethod(validation.validate_resource_quota)
    update_validator = staticmethod(validation.validate_resource_quota_update)
    status_validator = staticmethod(validation.validate_resource_quota_status_update)
