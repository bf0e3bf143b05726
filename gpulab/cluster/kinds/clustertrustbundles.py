"""ClusterTrustBundles: pkg/registry/certificates/clustertrustbundle/strategy.go (GA in v1.37)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import certificates as validation
from .simple import SimpleStrategy


class ClusterTrustBundleStrategy(SimpleStrategy):
    resource = ResourceType("certificates.k8s.io", "v1", "clustertrustbundles", "ClusterTrustBundle", False)
    printer = Printer(printers.clustertrustbundle_columns, printers.clustertrustbundle_cells)
    selectable_fields = {"spec.signerName": None}
    validator = staticmethod(validation.validate_cluster_trust_bundle)
    update_validator = staticmethod(validation.validate_cluster_trust_bundle_update)
