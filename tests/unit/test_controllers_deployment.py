"""The Deployment and ReplicaSet controllers together: scaling, rollout restart, Recreate, history cleanup."""
from __future__ import annotations

import re

from gpulab.cluster.controllers.deployment import DeploymentController
from gpulab.cluster.controllers.replicaset import ReplicaSetController
from gpulab.cluster.objects import clone

from controller_sim import simulated

DEPLOY = "deployments.apps"
RS = "replicasets.apps"


def deployment(name: str = "web", replicas: int = 1, **spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}, **spec}}


def edit(sim, name: str, change) -> None:
    obj = clone(sim.api.get(DEPLOY, name, "default"))
    change(obj)
    sim.api.update(DEPLOY, obj, "default")


def scaling_events(sim) -> list[str]:
    return [m for r, m in sim.events(kind="Deployment") if r == "ScalingReplicaSet"]


async def start(sim, *objs) -> None:
    sim.start(DeploymentController(sim.api), ReplicaSetController(sim.api))
    for obj in objs:
        sim.api.create(DEPLOY, obj, "default")
    await sim.kubelet()


@simulated
async def test_scale_1_3_1_keeps_one_replicaset_and_reports_status(sim):
    await start(sim, deployment(replicas=1))
    (rs,) = sim.api.list(RS, "default")
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", pod_hash)
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1",
                                             "deployment.kubernetes.io/desired-replicas": "1",
                                             "deployment.kubernetes.io/max-replicas": "2"}
    (pod,) = sim.pods()
    assert re.fullmatch(rf"web-{pod_hash}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", pod["metadata"]["name"])
    assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}

    edit(sim, "web", lambda d: d["spec"].update(replicas=3))
    await sim.kubelet()
    assert len(sim.pods()) == 3
    edit(sim, "web", lambda d: d["spec"].update(replicas=1))
    await sim.kubelet()
    assert len(sim.pods()) == 1 and len(sim.api.list(RS, "default")) == 1

    d = sim.api.get(DEPLOY, "web", "default")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = {k: v for k, v in d["status"].items() if k != "conditions"}
    assert status == {"observedGeneration": 3, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                      "availableReplicas": 1, "terminatingReplicas": 0}
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in d["status"]["conditions"]}
    assert conditions == {
        "Available": ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
        "Progressing": ("True", "NewReplicaSetAvailable", f'ReplicaSet "web-{pod_hash}" has successfully progressed.'),
    }
    assert scaling_events(sim) == [f"Scaled up replica set web-{pod_hash} from 0 to 1",
                                   f"Scaled up replica set web-{pod_hash} from 1 to 3",
                                   f"Scaled down replica set web-{pod_hash} from 3 to 1"]
    created = [m for r, m in sim.events(kind="ReplicaSet") if r == "SuccessfulCreate"]
    assert len(created) == 3 and all(m.startswith(f"Created pod: web-{pod_hash}-") for m in created)
    deleted = [m for r, m in sim.events(kind="ReplicaSet") if r == "SuccessfulDelete"]
    assert len(deleted) == 2 and all(m.startswith(f"Deleted pod: web-{pod_hash}-") for m in deleted)


@simulated
async def test_rollout_restart_rolls_pods_through_a_new_replicaset(sim):
    await start(sim, deployment(replicas=3))
    (old,) = sim.api.list(RS, "default")
    old_pods = {p["metadata"]["name"] for p in sim.pods()}
    edit(sim, "web", lambda d: d["spec"]["template"]["metadata"].update(
        annotations={"kubectl.kubernetes.io/restartedAt": "2030-03-17T17:50:00Z"}))
    await sim.kubelet(rounds=12)

    rss = {rs["metadata"]["name"]: rs for rs in sim.api.list(RS, "default")}
    new_name = next(n for n in rss if n != old["metadata"]["name"])
    new = rss[new_name]
    assert new["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/restartedAt": "2030-03-17T17:50:00Z"}
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert rss[old["metadata"]["name"]]["spec"]["replicas"] == 0
    pods = sim.pods()
    assert len(pods) == 3 and not old_pods & {p["metadata"]["name"] for p in pods}
    assert all(p["metadata"]["labels"]["pod-template-hash"] == new["metadata"]["labels"]["pod-template-hash"]
               for p in pods)
    d = sim.api.get(DEPLOY, "web", "default")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert d["status"]["updatedReplicas"] == d["status"]["replicas"] == d["status"]["availableReplicas"] == 3
    assert d["status"]["observedGeneration"] == d["metadata"]["generation"]
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert progressing["message"] == f'ReplicaSet "{new_name}" has successfully progressed.'
    old_name = old["metadata"]["name"]
    # maxSurge 25% of 3 rounds up to 1 and maxUnavailable rounds down to 0: one pod at a time.
    assert scaling_events(sim)[1:] == [f"Scaled up replica set {new_name} from 0 to 1",
                                       f"Scaled down replica set {old_name} from 3 to 2",
                                       f"Scaled up replica set {new_name} from 1 to 2",
                                       f"Scaled down replica set {old_name} from 2 to 1",
                                       f"Scaled up replica set {new_name} from 2 to 3",
                                       f"Scaled down replica set {old_name} from 1 to 0"]


@simulated
async def test_progressing_while_new_pods_are_not_ready(sim):
    sim.start(DeploymentController(sim.api), ReplicaSetController(sim.api))
    sim.api.create(DEPLOY, deployment(replicas=2), "default")
    await sim.settle()
    sim.bind_all()
    sim.run_all(ready=False)
    await sim.settle()
    d = sim.api.get(DEPLOY, "web", "default")
    (rs,) = sim.api.list(RS, "default")
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in d["status"]["conditions"]}
    assert conditions["Available"] == ("False", "MinimumReplicasUnavailable",
                                       "Deployment does not have minimum availability.")
    assert conditions["Progressing"][:2] == ("True", "ReplicaSetUpdated")
    assert conditions["Progressing"][2] == f'ReplicaSet "{rs["metadata"]["name"]}" is progressing.'
    assert d["status"]["unavailableReplicas"] == 2


@simulated
async def test_recreate_scales_old_to_zero_before_creating_new(sim):
    await start(sim, deployment(replicas=2, strategy={"type": "Recreate"}))
    (old,) = sim.api.list(RS, "default")
    edit(sim, "web", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="nginx:1.28"))
    await sim.settle()
    # The old pods are terminating: no new ReplicaSet yet.
    assert len(sim.api.list(RS, "default")) == 1
    await sim.kubelet()
    new = next(rs for rs in sim.api.list(RS, "default") if rs["metadata"]["uid"] != old["metadata"]["uid"])
    assert scaling_events(sim)[1:] == [f'Scaled down replica set {old["metadata"]["name"]} from 2 to 0',
                                       f'Scaled up replica set {new["metadata"]["name"]} from 0 to 2']


@simulated
async def test_revision_history_limit_deletes_the_oldest_idle_replicasets(sim):
    await start(sim, deployment(replicas=1, revisionHistoryLimit=1))
    for image in ("nginx:1.28", "nginx:1.29"):
        edit(sim, "web", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image=image))
        await sim.kubelet(rounds=10)
    revisions = sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                       for rs in sim.api.list(RS, "default"))
    assert revisions == ["2", "3"]
