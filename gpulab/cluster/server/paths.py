"""Resolving request paths to resources, as kube-apiserver's installer routes them.

``/api/v1/namespaces/NS/pods/NAME/log`` -> (pods, NS, NAME, "log");
``/api/v1/namespaces/NS`` is the namespace object itself, and
``/api/v1/namespaces/NS/status`` its status subresource.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ApiError
from ..registry import Registry, ResourceType


@dataclass
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool = False


def _not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def resolve(registry: Registry, path: str) -> Target | None:
    """None when the path is not a resource path (discovery and others are routed elsewhere)."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    legacy_watch = False
    if rest and rest[0] == "watch":
        legacy_watch, rest = True, rest[1:]
        if not rest:
            raise _not_found()
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = registry.lookup(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    rt = registry.lookup(group, version, plural)
    if rt is None:
        raise _not_found()
    name = rest[1] if len(rest) >= 2 else None
    sub = "/".join(rest[2:]) if len(rest) >= 3 else None
    if sub is not None and rest[2] == "proxy" and "proxy" in rt.subresources:
        sub = "proxy"   # the rest of the path is the proxied one (server/proxy.py)
    if sub is not None and sub not in rt.subresources:
        raise _not_found()
    if rt.namespaced and namespace is None and name is not None:
        raise _not_found()
    return Target(rt, namespace, name, sub, legacy_watch)
