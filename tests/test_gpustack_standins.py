"""Stand-in images: on a cluster whose kubelets are real (kind), every pod the GPU stack emulation creates runs
``registry.k8s.io/pause:3.10`` or ``docker.io/library/busybox:1.36``, nothing else about it changes.

There is no Docker here, so the end-to-end test lets an embedded cluster without its in-process GPU stack stand in
for kind, as ``tests/test_kind.py`` does: a fake ``kind`` hands over its kubeconfig, ``gpulab kind up`` annotates
the GPU nodes, marks the cluster for stand-ins and starts ``gpulab gpustack run --kubeconfig K`` as a separate
process; ``gpulab install gpu-operator`` then has to bring the ClusterPolicy to ``ready`` and the H100 node to 8
GPUs with every pod in ``gpu-operator`` on a stand-in image. The pure test pins that only images, commands and
arguments (and the annotation keeping the real images) differ from the upstream-shaped objects.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest

from gpulab.gpustack import chart, install, operator, standins, validator

from .conftest import KUBECTL
from .test_kind import gpulab, start_stand_in, stop_stand_in, wait_for

PAUSE = "registry.k8s.io/pause:3.10"
BUSYBOX = "docker.io/library/busybox:1.36"
H100_NODE = "gpulab-worker2"
VERSION = "v25.10.1"
# One pod of each: the chart's Deployments and DaemonSet, the operands, the CUDA validator.
APPS = {"gpu-operator", "node-feature-discovery/master", "node-feature-discovery/worker", "node-feature-discovery/gc",
        "nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset", "nvidia-operator-validator",
        "nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-mig-manager",
        "nvidia-cuda-validator"}


def containers(pod: dict) -> list[dict]:
    return pod["spec"].get("initContainers", []) + pod["spec"]["containers"]


def without_images(obj: dict) -> dict:
    """``obj`` less what stand-ins may change: images, commands, arguments, the stand-in annotation."""
    out = copy.deepcopy(obj)
    pod = out["spec"]["template"] if "template" in out["spec"] else out
    notes = pod["metadata"].get("annotations") or {}
    notes.pop(standins.STAND_IN_ANNOTATION, None)
    if not notes:
        pod["metadata"].pop("annotations", None)
    for container in containers(pod):
        for key in ("image", "command", "args"):
            container.pop(key, None)
    return out


def upstream_and_stand_in_objects() -> list[tuple[dict, dict]]:
    values = chart.values_for(VERSION, {})
    policy = chart.cluster_policy(values, version=VERSION, release_name="gpu-operator")
    policy["metadata"]["uid"] = "0d3c5a9e-policy"
    rendered = install.render(values, VERSION, "gpu-operator", "gpu-operator")
    pairs = [(real, standins.stand_in_workload(real)) for resource, real in rendered
             if resource.plural in ("deployments", "daemonsets")]
    real_ds = [o for r, o in operator.desired_objects(policy, "gpu-operator", []) if r.plural == "daemonsets"]
    stand_in_ds = [o for r, o in operator.desired_objects(policy, "gpu-operator", [], stand_ins=True)
                   if r.plural == "daemonsets"]
    pairs += list(zip(real_ds, stand_in_ds))
    validator_ds = next(o for o in real_ds if o["metadata"]["name"] == "nvidia-operator-validator")
    stand_in_validator = next(o for o in stand_in_ds if o["metadata"]["name"] == "nvidia-operator-validator")
    pairs.append((validator.cuda_workload_pod(validator_ds, H100_NODE, "gpu-operator", None, ()),
                  validator.cuda_workload_pod(stand_in_validator, H100_NODE, "gpu-operator", None, (),
                                              stand_ins=True)))
    return pairs


def test_stand_ins_change_only_images_commands_and_arguments():
    pairs = upstream_and_stand_in_objects()
    assert len(pairs) == 4 + 8 + 1     # the chart's workloads, the operands (MPS control daemon included), validator
    for real, stood_in in pairs:
        assert without_images(stood_in) == without_images(real)
        real_pod = real["spec"]["template"] if "template" in real["spec"] else real
        pod = stood_in["spec"]["template"] if "template" in stood_in["spec"] else stood_in
        for real_container, container in zip(containers(real_pod), containers(pod)):
            assert standins.real_image(pod, container) == real_container["image"]
    driver = next(s for _, s in pairs if s["metadata"].get("name") == "nvidia-driver-daemonset")["spec"]["template"]
    assert [(c["image"], c.get("command"), c.get("args")) for c in containers(driver)] == [
        (BUSYBOX, ["sh", "-c", "echo 'Unloading NVIDIA driver kernel modules...done'; exit 0"], None),
        (PAUSE, None, None)]
    cuda = pairs[-1][1]
    assert [(c["image"], c["command"], c.get("args")) for c in containers(cuda)] == [
        (BUSYBOX, ["sh", "-c", "echo 'Test PASSED'; exit 0"], None),
        (BUSYBOX, ["sh", "-c", "echo 'cuda workload validation is successful'; exit 0"], None)]
    assert standins.real_image(cuda, cuda["spec"]["containers"][0]) == \
        "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.1"


@pytest.mark.slow
def test_on_kind_the_stack_runs_stand_in_images_and_still_becomes_ready(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    home = tmp_path / "home"
    _, path = start_stand_in(tmp_path, bin_dir)
    kubeconfig = home / "kind" / "gpulab" / "kubeconfig"

    def kubectl(*args: str) -> str:
        return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                              check=True, timeout=60, env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kc")}).stdout

    def get(*args: str) -> dict:
        return json.loads(kubectl("get", *args, "-o", "json"))

    def pods() -> list[dict]:
        return get("pods", "-n", "gpu-operator")["items"]

    def app(pod: dict) -> str:
        labels = pod["metadata"]["labels"]
        return labels.get("app") or f"{labels['app.kubernetes.io/name']}/{labels['role']}"

    try:
        gpulab("kind", "up", path=path, home=home, check=True)
        assert get("configmap", "-n", "kube-system", "gpulab-gpustack")["data"] == {"standInImages": "true"}
        installed = gpulab("install", "gpu-operator", "--kubeconfig", str(kubeconfig), path=path, home=home,
                           check=True, timeout=180)
        assert "started the GPU stack emulation in the background" not in installed.stderr

        wait_for(lambda: get("node", H100_NODE)["status"]["allocatable"].get("nvidia.com/gpu") == "8",
                 timeout=90, what="8 allocatable H100s")
        wait_for(lambda: get("clusterpolicy", "cluster-policy").get("status", {}).get("state") == "ready"
                 and get("node", H100_NODE)["metadata"]["labels"].get("nvidia.com/mig.config.state") == "success",
                 timeout=90, what="cluster-policy ready")
        running = wait_for(lambda: (lambda ps: ps if {app(p) for p in ps} >= APPS and all(
            p["status"].get("phase") == ("Succeeded" if app(p) == "nvidia-cuda-validator" else "Running")
            for p in ps) else None)(pods()), timeout=60, what="every gpu-operator pod up")

        every_container = [c for p in running for c in containers(p)]
        assert {c["image"] for c in every_container} == {PAUSE, BUSYBOX}
        for c in every_container:
            if c["image"] == PAUSE:
                assert ("command" not in c and "args" not in c), c
            else:
                assert c["command"][:2] == ["sh", "-c"] and c["command"][2].startswith("echo '") and \
                    c["command"][2].endswith("'; exit 0") and "args" not in c, c
        cuda = next(p["metadata"]["name"] for p in running if app(p) == "nvidia-cuda-validator")
        assert kubectl("logs", "-n", "gpu-operator", cuda, "-c", "cuda-validation") == "Test PASSED\n"
        assert kubectl("logs", "-n", "gpu-operator", cuda) == "cuda workload validation is successful\n"

        labels = get("node", H100_NODE)["metadata"]["labels"]
        assert {k: labels[k] for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.count",
                                       "nvidia.com/cuda.driver-version.full")} == {
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
            "nvidia.com/cuda.driver-version.full": "595.91.07"}
    finally:
        gpulab("kind", "down", path=path, home=home)
        stop_stand_in(tmp_path, home)
