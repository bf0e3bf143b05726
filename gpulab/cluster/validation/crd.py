"""CustomResourceDefinitions: validation, defaulting and the status apiextensions-apiserver's controllers set.

Validation follows k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go
(ValidateCustomResourceDefinition / ...Update), which runs on the *internal* type.
The v1 -> internal conversion (pkg/apis/apiextensions/v1/conversion.go) moves
per-version ``schema``, ``subresources`` and ``additionalPrinterColumns`` to the
top level when every version has the same value, so errors about a
single-version CRD's schema read ``spec.validation.openAPIV3Schema...`` and its
printer columns ``spec.additionalPrinterColumns[0]...``, exactly as kubectl shows
them; that hoisting is redone here before validating.

Defaulting is pkg/apis/apiextensions/v1/defaults.go. The status is what the
naming controller (NamesAccepted), the API approval controller and the
establishing controller (Established) write when there is no name conflict.
"""
from __future__ import annotations

import copy
from urllib.parse import urlparse

from ..errors import FieldError
from ..gofmt import go_quote
from . import gofield
from .formats import is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain
from .gofield import GoText
from .meta import validate_object_meta
from .path import Path
from .structural_schema import validate_version_schema

API_APPROVED_ANNOTATION = "api-approved.kubernetes.io"
PRINTER_COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
PRINTER_COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]
ACCEPTED_CONVERSION_REVIEW_VERSIONS = ["v1", "v1beta1"]


# --- defaulting ----------------------------------------------------------
def crd_defaults(crd: dict) -> None:
    """SetDefaults_CustomResourceDefinition: singular, listKind, conversion None, webhook port, storedVersions."""
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if not names.get("singular"):
        names["singular"] = (names.get("kind") or "").lower()
    if not names.get("listKind") and names.get("kind"):
        names["listKind"] = names["kind"] + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    service = ((spec["conversion"].get("webhook") or {}).get("clientConfig") or {}).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443
    status = crd.get("status")
    if isinstance(status, dict) and not status.get("storedVersions"):
        stored = _storage_version(spec)
        if stored:
            status["storedVersions"] = [stored]


def _storage_version(spec: dict) -> str | None:
    return next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), None)


# --- status ---------------------------------------------------------------
def crd_established_status(crd: dict, now: str) -> dict:
    """The status of a CRD whose names are free: NamesAccepted and Established True, accepted names, stored version.

    Names are copied in the field order of CustomResourceDefinitionNames; conditions in the order the controllers
    add them (naming, API approval for *.k8s.io and *.kubernetes.io groups, establishing).
    """
    spec = crd.get("spec") or {}
    requested = spec.get("names") or {}
    accepted = {k: copy.deepcopy(requested[k]) for k in
                ("plural", "singular", "shortNames", "kind", "listKind", "categories") if requested.get(k)}
    conditions = [_condition("NamesAccepted", "True", now, "NoConflicts", "no conflicts found")]
    approval = _approval_condition(crd, now)
    if approval:
        conditions.append(approval)
    conditions.append(_condition("Established", "True", now, "InitialNamesAccepted",
                                 "the initial names have been accepted"))
    status = {"conditions": conditions, "acceptedNames": accepted}
    stored = _storage_version(spec)
    if stored:
        status["storedVersions"] = [stored]
    return status


def _condition(type_: str, status: str, now: str, reason: str, message: str) -> dict:
    return {"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}


def is_protected_community_group(group: str) -> bool:
    """apihelpers.IsProtectedCommunityGroup."""
    return group in ("k8s.io", "kubernetes.io") or group.endswith(".k8s.io") or group.endswith(".kubernetes.io")


def api_approval_state(annotations: dict) -> tuple[str, str]:
    """apihelpers.GetAPIApprovalState: (Missing|Bypassed|Approved|Invalid, reason)."""
    value = (annotations or {}).get(API_APPROVED_ANNOTATION, "")
    if not value:
        return "Missing", (f'protected groups must have approval annotation "{API_APPROVED_ANNOTATION}", '
                           "see https://github.com/kubernetes/enhancements/pull/1111")
    if value.startswith("unapproved"):
        return "Bypassed", f"not approved: {go_quote(value)}"
    parsed = urlparse(value)
    if parsed.scheme and parsed.netloc:
        return "Approved", f"approved in {value}"
    return "Invalid", (f'protected groups must have approval annotation "{API_APPROVED_ANNOTATION}" with either a URL '
                       'or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111')


def _approval_condition(crd: dict, now: str) -> dict | None:
    """apiapproval controller calculateCondition."""
    if not is_protected_community_group((crd.get("spec") or {}).get("group", "")):
        return None
    state, reason = api_approval_state((crd.get("metadata") or {}).get("annotations") or {})
    status, why = {"Invalid": ("False", "InvalidAnnotation"), "Missing": ("False", "MissingAnnotation"),
                   "Approved": ("True", "ApprovedAnnotation"), "Bypassed": ("False", "UnapprovedAnnotation")}[state]
    return _condition("KubernetesAPIApprovalPolicyConformant", status, now, why, reason)


# --- the internal view ------------------------------------------------------
def _semantic_equal(a, b) -> bool:
    """apiequality.Semantic.DeepEqual for slices: nil and empty are equal."""
    return (a or []) == (b or []) if isinstance(a, list) or isinstance(b, list) else a == b


def _hoist(spec: dict) -> tuple[list[dict], dict]:
    """Convert_v1_CustomResourceDefinitionSpec_To_apiextensions: identical per-version fields move to the top.

    Returns the internal versions and the top-level {validation, subresources, additionalPrinterColumns}.
    """
    versions = [dict(v) for v in spec.get("versions") or []]
    top: dict = {"validation": None, "subresources": None, "additionalPrinterColumns": None}
    if not versions:
        return versions, top
    for v1_name, internal_name in (("schema", "validation"), ("subresources", "subresources"),
                                   ("additionalPrinterColumns", "additionalPrinterColumns")):
        first = versions[0].get(v1_name)
        if all(_semantic_equal(v.get(v1_name), first) for v in versions):
            top[internal_name] = first
            for v in versions:
                v.pop(v1_name, None)
    return versions, top


def _go_versions(versions: list[dict]) -> GoText:
    """%#v of []apiextensions.CustomResourceDefinitionVersion (pointer addresses are stand-ins)."""
    def pointer(type_name: str, value) -> str:
        return f"(*{type_name})(nil)" if value is None else f"(*{type_name})(0xc000a1c000)"

    def columns(cols) -> str:
        if not cols:
            return "[]apiextensions.CustomResourceColumnDefinition(nil)"
        return "[]apiextensions.CustomResourceColumnDefinition{" + ", ".join(
            f"apiextensions.CustomResourceColumnDefinition{{Name:{go_quote(c.get('name', ''))}, "
            f"Type:{go_quote(c.get('type', ''))}, Format:{go_quote(c.get('format', ''))}, "
            f"Description:{go_quote(c.get('description', ''))}, Priority:{int(c.get('priority', 0))}, "
            f"JSONPath:{go_quote(c.get('jsonPath', ''))}}}" for c in cols) + "}"

    def selectable(fields) -> str:
        if not fields:
            return "[]apiextensions.SelectableField(nil)"
        return "[]apiextensions.SelectableField{" + ", ".join(
            f"apiextensions.SelectableField{{JSONPath:{go_quote(f.get('jsonPath', ''))}}}" for f in fields) + "}"

    items = ", ".join(
        f"apiextensions.CustomResourceDefinitionVersion{{Name:{go_quote(v.get('name', ''))}, "
        f"Served:{str(bool(v.get('served'))).lower()}, Storage:{str(bool(v.get('storage'))).lower()}, "
        f"Deprecated:{str(bool(v.get('deprecated'))).lower()}, "
        f"DeprecationWarning:{pointer('string', v.get('deprecationWarning'))}, "
        f"Schema:{pointer('apiextensions.CustomResourceValidation', v.get('schema'))}, "
        f"Subresources:{pointer('apiextensions.CustomResourceSubresources', v.get('subresources'))}, "
        f"AdditionalPrinterColumns:{columns(v.get('additionalPrinterColumns'))}, "
        f"SelectableFields:{selectable(v.get('selectableFields'))}}}" for v in versions)
    return GoText(f"[]apiextensions.CustomResourceDefinitionVersion{{{items}}}")


def _go_strings(values: list[str]) -> GoText:
    """%#v of a []string."""
    if not values:
        return GoText("[]string(nil)")
    return GoText("[]string{" + ", ".join(go_quote(v) for v in values) + "}")


# --- validation -----------------------------------------------------------
def validate_crd(crd: dict, old: dict | None = None) -> list[FieldError]:
    """ValidateCustomResourceDefinition, or ValidateCustomResourceDefinitionUpdate when ``old`` is given."""
    spec = crd.get("spec") or {}
    meta = crd.get("metadata") or {}
    required_name = f"{(spec.get('names') or {}).get('plural', '')}.{spec.get('group', '')}"

    def name_fn(name: str, prefix: bool) -> list[str]:
        msgs = name_is_dns_subdomain(name, prefix)
        if name != required_name:
            msgs.append('must be spec.names.plural+"."+spec.group')
        return msgs

    # on update the registry's generic ObjectMeta checks (validation/__init__.py) cover metadata
    errs = validate_object_meta(meta, False, name_fn, kube_finalizers=False) if old is None else []
    errs += _validate_spec(spec, Path("spec"))
    if old is not None:
        errs += _validate_spec_update(spec, old.get("spec") or {}, _established(old), Path("spec"))
    status = crd.get("status") or {}
    if old is not None:
        errs += validate_names(status.get("acceptedNames") or {}, Path("status").child("acceptedNames"))
        stored = status.get("storedVersions") or []
    else:
        stored = [v] if (v := _storage_version(spec)) else []  # PrepareForCreate resets the status
    errs += _validate_stored_versions(stored, spec.get("versions") or [], Path("status").child("storedVersions"))
    errs += _validate_api_approval(crd, old)
    errs += _validate_preserve_unknown_fields(crd, old)
    return errs


def _established(crd: dict) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def _validate_spec(spec: dict, path: Path) -> list[FieldError]:
    """validateCustomResourceDefinitionSpec, on the internal (hoisted) form."""
    errs: list[FieldError] = []
    group = spec.get("group") or ""
    if not group:
        errs.append(gofield.required(path.child("group"), ""))
    elif msgs := is_dns1123_subdomain(group):
        errs.append(gofield.invalid(path.child("group"), group, ",".join(msgs)))
    elif len(group.split(".")) < 2:
        errs.append(gofield.invalid(path.child("group"), group, "should be a domain with at least one dot"))
    errs += _enum_strings(path.child("scope"), spec.get("scope") or "", ["Cluster", "Namespaced"])
    versions, top = _hoist(spec)
    if not (top["validation"] or {}).get("openAPIV3Schema"):
        for i, v in enumerate(versions):
            if not (v.get("schema") or {}).get("openAPIV3Schema"):
                errs.append(gofield.required(path.child("versions").index(i).child("schema").child("openAPIV3Schema"),
                                             "schemas are required"))
    storage_count = 0
    names_seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        storage_count += bool(version.get("storage"))
        name = version.get("name") or ""
        unique = unique and name not in names_seen
        names_seen.add(name)
        if msgs := is_dns1035_label(name):
            errs.append(gofield.invalid(path.child("versions").index(i).child("name"), name, ",".join(msgs)))
        subresources = top["subresources"] if "subresources" not in version else version.get("subresources")
        errs += _validate_version(version, path.child("versions").index(i), _status_enabled(subresources))
    if not unique:
        errs.append(gofield.invalid(path.child("versions"), _go_versions(versions), "must contain unique version names"))
    if storage_count != 1:
        errs.append(gofield.invalid(path.child("versions"), _go_versions(versions),
                                    "must have exactly one version marked as storage version"))
    if versions and (msgs := is_dns1035_label(versions[0].get("name") or "")):
        errs.append(gofield.invalid(path.child("version"), versions[0].get("name") or "", ",".join(msgs)))
    names = spec.get("names") or {}
    for name in ("plural", "singular", "kind", "listKind"):
        if not names.get(name):
            errs.append(gofield.required(path.child("names", name), ""))
    errs += validate_names(names, path.child("names"))
    if (top["validation"] or {}).get("openAPIV3Schema"):
        any_status = _status_enabled(top["subresources"]) or any(
            _status_enabled(v.get("subresources")) for v in versions)
        errs += validate_version_schema(top["validation"]["openAPIV3Schema"], any_status, path.child("validation"))
    errs += _validate_subresources(top["subresources"], path.child("subresources"))
    for i, column in enumerate(top["additionalPrinterColumns"] or []):
        errs += _validate_column(column, path.child("additionalPrinterColumns").index(i))
    errs += _validate_conversion(spec.get("conversion"), path.child("conversion"))
    return errs


def _status_enabled(subresources: dict | None) -> bool:
    return isinstance(subresources, dict) and subresources.get("status") is not None


def _enum_strings(path: Path, value: str, accepted: list[str]) -> list[FieldError]:
    """validateEnumStrings with required=true."""
    if not value:
        return [gofield.required(path, "")]
    return [] if value in accepted else [gofield.not_supported(path, value, accepted)]


def _validate_version(version: dict, path: Path, status_enabled: bool) -> list[FieldError]:
    """validateCustomResourceDefinitionVersion (the per-version fields left after hoisting)."""
    errs = [gofield.invalid(path.child("deprecationWarning"), version.get("deprecationWarning"), msg)
            for msg in _deprecation_warning_errors(bool(version.get("deprecated")), version.get("deprecationWarning"))]
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    if schema:
        errs += validate_version_schema(schema, status_enabled, path.child("schema"))
    errs += _validate_subresources(version.get("subresources"), path.child("subresources"))
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        errs += _validate_column(column, path.child("additionalPrinterColumns").index(i))
    return errs


def _deprecation_warning_errors(deprecated: bool, warning: str | None) -> list[str]:
    """validateDeprecationWarning."""
    if not deprecated and warning is not None:
        return ["can only be set for deprecated versions"]
    if warning is None:
        return []
    errs = []
    if len(warning) > 256:
        errs.append("must be <= 256 characters long")
    if not warning:
        errs.append("must not be an empty string")
    for i, ch in enumerate(warning):
        if not ch.isprintable():
            errs.append(f"must only contain printable UTF-8 characters; non-printable character found at index "
                        f"{len(warning[:i].encode())}")
            break
    return errs


def validate_names(names: dict, path: Path) -> list[FieldError]:
    """ValidateCustomResourceDefinitionNames."""
    errs: list[FieldError] = []
    for name in ("plural", "singular"):
        value = names.get(name) or ""
        if value and (msgs := is_dns1035_label(value)):
            errs.append(gofield.invalid(path.child(name), value, ",".join(msgs)))
    for name in ("kind", "listKind"):
        value = names.get(name) or ""
        if value and (msgs := is_dns1035_label(value.lower())):
            errs.append(gofield.invalid(path.child(name), value,
                                        "may have mixed case, but should otherwise match: " + ",".join(msgs)))
    for i, short in enumerate(names.get("shortNames") or []):
        if msgs := is_dns1035_label(short):
            errs.append(gofield.invalid(path.child("shortNames").index(i), short, ",".join(msgs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(gofield.invalid(path.child("listKind"), names["listKind"], "kind and listKind may not be the same"))
    for i, category in enumerate(names.get("categories") or []):
        if msgs := is_dns1035_label(category):
            errs.append(gofield.invalid(path.child("categories").index(i), category, ",".join(msgs)))
    return errs


def _validate_column(column: dict, path: Path) -> list[FieldError]:
    """ValidateCustomResourceColumnDefinition (the internal field is JSONPath, so is the error path)."""
    errs = []
    if not column.get("name"):
        errs.append(gofield.required(path.child("name"), ""))
    type_ = column.get("type") or ""
    must = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not type_:
        errs.append(gofield.required(path.child("type"), must))
    elif type_ not in PRINTER_COLUMN_TYPES:
        errs.append(gofield.invalid(path.child("type"), type_, must))
    fmt = column.get("format") or ""
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errs.append(gofield.invalid(path.child("format"), fmt, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = column.get("jsonPath") or ""
    if not json_path:
        errs.append(gofield.required(path.child("JSONPath"), ""))
    else:
        errs += _simple_json_path(json_path, path.child("JSONPath"))
    return errs


def _simple_json_path(s: str, path: Path) -> list[FieldError]:
    """validateSimpleJSONPath."""
    if not s:
        return [gofield.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [gofield.invalid(path, s, "must be a simple json path starting with .")]
    return []


def _validate_subresources(subresources: dict | None, path: Path) -> list[FieldError]:
    """ValidateCustomResourceDefinitionSubresources: the scale paths."""
    scale = (subresources or {}).get("scale")
    if not isinstance(scale, dict):
        return []
    errs = []
    for name, prefixes, detail in (("specReplicasPath", (".spec.",), "should be a json path under .spec"),
                                   ("statusReplicasPath", (".status.",), "should be a json path under .status")):
        value = scale.get(name) or ""
        if not value:
            errs.append(gofield.required(path.child(f"scale.{name}"), ""))
        elif bad := _simple_json_path(value, path.child(f"scale.{name}")):
            errs += bad
        elif not value.startswith(prefixes):
            errs.append(gofield.invalid(path.child(f"scale.{name}"), value, detail))
    selector = scale.get("labelSelectorPath")
    if selector:
        if bad := _simple_json_path(selector, path.child("scale.labelSelectorPath")):
            errs += bad
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(gofield.invalid(path.child("scale.labelSelectorPath"), selector,
                                        "should be a json path under either .spec or .status"))
    return errs


def _validate_conversion(conversion: dict | None, path: Path) -> list[FieldError]:
    """validateCustomResourceConversion, with the internal field names (webhookClientConfig, ...)."""
    if conversion is None:
        return []
    errs = _enum_strings(path.child("strategy"), conversion.get("strategy") or "", ["None", "Webhook"])
    webhook = conversion.get("webhook") or {}
    client_config = webhook.get("clientConfig")
    review_versions = webhook.get("conversionReviewVersions")
    if conversion.get("strategy") == "Webhook":
        if client_config is None:
            errs.append(gofield.required(path.child("webhookClientConfig"), "required when strategy is set to Webhook"))
        elif (client_config.get("url") is None) == (client_config.get("service") is None):
            errs.append(gofield.required(path.child("webhookClientConfig"), "exactly one of url or service is required"))
        errs += _conversion_review_versions(review_versions or [], path.child("conversionReviewVersions"))
    else:
        if client_config is not None:
            errs.append(gofield.forbidden(path.child("webhookClientConfig"),
                                          "should not be set when strategy is not set to Webhook"))
        if review_versions:
            errs.append(gofield.forbidden(path.child("conversionReviewVersions"),
                                          "should not be set when strategy is not set to Webhook"))
    return errs


def _conversion_review_versions(versions: list[str], path: Path) -> list[FieldError]:
    """validateConversionReviewVersions."""
    if not versions:
        return [gofield.required(path, "")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    accepted = False
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(gofield.invalid(path.index(i), v, "duplicate version"))
            continue
        seen.add(v)
        errs += [gofield.invalid(path.index(i), v, msg) for msg in is_dns1035_label(v)]
        accepted = accepted or v in ACCEPTED_CONVERSION_REVIEW_VERSIONS
    if not accepted:
        errs.append(gofield.invalid(path, _go_strings(versions),
                                    "must include at least one of " + ", ".join(ACCEPTED_CONVERSION_REVIEW_VERSIONS)))
    return errs


def _validate_spec_update(spec: dict, old_spec: dict, established: bool, path: Path) -> list[FieldError]:
    """validateCustomResourceDefinitionSpecUpdate's immutable fields (ValidateImmutableField)."""
    errs = []
    checks = [("scope",), ("names", "kind")] if established else []
    checks += [("group",), ("names", "plural")]
    for parts in checks:
        new, old = spec, old_spec
        for part in parts:
            new, old = (new or {}).get(part, ""), (old or {}).get(part, "")
        if new != old:
            errs.append(gofield.invalid(path.child(*parts), new, "field is immutable"))
    return errs


def _validate_stored_versions(stored: list[str], versions: list[dict], path: Path) -> list[FieldError]:
    """ValidateCustomResourceDefinitionStoredVersions."""
    if not stored:
        return [gofield.invalid(path, _go_strings(stored), "must have at least one stored version")]
    errs = []
    remaining = {v: i for i, v in enumerate(stored)}
    for version in versions:
        name = version.get("name")
        if version.get("storage") and name not in remaining:
            errs.append(gofield.invalid(path, _go_strings(stored), f"must have the storage version {name}"))
        remaining.pop(name, None)
    for v, i in sorted(remaining.items(), key=lambda kv: kv[1]):
        errs.append(gofield.invalid(path.index(i), v, f"missing from spec.versions; {v} was previously a storage "
                                                      f"version, and must remain in spec.versions until a storage "
                                                      f"migration ensures no data remains persisted in {v} and "
                                                      f"removes {v} from status.storedVersions"))
    return errs


def _validate_api_approval(crd: dict, old: dict | None) -> list[FieldError]:
    """validateAPIApproval: protected groups need the api-approved.kubernetes.io annotation."""
    if not is_protected_community_group((crd.get("spec") or {}).get("group", "")):
        return []
    state, reason = api_approval_state((crd.get("metadata") or {}).get("annotations") or {})
    if old is not None and api_approval_state((old.get("metadata") or {}).get("annotations") or {})[0] == state:
        return []
    path = Path("metadata").child("annotations").key(API_APPROVED_ANNOTATION)
    if state == "Missing":
        return [gofield.required(path, reason)]
    if state == "Invalid":
        return [gofield.invalid(path, crd["metadata"]["annotations"][API_APPROVED_ANNOTATION], reason)]
    return []


def _validate_preserve_unknown_fields(crd: dict, old: dict | None) -> list[FieldError]:
    """validatePreserveUnknownFields: v1 may not turn spec.preserveUnknownFields on."""
    if old is not None and (old.get("spec") or {}).get("preserveUnknownFields"):
        return []
    if (crd.get("spec") or {}).get("preserveUnknownFields"):
        return [gofield.invalid(Path("spec").child("preserveUnknownFields"), True,
                                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                                "spec.versions[*].schema instead")]
    return []
