"""The device plugin's config choice and device list (gpulab.gpustack.deviceplugin; docs/fidelity.md#gpustack)."""
import pytest

from gpulab.gpustack.deviceplugin import (ConfigManagerError, LoadedConfig, choose_config, listed_devices,
                                          node_resources, plugin_devices)
from gpulab.gpustack.hardware import gpu_model
from gpulab.gpustack.mig import plan, whole_gpus
from gpulab.gpustack.sharing import NO_SHARING, parse_config

H100 = gpu_model("H100")
FOUR = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
MPS = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"


def test_label_then_default_then_fallbacks():
    available = {"any": FOUR, "other": MPS}
    assert choose_config("other", "any", available) == LoadedConfig("other", parse_config(MPS))
    assert choose_config(None, "any", available).name == "any"
    assert choose_config("", "any", available).name == "any"                     # an empty label is no label
    # Under the operator (FALLBACK_STRATEGIES=empty) an unlabelled node without a default gets whole GPUs,
    # neither the key called `default` nor the only key.
    assert choose_config(None, "", {"default": FOUR, "x": MPS}) == LoadedConfig("", NO_SHARING)
    assert choose_config(None, "", {"only": FOUR}) == LoadedConfig("", NO_SHARING)
    # The standalone chart's named,single: the key called `default`, else the only key.
    assert choose_config(None, "", {"default": FOUR, "x": MPS}, ("named", "single")).name == "default"
    assert choose_config(None, "", {"only": FOUR}, ("named", "single")).name == "only"
    assert choose_config(None, "", available, ("named", "empty")) == LoadedConfig("", NO_SHARING)
    broken = choose_config("bad", "", {"bad": "version: v2\n"})
    assert broken.name == "bad" and broken.config == NO_SHARING and broken.error     # the plugin's error, not the choice's


@pytest.mark.parametrize("label,default,available,fallbacks,message", [
    ("nope", "any", {"any": FOUR}, ("named", "single"), "specified config nope does not exist"),
    (None, "any", {"other": FOUR}, ("named", "single"), "specified config  does not exist"),   # upstream's %v of ""
    (None, "", {"any": FOUR, "other": MPS}, ("named", "single"),
     "no config was set, no default was provided, and all fallbacks failed"),
    (None, "", {"any": FOUR, "other": MPS}, ("first",), "unknown fallback strategy: first"),
    ("any", "", {}, ("named", "single"), "no configuration files available"),
])
def test_a_failed_choice_is_config_managers_error(label, default, available, fallbacks, message):
    with pytest.raises(ConfigManagerError) as err:
        choose_config(label, default, available, fallbacks)
    assert str(err.value) == message


def test_time_slicing_lists_annotated_replica_ids():
    devices = listed_devices("n", whole_gpus(8), "none", parse_config(FOUR))["nvidia.com/gpu"]
    assert len(devices) == 32
    assert devices[0].id == devices[0].physical + "::0" and devices[3].id.endswith("::3")
    assert len({d.physical for d in devices}) == 8


def test_mig_devices_by_strategy():
    layout = plan(H100, 8, "all-1g.10gb")
    mixed = listed_devices("n", layout, "mixed", NO_SHARING)
    assert list(mixed) == ["nvidia.com/mig-1g.10gb"] and len(mixed["nvidia.com/mig-1g.10gb"]) == 56
    assert mixed["nvidia.com/mig-1g.10gb"][0].id.startswith("MIG-")
    assert mixed["nvidia.com/mig-1g.10gb"][0].mig_profile == "1g.10gb"
    assert len(listed_devices("n", layout, "single", NO_SHARING)["nvidia.com/gpu"]) == 56


def test_plugin_refuses_mps_on_mig_devices_with_nvidias_reason():
    devices, error = plugin_devices("n", plan(H100, 1, "all-1g.10gb"), "single",
                                    LoadedConfig("mps", parse_config(MPS)))
    assert devices == {} and error == "sharing using MPS is not supported for MIG devices"
    devices, error = plugin_devices("n", whole_gpus(1), "mixed", LoadedConfig("mps", parse_config(MPS)))
    assert error == "using --mig-strategy=mixed is not supported with MPS"


def test_mps_is_supported_on_whole_gpus():
    devices, error = plugin_devices("n", whole_gpus(2), "none", LoadedConfig("mps", parse_config(MPS)))
    assert error is None and len(devices["nvidia.com/gpu"]) == 4


def test_node_resources_keep_capacity_of_unhealthy_devices():
    assert node_resources({"nvidia.com/gpu": 8}, {}) == {"capacity": {"nvidia.com/gpu": "8"},
                                                         "allocatable": {"nvidia.com/gpu": "0"}}
