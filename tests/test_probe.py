"""``gpulab probe``: the no-GPU paths exit 0 with a reason, and the measurement pipeline works end to end.

There is no GPU here, so the end-to-end test runs the real probe (its processes,
pipes, counters, table, verdict and JSON) on a stand-in ``torch`` package whose
"matmuls" sleep in proportion to their size. The numbers mean nothing; the
plumbing and the output shapes are what is tested. The measurement itself is
for a session with a GPU (docs/benchmarks.md).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest

from gpulab.probe import mps, report, stats
from gpulab.probe.measure import Settings

from .conftest import ROOT

DATA = json.loads((ROOT / "gpulab" / "gpustack" / "data" / "h200-timeslicing.json").read_text())

FAKE_TORCH = textwrap.dedent('''
    """A stand-in for torch: enough API for gpulab.probe, with sleeps instead of GPU work."""
    import os, time, types
    __version__ = "2.11.0+fake"
    version = types.SimpleNamespace(cuda=os.environ.get("FAKE_TORCH_CUDA") or None)
    bfloat16, uint8 = "bfloat16", "uint8"

    class Tensor:
        def __init__(self, side):
            self.side = side
        def __matmul__(self, other):
            time.sleep(self.side / 8e6)
            return Tensor(self.side)

    def randn(rows, cols, dtype=None, device=None):
        record = os.environ.get("FAKE_TORCH_RECORD")   # which MPS pipe directory each worker process saw
        if record:
            with open(os.path.join(record, str(os.getpid())), "w") as seen:
                seen.write(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", ""))
        return Tensor(rows)

    def empty(size, dtype=None, device=None):
        return Tensor(0)

    def matmul(a, b, out=None):
        time.sleep(a.side / 8e6)
        return out

    class _Cuda:
        def is_available(self):
            return os.environ.get("FAKE_TORCH_GPU") == "1"
        def device_count(self):
            return 1
        def set_device(self, index):
            pass
        def synchronize(self):
            pass
        def get_device_properties(self, index):
            return types.SimpleNamespace(name="Fake GPU", total_memory=80 * 2**30, multi_processor_count=132,
                                         major=9, minor=0)
    cuda = _Cuda()
''')


def probe(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                                                              "CUDA_MPS_PIPE_DIRECTORY",
                                                              "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")}
    return subprocess.run([sys.executable, "-m", "gpulab.probe", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, cwd=cwd, timeout=120)


@pytest.fixture
def fake_torch(tmp_path):
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_TORCH)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}


def test_without_pytorch_it_says_so_and_exits_0(tmp_path):
    if importlib.util.find_spec("torch"):
        pytest.skip("PyTorch is installed in this environment")
    out = probe(cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "gpulab probe: PyTorch is not installed, so there is nothing to measure with: install it with CUDA support "
        "(https://pytorch.org/get-started/locally/) on a GPU host, or run the probe in a pod holding a GPU "
        "(cluster-setup/real/probe-pod.yaml). Nothing measured.\n")
    assert not (tmp_path / "probe-results.json").exists()


def test_cpu_only_pytorch_says_so(tmp_path, fake_torch):
    out = probe(env=fake_torch, cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout == (
        "gpulab probe: PyTorch 2.11.0+fake is a CPU-only build (torch.version.cuda is None): install a CUDA build on "
        "a GPU host, or run the probe in a pod holding a GPU (cluster-setup/real/probe-pod.yaml). Nothing measured.\n")


def test_cuda_pytorch_without_a_visible_gpu_says_why(tmp_path, fake_torch):
    out = probe(env={**fake_torch, "FAKE_TORCH_CUDA": "13.0", "NVIDIA_VISIBLE_DEVICES": "void",
                     "PATH": os.path.dirname(sys.executable)}, cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout == (
        "gpulab probe: no NVIDIA GPU is visible: torch.cuda.is_available() is False (PyTorch 2.11.0+fake, CUDA 13.0; "
        "NVIDIA_VISIBLE_DEVICES='void'; nvidia-smi is not on PATH either). Run it on a GPU host, or in a pod holding "
        "a GPU (cluster-setup/real/probe-pod.yaml). Nothing measured.\n")


def test_a_run_prints_the_table_and_writes_rows_the_course_can_plot(tmp_path, fake_torch):
    env = {**fake_torch, "FAKE_TORCH_CUDA": "13.0", "FAKE_TORCH_GPU": "1",
           "CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "no-daemon-here")}
    out = probe("--requests", "40", "--interval-ms", "2", "--warmup", "2", "--neighbours", "0,2",
                "--duty", "0.5,1", "--budget-ms", "50", "-o", "rows.json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "sharing: time-slicing (each process holds its own CUDA context)"
    assert lines[2] == "neighbours  duty     p50 ms     p99 ms   p99.9 ms  p99 vs budget 50 ms"
    assert [line.split()[:2] for line in lines[3:6]] == [["0", "-"], ["2", "0.50"], ["2", "1.00"]]
    assert all(line.endswith(" ok") for line in lines[3:6])
    assert lines[6] == "GPU: Fake GPU (driver unknown)"
    assert lines[7] == ("verdict: within budget: p99 <= 50 ms with up to 2 busy neighbour(s), the most measured; "
                        "measure more neighbours to find the limit.")
    doc = json.loads((tmp_path / "rows.json").read_text())
    assert set(doc) == {"what", "gpu", "method", "sharing", "rows", "budget"}
    assert doc["sharing"] == {"mode": "time-slicing"} and "by time-slicing" in doc["what"]
    assert doc["gpu"] == {"gpu": "Fake GPU", "total_mem_gib": 80.0, "sm": 132, "cuda_capability": [9, 0]}
    assert doc["method"]["server"] == (
        "one process issues 40 requests, one every 2 ms (open loop); each request is two bf16 4096x4096 matmuls "
        "followed by a device synchronize; latency is measured from submit to synchronize")
    shared_keys = set(DATA["rows"][0]) | set(DATA["second_run"]["rows"][0])
    for row in doc["rows"]:
        assert set(row) == shared_keys
        assert row["n"] == 40 and row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"] <= row["max_ms"]
    assert [(r["neighbors"], r["duty"], len(r["neighbor_matmuls_each"])) for r in doc["rows"]] == [
        (0, 0.0, 0), (2, 0.5, 2), (2, 1.0, 2)]
    assert all(count > 0 for count in doc["rows"][2]["neighbor_matmuls_each"])
    assert doc["budget"]["max_neighbours_within_budget"] == 2


def _control_pipe(directory) -> str:
    """A stand-in for a running MPS control daemon: its ``control`` named pipe in the pipe directory."""
    directory.mkdir(parents=True)
    os.mkfifo(directory / "control")
    return str(directory)


def _seen_pipe_directories(record) -> set[str]:
    return {path.read_text() for path in record.iterdir()}


def test_where_an_mps_daemon_runs_the_processes_are_its_clients_and_the_run_is_reported_as_mps(tmp_path, fake_torch):
    pipe = _control_pipe(tmp_path / "mps" / "pipe")
    record = tmp_path / "seen"
    record.mkdir()
    env = {**fake_torch, "FAKE_TORCH_CUDA": "13.0", "FAKE_TORCH_GPU": "1", "CUDA_MPS_PIPE_DIRECTORY": pipe,
           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25", "FAKE_TORCH_RECORD": str(record)}
    out = probe("--requests", "20", "--interval-ms", "2", "--warmup", "1", "--neighbours", "0,2", "--budget-ms", "50",
                "-o", "rows.json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == (f"sharing: MPS (control daemon at {pipe}; server and neighbours run as its "
                                          "clients; active thread percentage 25)")
    doc = json.loads((tmp_path / "rows.json").read_text())
    assert doc["sharing"] == {"mode": "mps", "pipe_directory": pipe, "active_thread_percentage": 25.0}
    assert "as clients of an MPS control daemon" in doc["what"]
    assert doc["method"]["neighbours"].startswith("k processes on the same GPU (MPS clients), each running")
    assert len(list(record.iterdir())) == 3 and _seen_pipe_directories(record) == {pipe}   # server + 2 neighbours


def test_time_slicing_beside_a_running_daemon_keeps_the_processes_off_it(tmp_path, fake_torch):
    pipe = _control_pipe(tmp_path / "mps" / "pipe")
    record = tmp_path / "seen"
    record.mkdir()
    env = {**fake_torch, "FAKE_TORCH_CUDA": "13.0", "FAKE_TORCH_GPU": "1", "CUDA_MPS_PIPE_DIRECTORY": pipe,
           "FAKE_TORCH_RECORD": str(record)}
    out = probe("--sharing", "time-slicing", "--requests", "10", "--warmup", "1", "--neighbours", "0,1",
                "-o", "rows.json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == ("sharing: time-slicing (each process holds its own CUDA context, hidden "
                                          f"from its processes: a daemon runs at {pipe})")
    seen = _seen_pipe_directories(record)
    assert len(seen) == 1 and seen != {pipe} and "gpulab-probe-no-mps-" in seen.pop()
    assert json.loads((tmp_path / "rows.json").read_text())["sharing"] == {"mode": "time-slicing"}


def test_asking_for_mps_without_a_daemon_says_where_it_looked(tmp_path, fake_torch):
    env = {**fake_torch, "FAKE_TORCH_CUDA": "13.0", "FAKE_TORCH_GPU": "1",
           "CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "pipe")}
    out = probe("--sharing", "mps", env=env, cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (
        f"gpulab probe: --sharing mps needs a running MPS control daemon, and there is no MPS control daemon at "
        f"{tmp_path / 'pipe' / 'control'} (CUDA_MPS_PIPE_DIRECTORY={tmp_path / 'pipe'}). Start one "
        "(nvidia-cuda-mps-control -d), set CUDA_MPS_PIPE_DIRECTORY to its pipe directory, or run the probe in a pod "
        "given a GPU by the device plugin's MPS strategy\n")
    assert not (tmp_path / "probe-results.json").exists()


def test_mps_detection_finds_the_control_pipe_or_socket_and_nothing_else(tmp_path):
    assert mps.pipe_directory({}) == "/tmp/nvidia-mps"          # NVIDIA's default pipe directory
    assert mps.absent_reason({}) == ("no MPS control daemon at /tmp/nvidia-mps/control (the default, "
                                     "CUDA_MPS_PIPE_DIRECTORY is not set)")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert mps.detect({"CUDA_MPS_PIPE_DIRECTORY": str(empty)}) is None
    (empty / "control").write_text("")                           # a plain file is no daemon's endpoint
    assert mps.detect({"CUDA_MPS_PIPE_DIRECTORY": str(empty)}) is None
    fifo = _control_pipe(tmp_path / "fifo")
    assert mps.detect({"CUDA_MPS_PIPE_DIRECTORY": fifo, "PATH": ""}) == mps.Daemon(fifo, None)
    short = tempfile.mkdtemp(prefix="mps-", dir="/tmp")           # UNIX socket paths are limited to ~108 bytes
    try:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(os.path.join(short, "control"))             # CUDA 13's daemon listens on a socket
        try:
            assert mps.detect({"CUDA_MPS_PIPE_DIRECTORY": short, "PATH": ""}) == mps.Daemon(short, None)
        finally:
            listener.close()
    finally:
        shutil.rmtree(short)


def test_the_thread_limit_comes_from_the_client_or_the_daemon(tmp_path):
    pipe = _control_pipe(tmp_path / "pipe")
    tools = tmp_path / "bin"
    tools.mkdir()
    control = tools / "nvidia-cuda-mps-control"                  # answers as the daemon would, from its pipe dir
    control.write_text('#!/bin/sh\nread command\n[ "$command" = get_default_active_thread_percentage ] && '
                       '[ "$CUDA_MPS_PIPE_DIRECTORY" = "' + pipe + '" ] && echo 33\n')
    control.chmod(0o755)
    environ = {"CUDA_MPS_PIPE_DIRECTORY": pipe, "PATH": str(tools)}
    assert mps.detect(environ).active_thread_percentage == 33.0
    assert mps.detect({**environ, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "12.5"}).active_thread_percentage == 12.5


def test_choosing_the_sharing_mode(tmp_path):
    pipe = _control_pipe(tmp_path / "pipe")
    daemon = {"CUDA_MPS_PIPE_DIRECTORY": pipe, "PATH": ""}
    none = {"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "none"), "PATH": ""}
    assert mps.choose("auto", daemon, 0, "/scratch").mode == "mps"
    assert mps.choose("auto", none, 0, "/scratch") == mps.Sharing("time-slicing", None, ())
    assert mps.choose("time-slicing", daemon, 0, "/scratch").worker_env == (("CUDA_MPS_PIPE_DIRECTORY", "/scratch"),)
    with pytest.raises(mps.SharingError, match="the GPU is in Exclusive_Process compute mode"):
        mps.choose("time-slicing", daemon, 3, "/scratch")        # what the device plugin's MPS daemon sets
    with pytest.raises(mps.SharingError, match="--sharing mps needs a running MPS control daemon"):
        mps.choose("mps", none, 0, "/scratch")


def test_the_probe_package_runs_alone_as_in_its_pod(tmp_path):
    shutil.copytree(ROOT / "gpulab" / "probe", tmp_path / "probe", ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-m", "probe", "--neighbours", "0,1"], capture_output=True, text=True,
                         cwd=tmp_path, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gpulab probe: PyTorch is not installed")


def test_gpulab_cli_registers_probe():
    out = subprocess.run([sys.executable, "-m", "gpulab.cli", "probe", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "--budget-ms" in out.stdout and "--duty" in out.stdout
    assert "--sharing {auto,mps,time-slicing}" in out.stdout


@pytest.mark.parametrize("text", ["x", "-1", ""])
def test_bad_neighbour_lists_are_refused(text):
    out = probe("--neighbours", text)
    assert out.returncode == 2 and "--neighbours" in out.stderr


def test_percentiles_are_nearest_rank_like_the_data_file():
    samples = [float(i) for i in range(1, 1001)]          # 1..1000 ms
    row = stats.summarize(samples)
    assert row == {"n": 1000, "p50_ms": 501.0, "p90_ms": 901.0, "p99_ms": 991.0, "p999_ms": 1000.0,
                   "max_ms": 1000.0, "mean_ms": 500.5}
    assert stats.summarize(samples + [1001.0] * 500)["p999_ms"] == 1001.0
    for data_row in DATA["second_run"]["rows"]:       # n=1000: the data file's p99.9 is its maximum, as here
        assert data_row["p999_ms"] == data_row["max_ms"]
    assert DATA["rows"][0]["p999_ms"] < DATA["rows"][0]["max_ms"]   # n=1500: the second largest sample


@pytest.mark.parametrize("budget, fits, verdict", [
    (5.0, 1, "over budget with 2 busy neighbour(s) at duty 1: p99 5.21 ms > 5 ms. Share this GPU between at most 2 "
             "pods (time-slicing replicas <= 2), or give this workload a MIG slice or a whole GPU."),
    (10.0, 4, "within budget: p99 <= 10 ms with up to 4 busy neighbour(s), the most measured; measure more "
              "neighbours to find the limit."),
    (0.4, None, "over budget even alone: p99 0.48 ms > 0.4 ms. This request needs more GPU than it gets (a faster "
                "GPU or a smaller request), not a shared one."),
])
def test_verdict_on_the_h200_measurement(budget, fits, verdict):
    rows = [{**r, "duty": 1.0 if r["neighbors"] else 0.0} for r in DATA["rows"]]
    result = report.verdict(rows, budget)
    assert (result["max_neighbours_within_budget"], result["verdict"]) == (fits, verdict)
    as_mps = report.verdict(rows, budget, "mps")["verdict"]
    assert as_mps == verdict.replace("(time-slicing replicas", "(MPS replicas")


def test_cases_measure_k0_once_and_every_duty_for_each_k():
    assert Settings(neighbours=(0, 1, 3), duties=(0.0, 1.0)).cases() == [(0, 0.0), (1, 0.0), (1, 1.0),
                                                                          (3, 0.0), (3, 1.0)]
