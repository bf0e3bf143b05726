"""gpulab: GPUs on Kubernetes, hands on.

What a notebook needs::

    import gpulab
    gpulab.connect()                          # the embedded cluster (started if needed), or your kubeconfig
    gpulab.kubectl("get nodes -o wide")       # the upstream kubectl, output printed as it comes
    gpulab.wait_for(gpulab.conditions.clusterpolicy_ready())
    gpulab.check("lab02.pools_labelled")      # Result: passed, reason, hint

Names are imported on first use: ``import gpulab`` stays cheap, and the
embedded cluster's server process (which imports ``gpulab.cluster``) never
loads the Kubernetes client or Jupyter.
"""
from __future__ import annotations

import importlib
import sys

# ``import kubernetes`` imports ``kubernetes.dynamic``, which imports ``kubernetes_validate`` if it is installed
# (it is: the embedded cluster reads its schemas), which imports jsonschema, which imports ``rfc3987_syntax`` if
# it is installed (JupyterLab's jupyter-events pulls it in) to check the "iri" string format. That module builds
# a Lark parser at import time: about 3 s of CPU in every kernel, CLI command and grading process, for a format
# no Kubernetes schema uses. Marking it absent (jsonschema then skips the "iri" check) keeps ``import kubernetes``
# under a second. Left alone when something imported it already.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

__all__ = ["check", "checks", "conditions", "connect", "kubectl", "labs", "wait_for", "widgets"]

_LAZY = {
    "connect": ("gpulab.learner.connection", "connect"),
    "kubectl": ("gpulab.learner.shell", "kubectl"),
    "wait_for": ("gpulab.learner.waiting", "wait_for"),
    "conditions": ("gpulab.learner.conditions", None),
    "checks": ("gpulab.checks", None),
    "widgets": ("gpulab.widgets", None),
    "labs": ("gpulab.labs", None),
}


def check(check_id: str, answer=None, **kwargs):
    """Run the check of one exercise on the connected cluster: ``gpulab.check("lab01.allocatable_gpus", 12)``."""
    from . import checks as checks_package

    return checks_package.run(check_id, checks_package.NO_ANSWER if answer is None else answer, **kwargs)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value
