"""``gpulab kind up|down``: the course on a kind cluster, with the GPU stack emulation driving it.

``up`` checks for the kind CLI and a running container engine first (each
missing piece named with the step that installs or starts it), writes kind's
config for the course's default topology (the same file the embedded cluster
is built from, :data:`gpulab.gpustack.topology.DEFAULT_TOPOLOGY`) unless given
one, checks the config as kind will read it (:mod:`.kindconfig`), runs ``kind
create cluster`` (or, for a cluster that exists, ``kind export kubeconfig``)
into a kubeconfig of its own under ``$GPULAB_HOME/kind/<name>/``, then records the simulated GPU
hardware on the nodes, marks the cluster as one whose kubelets really run pods
(so the emulation gives its pods stand-in images, :mod:`gpulab.gpustack.standins`)
and starts ``gpulab gpustack run --kubeconfig K`` in the background, so
``gpulab install gpu-operator`` and the labs work there.

How kind nodes get their GPUs: kind's config can set node labels but not
annotations, and a label value cannot hold ``NVIDIA H100 80GB HBM3``. So GPU
workers carry the label ``gpulab.dev/simulated-gpu: <key>``, and
``cluster-setup/kind/simulated-gpus.yaml`` maps each key to a model and count,
which ``up`` writes to the ``gpulab.dev/gpu-model`` / ``gpulab.dev/gpu-count``
annotations through the official client (what the embedded cluster's topology
writes at node registration). The config written for the default topology
labels each GPU worker with the key of its model and count.

``down`` stops the emulation process ``up`` started (by the pid it recorded,
after checking that pid is still that command) and runs ``kind delete cluster``.

Driving the kind binary is the documented interface: kind's Go packages have
no Python binding, and its CLI is what learners would type.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from collections import Counter

import yaml

from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION, home
from . import kindconfig

KIND_VERSION = "v0.30.0"
KIND_INSTALL_URL = "https://kind.sigs.k8s.io/docs/user/quick-start/#installation"
DOCKER_INSTALL_URL = "https://docs.docker.com/engine/install/"
SIMULATED_GPU_LABEL = "gpulab.dev/simulated-gpu"
CLUSTER_SETUP = Path(__file__).resolve().parents[2] / "cluster-setup" / "kind"
DEFAULT_GPUS = CLUSTER_SETUP / "simulated-gpus.yaml"
NODE_WAIT_SECONDS = 120.0


class KindError(RuntimeError):
    """``gpulab kind`` cannot go on; the message says what to do."""


def cluster_dir(name: str) -> Path:
    return home() / "kind" / name


def kubeconfig_path(name: str) -> Path:
    return cluster_dir(name) / "kubeconfig"


def _provider() -> str:
    """The container engine kind will use: docker unless ``KIND_EXPERIMENTAL_PROVIDER`` names podman or nerdctl."""
    return os.environ.get("KIND_EXPERIMENTAL_PROVIDER") or "docker"


def require_tools() -> str:
    """The kind binary's path, after checking that kind is installed and its container engine answers."""
    kind = shutil.which("kind")
    if not kind:
        raise KindError(f"kind is not installed: install it from {KIND_INSTALL_URL} (e.g. `go install "
                        f"sigs.k8s.io/kind@{KIND_VERSION}`), then run `gpulab kind up` again. Without kind, "
                        "`gpulab cluster up` runs the course on the embedded cluster.")
    engine = _provider()
    label = {"docker": "Docker", "podman": "Podman"}.get(engine, engine)
    if not shutil.which(engine):
        install = DOCKER_INSTALL_URL if engine == "docker" else f"your distribution's {engine} package"
        raise KindError(f"{label} is not installed (no `{engine}` on PATH): kind runs every node as a {label} "
                        f"container. Install it "
                        f"({install}), start it, then run `gpulab kind up` again. Without {label}, "
                        "`gpulab cluster up` runs the course on the embedded cluster.")
    try:
        info = subprocess.run([engine, "info"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise KindError(f"`{engine} info` did not answer within 60s: is the {engine} daemon stuck?") from None
    if info.returncode != 0:
        detail = next((line.strip() for line in info.stderr.splitlines() if line.strip()), "no output")
        start = ("start the Docker daemon (`sudo systemctl start docker`, or open Docker Desktop)"
                 if engine == "docker" else f"start {engine}")
        raise KindError(f"{label} is not running: `{engine} info` failed (exit status {info.returncode}): {detail}\n"
                        f"kind runs every node as a {label} container: {start}, then run `gpulab kind up` "
                        f"again. Without {label}, `gpulab cluster up` runs the course on the embedded cluster.")
    return kind


def load_simulated_gpus(path: Path = DEFAULT_GPUS) -> dict[str, tuple[str, int]]:
    """``simulated-gpus.yaml``: label value -> (GPU model, count), each model checked against the catalogue."""
    from ..gpustack.hardware import gpu_model

    mapping = yaml.safe_load(Path(path).read_text()) or {}
    out: dict[str, tuple[str, int]] = {}
    for key, entry in mapping.items():
        try:
            model = gpu_model(str(entry["model"])).name
        except (KeyError, TypeError, ValueError) as exc:
            raise KindError(f"{path}: {key}: needs a model the GPU stack knows ({exc})") from None
        count = int(entry.get("count", 0))
        if count < 1:
            raise KindError(f"{path}: {key}: count must be at least 1")
        out[str(key)] = (model, count)
    return out


def default_config(name: str, gpus: dict[str, tuple[str, int]]) -> dict:
    """kind's ``Cluster`` for the course's default topology: one kind node per topology node, in order (kind then
    names them as the topology does), GPU workers labelled with the ``simulated-gpus.yaml`` key of their hardware.
    kind nodes get the host's CPUs and memory, and kind taints its control plane itself."""
    from ..gpustack.hardware import gpu_model
    from ..gpustack.topology import DEFAULT_TOPOLOGY, GPU_FIELD, hardware

    keys = {hw: key for key, hw in gpus.items()}
    seen: Counter = Counter()
    nodes = []
    for entry in yaml.safe_load(DEFAULT_TOPOLOGY.read_text())["nodes"]:
        role = entry.get("role", "worker")
        seen[role] += 1
        kind_name = f"{name}-{role}{seen[role] if seen[role] > 1 else ''}"
        wanted = str(entry["name"]).replace("{cluster}", name)
        if wanted != kind_name or (role == "worker" and entry.get("taints")):
            raise KindError(f"{DEFAULT_TOPOLOGY}: node {wanted} cannot be a kind node (kind would name it "
                            f"{kind_name}, and sets no taints on workers)")
        node: dict = {"role": role}
        labels = dict(entry.get("labels") or {})
        if entry.get(GPU_FIELD):
            model, count = hardware(entry[GPU_FIELD])
            key = keys.get((gpu_model(model).name, count))
            if key is None:
                raise KindError(f"node {wanted}: no entry for {count}x {model} in simulated-gpus.yaml; add one")
            labels[SIMULATED_GPU_LABEL] = key
        if labels:
            node["labels"] = labels
        nodes.append(node)
    return {"kind": kindconfig.KIND, "apiVersion": kindconfig.API_VERSION, "name": name, "nodes": nodes}


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, text=True)
    if proc.returncode != 0:
        raise KindError(f"{what} failed (exit status {proc.returncode}): {' '.join(command)}")


def _existing_clusters(kind: str) -> list[str]:
    out = subprocess.run([kind, "get", "clusters"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else []


def annotate_gpu_nodes(kube, gpus: dict[str, tuple[str, int]], expected: int,
                       timeout: float = NODE_WAIT_SECONDS) -> list[tuple[str, str, int]]:
    """Write the hardware annotations on every node labelled ``gpulab.dev/simulated-gpu``; wait for ``expected`` of them."""
    from .. import kubeclient

    deadline = time.monotonic() + timeout
    while True:
        nodes = kube.list(kubeclient.NODES, label_selector=SIMULATED_GPU_LABEL)["items"]
        if len(nodes) >= expected or time.monotonic() > deadline:
            break
        time.sleep(1)
    if len(nodes) < expected:
        raise KindError(f"only {len(nodes)} of {expected} GPU nodes registered within {timeout:.0f}s")
    done = []
    for node in nodes:
        key = node["metadata"]["labels"][SIMULATED_GPU_LABEL]
        if key not in gpus:
            raise KindError(f"node {node['metadata']['name']}: {SIMULATED_GPU_LABEL}={key} is not in "
                            f"simulated-gpus.yaml (known: {', '.join(sorted(gpus))})")
        model, count = gpus[key]
        kube.patch(kubeclient.NODES, node["metadata"]["name"],
                   {"metadata": {"annotations": {GPU_MODEL_ANNOTATION: model, GPU_COUNT_ANNOTATION: str(count)}}},
                   manager="gpulab-kind")
        done.append((node["metadata"]["name"], model, count))
    return sorted(done)


def up(name: str = "gpulab", config: Path | None = None, gpus_file: Path = DEFAULT_GPUS,
       wait: str = "2m") -> Path:
    """Create (or reuse) the kind cluster (from ``config``, else the default topology's), annotate its GPU nodes,
    start the emulation; the kubeconfig path."""
    kind = require_tools()
    gpus = load_simulated_gpus(gpus_file)
    if config is None:
        cluster_dir(name).mkdir(parents=True, exist_ok=True)
        config = cluster_dir(name) / "kind-config.yaml"
        config.write_text("# Written by `gpulab kind up` from the course's default topology "
                          "(gpulab/gpustack/data/default-topology.yaml).\n"
                          + yaml.safe_dump(default_config(name, gpus), sort_keys=False))
    try:
        cluster = kindconfig.load(Path(config).read_text())
    except OSError as exc:
        raise KindError(f"cannot read the kind config {config}: {exc.strerror} (pass another --config, or none "
                        "for the default topology's)") from None
    except kindconfig.KindConfigError as exc:
        raise KindError(f"{config}: {exc}") from None
    expected = sum(1 for node in cluster.get("nodes") or [] if SIMULATED_GPU_LABEL in (node.get("labels") or {}))
    cluster_dir(name).mkdir(parents=True, exist_ok=True)
    kubeconfig = kubeconfig_path(name)
    if name in _existing_clusters(kind):
        _run([kind, "export", "kubeconfig", "--name", name, "--kubeconfig", str(kubeconfig)], "kind export kubeconfig")
    else:
        _run([kind, "create", "cluster", "--name", name, "--config", str(config), "--kubeconfig", str(kubeconfig),
              "--wait", wait], "kind create cluster")
    from ..gpustack import background, standins
    from ..gpustack.operator import FIELD_MANAGER
    from ..kubeclient import Kube

    kube = Kube.from_kubeconfig(str(kubeconfig), field_manager=FIELD_MANAGER)
    try:
        for node, model, count in annotate_gpu_nodes(kube, gpus, expected):
            print(f"node/{node} annotated: {count}x {model}")
        standins.mark_cluster(kube)
    finally:
        kube.close()
    pid = background.GPUSTACK.start(cluster_dir(name), kubeconfig)
    print(f"GPU stack emulation running (`gpulab gpustack run`, pid {pid}, log "
          f"{background.GPUSTACK.log(cluster_dir(name))})")
    return kubeconfig


def down(name: str = "gpulab") -> None:
    """Stop the emulation started by ``up`` and delete the kind cluster."""
    from ..gpustack import background

    if background.GPUSTACK.stop(cluster_dir(name)):
        print("GPU stack emulation stopped")
    kind = shutil.which("kind")
    if not kind:
        raise KindError(f"kind is not installed: install it from {KIND_INSTALL_URL} to delete the cluster")
    _run([kind, "delete", "cluster", "--name", name], "kind delete cluster")
    kubeconfig_path(name).unlink(missing_ok=True)
