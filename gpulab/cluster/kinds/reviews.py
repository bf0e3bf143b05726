"""The review kinds of authentication.k8s.io/v1 and authorization.k8s.io/v1: TokenReview, SelfSubjectReview,
SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview.

Upstream serves each with a create-only REST storage that answers from the authenticator or authorizer and
stores nothing (pkg/registry/authentication/*/rest.go, pkg/registry/authorization/*/rest.go); so they share
this one module: a strategy each, naming the resource as discovery reports it, and the server hands their
POSTs to :mod:`gpulab.cluster.auth.reviews`.
"""
from __future__ import annotations

from ..registry import ResourceType
from .strategy import Strategy

_CREATE = ("create",)
AUTHN = "authentication.k8s.io"
AUTHZ = "authorization.k8s.io"


class TokenReviewStrategy(Strategy):
    resource = ResourceType(AUTHN, "v1", "tokenreviews", "TokenReview", False, verbs=_CREATE)


class SelfSubjectReviewStrategy(Strategy):
    resource = ResourceType(AUTHN, "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=_CREATE)


class LocalSubjectAccessReviewStrategy(Strategy):
    resource = ResourceType(AUTHZ, "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True,
                            verbs=_CREATE)


class SelfSubjectAccessReviewStrategy(Strategy):
    resource = ResourceType(AUTHZ, "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
                            verbs=_CREATE)


class SelfSubjectRulesReviewStrategy(Strategy):
    resource = ResourceType(AUTHZ, "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, verbs=_CREATE)


class SubjectAccessReviewStrategy(Strategy):
    resource = ResourceType(AUTHZ, "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=_CREATE)


AUTHENTICATION = (TokenReviewStrategy(), SelfSubjectReviewStrategy())
AUTHORIZATION = (LocalSubjectAccessReviewStrategy(), SelfSubjectAccessReviewStrategy(),
                 SelfSubjectRulesReviewStrategy(), SubjectAccessReviewStrategy())
REVIEW_KEYS = frozenset(s.resource.key for s in AUTHENTICATION + AUTHORIZATION)
