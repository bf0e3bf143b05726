"""exec, attach, port-forward, debug and the proxy subresources, through the real kubectl and the official client.

Both of kubectl's transports are exercised: its default WebSockets (``v5.channel.k8s.io`` for exec and
attach, SPDY tunnelled through a WebSocket for port-forward) and its SPDY fallback
(``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``, ``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``); the Python
client speaks ``v4.channel.k8s.io``. Upstream sources: docs/fidelity.md#streaming.
"""
from __future__ import annotations

import gzip
import http.client
import json
import re
import subprocess

import pexpect
import pytest

from .conftest import KUBECTL, wait_for

MANIFEST = """
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers:
  - name: box
    image: busybox
    command: [sh, -c, 'echo started > /tmp/state; sleep 3600']
    env: [{name: GREETING, value: hello}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: nginx
    image: nginx
    ports: [{name: http, containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 8080, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: page}
data: {index.html: "<h1>mounted page</h1>\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: custom-web}
spec:
  containers:
  - name: nginx
    image: nginx
    volumeMounts: [{name: page, mountPath: /usr/share/nginx/html}]
  volumes: [{name: page, configMap: {name: page}}]
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers: [{name: done, image: busybox, command: ["true"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: unscheduled}
spec:
  nodeSelector: {no-such: label}
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: no-image}
spec:
  containers: [{name: c, image: "busybox:no-such-tag"}]
---
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  containers:
  - name: ticker
    image: busybox
    command: [sh, -c, 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done']
"""
EXEC_ID = '"[0-9a-f]{64}"'
NOT_FOUND = ('exec: "no-such-program": executable file not found in $PATH')


def phase(cluster, name: str) -> str:
    return cluster.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}", check=False).stdout


@pytest.fixture(scope="module")
def pods(cluster):
    cluster.kubectl("apply", "-f", "-", input=MANIFEST)
    for name in ("box", "web", "custom-web", "ticker"):
        wait_for(lambda: phase(cluster, name) == "Running", what=f"{name} running")
    wait_for(lambda: phase(cluster, "done") == "Succeeded", what="done to complete")
    wait_for(lambda: "ErrImagePull" in cluster.kubectl("get", "pod", "no-image").stdout
             or "ImagePullBackOff" in cluster.kubectl("get", "pod", "no-image").stdout, what="a failed pull")
    return cluster


def spdy(cluster) -> dict:
    return {**cluster.env(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false", "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}


def run(cluster, *args, env=None, input=None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env or cluster.env(), input=input,
                          timeout=60)


# --- exec ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["websocket", "spdy"])
def test_exec_runs_in_the_container_with_its_environment_and_exit_code(pods, transport):
    env = spdy(pods) if transport == "spdy" else None
    proc = run(pods, "exec", "box", "--", "sh", "-c", 'echo "$GREETING $(cat /tmp/state)"; hostname; echo oops >&2',
               env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "hello started\nbox\n", "oops\n")
    proc = run(pods, "exec", "box", "--", "sh", "-c", "exit 3", env=env)
    assert (proc.returncode, proc.stderr) == (3, "command terminated with exit code 3\n")


def test_exec_writes_what_later_commands_see(pods):
    assert run(pods, "exec", "box", "--", "sh", "-c", "echo kept > /tmp/note").returncode == 0
    assert run(pods, "exec", "box", "--", "cat", "/tmp/note").stdout == "kept\n"


@pytest.mark.parametrize("transport", ["websocket", "spdy"])
def test_exec_with_piped_stdin(pods, transport):
    env = spdy(pods) if transport == "spdy" else None
    proc = run(pods, "exec", "-i", "box", "--", "sh", input="echo from-script\ncat /etc/hostname\nexit 4\n", env=env)
    assert (proc.returncode, proc.stdout) == (4, "from-script\nbox\n")
    proc = run(pods, "exec", "-i", "box", "--", "cat", input="one\ntwo\n", env=env)
    assert (proc.returncode, proc.stdout) == (0, "one\ntwo\n")


def test_exec_of_a_missing_program_is_the_runtimes_error(pods):
    proc = run(pods, "exec", "box", "--", "no-such-program")
    assert proc.returncode == 1
    assert re.fullmatch(r"error: Internal error occurred: Internal error occurred: error executing command in "
                        rf"container: failed to exec in container: failed to start exec {EXEC_ID}: OCI runtime exec "
                        rf"failed: exec failed: unable to start container process: {re.escape(NOT_FOUND)}\n",
                        proc.stderr), proc.stderr
    proc = run(pods, "exec", "box", "--", "no-such-program", env=spdy(pods))
    assert re.fullmatch(r"error: Internal error occurred: error executing command in container: failed to exec in "
                        rf"container: failed to start exec {EXEC_ID}: .*{re.escape(NOT_FOUND)}\n", proc.stderr)
    proc = run(pods, "exec", "box", "--", "/bin/nothing")
    assert proc.stderr.endswith('exec: "/bin/nothing": stat /bin/nothing: no such file or directory\n')
    proc = run(pods, "exec", "box", "--", "sh", "-c", "no-such-program")
    assert (proc.returncode, proc.stderr) == (127, "sh: no-such-program: not found\n"
                                                   "command terminated with exit code 127\n")


def test_exec_where_nothing_runs(pods):
    proc = run(pods, "exec", "done", "--", "true")
    assert (proc.returncode, proc.stderr) == (1, "error: cannot exec into a container in a completed pod; current "
                                                 "phase is Succeeded\n")
    proc = run(pods, "exec", "no-image", "--", "true")
    assert proc.stderr == 'error: Internal error occurred: unable to upgrade connection: container not found ("c")\n'
    proc = run(pods, "exec", "no-image", "--", "true", env=spdy(pods))
    assert proc.stderr == 'error: unable to upgrade connection: container not found ("c")\n'
    proc = run(pods, "exec", "unscheduled", "--", "true")
    assert proc.returncode == 1 and proc.stderr.endswith("pod unscheduled does not have a host assigned\n")
    assert run(pods, "exec", "box", "--", "true").returncode == 0          # the server keeps serving


def test_exec_through_the_official_client(pods):
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    from kubernetes.stream import stream

    v1 = client.CoreV1Api(pods.client())
    out = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["sh", "-c", "echo $GREETING"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "hello\n"
    ws = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["sh", "-c", "read x; echo got $x; "
                                                                                           "exit 6"],
                stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
    ws.write_stdin("line\n")
    ws.run_forever(timeout=10)
    assert (ws.read_stdout(), ws.returncode) == ("got line\n", 6)
    for pod, container, text in (("box", "nope", "container nope is not valid for pod box"),
                                 ("unscheduled", "", "pod unscheduled does not have a host assigned")):
        with pytest.raises(ApiException) as err:
            stream(v1.connect_get_namespaced_pod_exec, pod, "default", container=container, command=["true"],
                   stderr=True, stdin=False, stdout=True, tty=False)
        assert "Handshake status 400 Bad Request" in str(err.value) and text in str(err.value)
    # The client asks for v5 first: the API server's translator reports the kubelet's refusal on the error channel.
    ws = stream(v1.connect_get_namespaced_pod_exec, "done", "default", command=["true"], stderr=True, stdin=False,
                stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=10)
    assert json.loads(ws.read_channel(3)) == {
        "metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
        "message": 'Internal error occurred: unable to upgrade connection: container not found ("done")',
        "details": {"causes": [{"message": 'unable to upgrade connection: container not found ("done")'}]}}
    # Asked for v4 only, the request goes to the kubelet, whose 500 comes back as the handshake's answer.
    with pytest.raises(ApiException) as err:
        stream(v1.connect_get_namespaced_pod_exec, "done", "default", command=["true"], stderr=True, stdin=False,
               stdout=True, tty=False, _headers={"sec-websocket-protocol": "v4.channel.k8s.io"})
    assert "Handshake status 500 Internal Server Error" in str(err.value)
    assert '-+-+- container not found ("done")' in str(err.value)
    ws = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["sh", "-c", "exit 2"], stderr=True,
                stdin=False, stdout=True, tty=False, _preload_content=False,
                _headers={"sec-websocket-protocol": "v4.channel.k8s.io"})
    ws.run_forever(timeout=10)
    assert json.loads(ws.read_channel(3))["message"] == ("command terminated with non-zero exit code: error executing "
                                                         "command [sh -c exit 2], exit code 2")


def test_exec_passes_binary_output_and_input_unchanged(pods):
    """A gzip stream written by a program in the container (the client's own e2e test_pod_apis pipes into gzip)."""
    from kubernetes import client
    from kubernetes.stream import stream

    packed = subprocess.run([KUBECTL, "exec", "box", "--", "sh", "-c", 'echo -n "This is a test string" | gzip'],
                            capture_output=True, env=pods.env(), timeout=60).stdout
    assert gzip.decompress(packed) == b"This is a test string"
    v1 = client.CoreV1Api(pods.client())
    out = stream(v1.connect_get_namespaced_pod_exec, "box", "default", command=["sh", "-c", "seq 1 500 | gzip -9"],
                 stderr=False, stdin=False, stdout=True, tty=False, binary=True)
    assert gzip.decompress(out) == "".join(f"{i}\n" for i in range(1, 501)).encode()
    noise = bytes(range(256)) * 4
    proc = subprocess.run([KUBECTL, "exec", "-i", "box", "--", "gunzip"], input=gzip.compress(noise),
                          capture_output=True, env=pods.env(), timeout=60)
    assert (proc.returncode, proc.stdout) == (0, noise)


def test_exec_gzip_files_and_its_errors(pods):
    script = "mkdir /tmp/gz; echo kept > /tmp/gz/z; gzip /tmp/gz/z; ls /tmp/gz; zcat /tmp/gz/z.gz; gunzip /tmp/gz/z.gz; " \
             "ls /tmp/gz; cat /tmp/gz/z"
    assert run(pods, "exec", "box", "--", "sh", "-c", script).stdout == "z.gz\nkept\nz\nkept\n"
    proc = run(pods, "exec", "box", "--", "sh", "-c", "echo plain | gunzip")
    assert (proc.returncode, proc.stderr) == (1, "gunzip: invalid magic\ncommand terminated with exit code 1\n")
    proc = run(pods, "exec", "box", "--", "gzip", "/tmp/absent")
    assert proc.stderr == "gzip: can't open '/tmp/absent': No such file or directory\n" \
                          "command terminated with exit code 1\n"


def test_exec_uptime_is_busybox_s_line(pods):
    from kubernetes import client
    from kubernetes.stream import stream

    out = stream(client.CoreV1Api(pods.client()).connect_post_namespaced_pod_exec, "box", "default",
                 command=["uptime"], stderr=False, stdin=False, stdout=True, tty=False)
    assert re.fullmatch(r" \d\d:\d\d:\d\d up (\d+ min|[ \d]\d:\d\d),  0 users,  load average: 0\.00, 0\.00, 0\.00\n",
                        out), out


def test_exec_interactive_shell_on_a_tty(pods):
    shell = pexpect.spawn(KUBECTL, ["exec", "-it", "box", "--", "sh"], env=pods.env(), encoding="utf-8", timeout=20)
    shell.expect_exact("/ # ")
    shell.send("echo $((6 * 7)) $TERM\r")
    shell.expect_exact("42 xterm\r\n/ # ")
    shell.send("cd /tmp; if true; then\r")
    shell.expect_exact("> ")
    shell.send("echo inside; fi\r")
    shell.expect_exact("inside\r\n/tmp # ")
    shell.send("sleep 60\r")
    shell.send("\x03")
    shell.expect_exact("^C\r\n/tmp # ")
    shell.send("echo $?\r")
    shell.expect_exact("130\r\n/tmp # ")
    shell.send("exit 9\r")
    shell.expect_exact("command terminated with exit code 9")
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 9


# --- attach --------------------------------------------------------------------------------------------------
def test_attach_follows_the_programs_output(pods):
    proc = subprocess.Popen([KUBECTL, "attach", "ticker"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=pods.env())
    try:
        first = int(proc.stdout.readline().split()[1])
        assert proc.stdout.readline() == f"tick {first + 1}\n"
    finally:
        proc.terminate()
        proc.wait(10)


def attached_shell(cluster, *args: str, exchanges: list[tuple[str, str]]) -> int:
    """Run kubectl ARGS on a terminal, press Enter at its hint (the prompt came before the attach), then send
    each line and expect its answer; kubectl's exit status."""
    shell = pexpect.spawn(KUBECTL, list(args), env=cluster.env(), encoding="utf-8", timeout=30)
    shell.expect_exact("If you don't see a command prompt, try pressing enter.")
    shell.send("\r")
    shell.expect_exact("/ # ")
    for line, answer in exchanges:
        shell.send(line + "\r")
        shell.expect_exact(answer)
    shell.expect(pexpect.EOF)
    shell.close()
    return shell.exitstatus


def test_run_interactive_attaches_to_the_shell(pods):
    assert attached_shell(pods, "run", "-it", "--rm", "once", "--image=busybox", "--restart=Never", "--", "sh",
                          exchanges=[("echo $HOSTNAME", "once\r\n/ # "), ("exit 5", 'pod "once" deleted')]) == 5


# --- debug (ephemeral containers) ------------------------------------------------------------------------------
def test_debug_starts_an_ephemeral_container_and_attaches(pods):
    assert attached_shell(pods, "debug", "-it", "box", "--image=busybox", "--target=box", "-c", "dbg",
                          exchanges=[("echo debugging $HOSTNAME", "debugging box\r\n/ # "), ("exit", "")]) == 0
    pod = json.loads(pods.kubectl("get", "pod", "box", "-o", "json").stdout)
    [spec] = pod["spec"]["ephemeralContainers"]
    assert (spec["name"], spec["targetContainerName"], spec["stdin"], spec["tty"]) == ("dbg", "box", True, True)
    [status] = wait_for(lambda: [s for s in json.loads(pods.kubectl("get", "pod", "box", "-o", "json").stdout)[
        "status"].get("ephemeralContainerStatuses", []) if "terminated" in s["state"]], what="dbg to exit")
    assert (status["name"], status["state"]["terminated"]["exitCode"], status["ready"]) == ("dbg", 0, False)
    assert [s["name"] for s in pod["status"]["containerStatuses"]] == ["box"]


def test_ephemeral_containers_validation(pods):
    def add(container):
        return pods.kubectl("patch", "pod", "box", "--subresource=ephemeralcontainers", "--type=json", "-p",
                            json.dumps([{"op": "add", "path": "/spec/ephemeralContainers/-", "value": container}]),
                            check=False)

    proc = add({"name": "box", "image": "busybox"})
    assert proc.stderr == ('The Pod "box" is invalid: spec.ephemeralContainers[1].name: Duplicate value: "box"\n')
    proc = add({"name": "e2", "image": "busybox", "targetContainerName": "ghost"})
    assert 'spec.ephemeralContainers[1].targetContainerName: Not found: "ghost"' in proc.stderr
    proc = add({"name": "e3", "image": "busybox", "ports": [{"containerPort": 80}]})
    assert "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container" in proc.stderr
    proc = pods.kubectl("replace", "--subresource=ephemeralcontainers", "-f", "-", check=False, input=json.dumps(
        {**json.loads(pods.kubectl("get", "pod", "box", "-o", "json").stdout), "spec": {
            **json.loads(pods.kubectl("get", "pod", "box", "-o", "json").stdout)["spec"], "ephemeralContainers": []}}))
    assert 'spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed' in proc.stderr
    proc = pods.kubectl("create", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "eph"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "ephemeralContainers": [{"name": "e", "image": "busybox"}]}}))
    assert proc.stderr == 'The Pod "eph" is invalid: spec.ephemeralContainers: Forbidden: cannot be set on create\n'


# --- port-forward --------------------------------------------------------------------------------------------
class PortForward:
    """``kubectl port-forward`` running in the background, with its local port."""

    def __init__(self, cluster, target: str, remote: int, env=None):
        self.proc = subprocess.Popen([KUBECTL, "port-forward", target, f":{remote}"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env or cluster.env())
        line = self.proc.stdout.readline()
        match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> \d+", line)
        assert match, line + self.proc.stderr.read()
        self.port = int(match.group(1))

    def get(self, path: str) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", path, headers={"User-Agent": "gpulab-test"})
        resp = conn.getresponse()
        out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        conn.close()
        return out

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.communicate(timeout=10)[1]


@pytest.mark.parametrize("transport", ["websocket", "spdy"])
def test_port_forward_reaches_what_the_container_serves(pods, transport):
    forward = PortForward(pods, "pod/web", 80, env=spdy(pods) if transport == "spdy" else None)
    try:
        status, headers, body = forward.get("/")
        assert status == 200 and b"<title>Welcome to nginx!</title>" in body and len(body) == 615
        assert headers["server"] == "nginx/1.29.0" and headers["content-type"] == "text/html"
        status, _, body = forward.get("/missing")
        assert status == 404 and b"<center><h1>404 Not Found</h1></center>" in body
    finally:
        forward.stop()
    log = pods.kubectl("logs", "web").stdout
    assert re.search(r'127\.0\.0\.1 - - \[.*\] "GET /missing HTTP/1\.1" 404 153 "-" "gpulab-test" "-"', log)


def test_port_forward_to_a_service_and_a_mounted_page(pods):
    forward = PortForward(pods, "svc/web", 8080)
    try:
        assert forward.get("/")[0] == 200
    finally:
        forward.stop()
    forward = PortForward(pods, "pod/custom-web", 80)
    try:
        assert forward.get("/")[2] == b"<h1>mounted page</h1>\n"
    finally:
        forward.stop()


def test_port_forward_to_a_port_nothing_serves(pods):
    forward = PortForward(pods, "pod/web", 81)
    try:
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            forward.get("/")
        forward.proc.wait(10)
    finally:
        err = forward.stop()
    pod = json.loads(pods.kubectl("get", "pod", "web", "-o", "json").stdout)
    assert re.search(r'error forwarding port 81 to pod [0-9a-f]{64}, uid : failed to execute portforward in network '
                     r'namespace \\"/var/run/netns/cni-[0-9a-f-]{36}\\": failed to connect to localhost:81 inside '
                     r'namespace \\"[0-9a-f]{64}\\", IPv4: dial tcp4 127\.0\.0\.1:81: connect: connection refused '
                     r'IPv6 dial tcp6 \[::1\]:81: connect: connection refused ', err), err
    assert "error: lost connection to pod" in err
    assert pod["status"]["phase"] == "Running"
    proc = run(pods, "port-forward", "unscheduled", ":80")
    assert proc.stderr == "error: unable to forward port because pod is not running. Current status=Pending\n"


def test_port_forward_through_the_official_client(pods):
    from kubernetes import client
    from kubernetes.stream import portforward

    v1 = client.CoreV1Api(pods.client())
    forward = portforward(v1.connect_get_namespaced_pod_portforward, "web", "default", ports="80,81")
    sock = forward.socket(80)
    sock.setblocking(True)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    assert data.startswith(b"HTTP/1.1 200 OK\r\nServer: nginx/1.29.0\r\n") and data.endswith(b"</html>\n")
    assert forward.error(80) is None
    wait_for(lambda: forward.error(81), what="the error of port 81")
    assert forward.error(81).startswith("error forwarding port 81 to pod ")


# --- proxy ---------------------------------------------------------------------------------------------------
def test_pod_service_and_node_proxies(pods):
    raw = lambda path: run(pods, "get", "--raw", path)  # noqa: E731
    assert b"Welcome to nginx!" in raw("/api/v1/namespaces/default/pods/web/proxy/").stdout.encode()
    assert "Welcome to nginx!" in raw("/api/v1/namespaces/default/services/web:http/proxy/").stdout
    assert "Welcome to nginx!" in raw("/api/v1/namespaces/default/services/web:8080/proxy/index.html").stdout
    ip = json.loads(pods.kubectl("get", "pod", "web", "-o", "json").stdout)["status"]["podIP"]
    assert raw("/api/v1/namespaces/default/pods/web:81/proxy/").stderr == (
        f"Error from server (ServiceUnavailable): error trying to reach service: dial tcp {ip}:81: connect: "
        "connection refused\n")
    assert raw("/api/v1/namespaces/default/services/web:81/proxy/").stderr == (
        'Error from server (ServiceUnavailable): no service port 81 found for service "web"\n')
    assert raw("/api/v1/namespaces/default/services/nobody/proxy/").stderr == (
        'Error from server (ServiceUnavailable): no endpoints available for service "nobody"\n')
    assert raw("/api/v1/namespaces/default/pods/unscheduled/proxy/").stderr == (
        "Error from server (BadRequest): address not allowed\n")
    node = json.loads(pods.kubectl("get", "pod", "web", "-o", "json").stdout)["spec"]["nodeName"]
    assert raw(f"/api/v1/nodes/{node}/proxy/healthz").stdout == "ok"
    listed = json.loads(raw(f"/api/v1/nodes/{node}/proxy/pods").stdout)
    assert "web" in [p["metadata"]["name"] for p in listed["items"]] and "kind" not in listed["items"][0]
    config = json.loads(raw(f"/api/v1/nodes/{node}/proxy/configz").stdout)["kubeletconfig"]
    assert (config["nodeStatusUpdateFrequency"], config["clusterDNS"]) == ("10s", ["10.96.0.10"])
    assert raw(f"/api/v1/nodes/{node}/proxy/nothing-here").stderr == (
        "Error from server (NotFound): the server could not find the requested resource\n")


def test_streaming_subresources_are_discovered(pods):
    out = run(pods, "get", "--raw", "/api/v1").stdout
    names = {r["name"] for r in json.loads(out)["resources"]}
    assert {"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "pods/ephemeralcontainers",
            "services/proxy", "nodes/proxy"} <= names
