"""Module 00: the notebook reaches a cluster."""
from __future__ import annotations

from .gpus import name
from .registry import check
from .result import Result, failed, passed


@check("setup.connected", "the notebook talks to a Kubernetes cluster")
def connected(cluster) -> Result:
    version = cluster.version()
    nodes = cluster.nodes()
    if not nodes:
        return failed(f"the API server at {cluster.api_client.configuration.host} answers, but the cluster has no "
                      "nodes, so nothing can run",
                      "an embedded cluster always has nodes: `gpulab cluster reset` then `gpulab cluster up`; on "
                      "kind, check `kind get nodes`")
    names = ", ".join(name(n) for n in nodes)
    return passed(f"connected to Kubernetes {version.get('gitVersion', '?')} at "
                  f"{cluster.api_client.configuration.host}: {len(nodes)} nodes ({names})")
