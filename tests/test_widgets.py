"""The widgets: Check button, progress panel, cluster map (pure rendering and live watches), latency plot, DCGM
metrics (read through the service proxy of a cluster with the GPU Operator), reset."""
from __future__ import annotations

import json
import re
import time
from functools import partial

import pytest

from gpulab import checks, widgets
from gpulab.gpustack import latency
from gpulab.learner import connection
from gpulab.widgets.cluster_map import ClusterModel, node_cards, render_map
from gpulab.widgets.latency_plot import figure_png
from gpulab.widgets.progress_panel import render_progress
from tests.conftest import start_cluster, stop_cluster, wait_for
from tests.test_checks_common import eventually


H100_NODE = {
    "metadata": {"name": "gpulab-worker2", "labels": {
        "kubernetes.io/hostname": "gpulab-worker2", "pool": "h100", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.deploy.driver": "true", "nvidia.com/mig.config": "all-balanced",
        "nvidia.com/mig.strategy": "mixed"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}],
               "allocatable": {"cpu": "192", "nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "16",
                               "nvidia.com/mig-3g.40gb": "8"}},
}
A100_NODE = {
    "metadata": {"name": "gpulab-worker3", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED",
                                                      "nvidia.com/gpu.replicas": "4"}},
    "status": {"conditions": [{"type": "Ready", "status": "False"}], "allocatable": {"nvidia.com/gpu": "16"}},
}


def _pod(name, node=None, phase="Running", namespace="default", **limits):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node, "containers": [{"resources": {"limits": limits}}]}, "status": {"phase": phase}}


def test_node_cards_show_labels_taints_gpus_slices_replicas_and_pods():
    pods = [_pod("mig-worker", "gpulab-worker2", **{"nvidia.com/mig-1g.10gb": "2"}),
            _pod("nvidia-driver-daemonset-x", "gpulab-worker2", namespace="gpu-operator"),
            _pod("shared", "gpulab-worker3", **{"nvidia.com/gpu": "3"}),
            _pod("done", "gpulab-worker3", phase="Succeeded", **{"nvidia.com/gpu": "1"}),
            _pod("stuck-worker", None, phase="Pending", **{"nvidia.com/gpu": "1"})]
    cards, unscheduled = node_cards([A100_NODE, H100_NODE], pods)
    h100, a100 = cards
    assert h100.name == "gpulab-worker2" and h100.ready and h100.role == "worker"
    assert h100.shown_labels == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.strategy": "mixed",
                                 "nvidia.com/mig.config": "all-balanced", "pool": "h100"}
    assert h100.taints == ["nvidia.com/gpu=true:NoSchedule"]
    assert {k: (int(a), int(u)) for k, (a, u) in h100.gpus.items()} == {
        "nvidia.com/gpu": (0, 0), "nvidia.com/mig-1g.10gb": (16, 2), "nvidia.com/mig-3g.40gb": (8, 0)}
    assert [p.name for p in h100.pods] == ["mig-worker"] and h100.system_pods == 1
    assert not a100.ready and {k: (int(a), int(u)) for k, (a, u) in a100.gpus.items()} == {"nvidia.com/gpu": (16, 3)}
    assert [p.name for p in unscheduled] == ["stuck-worker"]

    page = render_map([A100_NODE, H100_NODE], pods)
    assert "<b>gpulab-worker2</b> <small>worker, Ready</small>" in page
    assert "taint <code>nvidia.com/gpu=true:NoSchedule</code>" in page
    assert "<code>nvidia.com/mig-1g.10gb</code> 2/16 used" in page
    assert "<i>MIG: 2 slice profiles</i>" in page
    assert "<i>time-sliced: each GPU shared 4 ways</i>" in page
    assert "+ 1 system pods" in page and "<b>not scheduled</b>" in page and "done" not in page
    assert "mig-worker <span style=\"color:#1a7f37\">Running</span> <code>mig-1g.10gb:2</code>" in page


def test_cluster_model_follows_watch_events():
    model = ClusterModel()
    model.replace("pods", [_pod("a", "n1")])
    model.apply("pods", "ADDED", _pod("b", "n1"))
    model.apply("pods", "MODIFIED", _pod("b", "n1", phase="Succeeded"))
    model.apply("pods", "DELETED", _pod("a", "n1"))
    assert [(p["metadata"]["name"], p["status"]["phase"]) for p in model.snapshot()[1]] == [("b", "Succeeded")]


def test_progress_panel_renders_last_verdicts():
    page = render_progress({"setup.connected": {"passed": True}, "lab01.operator_pinned": {"passed": False}})
    assert '<span style="color:#1a7f37">&#x2714;</span> <code>setup.connected</code>' in page
    assert '<span style="color:#cf222e">&#x2718;</span> <code>lab01.operator_pinned</code>' in page
    assert '<span style="color:#8c959f">&#x25CB;</span> <code>lab05.gang_jobs_complete</code>' in page
    assert "<b>lab01-gpu-operator</b> &nbsp;0/3" in page
    assert f"<p><b>1 of {len(checks.CHECKS)} exercises passed</b></p>" in page


def test_progress_is_recorded_for_the_learners_own_checks(cluster, monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_HOME", str(cluster.home))
    monkeypatch.setattr(connection, "_current", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    checks.progress.clear()
    connection.connect()
    checks.run("setup.connected")
    checks.run("lab01.allocatable_gpus", 3)
    checks.run("lab02.pools_labelled", client=cluster.client())         # explicit client: not the learner's
    records = checks.progress.load()
    assert {k: v["passed"] for k, v in records.items()} == {"setup.connected": True,
                                                            "lab01.allocatable_gpus": False}
    panel = widgets.progress_panel()
    assert "2 of" not in panel.html.value and "<b>00-setup</b> &nbsp;1/1" in panel.html.value
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")                 # grading leaves no trace
    checks.progress.clear()
    checks.run("setup.connected")
    assert checks.progress.load() == {}


def test_check_button_shows_reason_and_hint(cluster):
    button = widgets.check_button("lab01.allocatable_gpus", answer=lambda: 3, client=cluster.client())
    result = button.click()
    assert not result.passed and not button.button.disabled
    assert "&#x2718; Not yet" in button.verdict.value
    assert "no node advertises nvidia.com/gpu yet, so there is nothing to count" in button.verdict.value
    assert "<i>Hint:</i> the device plugin advertises GPUs" in button.verdict.value

    ok = widgets.check_button("setup.connected", client=cluster.client())
    assert ok.click().passed and "&#x2714; Passed" in ok.verdict.value and "Hint" not in ok.verdict.value

    broken = widgets.check_button("setup.connected", client=object())
    assert broken.click() is None
    assert broken.verdict.value.startswith('<div style="color:#cf222e">the check could not run: AttributeError')

    asks = widgets.check_button("lab01.allocatable_gpus", answer_from="not_defined_anywhere", client=cluster.client())
    assert asks.click().reason == "no answer yet: allocatable_gpus is not set yet"


def test_cluster_map_follows_the_cluster_live_and_stops(cluster):
    live = widgets.ClusterMap(cluster.client())
    try:
        assert eventually(lambda: "<b>gpulab-worker3</b>" in live.html.value, timeout=15)
        cluster.kubectl("run", "map-probe", "--image=registry.k8s.io/pause:3.10.1")
        assert eventually(lambda: re.search(r"map-probe <span[^>]*>Running</span>", live.html.value), timeout=20)
        cluster.kubectl("label", "node", "gpulab-worker", "pool=cpu")
        assert eventually(lambda: "<code>pool=cpu</code>" in live.html.value, timeout=10)
        cluster.kubectl("delete", "pod", "map-probe", "--grace-period=0", "--force")
        assert eventually(lambda: "map-probe" not in live.html.value, timeout=10)
    finally:
        started = time.monotonic()
        assert live.stop()
    assert not live.running and time.monotonic() - started < 6


def test_latency_figure_puts_the_model_beside_the_measurements():
    fig = widgets.latency_figure(p99_budget_ms=5)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["time-slicing p99 (model)", "time-slicing p50 (model)", "MPS p99, no thread limit (model)",
                           "MPS p99, 20% threads = 100/5 replicas (model)", "MIG 1g.18gb p99 (model)",
                           "whole GPU p99 (model)", "measured p99 (H200)", "measured p50 (H200)", "p99 budget 5 ms"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines)
    measured = [r for r in latency.measured_rows() if r["run"] == 1]
    assert list(lines["measured p99 (H200)"].get_ydata()) == [r["p99_ms"] for r in measured]
    assert list(lines["time-slicing p99 (model)"].get_ydata()) == [
        latency.expected_latency("time-slicing", neighbours=k)["p99_ms"] for k in range(5)]
    assert lines["MIG 1g.18gb p99 (model)"].get_ydata()[0] == \
        latency.expected_latency("mig", mig_profile="1g.18gb")["p99_ms"]
    assert figure_png(fig).startswith(b"\x89PNG")
    other = widgets.latency_figure(model="H100", duty=0.5)
    assert "measured p99 (H200)" not in [line.get_label() for line in other.axes[0].get_lines()]


def test_latency_figure_draws_the_mps_curves_from_the_model():
    fig = widgets.latency_figure(model="H100", max_neighbours=3, p99_budget_ms=5)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert list(lines["MPS p99, no thread limit (model)"].get_ydata()) == [
        latency.expected_latency("mps", neighbours=k, model="H100")["p99_ms"] for k in range(4)]
    assert list(lines["MPS p99, 25% threads = 100/4 replicas (model)"].get_ydata()) == [
        latency.expected_latency("mps", neighbours=k, model="H100", active_thread_percentage=25)["p99_ms"]
        for k in range(4)]
    chosen = widgets.latency_figure(modes=("mps",), mps_thread_percentage=50)
    assert [line.get_label() for line in chosen.axes[0].get_lines()] == [
        "MPS p99, no thread limit (model)", "MPS p99, 50% threads (model)"]
    assert chosen.axes[0].get_title() == "One request on an H200: MPS"
    with pytest.raises(ValueError, match="unknown mode\\(s\\) 'gang'; choose from time-slicing, mps, mig, exclusive"):
        widgets.latency_figure(modes=("gang",))


def test_mps_curve_basis_cites_what_the_curve_rests_on():
    note = widgets.mps_curve_basis()
    assert note.data == latency.MPS_CURVE_BASIS
    for source in ("docs.nvidia.com/deploy/mps", "k8s-device-plugin", "arxiv.org/abs/2604.22430",
                   "arxiv.org/abs/2110.00459", "is a model"):
        assert source in note.data


def test_latency_explorer_redraws_on_change():
    explorer = widgets.latency_explorer()
    first = explorer.image.value
    explorer.duty.value = 0.2
    assert bytes(explorer.image.value) != bytes(first) and bytes(explorer.image.value).startswith(b"\x89PNG")
    assert explorer.model.options == ("H100", "H200", "A100")
    assert [box.description for box in explorer.modes.values()] == ["time-slicing", "MPS", "MIG", "whole GPU"]
    with_mps = bytes(explorer.image.value)
    explorer.modes["mps"].value = False
    assert bytes(explorer.image.value) != with_mps
    explorer.modes["mps"].value = True
    explorer.mps_threads.value = 50
    assert bytes(explorer.image.value) != with_mps


def test_reset_button_asks_twice_and_refuses_a_kubeconfig_cluster(monkeypatch):
    monkeypatch.setattr(connection, "_current", None)
    monkeypatch.setenv(connection.MODE_ENV, "kubeconfig")
    button = widgets.reset_button("lab03")
    button.click()
    assert button.button.description == "Click again to reset"
    assert "This deletes everything in the embedded cluster" in button.note.value
    button.click()
    assert button.button.description == "Reset lab03"
    assert button.note.value.startswith("<pre>not resetting: GPULAB_CLUSTER=kubeconfig selects the cluster of your "
                                        "kubeconfig, and gpulab lab reset only wipes the embedded cluster.")
    assert "taint each GPU node nvidia.com/gpu=true:NoSchedule" in button.note.value


def test_widgets_need_an_existing_check_and_lab():
    with pytest.raises(KeyError, match="no check 'lab09.x'"):
        widgets.check_button("lab09.x")
    with pytest.raises(KeyError, match="no lab 'lab09'"):
        widgets.reset_button("lab09")


GPU_TOPOLOGY = """nodes:
- {name: "{cluster}-control-plane", role: control-plane, cpu: "4", memory: 8Gi,
   taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
- {name: "{cluster}-worker", cpu: "16", memory: 64Gi}
- {name: "{cluster}-worker2", cpu: "64", memory: 512Gi, gpu: {model: NVIDIA H100 80GB HBM3, count: 2}}
- {name: "{cluster}-worker3", cpu: "32", memory: 256Gi, gpu: {model: NVIDIA A100-SXM4-40GB, count: 1}}
"""
TRAINER = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plotted-trainer"},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": "gpulab-worker2"},
                    "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                    "command": ["python", "train.py"], "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory):
    """A cluster with the GPU Operator installed: two GPU nodes, so the exporters' Service has two endpoints."""
    tmp = tmp_path_factory.mktemp("dcgm-widgets")
    (tmp / "topology.yaml").write_text(GPU_TOPOLOGY)
    c = start_cluster(tmp, topology=tmp / "topology.yaml")
    try:
        c.gpulab("install", "gpu-operator", timeout=180)
        for node in ("gpulab-worker2", "gpulab-worker3"):
            wait_for(partial(_exporter_reports, c, node), timeout=180, what=f"the dcgm-exporter on {node}")
        yield c
    finally:
        stop_cluster(c)


def _exporter_reports(cluster, node: str) -> bool:
    """Whether the exporter pod on ``node`` serves that node's metrics (its pod proxy, not the widget's path)."""
    pod = cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-dcgm-exporter", "--field-selector",
                          f"spec.nodeName={node},status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}",
                          check=False).stdout
    metrics = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/gpu-operator/pods/{pod}:9400/proxy/metrics",
                              check=False) if pod else None
    return metrics is not None and f'Hostname="{node}"' in metrics.stdout


def test_dcgm_readings_read_each_node_through_the_service_proxy(gpu_cluster):
    client = gpu_cluster.client()
    h100 = widgets.dcgm_readings(["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE"], node="gpulab-worker2", client=client)
    assert repr(h100).splitlines() == ["gpulab-worker2 (NVIDIA H100 80GB HBM3)",
                                       "GPU   DCGM_FI_DEV_GPU_UTIL   DCGM_FI_DEV_FB_FREE",
                                       "0     0                      81559",
                                       "1     0                      81559"]
    a100 = widgets.dcgm_readings("DCGM_FI_DEV_FB_FREE", node="gpulab-worker3", client=client)
    assert a100.value("DCGM_FI_DEV_FB_FREE", "0") == 40960
    with pytest.raises(LookupError, match=r"the dcgm-exporter of node 'gpulab-worker' did not answer in 16 requests "
                                          r"to the service gpu-operator/nvidia-dcgm-exporter:gpu-metrics \(heard from: "
                                          r"gpulab-worker2, gpulab-worker3\); is 'gpulab-worker' a GPU node"):
        widgets.dcgm_readings("DCGM_FI_DEV_GPU_UTIL", node="gpulab-worker", client=client)
    with pytest.raises(LookupError, match="node gpulab-worker3's dcgm-exporter reports no DCGM_FI_DEV_GPU_UTILISATION "
                                          r"\(it reports 25 metrics: DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, "):
        widgets.dcgm_readings("DCGM_FI_DEV_GPU_UTILISATION", node="gpulab-worker3", client=client)


def test_dcgm_plot_follows_a_trainer_from_idle_to_busy(gpu_cluster):
    client = gpu_cluster.client()
    with pytest.raises(ValueError, match="must be positive"):
        widgets.dcgm_plot(node="gpulab-worker2", seconds=0, client=client)
    plot = widgets.dcgm_plot("DCGM_FI_DEV_GPU_UTIL", node="gpulab-worker2", seconds=120, every=0.5, client=client)
    try:
        assert plot.running and plot.series == {"GPU 0": [0.0], "GPU 1": [0.0]}
        gpu_cluster.kubectl("apply", "-f", "-", input=json.dumps(TRAINER))
        assert eventually(lambda: 100.0 in plot.series["GPU 0"], timeout=90), plot.series
    finally:
        assert plot.stop()
    assert set(plot.series["GPU 1"]) == {0.0} and len(plot.times) == len(plot.series["GPU 0"]) >= 2
    assert plot.help == "GPU utilization (in %)."
    assert re.fullmatch(r"<small>\d+ samples, done; latest: GPU 0: 100, GPU 1: 0</small>", plot.caption.value)
    lines = {line.get_label(): list(line.get_ydata()) for line in plot.figure().axes[0].get_lines()}
    assert lines["GPU 0"][0] == 0 and lines["GPU 0"][-1] == 100
    assert bytes(plot.image.value).startswith(b"\x89PNG")
    busy = widgets.dcgm_readings("DCGM_FI_DEV_FB_USED", node="gpulab-worker2", pod="plotted-trainer", client=client)
    assert repr(busy).splitlines()[1:] == ["GPU   DCGM_FI_DEV_FB_USED   POD", "0     24467                 plotted-trainer"]


LONG_LABELS_NODE = {**H100_NODE, "metadata": {"name": "gpulab-worker2", "labels": {
    **H100_NODE["metadata"]["labels"], "nvidia.com/gpu-driver-upgrade-state": "pod-deletion-required",
    "team.example.com/cost-center-for-inference-serving": "research-and-development-platform-inference-serving"}}}


def test_map_cards_show_the_upgrade_state_and_break_long_labels():
    cards, _ = node_cards([LONG_LABELS_NODE], [])
    assert cards[0].shown_labels["nvidia.com/gpu-driver-upgrade-state"] == "pod-deletion-required"
    page = render_map([LONG_LABELS_NODE], [])
    card_style = re.search(r'<div style="(border:1px solid[^"]*)">', page).group(1)
    assert "overflow-wrap:anywhere" in card_style and "max-width:100%" in card_style
    assert ".gpulab-cluster-map code{white-space:pre-wrap;overflow-wrap:anywhere}" in page


@pytest.mark.browser
def test_long_labels_stay_inside_their_card_in_a_browser():
    """Laid out by Chromium in a narrow output area, under a notebook's `code { white-space: pre }`: no card is
    wider than the area, and no line overflows its card."""
    from playwright.sync_api import sync_playwright

    from tests.test_browser import CHROMIUM_ARGS, chromium

    page_html = ('<html><head><style>code{white-space:pre;font-family:monospace}</style></head>'
                 f'<body style="margin:0"><div id="out" style="width:320px">'
                 f'{render_map([LONG_LABELS_NODE, A100_NODE], [])}</div></body></html>')
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(page_html)
            widths = page.evaluate("""() => [...document.querySelectorAll('.gpulab-cluster-map > div')].map(card =>
                ({card: card.getBoundingClientRect().width, scroll: card.scrollWidth, client: card.clientWidth}))""")
        finally:
            browser.close()
    assert len(widths) == 2
    for w in widths:
        assert w["card"] <= 320 and w["scroll"] <= w["client"], widths
