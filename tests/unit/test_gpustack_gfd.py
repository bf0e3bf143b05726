"""GPU Feature Discovery labels (NVIDIA/k8s-device-plugin internal/lm), see docs/fidelity.md#gpustack-core."""
import pytest

from gpulab.gpustack.gfd import GfdError, gfd_labels, sanitise
from gpulab.gpustack.hardware import gpu_model
from gpulab.gpustack.mig import plan
from gpulab.gpustack.sharing import parse_config

H100 = gpu_model("H100")
VERSIONS = {"driver_version": "580.105.08", "cuda_version": "13.0"}
TIME_SLICED_4 = parse_config("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                             "    - name: nvidia.com/gpu\n      replicas: 4\n")


def test_h100_node_labels_exactly():
    assert gfd_labels(H100, 8, timestamp=1700000000, **VERSIONS) == {
        "nvidia.com/cuda.driver-version.full": "580.105.08",
        "nvidia.com/cuda.driver-version.major": "580",
        "nvidia.com/cuda.driver-version.minor": "105",
        "nvidia.com/cuda.driver-version.revision": "08",
        "nvidia.com/cuda.driver.major": "580",
        "nvidia.com/cuda.driver.minor": "105",
        "nvidia.com/cuda.driver.rev": "08",
        "nvidia.com/cuda.runtime-version.full": "13.0",
        "nvidia.com/cuda.runtime-version.major": "13",
        "nvidia.com/cuda.runtime-version.minor": "0",
        "nvidia.com/cuda.runtime.major": "13",
        "nvidia.com/cuda.runtime.minor": "0",
        "nvidia.com/gfd.timestamp": "1700000000",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.machine": "unknown",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }


def test_time_slicing_marks_product_shared_and_replicas():
    labels = gfd_labels(H100, 8, sharing=TIME_SLICED_4, **VERSIONS)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED"
    assert labels["nvidia.com/gpu.replicas"] == "4"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.count"] == "8"


def test_single_strategy_describes_the_mig_device_as_the_gpu():
    labels = gfd_labels(H100, 8, mig_strategy="single", layout=plan(H100, 8, "all-1g.10gb"), **VERSIONS)
    assert {k: labels[k] for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory",
                                   "nvidia.com/gpu.multiprocessors", "nvidia.com/gpu.slices.gi",
                                   "nvidia.com/gpu.slices.ci", "nvidia.com/gpu.engines.copy",
                                   "nvidia.com/mig.strategy")} == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.memory": "9984", "nvidia.com/gpu.multiprocessors": "16", "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "1", "nvidia.com/gpu.engines.copy": "1", "nvidia.com/mig.strategy": "single"}


def test_mixed_strategy_labels_each_profile():
    labels = gfd_labels(H100, 8, mig_strategy="mixed", layout=plan(H100, 8, "all-1g.10gb"), **VERSIONS)
    assert {k: v for k, v in labels.items() if k.startswith("nvidia.com/mig-1g.10gb.")} == {
        "nvidia.com/mig-1g.10gb.count": "56",
        "nvidia.com/mig-1g.10gb.engines.copy": "1",
        "nvidia.com/mig-1g.10gb.engines.decoder": "1",
        "nvidia.com/mig-1g.10gb.engines.encoder": "0",
        "nvidia.com/mig-1g.10gb.engines.jpeg": "1",
        "nvidia.com/mig-1g.10gb.engines.ofa": "0",
        "nvidia.com/mig-1g.10gb.memory": "9984",
        "nvidia.com/mig-1g.10gb.multiprocessors": "16",
        "nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/mig-1g.10gb.replicas": "1",
        "nvidia.com/mig-1g.10gb.sharing-strategy": "none",
        "nvidia.com/mig-1g.10gb.slices.ci": "1",
        "nvidia.com/mig-1g.10gb.slices.gi": "1",
    }
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/mig.strategy"] == "mixed"


def test_single_strategy_with_mixed_profiles_is_mig_invalid():
    labels = gfd_labels(H100, 8, mig_strategy="single", layout=plan(H100, 8, "all-balanced"), **VERSIONS)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-INVALID"
    assert (labels["nvidia.com/gpu.count"], labels["nvidia.com/gpu.memory"]) == ("0", "0")


def test_h200_and_a100_products():
    assert gfd_labels(gpu_model("H200"), 1, **VERSIONS)["nvidia.com/gpu.product"] == "NVIDIA-H200"
    a100 = gpu_model("A100-SXM4-40GB")
    labels = gfd_labels(a100, 8, mig_strategy="mixed", layout=plan(a100, 8, "all-1g.5gb"), **VERSIONS)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert labels["nvidia.com/mig-1g.5gb.memory"] == "4864"
    assert labels["nvidia.com/gpu.family"] == "ampere"


def test_product_name_sanitising():
    assert sanitise("Tesla T4") == "Tesla-T4"
    assert gfd_labels(gpu_model("T4"), 1, **VERSIONS)["nvidia.com/mig.capable"] == "false"


def test_unknown_strategy_is_refused():
    with pytest.raises(GfdError, match="unknown strategy: bogus"):
        gfd_labels(H100, 1, mig_strategy="bogus", **VERSIONS)
