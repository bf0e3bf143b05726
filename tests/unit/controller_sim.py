"""An in-process cluster for controller tests: Store + Api with a settable clock, and stand-ins for the
scheduler (``bind_all``) and the node agent (``run``, ``finish``, ``confirm_deletions``).

The controllers under test run as asyncio tasks; :meth:`SimCluster.settle` lets
them work until every queue is empty. Timed requeues use real loop time, so a
test that moves the clock forward re-enqueues the keys it cares about itself.
"""
from __future__ import annotations

import asyncio
import functools

from gpulab.cluster.api import Api
from gpulab.cluster.objects import clone, rfc3339
from gpulab.cluster.store import Store
from gpulab.cluster.topology import NodeSpec, node_object

START = 1_900_000_000.0


def simulated(test):
    """Run an ``async def test(sim)`` against a fresh SimCluster (no pytest-asyncio needed)."""
    @functools.wraps(test)
    def wrapper():
        async def scenario():
            sim = SimCluster()
            try:
                await test(sim)
            finally:
                await sim.stop()
        asyncio.run(scenario())
    del wrapper.__wrapped__  # pytest must not take ``sim`` for a fixture
    return wrapper


class SimCluster:
    def __init__(self, nodes: tuple[str, ...] = ("node-a", "node-b")):
        self.now = START
        self.api = Api(Store(), clock=lambda: self.now)
        self.controllers: list = []
        self._tasks: list[asyncio.Task] = []
        self.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        self.api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                            "metadata": {"name": "default"}}, "default")
        for i, name in enumerate(nodes):
            self.add_node(name, i)
        self._next_node = 0

    def add_node(self, name: str, index: int = 0, taints: list | None = None) -> dict:
        return self.api.create("nodes", node_object(NodeSpec(name, taints=list(taints or [])), index))

    # --- controllers ---------------------------------------------------------
    def start(self, *controllers) -> None:
        for c in controllers:
            self.controllers.append(c)
            self._tasks.append(asyncio.get_running_loop().create_task(c.run()))

    async def settle(self, limit: int = 20000) -> None:
        quiet = 0
        for _ in range(limit):
            await asyncio.sleep(0)
            busy = any(len(c.queue) or c.queue._processing for c in self.controllers)
            quiet = 0 if busy else quiet + 1
            if quiet >= 5:
                return
        raise AssertionError("controllers did not settle")

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def resync(self) -> None:
        """Re-enqueue every object each controller watches first (a resync after moving the clock)."""
        for c in self.controllers:
            for key in c.initial_keys():
                c.queue.add(key)

    # --- what the scheduler and the node agent would do ----------------------------
    def pods(self, namespace: str = "default", **labels) -> list[dict]:
        sel = ",".join(f"{k}={v}" for k, v in labels.items()) or None
        return self.api.list("pods", namespace, label_selector=sel)

    def bind_all(self) -> None:
        nodes = [n["metadata"]["name"] for n in self.api.list("nodes")]
        for pod in self.api.list("pods"):
            if pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            target = _affinity_node(pod) or nodes[self._next_node % len(nodes)]
            self._next_node += 1
            self.api.bind(pod["metadata"]["namespace"], pod["metadata"]["name"], target)

    def set_phase(self, pod: dict, phase: str, *, ready: bool = False, restarts: int = 0,
                  exit_code: int | None = None) -> dict:
        pod = clone(self.api.get("pods", pod["metadata"]["name"], pod["metadata"]["namespace"]))
        stamp = rfc3339(self.now)
        status = pod.setdefault("status", {})
        status["phase"] = phase
        status.setdefault("startTime", stamp)
        conds = [c for c in status.get("conditions") or [] if c["type"] != "Ready"]
        old_ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
        since = old_ready["lastTransitionTime"] if old_ready and (old_ready["status"] == "True") == ready else stamp
        conds.append({"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": None,
                      "lastTransitionTime": since})
        status["conditions"] = conds
        state: dict = {"running": {"startedAt": stamp}}
        if exit_code is not None:
            state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                    "startedAt": stamp, "finishedAt": stamp}}
        status["containerStatuses"] = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": ready,
                                        "restartCount": restarts, "started": ready, "state": state}
                                       for c in pod["spec"]["containers"]]
        return self.api.update("pods", pod, pod["metadata"]["namespace"], subresource="status", manager="kubelet")

    def run_all(self, ready: bool = True) -> None:
        for pod in self.api.list("pods"):
            if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp") and \
                    pod["status"].get("phase") == "Pending":
                self.set_phase(pod, "Running", ready=ready)

    def confirm_deletions(self) -> None:
        """The kubelet's last step of a graceful deletion: the pod goes away."""
        for pod in self.api.list("pods"):
            if pod["metadata"].get("deletionTimestamp"):
                self.api.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"],
                                grace_period_seconds=0)

    async def kubelet(self, rounds: int = 6) -> None:
        """Bind, run (ready) and finish deletions until nothing changes."""
        for _ in range(rounds):
            await self.settle()
            self.bind_all()
            self.run_all()
            self.confirm_deletions()
        await self.settle()

    def events(self, namespace: str = "default", **fields) -> list[tuple[str, str]]:
        out = []
        for e in self.api.list("events", namespace):
            if all((e["involvedObject"].get(k) if k != "source" else e["source"]["component"]) == v
                   for k, v in fields.items()):
                out.append((e["reason"], e["message"]))
        return out


def _affinity_node(pod: dict) -> str | None:
    """A daemon pod's target node (its metadata.name matchFields term)."""
    required = ((((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution")) or {})
    for term in required.get("nodeSelectorTerms") or ():
        for f in term.get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("operator") == "In":
                return f["values"][0]
    return None
