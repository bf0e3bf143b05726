"""Quantities as the API server stores them: decoded, rounded, printed in canonical form.

Every ``resource.Quantity`` field goes through Quantity.UnmarshalJSON and
MarshalJSON on its way into storage, so ``0.5`` is stored as ``500m`` and
``1024Mi`` as ``1Gi``; ResourceList fields are also rounded up to milli
precision by SetDefaults_ResourceList (pkg/apis/core/v1/defaults.go). A value
that is not a quantity fails decoding with a 400, before any validation:
``Pod in version "v1" cannot be handled as a Pod: quantities must match ...``
(transformDecodeError in k8s.io/apiserver/pkg/endpoints/handlers/rest.go).
"""
from __future__ import annotations

import math
from fractions import Fraction

from .. import quantity
from ..errors import ApiError, bad_request
from ..registry import ResourceType


def _decode_error(rt: ResourceType, exc: ValueError) -> ApiError:
    return bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {exc}')


def canonical(rt: ResourceType, value) -> str:
    """One Quantity field: parsed and printed again."""
    try:
        return quantity.canonical(value)
    except ValueError as exc:
        raise _decode_error(rt, exc) from None


def _round_up_to_milli(value: Fraction) -> Fraction:
    scaled = value * 1000
    if scaled.denominator == 1:
        return value
    return Fraction(math.ceil(scaled) if value > 0 else -math.ceil(-scaled), 1000)


def canonical_resource_list(rt: ResourceType, resources: dict | None) -> None:
    """A ResourceList in place: SetDefaults_ResourceList's RoundUp(-3) plus canonical printing."""
    for name, raw in list((resources or {}).items()):
        try:
            parsed = quantity.parse(raw)
        except ValueError as exc:
            raise _decode_error(rt, exc) from None
        resources[name] = quantity.format_quantity(_round_up_to_milli(parsed.value), parsed.format)
