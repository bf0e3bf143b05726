"""Which ResourceClaims a pod uses, and whether a claim belongs to and is reserved for it.

Ports of k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go
(``Name``, ``IsForPod``, ``IsReservedForPod``) with upstream's error texts,
shared by the ResourceClaim controller, the DynamicResources plugin and the
node agent.
"""
from __future__ import annotations

from ..objects import controller_of

CLAIMS = "resourceclaims.resource.k8s.io"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
CLASSES = "deviceclasses.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
TAINT_RULES = "devicetaintrules.resource.k8s.io"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
CLAIM_NOT_CREATED = "ResourceClaim not created yet"  # resourceclaim.ErrClaimNotFound
API_UNSUPPORTED = "none of the supported fields are set"  # resourceclaim.ErrAPIUnsupported


class ClaimNameError(LookupError):
    """resourceclaim.Name's error: the template's claim does not exist yet, or the entry names neither source."""


def pod_claims(pod: dict) -> list[dict]:
    return list((pod.get("spec") or {}).get("resourceClaims") or ())


def claim_name(pod: dict, pod_claim: dict) -> tuple[str | None, bool]:
    """Name: (the claim's name or None when the controller decided none is needed, whether the claim must be
    owned by the pod); ``ClaimNameError`` while a template's claim is not recorded in the pod's status."""
    meta = pod.get("metadata") or {}
    if pod_claim.get("resourceClaimName"):
        return pod_claim["resourceClaimName"], False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            if status.get("name") == pod_claim.get("name"):
                return status.get("resourceClaimName"), True
        raise ClaimNameError(f'pod "{meta.get("namespace")}/{meta.get("name")}": {CLAIM_NOT_CREATED}')
    raise ClaimNameError(f'pod "{meta.get("namespace")}/{meta.get("name")}", spec.resourceClaim '
                         f'"{pod_claim.get("name")}": {API_UNSUPPORTED}')


def is_for_pod(pod: dict, claim: dict) -> str | None:
    """IsForPod: None, or why a template's claim cannot be used by this pod."""
    pmeta, cmeta = pod["metadata"], claim["metadata"]
    if cmeta.get("namespace") != pmeta.get("namespace"):
        return (f"ResourceClaim {cmeta.get('namespace')}/{cmeta['name']} is not in the same namespace as Pod "
                f"{pmeta.get('namespace')}/{pmeta['name']}")
    owner = controller_of(claim)
    if not owner or owner.get("uid") != pmeta.get("uid"):
        return (f"ResourceClaim {cmeta.get('namespace')}/{cmeta['name']} was not created for Pod "
                f"{pmeta.get('namespace')}/{pmeta['name']} (Pod is not owner)")
    return None


def is_reserved_for(pod: dict, claim: dict) -> bool:
    uid = pod["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in (claim.get("status") or {}).get("reservedFor") or ())


def container_claims(container: dict) -> list[tuple[str, str]]:
    """(pod claim name, request name or "") pairs a container's ``resources.claims`` asks for."""
    return [(c.get("name") or "", c.get("request") or "") for c in (container.get("resources") or {}).get("claims")
            or ()]


def pod_reference(pod: dict) -> dict:
    """The ResourceClaimConsumerReference of a pod (``status.reservedFor`` entry)."""
    meta = pod["metadata"]
    return {"resource": "pods", "name": meta["name"], "uid": meta.get("uid")}
