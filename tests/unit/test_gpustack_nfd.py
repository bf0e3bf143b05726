"""NFD's labels for the emulated nodes (gpulab.gpustack.nfd; docs/fidelity.md#gpustack)."""
from gpulab.gpustack.nfd import FEATURE_LABELS_ANNOTATION, feature_labels_annotation, nfd_labels, os_release


def node(os_image="Ubuntu 22.04.5 LTS", kernel="5.15.0-1063-nvidia", gpu=True):
    notes = {"gpulab.dev/gpu-model": "NVIDIA H100 80GB HBM3", "gpulab.dev/gpu-count": "8"} if gpu else {}
    return {"metadata": {"name": "n", "annotations": notes},
            "status": {"nodeInfo": {"osImage": os_image, "kernelVersion": kernel}}}


def test_os_release_from_os_image():
    assert os_release("Ubuntu 22.04.5 LTS") == ("ubuntu", "22.04")
    assert os_release("Debian GNU/Linux 12 (bookworm)") == ("debian", "12")
    assert os_release("Red Hat Enterprise Linux 9.4 (Plow)") == ("rhel", "9.4")
    assert os_release("Red Hat Enterprise Linux CoreOS 418.94.202410090804-0") == ("rhcos", "418.94")
    assert os_release("Windows Server") is None


def test_gpu_node_labels():
    assert nfd_labels(node()) == {
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-1063-nvidia",
        "feature.node.kubernetes.io/kernel-version.major": "5",
        "feature.node.kubernetes.io/kernel-version.minor": "15",
        "feature.node.kubernetes.io/kernel-version.revision": "0",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "22",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "04",
    }


def test_cpu_node_has_no_nvidia_pci_label():
    labels = nfd_labels(node("Debian GNU/Linux 12 (bookworm)", gpu=False))
    assert "feature.node.kubernetes.io/pci-10de.present" not in labels
    assert labels["feature.node.kubernetes.io/system-os_release.ID"] == "debian"
    assert labels["feature.node.kubernetes.io/system-os_release.VERSION_ID.major"] == "12"
    assert "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor" not in labels


def test_feature_labels_annotation_strips_the_default_namespace():
    assert FEATURE_LABELS_ANNOTATION == "nfd.node.kubernetes.io/feature-labels"
    assert feature_labels_annotation({"feature.node.kubernetes.io/pci-10de.present": "true",
                                      "nvidia.com/gpu.product": "x"}) == "nvidia.com/gpu.product,pci-10de.present"
