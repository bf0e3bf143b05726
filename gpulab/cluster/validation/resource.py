"""resource.k8s.io/v1 validation: a port of the main rules of pkg/apis/resource/validation/validation.go.

DeviceClasses, ResourceClaims (spec and status), ResourceClaimTemplates and
ResourceSlices: names, exactly one of ``exactly``/``firstAvailable``, counts
and allocation modes, CEL selectors compiled at create with the compiler's
error text (``compilation failed: ...``), constraints naming existing
requests, tolerations, opaque configuration, extended resource names, slices'
node selection, devices, attributes, capacities and shared counters, and the
immutability of claim and template specs; DeviceTaintRules (selector names, the
taint, status conditions). Size limits are upstream's constants.
"""
from __future__ import annotations

import re

from ..dra.selectors import MAX_EXPRESSION_LENGTH, compile_error
from ..errors import FieldError
from .field import OMIT, duplicate, forbidden, immutable, invalid, not_supported, required, too_long, too_many
from .formats import (is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
                      name_is_dns_subdomain, regex_error)
from .meta import validate_object_meta
from .path import Path
from .resources import validate_resource_name
from .scheduling import validate_node_selector

SPEC = Path("spec")
MAX_REQUESTS = 32  # DeviceRequestsMaxSize
MAX_SELECTORS = 32  # DeviceSelectorsMaxSize
MAX_CONFIGS = 32  # DeviceConfigMaxSize
MAX_CONSTRAINTS = 32  # DeviceConstraintsMaxSize
MAX_FIRST_AVAILABLE = 8  # FirstAvailableDeviceRequestMaxSize
MAX_TOLERATIONS = 16  # DeviceTolerationsMaxLength
MAX_EXACT_COUNT = 128  # AllocationResultsMaxSize
MAX_DEVICES_PER_SLICE = 128  # ResourceSliceMaxDevices
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize
MAX_COUNTER_SETS = 8  # ResourceSliceMaxCounterSets
MAX_ID_LENGTH = 64  # DeviceMaxIDLength
MAX_STRING_ATTRIBUTE = 64  # DeviceAttributeMaxValueLength
MAX_TAINTS = 16  # DeviceTaintsMaxLength
MAX_POOL_NAME = 253  # PoolNameMaxLength
MAX_RULE_CONDITIONS = 8  # DeviceTaintRuleStatusMaxConditions
MODES = ["All", "ExactCount"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
ATTRIBUTE_TYPES = ("bool", "int", "string", "version")


def _dns_subdomain(value: str, path: Path) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def _dns_label(value: str, path: Path) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [invalid(path, value, msg) for msg in is_dns1123_label(value)]


def _list(value, max_items: int, path: Path) -> tuple[list, list[FieldError]]:
    items = list(value or [])
    if len(items) > max_items:
        return items, [too_many(path, len(items), max_items)]
    return items, []


# --- selectors and configuration ----------------------------------------------
def validate_selectors(selectors, path: Path) -> list[FieldError]:
    items, errs = _list(selectors, MAX_SELECTORS, path)
    for i, selector in enumerate(items):
        cel = (selector or {}).get("cel")
        p = path.index(i)
        if cel is None:
            errs.append(required(p.child("cel")))
            continue
        expression = cel.get("expression") or ""
        ep = p.child("cel", "expression")
        if len(expression) > MAX_EXPRESSION_LENGTH:
            errs.append(too_long(ep, MAX_EXPRESSION_LENGTH))
            continue
        problem = compile_error(expression)
        if problem:
            errs.append(invalid(ep, expression, problem))
    return errs


def _opaque(opaque: dict | None, path: Path) -> list[FieldError]:
    if opaque is None:
        return [required(path.child("opaque"))]
    errs = _dns_subdomain(opaque.get("driver") or "", path.child("opaque", "driver"))
    if opaque.get("parameters") in (None, {}, ""):
        errs.append(required(path.child("opaque", "parameters")))
    return errs


def validate_class_configs(configs, path: Path) -> list[FieldError]:
    items, errs = _list(configs, MAX_CONFIGS, path)
    for i, config in enumerate(items):
        errs += _opaque((config or {}).get("opaque"), path.index(i))
    return errs


# --- DeviceClass ----------------------------------------------------------------
def validate_device_class(dc: dict) -> list[FieldError]:
    errs = validate_object_meta(dc.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = dc.get("spec") or {}
    errs += validate_selectors(spec.get("selectors"), SPEC.child("selectors"))
    errs += validate_class_configs(spec.get("config"), SPEC.child("config"))
    name = spec.get("extendedResourceName")
    if name is not None:
        path = SPEC.child("extendedResourceName")
        errs += validate_resource_name(name, path)
        if "/" not in name or name.startswith("kubernetes.io/") or name.startswith("requests."):
            errs.append(invalid(path, name, "must be a valid extended resource name"))
    return errs


# --- ResourceClaim spec ---------------------------------------------------------
def _tolerations(tolerations, path: Path) -> list[FieldError]:
    items, errs = _list(tolerations, MAX_TOLERATIONS, path)
    for i, tol in enumerate(items):
        tol, p = tol or {}, path.index(i)
        key, op = tol.get("key") or "", tol.get("operator") or "Equal"
        if key:
            errs += [invalid(p.child("key"), key, msg) for msg in is_qualified_name(key)]
        if op not in TOLERATION_OPERATORS:
            errs.append(not_supported(p.child("operator"), op, TOLERATION_OPERATORS))
        elif op == "Exists" and tol.get("value"):
            errs.append(invalid(p.child("value"), tol["value"], "must be empty for operator `Exists`"))
        elif op == "Equal":
            errs += _label_value(tol.get("value") or "", p.child("value"))
        effect = tol.get("effect")
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(p.child("effect"), effect, TAINT_EFFECTS))
    return errs


def _counted(request: dict, path: Path) -> list[FieldError]:
    """The allocation mode and count of an exact request or subrequest."""
    mode, count = request.get("allocationMode") or "", int(request.get("count") or 0)
    if mode == "All":
        if count:
            return [invalid(path.child("count"), count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == "ExactCount":
        if count <= 0:
            return [invalid(path.child("count"), count, "must be greater than zero")]
        if count > MAX_EXACT_COUNT:
            return [invalid(path.child("count"), count, f"must be less than or equal to {MAX_EXACT_COUNT}")]
        return []
    return [not_supported(path.child("allocationMode"), mode, MODES)]


def _exact(request: dict, path: Path, admin_allowed: bool = True) -> list[FieldError]:
    errs = _dns_subdomain(request.get("deviceClassName") or "", path.child("deviceClassName"))
    errs += validate_selectors(request.get("selectors"), path.child("selectors"))
    errs += _counted(request, path)
    errs += _tolerations(request.get("tolerations"), path.child("tolerations"))
    if request.get("adminAccess") and not admin_allowed:
        errs.append(forbidden(path.child("adminAccess"), "admin access to devices is not allowed"))
    return errs


def _request(request: dict, path: Path, names: set[str]) -> list[FieldError]:
    name = request.get("name") or ""
    errs = _dns_label(name, path.child("name"))
    if name in names:
        errs.append(duplicate(path.child("name"), name))
    names.add(name)
    exactly, first = request.get("exactly"), request.get("firstAvailable")
    if exactly is not None and first:
        errs.append(invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                                        "fields are set"))
    elif exactly is None and not first:
        errs.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    if exactly is not None:
        errs += _exact(exactly, path.child("exactly"))
    if first:
        items, more = _list(first, MAX_FIRST_AVAILABLE, path.child("firstAvailable"))
        errs += more
        sub_names: set[str] = set()
        for i, sub in enumerate(items):
            sub, p = sub or {}, path.child("firstAvailable").index(i)
            sub_name = sub.get("name") or ""
            errs += _dns_label(sub_name, p.child("name"))
            if sub_name in sub_names:
                errs.append(duplicate(p.child("name"), sub_name))
            sub_names.add(sub_name)
            errs += _exact(sub, p)
    return errs


def _request_names(spec: dict) -> set[str]:
    """Every name a constraint or config may refer to: ``<request>`` and ``<request>/<subrequest>``."""
    out: set[str] = set()
    for request in (spec.get("devices") or {}).get("requests") or ():
        name = (request or {}).get("name") or ""
        out.add(name)
        for sub in (request or {}).get("firstAvailable") or ():
            out.add(f"{name}/{(sub or {}).get('name') or ''}")
    return out


def _request_refs(refs, known: set[str], path: Path) -> list[FieldError]:
    errs = []
    for i, ref in enumerate(refs or ()):
        if ref not in known:
            errs.append(invalid(path.index(i), ref, "must be the name of a request in the claim or the name of a "
                                                    "request and a subrequest separated by '/'"))
    return errs


def validate_claim_spec(spec: dict, path: Path) -> list[FieldError]:
    devices = spec.get("devices") or {}
    dp = path.child("devices")
    requests, errs = _list(devices.get("requests"), MAX_REQUESTS, dp.child("requests"))
    names: set[str] = set()
    for i, request in enumerate(requests):
        errs += _request(request or {}, dp.child("requests").index(i), names)
    known = _request_names(spec)
    constraints, more = _list(devices.get("constraints"), MAX_CONSTRAINTS, dp.child("constraints"))
    errs += more
    for i, constraint in enumerate(constraints):
        constraint, p = constraint or {}, dp.child("constraints").index(i)
        errs += _request_refs(constraint.get("requests"), known, p.child("requests"))
        match, distinct = constraint.get("matchAttribute"), constraint.get("distinctAttribute")
        if not match and not distinct:
            errs.append(required(p, "exactly one of `matchAttribute` or `distinctAttribute` is required"))
        for field, value in (("matchAttribute", match), ("distinctAttribute", distinct)):
            if value:
                errs += _qualified_name(value, p.child(field))
    configs, more = _list(devices.get("config"), MAX_CONFIGS, dp.child("config"))
    errs += more
    for i, config in enumerate(configs):
        config, p = config or {}, dp.child("config").index(i)
        errs += _request_refs(config.get("requests"), known, p.child("requests"))
        errs += _opaque(config.get("opaque"), p)
    return errs


def _qualified_name(name: str, path: Path) -> list[FieldError]:
    """validateQualifiedName: ``<domain>/<id>`` with a DNS subdomain and a C identifier."""
    domain, sep, ident = name.rpartition("/")
    if not sep:
        return [required(path, "a fully qualified name must be a domain and a name separated by a slash")]
    errs = _dns_subdomain(domain, path)
    errs += _identifier(ident, path)
    return errs


def _identifier(ident: str, path: Path) -> list[FieldError]:
    if not ident:
        return [required(path, "name required")]
    if len(ident) > MAX_ID_LENGTH:
        return [too_long(path, MAX_ID_LENGTH)]
    if not (ident[0].isalpha() or ident[0] == "_") or not all(c.isalnum() or c == "_" for c in ident) \
            or not ident.isascii():
        return [invalid(path, ident, "a valid C identifier must start with alphabetic character or '_', followed "
                                     "by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME', "
                                     " or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")]
    return []


def validate_claim(claim: dict) -> list[FieldError]:
    errs = validate_object_meta(claim.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_claim_spec(claim.get("spec") or {}, SPEC)


def validate_claim_update(new: dict, old: dict) -> list[FieldError]:
    errs = immutable(SPEC, new.get("spec"), old.get("spec"))
    return errs or validate_claim_spec(new.get("spec") or {}, SPEC)


def validate_claim_status_update(new: dict, old: dict) -> list[FieldError]:
    """validateResourceClaimStatusUpdate: reservedFor entries unique and bounded, allocation set once."""
    status, old_status = new.get("status") or {}, old.get("status") or {}
    path = Path("status")
    errs: list[FieldError] = []
    reserved, more = _list(status.get("reservedFor"), MAX_RESERVED_FOR, path.child("reservedFor"))
    errs += more
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        ref, p = ref or {}, path.child("reservedFor").index(i)
        if not ref.get("resource"):
            errs.append(required(p.child("resource")))
        if not ref.get("name"):
            errs.append(required(p.child("name")))
        uid = ref.get("uid") or ""
        if not uid:
            errs.append(required(p.child("uid")))
        elif uid in uids:
            errs.append(duplicate(p.child("uid"), uid))
        uids.add(uid)
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    if old_allocation is not None and allocation is not None and allocation != old_allocation:
        errs.append(invalid(path.child("allocation"), OMIT, "field is immutable"))
    if reserved and allocation is None:
        errs.append(forbidden(path.child("reservedFor"), "may not be specified when `allocated` is not set"))
    if old_allocation is not None and allocation is None and old_status.get("reservedFor") and reserved:
        errs.append(forbidden(path.child("allocation"), "may not be cleared when `reservedFor` is set"))
    return errs


# --- ResourceClaimTemplate ------------------------------------------------------
def validate_claim_template(template: dict) -> list[FieldError]:
    errs = validate_object_meta(template.get("metadata") or {}, True, name_is_dns_subdomain)
    inner = (template.get("spec") or {}).get("spec") or {}
    return errs + validate_claim_spec(inner, SPEC.child("spec"))


def validate_claim_template_update(new: dict, old: dict) -> list[FieldError]:
    errs = immutable(SPEC, new.get("spec"), old.get("spec"))
    return errs or validate_claim_spec((new.get("spec") or {}).get("spec") or {}, SPEC.child("spec"))


# --- ResourceSlice ----------------------------------------------------------------
_NODE_FIELDS = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _attribute_value(value: dict, path: Path) -> list[FieldError]:
    set_types = [t for t in ATTRIBUTE_TYPES if t in value] + [t for t in ("bools", "ints", "strings", "versions")
                                                              if t in value]
    if len(set_types) != 1:
        return [invalid(path, OMIT, "exactly one value must be specified")]
    kind = set_types[0]
    if kind == "string" and len(value["string"]) > MAX_STRING_ATTRIBUTE:
        return [too_long(path.child("string"), MAX_STRING_ATTRIBUTE)]
    if kind == "version":
        from ..cel.library import _is_semver  # noqa: PLC0415 - the one semver grammar
        if not _is_semver(str(value["version"])):
            return [invalid(path.child("version"), value["version"], "must be a string compatible with semver.org "
                                                                     "spec 2.0.0")]
    return []


def _attribute_name(name: str, path: Path) -> list[FieldError]:
    domain, sep, ident = name.rpartition("/")
    if sep:
        return _dns_subdomain(domain, path) + _identifier(ident, path)
    return _identifier(name, path)


def _device(device: dict, path: Path, counter_sets: dict[str, set[str]], per_device: bool) -> list[FieldError]:
    errs = _dns_label(device.get("name") or "", path.child("name"))
    attributes, capacity = device.get("attributes") or {}, device.get("capacity") or {}
    if len(attributes) + len(capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(too_many(path, len(attributes) + len(capacity), MAX_ATTRIBUTES_AND_CAPACITIES))
    for name, value in attributes.items():
        errs += _attribute_name(name, path.child("attributes").key(name))
        errs += _attribute_value(value or {}, path.child("attributes").key(name))
    for name, value in capacity.items():
        errs += _attribute_name(name, path.child("capacity").key(name))
        if (value or {}).get("value") in (None, ""):
            errs.append(required(path.child("capacity").key(name).child("value")))
    for i, consumption in enumerate(device.get("consumesCounters") or ()):
        consumption, p = consumption or {}, path.child("consumesCounters").index(i)
        set_name = consumption.get("counterSet") or ""
        if set_name not in counter_sets:
            # Since v1.35 a pool's counter sets live in slices of their own (ResourceSliceSpec: only one of
            # devices and sharedCounters per slice); a set from another slice is checked by the allocator.
            continue
        for counter in (consumption.get("counters") or {}):
            if counter not in counter_sets[set_name]:
                errs.append(invalid(p.child("counters").key(counter), counter, "must reference a counter defined "
                                                                                "in the ResourceSlice sharedCounters"))
    node_fields = [f for f in ("nodeName", "nodeSelector", "allNodes") if device.get(f) not in (None, "", False)]
    if per_device and len(node_fields) != 1:
        errs.append(required(path, "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                                   "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
    elif not per_device and node_fields:
        errs.append(forbidden(path.child(node_fields[0]), "`nodeName`, `nodeSelector` and `allNodes` can only be "
                                                         "set if `perDeviceNodeSelection` is set to true in the "
                                                         "ResourceSlice spec"))
    errs += _taints(device.get("taints"), path.child("taints"))
    return errs


def _label_value(value: str, path: Path) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_valid_label_value(value)]


def _taint(taint: dict, old: dict | None, path: Path) -> list[FieldError]:
    """validateDeviceTaint: a label-name key, a label value, and an effect checked only when it changed (so
    stored objects with an effect added later stay valid)."""
    key = taint.get("key") or ""
    if not key:
        errs = [required(path.child("key"))]
    else:
        errs = [invalid(path.child("key"), key, msg) for msg in is_qualified_name(key)]
    if taint.get("value"):
        errs += _label_value(taint["value"], path.child("value"))
    effect = taint.get("effect") or ""
    if old is None or (old.get("effect") or "") != effect:
        if not effect:
            errs.append(required(path.child("effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(path.child("effect"), effect, TAINT_EFFECTS))
    return errs


def _taints(taints, path: Path) -> list[FieldError]:
    items, errs = _list(taints, MAX_TAINTS, path)
    for i, taint in enumerate(items):
        errs += _taint(taint or {}, None, path.index(i))
    return errs


def validate_slice(rs: dict) -> list[FieldError]:
    errs = validate_object_meta(rs.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = rs.get("spec") or {}
    errs += _dns_subdomain(spec.get("driver") or "", SPEC.child("driver"))
    pool = spec.get("pool") or {}
    pp = SPEC.child("pool")
    if not pool.get("name"):
        errs.append(required(pp.child("name")))
    if int(pool.get("generation") or 0) < 0:
        errs.append(invalid(pp.child("generation"), pool.get("generation"), "must be greater than or equal to 0"))
    if int(pool.get("resourceSliceCount") or 0) <= 0:
        errs.append(invalid(pp.child("resourceSliceCount"), int(pool.get("resourceSliceCount") or 0),
                            "must be greater than zero"))
    chosen = [f for f in _NODE_FIELDS if spec.get(f) not in (None, "", False)]
    if len(chosen) != 1:
        if chosen:
            errs.append(invalid(SPEC, OMIT, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                            "`perDeviceNodeSelection` is required, but multiple fields are set"))
        else:
            errs.append(required(SPEC, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                       "`perDeviceNodeSelection` is required"))
    if spec.get("nodeName"):
        errs += [invalid(SPEC.child("nodeName"), spec["nodeName"], msg)
                 for msg in is_dns1123_subdomain(spec["nodeName"])]
    if spec.get("nodeSelector") is not None:
        errs += validate_node_selector(spec["nodeSelector"], SPEC.child("nodeSelector"))
    counter_sets: dict[str, set[str]] = {}
    sets, more = _list(spec.get("sharedCounters"), MAX_COUNTER_SETS, SPEC.child("sharedCounters"))
    errs += more
    for i, counter_set in enumerate(sets):
        counter_set, p = counter_set or {}, SPEC.child("sharedCounters").index(i)
        name = counter_set.get("name") or ""
        errs += _dns_label(name, p.child("name"))
        if name in counter_sets:
            errs.append(duplicate(p.child("name"), name))
        if not counter_set.get("counters"):
            errs.append(required(p.child("counters")))
        counter_sets[name] = set(counter_set.get("counters") or {})
    devices, more = _list(spec.get("devices"), MAX_DEVICES_PER_SLICE, SPEC.child("devices"))
    errs += more
    seen: set[str] = set()
    for i, device in enumerate(devices):
        device, p = device or {}, SPEC.child("devices").index(i)
        errs += _device(device, p, counter_sets, bool(spec.get("perDeviceNodeSelection")))
        name = device.get("name") or ""
        if name in seen:
            errs.append(duplicate(p.child("name"), name))
        seen.add(name)
    return errs


def validate_slice_update(new: dict, old: dict) -> list[FieldError]:
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs = immutable(SPEC.child("driver"), spec.get("driver"), old_spec.get("driver"))
    errs += immutable(SPEC.child("nodeName"), spec.get("nodeName"), old_spec.get("nodeName"))
    return errs + validate_slice(new)


# --- DeviceTaintRule -----------------------------------------------------------
def _driver_name(name: str, path: Path) -> list[FieldError]:
    """ValidateCSIDriverName, which resource.k8s.io uses for driver names."""
    if not name:
        return [required(path)]
    errs = [too_long(path, 63)] if len(name) > 63 else []
    return errs + [invalid(path, name, msg) for msg in is_dns1123_subdomain(name.lower())]


def _pool_name(name: str, path: Path) -> list[FieldError]:
    """validatePoolName: DNS subdomains separated by slashes, at most 253 characters."""
    if not name:
        return [required(path)]
    errs = [too_long(path, MAX_POOL_NAME)] if len(name) > MAX_POOL_NAME else []
    for part in name.split("/"):
        errs += _dns_subdomain(part, path)
    return errs


def _rule_spec(spec: dict, old_spec: dict | None) -> list[FieldError]:
    errs: list[FieldError] = []
    selector, sp = spec.get("deviceSelector"), SPEC.child("deviceSelector")
    if isinstance(selector, dict):
        if selector.get("driver") is not None:
            errs += _driver_name(selector["driver"], sp.child("driver"))
        if selector.get("pool") is not None:
            errs += _pool_name(selector["pool"], sp.child("pool"))
        if selector.get("device") is not None:
            errs += _dns_label(selector["device"], sp.child("device"))
    old_taint = (old_spec or {}).get("taint") or {} if old_spec is not None else None
    return errs + _taint(spec.get("taint") or {}, old_taint, SPEC.child("taint"))


def validate_taint_rule(rule: dict) -> list[FieldError]:
    """ValidateDeviceTaintRule."""
    errs = validate_object_meta(rule.get("metadata") or {}, False, name_is_dns_subdomain)
    return errs + _rule_spec(rule.get("spec") or {}, None)


def validate_taint_rule_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateDeviceTaintRuleUpdate: the spec again, the taint's effect only if it changed."""
    return _rule_spec(new.get("spec") or {}, old.get("spec") or {})


_CONDITION_STATUSES = ["False", "True", "Unknown"]
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def _conditions(conditions, path: Path) -> list[FieldError]:
    """metav1validation.ValidateConditions: unique types, label-name types, a known status, a reason in the
    condition reason format, a transition time, a non-negative observedGeneration."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions or ()):
        cond, p = cond or {}, path.index(i)
        type_ = cond.get("type") or ""
        if type_ in seen:
            errs.append(duplicate(p, type_))
        seen.add(type_)
        if not type_:
            errs.append(required(p.child("type"), "is required"))
        else:
            errs += [invalid(p.child("type"), type_, msg) for msg in is_qualified_name(type_)]
        status = cond.get("status") or ""
        if not status:
            errs.append(required(p.child("status")))
        elif status not in _CONDITION_STATUSES:
            errs.append(not_supported(p.child("status"), status, _CONDITION_STATUSES))
        if int(cond.get("observedGeneration") or 0) < 0:
            errs.append(invalid(p.child("observedGeneration"), cond["observedGeneration"],
                                "must be greater than or equal to zero"))
        if not cond.get("lastTransitionTime"):
            errs.append(required(p.child("lastTransitionTime")))
        reason = cond.get("reason") or ""
        if not reason:
            errs.append(required(p.child("reason")))
        else:
            if not _REASON.match(reason):
                errs.append(invalid(p.child("reason"), reason, regex_error(
                    "a condition reason must start with alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                    _REASON.pattern[1:-1], "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")))
            if len(reason) > 1024:
                errs.append(too_long(p.child("reason"), 1024))
        if len(cond.get("message") or "") > 32 * 1024:
            errs.append(too_long(p.child("message"), 32 * 1024))
    return errs


def validate_taint_rule_status_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateDeviceTaintRuleStatusUpdate: the conditions, at most 8 of them."""
    conditions = (new.get("status") or {}).get("conditions") or []
    path = Path("status").child("conditions")
    errs = _conditions(conditions, path)
    if len(conditions) > MAX_RULE_CONDITIONS:
        errs.append(too_many(path, len(conditions), MAX_RULE_CONDITIONS))
    return errs
