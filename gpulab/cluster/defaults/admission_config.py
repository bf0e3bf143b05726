"""Defaults of admissionregistration.k8s.io/v1 objects and of APIServices.

Ports of pkg/apis/admissionregistration/v1/defaults.go (SetDefaults_ValidatingWebhook,
SetDefaults_MutatingWebhook, SetDefaults_Rule, SetDefaults_ServiceReference,
SetDefaults_ValidatingAdmissionPolicySpec, SetDefaults_MatchResources, SetDefaults_ParamRef,
SetDefaults_MutatingAdmissionPolicySpec) and k8s.io/kube-aggregator's apiregistration/v1 defaults
(SetDefaults_ServiceReference: port 443).
"""
from __future__ import annotations

from ..registry import ResourceType


def _rules(rules: list | None) -> None:
    for rule in rules or []:
        if rule.get("scope") is None:
            rule["scope"] = "*"


def _match_resources(match: dict | None) -> None:
    if match is None:
        return
    if match.get("matchPolicy") is None:
        match["matchPolicy"] = "Equivalent"
    for selector in ("namespaceSelector", "objectSelector"):
        if match.get(selector) is None:
            match[selector] = {}
    _rules(match.get("resourceRules"))
    _rules(match.get("excludeResourceRules"))


def default_webhook_configuration(rt: ResourceType, config: dict) -> None:
    for hook in config.get("webhooks") or []:
        for field, value in (("failurePolicy", "Fail"), ("matchPolicy", "Equivalent"), ("timeoutSeconds", 10)):
            if hook.get(field) is None:
                hook[field] = value
        for selector in ("namespaceSelector", "objectSelector"):
            if hook.get(selector) is None:
                hook[selector] = {}
        if rt.kind == "MutatingWebhookConfiguration" and hook.get("reinvocationPolicy") is None:
            hook["reinvocationPolicy"] = "Never"
        _rules(hook.get("rules"))
        service = (hook.get("clientConfig") or {}).get("service")
        if service is not None and service.get("port") is None:
            service["port"] = 443


def default_policy(rt: ResourceType, policy: dict) -> None:
    spec = policy.setdefault("spec", {})
    if spec.get("failurePolicy") is None:
        spec["failurePolicy"] = "Fail"
    _match_resources(spec.get("matchConstraints"))


def default_policy_binding(rt: ResourceType, binding: dict) -> None:
    spec = binding.setdefault("spec", {})
    _match_resources(spec.get("matchResources"))
    ref = spec.get("paramRef")
    if ref is not None and ref.get("parameterNotFoundAction") is None:
        ref["parameterNotFoundAction"] = "Deny"


def default_api_service(rt: ResourceType, svc: dict) -> None:
    service = (svc.get("spec") or {}).get("service")
    if service is not None and service.get("port") is None:
        service["port"] = 443
