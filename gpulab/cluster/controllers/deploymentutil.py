"""The pure arithmetic of Deployments: revisions, annotations, surge and unavailability, conditions.

Port of pkg/controller/deployment/util/deployment_util.go (v1.36): the
``deployment.kubernetes.io/*`` annotations, ``ResolveFenceposts``,
``NewRSNewReplicas``, ``GetProportion``, ``FindNewReplicaSet`` /
``FindOldReplicaSets`` (``EqualIgnoreHash``), ``DeploymentComplete`` /
``DeploymentProgressing`` / ``DeploymentTimedOut`` and the condition helpers,
plus ``calculateStatus`` from sync.go. Objects are API dicts; functions that
change one say so and mutate the caller's copy, as the Go helpers do.
"""
from __future__ import annotations

import functools

from ..objects import parse_time, rfc3339
from .workload import scaled_value

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
POD_TEMPLATE_HASH = "pod-template-hash"  # apps.DefaultDeploymentUniqueLabelKey
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000
_ANNOTATIONS_TO_SKIP = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                        DEPRECATED_ROLLBACK_TO}

# Condition reasons (deployment_util.go).
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
RS_UPDATED = "ReplicaSetUpdated"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
_MAX_INT32 = 2 ** 31 - 1


# --- small accessors --------------------------------------------------------------
def replicas(obj: dict) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def annotations(obj: dict) -> dict:
    return obj["metadata"].get("annotations") or {}


def status_count(rs: dict, field: str) -> int:
    return int((rs.get("status") or {}).get(field, 0))


def is_rolling_update(d: dict) -> bool:
    return (d["spec"].get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def has_progress_deadline(d: dict) -> bool:
    deadline = d["spec"].get("progressDeadlineSeconds")
    return deadline is not None and deadline != _MAX_INT32


def has_revision_history_limit(d: dict) -> bool:
    limit = d["spec"].get("revisionHistoryLimit")
    return limit is not None and limit != _MAX_INT32


# --- surge and unavailability -------------------------------------------------------
def resolve_fenceposts(max_surge, max_unavailable, desired: int) -> tuple[int, int]:
    surge = scaled_value(max_surge if max_surge is not None else 0, desired, True)
    unavailable = scaled_value(max_unavailable if max_unavailable is not None else 0, desired, False)
    if surge == 0 and unavailable == 0:
        # Validation forbids both zero, but rounding down may produce it: allow one unavailable.
        unavailable = 1
    return surge, unavailable


def _rolling(d: dict) -> dict:
    return (d["spec"].get("strategy") or {}).get("rollingUpdate") or {}


def max_unavailable(d: dict) -> int:
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    _, unavailable = resolve_fenceposts(_rolling(d).get("maxSurge"), _rolling(d).get("maxUnavailable"), replicas(d))
    return min(unavailable, replicas(d))


def max_surge(d: dict) -> int:
    if not is_rolling_update(d):
        return 0
    surge, _ = resolve_fenceposts(_rolling(d).get("maxSurge"), _rolling(d).get("maxUnavailable"), replicas(d))
    return surge


# --- replica set lists -------------------------------------------------------------------
def spec_replicas(rss: list[dict | None]) -> int:
    """GetReplicaCountForReplicaSets."""
    return sum(replicas(rs) for rs in rss if rs is not None)


def actual_replicas(rss: list[dict | None]) -> int:
    return sum(status_count(rs, "replicas") for rs in rss if rs is not None)


def ready_replicas(rss: list[dict | None]) -> int:
    return sum(status_count(rs, "readyReplicas") for rs in rss if rs is not None)


def available_replicas(rss: list[dict | None]) -> int:
    return sum(status_count(rs, "availableReplicas") for rs in rss if rs is not None)


def terminating_replicas(rss: list[dict | None]) -> int | None:
    """GetTerminatingReplicaCountForReplicaSets: None until every ReplicaSet reports it."""
    total = 0
    for rs in rss:
        if rs is None:
            continue
        value = (rs.get("status") or {}).get("terminatingReplicas")
        if value is None:
            return None
        total += int(value)
    return total


def active(rss: list[dict | None]) -> list[dict]:
    """FilterActiveReplicaSets: those with spec.replicas > 0."""
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def _created(rs: dict) -> tuple[float, str]:
    return parse_time(rs["metadata"].get("creationTimestamp")) or 0.0, rs["metadata"]["name"]


def by_creation(rss: list[dict]) -> list[dict]:
    """ReplicaSetsByCreationTimestamp: oldest first, then by name."""
    return sorted(rss, key=_created)


def by_size_newer(rss: list[dict]) -> list[dict]:
    """ReplicaSetsBySizeNewer: largest first; among equals the newer first."""
    def cmp(a: dict, b: dict) -> int:
        if replicas(a) != replicas(b):
            return -1 if replicas(a) > replicas(b) else 1
        return -1 if _created(a) > _created(b) else (1 if _created(a) < _created(b) else 0)
    return sorted(rss, key=functools.cmp_to_key(cmp))


def by_size_older(rss: list[dict]) -> list[dict]:
    """ReplicaSetsBySizeOlder: largest first; among equals the older first."""
    def cmp(a: dict, b: dict) -> int:
        if replicas(a) != replicas(b):
            return -1 if replicas(a) > replicas(b) else 1
        return -1 if _created(a) < _created(b) else (1 if _created(a) > _created(b) else 0)
    return sorted(rss, key=functools.cmp_to_key(cmp))


def _semantic(value):
    """apiequality.Semantic: empty and missing maps and lists compare equal."""
    if isinstance(value, dict):
        return {k: _semantic(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def equal_ignore_hash(t1: dict, t2: dict) -> bool:
    """EqualIgnoreHash: pod templates equal once the pod-template-hash label is removed from both."""
    def strip(t: dict) -> dict:
        meta = dict(t.get("metadata") or {})
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
        meta["labels"] = labels
        return _semantic({**t, "metadata": meta})
    return strip(t1) == strip(t2)


def find_new_replica_set(d: dict, rss: list[dict]) -> dict | None:
    for rs in by_creation(rss):
        if equal_ignore_hash(rs["spec"]["template"], d["spec"]["template"]):
            return rs
    return None


def find_old_replica_sets(d: dict, rss: list[dict]) -> list[dict]:
    """FindOldReplicaSets' second result: every ReplicaSet but the new one."""
    new = find_new_replica_set(d, rss)
    return [rs for rs in rss if new is None or rs["metadata"]["uid"] != new["metadata"]["uid"]]


# --- revisions and annotations ---------------------------------------------------------
def revision(obj: dict) -> int:
    try:
        return int(annotations(obj).get(REVISION, "0"))
    except ValueError:
        return 0


def max_revision(rss: list[dict]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def set_replicas_annotations(rs: dict, desired: int, maximum: int) -> bool:
    """SetReplicasAnnotations (mutates ``rs``)."""
    ann = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: dict, desired: int, maximum: int) -> bool:
    ann = annotations(rs)
    return ann.get(DESIRED_REPLICAS) != str(desired) or ann.get(MAX_REPLICAS) != str(maximum)


def set_new_replica_set_annotations(d: dict, rs: dict, new_revision: str, exists: bool) -> bool:
    """SetNewReplicaSetAnnotations (mutates ``rs``): copy the Deployment's annotations, bump the revision."""
    ann = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in annotations(d).items():
        if key in _ANNOTATIONS_TO_SKIP or ann.get(key) == value:
            continue
        ann[key] = value
        changed = True
    old_revision = ann.get(REVISION)
    try:
        old_int = int(old_revision) if old_revision is not None else 0
    except ValueError:
        return False
    new_int = int(new_revision)
    if old_int < new_int:
        ann[REVISION] = new_revision
        changed = True
    if old_revision is not None and old_int < new_int:
        history = ann.get(REVISION_HISTORY, "")
        if not history:
            ann[REVISION_HISTORY] = old_revision
        else:
            old = history.split(",")
            total = len(history) + len(old_revision) + 1
            start = 0
            while total > MAX_REV_HISTORY_LENGTH_IN_CHARS and start < len(old):
                total -= len(old[start]) + 1
                start += 1
            if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS:
                ann[REVISION_HISTORY] = ",".join(old[start:] + [old_revision])
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def desired_replicas_annotation(rs: dict) -> int | None:
    try:
        return int(annotations(rs)[DESIRED_REPLICAS])
    except (KeyError, ValueError):
        return None


# --- scaling ---------------------------------------------------------------------------
def new_rs_new_replicas(d: dict, all_rss: list[dict | None], new_rs: dict) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now."""
    if not is_rolling_update(d):
        return replicas(d)
    surge = scaled_value(_rolling(d).get("maxSurge"), replicas(d), True)
    current = spec_replicas(all_rss)
    max_total = replicas(d) + surge
    if current >= max_total:
        return replicas(new_rs)
    scale_up = min(max_total - current, replicas(d) - replicas(new_rs))
    return replicas(new_rs) + scale_up


def find_active_or_latest(new_rs: dict | None, old_rss: list[dict]) -> dict | None:
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=_created, reverse=True)
    live = active(newest_first + [new_rs])
    if not live:
        return new_rs if new_rs is not None else newest_first[0]
    return live[0] if len(live) == 1 else None


def is_saturated(d: dict, rs: dict | None) -> bool:
    if rs is None:
        return False
    desired = desired_replicas_annotation(rs)
    return desired is not None and replicas(rs) == replicas(d) == desired and \
        status_count(rs, "availableReplicas") == replicas(d)


def _go_round(x: float) -> int:
    """integer.RoundToInt32: math.Round, halves away from zero."""
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def proportion(rs: dict | None, d: dict, to_add: int, added: int) -> int:
    """GetProportion: this ReplicaSet's share of a proportional scale."""
    if rs is None or replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    if replicas(d) == 0:
        fraction = -replicas(rs)
    else:
        deployment_max = replicas(d) + max_surge(d)
        try:
            before = int(annotations(rs)[MAX_REPLICAS])
        except (KeyError, ValueError):
            before = 0
        if before == 0:
            before = status_count(d, "replicas") or deployment_max
        fraction = _go_round(replicas(rs) * deployment_max / before) - replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# --- conditions ----------------------------------------------------------------------------
def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> dict:
    stamp = rfc3339(now)
    return {"type": type_, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def get_condition(status: dict, type_: str) -> dict | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == type_), None)


def set_condition(status: dict, condition: dict) -> None:
    """SetDeploymentCondition: same status and reason is a no-op; the changed condition moves to the end."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] and \
            current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]] + \
        [condition]


def remove_condition(status: dict, type_: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def deployment_complete(d: dict, status: dict) -> bool:
    want = replicas(d)
    return status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want and \
        status.get("availableReplicas", 0) == want and \
        status.get("observedGeneration", 0) >= d["metadata"].get("generation", 0)


def deployment_progressing(d: dict, status: dict) -> bool:
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0) or new_old < old_old or \
        status.get("readyReplicas", 0) > old.get("readyReplicas", 0) or \
        status.get("availableReplicas", 0) > old.get("availableReplicas", 0)


def deployment_timed_out(d: dict, status: dict, now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    return since is not None and since + int(d["spec"]["progressDeadlineSeconds"]) < now


def calculate_status(all_rss: list[dict | None], new_rs: dict | None, d: dict, now: float) -> dict:
    """sync.go calculateStatus, serialized as the v1 API does (zero counts omitted)."""
    available = available_replicas(all_rss)
    total = spec_replicas(all_rss)
    old = d.get("status") or {}
    status: dict = {}
    counts = (("observedGeneration", d["metadata"].get("generation", 0)),
              ("replicas", actual_replicas(all_rss)), ("updatedReplicas", actual_replicas([new_rs])),
              ("readyReplicas", ready_replicas(all_rss)), ("availableReplicas", available),
              ("unavailableReplicas", max(total - available, 0)))
    for field, value in counts:
        if value:
            status[field] = value
    terminating = terminating_replicas(all_rss)
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        set_condition(status, new_condition("Available", "True", MINIMUM_REPLICAS_AVAILABLE,
                                            "Deployment has minimum availability.", now))
    else:
        set_condition(status, new_condition("Available", "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", now))
    return status
