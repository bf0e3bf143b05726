"""Where a pod may run: tolerations, taints, node selectors, affinity and topology spread.

Ports of pkg/apis/core/validation/validation.go: ValidateTolerations,
validateTaintEffect, validateNodeTaints, validateOnlyAddedTolerations,
validateAffinity (ValidateNodeSelector, ValidateNodeSelectorRequirement,
validatePodAffinityTerm) and validateTopologySpreadConstraints. These are the
rules learners meet when they taint GPU nodes and add tolerations.
"""
from __future__ import annotations

from ..errors import FieldError
from .field import duplicate, forbidden, invalid, not_supported, required
from .formats import is_valid_label_value, name_is_dns_label, name_is_dns_subdomain
from .labels import validate_label_name, validate_label_selector
from .path import Path

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def validate_taint_effect(effect: str, allow_empty: bool, path: Path) -> list[FieldError]:
    if not allow_empty and not effect:
        return [required(path)]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path, effect, TAINT_EFFECTS)]
    return []


def validate_tolerations(tolerations: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in enumerate(tolerations or []):
        p = path.index(i)
        key, operator = tol.get("key") or "", tol.get("operator") or ""
        effect, value = tol.get("effect") or "", tol.get("value") or ""
        if key:
            errs.extend(validate_label_name(key, p.child("key")))
        if not key and operator != "Exists":
            errs.append(invalid(p.child("operator"), operator, "operator must be Exists when `key` is empty, "
                                                               'which means "match all values and all keys"'))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(p.child("effect"), effect,
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(p.child("operator"), value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(invalid(p.child("operator"), value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(p.child("operator"), operator, ["Equal", "Exists"]))
        if effect:
            errs.extend(validate_taint_effect(effect, True, p.child("effect")))
    return errs


def validate_only_added_tolerations(new: list | None, old: list | None, path: Path) -> list[FieldError]:
    """Existing tolerations may only change their tolerationSeconds; new ones may be added."""
    def without_seconds(t: dict) -> dict:
        return {k: v for k, v in t.items() if k != "tolerationSeconds" and v not in ("", None)}
    new_keys = [without_seconds(t) for t in new or []]
    for tol in old or []:
        if without_seconds(tol) not in new_keys:
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _go_taint(taint: dict) -> dict:
    """An internal core.Taint as encoding/json writes it (no json tags on internal types)."""
    return {"Key": taint.get("key", ""), "Value": taint.get("value", ""), "Effect": taint.get("effect", ""),
            "TimeAdded": taint.get("timeAdded")}


def validate_node_taints(taints: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: dict[str, set[str]] = {}
    for i, taint in enumerate(taints or []):
        p = path.index(i)
        key, value, effect = taint.get("key", ""), taint.get("value") or "", taint.get("effect") or ""
        errs.extend(validate_label_name(key, p.child("key")))
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(invalid(p.child("value"), value, ";".join(msgs)))
        errs.extend(validate_taint_effect(effect, False, p.child("effect")))
        if key in seen.get(effect, set()):
            errs.append(duplicate(p, _go_taint(taint), "taints must be unique by key and effect pair"))
            continue
        seen.setdefault(effect, set()).add(key)
    return errs


def _node_selector_requirement(req: dict, allow_invalid_values: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operator, values = req.get("operator") or "", req.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(path.child("values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(path.child("values"),
                                 "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs.extend(validate_label_name(req.get("key", ""), path.child("key")))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs.extend(invalid(path.child("values").index(i), value, m) for m in is_valid_label_value(value))
    return errs


def _node_field_requirement(req: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operator, values = req.get("operator") or "", req.get("values") or []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(path.child("values"),
                                 "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    if req.get("key") != "metadata.name":
        errs.append(invalid(path.child("key"), req.get("key", ""), "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs.extend(invalid(path.child("values").index(i), value, m) for m in name_is_dns_subdomain(value))
    return errs


def _node_selector_term(term: dict, allow_invalid_values: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(term.get("matchExpressions") or []):
        errs.extend(_node_selector_requirement(req, allow_invalid_values, path.child("matchExpressions").index(j)))
    for j, req in enumerate(term.get("matchFields") or []):
        errs.extend(_node_field_requirement(req, path.child("matchFields").index(j)))
    return errs


def validate_node_selector(selector: dict, path: Path) -> list[FieldError]:
    """ValidateNodeSelector (a ResourceSlice's or a DRA allocation's): at least one term, each valid."""
    terms = selector.get("nodeSelectorTerms") or []
    p = path.child("nodeSelectorTerms")
    if not terms:
        return [required(p, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        errs.extend(_node_selector_term(term, False, p.index(i)))
    return errs

def _weight(weight, path: Path) -> list[FieldError]:
    weight = int(weight or 0)
    return [invalid(path, weight, "must be in the range 1-100")] if not 0 < weight <= 100 else []


def _validate_node_affinity(na: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required_terms = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required_terms is not None:
        p = path.child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = required_terms.get("nodeSelectorTerms") or []
        if not terms:
            errs.append(required(p, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs.extend(_node_selector_term(term, False, p.index(i)))
    p = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(na.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        errs.extend(_weight(pref.get("weight"), p.index(i).child("weight")))
        # invalid label values are always allowed in preferred terms
        errs.extend(_node_selector_term(pref.get("preference") or {}, True, p.index(i).child("preference")))
    return errs


def _pod_affinity_term(term: dict, path: Path) -> list[FieldError]:
    errs = validate_label_selector(term.get("labelSelector"), path.child("labelSelector"))
    errs.extend(validate_label_selector(term.get("namespaceSelector"), path.child("namespaceSelector")))
    for ns in term.get("namespaces") or []:
        errs.extend(invalid(path.child("namespace"), ns, m) for m in name_is_dns_label(ns))
    topology_key = term.get("topologyKey") or ""
    if not topology_key:
        errs.append(required(path.child("topologyKey"), "can not be empty"))
    return errs + validate_label_name(topology_key, path.child("topologyKey"))


def _validate_pod_affinity(pa: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    p = path.child("requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
        errs.extend(_pod_affinity_term(term, p.index(i)))
    p = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(pa.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        errs.extend(_weight(weighted.get("weight"), p.index(i).child("weight")))
        errs.extend(_pod_affinity_term(weighted.get("podAffinityTerm") or {}, p.index(i).child("podAffinityTerm")))
    return errs


def validate_affinity(affinity: dict | None, path: Path) -> list[FieldError]:
    if not affinity:
        return []
    errs: list[FieldError] = []
    if affinity.get("nodeAffinity") is not None:
        errs.extend(_validate_node_affinity(affinity["nodeAffinity"], path.child("nodeAffinity")))
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind) is not None:
            errs.extend(_validate_pod_affinity(affinity[kind], path.child(kind)))
    return errs


def validate_topology_spread(constraints: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    constraints = constraints or []
    for i, c in enumerate(constraints):
        p = path.index(i)
        max_skew = int(c.get("maxSkew") or 0)
        if max_skew <= 0:
            errs.append(invalid(p.child("maxSkew"), max_skew, "must be greater than zero"))
        if not c.get("topologyKey"):
            errs.append(required(p.child("topologyKey"), "can not be empty"))
        action = c.get("whenUnsatisfiable") or ""
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(p.child("whenUnsatisfiable"), action, ["DoNotSchedule", "ScheduleAnyway"]))
        if any(o.get("topologyKey") == c.get("topologyKey") and o.get("whenUnsatisfiable") == action
               for o in constraints[i + 1:]):
            errs.append(duplicate(p.child("{topologyKey, whenUnsatisfiable}"),
                                  f"{{{c.get('topologyKey', '')}, {action}}}"))
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                errs.append(invalid(p.child("minDomains"), min_domains, "must be greater than zero"))
            if action != "DoNotSchedule":
                errs.append(invalid(p.child("minDomains"), min_domains,
                                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy) is not None and c[policy] not in ("Honor", "Ignore"):
                errs.append(not_supported(p.child(policy), c[policy], ["Honor", "Ignore"]))
        errs.extend(validate_label_selector(c.get("labelSelector"), p.child("labelSelector")))
    return errs
