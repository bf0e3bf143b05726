"""What the kubelet prepares before starting a container: its environment, its command line and its files.

* Environment: pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (``envFrom``, then ``env`` with
  ``$(VAR)`` references and ``valueFrom`` sources, then the service links of pkg/kubelet/envvars), merged
  by the runtime over the image's variables (PATH, HOSTNAME first; HOME last), after the variables the
  device plugin's Allocate returned. A missing ConfigMap, Secret or key is ``CreateContainerConfigError``.
* Command line: ``command`` replaces the image ENTRYPOINT (and drops CMD), ``args`` replace CMD, both with
  ``$(VAR)`` expanded (third_party/forked/golang/expansion).
* Files: the kubelet-managed /etc/hosts (pkg/kubelet/kubelet_pods.go managedHostsFileContent) and
  /etc/resolv.conf (ClusterFirst), the image's /etc/os-release, the device nodes and mounts of the device
  plugin's answer (the runtime's OCI spec ``linux.devices`` and ``mounts``: empty files, programs
  executable, empty directories for mounts the answer marks ``directory``), and the pod's volumes (configMap,
  secret, downwardAPI, projected service account token; other volume types are empty directories). A missing
  ConfigMap or Secret fails the mount like the volume manager (``MountVolume.SetUp failed for volume ...``).
"""
from __future__ import annotations

import base64
import json
import math
import posixpath

from ...contract import ContainerAllocation
from ..api import Api
from ..auth.tokens import API_AUDIENCES, Binding
from ..quantity import parse_quantity
from .images import Image
from .shell import FileSystem
from .shell.octets import to_text

CLUSTER_DOMAIN = "cluster.local"
CLUSTER_DNS = "10.96.0.10"   # kind's kube-dns Service
_BASE_DIRS = ("/bin", "/dev", "/etc", "/home", "/proc", "/root", "/run", "/sbin", "/sys", "/tmp", "/usr/bin",
              "/usr/local/bin", "/var/log", "/var/run")
# Every container's /dev: the OCI runtime spec's default devices (config-linux.md "Default Devices", which runc
# creates), the mounts containerd's default spec puts under /dev (oci/mounts.go: a devpts at /dev/pts, tmpfs at
# /dev/shm, an mqueue at /dev/mqueue). The /dev/fd, /dev/stdin... symlinks are not modelled.
_DEFAULT_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")
_DEV_MOUNTS = ("/dev/pts", "/dev/shm", "/dev/mqueue")
TERMINATION_MESSAGE_PATH = "/dev/termination-log"   # the API's default terminationMessagePath


class ContainerConfigError(Exception):
    """The container cannot be configured (reason CreateContainerConfigError); ``str()`` is the message."""


class MountError(Exception):
    """A volume cannot be set up; ``str()`` is the FailedMount event message."""


class ClaimNotBound(MountError):
    """A claim volume whose claim is not bound yet: the volume manager waits for it silently (WaitForAttachAndMount)
    and reports FailedMount only when that wait times out; ``str()`` is the message it reports then."""


# --- $(VAR) expansion -------------------------------------------------------
def expand(text: str, values: dict[str, str]) -> str:
    """expansion.Expand: ``$(NAME)`` -> value (left as is when unknown), ``$$`` -> ``$``."""
    out, checkpoint, i = [], 0, 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            out.append(text[checkpoint:i])
            rest = text[i + 1:]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")")
                if close > 0:
                    name = rest[1:close]
                    out.append(values[name] if name in values else f"$({name})")
                    advance = close + 1
                else:
                    out.append("$(")
                    advance = 1
            else:
                out.append("$" + rest[0])
                advance = 1
            i += advance
            checkpoint = i + 1
        i += 1
    return "".join(out) + text[checkpoint:]


# --- environment ------------------------------------------------------------
def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def service_env(services: list[dict]) -> dict[str, str]:
    """envvars.FromServices for the services with a cluster IP."""
    out: dict[str, str] = {}
    for svc in services:
        spec = svc.get("spec") or {}
        ip, ports = spec.get("clusterIP"), spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        prefix = _env_name(svc["metadata"]["name"])
        out[f"{prefix}_SERVICE_HOST"] = ip
        out[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for p in ports:
            if p.get("name"):
                out[f"{prefix}_SERVICE_PORT_{_env_name(p['name'])}"] = str(p["port"])
        for i, p in enumerate(ports):
            proto = (p.get("protocol") or "TCP")
            host_port = f"[{ip}]:{p['port']}" if ":" in ip else f"{ip}:{p['port']}"
            if i == 0:
                out[f"{prefix}_PORT"] = f"{proto.lower()}://{host_port}"
            base = f"{prefix}_PORT_{p['port']}_{proto.upper()}"
            out[base] = f"{proto.lower()}://{host_port}"
            out[f"{base}_PROTO"] = proto.lower()
            out[f"{base}_PORT"] = str(p["port"])
            out[f"{base}_ADDR"] = ip
    return out


def _config_data(api: Api, kind: str, namespace: str, name: str, optional: bool) -> dict[str, str] | None:
    obj = api.try_get("configmaps" if kind == "ConfigMap" else "secrets", name, namespace)
    if obj is None:
        if optional:
            return None
        raise ContainerConfigError(f'{"configmap" if kind == "ConfigMap" else "secret"} "{name}" not found')
    if kind == "ConfigMap":
        return {**(obj.get("data") or {}),
                **{k: to_text(base64.b64decode(v)) for k, v in (obj.get("binaryData") or {}).items()}}
    return {k: to_text(base64.b64decode(v)) for k, v in (obj.get("data") or {}).items()}


def field_value(pod: dict, path: str, host_ip: str, pod_ip: str) -> str:
    """A downward API fieldRef (pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    if path.startswith("metadata.labels['") or path.startswith("metadata.annotations['"):
        which, key = path.split("['", 1)
        return ((meta.get(which.split(".")[1]) or {}).get(key.rstrip("']"), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{json.dumps(v)[1:-1]}"' for k, v in sorted(items.items()))
    return {
        "metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", ""), "metadata.uid": meta["uid"],
        "spec.nodeName": spec.get("nodeName", ""), "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": host_ip, "status.hostIPs": host_ip, "status.podIP": pod_ip, "status.podIPs": pod_ip,
    }.get(path, "")


def resource_value(pod: dict, container: dict | None, ref: dict, allocatable: dict) -> str:
    """A resourceFieldRef: the limit or request divided by ``divisor``, rounded up (node allocatable
    when the container sets no limit)."""
    if ref.get("containerName"):
        container = next((c for c in pod["spec"].get("containers", []) if c["name"] == ref["containerName"]),
                         container)
    kind, _, name = ref.get("resource", "").partition(".")
    res = (container or {}).get("resources") or {}
    raw = (res.get(kind) or {}).get(name)
    if raw is None and kind == "limits":
        raw = allocatable.get(name)
    if raw is None:
        return "0"
    divisor = parse_quantity(str(ref.get("divisor") or "1")) or 1
    return str(math.ceil(parse_quantity(str(raw)) / divisor))


def container_env(api: Api, pod: dict, container: dict, image: Image, device_env: dict[str, str], *,
                  host_ip: str, pod_ip: str, allocatable: dict) -> list[tuple[str, str]]:
    """The final environment, in the order ``env`` prints it."""
    ns = pod["metadata"].get("namespace", "default")
    spec = pod.get("spec") or {}
    services = [api.try_get("services", "kubernetes", "default")]
    if spec.get("enableServiceLinks", True):
        services += [s for s in api.list("services", ns) if not (ns == "default" and s["metadata"]["name"] == "kubernetes")]
    svc_env = service_env([s for s in services if s is not None])
    declared: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        kind, ref = ("ConfigMap", source["configMapRef"]) if source.get("configMapRef") else \
            ("Secret", source.get("secretRef") or {})
        data = _config_data(api, kind, ns, ref.get("name", ""), bool(ref.get("optional")))
        for key, value in (data or {}).items():
            declared[(source.get("prefix") or "") + key] = value
    for var in container.get("env") or ():
        name = var["name"]
        if "valueFrom" not in var:
            declared[name] = expand(var.get("value", ""), {**svc_env, **declared})
            continue
        src = var["valueFrom"]
        if src.get("fieldRef"):
            declared[name] = field_value(pod, src["fieldRef"].get("fieldPath", ""), host_ip, pod_ip)
        elif src.get("resourceFieldRef"):
            declared[name] = resource_value(pod, container, src["resourceFieldRef"], allocatable)
        else:
            kind, ref = ("ConfigMap", src["configMapKeyRef"]) if src.get("configMapKeyRef") else \
                ("Secret", src.get("secretKeyRef") or {})
            data = _config_data(api, kind, ns, ref.get("name", ""), bool(ref.get("optional")))
            if data is None:
                continue
            if ref.get("key") not in data:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f"couldn't find key {ref.get('key')} in {kind} {ns}/{ref.get('name')}")
            declared[name] = data[ref["key"]]
    env: dict[str, str] = {}
    image_env = dict(image.env)
    env["PATH"] = image_env.pop("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    env["HOSTNAME"] = pod_hostname(pod)
    env.update(image_env)
    env.update(device_env)
    env.update(declared)
    for key, value in sorted(svc_env.items()):
        if key not in declared:
            env.setdefault(key, value)
    env.setdefault("HOME", "/root")
    return list(env.items())


def container_argv(container: dict, image: Image, env: dict[str, str]) -> list[str]:
    command = [expand(a, env) for a in container.get("command") or ()]
    args = [expand(a, env) for a in container.get("args") or ()]
    if command:
        return command + args
    return list(image.entrypoint) + (args if container.get("args") else list(image.cmd))


def pod_hostname(pod: dict) -> str:
    return (pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"]


# --- files ------------------------------------------------------------------
def hosts_file(pod: dict, pod_ip: str) -> str:
    spec = pod.get("spec") or {}
    lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix",
             "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
    name = pod_hostname(pod)
    if spec.get("subdomain"):
        fqdn = f"{name}.{spec['subdomain']}.{pod['metadata'].get('namespace', 'default')}.svc.{CLUSTER_DOMAIN}"
        lines.append(f"{pod_ip}\t{fqdn}\t{name}")
    else:
        lines.append(f"{pod_ip}\t{name}")
    aliases = spec.get("hostAliases") or []
    if aliases:
        lines.append("")
        lines.append("# Entries added by HostAliases.")
        for alias in aliases:
            lines.append(alias.get("ip", "") + "\t" + "\t".join(alias.get("hostnames") or ()))
    return "\n".join(lines) + "\n"


def resolv_conf(pod: dict) -> str:
    ns = pod["metadata"].get("namespace", "default")
    return (f"search {ns}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} {CLUSTER_DOMAIN}\n"
            f"nameserver {CLUSTER_DNS}\noptions ndots:5\n")


def _items(data: dict[str, str], items: list | None, default_mode: int, kind: str) -> dict[str, tuple[str, int]]:
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    out = {}
    for item in items:
        if item["key"] not in data:
            raise MountError(f"{kind} references non-existent {kind} key: {item['key']}")
        out[item["path"]] = (data[item["key"]], int(item.get("mode", default_mode)))
    return out


def _service_account_token(api: Api, pod: dict, source: dict) -> str:
    """The projected token the kubelet asks TokenRequest for: signed by the cluster, bound to the pod and its
    node (pkg/kubelet/token; the signing is auth/tokens.py's)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    ns, sa_name = meta.get("namespace", "default"), spec.get("serviceAccountName") or "default"
    sa = api.store.get("serviceaccounts", ns, sa_name)
    if sa is None:
        raise MountError(f'failed to fetch token: serviceaccounts "{sa_name}" not found')
    node_name = spec.get("nodeName") or ""
    node = api.store.get("nodes", "", node_name) if node_name else None
    binding = Binding("Pod", meta["name"], meta["uid"], node_name, node["metadata"]["uid"] if node else "")
    audiences = (source["audience"],) if source.get("audience") else API_AUDIENCES
    token, _ = api.token_issuer.issue(ns, sa_name, sa["metadata"]["uid"], now=api.clock(),
                                      expiration=int(source.get("expirationSeconds") or 3600),
                                      audiences=audiences, binding=binding)
    return token


def volume_files(api: Api, pod: dict, *, host_ip: str, pod_ip: str) -> dict[str, dict[str, tuple[str, int]]]:
    """Each volume's files (relative path -> (text, mode)); MountError for a missing source."""
    ns = pod["metadata"].get("namespace", "default")
    out: dict[str, dict[str, tuple[str, int]]] = {}

    def source_data(kind: str, name: str, optional: bool, volume: str) -> dict[str, str] | None:
        try:
            return _config_data(api, kind, ns, name, optional)
        except ContainerConfigError as exc:
            raise MountError(f'MountVolume.SetUp failed for volume "{volume}" : {exc}') from None

    for vol in (pod.get("spec") or {}).get("volumes") or ():
        name, files = vol["name"], {}
        mode = int((vol.get("configMap") or vol.get("secret") or vol.get("downwardAPI") or vol.get("projected")
                    or {}).get("defaultMode", 0o644))
        try:
            if vol.get("configMap"):
                src = vol["configMap"]
                data = source_data("ConfigMap", src.get("name", ""), bool(src.get("optional")), name)
                files = _items(data or {}, src.get("items"), mode, "configmap")
            elif vol.get("secret"):
                src = vol["secret"]
                data = source_data("Secret", src.get("secretName", ""), bool(src.get("optional")), name)
                files = _items(data or {}, src.get("items"), mode, "secret")
            elif vol.get("downwardAPI"):
                files = {i["path"]: (_downward(pod, i, host_ip, pod_ip), int(i.get("mode", mode)))
                         for i in vol["downwardAPI"].get("items") or ()}
            elif vol.get("persistentVolumeClaim"):
                _check_claim(api, ns, name, vol["persistentVolumeClaim"].get("claimName", ""))
            elif vol.get("projected"):
                for source in vol["projected"].get("sources") or ():
                    if source.get("serviceAccountToken"):
                        token = source["serviceAccountToken"]
                        files[token.get("path", "token")] = (_service_account_token(api, pod, token), mode)
                    elif source.get("configMap"):
                        src = source["configMap"]
                        data = source_data("ConfigMap", src.get("name", ""), bool(src.get("optional")), name)
                        files.update(_items(data or {}, src.get("items"), mode, "configmap"))
                    elif source.get("secret"):
                        src = source["secret"]
                        data = source_data("Secret", src.get("name", ""), bool(src.get("optional")), name)
                        files.update(_items(data or {}, src.get("items"), mode, "secret"))
                    elif source.get("downwardAPI"):
                        files.update({i["path"]: (_downward(pod, i, host_ip, pod_ip), int(i.get("mode", mode)))
                                      for i in source["downwardAPI"].get("items") or ()})
        except MountError as exc:
            message = str(exc)
            if not message.startswith(("MountVolume", "Unable to attach")):
                message = f'MountVolume.SetUp failed for volume "{name}" : {message}'
            raise type(exc)(message) from None
        out[name] = files
    return out


def _check_claim(api: Api, namespace: str, volume: str, claim: str) -> None:
    """A claim volume mounts (empty) once its claim is bound; until then the volume manager keeps waiting."""
    pvc = api.try_get("persistentvolumeclaims", claim, namespace)
    if pvc is None:
        raise MountError(f'persistentvolumeclaim "{claim}" not found')
    if (pvc.get("status") or {}).get("phase") != "Bound":
        # kubelet.go SyncPod around volume_manager.go WaitForAttachAndMount: a claim volume is not attachable and,
        # its claim unbound, the desired-state populator fails to process it; the poll ends with its context error
        raise ClaimNotBound(f"Unable to attach or mount volumes: unmounted volumes=[{volume}], unattached "
                            f"volumes=[], failed to process volumes=[{volume}]: context deadline exceeded")


def _downward(pod: dict, item: dict, host_ip: str, pod_ip: str) -> str:
    if item.get("fieldRef"):
        return field_value(pod, item["fieldRef"].get("fieldPath", ""), host_ip, pod_ip)
    if item.get("resourceFieldRef"):
        return resource_value(pod, None, item["resourceFieldRef"], {})
    return ""


def _device_mode(permissions: str) -> int:
    """A device node's file mode from cgroup permissions (``r``, ``w``; ``m`` is mknod, no mode bit)."""
    return (0o444 if "r" in permissions else 0) | (0o222 if "w" in permissions else 0)


def container_files(pod: dict, container: dict, image: Image, volumes: dict[str, dict[str, tuple[str, int]]], *,
                    pod_ip: str, allocation: ContainerAllocation) -> FileSystem:
    fs = FileSystem()
    for d in _BASE_DIRS + _DEV_MOUNTS:
        fs.mkdirs(d)
    for device in _DEFAULT_DEVICES:
        fs.add_file(device, "", 0o666)
    # the kubelet bind-mounts the container's termination message file at its terminationMessagePath
    fs.add_file(container.get("terminationMessagePath") or TERMINATION_MESSAGE_PATH, "", 0o666)
    fs.add_file("/etc/hostname", pod_hostname(pod) + "\n")
    fs.add_file("/etc/hosts", hosts_file(pod, pod_ip))
    fs.add_file("/etc/resolv.conf", resolv_conf(pod))
    fs.add_file("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    if image.os_release:
        fs.add_file("/etc/os-release", image.os_release + "\n")
    for device in allocation.response.devices:
        fs.add_file(device.container_path, "", _device_mode(device.permissions))
    for mount in allocation.response.mounts:
        if mount.directory:
            fs.mkdirs(fs.normalize(mount.container_path))
            continue
        mode = 0o755 if mount.container_path in allocation.programs else 0o444 if mount.read_only else 0o644
        fs.add_file(mount.container_path, mount.content or "", mode)
    for mount in container.get("volumeMounts") or ():
        files = volumes.get(mount.get("name"), {})
        target = mount.get("mountPath", "/")
        sub = mount.get("subPath") or ""
        fs.mkdirs(fs.normalize(target))
        for rel, (text, mode) in files.items():
            if sub and rel != sub and not rel.startswith(sub.rstrip("/") + "/"):
                continue
            rel_in_mount = rel[len(sub):].lstrip("/") if sub else rel
            path = target if sub and not rel_in_mount else posixpath.join(target, rel_in_mount)
            fs.add_file(path, text, mode)
    return fs
