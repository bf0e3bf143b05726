"""The GPU Operator chart's CRDs as kubectl and the official client see them: schemas, pruning, CEL rules.

``gpulab install gpu-operator`` creates the CRDs of NVIDIA's chart v26.7.0 (and its node-feature-discovery
sub-chart) with their complete schemas; the embedded apiserver publishes them (``kubectl explain``), prunes
and warns about undeclared fields, and evaluates their ``x-kubernetes-validations`` rules with
apiextensions-apiserver's messages.
"""
from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from .conftest import wait_for

pytestmark = pytest.mark.xdist_group("operator-crds")

CHART_CRDS = {"clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com", "nodefeatures.nfd.k8s-sigs.io",
              "nodefeaturerules.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io"}
# spec.driver of ClusterPolicy in NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/crds/.
DRIVER_FIELDS = ["args", "certConfig", "enabled", "env", "hostNetwork", "image", "imagePullPolicy",
                 "imagePullSecrets", "kernelModuleConfig", "kernelModuleType", "licensingConfig", "livenessProbe",
                 "manager", "rdma", "readinessProbe", "repoConfig", "repository", "resources", "secretEnv",
                 "startupProbe", "upgradePolicy", "useNvidiaDriverCRD", "useOpenKernelModules", "usePrecompiled",
                 "version", "virtualTopology"]
IMMUTABLE_DRIVER_TYPE = ("driverType is an immutable field. Please create a new NvidiaDriver resource instead "
                         "when you want to change this setting.")
NVIDIA_DRIVER = """
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: demo}
spec: {driverType: gpu, image: driver, repository: nvcr.io/nvidia, version: "580.105.08"}
"""
RULE_SCHEMA = {
    "type": "object",
    "x-kubernetes-validations": [
        # string(self.min) would make the message's estimated cost unbounded, and upstream refuses the CRD
        # (tests/test_crd_rule_cost.py)
        {"rule": "self.min <= self.max",
         "messageExpression": "self.max < 0 ? 'max may not be negative' : 'min exceeds max'"},
        {"rule": "!has(self.owner) || self.owner != ''", "message": "owner may not be empty",
         "reason": "FieldValueForbidden", "fieldPath": ".owner"},
        {"rule": "self.min >= 0"},
    ],
    "properties": {
        "min": {"type": "integer"}, "max": {"type": "integer"}, "owner": {"type": "string"},
        "size": {"type": "string", "enum": ["small", "large"]},
        "tier": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                                                  "message": "tier is immutable"}]},
    },
}
RULES_CRD = json.dumps({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "quotas.rules.example.com"},
    "spec": {"group": "rules.example.com", "scope": "Namespaced",
             "names": {"kind": "Quota", "plural": "quotas", "singular": "quota", "listKind": "QuotaList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": RULE_SCHEMA}}}}]},
})


def quota(name: str, **spec) -> str:
    return json.dumps({"apiVersion": "rules.example.com/v1", "kind": "Quota", "metadata": {"name": name},
                       "spec": spec})


@pytest.fixture(scope="module")
def installed(cluster):
    cluster.gpulab("install", "gpu-operator", timeout=180)
    return cluster


@pytest.fixture(scope="module")
def rules_crd(cluster):
    cluster.kubectl("apply", "-f", "-", input=RULES_CRD)
    cluster.kubectl("wait", "--for=condition=Established", "crd/quotas.rules.example.com")
    return cluster


def test_install_creates_every_crd_of_the_chart_with_its_schema(installed):
    crds = json.loads(installed.kubectl("get", "crd", "-o", "json").stdout)["items"]
    by_name = {c["metadata"]["name"]: c for c in crds}
    assert CHART_CRDS <= set(by_name)
    driver = by_name["clusterpolicies.nvidia.com"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
        "properties"]["spec"]["properties"]["driver"]
    assert sorted(driver["properties"]) == DRIVER_FIELDS
    assert driver["properties"]["kernelModuleType"] == {
        "default": "auto", "description": driver["properties"]["kernelModuleType"]["description"],
        "enum": ["auto", "open", "proprietary"], "type": "string"}
    nd = by_name["nvidiadrivers.nvidia.com"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert nd["required"] == ["default", "driverType", "image"]
    assert nd["properties"]["driverType"]["x-kubernetes-validations"][0]["rule"] == "self == oldSelf"
    scopes = {n: by_name[n]["spec"]["scope"] for n in CHART_CRDS}
    assert scopes == {"clusterpolicies.nvidia.com": "Cluster", "nvidiadrivers.nvidia.com": "Cluster",
                      "nodefeatures.nfd.k8s-sigs.io": "Namespaced", "nodefeaturerules.nfd.k8s-sigs.io": "Cluster",
                      "nodefeaturegroups.nfd.k8s-sigs.io": "Namespaced"}


def test_kubectl_explain_lists_the_driver_fields(installed):
    out = installed.kubectl("explain", "clusterpolicy.spec.driver").stdout
    listed = [line.split("\t")[0].strip() for line in out.splitlines() if line.startswith("  ") and "\t<" in line]
    assert listed == DRIVER_FIELDS
    enum = installed.kubectl("explain", "nvidiadriver.spec.driverType").stdout
    assert "ENUM:\n    gpu\n    vgpu\n    vgpu-host-manager" in enum
    nfd = installed.kubectl("explain", "nodefeaturerule.spec.rules.matchFeatures").stdout
    assert "matchExpressions" in nfd and "feature\t<string> -required-" in nfd


def test_misspelt_clusterpolicy_field_is_warned_about_and_pruned(installed):
    proc = installed.kubectl("patch", "clusterpolicy", "cluster-policy", "--type", "merge",
                             "-p", '{"spec":{"driver":{"verison":"570.0"}}}')
    assert proc.stderr.strip() == 'Warning: unknown field "spec.driver.verison"'
    assert proc.stdout.strip() == "clusterpolicy.nvidia.com/cluster-policy patched (no change)"
    stored = k8s.CustomObjectsApi(installed.client()).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    assert "verison" not in stored["spec"]["driver"]
    assert stored["spec"]["driver"]["version"]   # the real field is untouched


def test_the_rendered_cluster_policy_has_no_field_the_crd_prunes(installed):
    from gpulab.gpustack import chart

    for version in chart.KNOWN_VERSIONS:
        policy = chart.cluster_policy(chart.values_for(version, {}), version=version)
        proc = installed.kubectl("create", "--dry-run=server", "--validate=warn", "-f", "-",
                                 input=json.dumps({**policy, "metadata": {"name": f"probe-{version}"}}))
        assert proc.stderr == ""


def test_the_operator_creates_its_runtime_classes(installed):
    def runtime_classes():
        items = json.loads(installed.kubectl("get", "runtimeclass", "-o", "json").stdout)["items"]
        return {rc["metadata"]["name"]: rc for rc in items}

    found = wait_for(lambda: len(runtime_classes()) == 3 and runtime_classes(), what="the operator's RuntimeClasses")
    assert sorted(found) == ["nvidia", "nvidia-cdi", "nvidia-legacy"]   # CDI is enabled by default
    nvidia = found["nvidia"]
    assert nvidia["handler"] == "nvidia"
    assert nvidia["metadata"]["labels"] == {"app.kubernetes.io/component": "gpu-operator"}
    owner = nvidia["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("ClusterPolicy", "cluster-policy", True)


def test_nvidiadriver_type_is_immutable_with_nvidias_message(installed):
    installed.kubectl("apply", "-f", "-", input=NVIDIA_DRIVER)
    api = k8s.CustomObjectsApi(installed.client())
    with pytest.raises(ApiException) as err:
        api.patch_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers", "demo",
                                        {"spec": {"driverType": "vgpu"}})
    assert err.value.status == 422
    cause = json.loads(err.value.body)["details"]["causes"]
    assert cause == [{"reason": "FieldValueInvalid", "field": "spec.driverType",
                      "message": f'Invalid value: "string": {IMMUTABLE_DRIVER_TYPE}'}]
    # a transition rule needs an old value: setting usePrecompiled for the first time passes
    api.patch_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers", "demo",
                                    {"spec": {"usePrecompiled": True}})
    proc = installed.kubectl("patch", "nvidiadriver", "demo", "--type", "merge",
                             "-p", '{"spec":{"usePrecompiled":false}}', check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'The NVIDIADriver "demo" is invalid: spec.usePrecompiled: Invalid value: "boolean": usePrecompiled is an '
        "immutable field. Please create a new NvidiaDriver resource instead when you want to change this setting.")


def test_one_default_nvidiadriver_serves_the_nodes_no_other_selects(installed):
    """v26.7.0's NVIDIADriver ``spec.default``: the driver for every GPU node no other NVIDIADriver's nodeSelector
    matches, so it may not have a nodeSelector itself (the CRD's CEL rule, NVIDIA's message); ``kubectl get``
    shows it in the Default column."""
    pool = NVIDIA_DRIVER.replace("name: demo", "name: h100-pool").replace(
        "spec: {", "spec: {nodeSelector: {nvidia.com/gpu.family: hopper}, ")
    installed.kubectl("apply", "-f", "-", input=pool)
    fallback = NVIDIA_DRIVER.replace("name: demo", "name: everyone-else").replace("spec: {", "spec: {default: true, ")
    installed.kubectl("apply", "-f", "-", input=fallback)
    rows = installed.kubectl("get", "nvidiadrivers", "h100-pool", "everyone-else").stdout.splitlines()
    assert rows[0].split() == ["NAME", "STATUS", "DEFAULT", "AGE"]
    assert [row.split()[:2] for row in rows[1:]] == [["h100-pool", "false"], ["everyone-else", "true"]]
    refused = installed.kubectl("apply", "-f", "-", check=False, input=fallback.replace(
        "spec: {", "spec: {nodeSelector: {nvidia.com/gpu.family: ampere}, "))
    assert refused.returncode == 1
    assert refused.stderr.strip() == ('The NVIDIADriver "everyone-else" is invalid: spec: Invalid value: "object": '
                                      "default NVIDIADriver must not use nodeSelector")
    installed.kubectl("delete", "nvidiadriver", "h100-pool", "everyone-else")


def test_rule_messages_reasons_and_field_paths(rules_crd):
    proc = rules_crd.kubectl("create", "-f", "-", input=quota("q1", min=5, max=2, owner=""), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'The Quota "q1" is invalid: \n'
        '* spec: Invalid value: "object": min exceeds max\n'
        "* spec.owner: Forbidden: owner may not be empty")
    proc = rules_crd.kubectl("create", "-f", "-", input=quota("q2", min=-1, max=2), check=False)
    assert proc.stderr.strip() == 'The Quota "q2" is invalid: spec: Invalid value: "object": failed rule: self.min >= 0'


def test_schema_errors_block_the_rules_and_transition_rules_need_an_old_value(rules_crd):
    proc = rules_crd.kubectl("create", "-f", "-", input=quota("q3", min=5, max=2, size="huge"), check=False)
    assert proc.stderr.strip() == (
        'The Quota "q3" is invalid: \n'
        '* spec.size: Unsupported value: "huge": supported values: "small", "large"\n'
        "* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation")
    rules_crd.kubectl("create", "-f", "-", input=quota("q4", min=1, max=2, tier="gold"))
    proc = rules_crd.kubectl("patch", "quota", "q4", "--type", "merge", "-p", '{"spec":{"tier":"silver"}}',
                             check=False)
    assert proc.stderr.strip() == 'The Quota "q4" is invalid: spec.tier: Invalid value: "string": tier is immutable'
    assert rules_crd.kubectl("patch", "quota", "q4", "--type", "merge", "-p", '{"spec":{"max":3}}').returncode == 0


def test_a_rule_that_does_not_compile_rejects_the_crd(cluster):
    spec = {"type": "object", "properties": {"min": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.min <"}, {"rule": "'a'", "message": "m"}]}
    crd = json.loads(RULES_CRD)
    crd["metadata"]["name"] = "bads.rules.example.com"
    crd["spec"]["names"] = {"kind": "Bad", "plural": "bads"}
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec
    proc = cluster.kubectl("create", "-f", "-", input=json.dumps(crd), check=False)
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    rule = ('apiextensions.ValidationRule{{Rule:"{}", Message:"{}", MessageExpression:"", '
            'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}}')
    assert proc.stderr.strip().splitlines() == [
        'The CustomResourceDefinition "bads.rules.example.com" is invalid: ',
        f"* {at}[0].rule: Invalid value: {rule.format('self.min <', '')}: compilation failed: ERROR: <input>:1:11: "
        "Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
        "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}",
        " | self.min <",
        " | ..........^",
        f"* {at}[1].rule: Invalid value: {rule.format(chr(39) + 'a' + chr(39), 'm')}: "
        "cel expression must evaluate to a bool"]
