"""The node agent: the kubelet of every node of the embedded cluster (see kubelet.py)."""
from .kubelet import Kubelet

__all__ = ["Kubelet"]
