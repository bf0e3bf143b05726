"""The composition root: the embedded cluster with the GPU stack, as ``gpulab cluster up`` runs it.

``gpulab.cluster`` knows nothing of GPUs; this module is where the two meet, and the only one that
imports both:

* :func:`up` starts a cluster whose topology files may say ``gpu: {model, count}`` and whose default is
  the course's topology (:mod:`gpulab.gpustack.topology`), both handed to the cluster's topology reader;
* :func:`main` is the server process (``python -m gpulab.embedded``): the cluster of
  :mod:`gpulab.cluster.serve`, whose node agent also pulls the GPU stack's images and runs their programs
  (:mod:`gpulab.gpustack.nodeimages`), plus, once a ``ClusterPolicy`` CRD is served, the GPU stack emulation
  reconciling in a thread through a kubeconfig, the same way ``gpulab gpustack run`` drives kind or any
  other cluster. The GPU stack's views of the GPUs' use (:mod:`gpulab.gpustack.observe`) are handed to
  the node agent here: the dcgm-exporter's metrics as a content provider of its HTTP port, ``nvidia-smi``
  as a native program.

Importing it is cheap (``gpulab cluster up`` does); the server's modules load in :func:`main`, or up
front with :func:`load_server` (the grading fork server).
"""
from __future__ import annotations

import sys
from pathlib import Path

from .cluster import lifecycle
from .cluster.topology import TopologyFormat
from .gpustack import topology as gpu_topology

SERVER_MODULE = "gpulab.embedded"
# The content provider the dcgm-exporter image's /metrics route names (gpustack/data/images.yaml).
DCGM_METRICS_PROVIDER = "dcgm-exporter-metrics"
TOPOLOGY = TopologyFormat(default=gpu_topology.DEFAULT_TOPOLOGY, node_fields=gpu_topology.NODE_FIELDS)


def up(name: str = lifecycle.DEFAULT_NAME, *, server_module: str = SERVER_MODULE, **options) -> Path:
    """:func:`gpulab.cluster.lifecycle.up` with the GPU stack's topology format (``topology=FILE`` or the
    course's default); the kubeconfig path."""
    return lifecycle.up(name, topology_format=TOPOLOGY, server_module=server_module, **options)


def node_images() -> tuple:
    """The images the node agent adds to its own: the GPU stack's, with their native programs."""
    from .cluster.kubelet.images import CatalogSource
    from .gpustack import nodeimages

    return (CatalogSource(nodeimages.document(), nodeimages.PROGRAMS),)


def load_server() -> None:
    """Import what :func:`main` runs, so a process that forks servers pays for it once."""
    from .cluster import serve  # noqa: F401
    from .gpustack import addon, nodeimages  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    from .cluster import serve
    from .cluster.kubelet.serving import register_provider
    from .gpustack import addon, observe

    register_provider(DCGM_METRICS_PROVIDER, observe.dcgm_metrics)
    return serve.main(argv, addons=[addon.start], images=node_images)


if __name__ == "__main__":
    sys.exit(main())
