"""``gpulab cluster up|down|status|reset --engine upstream``: Kubernetes' own control plane beside the embedded one.

The launcher is KWOK's ``kwokctl`` with its binary runtime (``kwokctl create cluster --runtime binary``), the
upstream tool made for a control plane without containers: it writes the PKI and the components' configuration,
starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok controller as processes, waits for
them, and stops, restarts and deletes them. gpulab only points it at the binaries :mod:`.build` built
(``--*-binary`` options in a ``KwokctlConfiguration``, so it downloads nothing), adds what a kind cluster's
kubeadm has that kwokctl leaves out (:data:`APISERVER_ARGS`, :data:`CONTROLLER_MANAGER_ARGS`), and gives kwok the
course's node and pod lifecycles as data (``data/stages.yaml``).

The state lives where an embedded cluster's does (``$GPULAB_HOME/clusters/NAME/``), so the kubeconfig, the labs and
the learner's ``connect()`` find either engine in one place: ``cluster.json`` says ``"engine": "upstream"`` beside
the port, the nodes and the feature gates; ``kwok/`` is kwokctl's work directory (``KWOK_WORKDIR``), its components'
logs and pids in ``kwok/clusters/NAME/``. Nodes are the course's topology (the same file and the same Node objects
the embedded cluster registers, :func:`gpulab.cluster.topology.node_object`), created through the API with the
annotation kwok manages nodes by, so kwok heartbeats them and runs their pods. The GPU stack emulation runs beside
it as a background process (:mod:`gpulab.gpustack.background`), as on kind, and so does the supervisor of the
programs that stand in for pods whose work the course needs (:mod:`.standins`).
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..cluster import kubeconfig as kubeconfig_files
from ..cluster.lifecycle import ClusterError, _locked, _port_taken, free_port  # noqa: PLC2701 - shared lock
from ..cluster.privatefiles import private_dir, write_private
from ..contract import cluster_dir, kubeconfig_path
from ..gpustack.background import Background
from . import ENGINE, build

if TYPE_CHECKING:
    from ..cluster.topology import TopologyFormat

STAGES = Path(__file__).parent / "data" / "stages.yaml"    # what kwok does to nodes and pods
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"       # kwokctl starts kwok with --manage-nodes-with-annotation-selector
START_TIMEOUT = "120s"
NODES_TIMEOUT = 60.0
ADDON_RETRY_SECONDS = 30.0
STANDINS = Background("standins", ("-m", "gpulab.upstream.standins"))    # real programs for KWOK's pods
# What kubeadm (and so a kind cluster) passes beyond kwokctl's own arguments, where it changes what a learner sees:
# kind's Service range, NodeRestriction on top of the default admission plugins, the aggregation layer's headers.
APISERVER_ARGS = {
    "enable-admission-plugins": "NodeRestriction",
    "service-cluster-ip-range": "10.96.0.0/16",
    "requestheader-allowed-names": "front-proxy-client",
    "requestheader-extra-headers-prefix": "X-Remote-Extra-",
    "requestheader-group-headers": "X-Remote-Group",
    "requestheader-username-headers": "X-Remote-User",
}
CONTROLLER_MANAGER_ARGS = {
    "allocate-node-cidrs": "true",
    "cluster-cidr": "10.244.0.0/16",
    "service-cluster-ip-range": "10.96.0.0/16",
    "use-service-account-credentials": "true",
}


class EngineError(ClusterError):
    """The upstream engine cannot do what was asked; the message says what to do."""


def _meta_file(name: str) -> Path:
    return cluster_dir(name) / "cluster.json"


def _workdir(name: str) -> Path:
    return cluster_dir(name) / "kwok"


def _kwok_cluster_dir(name: str) -> Path:
    return _workdir(name) / "clusters" / name


def _kwokctl(name: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "KWOK_WORKDIR": str(_workdir(name))}
    return subprocess.run([str(build.bin_dir() / "kwokctl"), *args, "--name", name], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _binaries() -> dict[str, str]:
    """The built programs, after checking they exist and are the pinned releases."""
    folder = build.bin_dir()
    missing = [p.name for p in build.PROGRAMS if not (folder / p.name).exists()]
    if missing:
        raise EngineError(f"the upstream engine's programs are not built ({', '.join(missing)} missing in {folder}): "
                          "run `make upstream` (it needs Go; see cluster-setup/upstream/README.md), then try again.")
    wanted = build.versions()["kubernetes"]
    out = subprocess.run([str(folder / "kube-apiserver"), "--version"], capture_output=True, text=True, timeout=30)
    found = (out.stdout or out.stderr).strip().removeprefix("Kubernetes ").strip()
    if found != wanted:
        raise EngineError(f"{folder / 'kube-apiserver'} is Kubernetes {found or '(unknown)'}, but the engine pins "
                          f"{wanted}: run `make upstream` to rebuild, then try again.")
    return {p.name: str(folder / p.name) for p in build.PROGRAMS}


def _kwokctl_config(port: int, feature_gates: str) -> str:
    """kwokctl's configuration: our binaries, the release, the port, kind's extra flags."""
    binaries = _binaries()
    pins = build.versions()
    options = {
        "runtime": "binary", "kubeVersion": pins["kubernetes"], "etcdVersion": pins["etcd"].lstrip("v"),
        "kwokVersion": pins["kwok"], "kubeApiserverPort": port, "securePort": True, "kubeAuthorization": True,
        "kubeAdmission": True, "kubeApiserverBinary": binaries["kube-apiserver"],
        "kubeControllerManagerBinary": binaries["kube-controller-manager"],
        "kubeSchedulerBinary": binaries["kube-scheduler"], "etcdBinary": binaries["etcd"],
        "kwokControllerBinary": binaries["kwok"], "kubeFeatureGates": feature_gates,
        "kubeRuntimeConfig": _runtime_config(feature_gates),
        # A kubelet's lease (40 s, renewed every 10 s) and kube-controller-manager's defaults for noticing a node
        # that stops renewing it (every 5 s, after 50 s): kwokctl scales its own by a heartbeat factor of 5.
        "heartbeatFactor": 1, "nodeLeaseDurationSeconds": 40,
        "kubeControllerManagerNodeMonitorPeriodMilliseconds": 5000,
        "kubeControllerManagerNodeMonitorGracePeriodMilliseconds": 50000,
        # Every component's port from the kernel: kwokctl's own choice scans down from 32767 in each process, so
        # two clusters created at once would pick the same ports (and one apiserver would use the other's etcd).
        **{option: free_port() for option in ("etcdPort", "etcdPeerPort", "kubeControllerManagerPort",
                                              "kubeSchedulerPort", "kwokControllerPort")},
    }
    patches = [{"name": component, "extraArgs": [{"key": k, "value": v} for k, v in args.items()]}
               for component, args in (("kube-apiserver", APISERVER_ARGS),
                                       ("kube-controller-manager", CONTROLLER_MANAGER_ARGS))]
    doc = {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration", "options": options,
           "componentsPatches": patches}
    return yaml.safe_dump(doc, sort_keys=False) + "---\n" + STAGES.read_text()


def _gate_syntax(text: str) -> str:
    """``--feature-gates`` normalized (``A=true,B=false``); only its syntax is checked here: which gates exist is
    the real components' to say, and a start with one they do not know fails with their words."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise EngineError(f"invalid argument {text!r} for \"--feature-gates\" flag: "
                              + (f"invalid value of {name}: {value}" if sep else f"missing bool value for {name}"))
        pairs.append(f"{name}={value.lower()}")
    return ",".join(pairs)


def _runtime_config(gates: str) -> str:
    """The API versions the gates need served: ``scheduling.k8s.io/v1beta1`` (Workload, PodGroup) is off by default
    in v1.37 and is what ``GenericWorkload`` is for; one switch stands for both, as on the embedded cluster."""
    return "scheduling.k8s.io/v1beta1=true" if "GenericWorkload=true" in gates.split(",") else ""


def _set_gates(name: str, gates: str) -> None:
    """Give a stopped cluster's control plane other feature gates: kwokctl starts each component with the
    arguments it recorded at creation, so they are rewritten there (and the API versions the gates need)."""
    recorded = _kwok_cluster_dir(name) / "kwok.yaml"
    docs = list(yaml.safe_load_all(recorded.read_text()))
    wanted = {"--feature-gates": gates, "--runtime-config": _runtime_config(gates)}
    for component in docs[0]["components"]:
        if component["name"] not in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            continue
        flags = ("--feature-gates", "--runtime-config") if component["name"] == "kube-apiserver" else \
            ("--feature-gates",)
        args = [a for a in component["args"] if a.split("=", 1)[0] not in flags]
        component["args"] = args + [f"{flag}={wanted[flag]}" for flag in flags if wanted[flag]]
    docs[0]["options"]["kubeFeatureGates"] = gates
    docs[0]["options"]["kubeRuntimeConfig"] = _runtime_config(gates)
    recorded.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _kubeconfig(name: str, merge: bool) -> Path:
    """Our kubeconfig (context ``gpulab-NAME``, as the embedded cluster's) from the one kwokctl wrote."""
    written = yaml.safe_load((_kwok_cluster_dir(name) / "kubeconfig.yaml").read_text())
    cluster = dict(written["clusters"][0]["cluster"])
    user = dict(written["users"][0]["user"])
    for key in ("certificate-authority", "client-certificate", "client-key"):
        if key in cluster or key in user:
            section = cluster if key in cluster else user
            section[f"{key}-data"] = base64.b64encode(Path(section.pop(key)).read_bytes()).decode()
    entry = f"gpulab-{name}"
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [{"name": entry, "cluster": cluster}], "users": [{"name": entry, "user": user}],
              "contexts": [{"name": entry, "context": {"cluster": entry, "user": entry}}], "current-context": entry}
    kubeconfig_files.write(kubeconfig_path(name), config)
    if merge:
        kubeconfig_files.merge_into(kubeconfig_files.user_kubeconfig_path(), config)
    return kubeconfig_path(name)


def _register_nodes(name: str, kubeconfig: Path, nodes: list[dict]) -> None:
    """Create the topology's nodes (those not there yet) and wait until the cluster can take a learner's first
    pod: kwok reports every node Ready, and the ServiceAccount controller has made namespace default's
    ``default`` account (until then a pod is refused: ``serviceaccount "default" not found``)."""
    from ..kubeclient import NODES, SERVICEACCOUNTS, ApiException, Kube

    kube = Kube.from_kubeconfig(str(kubeconfig), field_manager="gpulab-upstream")
    try:
        for node in nodes:
            try:
                kube.create(NODES, node)
            except ApiException as exc:
                if exc.status != 409:
                    raise EngineError(f"the API server refused node {node['metadata']['name']}: {exc.reason} "
                                      f"{exc.body}") from None
        deadline = time.monotonic() + NODES_TIMEOUT
        names = {n["metadata"]["name"] for n in nodes}
        waiting: set[str] = set(names)
        while time.monotonic() < deadline:
            ready = {n["metadata"]["name"] for n in kube.list(NODES)["items"]
                     if any(c["type"] == "Ready" and c["status"] == "True"
                            for c in (n.get("status") or {}).get("conditions") or [])}
            waiting = names - ready
            if not waiting and kube.try_get(SERVICEACCOUNTS, "default", "default"):
                return
            time.sleep(0.2)
        what = (f"nodes {', '.join(sorted(waiting))} did not become Ready" if waiting else
                "the ServiceAccount controller made no default/default account")
        raise EngineError(f"{what} within {NODES_TIMEOUT:.0f}s; see the logs in {_kwok_cluster_dir(name) / 'logs'}")
    finally:
        kube.close()


def _system_addons(name: str, kubeconfig: Path, version: str) -> None:
    """kube-system as kubeadm and kind leave it (CoreDNS, kube-proxy, kind's storage, the control plane's mirror
    pods: the embedded cluster's own list, :func:`gpulab.cluster.systemaddons.objects`), created through the API;
    kwokctl installs none of them. Objects already there are kept, as on a resumed cluster. A refusal is retried
    for a while: right after its start the API server may not allocate Service IPs yet ("cannot allocate resources
    of type serviceipallocations at this time"), and kubeadm's add-on phase retries too."""
    from ..cluster import systemaddons
    from ..kubeclient import NODES, ApiException, Kube, Resource

    kube = Kube.from_kubeconfig(str(kubeconfig))
    try:
        control_plane = kube.try_get(NODES, f"{name}-control-plane")
        for obj in systemaddons.objects(name, version, control_plane):
            namespace = obj["metadata"].get("namespace")
            resource = Resource(obj["apiVersion"], systemaddons.KEYS[obj["kind"]].split(".")[0], bool(namespace))
            deadline = time.monotonic() + ADDON_RETRY_SECONDS
            while True:
                try:
                    kube.create(resource, obj, namespace, manager=systemaddons.MANAGERS.get(obj["kind"], "kubeadm"))
                    break
                except ApiException as exc:
                    # there already (409; or 422 "provided IP is already allocated" for a Service whose first
                    # create went through after all): kept
                    if exc.status == 409 or kube.try_get(resource, obj["metadata"]["name"], namespace):
                        break
                    if time.monotonic() > deadline:
                        raise EngineError(f"the API server refused kube-system's {obj['kind']} "
                                          f"{obj['metadata']['name']}: {exc.reason} {exc.body}") from None
                    time.sleep(0.5)
    finally:
        kube.close()


def _node_objects(meta: dict) -> list[dict]:
    from ..cluster.topology import NodeSpec, node_object

    objects = []
    for index, record in enumerate(meta["nodes"]):
        node = node_object(NodeSpec.from_record(record), index)
        node["metadata"]["annotations"][KWOK_NODE_ANNOTATION] = "fake"
        # kind's nodes run the control plane's release; so do these
        node["status"]["nodeInfo"]["kubeletVersion"] = meta["versions"]["kubernetes"]
        objects.append(node)
    return objects


def up(name: str, *, topology_format: "TopologyFormat", topology: Path | None = None, merge: bool = False,
       port: int | None = None, feature_gates: str | None = None, gpu_stack: bool = True) -> Path:
    """Create or resume the upstream cluster ``name``; its kubeconfig once the API answers and every node is
    Ready. A failed start leaves nothing running. ``gpu_stack=False`` (remembered for a new cluster) leaves the GPU
    stack emulation off, for whoever drives it otherwise (``gpulab gpustack run``, or a test writing its objects)."""
    with _locked(name):
        return _up(name, topology_format, topology, merge, port, feature_gates, gpu_stack)


def _up(name: str, topology_format: "TopologyFormat", topology: Path | None, merge: bool, port: int | None,
        feature_gates: str | None, gpu_stack: bool) -> Path:
    directory = cluster_dir(name)
    gates = None if feature_gates is None else _gate_syntax(feature_gates)
    meta_file = _meta_file(name)
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if topology is not None:
            raise EngineError(f"cluster {name!r} already exists; a topology applies only to a new cluster. Run "
                              f"`gpulab cluster reset --name {name}` first to use {topology}.")
        if gates is not None and gates != meta.get("featureGates", ""):
            if _running(name):
                raise EngineError(f"cluster {name!r} is running with feature gates "
                                  f"{meta.get('featureGates') or '(the defaults)'!r}; gates change only when the "
                                  f"control plane starts. Run `gpulab cluster down --name {name}`, then `gpulab "
                                  f"cluster up --name {name} --feature-gates {gates}`.")
            _set_gates(name, gates)
            meta["featureGates"] = gates
            write_private(meta_file, json.dumps(meta, indent=1))
        if port is not None and port != meta["port"]:
            raise EngineError(f"cluster {name!r} serves on port {meta['port']}; the upstream engine keeps its port "
                              f"for its life (its certificates name it). Run `gpulab cluster reset --name {name}` to "
                              "start over on another port.")
        if not _running(name):
            _binaries()
            if _port_taken(int(meta["port"])):
                raise _port_error(name, int(meta["port"]))
            _start(name, ["start", "cluster", "--wait", START_TIMEOUT], "start")
    else:
        from ..cluster.topology import check_nodes

        nodes = topology_format.nodes(topology, name)
        check_nodes(nodes)
        chosen = port or free_port()
        if _port_taken(chosen):
            raise _port_error(name, chosen)
        config = _kwokctl_config(chosen, gates or "")
        private_dir(directory)
        meta = {"name": name, "engine": ENGINE, "port": chosen, "nodes": [asdict(n) for n in nodes],
                "featureGates": gates or "", "gpuStack": gpu_stack, "versions": build.versions()}
        write_private(directory / "kwokctl.yaml", config)
        try:
            _start(name, ["create", "cluster", "--config", str(directory / "kwokctl.yaml"), "--kubeconfig",
                          str(directory / "kwokctl-kubeconfig.yaml"), "--wait", START_TIMEOUT], "create")
        except EngineError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        write_private(meta_file, json.dumps(meta, indent=1))
    path = _kubeconfig(name, merge)
    try:
        _register_nodes(name, path, _node_objects(meta))
        _system_addons(name, path, meta["versions"]["kubernetes"])
    except BaseException:
        _stop(name)
        raise
    from ..gpustack.background import GPUSTACK

    STANDINS.start(directory, path)
    if meta.get("gpuStack", True):
        GPUSTACK.start(directory, path)
    return path


def _port_error(name: str, port: int) -> EngineError:
    return EngineError(f"port {port} on 127.0.0.1, which cluster {name!r} would serve on, is taken by another "
                       f"process. Stop that process, or start a new cluster on another port with `gpulab cluster up "
                       f"--name NAME --engine upstream --port PORT`.")


def _start(name: str, args: list[str], verb: str) -> None:
    """Run ``kwokctl ARGS``; on failure stop whatever it started and raise with the log's last lines."""
    try:
        out = _kwokctl(name, *args)
    except subprocess.TimeoutExpired:
        out = None
    if out is not None and out.returncode == 0:
        return
    logs = _kwok_cluster_dir(name) / "logs"
    detail = (out.stderr or out.stdout).strip().splitlines()[-10:] if out is not None else ["timed out"]
    tails = []
    for log in sorted(logs.glob("*.log")) if logs.exists() else []:
        last = log.read_text(errors="replace").strip().splitlines()[-3:]
        if last:
            tails.append(f"{log.name}: " + " | ".join(last))
    _stop(name)
    raise EngineError(f"kwokctl could not {verb} cluster {name!r}:\n" + "\n".join(detail + tails) +
                      f"\nFix the cause (logs in {logs}), then run `gpulab cluster up --name {name} --engine upstream` "
                      "again.")


def _pids(name: str) -> dict[str, int]:
    """The components kwokctl started that still run: name -> pid."""
    import psutil

    found = {}
    for pid_file in sorted((_kwok_cluster_dir(name) / "pids").glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if psutil.pid_exists(pid):
            found[pid_file.stem] = pid
    return found


def _running(name: str) -> bool:
    return bool(_pids(name)) and "kube-apiserver" in _pids(name)


def _stop(name: str) -> bool:
    """Stop every component and the emulation; whether anything was running."""
    from ..gpustack.background import GPUSTACK

    was = bool(_pids(name))
    GPUSTACK.stop(cluster_dir(name))
    STANDINS.stop(cluster_dir(name))
    if _kwok_cluster_dir(name).exists():
        _kwokctl(name, "stop", "cluster")
    _kill_leftovers(name)
    return was


def _kill_leftovers(name: str) -> None:
    """kwokctl stops components by their pid files; anything still alive after it (a pid file lost in a crash
    mid-start) is killed here, so a failed start leaves nothing running."""
    import psutil

    for pid in _pids(name).values():
        try:
            process = psutil.Process(pid)
            if str(_workdir(name)) in " ".join(process.cmdline()) or process.cwd().startswith(str(_workdir(name))):
                process.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def down(name: str) -> bool:
    """Stop the cluster, keeping its state; False when it was not running."""
    with _locked(name):
        return _stop(name)


def reset(name: str) -> None:
    """Stop the cluster and delete its state (and its entries in ~/.kube/config)."""
    with _locked(name):
        _stop(name)
        shutil.rmtree(cluster_dir(name), ignore_errors=True)
    kubeconfig_files.remove_from(kubeconfig_files.user_kubeconfig_path(), name)


def status(name: str) -> dict:
    if not _meta_file(name).exists():
        return {"name": name, "state": "absent"}
    meta = json.loads(_meta_file(name).read_text())
    pids = _pids(name)
    info = {"name": name, "engine": ENGINE, "state": "running" if "kube-apiserver" in pids else "stopped",
            "port": meta.get("port"), "nodes": len(meta.get("nodes", [])), "directory": str(cluster_dir(name)),
            "kubeconfig": str(kubeconfig_path(name)),
            "versions": ", ".join(f"{k} {v}" for k, v in (meta.get("versions") or {}).items())}
    if meta.get("featureGates"):
        info["feature-gates"] = meta["featureGates"]
    if pids:
        info["components"] = ", ".join(f"{component} ({pid})" for component, pid in pids.items())
    missing = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"} - set(pids)
    if pids and missing:
        info["state"] = "crashed"
        info["stopped components"] = ", ".join(sorted(missing))
    return info
