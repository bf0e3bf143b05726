"""What resource.k8s.io drops when the ``DRADeviceTaints`` gate is off: the dropDisabled*Fields steps of the
ResourceSlice, ResourceClaim and ResourceClaimTemplate strategies.

With the gate off (it is GA and on by default in v1.37) a new slice's device taints and a new claim spec's
tolerations are dropped, unless the stored object already uses them (pkg/registry/resource/resourceslice/strategy.go
``dropDisabledDRADeviceTaintsFields``, pkg/api/resourceclaimspec/util.go ``dropDisabledDRADeviceTaintsFields``).
DeviceTaintRules stay served either way: their storage follows the API configuration, not a gate.
"""
from __future__ import annotations

from .. import features


def _requests(spec: dict | None) -> list[dict]:
    """The ``exactly`` parts and ``firstAvailable`` subrequests of a claim spec: where tolerations live."""
    out = []
    for request in ((spec or {}).get("devices") or {}).get("requests") or ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            out.append(request["exactly"])
        out += [sub for sub in request.get("firstAvailable") or () if isinstance(sub, dict)]
    return out


def drop_tolerations(spec: dict | None, old_spec: dict | None) -> None:
    if features.enabled("DRADeviceTaints") or any(r.get("tolerations") for r in _requests(old_spec)):
        return
    for request in _requests(spec):
        request.pop("tolerations", None)


def _devices(obj: dict | None) -> list[dict]:
    return [d for d in ((obj or {}).get("spec") or {}).get("devices") or () if isinstance(d, dict)]


def drop_taints(obj: dict, old: dict | None) -> None:
    if features.enabled("DRADeviceTaints") or any(d.get("taints") for d in _devices(old)):
        return
    for device in _devices(obj):
        device.pop("taints", None)
