"""PolicyRules: whether one allows a request, whether some cover others, and how upstream prints them.

Ports of the rule helpers RBAC is made of: RuleAllows (plugin/pkg/auth/authorizer/rbac/rbac.go) with the
matchers of pkg/apis/rbac/v1/evaluation_helpers.go, Covers and BreakdownRule
(staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go), CompactRules
(pkg/registry/rbac/validation/policy_compact.go) and CompactString (pkg/apis/rbac/v1/helpers.go). Rules are the
wire dicts (``apiGroups``, ``resources``, ``verbs``, ``resourceNames``, ``nonResourceURLs``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..gofmt import go_quote

ALL = "*"


@dataclass(frozen=True)
class Attributes:
    """authorizer.Attributes of one request (k8s.io/apiserver/pkg/authorization/authorizer)."""

    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def _has(values, value: str) -> bool:
    return value in (values or ())


def verb_matches(rule: dict, verb: str) -> bool:
    verbs = rule.get("verbs") or ()
    return ALL in verbs or verb in verbs


def rule_allows(attrs: Attributes, rule: dict) -> bool:
    """RuleAllows: the rule grants the request's verb on its resource (or its non-resource URL)."""
    if not verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or ():
            if url == ALL or url == attrs.path or (url.endswith("*") and attrs.path.startswith(url[:-1])):
                return True
        return False
    groups = rule.get("apiGroups") or ()
    if ALL not in groups and attrs.api_group not in groups:
        return False
    resources = rule.get("resources") or ()
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not (ALL in resources or combined in resources
            or (attrs.subresource and f"*/{attrs.subresource}" in resources)):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


# --- Covers ----------------------------------------------------------------------------------------------------
def breakdown(rule: dict) -> list[dict]:
    """BreakdownRule: one rule per (group, resource, verb[, name]) and per (URL, verb)."""
    out = []
    names = rule.get("resourceNames") or ()
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in rule.get("verbs") or ():
                if names:
                    out += [{"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": [n]}
                            for n in names]
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in rule.get("nonResourceURLs") or ():
        out += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in rule.get("verbs") or ()]
    return out


def _has_all(owned, wanted) -> bool:
    owned = set(owned or ())
    return all(w in owned for w in wanted or ())


def _resources_cover(owned, wanted) -> bool:
    owned = owned or ()
    if ALL in owned or _has_all(owned, wanted):
        return True
    for path in wanted or ():
        if path in owned:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def _rule_covers(owner: dict, sub: dict) -> bool:
    owner_names, sub_names = owner.get("resourceNames") or (), sub.get("resourceNames") or ()
    names = not owner_names if not sub_names else (not owner_names or _has_all(owner_names, sub_names))
    return ((ALL in (owner.get("verbs") or ()) or _has_all(owner.get("verbs"), sub.get("verbs")))
            and (ALL in (owner.get("apiGroups") or ()) or _has_all(owner.get("apiGroups"), sub.get("apiGroups")))
            and _resources_cover(owner.get("resources"), sub.get("resources"))
            and all(any(_url_covers(o, p) for o in owner.get("nonResourceURLs") or ())
                    for p in sub.get("nonResourceURLs") or ())
            and names)


def covers(owned: list[dict], requested: list[dict]) -> tuple[bool, list[dict]]:
    """Covers: whether ``owned`` grants everything ``requested`` does, and the broken-down rules it lacks."""
    missing = [sub for rule in requested for sub in breakdown(rule)
               if not any(_rule_covers(owner, sub) for owner in owned)]
    return not missing, missing


# --- printing --------------------------------------------------------------------------------------------------
def compact(rules: list[dict]) -> list[dict]:
    """CompactRules: simple one-group one-resource rules of the same resource (and name) merge their verbs."""
    out, simple = [], {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            out.append(rule)
        elif key in simple:
            verbs = simple[key]["verbs"]
            verbs += [v for v in rule.get("verbs") or () if v not in verbs]
        else:
            simple[key] = {**rule, "verbs": list(rule.get("verbs") or ())}
    return out + list(simple.values())


def _simple_key(rule: dict):
    names = rule.get("resourceNames") or ()
    if len(names) > 1 or rule.get("nonResourceURLs"):
        return None
    if len(rule.get("apiGroups") or ()) != 1 or len(rule.get("resources") or ()) != 1:
        return None
    if set(rule) - {"apiGroups", "resources", "verbs", "resourceNames"}:
        return None
    return (rule["apiGroups"][0], rule["resources"][0], bool(names), names[0] if names else "")


def go_quote_list(values) -> str:
    """``%q`` of a []string: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: dict) -> str:
    """CompactString, as escalation errors print a rule: ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
    parts = [f"{label}:{go_quote_list(rule[field])}" for label, field in (
        ("APIGroups", "apiGroups"), ("Resources", "resources"), ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"), ("Verbs", "verbs")) if rule.get(field)]
    return "{" + ", ".join(parts) + "}"
