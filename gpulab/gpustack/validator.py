"""The operator validator's CUDA workload: the ``nvidia-cuda-validator-xxxxx`` pod that ends ``Completed``.

NVIDIA/gpu-operator ``validator/main.go`` (``CUDA.runWorkload``) loads
``validator/manifests/cuda-workload-validation.yaml``, fills in the validator
image, copies the validator DaemonSet's owner references and tolerations, pins
the pod to its node with ``spec.nodeName`` and creates it; its init container
runs ``vectorAdd`` with ``NVIDIA_VISIBLE_DEVICES=all``. The container runtime
gives such a container every GPU of the node without a resource request; the
emulation says so with a device allocation naming all of them, so the node
agent's ``vectorAdd`` finds a GPU and the pod completes. On a cluster whose
kubelets are real (kind) both containers run a stand-in that echoes the last
line the real one prints (:mod:`.standins`).
"""
from __future__ import annotations

from ..contract import ALLOCATION_ANNOTATION, Allocation
from . import standins
from .allocation import container_answer
from .deviceplugin import physical_devices
from .mig import Layout

CUDA_VALIDATOR_APP = "nvidia-cuda-validator"
# vectorAdd's verdict (CUDA samples) and the manifest's echo, for stand-in images.
_STAND_IN_LINES = {"cuda-validation": "Test PASSED", "nvidia-cuda-validator": "cuda workload validation is successful"}


def cuda_workload_pod(validator_ds: dict, node_name: str, namespace: str, gpus, layout: Layout, *,
                      stand_ins: bool = False) -> dict:
    template = validator_ds["spec"]["template"]["spec"]
    image = standins.real_image(validator_ds["spec"]["template"], template["containers"][0])
    pull = template["containers"][0].get("imagePullPolicy", "IfNotPresent")
    every_gpu = sorted({d.physical for devs in physical_devices(node_name, layout, "mixed").values() for d in devs})
    allocation = Allocation({"cuda-validation": container_answer({"nvidia.com/gpu": every_gpu}, "all", {})})
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": f"{CUDA_VALIDATOR_APP}-", "namespace": namespace,
            "labels": {"app": CUDA_VALIDATOR_APP},
            "annotations": {"nvidia.cdi.k8s.io/container.cuda-validation": "management.nvidia.com/gpu=all",
                            ALLOCATION_ANNOTATION: allocation.to_json()},
            "ownerReferences": list(validator_ds["metadata"].get("ownerReferences") or []),
        },
        "spec": {
            "tolerations": list(template.get("tolerations") or []),
            "restartPolicy": "OnFailure",
            "serviceAccountName": "nvidia-operator-validator",
            "nodeName": node_name,
            "initContainers": [{
                "name": "cuda-validation", "image": image, "imagePullPolicy": pull,
                "command": ["sh", "-c"], "args": ["vectorAdd"],
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                "securityContext": {"privileged": True},
            }],
            "containers": [{
                "name": "nvidia-cuda-validator", "image": image, "imagePullPolicy": pull,
                "command": ["sh", "-c"], "args": ["echo cuda workload validation is successful"],
                "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
            }],
        },
    }
    return standins.stand_in_pod(pod, _STAND_IN_LINES) if stand_ins else pod
