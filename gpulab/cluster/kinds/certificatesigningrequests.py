"""CertificateSigningRequests: pkg/registry/certificates/certificates/strategy.go.

PrepareForCreate records who asked (the requesting user; here always the
kubeconfig's cluster admin, as kind's admin certificate names it) and clears
the status. Three writers each change their own part: updates the spec-less
metadata, ``/approval`` only the Approved/Denied conditions (``kubectl
certificate approve``), ``/status`` the certificate and the other conditions.
"""
from __future__ import annotations

from ..objects import clone
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import certificates as validation
from .strategy import STATUS, Context, Strategy

# kind's admin kubeconfig: CN=kubernetes-admin, O=kubeadm:cluster-admins
REQUESTING_USER = {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}
_APPROVAL_TYPES = ("Approved", "Denied")


class CertificateSigningRequestStrategy(Strategy):
    resource = ResourceType("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest",
                            False, short_names=("csr",), subresources=("approval", "status"))
    subresources = {"approval": STATUS}
    printer = Printer(printers.csr_columns, printers.csr_cells)
    selectable_fields = {"spec.signerName": None}
    status_reset_fields = (("spec",), ("status", "conditions"))

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        for field in ("username", "uid", "groups", "extra"):
            spec.pop(field, None)
        spec.update(clone(REQUESTING_USER))
        obj["status"] = {}

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        if subresource == "approval":
            out = clone(old)
            keep = [c for c in (old.get("status") or {}).get("conditions") or [] if c.get("type") not in
                    _APPROVAL_TYPES]
            approval = [c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") in
                        _APPROVAL_TYPES]
            out.setdefault("status", {})["conditions"] = approval + keep
            return out
        if subresource == "status":
            out = self._prepare_for_status_update(new, old)
            approval = [c for c in (old.get("status") or {}).get("conditions") or [] if c.get("type") in
                        _APPROVAL_TYPES]
            others = [c for c in (out.get("status") or {}).get("conditions") or [] if c.get("type") not in
                      _APPROVAL_TYPES]
            if approval or others:
                out.setdefault("status", {})["conditions"] = approval + others
            return out
        new["spec"] = clone(old.get("spec") or {})
        return super().prepare_for_update(new, old, subresource)

    def reset_fields(self, subresource: str | None):
        if subresource == "approval":
            return (("spec",), ("status", "certificate"))
        return super().reset_fields(subresource)

    def validate(self, obj: dict) -> list:
        return validation.validate_csr(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource in ("status", "approval"):
            return validation.validate_csr_status_update(new, old)
        return validation.validate_csr_update(new, old)
