"""apiregistration.k8s.io/v1 APIServices: ports of ValidateAPIService(Update) in
k8s.io/kube-aggregator/pkg/apis/apiregistration/validation/validation.go."""
from __future__ import annotations

from ..errors import FieldError
from .field import invalid, required
from .formats import is_dns1035_label, is_dns1123_subdomain, is_valid_port_num, path_segment_name
from .meta import validate_object_meta
from .path import Path
from .updates import update_of

SPEC = Path("spec")


def validate_api_service(svc: dict) -> list[FieldError]:
    spec = svc.get("spec") or {}
    group, version = spec.get("group") or "", spec.get("version") or ""
    wanted = f"{version}.{group}"

    def name_fn(name: str, prefix: bool) -> list[str]:  # the name must be version.group
        return path_segment_name(name, prefix) or ([] if name == wanted else
                                                   [f'must be `spec.version+"."+spec.group`: "{wanted}"'])

    errs = validate_object_meta(svc.get("metadata") or {}, False, name_fn)
    if not group and version != "v1":
        errs.append(required(SPEC.child("group"), "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs.extend(invalid(SPEC.child("group"), group, m) for m in is_dns1123_subdomain(group))
    errs.extend(invalid(SPEC.child("version"), version, m) for m in is_dns1035_label(version))
    minimum, priority = spec.get("groupPriorityMinimum", 0), spec.get("versionPriority", 0)
    if not 0 < minimum <= 20000:
        errs.append(invalid(SPEC.child("groupPriorityMinimum"), minimum, "must be positive and less than 20000"))
    if not 0 < priority <= 1000:
        errs.append(invalid(SPEC.child("versionPriority"), priority, "must be positive and less than 1000"))
    service = spec.get("service")
    if service is None:
        if spec.get("caBundle"):
            errs.append(invalid(SPEC.child("caBundle"), f"{len(spec['caBundle'])} bytes",
                                "local APIServices may not have a caBundle"))
        if spec.get("insecureSkipTLSVerify"):
            errs.append(invalid(SPEC.child("insecureSkipTLSVerify"), True,
                                "local APIServices may not have insecureSkipTLSVerify"))
        return errs
    if not service.get("namespace"):
        errs.append(required(SPEC.child("service", "namespace")))
    if not service.get("name"):
        errs.append(required(SPEC.child("service", "name")))
    port = service.get("port", 443)
    errs.extend(invalid(SPEC.child("service", "port"), port, m) for m in is_valid_port_num(port))
    if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
        errs.append(invalid(SPEC.child("insecureSkipTLSVerify"), True, "may not be true if caBundle is present"))
    return errs


validate_api_service_update = update_of(validate_api_service)
