"""Device plugin config parsing, advertised resources and Allocate refusals (docs/fidelity.md#gpustack-core)."""
import pytest

from gpulab.gpustack.hardware import gpu_model
from gpulab.gpustack.mig import DevicePluginError, plan, whole_gpus
from gpulab.gpustack.sharing import (
    NO_SHARING, DevicePluginConfigError, admission_error, advertised, effective_mig_strategy, parse_config,
)

LOAD = ("unable to load config: unable to finalize config: unable to parse config file: error parsing config file: "
        "unmarshal error: error unmarshaling JSON: while decoding JSON: ")
TIME_SLICING = """
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: {rename}
    failRequestsGreaterThanOne: {fail}
    resources:
    - name: nvidia.com/gpu
      replicas: {replicas}
"""


def time_slicing(replicas=4, rename="false", fail="false"):
    return parse_config(TIME_SLICING.format(replicas=replicas, rename=rename, fail=fail))


def test_replicas_4_on_8_h100_gives_32():
    assert advertised(whole_gpus(8), "none", time_slicing()) == {"nvidia.com/gpu": 32}
    assert advertised(whole_gpus(8), "none", NO_SHARING) == {"nvidia.com/gpu": 8}


def test_rename_by_default_advertises_gpu_shared():
    assert advertised(whole_gpus(8), "none", time_slicing(rename="true")) == {"nvidia.com/gpu.shared": 32}


def test_mig_devices_can_be_time_sliced():
    config = parse_config("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                          "    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n")
    layout = plan(gpu_model("H100"), 8, "all-1g.10gb")
    assert advertised(layout, "mixed", config) == {"nvidia.com/mig-1g.10gb": 112}


def test_mps_multiplies_and_defaults_to_failing_big_requests():
    config = parse_config("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    assert (config.strategy, config.fail_requests_greater_than_one) == ("mps", True)
    assert advertised(whole_gpus(8), "none", config) == {"nvidia.com/gpu": 32}


@pytest.mark.parametrize("text, message", [
    (TIME_SLICING.format(replicas=1, rename="false", fail="false"), LOAD + "number of replicas must be >= 2"),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", LOAD + "no resources specified"),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n", LOAD + "no resource name specified"),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
     LOAD + "no replicas specified"),
    ("version: v2\n", "unable to load config: unable to finalize config: unable to parse config file: "
                      "error parsing config file: unknown version: v2"),
    ("version: v1\nflags:\n  migStrategy: bogus\n", "unknown MIG strategy: bogus"),
    ("version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n"
     "      replicas: 2\n", "using --mig-strategy=mixed is not supported with MPS"),
])
def test_config_errors_are_the_plugins(text, message):
    with pytest.raises(DevicePluginConfigError) as err:
        parse_config(text)
    assert str(err.value) == message


def test_only_nvidia_resources_can_be_shared():
    with pytest.raises(DevicePluginConfigError, match=r"incorrect format for resource name 'nvidia.com/amd.com/gpu'"):
        parse_config("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: amd.com/gpu\n      replicas: 2\n")


def test_mps_on_mig_devices_is_refused_at_start():
    mps = parse_config("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    with pytest.raises(DevicePluginError, match="^sharing using MPS is not supported for MIG devices$"):
        advertised(plan(gpu_model("H100"), 8, "all-1g.10gb"), "single", mps)


def test_fail_requests_greater_than_one_gives_the_kubelet_admission_error():
    config = time_slicing(rename="true", fail="true")
    assert admission_error(config, "nvidia.com/gpu.shared", 2) == (
        'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for '
        '"nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, '
        'which is unexpected')
    assert admission_error(config, "nvidia.com/gpu.shared", 1) is None
    assert admission_error(time_slicing(), "nvidia.com/gpu", 2) is None


def test_operator_mig_strategy_overrides_the_config_file_flag():
    assert effective_mig_strategy(time_slicing(), "single") == "single"
    assert effective_mig_strategy(time_slicing(), None) == "none"
