"""Printers for rbac.authorization.k8s.io: roles, cluster roles and their bindings.

Ports of printRole, printClusterRole, printRoleBinding and printClusterRoleBinding in
kubernetes/pkg/printers/internalversion/printers.go (the wide columns from rbac.SubjectsStrings).
"""
from __future__ import annotations

from .cells import age, format_rfc3339, name, time_of
from .columns import META, age_column, column, doc, name_column


def role_columns() -> list[dict]:
    return [name_column(), column("Created At", "date", doc(META, "creationTimestamp"))]


def role_cells(role: dict, now_us: int) -> list:
    return [name(role), format_rfc3339(time_of((role.get("metadata") or {}).get("creationTimestamp")))]


def _binding_columns(what: str) -> list[dict]:
    return [name_column(), column("Role"), age_column(),
            column("Users", description=f"Users in the {what}", priority=1),
            column("Groups", description=f"Groups in the {what}", priority=1),
            column("ServiceAccounts", description=f"ServiceAccounts in the {what}", priority=1)]


def rolebinding_columns() -> list[dict]:
    return _binding_columns("roleBinding")


def clusterrolebinding_columns() -> list[dict]:
    return _binding_columns("clusterRoleBinding")


def binding_cells(binding: dict, now_us: int) -> list:
    ref = binding.get("roleRef") or {}
    subjects = binding.get("subjects") or []
    users = [s.get("name", "") for s in subjects if s.get("kind") == "User"]
    groups = [s.get("name", "") for s in subjects if s.get("kind") == "Group"]
    sas = [f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects if s.get("kind") == "ServiceAccount"]
    return [name(binding), f"{ref.get('kind', '')}/{ref.get('name', '')}", age(binding, now_us),
            ", ".join(users), ", ".join(groups), ", ".join(sas)]
