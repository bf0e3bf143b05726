"""PodGroups (scheduling.k8s.io/v1beta1, KEP-4671): pkg/registry/scheduling/podgroup/strategy.go.

The runtime group of pods that name it in ``spec.schedulingGroup.podGroupName``;
its spec is immutable, its status (the scheduler's
``PodGroupInitiallyScheduled`` condition) is a subresource. Served only with
the ``GenericWorkload`` gate. Distinct from scheduler-plugins'
``podgroups.scheduling.x-k8s.io`` (a CRD, see scheduler/plugins/coscheduling).
"""
from __future__ import annotations

from ..registry import ResourceType
from ..validation import gangs as validation
from .strategy import Context, Strategy


class PodGroupStrategy(Strategy):
    resource = ResourceType("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True,
                            subresources=("status",))
    has_generation = True
    feature_gate = "GenericWorkload"

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}

    def validate(self, obj: dict) -> list:
        return validation.validate_pod_group(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return []
        return validation.validate_pod_group_update(new, old)
