"""Pods: pkg/registry/core/pod (strategy.go, storage/storage.go) and the admission plugins that mutate pods.

On create a pod starts Pending with its QoS class (and ``PodScheduled=False``
``SchedulingGated`` while it has scheduling gates); the ServiceAccount,
Priority and DefaultTolerationSeconds admission plugins fill in what their
names say. DELETE of a pod bound to a node is graceful: it stays terminating
until its kubelet confirms with a zero grace period.
"""
from __future__ import annotations

from ..defaults import admission
from ..defaults import pods as defaults
from ..objects import rfc3339
from ..printers import Printer
from ..printers import pods as printers
from ..registry import ResourceType
from ..validation import pod_warnings
from ..validation import pods as validation
from .strategy import PROXY_VERBS, Context, Strategy, Subresource


class PodStrategy(Strategy):
    resource = ResourceType("", "v1", "pods", "Pod", True, short_names=("po",), categories=("all",),
                            subresources=("status", "binding", "eviction", "log", "exec", "attach", "portforward",
                                          "proxy", "ephemeralcontainers"))
    subresources = {
        "binding": Subresource(("create",), ("", "v1", "Binding")),
        "eviction": Subresource(("create",), ("policy", "v1", "Eviction")),
        "log": Subresource(("get",), text=True),
        # the connect storages of pkg/registry/core/pod/rest/subresources.go
        "exec": Subresource(("create", "get"), ("", "v1", "PodExecOptions"), connect=True),
        "attach": Subresource(("create", "get"), ("", "v1", "PodAttachOptions"), connect=True),
        "portforward": Subresource(("create", "get"), ("", "v1", "PodPortForwardOptions"), connect=True),
        "proxy": Subresource(PROXY_VERBS, ("", "v1", "PodProxyOptions"), connect=True),
        "ephemeralcontainers": Subresource(),
    }
    has_generation = True
    returns_deleted_object = True
    graceful_deletion = True
    printer = Printer(printers.columns, printers.cells, printers.row_conditions)
    # pod GetAttrs / ToSelectableFields; spec.hostNetwork is strconv.FormatBool, "false" when unset
    selectable_fields = {
        "spec.nodeName": None, "spec.restartPolicy": None, "spec.schedulerName": None,
        "spec.serviceAccountName": None,
        "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
        "status.phase": None, "status.podIP": None, "status.podIPs": None, "status.nominatedNodeName": None,
    }
    # podStatusStrategy.GetResetFields
    status_reset_fields = (("spec",), ("metadata", "deletionTimestamp"), ("metadata", "ownerReferences"))

    def default(self, obj: dict) -> None:
        defaults.default_pod(self.resource, obj)

    def admit_create(self, obj: dict, ctx: Context) -> None:
        admission.admit_service_account(self.resource, obj, ctx.lookup)
        admission.admit_priority(self.resource, obj, ctx.lookup, ctx.list)
        admission.admit_default_toleration_seconds(obj)

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        # DefaultTolerationSeconds handles Create and Update: a patch that drops the tolerations gets them back.
        admission.admit_default_toleration_seconds(obj)
        admission.keep_priority(obj, old)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Pending", "qosClass": defaults.compute_qos(obj.get("spec") or {})}
        if (obj.get("spec") or {}).get("schedulingGates"):
            # applySchedulingGatedCondition
            obj["status"]["conditions"] = [{
                "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates", "lastProbeTime": None,
                "lastTransitionTime": rfc3339(ctx.clock()), "observedGeneration": 1}]

    def validate(self, obj: dict) -> list:
        return validation.validate_pod_create(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.pod_warnings(obj)

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        if subresource == "ephemeralcontainers":
            # podEphemeralContainersStrategy: only spec.ephemeralContainers from the request (updatePodGeneration too)
            new = defaults.drop_non_ephemeral_container_updates(new, old)
            if new["spec"] != old.get("spec"):
                new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
            return new
        return super().prepare_for_update(new, old, subresource)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_pod_status_update(new, old)
        if subresource == "ephemeralcontainers":
            return validation.validate_pod_ephemeral_containers_update(new, old)
        return validation.validate_pod_update(new, old)

    def grace_period(self, obj: dict, requested: int | None) -> int:
        """CheckGracefulDeletion: immediate for a pod no node runs or one that finished."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            return 0
        period = int(requested) if requested is not None else int(spec.get("terminationGracePeriodSeconds", 30))
        return 1 if period < 0 else period

    def deletion_complete(self, obj: dict) -> bool:
        # A pod on a node goes only once its kubelet confirmed (deleted it with grace 0), even when its phase is
        # already terminal, so watchers see the final status before DELETED.
        return not obj["metadata"].get("deletionGracePeriodSeconds")
