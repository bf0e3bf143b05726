"""What a learner's notebook uses: connect to a cluster, run kubectl, wait for a condition.

Kept apart from ``gpulab.cluster``: this package reaches any cluster through a
kubeconfig, the official ``kubernetes`` client and the upstream ``kubectl``.
"""
from __future__ import annotations

from .connection import ConnectError, Connection, connect, current
from .shell import KubectlError, KubectlResult, kubectl
from .waiting import Progress, wait_for

__all__ = ["ConnectError", "Connection", "KubectlError", "KubectlResult", "Progress", "connect", "current",
           "kubectl", "wait_for"]
