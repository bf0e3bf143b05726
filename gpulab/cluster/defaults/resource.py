"""resource.k8s.io/v1 defaults: a port of pkg/apis/resource/v1/defaults.go.

An exact request or a subrequest without ``allocationMode`` gets
``ExactCount``, and an ``ExactCount`` one without ``count`` gets 1
(SetDefaults_ExactDeviceRequest, SetDefaults_DeviceSubRequest); a device
toleration without ``operator`` gets ``Equal`` (SetDefaults_DeviceToleration).
A device taint's ``timeAdded`` is set by the slice strategy, which has the clock.
"""
from __future__ import annotations


def _counted(request: dict) -> None:
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def default_claim_spec(spec: dict | None) -> None:
    """Every request of a claim spec (a ResourceClaim's, or a template's inner one)."""
    for request in ((spec or {}).get("devices") or {}).get("requests") or ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _counted(request["exactly"])
        for sub in request.get("firstAvailable") or ():
            if isinstance(sub, dict):
                _counted(sub)
