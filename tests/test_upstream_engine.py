"""The upstream engine through the commands a learner types: `gpulab cluster ... --engine upstream`, kubectl, and
`gpulab install gpu-operator` driving Kubernetes' own control plane (kube-apiserver, kube-scheduler,
kube-controller-manager and etcd built from source by `make upstream`) with KWOK's nodes."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, VENV_BIN, Cluster, require_upstream, wait_for

pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module", autouse=True)
def _built():
    require_upstream()


def gpulab(home: Path, *args: str, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "gpulab"), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "GPULAB_HOME": str(home), **(env or {})})


def components(home: Path) -> list[psutil.Process]:
    """Every process started for clusters under ``home`` (control plane, kwok, the GPU stack, stand-ins)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if str(home) in line:
            found.append(process)
    return found


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    home = tmp_path_factory.mktemp("upstream-engine")
    up = gpulab(home, "cluster", "up", "--engine", "upstream")
    assert up.returncode == 0, up.stderr
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    yield Cluster("gpulab", home, kubeconfig, home / "kubecache")
    gpulab(home, "cluster", "reset")
    assert wait_for(lambda: not components(home), timeout=30, what="no process left after reset")


def test_kubectl_version_is_the_real_release(upstream):
    from gpulab.upstream import build

    served = json.loads(upstream.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert served["gitVersion"] == build.versions()["kubernetes"] == "v1.37.2"
    assert (served["major"], served["minor"]) == ("1", "37")
    apiserver = [p for p in components(upstream.home) if Path(p.cmdline()[0]).name == "kube-apiserver"]
    assert [Path(p.cmdline()[0]).resolve() for p in apiserver] == [build.bin_dir() / "kube-apiserver"]
    status = gpulab(upstream.home, "cluster", "status")
    assert status.returncode == 0
    assert "engine: upstream" in status.stdout and "state: running" in status.stdout


def test_the_course_topology_as_kwok_nodes(upstream):
    nodes = json.loads(upstream.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert sorted(by_name) == ["gpulab-control-plane", "gpulab-worker", "gpulab-worker2", "gpulab-worker3"]
    assert all(c["status"] == "True" for n in nodes for c in n["status"]["conditions"] if c["type"] == "Ready")
    h100 = by_name["gpulab-worker2"]["metadata"]["annotations"]
    assert (h100["gpulab.dev/gpu-model"], h100["gpulab.dev/gpu-count"]) == ("NVIDIA H100 80GB HBM3", "8")
    assert by_name["gpulab-control-plane"]["spec"]["taints"] == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]


def test_infer_worker_pending_until_the_operator_then_on_the_h100(upstream):
    """The source's pod: the real scheduler's message while no node advertises a GPU, then the H100 node."""
    manifest = ROOT / "course" / "manifests" / "infer-worker.yaml"
    upstream.kubectl("apply", "-f", str(manifest))

    def failed_scheduling():
        events = json.loads(upstream.kubectl("get", "events", "--field-selector",
                                             "involvedObject.name=infer-worker,reason=FailedScheduling",
                                             "-o", "json").stdout)["items"]
        return events and events[-1]["message"]

    message = wait_for(failed_scheduling, timeout=30, what="the scheduler's FailedScheduling event")
    # kube-scheduler v1.37.2's own words (its NodeAffinity, TaintToleration and preemption diagnosis)
    assert message == ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's "
                       "node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful "
                       "for scheduling.")
    install = subprocess.run([str(VENV_BIN / "gpulab"), "install", "gpu-operator", "--set",
                              "driver.version=580.105.08"], capture_output=True, text=True, env=upstream.env(),
                             timeout=300)
    assert install.returncode == 0, install.stderr

    def placed():
        pod = json.loads(upstream.kubectl("get", "pod", "infer-worker", "-o", "json").stdout)
        return pod["status"].get("phase") == "Running" and pod["spec"].get("nodeName")

    assert wait_for(placed, timeout=120, what="infer-worker running") == "gpulab-worker2"
    capacity = json.loads(upstream.kubectl("get", "node", "gpulab-worker2", "-o", "json").stdout)["status"]
    assert capacity["capacity"]["nvidia.com/gpu"] == capacity["allocatable"]["nvidia.com/gpu"] == "8"


def test_down_keeps_state_and_up_resumes(upstream):
    upstream.kubectl("create", "configmap", "kept", "--from-literal=a=b")
    down = gpulab(upstream.home, "cluster", "down")
    assert down.returncode == 0 and "stopped (state kept)" in down.stdout
    assert wait_for(lambda: not components(upstream.home), timeout=30, what="every component stopped")
    status = gpulab(upstream.home, "cluster", "status")
    assert status.returncode == 1 and "state: stopped" in status.stdout
    up = gpulab(upstream.home, "cluster", "up")          # the engine is remembered
    assert up.returncode == 0, up.stderr
    assert "upstream engine" in up.stdout
    assert upstream.kubectl("get", "configmap", "kept", "-o", "jsonpath={.data.a}").stdout == "b"


def test_a_cluster_keeps_its_engine(upstream):
    other = gpulab(upstream.home, "cluster", "up", "--engine", "embedded")
    assert other.returncode == 1
    assert other.stderr.strip() == ("error: cluster 'gpulab' exists on the upstream engine; a cluster keeps its "
                                    "engine. Run `gpulab cluster reset --name gpulab` first, or pick another --name "
                                    "for a cluster on the embedded engine.")


def test_a_port_in_use_is_refused_and_nothing_is_left_running(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        up = gpulab(tmp_path, "cluster", "up", "--engine", "upstream", "--port", str(port))
    assert up.returncode == 1
    assert up.stderr.strip() == (f"error: port {port} on 127.0.0.1, which cluster 'gpulab' would serve on, is taken "
                                 "by another process. Stop that process, or start a new cluster on another port "
                                 "with `gpulab cluster up --name NAME --engine upstream --port PORT`.")
    assert not components(tmp_path)
    assert gpulab(tmp_path, "cluster", "status").returncode == 1


def test_missing_or_foreign_binaries_say_what_to_do(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    up = gpulab(tmp_path, "cluster", "up", "--engine", "upstream", env={"GPULAB_UPSTREAM_BIN": str(empty)})
    assert up.returncode == 1
    assert up.stderr.startswith("error: the upstream engine's programs are not built (kube-apiserver, ")
    assert "run `make upstream`" in up.stderr
    from gpulab.upstream import build

    for program in build.PROGRAMS:           # an older release's apiserver beside the rest
        (empty / program.name).symlink_to(build.bin_dir() / program.name)
    (empty / "kube-apiserver").unlink()
    (empty / "kube-apiserver").write_text("#!/bin/sh\necho Kubernetes v1.36.1\n")
    (empty / "kube-apiserver").chmod(0o755)
    up = gpulab(tmp_path, "cluster", "up", "--engine", "upstream", env={"GPULAB_UPSTREAM_BIN": str(empty)})
    assert up.returncode == 1
    assert up.stderr.strip() == (f"error: {empty / 'kube-apiserver'} is Kubernetes v1.36.1, but the engine pins "
                                 "v1.37.2: run `make upstream` to rebuild, then try again.")
    assert not components(tmp_path)


def test_make_test_without_go_says_so_and_ci_fails(tmp_path):
    """`make test`'s first step on a machine without Go: a plain note and success, except under CI."""
    bare = {"PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin"}
    if any((Path(d) / "go").exists() for d in bare["PATH"].split(os.pathsep)):
        pytest.skip("go is installed system-wide here")
    command = [sys.executable, "-m", "gpulab.upstream.build", "--if-go"]
    local = subprocess.run(command, capture_output=True, text=True, env={**bare, "CI": ""})
    assert local.returncode == 0
    assert local.stderr.startswith("note: Go is not installed, so the upstream engine")
    ci = subprocess.run(command, capture_output=True, text=True, env={**bare, "CI": "true",
                                                                       "GPULAB_UPSTREAM_BIN": str(tmp_path)})
    assert ci.returncode == 1
    assert ci.stderr.startswith("error: Go is not installed (no `go` on PATH)")


def test_commands_a_container_answers_say_the_node_is_kwoks(upstream, capsys):
    """`gpulab.kubectl` on a pod of a KWOK node: exec, logs and a wait for a container's outcome say why there is
    nothing (no container runs), instead of the API server's dial error or a wait that can only time out."""
    import gpulab
    from gpulab.learner import connection

    upstream.kubectl("run", "sleeper", "--image=busybox:1.37", "--restart=Never", "--", "sleep", "3600")
    upstream.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s")
    gpulab.connect(kubeconfig=upstream.kubeconfig)
    try:
        capsys.readouterr()
        gpulab.kubectl("exec sleeper -- echo hi")
        gpulab.kubectl("logs sleeper")
        gpulab.kubectl("wait --for=jsonpath={.status.phase}=Failed pod/sleeper --timeout=60s")
        lines = capsys.readouterr().out.splitlines()
    finally:
        connection.forget()
    node = json.loads(upstream.kubectl("get", "pod", "sleeper", "-o", "json").stdout)["spec"]["nodeName"]
    kwok = "is a KWOK node (this cluster is gpulab's upstream engine), which runs no containers"
    assert lines[0] == (f"kubectl exec sleeper -- echo hi: the pod's node {node} {kwok}: there is no command to run, "
                        "and so no output. The embedded cluster, kind and real clusters answer this command; here "
                        "the pod's status is what the API shows of it.")
    assert lines[1].startswith(f"kubectl logs sleeper: the pod's node {node} {kwok}: there are no logs to show.")
    assert lines[2] == (f"kubectl wait '--for=jsonpath={{.status.phase}}=Failed' pod/sleeper --timeout=60s: pod sleeper "
                        f"runs on {node}, a KWOK node (this cluster is gpulab's upstream engine), which runs no "
                        "containers: what this waits for is decided by the container, so here it would only time "
                        "out. The embedded cluster, kind and real clusters show it.")


def test_feature_gates_are_the_real_components_and_change_at_a_start(tmp_path):
    """`--feature-gates` reach kube-apiserver, the controller manager and the scheduler: a gate v1.37.2 does not
    have is refused in its own words with nothing left running, and a stopped cluster starts again with others
    (GenericWorkload serving scheduling.k8s.io/v1beta1, as module 05 turns it on)."""
    bad = gpulab(tmp_path, "cluster", "up", "--engine", "upstream", "--no-gpu-stack", "--feature-gates",
                 "GangScheduling=true")
    assert bad.returncode == 1
    assert 'kube-apiserver.log: E' in bad.stderr and '"unrecognized feature gate: GangScheduling"' in bad.stderr
    assert not components(tmp_path)
    assert gpulab(tmp_path, "cluster", "up", "--engine", "upstream", "--no-gpu-stack").returncode == 0
    assert gpulab(tmp_path, "cluster", "down").returncode == 0
    assert gpulab(tmp_path, "cluster", "up", "--feature-gates", "GenericWorkload=true").returncode == 0
    kubeconfig = tmp_path / "clusters" / "gpulab" / "kubeconfig"
    served = subprocess.run([str(VENV_BIN / "kubectl"), "api-resources", "--api-group=scheduling.k8s.io", "-o",
                             "name"], capture_output=True, text=True, env={**os.environ, "KUBECONFIG": str(kubeconfig)})
    assert {"podgroups.scheduling.k8s.io", "workloads.scheduling.k8s.io"} <= set(served.stdout.split())
    assert "feature-gates: GenericWorkload=true" in gpulab(tmp_path, "cluster", "status").stdout
    gpulab(tmp_path, "cluster", "reset")
