"""admissionregistration.k8s.io/v1: webhook configurations and admission policies with their bindings.

Ports of the structural checks of pkg/apis/admissionregistration/validation/validation.go
(validateValidatingWebhookConfiguration, validateMutatingWebhookConfiguration, validateWebhook,
validateRuleWithOperations, ValidateWebhookClientConfig, validateValidatingAdmissionPolicySpec,
validateMutatingAdmissionPolicySpec, validate*AdmissionPolicyBindingSpec). CEL expressions are stored, not
compiled (see docs/fidelity.md).
"""
from __future__ import annotations

from ..errors import FieldError
from .field import duplicate, invalid, not_supported, required
from .formats import is_dns1123_subdomain, name_is_dns_subdomain
from .labels import validate_label_selector
from .meta import validate_object_meta
from .path import Path

SPEC = Path("spec")
_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]
_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]
_REINVOCATION = ["IfNeeded", "Never"]


def _rule(rule: dict, path: Path, with_operations: bool) -> list[FieldError]:
    errs = []
    if with_operations:
        operations = rule.get("operations") or []
        if not operations:
            errs.append(required(path.child("operations")))
        for i, op in enumerate(operations):
            if op not in _OPERATIONS:
                errs.append(not_supported(path.child("operations").index(i), op, _OPERATIONS))
    for field in ("apiGroups", "apiVersions", "resources"):
        if not rule.get(field):
            errs.append(required(path.child(field)))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(path.child("scope"), scope, _SCOPES))
    return errs


def _client_config(config: dict, path: Path) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return [] if url.startswith("https://") else [invalid(path.child("url"), url, "'https' is the only allowed "
                                                                                      "URL scheme")]
    errs = [] if service.get("namespace") else [required(path.child("service", "namespace"))]
    if not service.get("name"):
        errs.append(required(path.child("service", "name")))
    port = service.get("port")
    if port is not None and not 1 <= port <= 65535:
        errs.append(invalid(path.child("service", "port"), port, "port is not valid: must be between 1 and 65535, "
                                                                 "inclusive"))
    return errs


def _webhook(hook: dict, path: Path, names: set[str]) -> list[FieldError]:
    errs = []
    name = hook.get("name") or ""
    if not name:
        errs.append(required(path.child("name")))
    else:
        errs.extend(invalid(path.child("name"), name, m) for m in is_dns1123_subdomain(name))
        if len(name.split(".")) < 3:
            errs.append(invalid(path.child("name"), name, "should be a domain with at least three segments "
                                                          "separated by dots"))
        if name in names:
            errs.append(duplicate(path.child("name"), name))
        names.add(name)
    for i, rule in enumerate(hook.get("rules") or []):
        errs.extend(_rule(rule, path.child("rules").index(i), True))
    if hook.get("failurePolicy") not in _FAILURE_POLICIES:
        errs.append(not_supported(path.child("failurePolicy"), hook.get("failurePolicy") or "", _FAILURE_POLICIES))
    if hook.get("matchPolicy") not in _MATCH_POLICIES:
        errs.append(not_supported(path.child("matchPolicy"), hook.get("matchPolicy") or "", _MATCH_POLICIES))
    effects = hook.get("sideEffects")
    if effects is None:
        errs.append(required(path.child("sideEffects"), 'must specify one of "None", "NoneOnDryRun"'))
    elif effects not in _SIDE_EFFECTS:
        errs.append(not_supported(path.child("sideEffects"), effects, _SIDE_EFFECTS))
    versions = hook.get("admissionReviewVersions") or []
    if not versions:
        errs.append(required(path.child("admissionReviewVersions"), 'must specify one of "v1", "v1beta1"'))
    elif not set(versions) & set(_REVIEW_VERSIONS):
        errs.append(invalid(path.child("admissionReviewVersions"), versions, 'must include at least one of "v1", '
                                                                             '"v1beta1"'))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(invalid(path.child("timeoutSeconds"), timeout, "the timeout value must be between 1 and 30 "
                                                                   "seconds"))
    for selector in ("namespaceSelector", "objectSelector"):
        errs.extend(validate_label_selector(hook.get(selector), path.child(selector)))
    errs.extend(_client_config(hook.get("clientConfig") or {}, path.child("clientConfig")))
    return errs


def validate_webhook_configuration(config: dict) -> list[FieldError]:
    errs = validate_object_meta(config.get("metadata") or {}, False, name_is_dns_subdomain)
    names: set[str] = set()
    for i, hook in enumerate(config.get("webhooks") or []):
        errs.extend(_webhook(hook, Path("webhooks").index(i), names))
        if config.get("kind") == "MutatingWebhookConfiguration" and \
                hook.get("reinvocationPolicy") not in _REINVOCATION:
            errs.append(not_supported(Path("webhooks").index(i).child("reinvocationPolicy"),
                                      hook.get("reinvocationPolicy") or "", _REINVOCATION))
    return errs


def _match_constraints(constraints: dict | None, path: Path) -> list[FieldError]:
    if constraints is None:
        return [required(path)]
    errs = []
    rules = constraints.get("resourceRules") or []
    if not rules:
        errs.append(required(path.child("resourceRules")))
    for i, rule in enumerate(rules):
        errs.extend(_rule(rule, path.child("resourceRules").index(i), True))
    return errs


def validate_validating_policy(policy: dict) -> list[FieldError]:
    errs = validate_object_meta(policy.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = policy.get("spec") or {}
    errs.extend(_match_constraints(spec.get("matchConstraints"), SPEC.child("matchConstraints")))
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        errs.append(required(SPEC.child("validations"), "validations or auditAnnotations must contain at least one "
                                                        "item"))
    for i, validation in enumerate(spec.get("validations") or []):
        if not (validation.get("expression") or "").strip():
            errs.append(required(SPEC.child("validations").index(i).child("expression")))
    if spec.get("failurePolicy") not in _FAILURE_POLICIES:
        errs.append(not_supported(SPEC.child("failurePolicy"), spec.get("failurePolicy") or "", _FAILURE_POLICIES))
    return errs


def validate_mutating_policy(policy: dict) -> list[FieldError]:
    errs = validate_object_meta(policy.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = policy.get("spec") or {}
    errs.extend(_match_constraints(spec.get("matchConstraints"), SPEC.child("matchConstraints")))
    mutations = spec.get("mutations") or []
    if not mutations:
        errs.append(required(SPEC.child("mutations"), "mutations must contain at least one item"))
    for i, mutation in enumerate(mutations):
        kind = mutation.get("patchType") or ""
        if kind not in ("ApplyConfiguration", "JSONPatch"):
            errs.append(not_supported(SPEC.child("mutations").index(i).child("patchType"), kind,
                                      ["ApplyConfiguration", "JSONPatch"]))
    if spec.get("failurePolicy") not in _FAILURE_POLICIES:
        errs.append(not_supported(SPEC.child("failurePolicy"), spec.get("failurePolicy") or "", _FAILURE_POLICIES))
    if spec.get("reinvocationPolicy") not in _REINVOCATION:
        errs.append(not_supported(SPEC.child("reinvocationPolicy"), spec.get("reinvocationPolicy") or "",
                                  _REINVOCATION))
    return errs


def validate_policy_binding(binding: dict, validating: bool) -> list[FieldError]:
    errs = validate_object_meta(binding.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = binding.get("spec") or {}
    if not spec.get("policyName"):
        errs.append(required(SPEC.child("policyName")))
    if validating:
        actions = spec.get("validationActions") or []
        if not actions:
            errs.append(required(SPEC.child("validationActions")))
        for i, action in enumerate(actions):
            if action not in _VALIDATION_ACTIONS:
                errs.append(not_supported(SPEC.child("validationActions").index(i), action, _VALIDATION_ACTIONS))
    ref = spec.get("paramRef")
    if ref is not None and ref.get("parameterNotFoundAction") not in ("Allow", "Deny"):
        errs.append(required(SPEC.child("paramRef", "parameterNotFoundAction")))
    return errs
