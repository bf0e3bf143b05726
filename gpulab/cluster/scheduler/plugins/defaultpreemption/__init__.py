"""DefaultPreemption: the PostFilter plugin that makes room for a pod by evicting lower-priority pods.

``plugin`` is the plugin and the execution of its choice, ``rules`` its own
rules (eligibility, victims of one node, PDBs), ``evaluator`` the candidate
search shared upstream by every preemption plugin (framework/preemption).
"""
from .plugin import NAME, DefaultPreemption

__all__ = ["NAME", "DefaultPreemption"]
