"""Every YAML file in cluster-setup/ loads where it is meant to go, checked against that place's upstream schema.

Kubernetes objects: the v1.37 OpenAPI schemas in strict mode (kubernetes-validate).
kind configs (``gpulab kind up`` writes one from the default topology): kind's v1alpha4 types and validation
(``gpulab.setup.kindconfig``).
gpu-operator Helm values: the chart's values.yaml keys (``gpulab.gpustack.chart``).
Zero to JupyterHub values: the chart's values schema (transcribed subset, see its ``$comment``).
Payloads inside ConfigMaps: the device plugin and mig-parted parsers of the GPU stack emulation.
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpulab.contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION
from gpulab.embedded import TOPOLOGY
from gpulab.gpustack import chart, hardware, mig, sharing
from gpulab.setup import kind, kindconfig

from .conftest import ROOT

SETUP = ROOT / "cluster-setup"
YAML_FILES = sorted(p.relative_to(SETUP).as_posix() for p in SETUP.rglob("*.yaml"))
GPU_OPERATOR_VALUES = {"real/gpu-operator-values.yaml"}
Z2JH_VALUES = {"jupyterhub/values.yaml"}
GPU_MAPPINGS = {"kind/simulated-gpus.yaml"}
Z2JH_SCHEMA = SETUP / "jupyterhub" / "values.schema.subset.json"


def documents(relative: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((SETUP / relative).read_text()) if d is not None]


def is_kind_config(doc: dict) -> bool:
    return str(doc.get("apiVersion", "")).startswith("kind.x-k8s.io/")


def is_kubernetes_object(doc: dict) -> bool:
    return "apiVersion" in doc and "kind" in doc and not is_kind_config(doc)


def z2jh_schema() -> dict:
    """The schema as Helm applies it to the merged values: chart defaults fill the ``required`` keys, so a values
    file alone is checked for unknown keys, types and enums (``required`` inside ``oneOf`` branches stays)."""
    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not (k == "required" and "properties" in node)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    return strip(json.loads(Z2JH_SCHEMA.read_text()))


def test_every_yaml_file_has_a_validator():
    assert YAML_FILES, "cluster-setup/ has no YAML files"
    for relative in YAML_FILES:
        docs = documents(relative)
        known = (relative in GPU_OPERATOR_VALUES | Z2JH_VALUES | GPU_MAPPINGS
                 or (docs and all(is_kubernetes_object(d) for d in docs)))
        assert known, f"{relative}: no validator covers this file"


@pytest.mark.parametrize("relative", [f for f in YAML_FILES if all(is_kubernetes_object(d) for d in documents(f))
                                      and documents(f)])
def test_kubernetes_objects_validate_strictly_against_v1_36(relative):
    for doc in documents(relative):
        try:
            kubernetes_validate.validate(doc, "1.37", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{relative}: {doc['kind']} {doc['metadata'].get('name')}: {err.message}")


def test_gpu_operator_values_use_only_chart_keys_and_pin_the_components():
    values = documents("real/gpu-operator-values.yaml")[0]
    merged = chart.values_for("v26.7.0", values)
    defaults = chart.default_values("v26.7.0")
    pins = {path: merged[path[0]][path[1]] for path in [("driver", "version"), ("toolkit", "version"),
                                                         ("devicePlugin", "version"), ("gfd", "version"),
                                                         ("migManager", "version")]}
    assert pins == {("driver", "version"): "580.105.08", ("toolkit", "version"): "v1.20.0",
                    ("devicePlugin", "version"): "v0.20.0", ("gfd", "version"): "v0.20.0",
                    ("migManager", "version"): "v0.15.0"}
    # written out, all of them: the chart's own but for the driver, which is the course's R580 pin
    assert all(values[block]["version"] == defaults[block]["version"] for block, _ in pins if block != "driver")
    with pytest.raises(chart.ChartError, match='unknown value "drivr.version"'):
        chart.values_for("v26.7.0", {"drivr": {"version": "1"}})


def test_zero_to_jupyterhub_values_match_the_chart_schema():
    values = documents("jupyterhub/values.yaml")[0]
    validator = jsonschema.Draft7Validator(z2jh_schema())
    assert [e.message for e in validator.iter_errors(values)] == []
    profiles = values["singleuser"]["profileList"]
    gpu = [p for p in profiles if "extra_resource_limits" in p.get("kubespawner_override", {})]
    assert gpu and gpu[0]["kubespawner_override"]["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert values["singleuser"]["extraPodConfig"]["automountServiceAccountToken"] is False
    assert set(values["hub"]["config"]["JupyterHub"]["load_groups"]) == {"formgrade-gpulab", "nbgrader-gpulab"}
    assert "c.Exchange.path_includes_course = True" in values["singleuser"]["extraFiles"]["nbgrader-config"]["stringData"]


def test_the_z2jh_schema_refuses_what_the_chart_refuses():
    validator = jsonschema.Draft7Validator(z2jh_schema())
    bad = {"singleuser": {"storage": {"type": "dynamic", "homeMountPath": "/home/jovyan", "capcity": "1Gi"},
                          "memory": {"limit": ["2G"]}},
           "hub": {"db": {"type": "sqlite"}}, "cul": {}}
    assert sorted(e.message for e in validator.iter_errors(bad)) == [
        "'sqlite' is not one of ['sqlite-pvc', 'sqlite-memory', 'mysql', 'postgres', 'other']",
        "Additional properties are not allowed ('capcity' was unexpected)",
        "Additional properties are not allowed ('cul' was unexpected)",
        "['2G'] is not of type 'number', 'string', 'null'",
    ]


def test_time_slicing_configs_parse_as_the_device_plugin_parses_them():
    config_map = documents("real/time-slicing-config.yaml")[0]
    parsed = {key: sharing.parse_config(text) for key, text in config_map["data"].items()}
    assert {k: (c.strategy, c.resources[0].replicas, c.rename_by_default) for k, c in parsed.items()} == {
        "any": ("time-slicing", 4, False), "h100-inference": ("time-slicing", 2, True)}


@pytest.mark.parametrize("layout, model", [("all-disabled", "H100"), ("all-1g.10gb", "H100"),
                                           ("h100-workshop", "H100"), ("h100-half-split", "H100"),
                                           ("h200-workshop", "H200")])
def test_mig_layouts_fit_the_gpu_they_are_written_for(layout, model):
    configs = mig.parse_config(documents("real/mig-config.yaml")[0]["data"]["config.yaml"])
    assert set(configs) == {"all-disabled", "all-1g.10gb", "h100-workshop", "h100-half-split", "h200-workshop"}
    state = mig.plan(hardware.gpu_model(model), 8, layout, configs)
    assert len(state) == 8


def test_kind_config_is_the_embedded_default_topology():
    gpus = kind.load_simulated_gpus(SETUP / "kind" / "simulated-gpus.yaml")
    cluster = kindconfig.load(yaml.safe_dump(kind.default_config("gpulab", gpus)))

    def hardware_of(node: dict):
        key = (node.get("labels") or {}).get(kind.SIMULATED_GPU_LABEL)
        return gpus[key] if key else None

    control = [n for n in cluster["nodes"] if n.get("role", "control-plane") == "control-plane"]
    workers = [n for n in cluster["nodes"] if n.get("role") == "worker"]
    kind_nodes = [(f"{cluster['name']}-control-plane", hardware_of(control[0]))] + [
        (f"{cluster['name']}-worker{i + 1 if i else ''}", hardware_of(w)) for i, w in enumerate(workers)]
    embedded = [(s.name, (s.annotations[GPU_MODEL_ANNOTATION], int(s.annotations[GPU_COUNT_ANNOTATION]))
                 if GPU_MODEL_ANNOTATION in s.annotations else None) for s in TOPOLOGY.nodes(None, "gpulab")]
    assert len(control) == 1 and len(workers) == 3 and kind_nodes == embedded


def test_probe_pod_requests_one_time_sliced_gpu():
    pod = documents("real/probe-pod.yaml")[0]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.sharing-strategy": "time-slicing"}
    assert container["command"][:3] == ["python", "-m", "probe"]
    assert container["volumeMounts"][0]["mountPath"] == "/opt/gpulab/probe"


def test_mps_probe_pod_requests_one_mps_shared_gpu_and_insists_on_mps():
    pod = documents("real/probe-pod-mps.yaml")[0]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.sharing-strategy": "mps"}
    assert container["command"][:5] == ["python", "-m", "probe", "--sharing", "mps"]
    assert container["volumeMounts"][0]["mountPath"] == "/opt/gpulab/probe"


KIND_HEADER = "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"


@pytest.mark.parametrize("text, message", [
    (KIND_HEADER + "nodes:\n- role: worker\n  bogus: 1\n- role: control-plane\n  labels: [a]\n",
     "unable to decode config: yaml: unmarshal errors:\n"
     "  line 5: field bogus not found in type v1alpha4.Node\n"
     "  line 7: cannot unmarshal !!seq into map[string]string"),
    (KIND_HEADER + "networking:\n  apiServerPort: six\n  dnsSearch: [a]\n  gpus: all\n",
     "unable to decode config: yaml: unmarshal errors:\n"
     "  line 4: cannot unmarshal !!str `six` into int32\n"
     "  line 6: field gpus not found in type v1alpha4.Networking"),
    (KIND_HEADER + "nodes:\n- extraMounts:\n  - hostPath: /x\n    propagation: Sometimes\n",
     'unable to decode config: Unknown MountPropagation: "Sometimes"'),
    (KIND_HEADER + "nodes:\n- extraPortMappings:\n  - containerPort: 80\n    protocol: http\n",
     'unable to decode config: Unknown PortMappingProtocol: "HTTP"'),
    (KIND_HEADER + "nodes:\n- extraMounts:\n  - readonly: true\n",
     "unable to decode config: yaml: unmarshal errors:\n  line 5: field readonly not found in type v1alpha4.MountAlias"),
    (KIND_HEADER + "nodes:\n- role: worker\n- role: boss\n",
     '[invalid configuration for node 1: "boss" is not a valid node role, must have at least one control-plane node]'),
    (KIND_HEADER + "networking:\n  kubeProxyMode: userspace\n", "invalid kubeProxyMode: userspace"),
    (KIND_HEADER + "nodes:\n- extraPortMappings:\n  - hostPort: 70000\n",
     "invalid configuration for node 0: invalid hostPort: invalid port number: 70000"),
    ("kind: Cluster\napiVersion: kind.sigs.k8s.io/v1alpha3\n", "unknown apiVersion: kind.sigs.k8s.io/v1alpha3"),
    ("kind: Config\napiVersion: kind.x-k8s.io/v1alpha4\n", "unknown kind Config for apiVersion: kind.x-k8s.io/v1alpha4"),
])
def test_kind_config_errors_are_kinds(text, message):
    with pytest.raises(kindconfig.KindConfigError) as err:
        kindconfig.load(text)
    assert str(err.value) == message


def test_simulated_gpu_models_must_be_known(tmp_path):
    mapping = tmp_path / "gpus.yaml"
    mapping.write_text("b200-x8: {model: NVIDIA B300, count: 8}\n")
    with pytest.raises(kind.KindError, match="b200-x8: needs a model the GPU stack knows"):
        kind.load_simulated_gpus(mapping)


def test_guides_exist_for_each_setup():
    for part in ("kind", "real", "jupyterhub"):
        assert (SETUP / part / "README.md").is_file(), f"cluster-setup/{part}/README.md"
    assert Path(SETUP / "README.md").is_file()
