"""APIServices: k8s.io/kube-aggregator/pkg/registry/apiservice (strategy.go and the table convertor of
etcd/etcd.go). The built-in group-versions are local APIServices that the autoregister controller keeps
(:mod:`gpulab.cluster.controllers.apiservices`); an APIService with a service is stored, but nothing proxies to
it (docs/fidelity.md)."""
from __future__ import annotations

from ..defaults import admission_config as defaults
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import apiservices as validation
from .simple import SimpleStrategy


class APIServiceStrategy(SimpleStrategy):
    resource = ResourceType("apiregistration.k8s.io", "v1", "apiservices", "APIService", False,
                            categories=("api-extensions",), subresources=("status",))
    printer = Printer(printers.apiservice_columns, printers.apiservice_cells)
    defaulter = staticmethod(defaults.default_api_service)
    validator = staticmethod(validation.validate_api_service)
    update_validator = staticmethod(validation.validate_api_service_update)
