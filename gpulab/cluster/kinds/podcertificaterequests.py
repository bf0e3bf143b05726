"""PodCertificateRequests: pkg/registry/certificates/podcertificaterequest/strategy.go (GA in v1.37). Stored; no
signer in the embedded cluster issues pod certificates (docs/fidelity.md)."""
from __future__ import annotations

from ..registry import ResourceType
from ..validation import certificates as validation
from .simple import SimpleStrategy


class PodCertificateRequestStrategy(SimpleStrategy):
    resource = ResourceType("certificates.k8s.io", "v1", "podcertificaterequests", "PodCertificateRequest", True,
                            subresources=("status",))
    selectable_fields = {"spec.signerName": None, "spec.podName": None, "spec.nodeName": None}
    validator = staticmethod(validation.validate_pod_certificate_request)
    update_validator = staticmethod(validation.validate_pod_certificate_request_update)
