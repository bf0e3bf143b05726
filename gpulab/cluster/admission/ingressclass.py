"""The DefaultIngressClass admission plugin (plugin/pkg/admission/network/defaultingressclass): a new Ingress
that names no class gets the default IngressClass (the newest, when several are marked default)."""
from __future__ import annotations

CLASSES = "ingressclasses.networking.k8s.io"
DEFAULT_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def admit(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    if operation != "CREATE" or rt.storage_key != "ingresses.networking.k8s.io":
        return
    spec = obj.setdefault("spec", {})
    if spec.get("ingressClassName") is not None or \
            LEGACY_CLASS_ANNOTATION in (obj["metadata"].get("annotations") or {}):
        return
    defaults = [c for c in api.store.list(CLASSES)
                if ((c["metadata"].get("annotations") or {}).get(DEFAULT_ANNOTATION)) == "true"]
    if defaults:
        newest = max(sorted(defaults, key=lambda c: c["metadata"]["name"]),
                     key=lambda c: c["metadata"].get("creationTimestamp", ""))
        spec["ingressClassName"] = newest["metadata"]["name"]
