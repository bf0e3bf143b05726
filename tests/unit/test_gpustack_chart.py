"""gpu-operator chart values, helm --set parsing and the rendered ClusterPolicy (docs/fidelity.md#gpustack-core)."""
import pytest

from gpulab.gpustack.chart import (
    CLUSTERPOLICY_CRD, KNOWN_VERSIONS, ChartError, cluster_policy, default_values, deploys, gpu_cluster, parse_set,
    values_for,
)

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize("version, driver, plugin, toolkit, mig_manager", [
    ("v25.10.1", "580.105.08", "v0.18.1", "v1.18.1", "v0.13.1"),
    ("v26.3.3", "580.126.20", "v0.19.3", "v1.19.1", "v0.14.2"),
    # NVIDIA's component matrix, v26.7.0 column (cloud-native-docs gpu-operator/life-cycle-policy.rst)
    ("v26.7.0", "595.91.07", "v0.20.0", "v1.20.0", "v0.15.0"),
])
def test_component_versions_per_chart(version, driver, plugin, toolkit, mig_manager):
    values = default_values(version)
    assert values["driver"]["version"] == driver
    assert values["devicePlugin"]["version"] == values["gfd"]["version"] == plugin
    assert values["toolkit"]["version"] == toolkit
    assert values["migManager"]["version"] == mig_manager


def test_defaults_learners_rely_on():
    values = default_values()
    assert values["driver"]["enabled"] and values["toolkit"]["enabled"] and values["nfd"]["enabled"]
    assert (values["driver"]["repository"], values["driver"]["image"]) == ("nvcr.io/nvidia", "driver")
    assert values["mig"]["strategy"] == "single"
    assert values["migManager"]["enabled"] is True
    assert values["migManager"]["config"] == {"default": "all-disabled", "create": False, "name": "", "data": {}}
    assert values["devicePlugin"]["config"]["name"] == "" and values["devicePlugin"]["config"]["default"] == ""
    assert values["dcgmExporter"]["enabled"] and not values["dcgm"]["enabled"]
    assert values["nodeStatusExporter"]["enabled"] is False
    assert values["daemonsets"]["tolerations"] == [TOLERATION]
    assert "defaultRuntime" not in values["operator"]


def test_parse_set_follows_helm_strvals():
    assert parse_set(["driver.version=580.105.08", "mig.strategy=mixed,driver.enabled=false"]) == {
        "driver": {"version": "580.105.08", "enabled": False}, "mig": {"strategy": "mixed"}}
    assert parse_set(["a=TRUE", "b=null", "c=007", "d=0", "e=42", "f=1.5", "g=-3"]) == {
        "a": True, "b": None, "c": "007", "d": 0, "e": 42, "f": "1.5", "g": -3}
    assert parse_set(["daemonsets.tolerations[0].key=x", "daemonsets.tolerations[0].operator=Exists"]) == {
        "daemonsets": {"tolerations": [{"key": "x", "operator": "Exists"}]}}
    assert parse_set(["list={a,b,3}", "esc=a\\,b", r"nodeSelector.nvidia\.com/gpu=true"]) == {
        "list": ["a", "b", 3], "esc": "a,b", "nodeSelector": {"nvidia.com/gpu": True}}


@pytest.mark.parametrize("item, message", [("driver.version", 'key "version" has no value'),
                                           ("a,", 'key "a" has no value (cannot end with ,)')])
def test_parse_set_errors(item, message):
    with pytest.raises(ChartError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        parse_set([item])


def test_values_for_merges_like_helm():
    values = values_for("v25.10.1", parse_set(["driver.version=570.195.03", "daemonsets.tolerations[0].key=x"]))
    assert values["driver"]["version"] == "570.195.03"
    assert values["driver"]["image"] == "driver"  # maps merge
    assert values["daemonsets"]["tolerations"] == [{"key": "x"}]  # lists replace, as in Helm
    assert "image" not in values_for(None, {"driver": {"image": None}})["driver"]  # null deletes


def test_unknown_version_lists_known_ones():
    with pytest.raises(ChartError) as err:
        values_for("v24.9.0")
    assert str(err.value) == ('chart "gpu-operator" version "v24.9.0" not found in https://helm.ngc.nvidia.com/nvidia '
                              "repository (known versions: v25.10.1, v26.3.3, v26.7.0)")
    assert values_for("26.3.3")["driver"]["version"] == "580.126.20"
    assert KNOWN_VERSIONS == ("v25.10.1", "v26.3.3", "v26.7.0")
    assert values_for()["driver"]["version"] == "595.91.07"      # the default release is v26.7.0


def test_unknown_key_is_rejected_with_a_suggestion():
    with pytest.raises(ChartError) as err:
        values_for(None, parse_set(["drivr.version=1"]))
    assert str(err.value) == ('unknown value "drivr.version": chart gpu-operator v26.7.0 has no such key in its '
                              'values.yaml (Helm would silently ignore it; gpulab rejects it to catch typos); '
                              'did you mean "driver.version"?')


def test_free_form_and_template_only_keys_are_accepted():
    values = values_for(None, parse_set(["operator.defaultRuntime=containerd", "driver.env[0].name=X",
                                         "daemonsets.labels.team=ml", "devicePlugin.resources.limits.cpu=1"]))
    assert values["operator"]["defaultRuntime"] == "containerd"


def test_cluster_policy_rendering():
    policy = cluster_policy(values_for(None, parse_set(["devicePlugin.config.name=time-slicing-config",
                                                        "devicePlugin.config.default=any"])))
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]["name"]) == (
        "nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["metadata"]["labels"]["app.kubernetes.io/component"] == "gpu-operator"
    assert policy["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-v26.7.0"
    spec = policy["spec"]
    assert spec["mig"] == {"strategy": "single"}
    assert spec["driver"]["version"] == "595.91.07" and spec["driver"]["enabled"] is True
    assert spec["migManager"]["config"] == {"name": "default-mig-parted-config", "default": "all-disabled"}
    assert spec["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "any"}
    assert spec["daemonsets"]["tolerations"] == [TOLERATION]
    assert spec["validator"]["version"] == "v26.7.0"  # defaults to the chart's appVersion
    assert "defaultRuntime" not in spec["operator"]


def test_cluster_policy_follows_the_templates_field_by_field_guards():
    spec = cluster_policy(values_for("v26.3.3", parse_set(["daemonsets.labels.team=ml"])), version="v26.3.3")["spec"]
    assert spec["driver"]["upgradePolicy"] == {
        "autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%",
        "waitForCompletion": {"timeoutSeconds": 0},
        "podDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
        "drain": {"enable": False, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": False}}
    assert spec["daemonsets"]["labels"] == {"helm.sh/chart": "gpu-operator-v26.3.3",
                                            "app.kubernetes.io/managed-by": "gpu-operator", "team": "ml"}
    assert not [name for name, block in spec.items() if "hostNetwork" in block]   # written only when true
    assert "mps" not in spec["devicePlugin"]
    assert "env" not in spec["driver"]["manager"] and spec["validator"]["plugin"] == {"env": []}


def test_cluster_policy_without_plugin_config_has_no_config_block():
    assert "config" not in cluster_policy(values_for())["spec"]["devicePlugin"]


def test_crd_is_cluster_scoped_with_status_and_age_columns():
    assert CLUSTERPOLICY_CRD["metadata"]["name"] == "clusterpolicies.nvidia.com"
    assert CLUSTERPOLICY_CRD["spec"]["scope"] == "Cluster"
    version = CLUSTERPOLICY_CRD["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Status", "Age"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    assert schema["status"]["properties"]["state"]["enum"] == ["ignored", "ready", "notReady"]
    assert schema["spec"]["properties"]["mig"]["properties"]["strategy"]["enum"] == ["none", "single", "mixed"]
    assert schema["spec"]["properties"]["driver"]["properties"]["kernelModuleType"]["default"] == "auto"


def test_from_v26_7_0_a_driver_managed_by_nvidiadriver_objects_keeps_only_its_upgrade_policy():
    """templates/clusterpolicy.yaml v26.7.0 writes the driver's image, version and settings only without the
    NVIDIADriver CRD; v26.3.3 writes them either way."""
    sets = parse_set(["driver.nvidiaDriverCRD.enabled=true"])
    spec = cluster_policy(values_for("v26.7.0", sets), version="v26.7.0")["spec"]
    assert sorted(spec["driver"]) == ["enabled", "upgradePolicy", "useNvidiaDriverCRD"]
    assert spec["driver"]["useNvidiaDriverCRD"] is True
    older = cluster_policy(values_for("v26.3.3", sets), version="v26.3.3")["spec"]
    assert older["driver"]["version"] == "580.126.20" and older["driver"]["useNvidiaDriverCRD"] is True


@pytest.mark.parametrize("items, message", [
    (["gpuCluster.deployCR=true"], "execution error at (gpu-operator/templates/validations.yaml:2:3): "
                                   "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true; only one CR "
                                   "can exist"),
    (["gpuCluster.deployCR=true", "clusterPolicy.deployCR=false"],
     "execution error at (gpu-operator/templates/validations.yaml:6:3): the NVIDIADriver CRD must be enabled when "
     "deploying a GPUCluster CR, set driver.nvidiaDriverCRD.enabled=true"),
    (["gpuCluster.deployCR=true", "clusterPolicy.deployCR=false", "driver.nvidiaDriverCRD.enabled=true"],
     "gpuCluster.deployCR=true with driver.nvidiaDriverCRD.enabled=true: chart gpu-operator v26.7.0 would leave the "
     "driver to NVIDIADriver objects, which gpulab does not emulate; set driver.enabled=false (the emulated hosts "
     "have their driver installed)"),
    (["clusterPolicy.deployCR=false"], "clusterPolicy.deployCR=false: chart gpu-operator v26.7.0 would deploy no "
                                       "ClusterPolicy and no GPUCluster, leaving the operator nothing to do; set "
                                       "gpuCluster.deployCR=true for the DRA stack"),
])
def test_the_charts_validations_refuse_two_custom_resources_or_a_gpucluster_without_a_driver(items, message):
    with pytest.raises(ChartError) as err:
        values_for("v26.7.0", parse_set(items))
    assert str(err.value) == message


def test_a_gpucluster_release_renders_the_dra_driver_block_and_no_cluster_policy():
    """templates/gpucluster.yaml (v26.7.0): the singleton ``gpu-cluster``, kept by helm, the draDriver values."""
    values = values_for("v26.7.0", parse_set(["gpuCluster.deployCR=true", "clusterPolicy.deployCR=false",
                                              "driver.enabled=false", "draDriver.featureGates.DynamicMIG=true"]))
    assert deploys(values) == (False, True)
    cluster = gpu_cluster(values, version="v26.7.0")
    assert cluster["metadata"]["name"] == "gpu-cluster"
    assert cluster["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert cluster["spec"]["draDriver"] == {
        "repository": "nvcr.io/nvidia", "image": "dra-driver-nvidia-gpu", "version": "v0.5.0",
        "imagePullPolicy": "IfNotPresent", "featureGates": {"DynamicMIG": True}, "computeDomains": {"enabled": True}}
