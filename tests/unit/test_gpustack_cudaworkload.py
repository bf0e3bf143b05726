"""A training program on the embedded cluster's nodes (gpulab/gpustack/cudaworkload.py): silent until stopped,
except an MPS client whose modelled memory is over its share, which fails with CUDA's out-of-memory error."""
from __future__ import annotations

from gpulab.cluster.kubelet.images import parse_reference
from gpulab.cluster.kubelet.process import Process
from gpulab.cluster.kubelet.shell import FileSystem, World
from test_kubelet_harness import CATALOG

START = 1_767_225_600.0
IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
PIPE = ("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu/pipe")


def trainer(env: list[tuple[str, str]], replicas: str) -> Process:
    img = CATALOG.resolve(parse_reference(IMAGE))
    labels = {"nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.replicas": replicas}
    world = World(image=img, catalog=CATALOG, env=env, files=FileSystem(), hostname="t", nproc=4,
                  kernel="6.8.0-gpulab", node_labels=lambda: labels)
    proc = Process(world, ["python", "train.py"], START)
    proc.advance(START + 1)
    return proc


def test_an_mps_client_over_its_share_fails_and_one_within_it_runs():
    over = trainer([PIPE], "4")          # 30 % of 40960 MiB = 12288 MiB > 10240 MiB
    assert (over.exit_code, [line for _, line in over.log]) == (1, ["RuntimeError: CUDA error: out of memory"])
    within = trainer([PIPE], "2")        # 12288 MiB <= 20480 MiB
    assert within.running and within.wake is None and not within.log
    sliced = trainer([], "4")            # time-slicing: no MPS limit, the whole GPU's memory
    assert sliced.running and not sliced.log
    assert sliced.stop(START + 5) is True and sliced.exit_code == 143
