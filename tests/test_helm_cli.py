"""The learner's ``helm list|status|get values``: Helm's own SDK reading the release records through the API.

On both engines: before any release, ``helm list -A`` prints helm's header alone; after ``gpulab install`` and
``gpulab upgrade`` of the gpu-operator chart and a real Helm install of another chart, ``helm list -A`` shows both
releases in helm's table (uitable: padded cells, tab-separated), ``-n`` scopes it, ``-o json`` has helm's
``releaseElement`` fields, ``status`` prints helm's status block, ``history`` each revision, ``get values`` the
user-supplied values of each revision, and what helm prints for a release that does not exist. Upstream shapes:
helm ``pkg/cmd/list.go``, ``status.go``, ``history.go``, ``get_values.go`` and their ``testdata/output`` golden
files.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import VENV_BIN, start_cluster, stop_cluster

helm_sdk = pytest.importorskip("helm_python", reason="helm-python-sdk is a course dependency: run `make install`")

CHART = Path(__file__).parent / "data" / "helm-chart" / "gpulab-demo"
HEADER = ["NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION"]
GO_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC$")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("helm-cli")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, engine):
    c = start_cluster(tmp_path_factory.mktemp("helm-cli"), engine=engine)
    yield c
    stop_cluster(c)


def helm(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "helm"), *args], capture_output=True, text=True, env=cluster.env(),
                          timeout=120)


def rows(stdout: str) -> list[list[str]]:
    """helm's table: one line a row, cells separated by tabs and padded to their column's width."""
    lines = stdout.split("\n")
    assert lines[-1] == "", stdout        # output.EncodeTable ends the table with a newline
    table = [line.split("\t") for line in lines[:-1]]
    for column in zip(*table):
        assert len({len(cell) for cell in column}) == 1, f"cells of a column padded to one width: {stdout!r}"
    return [[cell.rstrip() for cell in row] for row in table]


@pytest.fixture(scope="module")
def releases(cluster):
    empty = helm(cluster, "list", "-A")
    cluster.gpulab("install", "gpu-operator", "--version", "v26.3.3", "--set", "driver.version=580.105.08",
                   timeout=300)
    cluster.gpulab("upgrade", "gpu-operator", "--version", "v26.7.0", "--set", "mig.strategy=single", timeout=300)
    with helm_sdk.Config(kubeconfig_path=str(cluster.kubeconfig), namespace="default") as cfg:
        cfg.install(str(CHART), "demo", {"replicas": 1}, wait="watcher", timeout=180)
    return empty


def test_list_before_any_release_prints_the_header_alone(releases):
    assert releases.returncode == 0, releases.stderr
    assert releases.stdout == "\t".join(HEADER) + "\n"
    assert releases.stderr == ""


def test_list_all_namespaces_shows_gpulab_and_real_helm_releases(cluster, releases):
    listed = helm(cluster, "list", "-A")
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    table = rows(listed.stdout)
    assert table[0] == HEADER
    by_name = {row[0]: dict(zip(HEADER, row)) for row in table[1:]}
    assert list(by_name) == ["demo", "gpu-operator"]          # helm sorts by name
    operator = by_name["gpu-operator"]
    assert (operator["NAMESPACE"], operator["REVISION"], operator["STATUS"], operator["CHART"],
            operator["APP VERSION"]) == ("gpu-operator", "2", "deployed", "gpu-operator-v26.7.0", "v26.7.0")
    assert GO_TIME.match(operator["UPDATED"]), operator["UPDATED"]
    demo = by_name["demo"]
    assert (demo["NAMESPACE"], demo["REVISION"], demo["STATUS"], demo["CHART"]) == (
        "default", "1", "deployed", "gpulab-demo-0.1.0")


def test_list_is_scoped_to_the_namespace(cluster, releases):
    for args in (("list", "-n", "gpu-operator"), ("-n", "gpu-operator", "ls")):
        scoped = helm(cluster, *args)
        assert scoped.returncode == 0, scoped.stderr
        assert [row[0] for row in rows(scoped.stdout)[1:]] == ["gpu-operator"]
    default = helm(cluster, "list", "-q")     # the kubeconfig context's namespace, default
    assert default.stdout == "demo\n"


def test_list_json_and_superseded_revisions(cluster, releases):
    listed = helm(cluster, "list", "-n", "gpu-operator", "-o", "json")
    [element] = json.loads(listed.stdout)
    assert sorted(element) == ["app_version", "chart", "name", "namespace", "revision", "status", "updated"]
    assert (element["revision"], element["chart"]) == ("2", "gpu-operator-v26.7.0")
    assert listed.stdout.count("\n") == 1                    # encoding/json: compact, one line
    # --all shows the latest revision of each release whatever its state; with -q, the names
    assert helm(cluster, "list", "-A", "-a", "-q").stdout == "demo\ngpu-operator\n"


def test_status_prints_helms_status_block(cluster, releases):
    status = helm(cluster, "status", "gpu-operator", "-n", "gpu-operator")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0] == "NAME: gpu-operator"
    assert re.match(r"^LAST DEPLOYED: \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", lines[1]), lines[1]
    assert lines[2:] == ["NAMESPACE: gpu-operator", "STATUS: deployed", "REVISION: 2",
                         "DESCRIPTION: Upgrade complete", "TEST SUITE: None"]


def test_get_values_shows_each_revisions_user_supplied_values(cluster, releases):
    current = helm(cluster, "get", "values", "gpu-operator", "-n", "gpu-operator")
    assert current.stdout == "USER-SUPPLIED VALUES:\nmig:\n  strategy: single\n"
    first = helm(cluster, "get", "values", "gpu-operator", "-n", "gpu-operator", "--revision", "1", "-o", "json")
    assert json.loads(first.stdout) == {"driver": {"version": "580.105.08"}}


def test_history_lists_each_revision_with_its_description(cluster, releases):
    history = helm(cluster, "history", "gpu-operator", "-n", "gpu-operator")
    assert history.returncode == 0, history.stderr
    table = rows(history.stdout)
    assert table[0] == ["REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "DESCRIPTION"]
    assert [[row[0], *row[2:]] for row in table[1:]] == [
        ["1", "superseded", "gpu-operator-v26.3.3", "v26.3.3", "Install complete"],
        ["2", "deployed", "gpu-operator-v26.7.0", "v26.7.0", "Upgrade complete"]]
    assert re.match(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", table[1][1]), table[1][1]
    newest = json.loads(helm(cluster, "hist", "gpu-operator", "-n", "gpu-operator", "--max", "1", "-o", "json").stdout)
    assert [(item["revision"], item["status"], item["description"]) for item in newest] == [
        (2, "deployed", "Upgrade complete")]
    assert sorted(newest[0]) == ["app_version", "chart", "description", "revision", "status", "updated"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", newest[0]["updated"]), newest[0]["updated"]


def test_unknown_release_and_chart_commands_fail_as_helm_does(cluster, releases):
    missing = helm(cluster, "status", "gpu-operator")          # not in the default namespace
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", "Error: release: not found\n")
    install = helm(cluster, "install", "x", "nvidia/gpu-operator", "-n", "gpu-operator")
    assert install.returncode == 1
    assert install.stderr.startswith("Error: helm install is played here by `gpulab install gpu-operator`")
