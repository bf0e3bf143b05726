"""The disruption controller: PodDisruptionBudget status, which the eviction API and ``kubectl drain`` obey.

Port of pkg/controller/disruption/disruption.go (v1.36): ``trySync`` (the
``NoPods`` and ``UnmanagedPods`` events), ``getExpectedPodCount`` /
``getExpectedScale`` (a percentage or ``maxUnavailable`` counts against the
scale of the pods' controllers: Deployments through their ReplicaSets,
ReplicaSets, StatefulSets), ``countHealthyPods``, ``updatePdbStatus`` with the
``DisruptionAllowed`` condition (``SufficientPods`` / ``InsufficientPods``)
and ``failSafe`` (``SyncFailed``, no disruptions allowed). Events come from
the component ``controllermanager``, as upstream's recorder names it.
The eviction API's ``status.disruptedPods`` bookkeeping is honoured when present.
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import clone, controller_of, parse_time, rfc3339
from ..selectors import label_selector_from_dict, matches_labels
from .workload import MANAGER, OwnerKeyedController, is_ready, scaled_value

COMPONENT = "controllermanager"
PDB = "poddisruptionbudgets.policy"
DELETION_TIMEOUT = 120.0  # a pod named in disruptedPods counts as gone for 2 minutes


class _SyncFailed(Exception):
    pass


def _selector(pdb: dict):
    """LabelSelectorAsSelector: a missing selector matches nothing, an empty one everything."""
    selector = (pdb.get("spec") or {}).get("selector")
    return None if selector is None else label_selector_from_dict(selector)


class DisruptionController(OwnerKeyedController):
    name = "disruption-controller"
    watches = (PDB, "pods", "replicasets.apps", "deployments.apps")

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        ns = m.get("namespace", "")
        if key == PDB:
            return [(ns, m["name"])]
        if key == "pods":
            return self._pdbs_for(ns, m.get("labels") or {})
        # A controller's scale changed: the PDBs over its pods.
        labels = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        return self._pdbs_for(ns, labels)

    def _pdbs_for(self, namespace: str, labels: dict) -> list[tuple[str, str]]:
        out = []
        for pdb in self.api.store.list(PDB, namespace):
            selector = _selector(pdb)
            if selector is not None and matches_labels(selector, labels):
                out.append((namespace, pdb["metadata"]["name"]))
        return out

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        pdb = self.api.store.get(PDB, ns, name)
        if pdb is None:
            return None
        try:
            return self._try_sync(pdb)
        except ApiError as exc:
            if exc.code == 409:
                raise
            self._fail_safe(pdb, exc.message)
        except _SyncFailed as exc:
            self._fail_safe(pdb, str(exc))
        return None

    def _try_sync(self, pdb: dict) -> float | None:
        selector = _selector(pdb)
        ns = pdb["metadata"]["namespace"]
        pods = [] if selector is None else \
            [p for p in self.api.store.list("pods", ns) if matches_labels(selector, p["metadata"].get("labels"))]
        self.sizes[(ns, pdb["metadata"]["name"])] = len(pods)
        if not pods:
            self.api.record_event(pdb, "Normal", "NoPods", "No matching pods found", COMPONENT)
        expected, desired, unmanaged = self._expected_pod_count(pdb, pods)
        if unmanaged:
            self.api.record_event(
                pdb, "Warning", "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {_go_selector(pdb)}) were found to be "
                "unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in "
                "undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB "
                "to an integer value.", COMPONENT)
        now = self.api.clock()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp")
                      and p["metadata"]["name"] not in disrupted and is_ready(p))
        self._update_status(pdb, healthy, desired, expected, disrupted)
        return recheck

    # --- expected pods -----------------------------------------------------------------
    def _expected_pod_count(self, pdb: dict, pods: list[dict]) -> tuple[int, int, list[str]]:
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self._expected_scale(pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected, True), 0)
            return expected, desired, unmanaged
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = self._expected_scale(pods)
            return expected, scaled_value(min_available, expected, True), unmanaged
        return 0, 0, []

    def _expected_scale(self, pods: list[dict]) -> tuple[int, list[str]]:
        """getExpectedScale: the sum of the scales of the pods' controllers."""
        scales: dict[str, int] = {}
        unmanaged = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = self._controller_scale(ref, pod["metadata"]["namespace"])
            if found is None:
                raise _SyncFailed(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    def _controller_scale(self, ref: dict, namespace: str) -> tuple[str, int] | None:
        """The finders: ReplicaSet (or its Deployment), StatefulSet."""
        kind = ref.get("kind")
        if kind == "ReplicaSet" and ref.get("apiVersion", "").startswith("apps/"):
            rs = self.api.store.get("replicasets.apps", namespace, ref["name"])
            if rs is None or rs["metadata"]["uid"] != ref.get("uid"):
                return None
            owner = controller_of(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                d = self.api.store.get("deployments.apps", namespace, owner["name"])
                if d is not None and d["metadata"]["uid"] == owner.get("uid"):
                    return d["metadata"]["uid"], int(d["spec"].get("replicas", 1))
                return None
            return rs["metadata"]["uid"], int(rs["spec"].get("replicas", 1))
        if kind == "StatefulSet" and self._served("statefulsets.apps"):
            sts = self.api.store.get("statefulsets.apps", namespace, ref["name"])
            if sts is not None and sts["metadata"]["uid"] == ref.get("uid"):
                return sts["metadata"]["uid"], int(sts["spec"].get("replicas", 1))
        return None

    def _served(self, key: str) -> bool:
        try:
            self.api.registry.by_key(key)
        except KeyError:
            return False
        return True

    def _disrupted_pods(self, pdb: dict, pods: list[dict], now: float) -> tuple[dict, float | None]:
        """buildDisruptedPodMap: an evicted pod not yet deleted counts as disrupted for DELETION_TIMEOUT."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        disrupted: dict[str, str] = {}
        recheck = None
        for pod in pods:
            stamp = recorded.get(pod["metadata"]["name"])
            if stamp is None or pod["metadata"].get("deletionTimestamp"):
                continue
            expires = (parse_time(stamp) or now) + DELETION_TIMEOUT
            if expires < now:
                # (sic) upstream names the PDB's namespace twice
                ns = pdb["metadata"]["namespace"]
                self.api.record_event(pod, "Warning", "NotDeleted",
                                      f"Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't", COMPONENT)
                continue
            disrupted[pod["metadata"]["name"]] = stamp
            recheck = expires - now if recheck is None else min(recheck, expires - now)
        return disrupted, recheck

    # --- status ---------------------------------------------------------------------------
    def _update_status(self, pdb: dict, healthy: int, desired: int, expected: int, disrupted: dict) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        generation = pdb["metadata"].get("generation", 0)
        status = {"observedGeneration": generation} if generation else {}
        if disrupted:
            status["disruptedPods"] = disrupted
        status.update(disruptionsAllowed=allowed, currentHealthy=healthy, desiredHealthy=desired,
                      expectedPods=expected)
        conditions = [dict(c) for c in (pdb.get("status") or {}).get("conditions") or ()]
        if allowed > 0:
            _set_condition(conditions, "True", "SufficientPods", "", generation, self.api.clock())
        else:
            _set_condition(conditions, "False", "InsufficientPods", "", generation, self.api.clock())
        status["conditions"] = conditions
        self._write(pdb, status)

    def _fail_safe(self, pdb: dict, message: str) -> None:
        status = clone(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        conditions = status.setdefault("conditions", [])
        _set_condition(conditions, "False", "SyncFailed", message, status.get("observedGeneration", 0),
                       self.api.clock())
        self._write(pdb, status)

    def _write(self, pdb: dict, status: dict) -> None:
        if (pdb.get("status") or {}) == status:
            return
        new = clone(pdb)
        new["status"] = status
        self.api.update(PDB, new, pdb["metadata"]["namespace"], subresource="status", manager=MANAGER)


def _set_condition(conditions: list[dict], status: str, reason: str, message: str, generation: int,
                   now: float) -> None:
    """meta.SetStatusCondition for DisruptionAllowed: the transition time moves only when the status flips."""
    for c in conditions:
        if c.get("type") == "DisruptionAllowed":
            if c.get("status") != status:
                c["lastTransitionTime"] = rfc3339(now)
            c.update(status=status, reason=reason, message=message, observedGeneration=generation)
            return
    conditions.append({"type": "DisruptionAllowed", "status": status, "observedGeneration": generation,
                       "lastTransitionTime": rfc3339(now), "reason": reason, "message": message})


def _go_selector(pdb: dict) -> str:
    """The %v of a *metav1.LabelSelector (its generated String method), as the UnmanagedPods event prints it."""
    selector = (pdb.get("spec") or {}).get("selector") or {}
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    exprs = "".join(f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
                    f"Values:[{' '.join(e.get('values') or [])}],}}," for e in selector.get("matchExpressions") or ())
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
