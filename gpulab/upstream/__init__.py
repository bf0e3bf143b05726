"""The upstream engine: Kubernetes' own control plane, built from source, with KWOK's nodes.

``gpulab cluster up --engine upstream`` runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler of the
pinned release (:mod:`.build` builds them from ``cluster-setup/upstream/``), started by KWOK's ``kwokctl`` with
its binary runtime, and kwok as the node agent of the course's topology (:mod:`.engine`). The GPU stack emulation
drives it through its API as it drives kind (``gpulab gpustack run --kubeconfig``). It is the judge the embedded
cluster is measured against: where the two disagree, this one is right.
"""
from __future__ import annotations

import json

from ..contract import cluster_dir

ENGINE = "upstream"


def engine_of(name: str) -> str | None:
    """Which engine cluster ``name`` was created with (None: no such cluster); embedded unless its ``cluster.json``
    records another. Cheap on purpose: ``gpulab cluster up`` asks it before starting either engine."""
    try:
        return json.loads((cluster_dir(name) / "cluster.json").read_text()).get("engine", "embedded")
    except (OSError, ValueError):
        return None
