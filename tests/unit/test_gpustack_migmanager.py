"""The MIG manager's label dance and refusals (gpulab.gpustack.migmanager; docs/fidelity.md#gpustack)."""
import pytest

from gpulab.gpustack.hardware import gpu_model
from gpulab.gpustack.mig import MigPartedError, plan, whole_gpus
from gpulab.gpustack.migmanager import (encode_saved, in_use_error, load_configs, paused_labels, restored_labels,
                                        saved_labels)

H100 = gpu_model("H100")


def test_paused_and_restored_labels_honour_false():
    current = {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.dcgm": "false"}
    assert paused_labels(current) == {
        "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "paused-for-mig-change",
        "nvidia.com/gpu.deploy.dcgm-exporter": "paused-for-mig-change",
        "nvidia.com/gpu.deploy.dcgm": "false",
        "nvidia.com/gpu.deploy.nvsm": "paused-for-mig-change"}
    saved = saved_labels({"gpulab.dev/mig-manager-saved": encode_saved(current)})
    assert restored_labels(saved) == {
        "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.dcgm": "false",
        "nvidia.com/gpu.deploy.nvsm": "true"}


def test_gpus_in_use_cannot_change():
    current = whole_gpus(2)
    wanted = plan(H100, 2, "all-1g.10gb")
    assert in_use_error(current, wanted, set()) is None
    assert in_use_error(current, wanted, {1}) == (
        "error setting MIG mode on GPU 1: error setting Mig mode: In use by another client")
    balanced = plan(H100, 2, "all-balanced")
    assert "error destroying GPU instance: In use by another client" in in_use_error(wanted, balanced, {0})


def test_configs_come_from_the_named_config_map():
    custom = {"data": {"config.yaml": "version: v1\nmig-configs:\n  mine:\n  - devices: all\n    mig-enabled: false\n"}}
    assert list(load_configs(custom, "custom")) == ["mine"]
    assert "all-1g.10gb" in load_configs(None, "default-mig-parted-config")
    with pytest.raises(MigPartedError, match="open /mig-parted-config/config.yaml: no such file or directory"):
        load_configs(None, "custom")
