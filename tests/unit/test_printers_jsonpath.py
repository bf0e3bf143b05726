"""client-go JSONPath semantics that CRD printer columns depend on, and HumanDuration."""
from __future__ import annotations

from datetime import timedelta

import pytest

from gpulab.cluster.humanize import human_duration
from gpulab.cluster.jsonpath import JSONPath, JSONPathError, go_text

DATA = {
    "metadata": {"name": "gpu-node-1", "labels": {"kubernetes.io/role": "gpu", "app": "triton"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
             "sizes": [10, 20, 30, 40], "ratio": 0.25, "big": 1e6, "flag": True},
    "status": {"conditions": [{"type": "Ready", "status": "True", "count": 3},
                              {"type": "MemoryPressure", "status": "False", "count": 1}]},
}


def find(path: str) -> list:
    return JSONPath("{" + path + "}").find_results(DATA)[0]


@pytest.mark.parametrize("path,found", [
    (".metadata.name", ["gpu-node-1"]),
    (".metadata.missing", []),
    (".metadata.name.deeper", []),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    (".status.conditions[?(@.type=='MemoryPressure')].status", ["False"]),
    ('.status.conditions[?(@.type != "Ready")].type', ["MemoryPressure"]),
    ('.status.conditions[?(@.type=="Nope")].status', []),
    (".status.conditions[?(@.count)].type", ["Ready", "MemoryPressure"]),
    # a literal integer compares as float64, which never equals the int64 in the object
    (".status.conditions[?(@.count==3)].type", []),
    (".status.conditions[?(@.count>1)].type", []),
    (".status.conditions[?(@.status==true)].type", []),
    (r".metadata.labels.kubernetes\.io/role", ["gpu"]),
    # ['a.b'] is parsed as .a.b, so a dotted key is not found this way
    (".metadata.labels['kubernetes.io/role']", []),
    (".metadata.labels['app']", ["triton"]),
    (".spec.sizes[0]", [10]),
    (".spec.sizes[-1]", [40]),
    (".spec.sizes[1:3]", [20, 30]),
    (".spec.sizes[::2]", [10, 30]),
    (".spec.sizes[*]", [10, 20, 30, 40]),
    (".spec.sizes[0,2]", [10, 30]),
    (".spec.sizes[2:2]", []),
    (".spec.taints[*].key", ["nvidia.com/gpu", "node.kubernetes.io/unreachable"]),
    (".metadata.labels.*", ["triton", "gpu"]),
    ("..effect", ["NoSchedule", "NoExecute"]),
])
def test_find_results(path, found):
    assert find(path) == found


@pytest.mark.parametrize("path", [".spec.sizes[9]", ".metadata.name[0]", ".spec.sizes[3:1]", ".spec.sizes[::0]"])
def test_evaluation_errors(path):
    with pytest.raises(JSONPathError):
        find(path)


@pytest.mark.parametrize("template", ["{.a", "{.a[0}", "{.a[?(@.b}", "{.a[x]}", '{.a["b]}', "{....a}", "{#}"])
def test_parse_errors(template):
    with pytest.raises(JSONPathError):
        JSONPath(template)


def test_template_text_and_several_actions():
    results = JSONPath("name={.metadata.name} {.spec.ratio}").find_results(DATA)
    assert results == [["name="], ["gpu-node-1"], [" "], [0.25]]


@pytest.mark.parametrize("value,text", [
    ("plain", "plain"), (3, "3"), (True, "true"), (False, "false"), (None, "<no value>"),
    (0.25, "0.25"), (3.0, "3"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-2.5, "-2.5"),
    ({"b": 1, "a": [1.0, 2.5e-7, "<x&y>"]}, '{"a":[1,2.5e-7,"\\u003cx\\u0026y\\u003e"],"b":1}'),
    ([1e21, 1e20], "[1e+21,100000000000000000000]"),
])
def test_go_text(value, text):
    assert go_text(value) == text


@pytest.mark.parametrize("d,text", [
    (timedelta(seconds=-2), "<invalid>"), (timedelta(seconds=-1), "0s"), (timedelta(milliseconds=-500), "0s"),
    (timedelta(0), "0s"), (timedelta(seconds=1), "1s"), (timedelta(seconds=70), "70s"),
    (timedelta(seconds=119, milliseconds=999), "119s"), (timedelta(seconds=120), "2m"),
    (timedelta(seconds=190), "3m10s"), (timedelta(minutes=70), "70m"), (timedelta(minutes=179), "179m"),
    (timedelta(hours=3), "3h"), (timedelta(hours=3, minutes=5), "3h5m"), (timedelta(hours=47), "47h"),
    (timedelta(hours=49), "2d1h"), (timedelta(days=2), "2d"), (timedelta(hours=8 * 24 + 2), "8d"),
    (timedelta(days=367), "367d"), (timedelta(hours=365 * 2 * 24 + 25), "2y1d"),
    (timedelta(days=365 * 2), "2y"), (timedelta(hours=365 * 8 * 24 + 2), "8y"),
])
def test_human_duration(d, text):
    assert human_duration(d) == text
