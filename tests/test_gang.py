"""Native gang scheduling through the real kubectl: scheduling.k8s.io/v1beta1 is off in a default v1.37 cluster and
served with its gates on; a PodGroup's pods start together or not at all; bad specs get upstream's errors."""
from __future__ import annotations

import os
import re

import pytest
import yaml

from .conftest import start_cluster, stop_cluster, wait_for


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    old = os.environ.get("GPULAB_FEATURE_GATES")
    os.environ["GPULAB_FEATURE_GATES"] = "GenericWorkload=true"
    try:
        c = start_cluster(tmp_path_factory.mktemp("gang"))
    finally:
        if old is None:
            os.environ.pop("GPULAB_FEATURE_GATES")
        else:
            os.environ["GPULAB_FEATURE_GATES"] = old
    yield c
    stop_cluster(c)


def member(name: str, group: str, cpu: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def pod_group(name: str, min_count: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def apply(c, *objects: dict, check: bool = True):
    return c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects), check=check)


def test_a_default_cluster_does_not_serve_the_beta_api(kubectl):
    assert kubectl("api-resources", "--api-group=scheduling.k8s.io", "--no-headers").stdout.split()[0] == \
        "priorityclasses"
    assert kubectl("get", "podgroups.scheduling.k8s.io", check=False).returncode == 1


def test_the_gated_cluster_serves_workloads_and_podgroups(gated):
    rows = gated.kubectl("api-resources", "--api-group=scheduling.k8s.io", "--no-headers").stdout.splitlines()
    served = {r.split()[0]: r.split()[-3] for r in rows}  # NAME ... APIVERSION NAMESPACED KIND
    assert served == {"podgroups": "scheduling.k8s.io/v1beta1", "priorityclasses": "scheduling.k8s.io/v1",
                      "workloads": "scheduling.k8s.io/v1beta1"}
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "training"},
                "spec": {"podGroupTemplates": [{"name": "workers",
                                                "schedulingPolicy": {"gang": {"minCount": 3}}}]}}
    apply(gated, workload)
    bad = apply(gated, {**pod_group("broken", 0), "spec": {"schedulingPolicy": {}}}, check=False)
    assert bad.returncode == 1
    assert 'The PodGroup "broken" is invalid: spec.schedulingPolicy: Invalid value: ' in bad.stderr
    assert "must specify one of: `basic`, `gang`" in bad.stderr


def failed_scheduling(c, pod: str) -> list[str]:
    out = c.kubectl("get", "events", "--field-selector", f"involvedObject.name={pod},reason=FailedScheduling",
                    "-o", "jsonpath={range .items[*]}{.message}{'\\n'}{end}").stdout
    return [line for line in out.splitlines() if line]


def test_a_gang_starts_only_when_every_member_fits(gated):
    # 100-CPU members: the 192- and 128-CPU workers hold one each, so a gang of four never fits; its pod group
    # cycle undoes the two placements it found, so it holds no node; a small gang still starts.
    apply(gated, pod_group("toobig", 4), *(member(f"toobig-{i}", "toobig", "100") for i in range(4)))
    apply(gated, pod_group("fits", 3), *(member(f"fits-{i}", "fits", "2") for i in range(3)))
    wait_for(lambda: all(gated.kubectl("get", "pod", f"fits-{i}", "-o", "jsonpath={.spec.nodeName}").stdout
                         for i in range(3)), what="the fitting gang bound")
    condition = gated.kubectl("get", "podgroup", "fits", "-o",
                              "jsonpath={.status.conditions[0].type}={.status.conditions[0].status}").stdout
    assert condition == "PodGroupInitiallyScheduled=True"
    nodes = [gated.kubectl("get", "pod", f"toobig-{i}", "-o", "jsonpath={.spec.nodeName}").stdout for i in range(4)]
    assert nodes == ["", "", "", ""]
    assert gated.kubectl("get", "podgroup", "toobig", "-o", "jsonpath={.status.conditions}").stdout == ""
    # what the members read: the ones that fit get the group's verdict, the one that did not its own
    messages = wait_for(lambda: [m for i in range(4) for m in failed_scheduling(gated, f"toobig-{i}")],
                        what="FailedScheduling events of the gang")
    assert any(m.startswith("pod group is unschedulable, minCount (4) cannot be satisfied: ") for m in messages)
    assert any(re.match(r"0/\d nodes are available: .*Insufficient cpu", m) for m in messages), messages
    # nothing is held: a 150-CPU pod outside the gang still gets the 192-CPU worker
    solo = member("solo", "toobig", "150")
    del solo["spec"]["schedulingGroup"]
    apply(gated, solo)
    wait_for(lambda: gated.kubectl("get", "pod", "solo", "-o", "jsonpath={.spec.nodeName}").stdout,
             what="the 150-CPU pod bound")
    gated.kubectl("delete", "pod", "solo", "--grace-period=0", "--force")


def test_two_gangs_that_overfill_the_cluster_do_not_deadlock(gated):
    # each gang needs both big workers (two 100-CPU members); arriving interleaved, one gang gets both, the
    # other none: with placements held at Permit each would hold one worker and wait for the other's
    apply(gated, pod_group("left", 2), pod_group("right", 2),
          *(member(f"{side}-{i}", side, "100") for i in range(2) for side in ("left", "right")))

    def bound():
        nodes = {side: [gated.kubectl("get", "pod", f"{side}-{i}", "-o", "jsonpath={.spec.nodeName}").stdout
                        for i in range(2)] for side in ("left", "right")}
        return nodes if any(all(n) for n in nodes.values()) else None
    nodes = wait_for(bound, what="one gang bound")
    winner = "left" if all(nodes["left"]) else "right"
    loser = "right" if winner == "left" else "left"
    assert nodes[loser] == ["", ""]
    messages = wait_for(lambda: [m for i in range(2) for m in failed_scheduling(gated, f"{loser}-{i}")],
                        what="the other gang's FailedScheduling events")
    assert "pod group is unschedulable, minCount (2) cannot be satisfied: 0 scheduled, 1 remaining" in messages
    # when the winner goes, the other gang starts
    gated.kubectl("delete", "pod", f"{winner}-0", f"{winner}-1", "--grace-period=0", "--force")
    wait_for(lambda: all(gated.kubectl("get", "pod", f"{loser}-{i}", "-o", "jsonpath={.spec.nodeName}").stdout
                         for i in range(2)), what="the other gang bound after the first left")
