"""The embedded cluster's server process, with the add-ons that run inside it.

``gpulab cluster up`` starts ``python -m gpulab.embedded``: the cluster of
``gpulab.cluster`` plus, once a ``ClusterPolicy`` CRD is served, the GPU stack
emulation reconciling in a thread through a kubeconfig, the same way
``gpulab gpustack run`` drives kind or any other cluster. The cluster knows
nothing of it.
"""
from __future__ import annotations

import sys

from .cluster import serve
from .gpustack import addon as gpustack_addon


def main(argv: list[str] | None = None) -> int:
    return serve.main(argv, addons=[gpustack_addon.start])


if __name__ == "__main__":
    sys.exit(main())
