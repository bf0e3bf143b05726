"""apps/v1 workloads: Deployments, ReplicaSets, DaemonSets and ControllerRevisions.

Ports of pkg/apis/apps/validation/validation.go plus the selector
immutability the registry strategies add on update
(pkg/registry/apps/{deployment,replicaset,daemonset}/strategy.go).
"""
from __future__ import annotations

from ..errors import FieldError
from .field import forbidden, immutable, invalid, non_negative, not_supported, required
from .formats import is_valid_percent, name_is_dns_subdomain
from .labels import selector_is_empty, selector_matches, selector_parse_error, validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .pods import validate_pod_template_spec

SPEC = Path("spec")


def selector_json(selector: dict | None):
    """metav1.LabelSelector as encoding/json writes it: matchLabels (keys sorted) then matchExpressions."""
    if selector is None:
        return None
    out: dict = {}
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        out["matchExpressions"] = [
            {k: e[k] for k in ("key", "operator", "values") if e.get(k) not in (None, [])}
            for e in selector["matchExpressions"]]
    return out


def _labels_json(labels: dict | None):
    return None if labels is None else dict(sorted(labels.items()))


def _int_or_percent_value(value) -> int:
    """getIntOrPercentValue: the percentage for "25%", the integer otherwise (IntValue of a bad string is 0)."""
    if isinstance(value, str):
        if not is_valid_percent(value):
            return int(value[:-1])
        try:
            return int(value)
        except ValueError:
            return 0
    return int(value or 0)


def validate_positive_int_or_percent(value, path: Path) -> list[FieldError]:
    if isinstance(value, str):
        return [invalid(path, value, m) for m in is_valid_percent(value)]
    return non_negative(int(value or 0), path)


def is_not_more_than_100_percent(value, path: Path) -> list[FieldError]:
    if isinstance(value, str) and not is_valid_percent(value) and int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def _go_strategy(strategy: dict, rolling_fields: tuple[str, str]) -> dict:
    """An internal *DeploymentStrategy / DaemonSetUpdateStrategy as encoding/json writes it (no json tags)."""
    rolling = strategy.get("rollingUpdate")
    return {"Type": strategy.get("type", ""),
            "RollingUpdate": None if rolling is None else {
                rolling_fields[0]: rolling.get("maxUnavailable", 0), rolling_fields[1]: rolling.get("maxSurge", 0)}}


def validate_pod_template_for_replicaset(template: dict | None, selector: dict, path: Path,
                                         kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (also used for Deployments)."""
    if template is None:
        return [required(path)]
    labels = (template.get("metadata") or {}).get("labels")
    errs: list[FieldError] = []
    if not selector_is_empty(selector) and not selector_matches(selector, labels):
        errs.append(invalid(path.child("metadata", "labels"), _labels_json(labels) or {},
                            "`selector` does not match template `labels`"))
    errs.extend(validate_pod_template_spec(template, path))
    spec = template.get("spec") or {}
    if spec.get("restartPolicy", "") != "Always":
        errs.append(not_supported(path.child("spec", "restartPolicy"), spec.get("restartPolicy", ""), ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(path.child("spec", "activeDeadlineSeconds"),
                              f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _selector_and_template(spec: dict, kind: str, empty_msg_kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    selector = spec.get("selector")
    if selector is None:
        errs.append(required(SPEC.child("selector")))
    else:
        errs.extend(validate_label_selector(selector, SPEC.child("selector")))
        if selector_is_empty(selector):
            errs.append(invalid(SPEC.child("selector"), selector_json(selector),
                                f"empty selector is invalid for {empty_msg_kind}"))
    if selector_parse_error(selector):
        errs.append(invalid(SPEC.child("selector"), selector_json(selector), "invalid label selector"))
    else:
        errs.extend(validate_pod_template_for_replicaset(spec.get("template"), selector or {},
                                                         SPEC.child("template"), kind))
    return errs


def _validate_deployment_strategy(strategy: dict, path: Path) -> list[FieldError]:
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [forbidden(path.child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        if rolling is None:
            return [required(path.child("rollingUpdate"), "this should be defaulted and never be nil")]
        p = path.child("rollingUpdate")
        unavailable, surge = rolling.get("maxUnavailable", 0), rolling.get("maxSurge", 0)
        errs = validate_positive_int_or_percent(unavailable, p.child("maxUnavailable"))
        errs.extend(validate_positive_int_or_percent(surge, p.child("maxSurge")))
        if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
            errs.append(invalid(p.child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
        return errs + is_not_more_than_100_percent(unavailable, p.child("maxUnavailable"))
    return [not_supported(path, _go_strategy(strategy, ("MaxUnavailable", "MaxSurge")), ["Recreate", "RollingUpdate"])]


def _deployment_spec(spec: dict) -> list[FieldError]:
    """ValidateDeploymentSpec."""
    errs = non_negative(int(spec.get("replicas") or 0), SPEC.child("replicas"))
    errs.extend(_selector_and_template(spec, "ReplicaSet", "deployment"))
    errs.extend(_validate_deployment_strategy(spec.get("strategy") or {}, SPEC.child("strategy")))
    min_ready = int(spec.get("minReadySeconds") or 0)
    errs.extend(non_negative(min_ready, SPEC.child("minReadySeconds")))
    if spec.get("revisionHistoryLimit") is not None:
        errs.extend(non_negative(spec["revisionHistoryLimit"], SPEC.child("revisionHistoryLimit")))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None:
        errs.extend(non_negative(deadline, SPEC.child("progressDeadlineSeconds")))
        if deadline <= min_ready:
            errs.append(invalid(SPEC.child("progressDeadlineSeconds"), deadline,
                                "must be greater than minReadySeconds"))
    return errs


def validate_deployment(dep: dict) -> list[FieldError]:
    errs = validate_object_meta(dep.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _deployment_spec(dep.get("spec") or {})


def _selector_immutable(new: dict, old: dict) -> list[FieldError]:
    new_sel, old_sel = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    return immutable(SPEC.child("selector"), selector_json(new_sel), selector_json(old_sel))


def validate_deployment_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateDeploymentUpdate plus the strategy's selector immutability; the name is not re-checked."""
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _deployment_spec(new.get("spec") or {}) + _selector_immutable(new, old)


def _replicaset_spec(spec: dict) -> list[FieldError]:
    errs = non_negative(int(spec.get("replicas") or 0), SPEC.child("replicas"))
    errs.extend(non_negative(int(spec.get("minReadySeconds") or 0), SPEC.child("minReadySeconds")))
    # "deployment" is what upstream says for ReplicaSets too.
    return errs + _selector_and_template(spec, "ReplicaSet", "deployment")


def validate_replicaset(rs: dict) -> list[FieldError]:
    errs = validate_object_meta(rs.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _replicaset_spec(rs.get("spec") or {})


def validate_replicaset_update(new: dict, old: dict) -> list[FieldError]:
    """The strategy runs ValidateReplicaSet and ValidateReplicaSetUpdate, so spec errors come twice."""
    errs = validate_replicaset(new)
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    return errs + _replicaset_spec(new.get("spec") or {}) + _selector_immutable(new, old)


def _validate_daemonset_strategy(strategy: dict, path: Path) -> list[FieldError]:
    kind = strategy.get("type", "")
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [required(path.child("rollingUpdate"))]
        p = path.child("rollingUpdate")
        unavailable, surge = rolling.get("maxUnavailable", 0), rolling.get("maxSurge", 0)
        errs = validate_positive_int_or_percent(unavailable, p.child("maxUnavailable"))
        errs.extend(validate_positive_int_or_percent(surge, p.child("maxSurge")))
        errs.extend(is_not_more_than_100_percent(unavailable, p.child("maxUnavailable")))
        errs.extend(is_not_more_than_100_percent(surge, p.child("maxSurge")))
        has_unavailable, has_surge = _int_or_percent_value(unavailable) != 0, _int_or_percent_value(surge) != 0
        if has_unavailable and has_surge:
            errs.append(invalid(p.child("maxSurge"), surge, "may not be set when maxUnavailable is non-zero"))
        elif not has_unavailable and not has_surge:
            errs.append(required(p.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
        return errs
    return [not_supported(path, _go_strategy(strategy, ("MaxUnavailable", "MaxSurge")), ["RollingUpdate", "OnDelete"])]


def _daemonset_spec(spec: dict) -> list[FieldError]:
    """ValidateDaemonSetSpec: a nil selector selects nothing, so it only fails the template match."""
    selector = spec.get("selector")
    template = spec.get("template") or {}
    errs = validate_label_selector(selector, SPEC.child("selector"))
    labels = (template.get("metadata") or {}).get("labels")
    if not selector_parse_error(selector) and not selector_matches(selector, labels):
        errs.append(invalid(SPEC.child("template", "metadata", "labels"), _labels_json(labels),
                            "`selector` does not match template `labels`"))
    if selector is not None and selector_is_empty(selector):
        errs.append(invalid(SPEC.child("selector"), selector_json(selector), "empty selector is invalid for daemonset"))
    errs.extend(validate_pod_template_spec(template, SPEC.child("template")))
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(not_supported(SPEC.child("template", "spec", "restartPolicy"), tspec.get("restartPolicy", ""),
                                  ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(SPEC.child("template", "spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in DaemonSet is not Supported"))
    errs.extend(non_negative(int(spec.get("minReadySeconds") or 0), SPEC.child("minReadySeconds")))
    errs.extend(_validate_daemonset_strategy(spec.get("updateStrategy") or {}, SPEC.child("updateStrategy")))
    if spec.get("revisionHistoryLimit") is not None:
        errs.extend(non_negative(spec["revisionHistoryLimit"], SPEC.child("revisionHistoryLimit")))
    return errs


def validate_daemonset(ds: dict) -> list[FieldError]:
    errs = validate_object_meta(ds.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _daemonset_spec(ds.get("spec") or {})


def validate_daemonset_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateDaemonSet + ValidateDaemonSetUpdate + selector immutability (daemonset strategy).

    The templateGeneration rules of ValidateDaemonSetSpecUpdate are left out: the
    strategy's PrepareForUpdate always sets that value itself, so they cannot fail.
    """
    errs = validate_daemonset(new)
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    return errs + _daemonset_spec(new.get("spec") or {}) + _selector_immutable(new, old)


def _status_counts(status: dict, path: Path, fields: tuple[str, ...]) -> list[FieldError]:
    return [e for f in fields for e in non_negative(int(status.get(f) or 0), path.child(f))]


def _collision_count(new: dict, old: dict) -> list[FieldError]:
    """IsDecremented(collisionCount)."""
    new_cc, old_cc = (new.get("status") or {}).get("collisionCount"), (old.get("status") or {}).get("collisionCount")
    if old_cc is not None and (new_cc is None or new_cc < old_cc):
        return [invalid(Path("status").child("collisionCount"), new_cc or 0, "cannot be decremented")]
    return []


def validate_workload_status_update(kind: str, new: dict, old: dict) -> list[FieldError]:
    """Validate{Deployment,ReplicaSet,DaemonSet}StatusUpdate."""
    status, path = new.get("status") or {}, Path("status")
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if kind == "DaemonSet":
        errs.extend(_status_counts(status, path, ("currentNumberScheduled", "numberMisscheduled",
                                                  "desiredNumberScheduled", "numberReady", "observedGeneration",
                                                  "updatedNumberScheduled", "numberAvailable", "numberUnavailable")))
        if status.get("collisionCount") is not None:
            errs.extend(non_negative(status["collisionCount"], path.child("collisionCount")))
        return errs + _collision_count(new, old)
    fields = (("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
               "unavailableReplicas") if kind == "Deployment"
              else ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"))
    errs.extend(_status_counts(status, path, fields))
    if kind == "Deployment" and status.get("collisionCount") is not None:
        errs.extend(non_negative(status["collisionCount"], path.child("collisionCount")))
    replicas = int(status.get("replicas") or 0)
    msg = "cannot be greater than status.replicas"
    bounded = ("updatedReplicas", "readyReplicas", "availableReplicas") if kind == "Deployment" \
        else ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    errs.extend(invalid(path.child(f), int(status.get(f) or 0), msg) for f in bounded
                if int(status.get(f) or 0) > replicas)
    if int(status.get("availableReplicas") or 0) > int(status.get("readyReplicas") or 0):
        errs.append(invalid(path.child("availableReplicas"), int(status.get("availableReplicas") or 0),
                            "cannot be greater than readyReplicas"))
    return errs + (_collision_count(new, old) if kind == "Deployment" else [])


def validate_controller_revision(rev: dict) -> list[FieldError]:
    errs = validate_object_meta(rev.get("metadata") or {}, True, name_is_dns_subdomain)
    if rev.get("data") is None:
        errs.append(required(Path("data"), "data is mandatory"))
    return errs + non_negative(int(rev.get("revision") or 0), Path("revision"))


def validate_controller_revision_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(validate_controller_revision(new))
    return errs + immutable(Path("data"), new.get("data"), old.get("data"))
