"""The review APIs and TokenRequest: what their create-only REST storages answer.

* SelfSubjectReview (pkg/registry/authentication/selfsubjectreview/rest.go): the request's own user.
* TokenReview (tokenreview/storage.go): a token's user, by this cluster's token authenticators.
* SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview (pkg/registry/authorization/*):
  the authorizer's decision on the attributes of the spec, for the spec's user or the requester, with the
  validation of pkg/apis/authorization/validation.
* SelfSubjectRulesReview (selfsubjectrulesreview/rest.go): the rules RBAC resolves for the requester in a
  namespace (kubectl auth can-i --list prints them).
* TokenRequest, ``serviceaccounts/token`` (pkg/registry/core/serviceaccount/storage/token.go): a signed token
  for the ServiceAccount, bound to a pod, secret or node when asked, 3600 s unless asked otherwise.
"""
from __future__ import annotations

from ..errors import ApiError, FieldError, bad_request, invalid_object, not_found, required
from ..objects import rfc3339
from . import filters, tokens
from . import user as users
from .rules import Attributes
from .tokens import Binding

_AUTHZ = "authorization.k8s.io"
_AUTHN = "authentication.k8s.io"


def _echo(body: dict, status: dict, *, created: str | None = None) -> dict:
    meta = dict(body.get("metadata") or {})
    meta["creationTimestamp"] = created
    out = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"), "metadata": meta}
    if "spec" in body:
        out["spec"] = body["spec"]
    out["status"] = status
    return out


def _invalid(kind: str, group: str, errs: list[FieldError], name: str = "") -> ApiError:
    return invalid_object(kind, group, name, errs)


def _attributes(spec: dict, kind: str) -> Attributes:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errs = []
    if resource is not None and non_resource is not None:
        errs.append(FieldError("FieldValueInvalid", "spec.nonResourceAttributes", non_resource,
                               "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        errs.append(FieldError("FieldValueInvalid", "spec.resourceAttributes", None,
                               "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if kind == "SubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        errs.append(FieldError("FieldValueInvalid", "spec.user", spec.get("user") or "",
                               "at least one of user or group must be specified"))
    if errs:
        raise _invalid(kind, _AUTHZ, errs)
    if non_resource is not None:
        return Attributes(non_resource.get("verb") or "", False, path=non_resource.get("path") or "")
    r = resource
    return Attributes(r.get("verb") or "", True, api_group=r.get("group") or "", api_version=r.get("version") or "",
                      resource=r.get("resource") or "", subresource=r.get("subresource") or "",
                      namespace=r.get("namespace") or "", name=r.get("name") or "")


def _access_status(allowed: bool, reason: str) -> dict:
    status: dict = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


class Reviews:
    """Answers the review resources' POSTs (and ``serviceaccounts/token``) for one cluster."""

    def __init__(self, auth: filters.RequestAuth, api):
        self._auth = auth
        self._api = api

    def _requester(self) -> users.UserInfo:
        request = filters.current()
        return request.user if request is not None else users.LOOPBACK

    def serve(self, key: str, body: dict, namespace: str | None) -> dict:
        if not isinstance(body, dict):
            raise bad_request("Object 'Kind' is missing in request body")
        kind = body.get("kind") or ""
        spec = body.get("spec") or {}
        if key == f"selfsubjectreviews.{_AUTHN}":
            return _echo(body, {"userInfo": self._requester().as_status()}, created=rfc3339(self._api.clock()))
        if key == f"tokenreviews.{_AUTHN}":
            return self._token_review(body, spec)
        if key == f"selfsubjectrulesreviews.{_AUTHZ}":
            return self._rules_review(body, spec)
        attrs = _attributes(spec, kind)
        if key == f"localsubjectaccessreviews.{_AUTHZ}":
            if attrs.resource_request and attrs.namespace != namespace:
                raise _invalid(kind, _AUTHZ, [FieldError("FieldValueInvalid", "spec.resourceAttributes.namespace",
                                                         attrs.namespace, "must match metadata.namespace")])
        if key == f"selfsubjectaccessreviews.{_AUTHZ}":
            subject = self._requester()
        else:
            extra = {k: tuple(v or ()) for k, v in (spec.get("extra") or {}).items()}
            subject = users.UserInfo(spec.get("user") or "", spec.get("uid") or "", tuple(spec.get("groups") or ()),
                                     extra)
        allowed, reason = self._auth.authorizer.authorize(subject, attrs)
        return _echo(body, _access_status(allowed, reason))

    def _token_review(self, body: dict, spec: dict) -> dict:
        token = spec.get("token") or ""
        if not token:
            raise _invalid("TokenReview", _AUTHN, [required("spec.token")])
        audiences = tuple(spec.get("audiences") or ()) or tokens.API_AUDIENCES
        who = self._auth.authenticator.authenticate_token(token, audiences)
        if who is None:
            return _echo(body, {"user": {}, "error": "[invalid bearer token, token lookup failed]"})
        return _echo(body, {"authenticated": True, "user": who.as_status(), "audiences": list(audiences)})

    def _rules_review(self, body: dict, spec: dict) -> dict:
        namespace = spec.get("namespace") or ""
        rules, errors = self._auth.authorizer.rules_for(self._requester(), namespace)
        resource_rules, non_resource_rules = [], []
        for rule, _ in rules:
            if rule.get("resources"):
                entry = {"verbs": rule.get("verbs") or []}
                for field in ("apiGroups", "resources", "resourceNames"):
                    if rule.get(field):
                        entry[field] = rule[field]
                resource_rules.append(entry)
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": rule.get("verbs") or [],
                                           "nonResourceURLs": rule["nonResourceURLs"]})
        status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
        if errors:
            from .rbac import aggregate_errors

            status["evaluationError"] = aggregate_errors(errors)
        return _echo(body, status)

    # --- serviceaccounts/token --------------------------------------------------------------------------------
    def token_request(self, namespace: str, sa_name: str, body: dict) -> dict:
        sa = self._api.store.get("serviceaccounts", namespace, sa_name)
        if sa is None:
            raise not_found("serviceaccounts", "", sa_name)
        body = body if isinstance(body, dict) else {}
        spec = dict(body.get("spec") or {})
        expiration = spec.get("expirationSeconds") or tokens.DEFAULT_EXPIRATION
        if expiration < tokens.MIN_EXPIRATION:
            raise invalid_object("TokenRequest", _AUTHN, sa_name, [FieldError(
                "FieldValueInvalid", "spec.expirationSeconds", expiration,
                "may not specify a duration less than 10 minutes")])
        if expiration > 1 << 32:
            raise invalid_object("TokenRequest", _AUTHN, sa_name, [FieldError(
                "FieldValueInvalid", "spec.expirationSeconds", expiration,
                "may not specify a duration larger than 2^32 seconds")])
        audiences = tuple(spec.get("audiences") or ()) or tokens.API_AUDIENCES
        binding = self._binding(namespace, spec.get("boundObjectRef"))
        now = self._api.clock()
        token, exp = self.issue(namespace, sa, now=now, expiration=expiration, audiences=audiences, binding=binding)
        spec.update({"audiences": list(audiences), "expirationSeconds": expiration,
                     "boundObjectRef": spec.get("boundObjectRef")})
        meta = {"name": sa_name, "namespace": namespace, "creationTimestamp": None}
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": meta, "spec": spec,
                "status": {"token": token, "expirationTimestamp": rfc3339(exp)}}

    def issue(self, namespace: str, sa: dict, **kwargs) -> tuple[str, int]:
        return self._auth.authenticator.issuer.issue(namespace, sa["metadata"]["name"], sa["metadata"]["uid"],
                                                     **kwargs)

    def _binding(self, namespace: str, ref: dict | None) -> Binding | None:
        if not ref:
            return None
        kind, name, uid = ref.get("kind") or "", ref.get("name") or "", ref.get("uid") or ""
        keys = {"Pod": ("pods", namespace), "Secret": ("secrets", namespace), "Node": ("nodes", "")}
        if kind not in keys:
            raise bad_request(f'cannot bind token for object of type "{kind}"')
        key, ns = keys[kind]
        obj = self._api.store.get(key, ns, name)
        if obj is None:
            raise not_found(key, "", name)
        if uid and uid != obj["metadata"]["uid"]:
            raise ApiError(409, "Conflict", f"the UID in the bound object reference ({uid}) does not match the UID "
                                            "in record. The object might have been deleted and then recreated")
        node_name = ((obj.get("spec") or {}).get("nodeName") or "") if kind == "Pod" else ""
        node = self._api.store.get("nodes", "", node_name) if node_name else None
        if kind == "Node":
            return Binding("Node", name, obj["metadata"]["uid"], name, obj["metadata"]["uid"])
        return Binding(kind, name, obj["metadata"]["uid"], node_name, node["metadata"]["uid"] if node else "")
