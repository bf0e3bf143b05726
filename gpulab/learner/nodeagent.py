"""What a notebook says when a command needs a node agent that the pod's node does not have.

``kubectl exec``, ``attach``, ``port-forward`` and ``logs`` go through the API server to the kubelet of the pod's node
(``https://NODE:10250/exec/...``, ``/containerLogs/...``). On the upstream engine the nodes are KWOK's, which run no
containers and serve nothing there, so kubectl fails with the API server's dial error (an address lookup of the
node's name). That error says nothing a learner can act on; this module recognises it, asks the API whether the node
is one KWOK manages (the ``kwok.x-k8s.io/node`` annotation), and if so gives the sentence that is true instead. On
any other cluster the error stays as kubectl printed it: there it is a real fault.
"""
from __future__ import annotations

import re

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# The kubelet request in the API server's error: node, then what was asked of it.
KUBELET_REQUEST = re.compile(r"https://([^/:\"]+):\d+/(exec|attach|portForward|containerLogs|run)/")
WHAT = {"exec": "command to run, and so no output", "run": "command to run, and so no output",
        "attach": "process to attach to", "portForward": "port to forward to", "containerLogs": "logs to show"}


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
            f"engine), which runs no containers: there is no {WHAT[found.group(2)]}. The embedded cluster, kind and "
            "real clusters answer this command; here the pod's status is what the API shows of it.\n")
