"""The clusterrole-aggregation controller: pkg/controller/clusterroleaggregation.

A ClusterRole with an ``aggregationRule`` gets as its ``rules`` those of every ClusterRole its selectors
match (in name order, each rule once); any ClusterRole change requeues every aggregated one, as upstream's
handler does, and a role whose rules already match is left alone.
"""
from __future__ import annotations

from ..auth.bootstrap import aggregated_rules
from ..auth.rbac import CLUSTER_ROLES
from ..objects import clone
from .base import Controller


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation-controller"
    watches = (CLUSTER_ROLES,)

    def keys_for(self, key: str, obj: dict):
        return [r["metadata"]["name"] for r in self.api.store.list(CLUSTER_ROLES) if r.get("aggregationRule")]

    def initial_keys(self):
        return self.keys_for(CLUSTER_ROLES, {})

    async def reconcile(self, name: str) -> float | None:
        role = self.api.try_get(CLUSTER_ROLES, name)
        if role is None or not role.get("aggregationRule"):
            return None
        rules = aggregated_rules(role, self.api.store.list(CLUSTER_ROLES))
        if rules == (role.get("rules") or []):
            return None
        updated = clone(role)
        updated["rules"] = rules
        self.api.update(CLUSTER_ROLES, updated, manager="clusterrole-aggregation-controller")
        return None
