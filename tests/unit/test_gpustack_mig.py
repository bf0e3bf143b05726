"""mig-parted planning and the resources a MIG layout advertises (docs/fidelity.md#gpustack-core)."""
import pytest

from gpulab.gpustack.hardware import gpu_model
from gpulab.gpustack.mig import (
    DevicePluginError, MigPartedError, default_config_map, default_configs, device_map, gpu_instance_id, parse_config,
    plan, whole_gpus,
)

H100 = gpu_model("H100")
CUSTOM = parse_config("""
version: v1
mig-configs:
  four-3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 4
  one-of-each:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 1
    - devices: [1]
      mig-enabled: false
  typo:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.50gb": 1
  by-filter:
    - device-filter: ["0x20B010DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
    - device-filter: "0x233010DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
""")
ORDERINGS_FAILED = ("error applying MIG configuration with hooks: error setting MIGConfig: "
                    "error attempting multiple config orderings: all orderings failed")


def test_all_1g_10gb_on_8_h100_mixed_and_single():
    layout = plan(H100, 8, "all-1g.10gb")
    assert device_map(layout, "mixed") == {"nvidia.com/mig-1g.10gb": 56}
    assert device_map(layout, "single") == {"nvidia.com/gpu": 56}
    assert device_map(layout, "none") == {"nvidia.com/gpu": 8}


def test_impossible_geometry_fails_with_nvidia_reason():
    with pytest.raises(MigPartedError) as err:
        plan(H100, 1, "four-3g", CUSTOM)
    assert str(err.value) == ORDERINGS_FAILED
    assert err.value.log == ("Error creating GPU instance for '3g.40gb': Insufficient Resources",)


def test_unknown_profile_is_reported_with_the_expected_name():
    with pytest.raises(MigPartedError) as err:
        plan(H100, 1, "typo", CUSTOM)
    assert err.value.log == ("Unsupported MIG Device specified 3g.50gb, expected 3g.40gb instead",)


def test_missing_config_name():
    with pytest.raises(MigPartedError, match="^error selecting MIG config: selected mig-config not present: nope$"):
        plan(H100, 1, "nope")


def test_non_mig_gpu_cannot_take_a_mig_config():
    # The default configs' device filters skip an L4 entirely; naming it by index fails.
    assert plan(gpu_model("L4"), 1, "all-1g.10gb") == whole_gpus(1)
    with pytest.raises(MigPartedError, match="^error applying MIG configuration with hooks: "
                                             "cannot set MIG config on non MIG-capable GPU$"):
        plan(gpu_model("L4"), 2, "one-of-each", CUSTOM)


def test_per_device_entries_and_placements():
    layout = plan(H100, 2, "one-of-each", CUSTOM)
    assert layout[1].mig_enabled is False
    placed = [(d.profile.name, d.start) for d in layout[0].devices]
    assert sorted(placed) == [("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)]
    assert device_map(layout, "mixed") == {"nvidia.com/gpu": 1, "nvidia.com/mig-3g.40gb": 1,
                                           "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-1g.10gb": 1}


def test_device_filter_selects_entries_by_pci_id():
    assert device_map(plan(H100, 8, "by-filter", CUSTOM), "mixed") == {"nvidia.com/mig-1g.10gb": 56}
    a100 = gpu_model("A100-SXM4-40GB")
    assert device_map(plan(a100, 2, "by-filter", CUSTOM), "mixed") == {"nvidia.com/mig-1g.5gb": 14}


def test_single_strategy_rejects_mixed_profiles_like_the_device_plugin():
    with pytest.raises(DevicePluginError, match="^error building device map from config.resources: invalid MIG "
                                                "configuration: more than one MIG device type present on node$"):
        device_map(plan(H100, 8, "all-balanced"), "single")


@pytest.mark.parametrize("model, config, expected", [
    ("H100", "all-balanced", {"nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-1g.10gb": 16}),
    ("A100-SXM4-40GB", "all-balanced",
     {"nvidia.com/mig-3g.20gb": 8, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-1g.5gb": 16}),
    ("A100-SXM4-40GB", "all-1g.5gb", {"nvidia.com/mig-1g.5gb": 56}),
    ("H200", "all-1g.18gb", {"nvidia.com/mig-1g.18gb": 56}),
    ("H200", "all-3g.71gb", {"nvidia.com/mig-3g.71gb": 16}),
    ("H100", "all-disabled", {"nvidia.com/gpu": 8}),
])
def test_default_configmap_configs(model, config, expected):
    assert device_map(plan(gpu_model(model), 8, config), "mixed") == expected


def test_mig_enabled_without_devices_is_invalid_for_the_device_plugin():
    with pytest.raises(DevicePluginError, match="at least one device with migEnabled=true was not configured "
                                                "correctly: device 0 has an invalid MIG configuration$"):
        device_map(plan(H100, 8, "all-enabled"), "mixed")


def test_default_configmap_is_the_operator_one():
    cm = default_config_map()
    assert (cm["kind"], cm["metadata"]["name"]) == ("ConfigMap", "default-mig-parted-config")
    assert {"all-disabled", "all-enabled", "all-balanced", "all-1g.10gb", "all-3g.40gb", "all-1g.18gb"} <= set(
        default_configs())


def test_config_file_errors_use_mig_parted_wrapping():
    with pytest.raises(MigPartedError, match="^error parsing config file: unmarshal error: error unmarshaling JSON: "
                                             "while decoding JSON: unknown version: v2$"):
        parse_config("version: v2\nmig-configs: {}\n")
    with pytest.raises(MigPartedError, match="invalid format for 'foo': error parsing '.' separated fields in "
                                             "MigProfile string: parsed wrong number of fields, expected 2 or 3$"):
        parse_config("version: v1\nmig-configs:\n  x:\n  - devices: all\n    mig-enabled: true\n"
                     "    mig-devices:\n      foo: 1\n")


def test_gpu_instance_ids_follow_placement():
    assert gpu_instance_id(H100.mig_profile("7g.80gb"), 0) == 0
    assert [gpu_instance_id(H100.mig_profile("1g.10gb"), s) for s in (0, 6)] == [7, 13]


def test_whole_gpus_advertise_under_every_strategy():
    for strategy in ("none", "single", "mixed"):
        assert device_map(whole_gpus(8), strategy) == {"nvidia.com/gpu": 8}
