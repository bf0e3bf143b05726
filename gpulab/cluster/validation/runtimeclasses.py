"""node.k8s.io/v1 RuntimeClasses: ports of ValidateRuntimeClass(Update), validateOverhead and validateScheduling
in pkg/apis/node/validation/validation.go."""
from __future__ import annotations

from ..errors import FieldError
from .field import immutable, invalid
from .formats import name_is_dns_label, name_is_dns_subdomain
from .labels import validate_labels
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .resources import validate_container_resource_name, validate_resource_quantity_value
from .scheduling import validate_tolerations


def validate_runtime_class(rc: dict) -> list[FieldError]:
    errs = validate_object_meta(rc.get("metadata") or {}, False, name_is_dns_subdomain)
    handler = rc.get("handler") or ""
    errs.extend(invalid(Path("handler"), handler, m) for m in name_is_dns_label(handler, False))
    fixed = (rc.get("overhead") or {}).get("podFixed") or {}
    for name in sorted(fixed):
        path = Path("overhead").child("podFixed").key(name)
        errs.extend(validate_container_resource_name(name, path))
        errs.extend(validate_resource_quantity_value(name, fixed[name], path))
    scheduling = rc.get("scheduling")
    if scheduling is not None:
        errs.extend(validate_labels(scheduling.get("nodeSelector"), Path("scheduling").child("nodeSelector")))
        errs.extend(validate_tolerations(scheduling.get("tolerations"), Path("scheduling").child("tolerations")))
    return errs


def validate_runtime_class_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(Path("handler"), new.get("handler"), old.get("handler"))
