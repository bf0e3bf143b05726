"""`clusterpolicy_ready()` waits until the operator has settled, not for the first ``ready``.

gpu-operator deploys its MIG manager only after GFD has labelled a node
``nvidia.com/mig.capable=true``, so the ClusterPolicy goes ready, then notReady
again: a wait that stopped at the first ``ready`` let lab01's graded cell see
``notReady`` (the CI failure this pins).
"""
from gpulab.learner.conditions import clusterpolicy_settled


class Reader:
    def __init__(self, state, nodes, spec=None, daemonsets=()):
        self.policy = {"metadata": {"uid": "policy-uid"}, "spec": spec or {},
                       "status": {"state": state, "namespace": "gpu-operator"}}
        self._nodes = nodes
        self._daemonsets = list(daemonsets)

    def daemonsets(self, namespace):
        assert namespace == "gpu-operator"
        return self._daemonsets

    def custom_objects(self, group, version, plural):
        assert (group, version, plural) == ("nvidia.com", "v1", "clusterpolicies")
        return [self.policy]

    def nodes(self):
        return self._nodes


def node(name, labels, gpus="8"):
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"nvidia.com/gpu": gpus}}}


PRESENT = {"nvidia.com/gpu.present": "true"}
H100 = {**PRESENT, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.capable": "true"}
CPU = node("gpulab-worker", {"kubernetes.io/os": "linux"})
GPU_UNLABELLED = node("gpulab-worker2", PRESENT)
H100_PENDING = node("gpulab-worker2", {**H100, "nvidia.com/mig.config.state": "pending"})
H100_DONE = node("gpulab-worker2", {**H100, "nvidia.com/mig.config.state": "success"})


def test_ready_with_every_gpu_node_through_is_settled():
    assert clusterpolicy_settled(Reader("ready", [CPU, H100_DONE])) == (True, "ready")


def test_ready_before_gfd_labelled_a_gpu_node_is_not_settled():
    settled, detail = clusterpolicy_settled(Reader("ready", [CPU, GPU_UNLABELLED]))
    assert not settled and "gpulab-worker2 (GPU Feature Discovery)" in detail


def test_ready_before_the_mig_manager_ran_is_not_settled():
    settled, detail = clusterpolicy_settled(Reader("ready", [H100_PENDING]))
    assert not settled and "gpulab-worker2 (MIG manager)" in detail


def test_ready_while_a_gpu_node_is_between_two_device_plugin_pods_is_not_settled():
    """A config change restarts the device plugin: until the new pod registers, the node advertises no GPU."""
    between = node("gpulab-worker2", H100_DONE["metadata"]["labels"], gpus="0")
    settled, detail = clusterpolicy_settled(Reader("ready", [CPU, between]))
    assert not settled and "gpulab-worker2 (device plugin)" in detail
    mig_only = {"metadata": H100_DONE["metadata"], "status": {"allocatable": {"nvidia.com/gpu": "0",
                                                                             "nvidia.com/mig-1g.10gb": "7"}}}
    assert clusterpolicy_settled(Reader("ready", [mig_only])) == (True, "ready")
    assert clusterpolicy_settled(Reader("ready", [between], {"devicePlugin": {"enabled": False}}))[0]


def test_mig_manager_disabled_is_not_waited_for():
    assert clusterpolicy_settled(Reader("ready", [H100_PENDING], {"migManager": {"enabled": False}}))[0]


def test_not_ready_is_not_settled_and_absent_says_so():
    assert clusterpolicy_settled(Reader("notReady", [H100_DONE])) == (False, "notReady")
    reader = Reader("ready", [])
    reader.custom_objects = lambda *args: []
    assert clusterpolicy_settled(reader) == (False, "absent")


def daemonset(name, *, updated, available, strategy="RollingUpdate", owner="policy-uid", generation=2, observed=2):
    return {"metadata": {"name": name, "generation": generation, "ownerReferences": [{"uid": owner}]},
            "spec": {"updateStrategy": {"type": strategy}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": 2, "updatedNumberScheduled": updated,
                       "numberAvailable": available}}


def test_ready_while_an_operand_daemonset_rolls_out_is_not_settled():
    halfway = daemonset("nvidia-operator-validator", updated=1, available=2)
    settled, detail = clusterpolicy_settled(Reader("ready", [H100_DONE], daemonsets=[halfway]))
    assert not settled and detail == "ready, still rolling out nvidia-operator-validator"
    unobserved = daemonset("nvidia-dcgm-exporter", updated=2, available=2, generation=3)
    assert not clusterpolicy_settled(Reader("ready", [H100_DONE], daemonsets=[unobserved]))[0]
    between_pods = daemonset("gpu-feature-discovery", updated=2, available=1)
    assert not clusterpolicy_settled(Reader("ready", [H100_DONE], daemonsets=[between_pods]))[0]


def test_rolled_out_on_delete_and_foreign_daemonsets_do_not_hold_it_back():
    done = daemonset("nvidia-operator-validator", updated=2, available=2)
    driver = daemonset("nvidia-driver-daemonset", updated=0, available=2, strategy="OnDelete")  # the upgrade controller's
    nfd = daemonset("gpu-operator-node-feature-discovery-worker", updated=0, available=2, owner="helm")
    assert clusterpolicy_settled(Reader("ready", [H100_DONE], daemonsets=[done, driver, nfd])) == (True, "ready")


def test_a_device_plugin_that_has_not_restarted_with_gfds_config_is_not_settled():
    """GFD relabels a node for a new config before its device plugin re-registers: the counts disagree."""
    labels = {**H100_DONE["metadata"]["labels"], "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4"}
    settled, detail = clusterpolicy_settled(Reader("ready", [node("gpulab-worker2", labels, gpus="8")]))
    assert not settled and detail == ("ready, the device plugin on gpulab-worker2 advertises 8 nvidia.com/gpu where "
                                      "GPU Feature Discovery labels 8 x 4")
    assert clusterpolicy_settled(Reader("ready", [node("gpulab-worker2", labels, gpus="32")])) == (True, "ready")


def test_a_device_plugin_daemonset_the_operator_has_not_rewritten_is_not_settled():
    spec = {"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "sharing"}}}
    stale = {"metadata": {"name": "nvidia-device-plugin-daemonset"}, "spec": {"template": {"spec": {
        "containers": [{"name": "nvidia-device-plugin", "env": [{"name": "MIG_STRATEGY", "value": "mixed"}]}]}}}}
    settled, detail = clusterpolicy_settled(Reader("ready", [CPU], spec, [stale]))
    assert not settled and detail == ("ready, the operator has not applied devicePlugin.config.name to "
                                      "nvidia-device-plugin-daemonset yet")
