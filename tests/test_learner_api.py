"""The learner-facing API: connect, kubectl from a cell, wait_for; and graded cells in a real kernel stay off stderr."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

import gpulab
from gpulab.learner import conditions, connection
from gpulab.learner.waiting import Progress
from tests.conftest import KUBECTL, ROOT


@pytest.fixture(autouse=True)
def fresh_connection(monkeypatch, cluster):
    """Each test starts unconnected, with the module's embedded cluster as the default one."""
    monkeypatch.setattr(connection, "_current", None)
    monkeypatch.setenv("GPULAB_HOME", str(cluster.home))
    monkeypatch.delenv(connection.MODE_ENV, raising=False)
    monkeypatch.delenv(connection.NAME_ENV, raising=False)
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    yield


def test_connect_defaults_to_the_embedded_cluster_and_exports_kubeconfig(cluster):
    conn = gpulab.connect()
    assert conn.mode == "embedded" and conn.cluster_name == "gpulab"
    assert conn.kubeconfig == cluster.kubeconfig
    assert os.environ["KUBECONFIG"] == str(cluster.kubeconfig)
    assert str(conn) == f"Connected to embedded cluster 'gpulab' at {conn.server}."
    assert connection.current() is conn


def test_connect_starts_an_embedded_cluster_that_is_not_running(cluster):
    try:
        conn = gpulab.connect(name="learner-start")
        assert conn.kubeconfig == cluster.home / "clusters" / "learner-start" / "kubeconfig"
        gpulab.kubectl("get", "nodes")
    finally:
        subprocess.run([*connection.gpulab_command(), "cluster", "reset", "--name", "learner-start"], check=True,
                       capture_output=True)


def test_connect_to_a_kubeconfig_and_its_current_context(cluster, monkeypatch, tmp_path):
    conn = gpulab.connect(kubeconfig=cluster.kubeconfig)
    assert conn.mode == "kubeconfig" and conn.cluster_name is None
    assert str(conn) == f"Connected to the cluster of your kubeconfig at {conn.server}."

    monkeypatch.setattr(connection, "_current", None)
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    monkeypatch.setenv(connection.MODE_ENV, "kubeconfig")
    conn = gpulab.connect()
    assert conn.mode == "kubeconfig" and conn.kubeconfig is None      # kubectl's own lookup of $KUBECONFIG
    assert os.environ["KUBECONFIG"] == str(cluster.kubeconfig)

    with pytest.raises(connection.ConnectError, match=f"kubeconfig {tmp_path}/missing does not exist"):
        gpulab.connect(kubeconfig=tmp_path / "missing")
    monkeypatch.setenv(connection.MODE_ENV, "kind")
    with pytest.raises(connection.ConnectError,
                       match="GPULAB_CLUSTER='kind' is not understood; use 'embedded' or 'kubeconfig'"):
        gpulab.connect()


def test_kubectl_output_is_kubectls_own_on_stdout(cluster, capsys):
    gpulab.connect()
    columns = r"custom-columns=NAME:.metadata.name,OS:.metadata.labels.kubernetes\.io/os"
    direct = subprocess.run([KUBECTL, "get", "nodes", "-o", columns], capture_output=True, text=True,
                            env=cluster.env())
    gpulab.kubectl(f"get nodes -o '{columns}'")           # one string is split as a shell would
    gpulab.kubectl("kubectl", "get", "nodes", "-o", columns)
    out, err = capsys.readouterr()
    assert out == direct.stdout * 2 and err == ""
    assert out.startswith("NAME                   OS\ngpulab-control-plane   linux\n")

    gpulab.kubectl("get pod nope")
    out, err = capsys.readouterr()
    assert out == 'Error from server (NotFound): pods "nope" not found\n' and err == ""

    result = gpulab.kubectl("get pod nope", capture=True)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", 'Error from server (NotFound): pods "nope" not found\n')
    with pytest.raises(gpulab.learner.KubectlError, match='kubectl get pod nope exited with 1:\n'
                                                          'Error from server \\(NotFound\\): pods "nope" not found'):
        gpulab.kubectl("get pod nope", check=True)
    assert capsys.readouterr().out == 'Error from server (NotFound): pods "nope" not found\n'


def test_kubectl_takes_manifests_on_stdin(capsys):
    gpulab.connect()
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-a-cell"},
                               "data": {"k": "v"}})
    gpulab.kubectl("apply -f -", input=manifest)
    assert capsys.readouterr().out == "configmap/from-a-cell created\n"
    assert gpulab.kubectl("get cm from-a-cell -o jsonpath={.data.k}", capture=True).stdout == "v"


def test_wait_for_shows_progress_on_stdout_and_says_what_it_waited_for(capsys):
    states = iter([Progress(0, 3, "ready"), Progress(2, 3, "ready"), Progress(3, 3, "ready")])
    assert gpulab.wait_for(lambda: next(states), interval=0.01, description="web ready") == Progress(3, 3, "ready")
    out, err = capsys.readouterr()
    assert err == "" and "web ready" in out and "3/3" in out

    with pytest.raises(TimeoutError, match=r"^timed out after 0.3s waiting for never \(last: 0/1 absent\)$"):
        gpulab.wait_for(lambda: Progress(0, 1, "absent"), timeout=0.3, interval=0.05, description="never")
    assert capsys.readouterr().err == ""


def test_conditions_read_the_cluster(cluster, capsys):
    gpulab.connect()
    cluster.kubectl("run", "waited", "--image=registry.k8s.io/pause:3.10.1")
    value = gpulab.wait_for(conditions.pod_phase("waited"), timeout=30, interval=0.2)
    assert value == Progress(1, 1, "Running")
    assert "pod default/waited Running" in capsys.readouterr().out
    assert conditions.deployment_ready("absent")() == Progress(0, 1, "absent")
    assert conditions.clusterpolicy_ready()() == Progress(0, 1, "absent")
    assert conditions.gpus_allocatable()() == Progress(0, 1, "0 nvidia.com/gpu")
    assert conditions.nodes_labelled("kubernetes.io/os=linux", "kubernetes.io/arch", "amd64")() == \
        Progress(4, 4, "kubernetes.io/arch=amd64")
    assert conditions.nodes_labelled("node-role.kubernetes.io/control-plane", "pool", "h100")() == \
        Progress(0, 1, "pool=h100")
    assert conditions.nodes_labelled("pool=h100", "pool", "h100")() == Progress(0, 1, "pool=h100")


def test_lazy_import_keeps_import_gpulab_light():
    code = ("import sys, gpulab; heavy = [m for m in ('kubernetes', 'ipywidgets', 'matplotlib', 'gpulab.checks') "
            "if m in sys.modules]; print(heavy)")
    proc = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout == "[]\n"


def test_a_kernel_importing_gpulab_then_the_client_skips_the_costly_imports():
    """Each of these cost a learner's kernel (and each graded submission) seconds of CPU: the Lark parser that
    ``rfc3987_syntax`` builds at import (through kubernetes_validate and jsonschema), and CoreV1Api's validators,
    which reading the cluster for checks does not need."""
    code = ("import sys, gpulab, kubernetes, gpulab.checks, gpulab.learner.conditions; "
            "print(sys.modules.get('rfc3987_syntax', 'absent'), 'kubernetes.client.api.core_v1_api' in sys.modules)")
    proc = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout == "None False\n"


# --- graded cells in a real kernel -------------------------------------------------------------------------

def _insecure_kubeconfig(cluster, tmp_path: Path) -> Path:
    """The cluster's kubeconfig without its CA, trusting the server blindly as some real clusters' kubeconfigs do:
    urllib3 then warns (InsecureRequestWarning) on every request."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"].pop("certificate-authority-data", None)
        entry["cluster"]["insecure-skip-tls-verify"] = True
    path = tmp_path / "insecure-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def _run_notebook(cells: list[str]) -> list[dict]:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}},
                   allow_errors=True).execute()
    return [output for cell in notebook.cells for output in cell.outputs]


def test_graded_cells_write_nothing_to_stderr_in_a_kernel(cluster, tmp_path):
    insecure = _insecure_kubeconfig(cluster, tmp_path)
    outputs = _run_notebook([
        "import gpulab\nfrom gpulab import checks",
        f"gpulab.connect(kubeconfig={str(insecure)!r})",
        "gpulab.kubectl('get nodes')\ngpulab.kubectl('get pod nope')",
        "gpulab.wait_for(gpulab.conditions.nodes_labelled('kubernetes.io/os=linux', 'kubernetes.io/os', 'linux'))",
        "checks.assert_passed('setup.connected')",
        "gpulab.check('lab01.allocatable_gpus', 12)",
        "from gpulab import widgets\nwidgets.check_button('setup.connected').click()",
        "checks.assert_passed('lab02.pools_labelled')",
    ])
    assert [o for o in outputs if o.get("name") == "stderr"] == []
    texts = "".join(o.get("text", "") for o in outputs)
    assert "PASS setup.connected: connected to Kubernetes v1.37.1" in texts
    assert 'Error from server (NotFound): pods "nope" not found' in texts, outputs
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert [(e["ename"], e["evalue"].splitlines()[0]) for e in errors] == [
        ("AssertionError", "lab02.pools_labelled: no node is known as a GPU node yet (none has "
                           "nvidia.com/gpu.present=true or advertises nvidia.com/gpu): the GPU Operator is not "
                           "running")]


def test_the_same_cells_without_gpulab_would_write_warnings_to_stderr(cluster, tmp_path):
    """The control for the test above: the official client alone, on the same kubeconfig, warns on stderr."""
    insecure = _insecure_kubeconfig(cluster, tmp_path)
    outputs = _run_notebook([
        "from kubernetes import client, config\n"
        f"api = config.new_client_from_config(config_file={str(insecure)!r})\n"
        "len(client.CoreV1Api(api).list_node().items)",
    ])
    assert any("InsecureRequestWarning" in o.get("text", "") for o in outputs if o.get("name") == "stderr")
