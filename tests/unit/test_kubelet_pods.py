"""The node agent runs pods as the kubelet does: statuses, conditions, events, restarts, deletion, logs."""
from __future__ import annotations

import asyncio

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.objects import parse_time
from gpulab.cluster.kubelet import Kubelet
from test_kubelet_harness import SCALE, container, run, shell

BUSYBOX_PULLED = ('Successfully pulled image "busybox" in 51ms (51ms including waiting). '
                  'Image size: 2222260 bytes.')
RUNC = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: ")
DNS_FAILURE = ('failed to pull and unpack image "registry.example.com/infer:1.0": failed to resolve reference '
               '"registry.example.com/infer:1.0": failed to do request: Head '
               '"https://registry.example.com/v2/infer/manifests/1.0": dial tcp: lookup registry.example.com on '
               '172.18.0.1:53: no such host')


def conditions(pod: dict) -> dict[str, tuple]:
    return {c["type"]: (c["status"], c.get("reason")) for c in pod["status"]["conditions"]}


def waiting(pod: dict, name: str = "c") -> dict | None:
    """The waiting state of a container, from a pod or a pod status."""
    status = pod.get("status", pod)
    for cs in status.get("containerStatuses") or ():
        if cs["name"] == name:
            return cs["state"].get("waiting")
    return None


def test_busybox_script_ends_failed_with_its_exit_code_and_logs():
    async def body(h):
        h.pod("fail", [container(**shell("echo hello; sleep 1; exit 3"))], restartPolicy="Never")
        running = await h.phase("fail", "Running")
        assert running["status"]["containerStatuses"][0]["ready"] is True
        pod = await h.phase("fail", "Failed", timeout=5)
        cs = pod["status"]["containerStatuses"][0]
        term = cs["state"]["terminated"]
        assert (term["exitCode"], term["reason"]) == (3, "Error")
        assert parse_time(term["finishedAt"]) - parse_time(term["startedAt"]) in (1, 2)
        assert term["containerID"] == cs["containerID"] and len(cs["containerID"]) == len("containerd://") + 64
        assert (cs["ready"], cs["started"], cs["restartCount"], cs["lastState"]) == (False, False, 0, {})
        assert cs["image"] == "docker.io/library/busybox:latest"
        assert cs["imageID"].startswith("docker.io/library/busybox@sha256:")
        assert h.api.logs("default", "fail", {}) == "hello\n"
        assert conditions(pod) == {"PodReadyToStartContainers": ("False", None), "Initialized": ("True", None),
                                   "Ready": ("False", "PodFailed"), "ContainersReady": ("False", "PodFailed"),
                                   "PodScheduled": ("True", None)}
        assert h.events("fail") == [
            ("Normal", "Pulling", 'Pulling image "busybox"', "spec.containers{c}"),
            ("Normal", "Pulled", BUSYBOX_PULLED, "spec.containers{c}"),
            ("Normal", "Created", "Container created", "spec.containers{c}"),
            ("Normal", "Started", "Container started", "spec.containers{c}"),
        ]
    run(body)


def test_job_style_pod_succeeds_and_completes():
    async def body(h):
        h.pod("job", [container(image="busybox:1.37", **shell("echo computing; echo done"))],
              restartPolicy="OnFailure")
        pod = await h.phase("job", "Succeeded")
        cs = pod["status"]["containerStatuses"][0]
        assert (cs["state"]["terminated"]["exitCode"], cs["state"]["terminated"]["reason"]) == (0, "Completed")
        assert conditions(pod) == {"PodReadyToStartContainers": ("False", None), "Initialized": ("True", "PodCompleted"),
                                   "Ready": ("False", "PodCompleted"), "ContainersReady": ("False", "PodCompleted"),
                                   "PodScheduled": ("True", None)}
        assert h.api.logs("default", "job", {}) == "computing\ndone\n"
        assert h.api.logs("default", "job", {"tailLines": "1"}) == "done\n"
        stamped = h.api.logs("default", "job", {"timestamps": "true"})
        assert stamped.split(" ", 1)[0].endswith("Z") and stamped.split(" ", 1)[1].startswith("computing\n")
    run(body)


def test_unreachable_registry_is_err_image_pull_then_image_pull_back_off():
    image = "registry.example.com/infer:1.0"

    async def body(h):
        h.pod("infer", [container(image=image)])
        status = await h.until(lambda: h.seen("infer", lambda s: (waiting(s) or {}).get("reason") == "ErrImagePull"))
        assert waiting(status)["message"] == DNS_FAILURE
        pod = await h.until(lambda: (p := h.get("infer")) and waiting(p)["reason"] == "ImagePullBackOff" and p)
        assert waiting(pod)["message"] == f'Back-off pulling image "{image}": ErrImagePull: {DNS_FAILURE}'
        assert pod["status"]["phase"] == "Pending"
        with pytest.raises(ApiError) as err:
            h.api.logs("default", "infer", {})
        assert err.value.message == 'container "c" in pod "infer" is waiting to start: trying and failing to pull image'
        await h.until(lambda: h.event_count("infer", "Pulling") >= 2, what="a second pull after the back-off")
        reasons = {(t, r, m) for t, r, m, _ in h.events("infer")}
        assert reasons >= {("Normal", "Pulling", f'Pulling image "{image}"'),
                           ("Warning", "Failed", f'Failed to pull image "{image}": {DNS_FAILURE}'),
                           ("Warning", "Failed", "Error: ErrImagePull"),
                           ("Normal", "BackOff", f'Back-off pulling image "{image}"'),
                           ("Warning", "Failed", "Error: ImagePullBackOff")}
        key = f"{pod['metadata']['uid']}_{image}"
        await h.until(lambda: h.kubelet.pull_backoff.get(key) == 20, what="the pull back-off to double")
    run(body)


@pytest.mark.parametrize("image,message", [
    ("doesnotexist/trainer:1", 'failed to pull and unpack image "docker.io/doesnotexist/trainer:1": failed to resolve '
     'reference "docker.io/doesnotexist/trainer:1": pull access denied, repository does not exist or may require '
     "authorization: server message: insufficient_scope: authorization failed"),
    ("busybox:nope", 'failed to pull and unpack image "docker.io/library/busybox:nope": failed to resolve reference '
     '"docker.io/library/busybox:nope": docker.io/library/busybox:nope: not found'),
])
def test_unknown_repository_or_tag_fail_like_containerd(image, message):
    async def body(h):
        h.pod("p", [container(image=image)])
        status = await h.until(lambda: h.seen("p", lambda s: (waiting(s) or {}).get("reason") == "ErrImagePull"))
        assert waiting(status)["message"] == message
    run(body)


def test_never_pull_policy_without_the_image():
    async def body(h):
        h.pod("never", [container(image="nginx:1.27", imagePullPolicy="Never")])
        pod = await h.until(lambda: (p := h.get("never")) and waiting(p) and waiting(p)["reason"] != "ContainerCreating"
                            and p)
        assert waiting(pod) == {"reason": "ErrImageNeverPull",
                                "message": 'Container image "nginx:1.27" is not present with pull policy of Never'}
        assert ("Warning", "ErrImageNeverPull", 'Container image "nginx:1.27" is not present with pull policy of Never',
                "spec.containers{c}") in h.events("never")
    run(body)


def test_nginx_runs_ready_with_every_condition():
    async def body(h):
        h.pod("web", [container("nginx", "nginx:1.27")])
        pod = await h.until(lambda: (p := h.get("web")) and p["status"].get("phase") == "Running"
                            and conditions(p)["Ready"][0] == "True" and p)
        status = pod["status"]
        assert [c["type"] for c in status["conditions"]] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                                             "ContainersReady", "PodScheduled"]
        assert all(c["status"] == "True" and c["lastProbeTime"] is None and c["observedGeneration"] == 1
                   for c in status["conditions"])
        cs = status["containerStatuses"][0]
        assert (cs["ready"], cs["started"], set(cs["state"])) == (True, True, {"running"})
        assert cs["image"] == "docker.io/library/nginx:1.27"
        assert status["podIP"].startswith("10.244.1.") and status["podIPs"] == [{"ip": status["podIP"]}]
        assert status["hostIP"] == "172.18.0.3" and status["hostIPs"] == [{"ip": "172.18.0.3"}]
        assert status["observedGeneration"] == 1 and status["startTime"]
        logs = h.api.logs("default", "web", {})
        assert logs.startswith("/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform "
                               "configuration\n")
        assert "/docker-entrypoint.sh: Configuration complete; ready for start up\n" in logs
        assert logs.count("[notice] 1#1: start worker process ") == 8   # one per CPU of the node
    run(body)


def test_graceful_deletion_stops_containers_then_confirms():
    async def body(h):
        h.pod("web", [container("nginx", "nginx:1.27")])
        await h.phase("web", "Running")
        phases = []
        h.api.subscribe("pods", lambda t, o, old: phases.append((t, o["status"].get("phase"))))
        deleted = h.api.delete("pods", "web", "default")
        assert deleted["metadata"]["deletionGracePeriodSeconds"] == 30
        await h.until(lambda: h.get("web") is None, what="the pod to disappear")
        assert ("Normal", "Killing", "Stopping container nginx", "spec.containers{nginx}") in h.events("web")
        # The kubelet writes the terminal phase (nginx exits 0 on its stop signal), then deletes with grace 0.
        assert phases[-1] == ("DELETED", "Succeeded")
    run(body)


def test_a_pid_1_that_ignores_the_stop_signal_is_killed_after_the_grace_period():
    async def body(h):
        h.pod("sleeper", [container(**shell("sleep 3600"))], terminationGracePeriodSeconds=1)
        await h.phase("sleeper", "Running")
        last = {}
        h.api.subscribe("pods", lambda t, o, old: last.update(o))
        start = asyncio.get_running_loop().time()
        h.api.delete("pods", "sleeper", "default")
        await h.until(lambda: h.get("sleeper") is None, timeout=6)
        assert asyncio.get_running_loop().time() - start >= 2          # kubelet's minimum grace period
        term = last["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (term["exitCode"], term["reason"], last["status"]["phase"]) == (137, "Error", "Failed")
    run(body)


def test_crash_loop_back_off_doubles_and_keeps_the_previous_logs():
    async def body(h):
        pod = h.pod("crash", [container(image="busybox:1.37", **shell("echo boom; exit 1"))])
        full = f"crash_default({pod['metadata']['uid']})"
        pod = await h.until(lambda: (p := h.get("crash")) and (w := waiting(p)) and w["reason"] == "CrashLoopBackOff"
                            and p)
        cs = pod["status"]["containerStatuses"][0]
        assert cs["state"]["waiting"]["message"] == f"back-off 10s restarting failed container=c pod={full}"
        assert cs["restartCount"] == 1 and cs["lastState"]["terminated"]["exitCode"] == 1
        assert pod["status"]["phase"] == "Running"
        assert ("Warning", "BackOff", f"Back-off restarting failed container c in pod {full}", "spec.containers{c}") \
            in h.events("crash")
        assert ("Normal", "Pulled", 'Container image "busybox:1.37" already present on machine and can be accessed '
                "by the pod", "spec.containers{c}") in h.events("crash")
        await h.until(lambda: (w := waiting(h.get("crash"))) and "back-off 20s" in w.get("message", ""),
                      what="the second back-off")
        assert h.api.logs("default", "crash", {"previous": "true"}) == "boom\n"
    run(body)


def test_logs_of_a_container_that_never_started_and_of_a_missing_previous():
    async def body(h):
        h.pod("mounts", [container(volumeMounts=[{"name": "cfg", "mountPath": "/etc/app"}])],
              volumes=[{"name": "cfg", "configMap": {"name": "app-config"}}])
        await h.until(lambda: h.event_count("mounts", "FailedMount"), what="FailedMount")
        assert ("Warning", "FailedMount", 'MountVolume.SetUp failed for volume "cfg" : configmap "app-config" not '
                "found", None) in h.events("mounts")
        await asyncio.sleep(0.1)
        pod = h.get("mounts")
        assert "podIP" not in pod["status"] and conditions(pod)["PodReadyToStartContainers"] == ("False", None)
        with pytest.raises(ApiError) as err:
            h.api.logs("default", "mounts", {})
        assert (err.value.code, err.value.message) == (400, 'container "c" in pod "mounts" is waiting to start: '
                                                             "ContainerCreating")
        h.pod("up", [container(**shell("echo up; sleep 3600"))])
        await h.phase("up", "Running")
        with pytest.raises(ApiError) as err:
            h.api.logs("default", "up", {"previous": "true"})
        assert err.value.message == 'previous terminated container "c" in pod "up" not found'
    run(body)


def test_a_claim_bound_late_mounts_without_a_warning_and_one_never_bound_times_out():
    """volume_manager.go WaitForAttachAndMount: the kubelet waits for a claim silently, reporting FailedMount only
    after podAttachAndMountTimeout (2m3s, scaled here)."""
    async def body(h):
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
        h.api.create("persistentvolumeclaims", claim, "default")
        h.api.create("persistentvolumeclaims", {**claim, "metadata": {"name": "never"}}, "default")
        h.pod("late", [container(**shell("sleep 3600"), volumeMounts=[{"name": "d", "mountPath": "/data"}])],
              volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
        h.pod("stuck", [container(**shell("sleep 3600"), volumeMounts=[{"name": "d", "mountPath": "/data"}])],
              volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "never"}}])
        await asyncio.sleep(0.3)
        h.api.patch("persistentvolumeclaims", "data", {"status": {"phase": "Bound"}}, "merge", "default",
                    subresource="status")
        await h.phase("late", "Running")
        assert h.event_count("late", "FailedMount") == 0
        await h.until(lambda: h.event_count("stuck", "FailedMount"), what="FailedMount after the mount wait")
        assert ("Warning", "FailedMount", "Unable to attach or mount volumes: unmounted volumes=[d], unattached "
                "volumes=[], failed to process volumes=[d]: context deadline exceeded", None) in h.events("stuck")
        assert h.get("stuck")["status"]["phase"] == "Pending"
    run(body)


def test_a_missing_program_is_a_start_error():
    async def body(h):
        h.pod("missing", [container(command=["trainer", "--epochs", "3"])], restartPolicy="Never")
        pod = await h.phase("missing", "Failed")
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        message = RUNC + 'exec: "trainer": executable file not found in $PATH: unknown'
        assert (term["exitCode"], term["reason"], term["message"]) == (128, "StartError", message)
        assert term["startedAt"] == "1970-01-01T00:00:00Z"
        assert ("Warning", "Failed", f"Error: {message}", "spec.containers{c}") in h.events("missing")
    run(body)


def test_a_missing_config_map_key_is_a_create_container_config_error():
    async def body(h):
        env = [{"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "model"}}}]
        h.pod("cfg", [container(env=env)])
        pod = await h.until(lambda: (p := h.get("cfg")) and (w := waiting(p)) and w["reason"] != "ContainerCreating"
                            and p)
        assert waiting(pod) == {"reason": "CreateContainerConfigError", "message": 'configmap "settings" not found'}
        assert ("Warning", "Failed", 'Error: configmap "settings" not found', "spec.containers{c}") in h.events("cfg")
    run(body)


def test_environment_and_init_containers():
    async def body(h):
        h.api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                                    "data": {"model": "llama"}}, "default")
        env = [{"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "model"}}},
               {"name": "GREETING", "value": "serving $(MODEL) on $(NODE)"},
               {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
        h.pod("envpod", [container(env=env, **shell("printenv GREETING MODEL NODE; echo $KUBERNETES_SERVICE_HOST; "
                                                    "hostname; cat /etc/hostname"))],
              initContainers=[container("setup", **shell("echo preparing"))], restartPolicy="Never")
        pod = await h.phase("envpod", "Succeeded")
        init = pod["status"]["initContainerStatuses"][0]
        assert (init["ready"], init["state"]["terminated"]["reason"]) == (True, "Completed")
        assert h.api.logs("default", "envpod", {"container": "setup"}) == "preparing\n"
        assert h.api.logs("default", "envpod", {}) == \
            "serving llama on $(NODE)\nllama\nworker\n10.96.0.1\nenvpod\nenvpod\n"
    run(body)


def test_a_terminal_phase_written_by_another_component_kills_the_containers():
    async def body(h):
        h.pod("gpu-job", [container(**shell("sleep 3600"))])
        pod = await h.phase("gpu-job", "Running")
        status = dict(pod["status"], phase="Failed", reason="DriverReplaced", message="the GPU driver was replaced")
        h.api.update("pods", {"metadata": {"name": "gpu-job", "namespace": "default"}, "status": status}, "default",
                     subresource="status", manager="driver")
        pod = await h.until(lambda: (p := h.get("gpu-job")) and "terminated" in
                            p["status"]["containerStatuses"][0]["state"] and p)
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
        assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "DriverReplaced")
        assert ("Normal", "Killing", "Stopping container c", "spec.containers{c}") in h.events("gpu-job")
    run(body)


def test_a_ready_condition_another_component_cleared_is_put_back():
    """The node controller marks a silent node's pods not ready; the kubelet's status manager, finding the API's
    status differs from its own, writes its own again (status_manager.go needsReconcile)."""
    async def body(h):
        h.pod("web", [container("nginx", "nginx:1.27")])
        pod = await h.until(lambda: (p := h.get("web")) and p["status"].get("phase") == "Running"
                            and conditions(p)["Ready"][0] == "True" and p)
        status = dict(pod["status"], conditions=[dict(c, status="False") if c["type"] == "Ready" else c
                                                 for c in pod["status"]["conditions"]])
        h.api.update("pods", {"metadata": {"name": "web", "namespace": "default"}, "status": status}, "default",
                     subresource="status", manager="node-controller")
        assert conditions(h.get("web"))["Ready"][0] == "False"
        await h.until(lambda: conditions(h.get("web"))["Ready"][0] == "True", what="Ready put back")
    run(body)


def test_a_restarted_node_agent_takes_its_running_pods_over():
    async def body(h):
        h.pod("steady", [container(**shell("echo a; sleep 1; echo b; sleep 3600"))])
        before = (await h.phase("steady", "Running"))["status"]["containerStatuses"][0]
        await h.stop()
        h.kubelet = Kubelet(h.api, scale=SCALE)
        h._task = asyncio.create_task(h.kubelet.run())
        await asyncio.sleep(1.2)
        after = h.get("steady")["status"]["containerStatuses"][0]
        assert (after["containerID"], after["restartCount"], after["state"]) == \
            (before["containerID"], 0, before["state"])
        assert h.api.logs("default", "steady", {}) == "a\nb\n"
        assert h.event_count("worker", "Starting") == 2 and h.event_count("worker", "NodeReady") == 1
    run(body)


def test_active_deadline_fails_the_pod():
    async def body(h):
        h.pod("deadline", [container(**shell("sleep 3600"))], activeDeadlineSeconds=1)
        pod = await h.phase("deadline", "Failed", timeout=4)
        message = "Pod was active on the node longer than the specified deadline"
        assert (pod["status"]["reason"], pod["status"]["message"]) == ("DeadlineExceeded", message)
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
        assert ("Warning", "DeadlineExceeded", message, None) in h.events("deadline")
    run(body)


def test_a_failed_init_container_with_restart_never_fails_the_pod():
    async def body(h):
        h.pod("init-fails", [container(**shell("echo main"))], restartPolicy="Never",
              initContainers=[container("migrate", **shell("echo migrating; exit 2"))])
        pod = await h.phase("init-fails", "Failed")
        init = pod["status"]["initContainerStatuses"][0]
        assert (init["state"]["terminated"]["exitCode"], init["ready"]) == (2, False)
        assert pod["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
        assert conditions(pod)["Initialized"] == ("False", "ContainersNotInitialized")
        assert [c["message"] for c in pod["status"]["conditions"] if c["type"] == "Initialized"] == \
            ["containers with incomplete status: [migrate]"]
        assert conditions(pod)["PodReadyToStartContainers"] == ("False", None)
    run(body)
