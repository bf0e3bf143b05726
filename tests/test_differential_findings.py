"""What the differential harness (tools/differential) found the embedded cluster doing otherwise than kube-apiserver
and kube-controller-manager v1.37.2, pinned here through kubectl as a learner sees it."""
from __future__ import annotations

import json

from tests.conftest import wait_for

NIGHTLY = """apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox:1.36, command: [sleep, "1"]}]
"""


def test_serviceaccounts_print_name_and_age_only(kubectl):
    header = kubectl("get", "serviceaccount", "default").stdout.splitlines()[0]
    assert header.split() == ["NAME", "AGE"]


def test_a_nodeport_service_gets_a_node_port_of_the_range(kubectl):
    kubectl("create", "service", "nodeport", "web-np", "--tcp=80:8080")
    port = json.loads(kubectl("get", "service", "web-np", "-o", "json").stdout)["spec"]["ports"][0]
    assert 30000 <= port["nodePort"] <= 32767
    assert f"80:{port['nodePort']}/TCP" in kubectl("get", "service", "web-np").stdout


def test_a_cronjobs_templates_keep_their_empty_metadata(kubectl):
    kubectl("apply", "-f", "-", input=NIGHTLY)
    template = json.loads(kubectl("get", "cronjob", "nightly", "-o", "json").stdout)["spec"]["jobTemplate"]
    assert template["metadata"] == {}
    assert template["spec"]["template"]["metadata"] == {}


def test_a_statefulsets_status_counts_collisions_from_zero(kubectl):
    kubectl("create", "-f", "-", input="""apiVersion: apps/v1
kind: StatefulSet
metadata: {name: counted}
spec:
  serviceName: counted
  selector: {matchLabels: {app: counted}}
  template:
    metadata: {labels: {app: counted}}
    spec:
      containers: [{name: main, image: busybox:1.36, command: [sleep, infinity]}]
""")

    def status():
        found = json.loads(kubectl("get", "statefulset", "counted", "-o", "json").stdout).get("status", {})
        return found if found.get("currentRevision") else None

    status = wait_for(status, what="the StatefulSet's first status")
    assert status["collisionCount"] == 0


def test_patches_that_do_not_decode_as_kubectl_sends_them(kubectl):
    kubectl("create", "configmap", "patched")
    for patch_type in ("merge", "strategic"):
        refused = kubectl("patch", "configmap", "patched", f"--type={patch_type}", "-p", "{data:1}", check=False)
        assert refused.stderr == "Error from server (BadRequest): invalid JSON patch\n"
    refused = kubectl("patch", "configmap", "patched", "--type=json", "-p", '{"op":"add"}', check=False)
    assert refused.stderr == ("Error from server (BadRequest): error decoding patch: json: cannot unmarshal object "
                              "into Go value of type []handlers.jsonPatchOp\n")
