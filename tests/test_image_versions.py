"""Emulated images honour their arguments and carry the release their tag names, through the real kubectl.

nginx's options as src/core/nginx.c parses them (``-v`` prints ``nginx version: nginx/1.27.5`` to stderr and
exits), and the release of each tag as docker-library/official-images published it (``nginx:1.27`` is 1.27.5,
``python:3.12`` is 3.12.11, a CUDA image's tag begins with its release). Sources: docs/fidelity.md#kubelet.
"""
from __future__ import annotations

import re

import pytest

from .conftest import wait_for
from .test_streaming import PortForward

MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: v1
kind: Pod
metadata: {name: stable}
spec:
  containers: [{name: nginx, image: "nginx:stable"}]
---
apiVersion: v1
kind: Pod
metadata: {name: py}
spec:
  containers: [{name: py, image: "python:3.12-slim", command: [sleep, infinity]}]
---
apiVersion: v1
kind: Pod
metadata: {name: cuda}
spec:
  restartPolicy: Never
  containers: [{name: cuda, image: "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", args: [printenv, CUDA_VERSION]}]
---
apiVersion: v1
kind: Pod
metadata: {name: version-only}
spec:
  restartPolicy: Never
  containers: [{name: nginx, image: "nginx:1.26", command: [nginx, -v]}]
"""


@pytest.fixture(scope="module")
def pods(cluster):
    cluster.kubectl("apply", "-f", "-", input=MANIFEST)
    cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/stable", "pod/py", "--timeout=60s")
    return cluster


def test_nginx_v_prints_the_tags_release_to_stderr_and_exits(pods):
    proc = pods.kubectl("exec", "deploy/web", "--", "nginx", "-v", timeout=20)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "nginx version: nginx/1.27.5\n")
    proc = pods.kubectl("exec", "stable", "--", "nginx", "-v", timeout=20)
    assert proc.stderr == "nginx version: nginx/1.28.0\n"


def test_nginx_options_as_its_command_line_parser_reads_them(pods):
    proc = pods.kubectl("exec", "deploy/web", "--", "nginx", "-t", timeout=20)
    assert (proc.returncode, proc.stderr) == (0, "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
                                                 "nginx: configuration file /etc/nginx/nginx.conf test is successful\n")
    proc = pods.kubectl("exec", "deploy/web", "--", "nginx", "-x", check=False, timeout=20)
    assert (proc.returncode, proc.stderr) == (1, 'nginx: invalid option: "x"\ncommand terminated with exit code 1\n')
    proc = pods.kubectl("exec", "deploy/web", "--", "nginx", "-s", "restart", check=False, timeout=20)
    assert proc.stderr.startswith('nginx: invalid option: "-s restart"\n')
    help_text = pods.kubectl("exec", "deploy/web", "--", "nginx", "-h", timeout=20).stderr
    assert help_text.startswith("nginx version: nginx/1.27.5\nUsage: nginx [-?hvVtTq] [-s signal] [-p prefix]\n")
    assert "  -c filename   : set configuration file (default: /etc/nginx/nginx.conf)\n" in help_text


def test_nginx_reports_the_tags_release_in_its_log_and_server_header(pods):
    pod = pods.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}").stdout
    assert re.search(r"\[notice\] 1#1: nginx/1\.27\.5\n", pods.kubectl("logs", pod).stdout)
    forward = PortForward(pods, f"pod/{pod}", 80)
    try:
        status, headers, _ = forward.get("/")
        _, _, missing = forward.get("/missing")
    finally:
        forward.stop()
    assert (status, headers["server"]) == (200, "nginx/1.27.5")
    assert b"<hr><center>nginx/1.27.5</center>" in missing


def test_nginx_v_as_the_containers_command_completes(pods):
    wait_for(lambda: pods.kubectl("get", "pod", "version-only", "-o", "jsonpath={.status.phase}").stdout == "Succeeded",
             what="the nginx -v pod to complete")
    assert pods.kubectl("logs", "version-only").stdout == "nginx version: nginx/1.26.3\n"


def test_python_and_cuda_images_carry_their_tags_release(pods):
    proc = pods.kubectl("exec", "py", "--", "python", "--version", timeout=20)
    assert (proc.returncode, proc.stdout) == (0, "Python 3.12.11\n")
    assert pods.kubectl("exec", "py", "--", "printenv", "PYTHON_VERSION").stdout == "3.12.11\n"
    wait_for(lambda: pods.kubectl("get", "pod", "cuda", "-o", "jsonpath={.status.phase}").stdout == "Succeeded",
             what="the CUDA pod to complete")
    log = pods.kubectl("logs", "cuda").stdout
    assert "\nCUDA Version 12.2.0\n" in log and log.endswith("\n12.2.0\n")
