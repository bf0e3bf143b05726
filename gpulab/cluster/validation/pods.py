"""Pods and pod templates: create, update and status-update validation.

Ports of pkg/apis/core/validation/validation.go: ValidatePodSpec,
ValidatePodSpecificAnnotations, ValidatePodTemplateSpec, ValidatePodCreate,
ValidatePodUpdate (with its long ``pod updates may not change fields other
than ...`` message) and ValidatePodStatusUpdate. The options are those a
v1.37 kube-apiserver uses by default (relaxed env-var names and DNS searches,
``ResourceIsPod`` for pods).
"""
from __future__ import annotations

import ipaddress

from ..errors import FieldError
from .containers import (validate_active_deadline, validate_containers, validate_containers_only_for_pod,
                         validate_ephemeral_containers, validate_init_containers, validate_seccomp_profile)
from .field import duplicate, forbidden, immutable, invalid, not_supported, required
from .formats import (is_dns1123_label, is_dns1123_subdomain_with_underscore, is_qualified_name,
                      is_valid_user_or_group_id, name_is_dns_subdomain)
from .labels import validate_annotations, validate_labels
from .meta import METADATA, validate_object_meta, validate_object_meta_update
from .path import Path
from .resources import validate_resource_requirements
from .scheduling import validate_affinity, validate_only_added_tolerations, validate_tolerations, \
    validate_topology_spread
from .volumes import validate_volumes

SPEC = Path("spec")
_MIRROR = "kubernetes.io/config.mirror"
_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_SYSTEM_CONDITIONS = {"PodScheduled", "Ready", "Initialized"}
UPDATABLE_POD_SPEC_FIELDS = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
]


def _ip_errors(value: str, path: Path) -> list[FieldError]:
    """validation.IsValidIP."""
    try:
        ipaddress.ip_address(value)
        return []
    except ValueError:
        return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def validate_pod_specific_annotations(annotations: dict | None, spec: dict, path: Path) -> list[FieldError]:
    annotations = annotations or {}
    errs: list[FieldError] = []
    if _MIRROR in annotations and not spec.get("nodeName"):
        errs.append(invalid(path.key(_MIRROR), annotations[_MIRROR],
                            "must set spec.nodeName if mirror pod annotation is set"))
    if _DELETION_COST in annotations:
        try:
            cost = int(annotations[_DELETION_COST], 10)
            ok = -2 ** 31 <= cost < 2 ** 31 and annotations[_DELETION_COST].strip() == annotations[_DELETION_COST]
        except ValueError:
            ok = False
        if not ok:
            errs.append(invalid(path.key(_DELETION_COST), annotations[_DELETION_COST], "must be a 32bit integer"))
    return errs


def _pod_security_context(spec: dict, path: Path) -> list[FieldError]:
    sc = spec.get("securityContext")
    if sc is None:
        return []
    errs: list[FieldError] = []
    for field in ("fsGroup", "runAsUser", "runAsGroup"):
        if sc.get(field) is not None:
            errs.extend(invalid(path.child(field), sc[field], m) for m in is_valid_user_or_group_id(sc[field]))
    for i, gid in enumerate(sc.get("supplementalGroups") or []):
        errs.extend(invalid(path.child("supplementalGroups").index(i), gid, m) for m in is_valid_user_or_group_id(gid))
    if sc.get("shareProcessNamespace") and spec.get("hostPID"):
        errs.append(invalid(path.child("shareProcessNamespace"), True,
                            "ShareProcessNamespace and HostPID cannot both be enabled"))
    seen: set[str] = set()
    for i, sysctl in enumerate(sc.get("sysctls") or []):
        name = sysctl.get("name") or ""
        if not name:
            errs.append(required(path.child("sysctls").index(i).child("name")))
        elif name in seen:
            errs.append(duplicate(path.child("sysctls").index(i).child("name"), name))
        seen.add(name)
    policy = sc.get("fsGroupChangePolicy")
    if policy is not None and policy not in ("OnRootMismatch", "Always"):
        errs.append(not_supported(path.child("fsGroupChangePolicy"), policy, ["Always", "OnRootMismatch"]))
    errs.extend(validate_seccomp_profile(sc.get("seccompProfile"), path.child("seccompProfile")))
    policy = sc.get("supplementalGroupsPolicy")
    if policy is not None and policy not in ("Merge", "Strict"):
        errs.append(not_supported(path.child("supplementalGroupsPolicy"), policy, ["Merge", "Strict"]))
    return errs


def _dns_config(spec: dict, path: Path) -> list[FieldError]:
    config, policy = spec.get("dnsConfig"), spec.get("dnsPolicy")
    if policy == "None":
        if config is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [required(path.child("nameservers"),
                             "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if config is None:
        return []
    errs: list[FieldError] = []
    servers, searches = config.get("nameservers") or [], config.get("searches") or []
    if len(servers) > 3:
        errs.append(invalid(path.child("nameservers"), servers, "must not have more than 3 nameservers"))
    for i, server in enumerate(servers):
        errs.extend(_ip_errors(server, path.child("nameservers").index(i)))
    if len(searches) > 32:
        errs.append(invalid(path.child("searches"), searches, "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        errs.append(invalid(path.child("searches"), searches,
                            "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        if search != ".":  # AllowRelaxedDNSSearchValidation: underscores and a lone "." are accepted
            name = search.removesuffix(".")
            errs.extend(invalid(path.child("searches").index(i), name, m)
                        for m in is_dns1123_subdomain_with_underscore(name))
    for i, option in enumerate(config.get("options") or []):
        if not option.get("name"):
            errs.append(required(path.child("options").index(i), "must not be empty"))
    return errs


def _host_users(spec: dict, path: Path) -> list[FieldError]:
    if spec.get("hostUsers") is not False:
        return []
    errs = []
    if spec.get("hostNetwork"):
        errs.append(forbidden(path.child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
    if spec.get("hostPID"):
        errs.append(forbidden(path.child("HostPID"), "when `pod.Spec.HostUsers` is false"))
    if spec.get("hostIPC"):
        errs.append(forbidden(path.child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
    return errs


def _host_network_ports(spec: dict, path: Path, is_pod: bool) -> list[FieldError]:
    """validatePodHostNetworkDeps."""
    if not spec.get("hostNetwork"):
        return []
    errs = []
    for i, ctr in enumerate(spec.get("containers") or []):
        for j, port in enumerate(ctr.get("ports") or []):
            host, cont = int(port.get("hostPort") or 0), int(port.get("containerPort") or 0)
            if (is_pod or host != 0) and host != cont:
                errs.append(invalid(path.child("containers").index(i).child("ports").index(j).child("hostPort"),
                                    host, "must match `containerPort` when `hostNetwork` is true"))
    return errs


def _names(values: list | None, path: Path, fn) -> list[FieldError]:
    return [invalid(path, v, m) for v in values or [] for m in fn(v)]


def validate_pod_spec(spec: dict, path: Path, *, is_pod: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        errs.append(required(path.child("terminationGracePeriodSeconds")))
    host_users = spec.get("hostUsers") is not False
    volumes, vol_errs = validate_volumes(spec.get("volumes"), path.child("volumes"))
    errs.extend(vol_errs)
    claims = {c.get("name") for c in spec.get("resourceClaims") or [] if c.get("name")}
    errs.extend(validate_containers(spec.get("containers"), volumes, claims, grace, path.child("containers"),
                                    host_users))
    errs.extend(validate_init_containers(spec.get("initContainers"), spec.get("containers"), volumes, claims, grace,
                                         path.child("initContainers"), host_users))
    errs.extend(validate_ephemeral_containers(spec.get("ephemeralContainers"), spec.get("containers"),
                                              spec.get("initContainers"), volumes, claims,
                                              path.child("ephemeralContainers"), host_users))
    errs.extend(_host_network_ports(spec, path, is_pod))
    restart = spec.get("restartPolicy") or ""
    if not restart:
        errs.append(required(path.child("restartPolicy")))
    elif restart not in _RESTART_POLICIES:
        errs.append(not_supported(path.child("restartPolicy"), restart, _RESTART_POLICIES))
    dns = spec.get("dnsPolicy") or ""
    if not dns:
        errs.append(required(path.child("dnsPolicy")))
    elif dns not in _DNS_POLICIES:
        errs.append(not_supported(path.child("dnsPolicy"), dns, _DNS_POLICIES))
    errs.extend(validate_labels(spec.get("nodeSelector"), path.child("nodeSelector")))
    errs.extend(_pod_security_context(spec, path.child("securityContext")))
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        if set(ref) - {"name"}:
            errs.append(invalid(path.child("imagePullSecrets").index(i), ref, "only name may be set"))
    errs.extend(validate_affinity(spec.get("affinity"), path.child("affinity")))
    errs.extend(_dns_config(spec, path.child("dnsConfig")))
    for i, gate in enumerate(spec.get("readinessGates") or []):
        p = path.child("readinessGates").index(i).child("conditionType")
        condition = gate.get("conditionType", "")
        errs.extend(invalid(p, condition, m) for m in is_qualified_name(condition))
    seen_gates: set[str] = set()
    for i, gate in enumerate(spec.get("schedulingGates") or []):
        name = gate.get("name", "")
        errs.extend(invalid(path.child("schedulingGates").index(i), name, m) for m in is_qualified_name(name))
        if name in seen_gates:
            errs.append(duplicate(path.child("schedulingGates").index(i), name))
        seen_gates.add(name)
    errs.extend(validate_topology_spread(spec.get("topologySpreadConstraints"),
                                         path.child("topologySpreadConstraints")))
    errs.extend(_host_users(spec, path))
    for field, fn in (("serviceAccountName", name_is_dns_subdomain), ("nodeName", name_is_dns_subdomain)):
        if spec.get(field):
            errs.extend(invalid(path.child(field), spec[field], m) for m in fn(spec[field]))
    errs.extend(validate_active_deadline(spec.get("activeDeadlineSeconds"), path.child("activeDeadlineSeconds")))
    for field in ("hostname", "subdomain"):
        if spec.get(field):
            errs.extend(invalid(path.child(field), spec[field], m) for m in is_dns1123_label(spec[field]))
    if spec.get("tolerations"):
        errs.extend(validate_tolerations(spec["tolerations"], path.child("tolerations")))
    for i, alias in enumerate(spec.get("hostAliases") or []):
        p = path.child("hostAliases").index(i)
        errs.extend(_ip_errors(alias.get("ip", ""), p.child("ip")))
        for j, host in enumerate(alias.get("hostnames") or []):
            errs.extend(invalid(p.child("hostnames").index(j), host, m) for m in name_is_dns_subdomain(host))
    for field in ("priorityClassName", "runtimeClassName"):
        if spec.get(field):
            errs.extend(invalid(path.child(field), spec[field], m) for m in name_is_dns_subdomain(spec[field]))
    policy = spec.get("preemptionPolicy")
    if policy is not None:
        if not policy:
            errs.append(required(path.child("preemptionPolicy")))
        elif policy not in ("PreemptLowerPriority", "Never"):
            errs.append(not_supported(path.child("preemptionPolicy"), policy, ["PreemptLowerPriority", "Never"]))
    if spec.get("overhead") is not None:
        errs.extend(validate_resource_requirements({"limits": spec["overhead"]}, path.child("overhead")))
    if spec.get("os") is not None:
        name = spec["os"].get("name") or ""
        if not name:
            errs.append(required(path.child("os", "name")))
        elif name not in ("linux", "windows"):
            errs.append(not_supported(path.child("os", "name"), name, ["linux", "windows"]))
    return errs


def validate_pod_template_spec(template: dict | None, path: Path) -> list[FieldError]:
    """ValidatePodTemplateSpec (workload templates)."""
    template = template or {}
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    errs = validate_labels(meta.get("labels"), path.child("labels"))
    errs.extend(validate_annotations(meta.get("annotations"), path.child("annotations")))
    errs.extend(validate_pod_specific_annotations(meta.get("annotations"), spec, path.child("annotations")))
    errs.extend(validate_pod_spec(spec, path.child("spec"), is_pod=False))
    if spec.get("ephemeralContainers"):
        errs.append(forbidden(path.child("spec", "ephemeralContainers"),
                              "ephemeral containers not allowed in pod template"))
    return errs


def _metadata_and_spec(pod: dict) -> list[FieldError]:
    """validatePodMetadataAndSpec."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs.extend(validate_pod_specific_annotations(meta.get("annotations"), spec, METADATA.child("annotations")))
    errs.extend(validate_pod_spec(spec, SPEC, is_pod=True))
    if not spec.get("serviceAccountName"):
        for vi, vol in enumerate(spec.get("volumes") or []):
            for si, source in enumerate((vol.get("projected") or {}).get("sources") or []):
                if source.get("serviceAccountToken") is not None:
                    errs.append(forbidden(SPEC.child("volumes").index(vi).child("projected", "sources").index(si)
                                          .child("serviceAccountToken"),
                                          "must not be specified when serviceAccountName is not set"))
    errs.extend(validate_containers_only_for_pod(spec.get("containers"), SPEC.child("containers")))
    errs.extend(validate_containers_only_for_pod(spec.get("initContainers"), SPEC.child("initContainers")))
    return errs


def validate_pod_create(pod: dict) -> list[FieldError]:
    spec = pod.get("spec") or {}
    errs = _metadata_and_spec(pod)
    if spec.get("ephemeralContainers"):
        errs.append(forbidden(SPEC.child("ephemeralContainers"), "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(forbidden(SPEC.child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
    return errs


def _container_updates(new: list, old: list, path: Path) -> tuple[list[FieldError], bool]:
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, ctr in enumerate(new):
        image = ctr.get("image") or ""
        if not image:
            errs.append(required(path.index(i).child("image")))
        if image.strip() != image:
            errs.append(invalid(path.index(i).child("image"), image, "must not have leading or trailing whitespace"))
    return errs, False


def normalized(value):
    """Semantic.DeepEqual on the wire form: nil and empty collections compare equal."""
    if isinstance(value, dict):
        out = {k: normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def _go_field(json_name: str) -> str:
    return json_name[:1].upper() + json_name[1:]


def spec_diff(old: dict, new: dict, type_name: str = "core.PodSpec") -> str:
    """A cmp.Diff-shaped summary of the changed PodSpec fields.

    Upstream prints go-cmp's diff of the internal Go structs (which even mixes
    in non-breaking spaces to stop people parsing it); this keeps its shape --
    a ``core.PodSpec{`` block with ``-``/``+`` lines per changed field -- with
    values written as JSON.
    """
    import orjson

    keys = sorted(set(old) | set(new))
    lines = [f"  {type_name}{{"]
    same = 0
    for key in keys:
        if old.get(key) == new.get(key):
            same += 1
            continue
        if same:
            lines.append(f"  \t... // {same} identical fields")
            same = 0
        for sign, side in (("-", old), ("+", new)):
            value = "nil" if side.get(key) is None else orjson.dumps(side[key], option=orjson.OPT_SORT_KEYS).decode()
            lines.append(f"{sign} \t{_go_field(key)}: {value},")
    if same:
        lines.append(f"  \t... // {same} identical fields")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def validate_pod_update(new: dict, old: dict) -> list[FieldError]:
    nmeta, ometa = new.get("metadata") or {}, old.get("metadata") or {}
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    errs = validate_object_meta_update(nmeta, ometa)
    errs.extend(_metadata_and_spec(new))
    errs.extend(_annotation_updates(nmeta, ometa, nspec))
    for field in ("containers", "initContainers"):
        found, stop = _container_updates(nspec.get(field) or [], ospec.get(field) or [], SPEC.child(field))
        errs.extend(found)
        if stop:
            return errs
    new_ads, old_ads = nspec.get("activeDeadlineSeconds"), ospec.get("activeDeadlineSeconds")
    ads_path = SPEC.child("activeDeadlineSeconds")
    if new_ads is not None:
        if not 0 <= new_ads <= 2 ** 31 - 1:
            return errs + validate_active_deadline(new_ads, ads_path, lo=0)
        if old_ads is not None and old_ads < new_ads:
            return errs + [invalid(ads_path, new_ads, "must be less than or equal to previous value")]
    elif old_ads is not None:
        errs.append(invalid(ads_path, None, "must not update from a positive integer to nil value"))
    errs.extend(validate_only_added_tolerations(nspec.get("tolerations"), ospec.get("tolerations"),
                                                SPEC.child("tolerations")))
    old_gates = {g.get("name") for g in ospec.get("schedulingGates") or []}
    for i, gate in enumerate(nspec.get("schedulingGates") or []):
        if gate.get("name") not in old_gates:
            errs.append(forbidden(SPEC.child("schedulingGates").index(i).child("name"),
                                  f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'"))
    if normalized(nspec) == normalized(ospec):
        return errs
    munged = dict(nspec)
    for field in ("containers", "initContainers"):
        if field in munged:
            old_containers = ospec.get(field) or []
            munged[field] = [{**c, "image": old_containers[i].get("image")} for i, c in enumerate(munged[field])]
    for field in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(field, None)
        if field in ospec:
            munged[field] = ospec[field]
    old_grace, new_grace = ospec.get("terminationGracePeriodSeconds"), munged.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if ospec.get("schedulingGates") and normalized(munged.get("nodeSelector")) != normalized(ospec.get("nodeSelector")):
        old_sel, new_sel = ospec.get("nodeSelector") or {}, munged.get("nodeSelector") or {}
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            errs.append(invalid(SPEC.child("nodeSelector"), dict(sorted(new_sel.items())),
                                "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        munged.pop("nodeSelector", None)
        if "nodeSelector" in ospec:
            munged["nodeSelector"] = ospec["nodeSelector"]
    if normalized(munged) != normalized(ospec):
        errs.append(forbidden(SPEC, "pod updates may not change fields other than "
                                    + ",".join(UPDATABLE_POD_SPEC_FIELDS) + "\n"
                                    + spec_diff(normalized(ospec), normalized(munged))))
    return errs


def validate_pod_ephemeral_containers_update(new: dict, old: dict) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate: the pod as a whole, then no existing ephemeral container removed
    or changed (patches do not keep their order, so each is found by name)."""
    nmeta, ometa = new.get("metadata") or {}, old.get("metadata") or {}
    errs = validate_object_meta_update(nmeta, ometa)
    errs.extend(_metadata_and_spec(new))
    errs.extend(_annotation_updates(nmeta, ometa, new.get("spec") or {}))
    if _MIRROR in (ometa.get("annotations") or {}):
        return [forbidden("", "static pods do not support ephemeral containers")]
    path = SPEC.child("ephemeralContainers")
    by_name = {c.get("name"): c for c in (new.get("spec") or {}).get("ephemeralContainers") or []}
    for old_container in (old.get("spec") or {}).get("ephemeralContainers") or []:
        name = old_container.get("name")
        current = by_name.get(name)
        if current is None:
            errs.append(forbidden(path, f'existing ephemeral containers "{name}" may not be removed\n'))
        elif normalized(current) != normalized(old_container):
            errs.append(forbidden(path, f'existing ephemeral containers "{name}" may not be changed\n'
                                  + spec_diff(normalized(old_container), normalized(current),
                                              "core.EphemeralContainer")))
    return errs


def _annotation_updates(nmeta: dict, ometa: dict, spec: dict) -> list[FieldError]:
    """ValidatePodSpecificAnnotationUpdates."""
    new, old = nmeta.get("annotations") or {}, ometa.get("annotations") or {}
    path = METADATA.child("annotations")
    errs: list[FieldError] = []
    apparmor = "container.apparmor.security.beta.kubernetes.io/"
    for key in sorted(old):
        if new.get(key) == old[key]:
            continue
        if key.startswith(apparmor):
            errs.append(forbidden(path.key(key), "may not remove or update AppArmor annotations"))
        if key == _MIRROR:
            errs.append(forbidden(path.key(key), "may not remove or update mirror pod annotation"))
    for key in sorted(new):
        if key in old:
            continue
        if key.startswith(apparmor):
            errs.append(forbidden(path.key(key), "may not add AppArmor annotations"))
        if key == _MIRROR:
            errs.append(forbidden(path.key(key), "may not add mirror pod annotation"))
    return errs + validate_pod_specific_annotations(new, spec, path)


def _state_transitions(new: list, old: list, path: Path, restart: str) -> list[FieldError]:
    """ValidateContainerStateTransition: terminated containers stay terminated unless they may restart."""
    if restart == "Always":
        return []
    errs = []
    for i, status in enumerate(old or []):
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is None or (terminated.get("exitCode", 0) != 0 and restart == "OnFailure"):
            continue
        for cur in new or []:
            if cur.get("name") == status.get("name") and (cur.get("state") or {}).get("terminated") is None:
                errs.append(forbidden(path.index(i).child("state"), "may not be transitioned to non-terminated state"))
    return errs


def validate_pod_status_update(new: dict, old: dict) -> list[FieldError]:
    nmeta, ometa = new.get("metadata") or {}, old.get("metadata") or {}
    nstatus, ostatus = new.get("status") or {}, old.get("status") or {}
    errs = validate_object_meta_update(nmeta, ometa)
    errs.extend(_annotation_updates(nmeta, ometa, new.get("spec") or {}))
    for i, cond in enumerate(nstatus.get("conditions") or []):
        kind = cond.get("type", "")
        if kind not in _SYSTEM_CONDITIONS:
            errs.extend(invalid(METADATA.child("conditions").index(i).child("Type"), kind, m)
                        for m in is_qualified_name(kind))
    status = Path("status")
    if (new.get("spec") or {}).get("nodeName") != (old.get("spec") or {}).get("nodeName"):
        errs.append(forbidden(status.child("nodeName"), "may not be changed directly"))
    nominated = nstatus.get("nominatedNodeName") or ""
    if nominated and nominated != ostatus.get("nominatedNodeName"):
        errs.extend(invalid(status.child("nominatedNodeName"), nominated, m) for m in name_is_dns_subdomain(nominated))
    errs.extend(immutable(status.child("qosClass"), nstatus.get("qosClass", ""), ostatus.get("qosClass", "")))
    restart = (old.get("spec") or {}).get("restartPolicy", "")
    errs.extend(_state_transitions(nstatus.get("containerStatuses"), ostatus.get("containerStatuses"),
                                   status.child("containerStatuses"), restart))
    errs.extend(_state_transitions(nstatus.get("ephemeralContainerStatuses"),
                                   ostatus.get("ephemeralContainerStatuses"),
                                   status.child("ephemeralContainerStatuses"), "Never"))
    for i, ip in enumerate(nstatus.get("podIPs") or []):
        errs.extend(_ip_errors(ip.get("ip", ""), status.child("podIPs").index(i)))
    host_ips = nstatus.get("hostIPs") or []
    if host_ips and nstatus.get("hostIP", "") != host_ips[0].get("ip"):
        errs.append(invalid(status.child("hostIPs").index(0).child("ip"), host_ips[0].get("ip", ""),
                            "must be equal to `hostIP`"))
    return errs
