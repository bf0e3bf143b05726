"""Driver versions and the upgrade policy (gpulab.gpustack.driver; docs/fidelity.md#gpustack)."""
from gpulab.gpustack.driver import UpgradePolicy, cuda_version, event_message, image_driver_version, unmanaged_refusal


def test_cuda_version_of_driver_branches():
    assert cuda_version("610.57.04") == "13.3" and cuda_version("595.91.07") == "13.2"   # v26.7.0's matrix
    assert cuda_version("580.105.08") == "13.0"
    assert cuda_version("570.172.08") == "12.8"
    assert cuda_version("550.163.01") == "12.4"
    assert cuda_version("535.261.03") == "12.2"


def test_driver_version_from_the_image():
    assert image_driver_version("nvcr.io/nvidia/driver:580.105.08-ubuntu22.04") == "580.105.08"
    assert image_driver_version("nvcr.io/nvidia/driver:570.172.08-debian12") == "570.172.08"


def test_upgrade_policy_defaults_and_overrides():
    assert UpgradePolicy.from_spec({}) == UpgradePolicy(True, 1, False)
    spec = {"driver": {"upgradePolicy": {"autoUpgrade": False, "maxParallelUpgrades": 0,
                                         "podDeletion": {"force": True}}}}
    assert UpgradePolicy.from_spec(spec) == UpgradePolicy(False, 0, True)


def test_pods_without_a_controller_are_refused():
    bare = {"metadata": {"name": "bare", "namespace": "default"}}
    owned = {"metadata": {"name": "web-1", "namespace": "default",
                          "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "controller": True}]}}
    assert unmanaged_refusal([owned]) is None
    assert unmanaged_refusal([bare, owned]) == (
        "cannot delete Pods declare no controller (use --force to override): default/bare")
    assert event_message("cordon-required") == "Successfully updated node state label to cordon-required"
