"""The table of CustomResourceDefinitions themselves (``kubectl get crd``), new in v1.37.

A port of apiextensions-apiserver's
pkg/registry/customresourcedefinition/tableconvertor/tableconvertor.go
(kubernetes/kubernetes#131599): ``Name Group Scope Versions Created At``, the
versions being every listed version's name, sorted and comma-joined (served or
not), the creation time an RFC 3339 timestamp that kubectl prints as it is.
"""
from __future__ import annotations

from .cells import format_rfc3339, name, time_of
from .columns import META, column, doc, name_column


def crd_columns() -> list[dict]:
    return [name_column(), column("Group", description="API group"),
            column("Scope", description="Cluster/Namespaced"), column("Versions", description="Served versions"),
            column("Created At", "date", doc(META, "creationTimestamp"))]


def crd_cells(crd: dict, now_us: int) -> list:
    spec = crd.get("spec") or {}
    versions = sorted(v.get("name", "") for v in spec.get("versions") or [])
    return [name(crd), spec.get("group", ""), spec.get("scope", ""), ",".join(versions),
            format_rfc3339(time_of((crd.get("metadata") or {}).get("creationTimestamp")))]
