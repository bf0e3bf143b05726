"""The node agent: the kubelet of every node of the embedded cluster (see agent.py)."""
from .agent import Kubelet

__all__ = ["Kubelet"]
