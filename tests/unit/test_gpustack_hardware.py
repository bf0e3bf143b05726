"""GPU catalog figures against NVML / nvidia-smi / mig-parted sources (docs/fidelity.md#gpustack-core)."""
import math
import re

import pytest

from gpulab.gpustack.hardware import architecture_family, catalog, gpu_model, gpu_uuid, mig_uuid


def test_h100_as_nvml_reports_it():
    h100 = gpu_model("H100")
    assert (h100.name, h100.memory_mib, h100.compute_capability, h100.family, h100.multiprocessors) == (
        "NVIDIA H100 80GB HBM3", 81559, (9, 0), "hopper", 132)
    assert h100.mig_capable
    assert h100.pci_device_filter_id == "0x233010DE"


def test_h200_measured_name_and_memory():
    h200 = gpu_model("NVIDIA H200")
    assert (h200.name, h200.memory_mib, h200.family) == ("NVIDIA H200", 143771, "hopper")


@pytest.mark.parametrize("alias", ["H100", "NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"])
def test_aliases_resolve_to_the_same_model(alias):
    assert gpu_model(alias) is gpu_model("H100")


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(KeyError, match="known models: .*H200-SXM5-141GB"):
        gpu_model("B200")


def test_l4_and_t4_are_not_mig_capable():
    assert not gpu_model("L4").mig_capable and gpu_model("L4").mig_profiles == ()
    assert gpu_model("T4").name == "Tesla T4" and gpu_model("T4").family == "turing"


# nvidia-smi mig -lgip on each GPU (profile name, id, memory MiB, SMs, max instances).
@pytest.mark.parametrize("model, rows", [
    ("A100-SXM4-40GB", [("1g.5gb", 19, 4864, 14, 7), ("1g.5gb+me", 20, 4864, 14, 1), ("1g.10gb", 15, 9856, 14, 4),
                        ("2g.10gb", 14, 9984, 28, 3), ("3g.20gb", 9, 20096, 42, 2), ("4g.20gb", 5, 20096, 56, 1),
                        ("7g.40gb", 0, 40448, 98, 1)]),
    ("H100", [("1g.10gb", 19, 9984, 16, 7), ("1g.20gb", 15, 20096, 26, 4), ("2g.20gb", 14, 20096, 32, 3),
              ("3g.40gb", 9, 40448, 60, 2), ("4g.40gb", 5, 40448, 64, 1), ("7g.80gb", 0, 81152, 132, 1)]),
    ("H200", [("1g.18gb", 19, 16384, 16, 7), ("1g.35gb", 15, 33280, 26, 4), ("2g.35gb", 14, 33280, 32, 3),
              ("3g.71gb", 9, 71424, 60, 2), ("4g.71gb", 5, 71424, 64, 1), ("7g.141gb", 0, 143360, 132, 1)]),
])
def test_mig_profiles_match_nvidia_smi_lgip(model, rows):
    gpu = gpu_model(model)
    for name, profile_id, memory, sms, instances in rows:
        profile = gpu.mig_profile(name)
        assert (profile.id, profile.memory_mib, profile.multiprocessors, profile.instances) == (
            profile_id, memory, sms, instances), name


@pytest.mark.parametrize("gpu", [m for m in catalog() if m.mig_capable], ids=lambda m: m.name)
def test_profile_names_follow_mig_parted_memory_rounding(gpu):
    """mig-parted names a profile by ceil(mem/total*8)/8 of the total rounded up to GiB (Go math.Round)."""
    total_gib = math.ceil(gpu.memory_mib / 1024)
    for profile in gpu.mig_profiles:
        eighths = math.ceil(profile.memory_mib / gpu.memory_mib * 8 - 1e-9)
        gb = math.floor(eighths / 8 * total_gib + 0.5)
        assert re.match(rf"^{profile.compute_slices}g\.{gb}gb", profile.name), profile.name


def test_placements_as_lgipp_prints_them():
    h100 = gpu_model("H100")
    assert h100.mig_profile("1g.10gb").placements == (0, 1, 2, 3, 4, 5, 6)
    assert h100.mig_profile("2g.20gb").placements == (0, 2, 4)
    assert h100.mig_profile("3g.40gb").placements == (0, 4)
    assert h100.mig_profile("4g.40gb").placements == (0,)
    assert h100.mig_profile("3g.40gb").memory_slices == 4


@pytest.mark.parametrize("major, minor, family", [(9, 0, "hopper"), (8, 0, "ampere"), (8, 9, "ada-lovelace"),
                                                  (7, 5, "turing"), (10, 0, "blackwell"), (4, 0, "undefined")])
def test_architecture_family_is_gfd_rule(major, minor, family):
    assert architecture_family(major, minor) == family


def test_uuids_are_deterministic_and_well_formed():
    first = gpu_uuid("gpu-node-1", 0)
    assert first == gpu_uuid("gpu-node-1", 0) != gpu_uuid("gpu-node-1", 1) != gpu_uuid("gpu-node-2", 0)
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", first)
    mig = mig_uuid(first, 7, 0)
    assert mig == mig_uuid(first, 7, 0) != mig_uuid(first, 8, 0)
    assert re.fullmatch(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", mig)
