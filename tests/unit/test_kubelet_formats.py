"""The node agent's pure parts: image references and the catalog, Go formats, back-off, phase, log errors."""
from __future__ import annotations

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.gofmt import rfc3339_nano
from gpulab.cluster.kubelet.backoff import Backoff
from gpulab.cluster.kubelet.images import InvalidReference, PullError, parse_reference
from gpulab.cluster.kubelet.logs import container_id_for_logs
from gpulab.cluster.kubelet.podstatus import get_phase
from test_kubelet_harness import CATALOG


@pytest.mark.parametrize("image,full", [
    ("busybox", "docker.io/library/busybox:latest"),
    ("nginx:1.27", "docker.io/library/nginx:1.27"),
    ("vllm/vllm-openai:v0.9.1", "docker.io/vllm/vllm-openai:v0.9.1"),
    ("index.docker.io/library/ubuntu:24.04", "docker.io/library/ubuntu:24.04"),
    ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1", "nvcr.io/nvidia/k8s-device-plugin:v0.18.1"),
    ("localhost:5000/team/app", "localhost:5000/team/app:latest"),
    ("busybox@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
])
def test_references_normalize_like_docker(image, full):
    assert parse_reference(image).full == full


@pytest.mark.parametrize("image,message", [
    ("Busybox", 'couldn\'t parse image name "Busybox": invalid reference format: repository name '
                "(library/Busybox) must be lowercase"),
    ("nginx:", 'couldn\'t parse image name "nginx:": invalid reference format'),
    ("my image", 'couldn\'t parse image name "my image": invalid reference format'),
])
def test_invalid_references(image, message):
    with pytest.raises(InvalidReference) as err:
        parse_reference(image)
    assert str(err.value) == message


@pytest.mark.parametrize("image", [
    "busybox:1.37", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "nvcr.io/nvidia/pytorch:24.05-py3",
    "nvcr.io/nvidia/tritonserver:24.05-py3", "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
    "nvcr.io/nvidia/gpu-operator:v25.10.1", "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1-ubuntu20.04", "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
    "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.1", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04",
    "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.13.1-ubuntu20.04", "registry.k8s.io/nfd/node-feature-discovery:v0.17.3",
    "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.32.7", "registry.k8s.io/pause:3.10",
])
def test_catalog_images_are_pullable(image):
    assert CATALOG.resolve(parse_reference(image)).size > 0


def test_pull_errors_per_registry():
    with pytest.raises(PullError) as err:
        CATALOG.resolve(parse_reference("nvcr.io/nvidia/nope:1"))
    assert str(err.value) == (
        'failed to pull and unpack image "nvcr.io/nvidia/nope:1": failed to resolve reference "nvcr.io/nvidia/nope:1": '
        "failed to authorize: failed to fetch anonymous token: unexpected status from GET request to "
        "https://nvcr.io/proxy_auth?scope=repository%3Anvidia%2Fnope%3Apull&service=nvcr.io: 401 Unauthorized")
    with pytest.raises(PullError) as err:
        CATALOG.resolve(parse_reference("localhost:5000/app:1"))
    assert str(err.value).endswith('failed to do request: Head "https://localhost:5000/v2/app/manifests/1": dial tcp '
                                   "127.0.0.1:5000: connect: connection refused")


def test_rfc3339_nano_trims_trailing_zeros():
    assert rfc3339_nano(1_767_225_600_120_000_000) == "2026-01-01T00:00:00.12Z"
    assert rfc3339_nano(1_767_225_600_000_000_000) == "2026-01-01T00:00:00Z"


def test_backoff_doubles_caps_and_expires():
    b = Backoff(10, 300)
    assert not b.in_backoff_since("k", 0, 0)
    b.next("k", 0, 0)
    assert b.get("k") == 10 and b.in_backoff_since("k", 5, 10) and not b.in_backoff_since("k", 5, 15)
    for t in range(1, 10):
        b.next("k", t, t)
    assert b.get("k") == 300
    b.next("k", 1000, 1000)   # idle for more than twice the maximum: starts over
    assert b.get("k") == 10


def _status(name, state, last=None):
    return {"name": name, "state": state, "lastState": {"terminated": last} if last else {}}


@pytest.mark.parametrize("policy,states,terminal,phase", [
    ("Always", [{"running": {}}], False, "Running"),
    ("Always", [{"waiting": {"reason": "ContainerCreating"}}], False, "Pending"),
    ("Always", [{"terminated": {"exitCode": 1}}], False, "Running"),
    ("Never", [{"terminated": {"exitCode": 1}}], False, "Failed"),
    ("OnFailure", [{"terminated": {"exitCode": 0}}], False, "Succeeded"),
    ("OnFailure", [{"terminated": {"exitCode": 2}}], False, "Running"),
    ("Always", [{"terminated": {"exitCode": 0}}], True, "Succeeded"),
])
def test_get_phase(policy, states, terminal, phase):
    pod = {"spec": {"restartPolicy": policy, "containers": [{"name": f"c{i}"} for i in range(len(states))]}}
    statuses = [_status(f"c{i}", s) for i, s in enumerate(states)]
    assert get_phase(pod, statuses, terminal) == phase


def test_a_pod_with_a_failed_init_container_and_restart_never_fails():
    pod = {"spec": {"restartPolicy": "Never", "initContainers": [{"name": "init"}], "containers": [{"name": "c"}]}}
    statuses = [_status("init", {"terminated": {"exitCode": 1}}), _status("c", {"waiting": {"reason": "PodInitializing"}})]
    assert get_phase(pod, statuses, False) == "Failed"


@pytest.mark.parametrize("state,message", [
    ({"waiting": {"reason": "ErrImagePull"}}, 'container "c" in pod "p" is waiting to start: image can\'t be pulled'),
    ({"waiting": {"reason": "ImagePullBackOff"}}, 'container "c" in pod "p" is waiting to start: trying and failing '
                                                  "to pull image"),
    ({"waiting": {"reason": "PodInitializing"}}, 'container "c" in pod "p" is waiting to start: PodInitializing'),
])
def test_log_errors_of_containers_that_did_not_start(state, message):
    pod = {"metadata": {"name": "p"}, "status": {"containerStatuses": [{"name": "c", "state": state, "lastState": {}}]}}
    with pytest.raises(ApiError) as err:
        container_id_for_logs(pod, "c", previous=False)
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", message)
