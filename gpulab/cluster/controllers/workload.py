"""What the workload controllers share: owned objects, adoption, pod creation and deletion, pod readiness.

Ports of the helpers in pkg/controller/controller_utils.go (``PodControlInterface``,
``FilterActivePods``, ``ActivePodsWithRanks``, ``ComputeHash``),
pkg/controller/controller_ref_manager.go (``ClaimObject``: adopt orphans that
match the selector, release owned objects that no longer do),
pkg/api/v1/pod/util.go (``IsPodReady``, ``IsPodAvailable``) and
k8s.io/apimachinery/pkg/util/intstr (``GetScaledValueFromIntOrPercent``).
kube-controller-manager reads these from informer caches indexed by owner; here
the store keeps an index of objects by their controller's uid and of orphans
by namespace, so a reconcile touches only the objects it owns.
"""
from __future__ import annotations

import functools
import math
import re
from typing import Callable, Hashable

import orjson

from ..api import Api
from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference, parse_time
from ..selectors import Requirement, label_selector_from_dict, matches_labels
from .base import Controller

MANAGER = "kube-controller-manager"
_CONTROLLER_UID = "metadata.ownerReferences[controller].uid"
_ORPHAN_NAMESPACE = "orphans.namespace"
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


# --- indexes of owned objects ----------------------------------------------
def _controller_uid(obj: dict) -> str | None:
    ref = controller_of(obj)
    return ref.get("uid") if ref else None


def _orphan_namespace(obj: dict) -> str | None:
    return None if controller_of(obj) else obj["metadata"].get("namespace", "")


def index_by_controller(api: Api, key: str) -> None:
    """Index ``key`` objects by their controller's uid and orphans by namespace (idempotent)."""
    if not api.store.has_index(key, _CONTROLLER_UID):
        api.store.add_index(key, _CONTROLLER_UID, _controller_uid)
        api.store.add_index(key, _ORPHAN_NAMESPACE, _orphan_namespace)


def controlled(api: Api, key: str, uid: str) -> list[dict]:
    return api.store.by_index(key, _CONTROLLER_UID, uid)


def orphans(api: Api, key: str, namespace: str) -> list[dict]:
    return api.store.by_index(key, _ORPHAN_NAMESPACE, namespace)


def claim(api: Api, key: str, owner: dict, selector: list[Requirement],
          include: Callable[[dict], bool] = lambda obj: True, owned: list[dict] | None = None) -> list[dict]:
    """ClaimObjects over the objects ``include`` accepts: the owner's that match ``selector``, after adopting
    matching orphans and releasing owned objects that no longer match (controller_ref_manager.go)."""
    uid = owner["metadata"]["uid"]
    owner_deleting = owner["metadata"].get("deletionTimestamp") is not None
    claimed = []
    for obj in controlled(api, key, uid) if owned is None else owned:
        if not include(obj):
            continue
        if matches_labels(selector, obj["metadata"].get("labels")):
            claimed.append(obj)
        elif not owner_deleting:
            _set_owner_references(api, key, obj, [r for r in obj["metadata"].get("ownerReferences") or []
                                                  if r.get("uid") != uid])
    if owner_deleting or not selector:
        return claimed
    for obj in orphans(api, key, owner["metadata"].get("namespace", "")):
        if not include(obj) or obj["metadata"].get("deletionTimestamp") or \
                not matches_labels(selector, obj["metadata"].get("labels")):
            continue
        refs = list(obj["metadata"].get("ownerReferences") or []) + [owner_reference(owner)]
        adopted = _set_owner_references(api, key, obj, refs)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


def _set_owner_references(api: Api, key: str, obj: dict, refs: list[dict]) -> dict | None:
    meta = obj["metadata"]
    try:
        return api.patch(key, meta["name"], {"metadata": {"ownerReferences": refs or None}}, "merge",
                         meta.get("namespace"), manager=MANAGER)
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise


# --- pods from templates -----------------------------------------------------
def pod_from_template(template: dict, owner: dict) -> dict:
    """GetPodFromTemplate: labels, annotations and finalizers of the template, its spec, a controller reference,
    and ``generateName`` ``<owner>-`` (getPodsPrefix)."""
    tmeta = template.get("metadata") or {}
    meta: dict = {"generateName": f"{owner['metadata']['name']}-", "ownerReferences": [owner_reference(owner)]}
    for field in ("labels", "annotations", "finalizers"):
        if tmeta.get(field):
            meta[field] = clone(tmeta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone(template.get("spec") or {})}


def create_pod(api: Api, owner: dict, pod: dict, component: str) -> dict:
    """RealPodControl.CreatePods: create, then the ``SuccessfulCreate`` or ``FailedCreate`` event on the owner."""
    try:
        created = api.create("pods", pod, owner["metadata"]["namespace"], manager=MANAGER)
    except ApiError as exc:
        api.record_event(owner, "Warning", "FailedCreate", f"Error creating: {exc.message}", component)
        raise
    api.record_event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}", component)
    return created


def delete_pod(api: Api, owner: dict, pod: dict, component: str) -> bool:
    """RealPodControl.DeletePod: False when the pod was already gone."""
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    try:
        api.delete("pods", name, namespace)
    except ApiError as exc:
        if exc.code == 404:
            return False
        api.record_event(owner, "Warning", "FailedDelete", f"Error deleting: {exc.message}", component)
        raise
    api.record_event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", component)
    return True


# --- pod state -----------------------------------------------------------------
def is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_active(pod: dict) -> bool:
    """IsPodActive: not terminal and not being deleted."""
    return not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp")


def is_terminating(pod: dict) -> bool:
    """Being deleted but not yet terminal (FilterTerminatingPods)."""
    return bool(pod["metadata"].get("deletionTimestamp")) and not is_terminal(pod)


def ready_condition(pod: dict) -> dict | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c
    return None


def is_ready(pod: dict) -> bool:
    c = ready_condition(pod)
    return c is not None and c.get("status") == "True"


def is_available(pod: dict, min_ready_seconds: int, now: float) -> bool:
    """IsPodAvailable: ready for at least minReadySeconds."""
    if not is_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    since = parse_time(ready_condition(pod).get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds < now


# --- numbers -------------------------------------------------------------------
_PERCENT = re.compile(r"^(\d+)%$")


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    m = _PERCENT.match(value)
    if not m:
        raise ValueError(f'invalid value for IntOrString: invalid value "{value}"')
    scaled = int(m.group(1)) * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def compute_hash(template: dict, collision_count: int | None) -> str:
    """ComputeHash's shape: FNV-32a of the template (plus the collision count), as SafeEncodeString of its decimal.

    Upstream hashes go-spew's dump of the Go struct; this hashes the template's
    canonical JSON, so the value differs from a real cluster's for the same
    template but has the same form and changes exactly when the template does.
    """
    h = 0x811C9DC5
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little", signed=False) + b"\0\0\0\0"
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(h))


# --- which pods go first -----------------------------------------------------------
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _max_restarts(pod: dict) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount", 0)) for s in statuses), default=0)


def _log_rank(t: float | None, now: float) -> int:
    """logarithmicRankDiff's rank: floor(log2) of the age in nanoseconds, -1 when not in the past."""
    if t is None:
        return -1
    age_ns = (now - t) * 1e9
    return int(math.log2(age_ns)) if age_ns > 0 else -1


def deletion_order(pods: list[dict], ranks: list[int], now: float) -> list[dict]:
    """The pods sorted by ActivePodsWithRanks (LogarithmicScaleDown and PodDeletionCost on): first to delete first."""
    def cost(p: dict) -> int:
        try:
            return int((p["metadata"].get("annotations") or {}).get(POD_DELETION_COST, "0"))
        except ValueError:
            return 0

    def compare(a: tuple[int, dict], b: tuple[int, dict]) -> int:
        (ra, pa), (rb, pb) = a, b
        na, nb = (pa.get("spec") or {}).get("nodeName") or "", (pb.get("spec") or {}).get("nodeName") or ""
        if na != nb and (not na or not nb):
            return -1 if not na else 1
        pha = _PHASE_ORDER.get((pa.get("status") or {}).get("phase"), 0)
        phb = _PHASE_ORDER.get((pb.get("status") or {}).get("phase"), 0)
        if pha != phb:
            return -1 if pha < phb else 1
        if is_ready(pa) != is_ready(pb):
            return -1 if not is_ready(pa) else 1
        if cost(pa) != cost(pb):
            return -1 if cost(pa) < cost(pb) else 1
        if ra != rb:
            return -1 if ra > rb else 1
        if is_ready(pa) and is_ready(pb):
            ta = parse_time(ready_condition(pa).get("lastTransitionTime"))
            tb = parse_time(ready_condition(pb).get("lastTransitionTime"))
            if ta != tb:
                diff = _log_rank(ta, now) - _log_rank(tb, now)
                if ta is None or tb is None or diff == 0:
                    return _zero_first_or_uid(pa, pb, ta, tb)
                return -1 if diff < 0 else 1
        if _max_restarts(pa) != _max_restarts(pb):
            return -1 if _max_restarts(pa) > _max_restarts(pb) else 1
        ca = parse_time(pa["metadata"].get("creationTimestamp"))
        cb = parse_time(pb["metadata"].get("creationTimestamp"))
        if ca != cb:
            diff = _log_rank(ca, now) - _log_rank(cb, now)
            if ca is None or cb is None or diff == 0:
                return _zero_first_or_uid(pa, pb, ca, cb)
            return -1 if diff < 0 else 1
        return 0

    ordered = sorted(zip(ranks, pods), key=functools.cmp_to_key(compare))
    return [p for _, p in ordered]


def _zero_first_or_uid(pa: dict, pb: dict, ta: float | None, tb: float | None) -> int:
    """afterOrZero for a missing time (zero first); the uid when both fall in the same logarithmic bucket."""
    if ta is None or tb is None:
        return -1 if ta is None else 1
    ua, ub = pa["metadata"]["uid"], pb["metadata"]["uid"]
    return -1 if ua < ub else (1 if ua > ub else 0)


# --- controllers keyed by owner --------------------------------------------------
def coalesce_delay(size: int) -> float:
    """How long a pod event waits before it wakes an owner of ``size`` pods.

    Each sync of an owner reads all its pods, so waking it for every pod
    update costs O(n^2) when its pods start one by one; letting the events of
    a big owner gather for 200 us per pod (at most 1 s), several times what
    a sync costs per pod, keeps that to a small share of the loop. Owners
    under 100 pods are woken at once.
    """
    return 0.0 if size < 100 else min(size * 200e-6, 1.0)


class OwnerKeyedController(Controller):
    """A controller whose work keys come from the new and the old version of each changed object.

    A pod that changes owner or labels must wake both its old and its new
    controller, as the informer handlers of kube-controller-manager do with
    ``oldObj`` and ``newObj``; :meth:`keys_for_change` sees both. Events of
    the kinds in ``coalesced`` wake an owner after :func:`coalesce_delay` of
    the size its last sync recorded in ``sizes``.
    """

    coalesced: tuple[str, ...] = ("pods",)

    def __init__(self, api: Api):
        super().__init__(api)
        self.sizes: dict[Hashable, int] = {}

    def keys_for_change(self, key: str, obj: dict, old: dict | None) -> list[Hashable]:
        if old is not None and key == self.watches[0] and _status_only(old, obj):
            return []  # the controller's own status write: nothing to do again
        keys = self.keys_for(key, obj)
        if old is not None and (controller_of(old) != controller_of(obj)
                                or old["metadata"].get("labels") != obj["metadata"].get("labels")):
            keys = keys + [k for k in self.keys_for(key, old) if k not in keys]
        return keys

    def _on_change(self, key: str):
        coalesce = key in self.coalesced

        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            # ``old`` is None for an added or a deleted object.
            for k in self.keys_for_change(key, obj, None if event_type == "DELETED" else old):
                delay = coalesce_delay(self.sizes.get(k, 0)) if coalesce else 0.0
                if delay:
                    self.queue.add_after(k, delay)
                else:
                    self.queue.add(k)
        return handler


_WRITE_STAMPS = ("resourceVersion", "managedFields")


def _status_only(old: dict, new: dict) -> bool:
    """Whether an update changed nothing but status (and the write's own stamps)."""
    if any(old.get(k) != new.get(k) for k in new.keys() | old.keys() if k not in ("status", "metadata")):
        return False
    om, nm = old["metadata"], new["metadata"]
    return all(om.get(k) == nm.get(k) for k in om.keys() | nm.keys() if k not in _WRITE_STAMPS)


def _label_selector(owner: dict) -> list[Requirement]:
    return label_selector_from_dict((owner.get("spec") or {}).get("selector"))


def selector_owners(api: Api, key: str, pod: dict,
                    selector_of: Callable[[dict], list[Requirement]] = _label_selector) -> list[tuple[str, str]]:
    """Work keys of the ``key`` objects in the pod's namespace whose selector matches it (an orphan's candidates)."""
    ns = pod["metadata"].get("namespace", "")
    labels = pod["metadata"].get("labels") or {}
    out = []
    for owner in api.store.list(key, ns):
        selector = selector_of(owner)
        if selector and matches_labels(selector, labels):
            out.append((ns, owner["metadata"]["name"]))
    return out
