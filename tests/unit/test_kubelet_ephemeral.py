"""Ephemeral containers on the node agent: started once beside the running containers, never restarted, and
not started again when the node agent restarts after one has exited."""
from __future__ import annotations

import asyncio

from gpulab.cluster.kubelet import Kubelet
from test_kubelet_harness import SCALE, container, run, shell


def ephemeral(pod: dict) -> dict | None:
    return next(iter((pod.get("status") or {}).get("ephemeralContainerStatuses") or []), None)


def test_an_ephemeral_container_runs_once_and_stays_done_across_a_node_agent_restart():
    async def body(h):
        h.pod("app", [container(**shell("sleep 3600"))])
        await h.phase("app", "Running")
        h.api.patch("pods", "app", {"spec": {"ephemeralContainers": [
            {"name": "dbg", "image": "busybox", "targetContainerName": "c", **shell("echo probing; exit 4")}]}},
            "strategic", "default", subresource="ephemeralcontainers")
        done = await h.until(lambda: (s := ephemeral(h.get("app"))) and "terminated" in s["state"] and s,
                             what="the ephemeral container to exit")
        assert (done["state"]["terminated"]["exitCode"], done["restartCount"], done["ready"]) == (4, 0, False)
        assert h.api.logs("default", "app", {"container": "dbg"}) == "probing\n"
        pod = h.get("app")
        assert pod["status"]["phase"] == "Running" and [s["name"] for s in pod["status"]["containerStatuses"]] == ["c"]
        await h.stop()
        h.kubelet = Kubelet(h.api, scale=SCALE)
        h._task = asyncio.create_task(h.kubelet.run())
        await asyncio.sleep(1.2)
        after = ephemeral(h.get("app"))
        assert (after["containerID"], after["state"]) == (done["containerID"], done["state"])
    run(body)
