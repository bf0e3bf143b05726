"""Stand-in images for the emulation's pods on clusters whose kubelets really run them (kind).

On the embedded cluster gpulab's node agent runs every pod and emulates NVIDIA's
images and programs, so the emulation's pods carry NVIDIA's real images. On kind
a real kubelet and containerd run them: the driver image is gigabytes and needs a
GPU, and ``nvcr.io/nvidia/gpu-operator`` would start the real operator, which
would fight the emulation. There every pod template the emulation builds gets
small images that run on any machine, while names, labels, selectors,
tolerations, environment, volumes and structure stay upstream's:

* a long-running container runs ``registry.k8s.io/pause`` (no command: its
  entrypoint runs until stopped);
* a one-shot container (init containers, the CUDA validator's containers) runs
  ``busybox`` with ``sh -c "echo <what the real one reports as it ends>; exit 0"``.

The real image of each replaced container stays in the pod template's
``gpulab.dev/stand-in-for`` annotation (JSON, container name -> image), so what
the stack reads from an image (a node's driver version is its driver pod's
image tag) still reads the same; :func:`real_image` is how to read it.

Which clusters: ``gpulab kind up`` writes the ConfigMap
``kube-system/gpulab-gpustack`` with ``standInImages: "true"``
(:func:`mark_cluster`); the embedded cluster never has it. The builders ask
(:func:`uses_stand_ins`) through the API when they create objects, so the
emulation needs no option and a cluster says once what it is.

gpulab's own deployment device: no library or upstream component does this.
"""
from __future__ import annotations

import copy
import json
import shlex

from .. import kubeclient

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
BUSYBOX_IMAGE = "docker.io/library/busybox:1.36"
FLAG_NAMESPACE = "kube-system"
FLAG_NAME = "gpulab-gpustack"
FLAG_KEY = "standInImages"
STAND_IN_ANNOTATION = "gpulab.dev/stand-in-for"


def uses_stand_ins(kube: kubeclient.Kube) -> bool:
    """Whether this cluster's pods must run stand-in images (its ConfigMap ``kube-system/gpulab-gpustack`` says so)."""
    flag = kube.try_get(kubeclient.CONFIGMAPS, FLAG_NAME, FLAG_NAMESPACE)
    return ((flag or {}).get("data") or {}).get(FLAG_KEY) == "true"


def mark_cluster(kube: kubeclient.Kube) -> None:
    """Record that this cluster's kubelets are real: from now on the emulation builds pods with stand-in images."""
    kube.ensure(kubeclient.CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": FLAG_NAME, "namespace": FLAG_NAMESPACE,
                     "labels": {"app.kubernetes.io/managed-by": "gpulab"}},
        "data": {FLAG_KEY: "true"}})


def stand_in(container: dict, *, one_shot: bool, says: str = "") -> dict:
    """``container`` with a stand-in image: busybox echoing ``says`` then exiting 0, or pause running forever."""
    out = {k: v for k, v in container.items() if k not in ("command", "args")}
    if one_shot:
        out["image"] = BUSYBOX_IMAGE
        out["command"] = ["sh", "-c", f"echo {shlex.quote(says)}; exit 0"]
    else:
        out["image"] = PAUSE_IMAGE
    return out


def stand_in_pod(pod: dict, one_shot: dict[str, str]) -> dict:
    """A Pod or pod template with stand-in images: containers named in ``one_shot`` echo their line and exit,
    the others run pause; every init container must be one-shot."""
    spec = pod["spec"]
    replaced = {c["name"]: c["image"] for c in spec.get("initContainers", []) + spec["containers"]}
    new_spec = {**spec, "containers": [stand_in(c, one_shot=c["name"] in one_shot, says=one_shot.get(c["name"], ""))
                                       for c in spec["containers"]]}
    if "initContainers" in spec:
        new_spec["initContainers"] = [stand_in(c, one_shot=True, says=one_shot[c["name"]])
                                      for c in spec["initContainers"]]
    metadata = copy.deepcopy(pod.get("metadata") or {})
    metadata.setdefault("annotations", {})[STAND_IN_ANNOTATION] = json.dumps(replaced, separators=(",", ":"))
    return {**pod, "metadata": metadata, "spec": new_spec}


def stand_in_workload(obj: dict, one_shot: dict[str, str] | None = None) -> dict:
    """A Deployment or DaemonSet whose pod template has stand-in images (see :func:`stand_in_pod`)."""
    return {**obj, "spec": {**obj["spec"], "template": stand_in_pod(obj["spec"]["template"], one_shot or {})}}


def real_image(pod: dict, container: dict) -> str:
    """The image ``container`` of this Pod or pod template stands for: its own unless a stand-in replaced it."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    replaced = json.loads(notes.get(STAND_IN_ANNOTATION) or "{}")
    return replaced.get(container["name"], container.get("image", ""))
