"""LimitRanges: pkg/registry/core/limitrange/strategy.go. The LimitRanger admission plugin applies them to pods
and claims (:mod:`gpulab.cluster.admission.limitranger`)."""
from __future__ import annotations

from ..defaults import storage as defaults
from ..registry import ResourceType
from ..validation import quota as validation
from .simple import SimpleStrategy


class LimitRangeStrategy(SimpleStrategy):
    resource = ResourceType("", "v1", "limitranges", "LimitRange", True, short_names=("limits",))
    defaulter = staticmethod(defaults.default_limit_range)
    validator = staticmethod(validation.validate_limit_range)
    update_validator = staticmethod(validation.validate_limit_range_update)
