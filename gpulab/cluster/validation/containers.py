"""Containers of a pod spec: names, images, ports, env, mounts, probes, resources, security context.

Ports of pkg/apis/core/validation/validation.go: validateContainers,
validateInitContainers, validateEphemeralContainers, validateContainerCommon,
validateContainerPorts, ValidateEnv, ValidateEnvFrom, ValidateVolumeMounts,
validateProbe/validateHandler, validatePullPolicy and ValidateSecurityContext,
in upstream order so multi-error messages list causes in the same order.
"""
from __future__ import annotations

import re

from ..errors import FieldError
from .field import duplicate, forbidden, invalid, non_negative, not_found, not_supported, required
from .formats import (inclusive_range_error, is_config_map_key, is_dns1123_label, is_http_header_name,
                      is_qualified_name, is_relaxed_env_var_name, is_valid_port_name, is_valid_port_num,
                      is_valid_user_or_group_id, name_is_dns_subdomain)
from .path import Path
from .resources import validate_resource_requirements

_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_TERMINATION_POLICIES = ["File", "FallbackToLogsOnError"]
_ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"]
_RESOURCE_FIELD_PATHS = ["limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                         "requests.ephemeral-storage", "requests.memory"]
_SUBSCRIPTED = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$")
# EphemeralContainerCommon fields outside allowedEphemeralContainerFields, in struct declaration order.
_EPHEMERAL_FORBIDDEN = ["ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules",
                        "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"]


def validate_port_num_or_name(port, path: Path) -> list[FieldError]:
    """ValidatePortNumOrName for an IntOrString."""
    if isinstance(port, int) and not isinstance(port, bool):
        return [invalid(path, port, m) for m in is_valid_port_num(port)]
    return [invalid(path, port, m) for m in is_valid_port_name(str(port))]


def validate_container_ports(ports: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports or []):
        p = path.index(i)
        name = port.get("name") or ""
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs.extend(invalid(p.child("name"), name, m) for m in msgs)
            elif name in names:
                errs.append(duplicate(p.child("name"), name))
            else:
                names.add(name)
        container_port = int(port.get("containerPort") or 0)
        if container_port == 0:
            errs.append(required(p.child("containerPort")))
        else:
            errs.extend(invalid(p.child("containerPort"), container_port, m) for m in is_valid_port_num(container_port))
        host_port = int(port.get("hostPort") or 0)
        if host_port:
            errs.extend(invalid(p.child("hostPort"), host_port, m) for m in is_valid_port_num(host_port))
        protocol = port.get("protocol") or ""
        if not protocol:
            errs.append(required(p.child("protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(not_supported(p.child("protocol"), protocol, _PROTOCOLS))
    return errs


def _validate_field_ref(ref: dict, allowed: list[str], path: Path) -> list[FieldError]:
    """validateObjectFieldSelector."""
    if not ref.get("apiVersion"):
        return [required(path.child("apiVersion"))]
    field_path = ref.get("fieldPath") or ""
    if not field_path:
        return [required(path.child("fieldPath"))]
    match = _SUBSCRIPTED.match(field_path)
    if match:
        key = match.group(2).lower() if match.group(1) == "metadata.annotations" else match.group(2)
        return [invalid(path, key, m) for m in is_qualified_name(key)]
    if field_path not in allowed:
        return [not_supported(path.child("fieldPath"), field_path, allowed)]
    return []


def _validate_resource_field_ref(ref: dict, path: Path, volume: bool) -> list[FieldError]:
    """validateContainerResourceFieldSelector (divisor checks left out)."""
    resource = ref.get("resource") or ""
    if volume and not ref.get("containerName"):
        return [required(path.child("containerName"))]
    if not resource:
        return [required(path.child("resource"))]
    if resource not in _RESOURCE_FIELD_PATHS and not resource.startswith(("requests.hugepages-", "limits.hugepages-")):
        return [not_supported(path.child("resource"), resource, _RESOURCE_FIELD_PATHS)]
    return []


def _validate_key_selector(sel: dict, path: Path) -> list[FieldError]:
    """validateConfigMapKeySelector / validateSecretKeySelector."""
    name, key = sel.get("name") or "", sel.get("key") or ""
    errs = [invalid(path.child("name"), name, m) for m in name_is_dns_subdomain(name)]
    if not key:
        errs.append(required(path.child("key")))
    else:
        errs.extend(invalid(path.child("key"), key, m) for m in is_config_map_key(key))
    return errs


def validate_env(env: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(env or []):
        p = path.index(i)
        name = var.get("name") or ""
        if not name:
            errs.append(required(p.child("name")))
        else:
            errs.extend(invalid(p.child("name"), name, m) for m in is_relaxed_env_var_name(name))
        errs.extend(_validate_value_from(var, p.child("valueFrom")))
    return errs


def _validate_value_from(var: dict, path: Path) -> list[FieldError]:
    source = var.get("valueFrom")
    if source is None:
        return []
    errs: list[FieldError] = []
    count = 0
    if source.get("fieldRef") is not None:
        count += 1
        errs.extend(_validate_field_ref(source["fieldRef"], _ENV_FIELD_PATHS, path.child("fieldRef")))
    if source.get("resourceFieldRef") is not None:
        count += 1
        errs.extend(_validate_resource_field_ref(source["resourceFieldRef"], path.child("resourceFieldRef"), False))
    if source.get("configMapKeyRef") is not None:
        count += 1
        errs.extend(_validate_key_selector(source["configMapKeyRef"], path.child("configMapKeyRef")))
    if source.get("secretKeyRef") is not None:
        count += 1
        errs.extend(_validate_key_selector(source["secretKeyRef"], path.child("secretKeyRef")))
    if count == 0:
        errs.append(invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                                      "`secretKeyRef`"))
    elif var.get("value"):
        errs.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def validate_env_from(sources: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, source in enumerate(sources or []):
        p = path.index(i)
        prefix = source.get("prefix") or ""
        if prefix:
            errs.extend(invalid(p.child("prefix"), prefix, m) for m in is_relaxed_env_var_name(prefix))
        count = 0
        for key in ("configMapRef", "secretRef"):
            if source.get(key) is not None:
                count += 1
                name = source[key].get("name") or ""
                if not name:
                    errs.append(required(p.child(key, "name")))
                else:
                    errs.extend(invalid(p.child(key, "name"), name, m) for m in name_is_dns_subdomain(name, True))
        if count == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _local_descending_path(target: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    if ".." in target.replace("\\", "/").split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))
    return errs


def validate_volume_mounts(mounts: list | None, volumes: dict, container: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_points: set[str] = set()
    devices = {d.get("name"): d.get("devicePath") for d in container.get("volumeDevices") or []}
    privileged = bool((container.get("securityContext") or {}).get("privileged"))
    for i, mount in enumerate(mounts or []):
        p = path.index(i)
        name, mount_path = mount.get("name") or "", mount.get("mountPath") or ""
        if not name:
            errs.append(required(p.child("name")))
        if name not in volumes:
            errs.append(not_found(p.child("name"), name))
        if not mount_path:
            errs.append(required(p.child("mountPath")))
        if mount_path in mount_points:
            errs.append(invalid(p.child("mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
        if name in devices:
            errs.append(invalid(p.child("name"), name, "must not already exist in volumeDevices"))
        if mount_path in devices.values():
            errs.append(invalid(p.child("mountPath"), mount_path, "must not already exist as a path in volumeDevices"))
        if mount.get("subPath"):
            errs.extend(_local_descending_path(mount["subPath"], path.child("subPath")))
        if mount.get("subPathExpr"):
            if mount.get("subPath"):
                errs.append(invalid(p.child("subPathExpr"), mount["subPathExpr"],
                                    "subPathExpr and subPath are mutually exclusive"))
            errs.extend(_local_descending_path(mount["subPathExpr"], path.child("subPathExpr")))
        propagation = mount.get("mountPropagation")
        if propagation is not None:
            supported = ["Bidirectional", "HostToContainer", "None"]
            if propagation not in supported:
                errs.append(not_supported(path.child("mountPropagation"), propagation, supported))
            if propagation == "Bidirectional" and not privileged:
                errs.append(forbidden(path.child("mountPropagation"),
                                      "Bidirectional mount propagation is available only to privileged containers"))
    return errs


def _validate_handler(handler: dict, grace: int | None, path: Path, kinds: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if action is None:
            continue
        if count:
            errs.append(forbidden(path.child(kind), "may not specify more than 1 handler type"))
            continue
        count += 1
        p = path.child(kind)
        if kind == "exec" and not action.get("command"):
            errs.append(required(p.child("command")))
        elif kind == "httpGet":
            if not action.get("path"):
                errs.append(required(p.child("path")))
            errs.extend(validate_port_num_or_name(action.get("port", 0), p.child("port")))
            if action.get("scheme", "") not in ("HTTP", "HTTPS"):
                errs.append(not_supported(p.child("scheme"), action.get("scheme", ""), ["HTTP", "HTTPS"]))
            for header in action.get("httpHeaders") or []:
                errs.extend(invalid(p.child("httpHeaders"), header.get("name", ""), m)
                            for m in is_http_header_name(header.get("name", "")))
        elif kind in ("tcpSocket", "grpc"):
            errs.extend(validate_port_num_or_name(action.get("port", 0), p.child("port")))
        elif kind == "sleep" and grace is not None:
            seconds = int(action.get("seconds") or 0)
            if seconds < 0 or seconds > grace:
                errs.append(invalid(p, seconds, "must be non-negative and less than terminationGracePeriodSeconds "
                                                f"({grace})"))
    if count == 0:
        errs.append(required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: dict | None, grace: int | None, path: Path, kind: str) -> list[FieldError]:
    if probe is None:
        return []
    errs = _validate_handler(probe, grace, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs.extend(non_negative(int(probe.get(field) or 0), path.child(field)))
    tgps = probe.get("terminationGracePeriodSeconds")
    if tgps is not None and tgps <= 0:
        errs.append(invalid(path.child("terminationGracePeriodSeconds"), tgps, "must be greater than 0"))
    if kind == "readiness" and tgps is not None:
        errs.append(invalid(path.child("terminationGracePeriodSeconds"), tgps, "must not be set for readinessProbes"))
    if kind in ("liveness", "startup") and int(probe.get("successThreshold") or 0) != 1:
        errs.append(invalid(path.child("successThreshold"), int(probe.get("successThreshold") or 0), "must be 1"))
    return errs


def _validate_lifecycle_and_probes(ctr: dict, grace: int | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    lifecycle = ctr.get("lifecycle")
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            if lifecycle.get(hook) is not None:
                errs.extend(_validate_handler(lifecycle[hook], grace, path.child("lifecycle", hook),
                                              ("exec", "httpGet", "tcpSocket", "sleep")))
    errs.extend(_validate_probe(ctr.get("livenessProbe"), grace, path.child("livenessProbe"), "liveness"))
    errs.extend(_validate_probe(ctr.get("readinessProbe"), grace, path.child("readinessProbe"), "readiness"))
    errs.extend(_validate_probe(ctr.get("startupProbe"), grace, path.child("startupProbe"), "startup"))
    return errs


def validate_security_context(sc: dict | None, path: Path, host_users: bool = True) -> list[FieldError]:
    """ValidateSecurityContext (privileged containers are allowed, as with --allow-privileged=true)."""
    if sc is None:
        return []
    errs: list[FieldError] = []
    for field in ("runAsUser", "runAsGroup"):
        if sc.get(field) is not None:
            errs.extend(invalid(path.child(field), sc[field], m) for m in is_valid_user_or_group_id(sc[field]))
    proc_mount = sc.get("procMount")
    if proc_mount is not None:
        if proc_mount not in ("Default", "Unmasked"):
            errs.append(not_supported(path.child("procMount"), proc_mount, ["Default", "Unmasked"]))
        if host_users and proc_mount == "Unmasked":
            errs.append(invalid(path.child("procMount"), proc_mount, "`hostUsers` must be false to use `Unmasked`"))
    errs.extend(validate_seccomp_profile(sc.get("seccompProfile"), path.child("seccompProfile")))
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged"):
            errs.append(invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        if "CAP_SYS_ADMIN" in ((sc.get("capabilities") or {}).get("add") or []):
            errs.append(invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                                          "CAP_SYS_ADMIN"))
    return errs


def validate_seccomp_profile(profile: dict | None, path: Path) -> list[FieldError]:
    if profile is None:
        return []
    kind = profile.get("type") or ""
    supported = ["Localhost", "RuntimeDefault", "Unconfined"]
    errs: list[FieldError] = []
    if not kind:
        errs.append(required(path.child("type"), "type is required when seccompProfile is set"))
    elif kind not in supported:
        errs.append(not_supported(path.child("type"), kind, supported))
    if kind == "Localhost":
        if profile.get("localhostProfile") is None:
            errs.append(required(path.child("localhostProfile"), "must be set when seccomp type is Localhost"))
        else:
            errs.extend(_local_descending_path(profile["localhostProfile"], path.child("localhostProfile")))
    elif profile.get("localhostProfile") is not None:
        errs.append(invalid(path.child("localhostProfile"), profile, "can only be set when seccomp type is Localhost"))
    return errs


def _validate_container_common(ctr: dict, volumes: dict, claims: set[str], path: Path,
                               host_users: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    name = ctr.get("name") or ""
    if not name:
        errs.append(required(path.child("name")))
    else:
        errs.extend(invalid(path.child("name"), name, m) for m in is_dns1123_label(name))
    if not ctr.get("image"):
        errs.append(required(path.child("image")))
    policy = ctr.get("terminationMessagePolicy") or ""
    if not policy:
        errs.append(required(path.child("terminationMessagePolicy")))
    elif policy not in _TERMINATION_POLICIES:
        errs.append(not_supported(path.child("terminationMessagePolicy"), policy, _TERMINATION_POLICIES))
    errs.extend(validate_container_ports(ctr.get("ports"), path.child("ports")))
    errs.extend(validate_env(ctr.get("env"), path.child("env")))
    errs.extend(validate_env_from(ctr.get("envFrom"), path.child("envFrom")))
    errs.extend(validate_volume_mounts(ctr.get("volumeMounts"), volumes, ctr, path.child("volumeMounts")))
    pull = ctr.get("imagePullPolicy") or ""
    if not pull:
        errs.append(required(path.child("imagePullPolicy")))
    elif pull not in _PULL_POLICIES:
        errs.append(not_supported(path.child("imagePullPolicy"), pull, _PULL_POLICIES))
    errs.extend(validate_resource_requirements(ctr.get("resources"), path.child("resources"), claims))
    errs.extend(validate_security_context(ctr.get("securityContext"), path.child("securityContext"), host_users))
    return errs


def _host_port_conflicts(containers: list, path: Path) -> list[FieldError]:
    """checkHostPortConflicts: protocol/hostIP/hostPort must be unique across the list."""
    seen: set[str] = set()
    errs: list[FieldError] = []
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(ctr.get("ports") or []):
            host_port = int(port.get("hostPort") or 0)
            if not host_port:
                continue
            key = f"{port.get('protocol', '')}/{port.get('hostIP', '')}/{host_port}"
            if key in seen:
                errs.append(duplicate(path.index(ci).child("ports").index(pi).child("hostPort"), key))
            seen.add(key)
    return errs


def validate_containers(containers: list | None, volumes: dict, claims: set[str], grace: int | None, path: Path,
                        host_users: bool = True) -> list[FieldError]:
    containers = containers or []
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        p = path.index(i)
        errs.extend(_validate_container_common(ctr, volumes, claims, p, host_users))
        if ctr.get("name", "") in names:
            errs.append(duplicate(p.child("name"), ctr.get("name", "")))
        else:
            names.add(ctr.get("name", ""))
        errs.extend(_validate_lifecycle_and_probes(ctr, grace, p))
        if ctr.get("restartPolicy") is not None:
            errs.append(forbidden(p.child("restartPolicy"), "may not be set for non-init containers"))
    return errs + _host_port_conflicts(containers, path)


def validate_init_containers(init: list | None, regular: list | None, volumes: dict, claims: set[str],
                             grace: int | None, path: Path, host_users: bool = True) -> list[FieldError]:
    errs: list[FieldError] = []
    names = {c.get("name", "") for c in regular or []}
    for i, ctr in enumerate(init or []):
        p = path.index(i)
        errs.extend(_validate_container_common(ctr, volumes, claims, p, host_users))
        restart_always = False
        if ctr.get("restartPolicy") is not None:
            if ctr["restartPolicy"] != "Always":
                errs.append(not_supported(p.child("restartPolicy"), ctr["restartPolicy"], ["Always"]))
            restart_always = ctr["restartPolicy"] == "Always"
        name = ctr.get("name", "")
        if name in names:
            errs.append(duplicate(p.child("name"), name))
        elif name:
            names.add(name)
        errs.extend(_host_port_conflicts([ctr], path))
        if restart_always:
            errs.extend(_validate_lifecycle_and_probes(ctr, grace, p))
        else:
            for field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(field) is not None:
                    errs.append(forbidden(p.child(field),
                                          "may not be set for init containers without restartPolicy=Always"))
    return errs


def validate_ephemeral_containers(ephemeral: list | None, regular: list | None, init: list | None, volumes: dict,
                                  claims: set[str], path: Path, host_users: bool = True) -> list[FieldError]:
    errs: list[FieldError] = []
    others = {c.get("name", "") for c in (regular or []) + (init or [])}
    names = set(others)
    for i, ctr in enumerate(ephemeral or []):
        p = path.index(i)
        errs.extend(_validate_container_common(ctr, volumes, claims, p, host_users))
        errs.extend(_image_whitespace(ctr, p))
        if ctr.get("name", "") in names:
            errs.append(duplicate(p.child("name"), ctr.get("name", "")))
        else:
            names.add(ctr.get("name", ""))
        target = ctr.get("targetContainerName") or ""
        if target and target not in others:
            errs.append(not_found(p.child("targetContainerName"), target))
        errs.extend(forbidden(p.child(f), "cannot be set for an Ephemeral Container")
                    for f in _EPHEMERAL_FORBIDDEN if ctr.get(f) not in (None, {}, []))
        for j, mount in enumerate(ctr.get("volumeMounts") or []):
            for f in ("subPath", "subPathExpr"):
                if mount.get(f):
                    errs.append(forbidden(p.child("volumeMounts").index(j).child(f),
                                          "cannot be set for an Ephemeral Container"))
    return errs


def _image_whitespace(ctr: dict, path: Path) -> list[FieldError]:
    image = ctr.get("image") or ""
    return [invalid(path.child("image"), image, "must not have leading or trailing whitespace")] \
        if image != image.strip() else []


def validate_containers_only_for_pod(containers: list | None, path: Path) -> list[FieldError]:
    """validateContainersOnlyForPod: checks a pod gets but a pod template does not."""
    return [e for i, c in enumerate(containers or []) for e in _image_whitespace(c, path.index(i))]


def validate_active_deadline(value, path: Path, lo: int = 1) -> list[FieldError]:
    if value is None or lo <= value <= 2 ** 31 - 1:
        return []
    return [invalid(path, value, inclusive_range_error(lo, 2 ** 31 - 1))]
