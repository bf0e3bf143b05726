"""certificates.k8s.io/v1: CertificateSigningRequests, ClusterTrustBundles and PodCertificateRequests.

Ports of validateCertificateSigningRequest (validateCSR, the usages, signer
name and expiration checks, validateConditions), ValidateCertificateSigningRequestUpdate /
StatusUpdate / ApprovalUpdate and ValidateClusterTrustBundle in
pkg/apis/certificates/validation/validation.go. The request is parsed and its
signature checked with the ``cryptography`` package, as Go's
x509.ParseCertificateRequest and CheckSignature do.
"""
from __future__ import annotations

import base64

from cryptography import x509

from ..errors import FieldError
from .field import duplicate, forbidden, immutable, invalid, not_supported, required
from .formats import is_dns1123_subdomain, name_is_dns_subdomain, path_segment_name
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

SPEC = Path("spec")
USAGES = ["any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
          "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system",
          "ipsec tunnel", "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc",
          "ocsp signing", "s/mime", "server auth", "signing", "timestamping"]
LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
_CONDITION_TYPES = ("Approved", "Denied", "Failed")


def _decoded(value) -> bytes:
    try:
        return base64.b64decode(value or "", validate=True)
    except (ValueError, TypeError):
        return b""


def _parse_request(request: bytes) -> str | None:
    """validateCSR: the error text, or None for a well-formed, well-signed request."""
    text = request.decode(errors="replace")
    if "-----BEGIN " not in text:
        return "PEM block type must be CERTIFICATE REQUEST"
    if "-----BEGIN CERTIFICATE REQUEST-----" not in text:
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        csr = x509.load_pem_x509_csr(request)
    except ValueError as exc:
        return f"asn1: structure error: {exc}"
    if not csr.is_signature_valid:
        return "x509: ECDSA verification failure"
    return None


def validate_signer_name(name: str, path: Path) -> list[FieldError]:
    """ValidateSignerName: a domain-prefixed path, the domain a DNS subdomain."""
    if not name:
        return [required(path)]
    domain, _, rest = name.partition("/")
    if not rest or not domain:
        return [invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")]
    errs = [invalid(path, name, f"validating the domain ({domain}): {m}") for m in is_dns1123_subdomain(domain)]
    return errs


def _conditions(csr: dict) -> list[FieldError]:
    path = Path("status").child("conditions")
    errs = []
    seen: set[str] = set()
    types = set()
    for i, cond in enumerate((csr.get("status") or {}).get("conditions") or []):
        kind = cond.get("type") or ""
        if not kind:
            errs.append(required(path.index(i).child("type")))
        if kind in ("Approved", "Denied", "Failed") and kind in seen:
            errs.append(duplicate(path.index(i).child("type"), kind))
        seen.add(kind)
        types.add(kind)
        status = cond.get("status") or ""
        if not status:
            errs.append(required(path.index(i).child("status")))
        elif status not in ("True", "False", "Unknown"):
            errs.append(not_supported(path.index(i).child("status"), status, ["False", "True", "Unknown"]))
    if "Approved" in types and "Denied" in types:
        errs.append(invalid(path, (csr.get("status") or {}).get("conditions"),
                            "Approved and Denied conditions are mutually exclusive"))
    return errs


def validate_csr(csr: dict) -> list[FieldError]:
    errs = validate_object_meta(csr.get("metadata") or {}, False, path_segment_name)
    spec = csr.get("spec") or {}
    problem = _parse_request(_decoded(spec.get("request")))
    if problem is not None:
        errs.append(invalid(SPEC.child("request"), spec.get("request") or "", problem))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(required(SPEC.child("usages")))
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        if usage not in USAGES:
            errs.append(not_supported(SPEC.child("usages").index(i), usage, USAGES))
        if usage in seen:
            errs.append(duplicate(SPEC.child("usages").index(i), usage))
        seen.add(usage)
    signer = spec.get("signerName") or ""
    if signer == LEGACY_SIGNER:
        errs.append(invalid(SPEC.child("signerName"), signer, "the legacy signerName is not allowed via this API "
                                                              "version"))
    else:
        errs.extend(validate_signer_name(signer, SPEC.child("signerName")))
    seconds = spec.get("expirationSeconds")
    if seconds is not None and seconds < 600:
        errs.append(invalid(SPEC.child("expirationSeconds"), seconds, "may not specify a duration less than 600 "
                                                                      "seconds (10 minutes)"))
    return errs + _conditions(csr)


def validate_csr_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(SPEC, new.get("spec"), old.get("spec"))


def validate_csr_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(_conditions(new))
    old_cert, cert = (old.get("status") or {}).get("certificate"), (new.get("status") or {}).get("certificate")
    if old_cert and cert != old_cert:
        errs.append(forbidden(Path("status").child("certificate"), "updates may not modify existing certificate "
                                                                   "content"))
    return errs


def validate_cluster_trust_bundle(bundle: dict) -> list[FieldError]:
    errs = validate_object_meta(bundle.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = bundle.get("spec") or {}
    if spec.get("signerName"):
        errs.extend(validate_signer_name(spec["signerName"], SPEC.child("signerName")))
    if "-----BEGIN CERTIFICATE-----" not in (spec.get("trustBundle") or ""):
        errs.append(invalid(SPEC.child("trustBundle"), "<value omitted>", "at least one trust anchor must be "
                                                                          "provided"))
    return errs


def validate_cluster_trust_bundle_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(e for e in validate_cluster_trust_bundle(new) if not e.field.startswith("metadata."))
    return errs + immutable(SPEC.child("signerName"), (new.get("spec") or {}).get("signerName"),
                            (old.get("spec") or {}).get("signerName"))


def validate_pod_certificate_request(pcr: dict) -> list[FieldError]:
    errs = validate_object_meta(pcr.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = pcr.get("spec") or {}
    errs.extend(validate_signer_name(spec.get("signerName") or "", SPEC.child("signerName")))
    for field in ("podName", "podUID", "serviceAccountName", "serviceAccountUID", "nodeName", "nodeUID",
                  "pkixPublicKey", "proofOfPossession"):
        if not spec.get(field):
            errs.append(required(SPEC.child(field)))
    return errs


def validate_pod_certificate_request_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(SPEC, new.get("spec"), old.get("spec"))
