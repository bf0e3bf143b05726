"""One pod on one node: the kubelet's pod worker, as a state machine advanced by timers.

``sync`` is the emulated ``SyncPod`` (pkg/kubelet/kubelet.go and kuberuntime/kuberuntime_manager.go):
admission (admission.py, and the device handshake of devices.py), then the pod sandbox and its IP,
then the init containers one at a time, then the regular containers, each started in turn through
image pull (pkg/kubelet/images/image_manager.go), create and start, and restarted by its restart
policy with the crash-loop back-off. Each call does what is due now and asks to be called again at
its next deadline (a pull finishing, a program waking from ``sleep``, a back-off ending), so a pod
costs one timer, not a task. Deletion stops the containers with the stop signal, kills what is left
when the grace period ends, writes the terminal phase and confirms with a zero-grace delete.
Event reasons and messages are the kubelet's (v1.36); container statuses follow
convertToAPIContainerStatuses in pkg/kubelet/kubelet_pods.go.
"""
from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from ...contract import Allocation, ContainerAllocation
from ..errors import ApiError
from ..gofmt import go_duration, truncate_ms
from ..objects import parse_time, rfc3339
from . import devices, dra, podstatus
from .admission import Rejection, admit
from .containerenv import (ClaimNotBound, ContainerConfigError, MountError, container_argv, container_env,
                           container_files, pod_hostname, volume_files)
from .images import Image, ImageReference, InvalidReference, PullError, parse_reference
from .process import Process
from .shell import World
from .shell.limits import Budget, memory_limit
from .exec import start_failure

if TYPE_CHECKING:
    from .kubelet import Kubelet

_RUNC = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
         "failed: unable to start container process: error during container init: ")
_DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
_MIN_GRACE = 2   # kuberuntime minimumGracePeriodInSeconds
DRA_RETRY = 0.5  # how often a pod waiting for its claims to be prepared looks again


class Instance:
    """One run of a container (a containerd container)."""

    def __init__(self, attempt: int, image_name: str = "", image_id: str = ""):
        self.id = secrets.token_hex(32)
        self.attempt = attempt
        self.image_name, self.image_id = image_name, image_id
        self.process: Process | None = None
        self.started: float | None = None
        self.finished: float | None = None
        self.exit_code: int | None = None
        self.reason = ""
        self.message = ""

    @property
    def running(self) -> bool:
        return self.exit_code is None and self.started is not None

    def collect(self) -> None:
        """Take the exit of a process that ended."""
        if self.process is not None and self.exit_code is None and not self.process.running:
            self.exit_code = self.process.exit_code
            self.finished = self.process.finished
            # containerd's CRI reports a container whose cgroup met the OOM killer as OOMKilled
            self.reason = "OOMKilled" if self.process.oom_killed else "Completed" if self.exit_code == 0 else "Error"

    def stop(self, now: float) -> None:
        """The stop signal; the program may ignore it."""
        if self.process is None:
            self.kill(now)
            return
        self.process.stop(now)
        self.collect()

    def kill(self, now: float) -> None:
        if self.process is not None:
            self.process.kill(now)
            self.collect()
        elif self.exit_code is None:
            self.exit_code, self.finished, self.reason = 137, now, "Error"

    def terminated(self) -> dict:
        state = {"containerID": f"containerd://{self.id}", "exitCode": self.exit_code,
                 "finishedAt": rfc3339(self.finished), "reason": self.reason,
                 "startedAt": rfc3339(self.started if self.started is not None else self.finished)}
        if self.message:
            state["message"] = self.message
        return state


class ContainerRun:
    """A container of the pod spec and its runs: the current one, the previous one, why it waits."""

    def __init__(self, spec: dict, init: bool, ephemeral: bool = False):
        self.spec = spec
        self.name = spec["name"]
        self.init = init
        self.ephemeral = ephemeral                       # added by pods/ephemeralcontainers; never restarted
        self.sidecar = init and podstatus.is_sidecar(spec)
        self.current: Instance | None = None
        self.previous: Instance | None = None
        self.waiting: tuple[str, str] | None = None      # the kubelet's reasonCache entry
        self.op: str | None = None                       # "pull" or "start" in progress
        self.op_until = 0.0
        self.op_data: dict = {}
        self.next_backoff_event = 0.0
        self.resume = False                              # adopted running container whose program must restart

    @property
    def succeeded(self) -> bool:
        c = self.current
        return c is not None and c.exit_code == 0


class PodWorker:
    def __init__(self, kubelet: "Kubelet", pod: dict):
        self.k = kubelet
        meta = pod["metadata"]
        self.uid, self.namespace, self.name = meta["uid"], meta.get("namespace", "default"), meta["name"]
        self.node_name = pod["spec"]["nodeName"]
        self.pod = pod
        self.admitted = False
        self.start_time: str | None = None
        self.sandbox = "none"            # none -> creating -> ready -> stopped
        self.sandbox_ready_at = 0.0
        self.ip: str | None = None
        self.volumes: dict | None = None
        self.runs: dict[str, ContainerRun] = {}
        for c in pod["spec"].get("initContainers") or ():
            self.runs[c["name"]] = ContainerRun(c, True)
        for c in pod["spec"].get("containers") or ():
            self.runs[c["name"]] = ContainerRun(c, False)
        self._add_ephemeral(pod)
        self.terminal = False            # podIsTerminal: nothing will run again
        self.forced: tuple[str, str, str] | None = None   # (phase, reason, message) decided by the kubelet
        self.rejected = False            # refused at admission: the status is only phase, reason and message
        self.terminating = False
        self.kill_at: float | None = None
        self.deleted = False
        self.next_wake: float | None = None
        self.allocation: Allocation | None = None
        self.dra_allocation: Allocation | None = None  # what the pod's prepared claims give containers
        self.dra_error = ""
        self.next_mount_retry = 0.0
        self.mount_wait_since: float | None = None  # when WaitForAttachAndMount began waiting for a claim

    # --- helpers -----------------------------------------------------------
    @property
    def full_name(self) -> str:
        return f"{self.name}_{self.namespace}({self.uid})"

    @property
    def node(self):
        return self.k.agents.get(self.node_name)

    def _event(self, type_: str, reason: str, message: str, container: str | None = None) -> None:
        self.k.recorder.pod(self.pod, type_, reason, message, container)

    def _wake(self, when: float | None) -> None:
        if when is not None and (self.next_wake is None or when < self.next_wake):
            self.next_wake = when

    @property
    def computing(self) -> bool:
        """A container's program used up its slice of CPU and has more to compute now (cpu.py)."""
        return any(run.current is not None and run.current.running and run.current.process is not None
                   and run.current.process.computing for run in self.runs.values())

    def _has_init(self) -> bool:
        return bool(self.pod["spec"].get("initContainers"))

    # --- after a restart of the node agent ---------------------------------------
    def adopt(self) -> None:
        """Take over a pod this node already ran: its IP, its containers (programs resume where they are)."""
        status = self.pod.get("status") or {}
        if not status.get("startTime"):
            return
        self.admitted = True
        self.start_time = status["startTime"]
        if status.get("phase") in podstatus.TERMINAL_PHASES:
            self.terminal = True
            return
        if status.get("podIP"):
            self.ip = status["podIP"]
            self.sandbox = "ready"
            if not self.pod["spec"].get("hostNetwork"):
                self.node.addresses.reserve(self.ip)
        for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or []),
                   *(status.get("ephemeralContainerStatuses") or [])]:
            run = self.runs.get(cs["name"])
            if run is None:
                continue
            state, last = cs.get("state") or {}, (cs.get("lastState") or {}).get("terminated")
            attempt = int(cs.get("restartCount", 0))
            if last:
                run.previous = _recorded(last, cs, max(attempt - 1, 0))
            if "running" in state or "terminated" in state:
                run.current = _recorded(state.get("terminated") or state["running"], cs, attempt)
                run.current.started = parse_time(state.get("running", {}).get("startedAt")) or run.current.started
                run.resume = "running" in state
            elif "waiting" in state and last:
                run.current, run.previous = run.previous, None
                run.waiting = (state["waiting"].get("reason", ""), state["waiting"].get("message", ""))

    def _resume(self, run: ContainerRun, now: float) -> None:
        """Run an adopted container's program again from its start time (rebuilding its log)."""
        run.resume = False
        inst = run.current
        try:
            image = self.k.catalog.resolve(parse_reference(inst.image_name))
            env, argv = self._config(run, image)
        except (InvalidReference, PullError, ContainerConfigError):
            return
        inst.process = Process(self._world(run, image, env), argv, inst.started, stdin=bool(run.spec.get("stdin")),
                               tty=bool(run.spec.get("tty")))
        self._advance(run, now)

    # --- the sync loop ------------------------------------------------------
    def sync(self, now: float) -> None:
        self.next_wake = None
        pod = self.k.api.store.get("pods", self.namespace, self.name)
        if pod is None or pod["metadata"]["uid"] != self.uid:
            self.stop_all(now)
            return
        self.pod = pod
        self._add_ephemeral(pod)
        phase = (pod.get("status") or {}).get("phase")
        if not self.terminal and phase in podstatus.TERMINAL_PHASES and self.admitted:
            self._terminated_elsewhere(now)
        if pod["metadata"].get("deletionTimestamp"):
            self._terminate(now)
            return
        if self.terminal:
            return
        if not self.admitted and not self._admit(now):
            return
        deadline = pod["spec"].get("activeDeadlineSeconds")
        if deadline is not None and self.start_time is not None:
            ends = parse_time(self.start_time) + int(deadline)
            if now >= ends:
                self._fail_deadline(now)
                return
            self._wake(ends)
        if not self._ready_to_start(now):
            return
        self._sync_containers(now)

    def _add_ephemeral(self, pod: dict) -> None:
        """Ephemeral containers appear in the spec of a running pod (kubectl debug); each starts once."""
        for c in pod["spec"].get("ephemeralContainers") or ():
            if c["name"] not in self.runs:
                self.runs[c["name"]] = ContainerRun(c, False, ephemeral=True)

    def stop_all(self, now: float) -> None:
        """The pod object (or its node) is gone: stop everything, write nothing more."""
        for run in self.runs.values():
            if run.current is not None:
                run.current.kill(now)
        self._release_sandbox()
        self.deleted = True

    def _admit(self, now: float) -> bool:
        node = self.k.api.store.get("nodes", "", self.node_name)
        if node is None:
            return False
        others = [w.pod for w in self.k.workers_on(self.node_name) if w is not self and w.admitted and not w.terminal]
        rejection = admit(self.pod, node, others)
        if rejection is not None:
            self._reject(rejection, now)
            return False
        self.admitted = True
        self.start_time = rfc3339(now)
        self.k.mark_dirty(self)
        return True

    def _reject(self, rejection: Rejection, now: float) -> None:
        """kubelet.rejectPod: Warning event, phase Failed with ``Pod was rejected: <message>``."""
        self._event("Warning", rejection.reason, rejection.message)
        self.terminal = self.rejected = True
        self.forced = ("Failed", rejection.reason, "Pod was rejected: " + rejection.message)
        self.start_time = self.start_time or rfc3339(now)
        self._release_sandbox()
        self.k.mark_dirty(self)

    def _fail_deadline(self, now: float) -> None:
        self._event("Warning", "DeadlineExceeded", _DEADLINE_MESSAGE)
        self._kill_all(now, announce=True)
        self.terminal = True
        self.forced = ("Failed", "DeadlineExceeded", _DEADLINE_MESSAGE)
        self._release_sandbox()
        self.k.mark_dirty(self)

    def _terminated_elsewhere(self, now: float) -> None:
        """Another component wrote a terminal phase: the containers die, the phase stays."""
        self._kill_all(now, announce=True)
        self.terminal = True
        self._release_sandbox()
        self.k.mark_dirty(self)

    def _kill_all(self, now: float, announce: bool) -> None:
        for run in self.runs.values():
            run.op = None
            inst = run.current
            if inst is not None and inst.running:
                if announce:
                    self._event("Normal", "Killing", f"Stopping container {run.name}", run.name)
                inst.kill(now)

    def _ready_to_start(self, now: float) -> bool:
        """Device allocation (admission), volumes, then the sandbox, in SyncPod's order."""
        node = self.k.api.store.get("nodes", "", self.node_name)
        if devices.requested_plugin_resources(self.pod, node or {}):
            allocation = devices.read_allocation(self.pod)
            if allocation is None:
                return False
            if allocation.error:
                self._reject(Rejection("UnexpectedAdmissionError", devices.admission_message(allocation.error)), now)
                return False
            self.allocation = allocation
        else:
            # No device-plugin resource requested, but a runtime hook may still give the container devices
            # (a vendor's container toolkit does for an environment variable asking for all of them): an
            # allocation already on the pod applies without waiting for one.
            allocation = devices.read_allocation(self.pod)
            if allocation is not None and not allocation.error:
                self.allocation = allocation
        if self.pod["spec"].get("resourceClaims") and not self._claims_prepared(node or {}, now):
            return False
        if self.volumes is None:
            if now < self.next_mount_retry:
                self._wake(self.next_mount_retry)
                return False
            try:
                self.volumes = volume_files(self.k.api, self.pod, host_ip=self.node.host_ip, pod_ip="")
            except ClaimNotBound as exc:
                if self.mount_wait_since is None:
                    self.mount_wait_since = now
                if now - self.mount_wait_since < self.k.timings.mount_timeout:
                    self._wake(now + self.k.timings.mount_retry)
                    return False
                self.mount_wait_since = now
                self._event("Warning", "FailedMount", str(exc))
                self._wake(now + self.k.timings.mount_retry)
                return False
            except MountError as exc:
                self._event("Warning", "FailedMount", str(exc))
                self.next_mount_retry = now + self.k.timings.backoff_resync
                self._wake(self.next_mount_retry)
                return False
        if self.sandbox == "none":
            self.ip = self.node.host_ip if self.pod["spec"].get("hostNetwork") else self.node.addresses.allocate()
            self.sandbox = "creating"
            self.sandbox_ready_at = now + self.k.timings.sandbox_create
            self.k.mark_dirty(self)
        if self.sandbox == "creating":
            if now < self.sandbox_ready_at:
                self._wake(self.sandbox_ready_at)
                return False
            self.sandbox = "ready"
            self.k.mark_dirty(self)
        return True

    def _claims_prepared(self, node: dict, now: float) -> bool:
        """PrepareDynamicResources (kubelet/dra.py): wait for the drivers, then add their devices."""
        if self.dra_allocation is None:
            prepared = dra.prepare(self.k.api, self.pod, node)
            if prepared.allocation is None:
                if prepared.error and prepared.error != self.dra_error:
                    self._event("Warning", dra.FAILED_PREPARE, prepared.error)
                self.dra_error = prepared.error
                self._wake(now + DRA_RETRY)
                return False
            self.dra_allocation = prepared.allocation
        self.allocation = dra.merge(self.allocation, self.dra_allocation)
        return True

    # --- containers ---------------------------------------------------------
    def _sync_containers(self, now: float) -> None:
        for run in self.runs.values():
            if run.resume:
                self._resume(run, now)
            self._advance(run, now)
        if self._initialized(now):
            for run in (r for r in self.runs.values() if not r.init and not r.ephemeral):
                if not self._drive(run, now):
                    break
            for run in (r for r in self.runs.values() if r.ephemeral):
                self._drive(run, now)
        self._check_completion(now)

    def _initialized(self, now: float) -> bool:
        """Drive the init containers in order; True once all have succeeded (sidecars: started)."""
        for run in (r for r in self.runs.values() if r.init):
            if run.sidecar:
                if not self._drive(run, now) or not (run.current and run.current.running):
                    return False
            elif not run.succeeded:
                self._drive(run, now)
                return False
        return True

    def _advance(self, run: ContainerRun, now: float) -> None:
        inst = run.current
        if inst is None or inst.process is None or not inst.running:
            return
        inst.process.advance(now)
        inst.collect()
        if inst.running:
            self._wake(inst.process.wake)
        else:
            self.k.mark_dirty(self)
            self._wake(now)   # the pod worker reacts to the exit (restart, or the pod is done)

    def _should_restart(self, run: ContainerRun) -> bool:
        """kubecontainer.ShouldContainerBeRestarted for a container whose last run exited."""
        if run.sidecar:
            return True
        if run.ephemeral:
            return False
        policy = self.pod["spec"].get("restartPolicy", "Always")
        code = run.current.exit_code
        if run.init:
            return code != 0 and policy != "Never"
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    def _drive(self, run: ContainerRun, now: float) -> bool:
        """Move one container forward; False while it occupies the pod worker (a pull or start in progress)."""
        if run.op is not None:
            if now < run.op_until:
                self._wake(run.op_until)
                return False
            op, run.op = run.op, None
            if op == "pull":
                return self._finish_pull(run, now)
            return self._finish_start(run, now)
        inst = run.current
        if inst is not None and inst.running:
            return True
        if inst is not None:
            if not self._should_restart(run):
                return True
            key = (self.uid, run.name)
            backoff = self.k.crash_backoff
            if backoff.in_backoff_since(key, inst.finished, now):
                waited = go_duration(backoff.get(key))
                run.waiting = ("CrashLoopBackOff",
                               f"back-off {waited} restarting failed container={run.name} pod={self.full_name}")
                if now >= run.next_backoff_event:
                    self._event("Warning", "BackOff", f"Back-off restarting failed container {run.name} in pod "
                                f"{self.full_name}", run.name)
                    run.next_backoff_event = now + self.k.timings.backoff_resync
                self._wake(min(backoff.ends_at(key, inst.finished), run.next_backoff_event))
                self.k.mark_dirty(self)
                return True
            backoff.next(key, inst.finished, now)
        return self._start(run, now)

    def _start(self, run: ContainerRun, now: float) -> bool:
        """startContainer, step 1: make sure the image is there (pkg/kubelet/images EnsureImageExists)."""
        spec = run.spec
        image = spec.get("image", "")
        try:
            ref = parse_reference(image)
        except InvalidReference as exc:
            message = f'Failed to apply default image tag "{image}": {exc}'
            self._event("Warning", "InspectFailed", message, run.name)
            self._event("Warning", "Failed", "Error: InvalidImageName", run.name)
            return self._wait(run, "InvalidImageName", message, now + self.k.timings.backoff_resync)
        policy = spec.get("imagePullPolicy") or ("Always" if not ref.tag and not ref.digest or ref.tag == "latest"
                                                 else "IfNotPresent")
        stored = self.node.images.lookup(ref)
        if policy != "Always" and stored is not None:
            self._event("Normal", "Pulled", f'Container image "{image}" already present on machine and can be '
                        f"accessed by the pod", run.name)
            return self._create(run, ref, self.k.catalog.resolve(ref), now)
        if policy == "Never":
            message = f'Container image "{image}" is not present with pull policy of Never'
            self._event("Warning", "ErrImageNeverPull", message, run.name)
            self._event("Warning", "Failed", "Error: ErrImageNeverPull", run.name)
            return self._wait(run, "ErrImageNeverPull", message, now + self.k.timings.backoff_resync)
        key = f"{self.uid}_{image}"
        pulls = self.k.pull_backoff
        if pulls.in_backoff_since_update(key, now):
            message = f'Back-off pulling image "{image}"'
            self._event("Normal", "BackOff", message, run.name)
            self._event("Warning", "Failed", "Error: ImagePullBackOff", run.name)
            previous = self.k.pull_errors.get(key)
            if previous:
                message = f"{message}: {previous}"
            return self._wait(run, "ImagePullBackOff", message,
                              min(pulls.update_ends_at(key), now + self.k.timings.backoff_resync))
        self._event("Normal", "Pulling", f'Pulling image "{image}"', run.name)
        try:
            resolved: Image | None = self.k.catalog.resolve(ref)
            outcome, duration = None, self.k.timings.pull_seconds(resolved.size)
        except PullError as exc:
            resolved, outcome, duration = None, str(exc), self.k.timings.pull_failure
        cached = self.k.timings.pull_latency * self.k.timings.scale if outcome is None else duration
        start, end = self.node.images.pull_slot(ref, now, duration, cached)
        run.op, run.op_until = "pull", end
        run.op_data = {"ref": ref, "image": resolved, "error": outcome, "requested": now, "started": start,
                       "ends": end, "key": key}
        self._wake(end)
        return False

    def _wait(self, run: ContainerRun, reason: str, message: str, retry: float) -> bool:
        run.waiting = (reason, message)
        self._wake(retry)
        self.k.mark_dirty(self)
        return True

    def _finish_pull(self, run: ContainerRun, now: float) -> bool:
        data = run.op_data
        image = run.spec.get("image", "")
        if data["error"] is not None:
            self._event("Warning", "Failed", f'Failed to pull image "{image}": {data["error"]}', run.name)
            self._event("Warning", "Failed", "Error: ErrImagePull", run.name)
            self.k.pull_backoff.next(data["key"], now, now)
            self.k.pull_errors[data["key"]] = f"ErrImagePull: {data['error']}"
            return self._wait(run, "ErrImagePull", data["error"], now + self.k.timings.error_resync)
        resolved: Image = data["image"]
        self.node.images.add(data["ref"], resolved.size)
        self.k.pull_errors.pop(data["key"], None)
        scale = self.k.timings.scale or 1.0
        pulled = truncate_ms((data["ends"] - data["started"]) / scale)
        total = truncate_ms((data["ends"] - data["requested"]) / scale)
        self._event("Normal", "Pulled", f'Successfully pulled image "{image}" in {go_duration(pulled)} '
                    f"({go_duration(total)} including waiting). Image size: {resolved.size} bytes.", run.name)
        return self._create(run, data["ref"], resolved, now)

    def _config(self, run: ContainerRun, image: Image) -> tuple[list[tuple[str, str]], list[str]]:
        """generateContainerConfig: environment and command line (ContainerConfigError when a source is missing)."""
        alloc = self._allocation_of(run)
        node = self.k.api.store.get("nodes", "", self.node_name) or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        env = container_env(self.k.api, self.pod, run.spec, image, alloc.response.envs, host_ip=self.node.host_ip,
                            pod_ip=self.ip or "", allocatable=allocatable)
        return env, container_argv(run.spec, image, dict(env))

    def _allocation_of(self, run: ContainerRun) -> ContainerAllocation:
        return self.allocation.for_container(run.name) if self.allocation else ContainerAllocation()

    def _world(self, run: ContainerRun, image: Image, env: list[tuple[str, str]]) -> World:
        alloc = self._allocation_of(run)
        files = container_files(self.pod, run.spec, image, self.volumes or {}, pod_ip=self.ip or "", allocation=alloc)
        mounted = {m.container_path: alloc.programs[m.container_path] for m in alloc.response.mounts
                   if m.container_path in alloc.programs}
        natives = {path: self.k.catalog.natives[name] for path, name in alloc.native_programs.items()
                   if path in mounted and name in self.k.catalog.natives}
        node = self.k.api.store.get("nodes", "", self.node_name) or {}
        capacity = (node.get("status") or {}).get("capacity") or {}
        info = (node.get("status") or {}).get("nodeInfo") or {}
        return World(image=image, catalog=self.k.catalog, env=env, files=files, hostname=pod_hostname(self.pod),
                     nproc=max(1, int(float(capacity.get("cpu", "1") or 1))), kernel=info.get("kernelVersion", ""),
                     workdir=run.spec.get("workingDir") or "/", mounted=mounted,
                     mounted_native=natives, node_labels=lambda: self._node_metadata("labels"),
                     node_annotations=lambda: self._node_metadata("annotations"),
                     boot_time=parse_time((node.get("metadata") or {}).get("creationTimestamp")) or 0.0,
                     budget=Budget(memory=memory_limit(run.spec)))

    def _node_metadata(self, field: str) -> dict[str, str]:
        """The labels or annotations of this pod's node now (what a program reading its Node would see)."""
        node = self.k.api.store.get("nodes", "", self.node_name) or {}
        return (node.get("metadata") or {}).get(field) or {}

    def _create(self, run: ContainerRun, ref: ImageReference, image: Image, now: float) -> bool:
        """startContainer, steps 2 and 3: generate the container config, create it, start it."""
        try:
            env, argv = self._config(run, image)
        except ContainerConfigError as exc:
            self._event("Warning", "Failed", f"Error: {exc}", run.name)
            return self._wait(run, "CreateContainerConfigError", str(exc), now + self.k.timings.backoff_resync)
        stored = self.node.images.lookup(ref)
        inst = Instance(attempt=0 if run.current is None else run.current.attempt + 1,
                        image_name=ref.full.split("@")[0] if ref.tag or not ref.digest else ref.full,
                        image_id=f"{ref.repository}@{stored.digest}" if stored else ref.full)
        if not argv:
            message = f'failed to generate container "{inst.id}" spec: failed to generate spec: no command specified'
            self._event("Warning", "Failed", f"Error: {message}", run.name)
            return self._wait(run, "CreateContainerError", message, now + self.k.timings.backoff_resync)
        self._event("Normal", "Created", "Container created", run.name)
        run.op, run.op_until = "start", now + self.k.timings.container_start
        run.op_data = {"instance": inst, "env": env, "argv": argv, "image": image}
        self._wake(run.op_until)
        return False

    def _finish_start(self, run: ContainerRun, now: float) -> bool:
        data = run.op_data
        inst: Instance = data["instance"]
        world = self._world(run, data["image"], data["env"])
        argv = data["argv"]
        if run.current is not None:
            run.previous = run.current
        run.current = inst
        run.waiting = None
        failure = self._start_failure(world, argv)
        if failure is not None:
            inst.started, inst.finished = 0.0, now   # containerd reports a start time of the Unix epoch
            inst.exit_code, inst.reason, inst.message = 128, "StartError", failure
            self._event("Warning", "Failed", f"Error: {failure}", run.name)
            self.k.mark_dirty(self)
            self._wake(now)
            return True
        inst.started = now
        inst.process = Process(world, argv, now, stdin=bool(run.spec.get("stdin")), tty=bool(run.spec.get("tty")))
        self._event("Normal", "Started", "Container started", run.name)
        self._advance(run, now)
        self.k.mark_dirty(self)
        return True

    @staticmethod
    def _start_failure(world: World, argv: list[str]) -> str | None:
        """runc's error when PID 1's program cannot be executed."""
        detail = start_failure(world, argv)
        return None if detail is None else f"{_RUNC}{detail}: unknown"

    def _check_completion(self, now: float) -> None:
        """A pod whose containers will not run again is terminal: its sandbox goes away."""
        statuses = self.container_statuses()
        phase = podstatus.get_phase(self.pod, statuses[0] + statuses[1], pod_is_terminal=False)
        if phase not in podstatus.TERMINAL_PHASES:
            return
        for run in self.runs.values():
            if run.sidecar and run.current is not None and run.current.running:
                self._event("Normal", "Killing", f"Stopping container {run.name}", run.name)
                run.current.stop(now)
                run.current.kill(now)
        self.terminal = True
        self._release_sandbox()
        self.k.mark_dirty(self)

    # --- deletion -------------------------------------------------------------
    def _terminate(self, now: float) -> None:
        if not self.terminating:
            self.terminating = True
            grace = self.pod["metadata"].get("deletionGracePeriodSeconds")
            if grace is None:
                grace = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
            self.kill_at = now + max(int(grace), _MIN_GRACE)
            for run in self.runs.values():
                run.op = None
                inst = run.current
                if inst is not None and inst.running:
                    self._event("Normal", "Killing", f"Stopping container {run.name}", run.name)
                    inst.stop(now)
        running = False
        for run in self.runs.values():
            inst = run.current
            if inst is not None and inst.running:
                if inst.process is not None:
                    inst.process.advance(now)
                    inst.collect()
                if inst.running and now >= self.kill_at:
                    inst.kill(now)
                running = running or inst.running
        if running:
            self._wake(self.kill_at)
            self.k.mark_dirty(self)
            return
        for run in self.runs.values():
            run.waiting = None
        self.terminal = True
        self._release_sandbox()
        self.k.finish_deletion(self)

    def _release_sandbox(self) -> None:
        if self.dra_allocation is not None:
            others = set().union(*(dra.claim_names(p) for p in self.k.api.store.by_index(
                "pods", "spec.nodeName", self.node_name) if p["metadata"].get("uid") != self.uid and
                (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")))
            dra.unprepare(self.k.api, self.pod, self.node_name, others)
            self.dra_allocation = None
        if self.sandbox in ("creating", "ready"):
            self.sandbox = "stopped"
            if self.node is not None and not self.pod["spec"].get("hostNetwork"):
                self.node.addresses.release(self.ip)

    # --- status ---------------------------------------------------------------
    def container_statuses(self) -> tuple[list[dict], list[dict]]:
        """(init container statuses in spec order, regular ones sorted by name)."""
        has_init = self._has_init()
        inits = [self._container_status(r, has_init) for r in self.runs.values() if r.init]
        regular = sorted((self._container_status(r, has_init) for r in self.runs.values()
                          if not r.init and not r.ephemeral), key=lambda s: s["name"])
        return inits, regular

    def ephemeral_statuses(self) -> list[dict]:
        """ephemeralContainerStatuses, in spec order (waiting with no reason until the kubelet starts one)."""
        return [self._container_status(r, False) for r in self.runs.values() if r.ephemeral]

    def _container_status(self, run: ContainerRun, has_init: bool) -> dict:
        spec = run.spec
        status = {"name": run.name, "image": spec.get("image", ""), "imageID": "", "lastState": {}, "ready": False,
                  "restartCount": 0, "started": False,
                  "state": {"waiting": {"reason": "PodInitializing" if has_init else "ContainerCreating"}}}
        mounts = [{"name": m["name"], "mountPath": m["mountPath"],
                   **({"readOnly": True, "recursiveReadOnly": "Disabled"} if m.get("readOnly") else {})}
                  for m in spec.get("volumeMounts") or ()]
        if mounts:
            status["volumeMounts"] = mounts
        inst = run.current
        if inst is not None:
            status.update(image=inst.image_name, imageID=inst.image_id, containerID=f"containerd://{inst.id}",
                          restartCount=inst.attempt)
            status["user"] = {"linux": {"gid": 0, "supplementalGroups": [0, 10] if self._busybox(inst) else [0],
                                        "uid": 0}}
            if inst.running:
                status["state"] = {"running": {"startedAt": rfc3339(inst.started)}}
                status["started"] = True
                status["ready"] = (not run.init or run.sidecar) and not run.ephemeral
                resources = {k: {n: v for n, v in (spec.get("resources") or {}).get(k, {}).items()
                                 if n in ("cpu", "memory", "ephemeral-storage")}
                             for k in ("limits", "requests")}
                resources = {k: v for k, v in resources.items() if v}
                if resources and not run.init:
                    status["resources"] = resources
            else:
                status["state"] = {"terminated": inst.terminated()}
                status["ready"] = run.init and not run.sidecar and inst.exit_code == 0
            if run.previous is not None and run.previous.exit_code is not None:
                status["lastState"] = {"terminated": run.previous.terminated()}
        if run.waiting is not None and (inst is None or (not inst.running and not self.terminal)):
            if inst is not None and inst.exit_code is not None:
                status["lastState"] = {"terminated": inst.terminated()}
            reason, message = run.waiting
            status["state"] = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
            status["ready"] = False
        return status

    def _busybox(self, inst: Instance) -> bool:
        return inst.process is not None and inst.process.world.image.shell == "ash"

    def api_status(self, now: float) -> dict:
        """The pod status to write (generateAPIPodStatus merged as the status manager does)."""
        pod = self.pod
        old = pod.get("status") or {}
        generation = pod["metadata"].get("generation")
        if self.rejected:
            phase, reason, message = self.forced
            status = {"phase": phase, "reason": reason, "message": message,
                      "startTime": old.get("startTime") or self.start_time}
            if old.get("qosClass"):
                status["qosClass"] = old["qosClass"]
            if generation is not None:
                status["observedGeneration"] = generation
            return status
        inits, regular = self.container_statuses()
        if self.forced is not None:
            phase = self.forced[0]
        elif old.get("phase") in podstatus.TERMINAL_PHASES:
            phase = old["phase"]
        else:
            phase = podstatus.get_phase(pod, inits + regular, pod_is_terminal=self.terminal)
            if self.terminal and phase not in podstatus.TERMINAL_PHASES:
                phase = "Failed"
        status: dict = {"phase": phase}
        if phase == old.get("phase") and self.forced is None:
            for key in ("reason", "message"):
                if old.get(key):
                    status[key] = old[key]
        elif self.forced is not None:
            status["reason"], status["message"] = self.forced[1], self.forced[2]
        status["conditions"] = podstatus.conditions(pod, old, phase, inits + regular, self.sandbox == "ready",
                                                    rfc3339(now))
        if self.node is not None:
            status["hostIP"] = self.node.host_ip
            status["hostIPs"] = [{"ip": self.node.host_ip}]
        if self.ip and self.sandbox != "none":
            status["podIP"] = self.ip
            status["podIPs"] = [{"ip": self.ip}]
        status["startTime"] = old.get("startTime") or self.start_time
        if inits:
            status["initContainerStatuses"] = inits
        status["containerStatuses"] = regular
        ephemeral = self.ephemeral_statuses()
        if ephemeral:
            status["ephemeralContainerStatuses"] = ephemeral
        if old.get("qosClass"):
            status["qosClass"] = old["qosClass"]
        if generation is not None:
            status["observedGeneration"] = generation
        for key in ("nominatedNodeName", "resize", "resourceClaimStatuses"):
            if key in old:
                status[key] = old[key]
        return status

    def write_status(self, now: float) -> None:
        pod = self.k.api.store.get("pods", self.namespace, self.name)
        if pod is None or pod["metadata"]["uid"] != self.uid:
            return
        self.pod = pod
        status = self.api_status(now)
        if (pod.get("status") or {}) == status:
            return
        try:
            self.k.api.update("pods", {**pod, "status": status}, self.namespace, subresource="status",
                              manager="kubelet")
        except ApiError:
            self.k.mark_dirty(self)




def _recorded(state: dict, status: dict, attempt: int) -> Instance:
    """An Instance rebuilt from a container status written before a restart."""
    inst = Instance(attempt, status.get("image", ""), status.get("imageID", ""))
    inst.id = (state.get("containerID") or status.get("containerID") or "").removeprefix("containerd://") or inst.id
    inst.started = parse_time(state.get("startedAt"))
    if "exitCode" in state:
        inst.exit_code = int(state["exitCode"])
        inst.finished = parse_time(state.get("finishedAt"))
        inst.reason, inst.message = state.get("reason", ""), state.get("message", "")
    return inst
