"""Device taint eviction: delete the pods whose allocated devices carry a NoExecute taint they do not tolerate.

Port of pkg/controller/devicetainteviction/device_taint_eviction.go (v1.37,
``device-taint-eviction-controller``, on with ``DRADeviceTaints``):

* a claim's eviction time (``claimEvictionTime``) is the earliest ``timeAdded``
  of the NoExecute taints on its allocated devices, from the device in the
  newest generation of its pool's slices and from DeviceTaintRules (with
  ``DRADeviceTaintRules``); a taint is tolerated only by the allocation
  result's tolerations whose effect is ``NoExecute``; one without
  ``tolerationSeconds`` ignores the taint, the smallest of the others
  (negative counts as 0) delays it;
* a pod bound to a node is evicted at the earliest time of the allocated
  claims it uses and that are reserved for it (``podEvictionTime``); a pod
  that no longer needs evicting is cancelled with a ``Cancelling deletion``
  event if it was scheduled;
* eviction (``addConditionAndDeletePod``): a ``Marking for deletion`` event,
  the pod's ``DisruptionTarget`` condition (``DeletionByDeviceTaintManager``),
  then DELETE with the pod's uid as precondition; a pod is evicted once;
* a rule's ``EvictionInProgress`` status condition (``maybeUpdateRuleStatus``),
  at once when a rule is added or its spec changes and 10 s after one of its
  pods is scheduled or evicted, never more often than every 10 s per
  generation, written by server-side apply of the status.

The informers' event handlers are replaced by work keys: a claim, a pod, or
every allocated claim when a slice or a rule changes (upstream re-evaluates
all claims on a rule change too).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import features
from ..dra.allocator import rule_matches
from ..dra.claims import CLAIMS, SLICES, TAINT_RULES, ClaimNameError, claim_name, is_for_pod, is_reserved_for, \
    pod_claims
from ..errors import ApiError
from ..objects import clone, parse_time, rfc3339
from .base import Controller
from .workload import MANAGER

COMPONENT = "device-taint-eviction-controller"
RULE_STATUS_PERIOD = 10.0  # ruleStatusPeriod
EVICTION_IN_PROGRESS = "EvictionInProgress"


@dataclass
class Eviction:
    """evictionAndReason: when, and the rules among the taints that cause it (slice taints are not named)."""

    when: float
    rules: frozenset[str] = field(default_factory=frozenset)


def _results(claim: dict) -> list[dict]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or ())


def _claim_eviction(claim: dict, devices: dict, rules: list[dict]) -> Eviction | None:
    """claimEvictionTime for an allocated claim; ``devices`` maps (driver, pool, device) to the published device."""
    when: float | None = None
    causes: set[str] = set()
    for result in _results(claim):
        ident = (result.get("driver") or "", result.get("pool") or "", result.get("device") or "")
        taints = [(t, None) for t in (devices.get(ident) or {}).get("taints") or () if t.get("effect") == "NoExecute"]
        taints += [(r["spec"]["taint"], r["metadata"]["name"]) for r in rules if rule_matches(r, *ident)]
        for taint, rule in taints:
            limits, forever = [], False
            for tol in result.get("tolerations") or ():
                if tol.get("effect") == "NoExecute" and _tolerates(tol, taint):
                    if tol.get("tolerationSeconds") is None:
                        forever = True
                        break
                    limits.append(max(int(tol["tolerationSeconds"]), 0))
            if forever:
                continue
            at = (parse_time(taint.get("timeAdded")) or 0.0) + (min(limits) if limits else 0)
            when = at if when is None else min(when, at)
            if rule:
                causes.add(rule)
    return None if when is None else Eviction(when, frozenset(causes))


def _tolerates(tol: dict, taint: dict) -> bool:
    """resourceclaim.ToleratesTaint."""
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else f"{n} {many}"


class DeviceTaintEvictionController(Controller):
    name = COMPONENT
    watches = (CLAIMS, "pods", SLICES)

    def __init__(self, api):
        super().__init__(api)
        self.rules_enabled = features.enabled("DRADeviceTaintRules")
        if self.rules_enabled:
            self.watches = (*self.watches, TAINT_RULES)
        self._pending: dict[tuple[str, str, str], Eviction] = {}  # deletePodAt: (ns, name, uid) -> eviction
        self._evicted: set[str] = set()  # evictedPods: uids
        self._evicted_by_rule: dict[str, int] = {}  # taintRuleStats: rule uid -> pods evicted
        self._devices: dict | None = None

    # --- what changed -> work keys ------------------------------------------------------
    def _on_change(self, key: str):
        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            for k in self._keys(key, event_type, obj, old):
                self.queue.add(k)
        return handler

    def _keys(self, key: str, event_type: str, obj: dict, old: dict | None) -> list:
        meta = obj["metadata"]
        if key == SLICES:
            self._devices = None
            return [("all",)]
        if key == TAINT_RULES:
            if event_type == "DELETED":
                self._evicted_by_rule.pop(meta.get("uid", ""), None)
                return [("all",)]
            if old is not None and old.get("spec") == obj.get("spec"):
                return []  # status or metadata only
            return [("rule", meta["name"]), ("all",)]
        if key == CLAIMS:
            refs = list((obj.get("status") or {}).get("reservedFor") or ())
            refs += [r for r in ((old or {}).get("status") or {}).get("reservedFor") or () if r not in refs]
            return [("pod", meta.get("namespace", ""), r["name"]) for r in refs if r.get("resource") == "pods"]
        if old is not None and event_type != "DELETED":
            ospec, nspec = old.get("spec") or {}, obj.get("spec") or {}
            ost, nst = old.get("status") or {}, obj.get("status") or {}
            if ospec.get("nodeName") == nspec.get("nodeName") and \
                    ost.get("resourceClaimStatuses") == nst.get("resourceClaimStatuses"):
                return []
        return [("pod", meta.get("namespace", ""), meta["name"])]

    def initial_keys(self):
        keys = [("all",)]
        if self.rules_enabled:
            keys += [("rule", r["metadata"]["name"]) for r in self.api.store.list(TAINT_RULES)]
        return keys

    async def reconcile(self, work_key) -> float | None:
        kind = work_key[0]
        if kind == "all":
            for claim in self.api.store.list(CLAIMS):
                if _results(claim):
                    for ref in (claim.get("status") or {}).get("reservedFor") or ():
                        if ref.get("resource") == "pods":
                            self._sync_pod(claim["metadata"].get("namespace", ""), ref["name"])
            return None
        if kind == "pod":
            self._sync_pod(work_key[1], work_key[2])
            return None
        if kind == "evict":
            return self._maybe_delete(work_key[1], work_key[2], work_key[3])
        return self._rule_status(work_key[1])

    # --- the taints of the devices ------------------------------------------------------
    def _device_index(self) -> dict:
        """(driver, pool, device) -> device, from the slices of each pool's newest generation."""
        if self._devices is None:
            newest: dict[tuple[str, str], int] = {}
            slices = self.api.store.list(SLICES)
            for rs in slices:
                spec = rs.get("spec") or {}
                pool = (spec.get("driver") or "", (spec.get("pool") or {}).get("name") or "")
                newest[pool] = max(newest.get(pool, 0), int((spec.get("pool") or {}).get("generation") or 0))
            index = {}
            for rs in slices:
                spec = rs.get("spec") or {}
                pool = (spec.get("driver") or "", (spec.get("pool") or {}).get("name") or "")
                if int((spec.get("pool") or {}).get("generation") or 0) != newest[pool]:
                    continue
                for device in spec.get("devices") or ():
                    index[(*pool, device.get("name") or "")] = device
            self._devices = index
        return self._devices

    def _evicting_rules(self) -> list[dict]:
        if not self.rules_enabled:
            return []
        return [r for r in self.api.store.list(TAINT_RULES)
                if ((r.get("spec") or {}).get("taint") or {}).get("effect") == "NoExecute"]

    def _pod_eviction(self, pod: dict, rules: list[dict]) -> Eviction | None:
        """podEvictionTime: the earliest eviction of the allocated claims the pod uses and holds."""
        if not (pod.get("spec") or {}).get("nodeName"):
            return None
        namespace, out = pod["metadata"].get("namespace", ""), None
        for pod_claim in pod_claims(pod):
            try:
                name, must_own = claim_name(pod, pod_claim)
            except ClaimNameError:
                continue
            claim = self.api.store.get(CLAIMS, namespace, name) if name else None
            if claim is None or not _results(claim):
                continue
            if (must_own and is_for_pod(pod, claim) is not None) or not is_reserved_for(pod, claim):
                continue
            eviction = _claim_eviction(claim, self._device_index(), rules)
            if eviction is None:
                continue
            if out is None:
                out = eviction
            else:
                out = Eviction(min(out.when, eviction.when), out.rules | eviction.rules)
        return out

    # --- handlePod / evictPod / cancelEvict -------------------------------------------------
    def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self.api.store.get("pods", namespace, name)
        if pod is None:
            for ident in [i for i in self._pending if i[:2] == (namespace, name)]:
                self._pending.pop(ident)  # gone: nothing to say about it
            return
        ident = (namespace, name, pod["metadata"].get("uid", ""))
        if ident[2] in self._evicted:
            return
        eviction = self._pod_eviction(pod, self._evicting_rules())
        if eviction is None:
            if self._pending.pop(ident, None) is not None:
                self._event(ident, "Cancelling deletion")
            return
        self._pending[ident] = eviction
        self.queue.add_after(("evict", *ident), eviction.when - self.api.clock())
        for rule in eviction.rules:
            self.queue.add_after(("rule", rule), RULE_STATUS_PERIOD)

    def _maybe_delete(self, namespace: str, name: str, uid: str) -> float | None:
        ident = (namespace, name, uid)
        eviction = self._pending.get(ident)
        if eviction is None or uid in self._evicted:
            return None
        now = self.api.clock()
        if eviction.when > now:
            return eviction.when - now
        self._add_condition_and_delete(ident, now)
        self._pending.pop(ident, None)
        self._evicted.add(uid)
        for rule_name in eviction.rules:
            rule = self.api.store.get(TAINT_RULES, "", rule_name)
            if rule is not None:
                ruid = rule["metadata"].get("uid", "")
                self._evicted_by_rule[ruid] = self._evicted_by_rule.get(ruid, 0) + 1
                self.queue.add_after(("rule", rule_name), RULE_STATUS_PERIOD)
        return None

    def _add_condition_and_delete(self, ident: tuple[str, str, str], now: float) -> None:
        namespace, name, uid = ident
        pod = self.api.store.get("pods", namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid or pod["metadata"].get("deletionTimestamp"):
            return
        self._event(ident, "Marking for deletion")
        current = (pod.get("status") or {}).get("conditions") or []
        old = next((c for c in current if c.get("type") == "DisruptionTarget"), None)
        wanted = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                  "lastTransitionTime": rfc3339(now), "reason": "DeletionByDeviceTaintManager",
                  "message": "Device Taint manager: deleting due to NoExecute taint"}
        try:
            if old is None or any(old.get(k) != wanted[k] for k in ("status", "reason", "message")):
                if old is not None and old.get("status") == "True":
                    wanted["lastTransitionTime"] = old.get("lastTransitionTime")
                updated = clone(pod)
                updated["status"]["conditions"] = [c for c in current if c.get("type") != "DisruptionTarget"] + [
                    wanted]
                self.api.update("pods", updated, namespace, subresource="status", manager=MANAGER)
            self.api.delete("pods", name, namespace, preconditions={"uid": uid})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _event(self, ident: tuple[str, str, str], message: str) -> None:
        ref = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ident[1], "namespace": ident[0],
                                                              "uid": ident[2]}}
        self.api.record_event(ref, "Normal", "DeviceTaintManagerEviction", message, COMPONENT)

    # --- maybeUpdateRuleStatus -----------------------------------------------------------------
    def _rule_status(self, name: str) -> float | None:
        rule = self.api.store.get(TAINT_RULES, "", name) if self.rules_enabled else None
        if rule is None:
            return None
        meta, now = rule["metadata"], self.api.clock()
        generation = int(meta.get("generation") or 1)
        existing = next((c for c in (rule.get("status") or {}).get("conditions") or ()
                         if c.get("type") == EVICTION_IN_PROGRESS), None)
        if existing is not None and int(existing.get("observedGeneration") or 0) == generation:
            since = now - (parse_time(existing.get("lastTransitionTime")) or 0.0)
            if since < RULE_STATUS_PERIOD:
                return RULE_STATUS_PERIOD - since
        effect = ((rule.get("spec") or {}).get("taint") or {}).get("effect")
        evicted = self._evicted_by_rule.get(meta.get("uid", ""), 0)
        if effect == "NoExecute":
            pods, namespaces = self._pending_pods(name, self._evicting_rules())
            if pods:
                status, reason = "True", "PodsPendingEviction"
                message = (f"{_plural(pods, '1 pod needs', 'pods need')} to be evicted in "
                           f"{_plural(namespaces, '1 namespace', 'different namespaces')}.")
            else:
                status, reason, message = "False", "Completed" if evicted else "NotStarted", ""
        elif effect == "None":
            simulated = clone(rule)
            simulated["spec"]["taint"]["effect"] = "NoExecute"
            pods, namespaces = self._pending_pods(name, [simulated])
            published, allocated = self._selected_devices(rule)
            status, reason = "False", "NoEffect"
            message = (f"{_plural(published, '1 published device', 'published devices')} selected. "
                       f"{_plural(allocated, '1 allocated device', 'allocated devices')} selected. "
                       f"{_plural(pods, '1 pod', 'pods')} would be evicted in "
                       f"{_plural(namespaces, '1 namespace', 'different namespaces')} if the effect was NoExecute. "
                       "This information will not be updated again. Recreate the DeviceTaintRule to trigger an "
                       "update.")
        else:
            status, reason, message = "False", "OtherEffect", "Eviction only happens for the NoExecute effect."
        if evicted:
            message += (" " if message else "") + f"{_plural(evicted, '1 pod', 'pods')} evicted since starting the " \
                                                   "controller."
        wanted = {"type": EVICTION_IN_PROGRESS, "status": status, "observedGeneration": generation,
                  "reason": reason, "message": message}
        if existing is not None and all(existing.get(k, "") == v for k, v in wanted.items()):
            return None
        wanted["lastTransitionTime"] = rfc3339(now)
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                "metadata": {"name": name, "uid": meta.get("uid")}, "status": {"conditions": [wanted]}}
        self.api.patch(TAINT_RULES, name, body, "apply", subresource="status", manager=COMPONENT, force=True)
        return None

    def _pending_pods(self, rule_name: str, rules: list[dict]) -> tuple[int, int]:
        """countPendingPods: pods not being deleted whose eviction the rule causes, and their namespaces."""
        pods, namespaces = 0, set()
        for pod in self.api.store.list("pods"):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            eviction = self._pod_eviction(pod, rules)
            if eviction is not None and rule_name in eviction.rules:
                pods += 1
                namespaces.add(pod["metadata"].get("namespace", ""))
        return pods, len(namespaces)

    def _selected_devices(self, rule: dict) -> tuple[int, int]:
        """countTaintedDevices: published devices the rule picks, and allocated ones."""
        published = sum(1 for ident in self._device_index() if rule_matches(rule, *ident))
        allocated = sum(1 for claim in self.api.store.list(CLAIMS) for r in _results(claim)
                        if rule_matches(rule, r.get("driver") or "", r.get("pool") or "", r.get("device") or ""))
        return published, allocated
