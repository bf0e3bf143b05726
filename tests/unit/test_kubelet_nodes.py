"""Node status, heartbeats (Lease), node events and status.images, as the kubelet posts them."""
from __future__ import annotations

import asyncio

from test_kubelet_harness import H100, container, run

GPU = "nvidia.com/gpu"


def node_events(h, name: str = "worker") -> list[tuple]:
    return [(t, r, m) for t, r, m, _ in h.events(name, kind="Node")]


def test_a_new_node_reports_its_conditions_with_the_kubelets_events():
    async def body(h):
        await h.until(lambda: any(r == "NodeReady" for _, r, _ in node_events(h)), what="NodeReady")
        assert node_events(h) == [
            ("Normal", "Starting", "Starting kubelet."),
            ("Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods"),
            ("Normal", "NodeHasSufficientMemory", "Node worker status is now: NodeHasSufficientMemory"),
            ("Normal", "NodeHasNoDiskPressure", "Node worker status is now: NodeHasNoDiskPressure"),
            ("Normal", "NodeHasSufficientPID", "Node worker status is now: NodeHasSufficientPID"),
            ("Normal", "NodeReady", "Node worker status is now: NodeReady"),
        ]
        event = next(e for e in h.api.list("events", "default") if e["reason"] == "Starting")
        assert event["involvedObject"] == {"kind": "Node", "name": "worker", "uid": "worker"}
        assert event["source"] == {"component": "kubelet", "host": "worker"}
        conditions = h.api.get("nodes", "worker")["status"]["conditions"]
        assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ]
    run(body)


def test_the_lease_is_the_frequent_heartbeat_and_status_is_written_only_on_change():
    async def body(h):
        await h.until(lambda: any(r == "NodeReady" for _, r, _ in node_events(h)))
        lease = h.api.get("leases.coordination.k8s.io", "worker", "kube-node-lease")
        node = h.api.get("nodes", "worker")
        assert lease["spec"]["holderIdentity"] == "worker" and lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "worker",
                                                         "uid": node["metadata"]["uid"]}]
        await asyncio.sleep(0.35)   # three renewals at this time scale
        renewed = h.api.get("leases.coordination.k8s.io", "worker", "kube-node-lease")
        assert renewed["spec"]["renewTime"] > lease["spec"]["renewTime"]
        assert h.api.get("nodes", "worker")["metadata"]["resourceVersion"] == node["metadata"]["resourceVersion"]
    run(body)


def test_a_ready_condition_another_component_set_unknown_is_put_right_at_the_next_update():
    """tryUpdateNodeStatus compares with the node as the API has it, not with what the kubelet last wrote."""
    def ready(h) -> tuple:
        cond = next(c for c in h.api.get("nodes", "worker")["status"]["conditions"] if c["type"] == "Ready")
        return cond["status"], cond["reason"]

    async def body(h):
        await h.until(lambda: any(r == "NodeReady" for _, r, _ in node_events(h)), what="NodeReady")
        status = h.api.get("nodes", "worker")["status"]
        status["conditions"] = [dict(c, status="Unknown", reason="NodeStatusUnknown",
                                     message="Kubelet stopped posting node status.") if c["type"] == "Ready" else c
                                for c in status["conditions"]]
        h.api.update("nodes", {"metadata": {"name": "worker"}, "status": status}, subresource="status",
                     manager="node-controller")
        assert ready(h) == ("Unknown", "NodeStatusUnknown")
        await h.until(lambda: ready(h) == ("True", "KubeletReady"), what="Ready again")
        assert node_events(h)[-1] == ("Normal", "NodeReady", "Node worker status is now: NodeReady")
    run(body, scale=0.05)    # the 5 min report interval (15 s here) is longer than the wait: the next update fixes it


def test_a_heartbeat_that_fails_once_does_not_end_the_heartbeats():
    """One renewal that raises (here a watcher of Leases failing in the write) waits for the next period."""
    def renewed(h) -> str:
        return h.api.get("leases.coordination.k8s.io", "worker", "kube-node-lease")["spec"]["renewTime"]

    async def body(h):
        await h.until(lambda: any(r == "NodeReady" for _, r, _ in node_events(h)), what="NodeReady")
        failures = [1]

        def failing_watcher(event_type, lease, old):
            if failures:
                failures.pop()
                raise RuntimeError("a watcher failed")
        h.api.subscribe("leases.coordination.k8s.io", failing_watcher)
        await h.until(lambda: not failures, what="the failed renewal")
        after_failure = renewed(h)
        await h.until(lambda: renewed(h) > after_failure, what="renewals going on")
    run(body)


def test_status_images_lists_pulled_images_and_keeps_extended_resources():
    async def body(h):
        await h.until(lambda: h.api.get("nodes", "worker")["status"].get("images"), what="the first node status")
        status = h.api.get("nodes", "worker")["status"]
        names = [n for image in status["images"] for n in image["names"]]
        assert "registry.k8s.io/pause:3.10.1" in names and "registry.k8s.io/kube-proxy:v1.37.1" in names
        status["capacity"][GPU] = status["allocatable"][GPU] = "8"
        h.api.update("nodes", {"metadata": {"name": "worker"}, "status": status}, subresource="status",
                     manager="nvidia-device-plugin")
        h.pod("web", [container("nginx", "nginx:1.27")])
        await h.phase("web", "Running")
        node = await h.until(lambda: (n := h.api.get("nodes", "worker")) and any(
            "docker.io/library/nginx:1.27" in i["names"] for i in n["status"]["images"]) and n)
        entry = next(i for i in node["status"]["images"] if "docker.io/library/nginx:1.27" in i["names"])
        assert entry["sizeBytes"] == 68857691 and entry["names"][0].startswith("docker.io/library/nginx@sha256:")
        sizes = [i["sizeBytes"] for i in node["status"]["images"]]
        assert sizes == sorted(sizes, reverse=True)
        assert node["status"]["capacity"][GPU] == "8" and node["status"]["allocatable"][GPU] == "8"
    run(body, nodes=(H100,))
