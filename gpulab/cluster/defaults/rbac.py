"""rbac.authorization.k8s.io/v1 defaulting: pkg/apis/rbac/v1/defaults.go."""
from __future__ import annotations

GROUP = "rbac.authorization.k8s.io"


def default_binding(binding: dict) -> None:
    """SetDefaults_RoleBinding / ClusterRoleBinding and SetDefaults_Subject."""
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in binding.get("subjects") or []:
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = GROUP
