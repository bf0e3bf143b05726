"""What a notebook says when a command needs a node agent, or a container, that the pod's node does not have.

``kubectl exec``, ``attach``, ``port-forward`` and ``logs`` go through the API server to the kubelet of the pod's node
(``https://NODE:10250/exec/...``, ``/containerLogs/...``). On the upstream engine the nodes are KWOK's, which run no
containers and serve nothing there, so kubectl fails with the API server's dial error (an address lookup of the
node's name). That error says nothing a learner can act on; this module recognises it, asks the API whether the node
is one KWOK manages (the ``kwok.x-k8s.io/node`` annotation), and if so gives the sentence that is true instead. On
any other cluster the error stays as kubectl printed it: there it is a real fault.

``kubectl wait`` for what only a running container decides (a container's state, a pod's ``Failed`` phase) would
only time out on such a node; :func:`explain_wait` says so before it starts.
"""
from __future__ import annotations

import re
import shlex
import time

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# The kubelet request in the API server's error: node, then what was asked of it.
KUBELET_REQUEST = re.compile(r"https://([^/:\"]+):\d+/(exec|attach|portForward|containerLogs|run)/")
WHAT = {"exec": "there is no command to run, and so no output", "run": "there is no command to run, and so no output",
        "attach": "there is no process to attach to", "portForward": "there is no port to forward to",
        "containerLogs": "there are no logs to show"}


def kwok_node(api_client, name: str) -> bool:
    """Whether node ``name`` is one KWOK manages (False when it cannot be read)."""
    from kubernetes import client
    from kubernetes.client import ApiException

    try:
        node = client.CoreV1Api(api_client).read_node(name)
    except (ApiException, ValueError):
        return False
    return KWOK_ANNOTATION in (node.metadata.annotations or {})


def explain(command: str, output: str, api_client) -> str | None:
    """The note that replaces ``output`` of ``kubectl COMMAND`` when it failed only because the pod's node is
    KWOK's; None otherwise."""
    found = KUBELET_REQUEST.search(output)
    if not found or not kwok_node(api_client, found.group(1)):
        return None
    return (f"kubectl {command}: the pod's node {found.group(1)} is a KWOK node (this cluster is gpulab's upstream "
            f"engine), which runs no containers: {WHAT[found.group(2)]}. The embedded cluster, kind and "
            "real clusters answer this command; here the pod's status is what the API shows of it.\n")


SCHEDULING_SECONDS = 10.0
# What only a container decides: its state (waiting, terminated, a reason) or the pod failing.
CONTAINER_OUTCOME = re.compile(r"^--for=jsonpath=.*(containerStatuses|\.status\.phase\}?'?=Failed)")


def explain_wait(argv: list[str], api_client) -> str | None:
    """The note that replaces ``kubectl wait`` for a container's outcome on ``pod/NAME`` whose node is KWOK's;
    None for any other wait (which then runs)."""
    if not argv or argv[0] != "wait" or not any(CONTAINER_OUTCOME.match(a) for a in argv):
        return None
    from kubernetes import client
    from kubernetes.client import ApiException

    targets = [a.split("/", 1)[1] for a in argv[1:] if a.startswith(("pod/", "pods/"))]
    namespace = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-n", "--namespace")), "default")
    if len(targets) != 1:
        return None
    deadline = time.monotonic() + SCHEDULING_SECONDS       # a pod applied a moment ago: wait for its node
    node = None
    while node is None and time.monotonic() < deadline:
        try:
            node = client.CoreV1Api(api_client).read_namespaced_pod(targets[0], namespace).spec.node_name
        except (ApiException, ValueError):
            return None
        if node is None:
            time.sleep(0.2)
    if not node or not kwok_node(api_client, node):
        return None
    return (f"kubectl {shlex.join(argv)}: pod {targets[0]} runs on {node}, a KWOK node (this cluster is gpulab's "
            "upstream engine), which runs no containers: what this waits for is decided by the container, so here "
            "it would only time out. The embedded cluster, kind and real clusters show it.\n")
