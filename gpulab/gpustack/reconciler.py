"""The GPU stack's control loop: what each NVIDIA component does once its pod runs on a node.

One process plays every component of the stack, each acting only where its
pod is running, as the real ones do:

* the operator (its ``gpu-operator`` Deployment's pod): ClusterPolicy status,
  operand DaemonSets and per-node ``nvidia.com/gpu.deploy.*`` labels
  (:mod:`.operator`, :mod:`.operands`), the driver upgrade controller (:mod:`.upgrades`);
* nfd-worker and nfd-master: the node's ``NodeFeature``, and the ``feature.node.kubernetes.io/*`` labels
  nfd-master takes from it (:mod:`.nfd`);
* the driver pod: which driver the node runs;
* GFD: ``nvidia.com/*`` labels (:mod:`.gfd`);
* the device plugin: capacity, allocatable, device allocation for each GPU pod
  (:mod:`.deviceplugin`, :mod:`.allocation`);
* the MIG manager: ``nvidia.com/mig.config`` -> geometry and ``mig.config.state`` (:mod:`.reconfigure`);
* the validator: the ``nvidia-cuda-validator`` pod (:mod:`.validator`).

On a cluster whose kubelets really run these pods (kind), every pod it creates
runs stand-in images (:mod:`.standins`); the components still act where those
pods run.

It reaches the cluster only through a kubeconfig (:mod:`.client`); caches are
fed by watches (:mod:`.informer`) and every change becomes a key on a queue:
``("node", name)`` runs everything that concerns one node, ``("policy",)``
the operator's cluster-wide work. Only the holder of the ``gpulab-gpustack``
Lease acts, like the operator's leader election, so an in-process reconciler
and a ``gpulab gpustack run`` never fight over one cluster.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
from datetime import datetime, timezone

from urllib3.exceptions import HTTPError

from .. import kubeclient
from ..contract import ALLOCATION_ANNOTATION, PLUGIN_RESOURCES_ANNOTATION
from ..kubeclient import LEASES, ApiException
from . import allocation, driver, faults, gpucluster, migmanager, nfd, operator, standins, validator
from .drakubeletplugin import RESOURCECLAIMS, KubeletPlugin, claim_node
from .deviceplugin import (CONFIG_LABEL, ENDPOINT_STOP_GRACE_SECONDS, ConfigManagerError, LoadedConfig, choose_config,
                           node_resources, plugin_devices, unhealthy_devices)
from .events import Recorder
from .gfd import GfdError, gfd_labels
from .nodestate import node_gpus, read_layout
from .operands import deploy_labels
from .sharing import NO_SHARING, effective_mig_strategy
from .informer import Informer, WorkQueue
from .pods import NFD_WORKER, OPERATOR_APP, active, containers_ready, meta, operand_app, running
from .reconfigure import MigReconfigure
from .upgrades import DriverUpgrades

log = logging.getLogger("gpulab.gpustack")

DEFAULT_NAMESPACE = "gpu-operator"
LEASE_NAME = "gpulab-gpustack"
LEASE_NAMESPACE = "kube-system"
LEASE_SECONDS = 45
HASH_ANNOTATION = "nvidia.com/last-applied-hash"
PLUGIN_FAILED_REASON = "DevicePluginFailed"


def _now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _diff(old: dict[str, str], new: dict[str, str]) -> dict[str, str | None]:
    patch: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


class GpuStack:
    """The reconciler; ``run()`` blocks until ``stop`` is set."""

    def __init__(self, kube: kubeclient.Kube, namespace: str = DEFAULT_NAMESPACE, *, identity: str | None = None,
                 exit_when_unreachable: float | None = None):
        self.kube = kube
        self.exit_when_unreachable = exit_when_unreachable
        self._unreachable_since: float | None = None
        self.namespace = namespace
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}"
        self.stop = threading.Event()
        self.queue = WorkQueue()
        self.recorder = Recorder(kube, "gpu-operator")
        self.nodes = Informer(kube, kubeclient.NODES, self._on_node, stop=self.stop)
        self.pods = Informer(kube, kubeclient.PODS, self._on_pod, stop=self.stop)
        self.policies = Informer(kube, operator.CLUSTERPOLICIES, self._on_policy, stop=self.stop)
        self.gpuclusters = Informer(kube, gpucluster.GPUCLUSTERS, self._on_gpucluster, stop=self.stop)
        self.configmaps = Informer(kube, kubeclient.CONFIGMAPS, self._on_configmap, namespace=namespace, stop=self.stop)
        self.daemonsets = Informer(kube, kubeclient.DAEMONSETS, self._on_daemonset, namespace=namespace, stop=self.stop)
        self.claims = Informer(kube, RESOURCECLAIMS, self._on_claim, stop=self.stop)
        self.nodefeatures = Informer(kube, nfd.NODEFEATURES, self._on_nodefeature, namespace=namespace,
                                     stop=self.stop)
        self.dra_plugin = KubeletPlugin(kube)
        self._loaded_configs: dict[str, tuple[str | None, LoadedConfig]] = {}   # plugin/GFD pod uid -> (label, config)
        self._endpoints: dict[str, dict[str, dict]] = {}                         # node -> resource -> endpoint
        self._validated: set[str] = set()                                        # validator pod uids
        self.mig_manager = MigReconfigure(self)
        self.driver_upgrades = DriverUpgrades(self)
        self._leader = False
        self._lease_renewed = 0.0
        self._index_lock = threading.Lock()
        self._pods_by_node: dict[str, dict[tuple[str, str], dict]] = {}          # node -> pods bound to it
        self._ensured: set[tuple[str, str, str]] = set()                          # (policy uid, plural, name)
        self._plugin_errors: dict[str, str] = {}                                  # plugin pod uid -> reported error
        self._unhealthy: dict[str, set[str]] = {}                                 # plugin pod uid -> device IDs

    # --- event handlers: changes become keys ---------------------------------------------------
    def _on_node(self, kind: str, node: dict, old: dict | None) -> None:
        if kind == "MODIFIED" and old is not None and _relevant(node) == _relevant(old):
            return      # a kubelet heartbeat: nothing any component reads has changed
        self.queue.add(("node", node["metadata"]["name"]))
        state = (meta(node).get("labels") or {}).get(driver.UPGRADE_STATE_LABEL)
        if kind != "MODIFIED" or state != (meta(old or {}).get("labels") or {}).get(driver.UPGRADE_STATE_LABEL):
            self.queue.add(("policy",))

    def _on_pod(self, kind: str, pod: dict, old: dict | None) -> None:
        node = (pod.get("spec") or {}).get("nodeName") or ((old or {}).get("spec") or {}).get("nodeName")
        key = (meta(pod).get("namespace", ""), meta(pod)["name"])
        with self._index_lock:
            if old is not None:
                previous = (old.get("spec") or {}).get("nodeName")
                if previous and previous != node:
                    self._pods_by_node.get(previous, {}).pop(key, None)
            if kind == "DELETED":
                self._pods_by_node.get(node or "", {}).pop(key, None)
                self._loaded_configs.pop(meta(pod).get("uid", ""), None)
                self._unhealthy.pop(meta(pod).get("uid", ""), None)
            elif node:
                self._pods_by_node.setdefault(node, {})[key] = pod
        if meta(pod).get("namespace") == self.namespace and operand_app(pod) == OPERATOR_APP:
            self._all_nodes()
            self.queue.add(("policy",))
            self.queue.add(("gpucluster",))
        if node:
            self.queue.add(("node", node))

    def _on_policy(self, kind: str, policy: dict, old: dict | None) -> None:
        self.queue.add(("policy",))
        self.queue.add(("gpucluster",))
        self._all_nodes()

    def _on_gpucluster(self, kind: str, cluster: dict, old: dict | None) -> None:
        self.queue.add(("gpucluster",))
        self.queue.add(("policy",))
        self._all_nodes()

    def _on_claim(self, kind: str, claim: dict, old: dict | None) -> None:
        node = claim_node(claim) or (claim_node(old) if old else None)
        if node:
            self.queue.add(("node", node))

    def _on_nodefeature(self, kind: str, feature: dict, old: dict | None) -> None:
        self.queue.add(("node", meta(feature)["name"]))

    def _on_configmap(self, kind: str, cm: dict, old: dict | None) -> None:
        self._all_nodes()

    def _on_daemonset(self, kind: str, ds: dict, old: dict | None) -> None:
        self.queue.add(("policy",))
        self.queue.add(("gpucluster",))

    def _all_nodes(self) -> None:
        for node in self.nodes.items():
            self.queue.add(("node", node["metadata"]["name"]))

    # --- loop ----------------------------------------------------------------------------------
    def run(self) -> None:
        while not self.stop.is_set() and not self._hold_lease():
            self.stop.wait(LEASE_SECONDS / 9 if self._unreachable_since else LEASE_SECONDS / 3)
        for informer in (self.nodes, self.pods, self.configmaps, self.daemonsets, self.policies, self.gpuclusters,
                         self.claims, self.nodefeatures):
            informer.start()
        for informer in (self.nodes, self.pods, self.configmaps, self.daemonsets):
            informer.synced.wait(30)
        while not self.stop.is_set():
            if not self._hold_lease():
                self.stop.wait(LEASE_SECONDS / 9 if self._unreachable_since else LEASE_SECONDS / 3)
                continue
            key = self.queue.get(self.stop, idle=1.0)
            if key is None:
                continue
            try:
                if key[0] == "node":
                    self.reconcile_node(key[1])
                elif key[0] == "gpucluster":
                    self.reconcile_gpucluster()
                else:
                    self.reconcile_policy()
            except ApiException as exc:
                if exc.status == 409:
                    self.queue.add_after(key, 0.2)
                else:
                    log.warning("reconcile %s: %s %s", key, exc.status, kubeclient.error_message(exc))
                    self.queue.add_after(key, 2.0)
            except (HTTPError, OSError) as exc:
                log.debug("reconcile %s interrupted: %s", key, exc)
                self.queue.add_after(key, 1.0)
            except Exception:  # noqa: BLE001 - a bug must not stop the stack; it is logged and retried
                log.exception("reconcile %s failed", key)
                self.queue.add_after(key, 5.0)

    def _hold_lease(self) -> bool:
        """Acquire or renew the Lease; True while this process is the one that acts."""
        now = time.time()
        if self._leader and now - self._lease_renewed < LEASE_SECONDS / 3:
            return True
        stamp = _now_iso()
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
                 "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": LEASE_SECONDS,
                          "acquireTime": stamp, "renewTime": stamp}}
        try:
            current = self.kube.try_get(LEASES, LEASE_NAME, LEASE_NAMESPACE)
            if current is None:
                self.kube.create(LEASES, lease, LEASE_NAMESPACE)
            else:
                spec = current.get("spec") or {}
                holder = spec.get("holderIdentity")
                renewed = _parse_time(spec.get("renewTime"))
                if holder != self.identity and renewed is not None and now - renewed < LEASE_SECONDS:
                    self._leader = False
                    return False
                if holder == self.identity:
                    lease["spec"]["acquireTime"] = spec.get("acquireTime", stamp)
                lease["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                self.kube.update(LEASES, lease)
        except ApiException as exc:
            log.debug("lease: %s", exc)
            self._leader = False
            return False
        except (HTTPError, OSError) as exc:
            log.debug("lease: %s", exc)
            self._leader = False
            self._unreachable_since = self._unreachable_since or now
            if self.exit_when_unreachable is not None and now - self._unreachable_since > self.exit_when_unreachable:
                log.info("the API server has been unreachable for %.0f s; stopping", now - self._unreachable_since)
                self.stop.set()
            return False
        self._unreachable_since = None
        if not self._leader:
            self.queue.add(("policy",))
            self._all_nodes()
        self._leader = True
        self._lease_renewed = now
        return True

    def release(self) -> None:
        """Give the Lease up (on a clean stop) so another reconciler can take over at once."""
        if not self._leader:
            return
        try:
            self.kube.patch(LEASES, LEASE_NAME, {"spec": {"holderIdentity": None, "renewTime": None}},
                            LEASE_NAMESPACE)
        except (ApiException, HTTPError, OSError):
            pass

    # --- shared lookups ------------------------------------------------------------------------
    def policy(self) -> dict | None:
        """The singleton ClusterPolicy: the oldest one (the operator ignores the others)."""
        items = self.policies.items()
        if not items:
            return None
        return min(items, key=lambda p: (meta(p).get("creationTimestamp", ""), meta(p)["name"]))

    def gpu_cluster(self) -> dict | None:
        """The GPUCluster, if any (its CRD admits only one, named ``gpu-cluster``)."""
        return next(iter(self.gpuclusters.items()), None)

    def operator_running(self) -> bool:
        return any(running(p) and operand_app(p) == OPERATOR_APP for p in self.pods.items()
                   if meta(p).get("namespace") == self.namespace)

    def pods_on(self, node: str) -> list[dict]:
        with self._index_lock:
            return list(self._pods_by_node.get(node, {}).values())

    def operands_on(self, pods_here: list[dict]) -> dict[str, dict]:
        """app -> the running operand pod of that app on the node."""
        return {operand_app(p): p for p in pods_here
                if meta(p).get("namespace") == self.namespace and running(p) and operand_app(p)}

    # --- one node ------------------------------------------------------------------------------
    def reconcile_node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            self._endpoints.pop(name, None)
            return
        policy = self.policy()
        spec = (policy or {}).get("spec") or {}
        operator_active = policy is not None and self.operator_running()
        # Under a GPUCluster (and no ClusterPolicy) the operator labels the node for the DRA stack, and the
        # driver is the host's: the chart asks for driver.enabled=false or an NVIDIADriver (not emulated).
        dra_stack = policy is None and self.gpu_cluster() is not None and self.operator_running()
        pods_here = self.pods_on(name)
        operands = self.operands_on(pods_here)
        gpus = node_gpus(node)
        labels = dict(meta(node).get("labels") or {})
        notes = dict(meta(node).get("annotations") or {})
        managed = {n if "/" in n else nfd.PREFIX + n
                   for n in filter(None, notes.get(nfd.FEATURE_LABELS_ANNOTATION, "").split(","))}

        if NFD_WORKER in operands:
            fresh = self._publish_node_feature(node, operands[NFD_WORKER])
            for stale in [k for k in managed if k.startswith(nfd.PREFIX) and k not in fresh]:
                labels.pop(stale, None)
                managed.discard(stale)
            labels.update(fresh)
            managed |= set(fresh)
        if operator_active and self.gpu_cluster() is None:
            labels = deploy_labels(labels, spec)
        elif dra_stack:
            labels = gpucluster.state_labels(labels)

        driver_version = (driver.PREINSTALLED_DRIVER if gpus else None) if dra_stack else \
            self._driver_version(spec, operands, gpus, policy is not None)
        layout = read_layout(node, gpus) if gpus else ()
        if gpus and operator_active and "nvidia-mig-manager" in operands:
            layout = self.mig_manager.step(node, gpus, layout, labels, notes, pods_here, spec, operands)

        plugin = operands.get("nvidia-device-plugin-daemonset")
        loaded = self._plugin_config(plugin, labels, spec) if plugin else None
        strategy = effective_mig_strategy(loaded.config if loaded else NO_SHARING,
                                          (spec.get("mig") or {}).get("strategy"))
        if gpus and driver_version and "gpu-feature-discovery" in operands:
            gfd_config = self._gfd_config(operands["gpu-feature-discovery"], labels, spec)
            try:
                fresh = gfd_labels(gpus.model, gpus.count, driver_version=driver_version,
                                   cuda_version=driver.cuda_version(driver_version),
                                   mig_strategy=effective_mig_strategy(gfd_config.config,
                                                                       (spec.get("mig") or {}).get("strategy")),
                                   layout=layout, sharing=gfd_config.config)
            except GfdError:
                fresh = None
            if fresh is not None:
                previous = {k: labels.get(k) for k in managed if not k.startswith(nfd.PREFIX)}
                for stale in [k for k in managed if not k.startswith(nfd.PREFIX) and k not in fresh]:
                    labels.pop(stale, None)
                    managed.discard(stale)
                if any(previous.get(k) != v for k, v in fresh.items()):
                    fresh["nvidia.com/gfd.timestamp"] = str(int(time.time()))
                else:
                    fresh["nvidia.com/gfd.timestamp"] = labels.get("nvidia.com/gfd.timestamp",
                                                                   str(int(time.time())))
                labels.update(fresh)
                managed |= set(fresh)
        if managed:
            notes[nfd.FEATURE_LABELS_ANNOTATION] = nfd.feature_labels_annotation(
                {k: "" for k in managed if k in labels})

        devices: dict = {}
        if gpus:
            devices = self._device_plugin(name, node, plugin, loaded, layout, strategy, driver_version, notes)
        self.dra_plugin.step(node, pods_here, gpus, driver_version, notes,
                             [c for c in self.claims.items() if claim_node(c) == name])
        self._write_node(node, labels, notes)
        if gpus and devices and driver_version:
            self._allocate(name, gpus, layout, devices, loaded, pods_here, driver_version)
        if gpus and operator_active and driver_version:
            self._validate(name, node, pods_here, gpus, layout, spec)

    def _publish_node_feature(self, node: dict, worker: dict) -> dict[str, str]:
        """nfd-worker creates or updates the node's NodeFeature (only when it changed); nfd-master labels the node
        with the object's ``spec.labels``, which are returned."""
        desired = nfd.node_feature(node, self.namespace, worker)
        name = meta(node)["name"]
        current = self.nodefeatures.get(name, self.namespace)
        if current is None:
            try:
                current = self.kube.create(nfd.NODEFEATURES, desired, self.namespace)
            except ApiException as exc:
                if exc.status != 409:      # the cache has not seen it yet
                    raise
                current = self.kube.get(nfd.NODEFEATURES, name, self.namespace)
        owned = ("labels", "annotations", "ownerReferences")
        if current.get("spec") != desired["spec"] or any(meta(current).get(k) != desired["metadata"][k]
                                                         for k in owned):
            body = {**current, "metadata": {**meta(current), **{k: desired["metadata"][k] for k in owned}},
                    "spec": desired["spec"]}
            current = self.kube.update(nfd.NODEFEATURES, body)
        return dict((current.get("spec") or {}).get("labels") or {})

    def _write_node(self, node: dict, labels: dict[str, str], notes: dict[str, str]) -> None:
        current = meta(node)
        label_patch = _diff(current.get("labels") or {}, labels)
        note_patch = _diff(current.get("annotations") or {}, notes)
        if not label_patch and not note_patch:
            return
        patch: dict = {"metadata": {"resourceVersion": current["resourceVersion"]}}
        if label_patch:
            patch["metadata"]["labels"] = label_patch
        if note_patch:
            patch["metadata"]["annotations"] = note_patch
        self.kube.patch(kubeclient.NODES, current["name"], patch)

    # --- driver ----------------------------------------------------------------------------------
    def _driver_version(self, spec: dict, operands: dict[str, dict], gpus, installed: bool) -> str | None:
        """The driver the node runs: the running driver pod's, the host's when the operator manages none."""
        if not gpus or not installed:
            return None
        if not (spec.get("driver") or {}).get("enabled", True):
            return driver.PREINSTALLED_DRIVER
        pod = operands.get(driver.DRIVER_APP)
        if pod is None or not containers_ready(pod):
            return None
        return driver.image_driver_version(driver.driver_container_image(pod)) or None

    # --- device plugin -------------------------------------------------------------------------
    def _plugin_config(self, plugin: dict, labels: dict[str, str], spec: dict) -> LoadedConfig:
        """What config-manager gave this running plugin pod: chosen at start, chosen again when the node label
        changes; a choice that fails there (the sidecar exits 1 and crash-loops) leaves the loaded config."""
        uid = meta(plugin)["uid"]
        label = labels.get(CONFIG_LABEL)
        remembered = self._loaded_configs.get(uid)
        if remembered is not None and remembered[0] == label:
            return remembered[1]
        chosen = self._choose_or_keep(label, spec, remembered[1] if remembered else None)
        self._loaded_configs[uid] = (label, chosen)
        return chosen

    def _gfd_config(self, gfd: dict, labels: dict[str, str], spec: dict) -> LoadedConfig:
        """GFD runs its own config-manager with the same config; it reads it on every labelling pass, keeping the
        last config it loaded while the choice fails."""
        uid = meta(gfd)["uid"]
        remembered = self._loaded_configs.get(uid)
        chosen = self._choose_or_keep(labels.get(CONFIG_LABEL), spec, remembered[1] if remembered else None)
        self._loaded_configs[uid] = (labels.get(CONFIG_LABEL), chosen)
        return chosen

    def _choose_or_keep(self, label: str | None, spec: dict, current: LoadedConfig | None) -> LoadedConfig:
        """The pod runs, so its init container chose without error; when the choice fails now, the pod keeps
        ``current``, or (unknown after a reconciler restart) the config chosen without the label."""
        try:
            return self._read_config(label, spec)
        except ConfigManagerError:
            if current is not None:
                return current
        try:
            return self._read_config(None, spec)
        except ConfigManagerError:
            return LoadedConfig("", NO_SHARING)

    def _read_config(self, label: str | None, spec: dict) -> LoadedConfig:
        config = (spec.get("devicePlugin") or {}).get("config") or {}
        if not config.get("name"):
            return LoadedConfig("", NO_SHARING)      # no config-manager: the plugin's built-in defaults
        cm = self.configmaps.get(config["name"], self.namespace)
        available = (cm or {}).get("data") or {}
        return choose_config(label, config.get("default", ""), available)

    def _device_plugin(self, name: str, node: dict, plugin: dict | None, loaded: LoadedConfig | None, layout,
                       strategy: str, driver_version: str | None, notes: dict[str, str]) -> dict:
        """Register the plugin's devices with the node (capacity/allocatable); returns the listed devices."""
        now = time.time()
        endpoints = self._endpoints.setdefault(name, self._endpoints_from_status(node, now))
        devices: dict = {}
        if plugin is not None and driver_version and loaded is not None:
            devices, error = plugin_devices(name, layout, strategy, loaded)
            uid = meta(plugin)["uid"]
            if error and self._plugin_errors.get(uid) != error:
                self._plugin_errors[uid] = error
                self.recorder.event({**plugin, "kind": "Pod", "apiVersion": "v1"}, "Warning",
                                    PLUGIN_FAILED_REASON, error, host=name)
        unhealthy = self._health_check(plugin, node, devices) if devices else set()
        for resource, listed in devices.items():
            healthy = [d for d in listed if d.id not in unhealthy]
            endpoints[resource] = {"count": len(listed), "healthy": len(healthy), "stopped": None}
        for resource, endpoint in list(endpoints.items()):
            if resource in devices:
                continue
            if endpoint["stopped"] is None:
                endpoint.update(healthy=0, stopped=now)
            if now - endpoint["stopped"] >= ENDPOINT_STOP_GRACE_SECONDS:
                del endpoints[resource]
            else:
                self.queue.add_after(("node", name), endpoint["stopped"] + ENDPOINT_STOP_GRACE_SECONDS - now + 0.05)
        served = ",".join(sorted(devices))
        if served:
            notes[PLUGIN_RESOURCES_ANNOTATION] = served
        else:
            notes.pop(PLUGIN_RESOURCES_ANNOTATION, None)
        self._write_capacity(node, endpoints)
        # the kubelet allocates healthy devices only (devicemanager's healthyDevices)
        return {resource: [d for d in listed if d.id not in unhealthy] for resource, listed in devices.items()}

    def _health_check(self, plugin: dict, node: dict, devices: dict) -> set[str]:
        """The device IDs this plugin pod reports Unhealthy (:func:`.deviceplugin.unhealthy_devices`), with its
        environment's XID settings. ListAndWatch never reports a device healthy again, so only a new pod forgets."""
        uid = meta(plugin)["uid"]
        env = {e.get("name"): e.get("value") for c in (plugin.get("spec") or {}).get("containers") or []
               for e in c.get("env") or []}
        disabled = faults.disabled_xids(env.get("DP_DISABLE_HEALTHCHECKS"), env.get("DP_ENABLE_HEALTHCHECKS"))
        marked = self._unhealthy.setdefault(uid, set())
        if not faults.health_checks_run(disabled):
            return marked
        started = _parse_time((plugin.get("status") or {}).get("startTime")) or 0.0
        marked |= unhealthy_devices(devices, faults.read(meta(node).get("annotations")), started, disabled)
        return marked

    @staticmethod
    def _endpoints_from_status(node: dict, now: float) -> dict[str, dict]:
        """After a restart: the NVIDIA resources the node still advertises, as stopped endpoints."""
        status = node.get("status") or {}
        capacity = status.get("capacity") or {}
        return {r: {"count": int(v), "healthy": 0, "stopped": now} for r, v in capacity.items()
                if r.startswith("nvidia.com/") and str(v).isdigit()}

    def _write_capacity(self, node: dict, endpoints: dict[str, dict]) -> None:
        status = node.get("status") or {}
        wanted = node_resources({r: e["count"] for r, e in endpoints.items()},
                                {r: e["healthy"] for r, e in endpoints.items()})
        patch: dict[str, dict] = {}
        for field in ("capacity", "allocatable"):
            current = {k: v for k, v in (status.get(field) or {}).items() if k.startswith("nvidia.com/")}
            patch[field] = _diff(current, wanted[field])
        if patch["capacity"] or patch["allocatable"]:
            self.kube.patch(kubeclient.NODES, node["metadata"]["name"], {"status": patch}, subresource="status",
                            manager="kubelet")

    # --- allocation ------------------------------------------------------------------------------
    def _allocate(self, name: str, gpus, layout, devices: dict, loaded: LoadedConfig | None, pods_here: list[dict],
                  driver_version: str) -> None:
        resources = set(devices)
        holders = [p for p in pods_here if active(p) and allocation.allocated_ids(p)
                   and meta(p).get("namespace") != self.namespace]
        used = set().union(*(allocation.allocated_ids(p) for p in holders)) if holders else set()
        config = loaded.config if loaded else NO_SHARING
        for pod in pods_here:
            notes = meta(pod).get("annotations") or {}
            if not active(pod) or meta(pod).get("deletionTimestamp") or ALLOCATION_ANNOTATION in notes:
                continue
            if not allocation.pod_requests_any(pod, resources):
                continue
            answer = allocation.allocate(pod, devices, used, config, model=gpus.model, node_name=name, layout=layout,
                                         driver_version=driver_version)
            pod_notes = {ALLOCATION_ANNOTATION: answer.to_json()}
            granted = answer.device_ids()
            used |= granted
            if granted:
                holders.append({**pod, "metadata": {**meta(pod), "annotations": {**notes, **pod_notes}}})
            self.kube.patch(kubeclient.PODS, meta(pod)["name"], {"metadata": {"annotations": pod_notes}},
                            meta(pod)["namespace"])
        running_holders = [p for p in holders if (p.get("status") or {}).get("phase") in ("Running", "Pending")]
        for pod in running_holders:
            figures = allocation.latency_figures(pod, devices, running_holders, gpus.model)
            if not figures:
                continue
            value = json.dumps(figures, separators=(",", ":"), sort_keys=True)
            if (meta(pod).get("annotations") or {}).get(allocation.LATENCY_ANNOTATION) != value:
                self.kube.patch(kubeclient.PODS, meta(pod)["name"],
                                {"metadata": {"annotations": {allocation.LATENCY_ANNOTATION: value}}},
                                meta(pod)["namespace"])

    # --- validator -------------------------------------------------------------------------------
    def _validate(self, name: str, node: dict, pods_here: list[dict], gpus, layout, spec: dict) -> None:
        """The validator's cuda-validation: one ``nvidia-cuda-validator-xxxxx`` pod per validator pod start."""
        validators = [p for p in pods_here if meta(p).get("namespace") == self.namespace
                      and operand_app(p) == migmanager.OPERATOR_VALIDATOR_APP and not meta(p).get("deletionTimestamp")]
        ds = self.daemonsets.get("nvidia-operator-validator", self.namespace)
        for pod in validators:
            uid = meta(pod)["uid"]
            if uid in self._validated or ds is None:
                continue
            existing = [p for p in pods_here if meta(p).get("namespace") == self.namespace
                        and operand_app(p) == validator.CUDA_VALIDATOR_APP]
            if existing and not self._validated:
                self._validated.add(uid)       # after a restart: this validator already ran its workload
                continue
            for old in existing:
                self.kube.delete(kubeclient.PODS, meta(old)["name"], self.namespace, propagation="Background",
                                 grace_period=0)
            pod = validator.cuda_workload_pod(ds, name, self.namespace, gpus, layout,
                                              stand_ins=standins.uses_stand_ins(self.kube))
            self.kube.create(kubeclient.PODS, pod, self.namespace)
            self._validated.add(uid)

    # --- the operator's cluster-wide work --------------------------------------------------------
    def reconcile_policy(self) -> None:
        policy = self.policy()
        for other in self.policies.items():
            if policy is not None and meta(other)["uid"] != meta(policy)["uid"] and \
                    (other.get("status") or {}).get("state") != "ignored" and self.operator_running():
                self.kube.patch(operator.CLUSTERPOLICIES, meta(other)["name"], {"status": {"state": "ignored"}},
                                subresource="status")
        if policy is None or not self.operator_running():
            return
        clusters = self.gpuclusters.items()
        if clusters:        # the two stacks may not coexist: the ClusterPolicy controller stops at this error
            self._write_status(operator.CLUSTERPOLICIES, policy, gpucluster.conflict(clusters))
            return
        nodes = self.nodes.items()
        gpu_labels = [meta(n).get("labels") or {} for n in nodes
                      if (meta(n).get("labels") or {}).get(nfd.PCI_NVIDIA_LABEL) == "true"]
        desired = operator.desired_objects(policy, self.namespace, gpu_labels,
                                           stand_ins=standins.uses_stand_ins(self.kube))
        wanted_ds = set()
        for resource, obj in desired:
            if resource is kubeclient.DAEMONSETS:
                wanted_ds.add(obj["metadata"]["name"])
                self._apply_daemonset(obj)
            elif (meta(policy)["uid"], resource.plural, obj["metadata"]["name"]) not in self._ensured:
                try:
                    self.kube.create(resource, obj, self.namespace)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                self._ensured.add((meta(policy)["uid"], resource.plural, obj["metadata"]["name"]))
        owner_uid = meta(policy)["uid"]
        for ds in self.daemonsets.items():
            owned = any(ref.get("uid") == owner_uid for ref in meta(ds).get("ownerReferences") or [])
            if owned and meta(ds)["name"] not in wanted_ds:
                self.kube.delete(kubeclient.DAEMONSETS, meta(ds)["name"], self.namespace, propagation="Background")
        daemonsets = {meta(d)["name"]: d for d in self.daemonsets.items()}
        verdict = operator.policy_status(policy, daemonsets, has_nfd_labels=any(
            k.startswith(nfd.PREFIX) for n in nodes for k in (meta(n).get("labels") or {})),
            has_gpu_nodes=bool(gpu_labels))
        self._write_status(operator.CLUSTERPOLICIES, policy, verdict)
        if verdict.state == "notReady":
            self.queue.add_after(("policy",), 5.0)
        self.driver_upgrades.step(policy, nodes)

    def _write_status(self, resource: kubeclient.Resource, obj: dict, verdict: operator.PolicyStatus) -> None:
        current = obj.get("status") or {}
        status = operator.status_object(current, verdict, self.namespace, _now_iso()[:19] + "Z")
        if current != status:
            self.kube.update(resource, {**obj, "status": status}, subresource="status")

    # --- the GPUCluster --------------------------------------------------------------------------
    def reconcile_gpucluster(self) -> None:
        """``GPUClusterReconciler.Reconcile``: finalizer, prerequisite, namespace label, DRA driver, status."""
        cluster = self.gpu_cluster()
        if cluster is None or not self.operator_running():
            return
        name = meta(cluster)["name"]
        finalizers = list(meta(cluster).get("finalizers") or [])
        if meta(cluster).get("deletionTimestamp"):
            # No workload of this emulation holds claims (the DCGM states are not emulated): nothing to drain.
            if gpucluster.FINALIZER in finalizers:
                finalizers.remove(gpucluster.FINALIZER)
                self.kube.update(gpucluster.GPUCLUSTERS, {**cluster, "metadata": {**meta(cluster),
                                                                                 "finalizers": finalizers}})
            return
        if gpucluster.FINALIZER not in finalizers:
            cluster = self.kube.update(gpucluster.GPUCLUSTERS, {**cluster, "metadata": {
                **meta(cluster), "finalizers": [*finalizers, gpucluster.FINALIZER]}})
        policies = self.policies.items()
        workloads: dict[str, dict | None] = {}
        if not policies:
            namespace = self.kube.get(kubeclient.NAMESPACES, self.namespace)
            if (meta(namespace).get("labels") or {}).get(gpucluster.ADMIN_ACCESS_LABEL) != "true":
                self.kube.patch(kubeclient.NAMESPACES, self.namespace,
                                {"metadata": {"labels": {gpucluster.ADMIN_ACCESS_LABEL: "true"}}})
            stand_ins = standins.uses_stand_ins(self.kube)
            for resource, obj in gpucluster.desired_objects(cluster, self.namespace):
                if stand_ins and resource in (kubeclient.DAEMONSETS, kubeclient.DEPLOYMENTS):
                    obj = standins.stand_in_workload(obj)
                if resource is kubeclient.DAEMONSETS:
                    self._apply_daemonset(obj)
                    workloads[obj["metadata"]["name"]] = self.daemonsets.get(obj["metadata"]["name"], self.namespace)
                    continue
                where = self.namespace if resource.namespaced else None
                if self.kube.try_get(resource, obj["metadata"]["name"], where) is None:
                    try:
                        self.kube.create(resource, obj, where)
                    except ApiException as exc:
                        if exc.status != 409:
                            raise
                if resource is kubeclient.DEPLOYMENTS:
                    workloads[obj["metadata"]["name"]] = self.kube.try_get(resource, obj["metadata"]["name"], where)
        verdict = gpucluster.cluster_status(cluster, workloads, policies)
        self._write_status(gpucluster.GPUCLUSTERS, self.kube.get(gpucluster.GPUCLUSTERS, name), verdict)
        if verdict.state == "notReady":
            self.queue.add_after(("gpucluster",), 5.0)

    def _apply_daemonset(self, desired: dict) -> None:
        digest = hashlib.sha256(json.dumps(desired, sort_keys=True).encode()).hexdigest()[:16]
        desired["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = digest
        current = self.daemonsets.get(desired["metadata"]["name"], self.namespace)
        if current is None:
            try:
                self.kube.create(kubeclient.DAEMONSETS, desired, self.namespace)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            return
        if (meta(current).get("annotations") or {}).get(HASH_ANNOTATION) == digest:
            return
        body = dict(desired)
        body["metadata"] = {**desired["metadata"], "resourceVersion": meta(current)["resourceVersion"]}
        self.kube.update(kubeclient.DAEMONSETS, body)

def _relevant(node: dict) -> tuple:
    """What the stack reads from a Node (everything but heartbeats and conditions)."""
    current = meta(node)
    status = node.get("status") or {}
    return (current.get("labels"), current.get("annotations"), node.get("spec"), status.get("capacity"),
            status.get("allocatable"), status.get("nodeInfo"))


def _parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
