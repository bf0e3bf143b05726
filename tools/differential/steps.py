"""Running a case on one engine's cluster: its steps, in order, and what each printed or answered.

kubectl steps run the real binary; API steps go through the official client's ``ApiClient`` (the request as the
case writes it, the status and the JSON body as they come back); ``gpulab`` steps run the course's own command.
Every output is normalised (:mod:`.normalise`) before it is kept, so the two engines' records compare directly.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from dataclasses import dataclass, field

from gpulab.kubeclient import ApiClient, kube_config

from .corpus import Case, Step, substitute
from .engines import BIN, Target
from .normalise import normalise, sort_lines

NAMESPACE_READY_SECONDS = 90.0
ROOT = Path(__file__).resolve().parents[2]     # manifests in cases are named from the repository's root


@dataclass
class Output:
    label: str                 # what ran: "kubectl get pods -o wide"
    parts: dict                # part -> normalised text ("stdout", "stderr", "rc"; "status", "body")


@dataclass
class Record:
    """What one case did on one engine."""
    outputs: list = field(default_factory=list)
    seconds: float = 0.0


class Run:
    """One case on one target: its variables (``ns`` and what API steps saved) and its client."""

    def __init__(self, target: Target, case: Case):
        self.target = target
        self.case = case
        self.variables = {"ns": case.ns}
        self.kubeconfig = target.namespaced_kubeconfig(case.ns)
        self._client: ApiClient | None = None

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            self._client = kube_config.new_client_from_config(config_file=str(self.target.kubeconfig))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # --- requests ---------------------------------------------------------------------------------------
    def request(self, method: str, path: str, *, query: dict | None = None, body=None,
                content_type: str = "application/json", accept: str = "application/json",
                timeout: float = 60) -> tuple[int, str]:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type     # the client encodes a body as JSON when the type says so
        _, url, headers, _, post = self.client.param_serialize(
            method, path, query_params=list((query or {}).items()), header_params=headers,
            auth_settings=["BearerToken"])
        response = self.client.call_api(method, url, headers, body, post, _request_timeout=timeout)
        return response.status, response.read().decode("utf-8", "replace")

    def ensure_namespace(self) -> None:
        """Create the case's namespace and wait for its ``default`` ServiceAccount (a pod is refused before it)."""
        ns = self.case.ns
        deadline = time.monotonic() + NAMESPACE_READY_SECONDS
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        # A namespace of the same name left by an earlier run on kept clusters is waited out.
        while self.request("POST", "/api/v1/namespaces", body=namespace, timeout=10)[0] == 409:
            self._wait(deadline, f"namespace {ns} of an earlier run to go")
        while self.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default", timeout=10)[0] != 200:
            self._wait(deadline, f"the default ServiceAccount in {ns}")

    @staticmethod
    def _wait(deadline: float, what: str) -> None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)

    def drop_namespace(self) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{self.case.ns}")

    # --- steps ------------------------------------------------------------------------------------------
    def command(self, program: str, step: Step) -> dict:
        deadline = time.monotonic() + step.timeout
        while True:
            try:
                proc = subprocess.run([str(BIN / program), *step.args(self.variables)],
                                      input=substitute(step.stdin, self.variables) if step.stdin else None,
                                      capture_output=True, text=True, env=self.target.env(self.kubeconfig), cwd=ROOT,
                                      timeout=step.timeout, stdin=None if step.stdin else subprocess.DEVNULL)
                parts = {"stdout": proc.stdout, "stderr": proc.stderr, "rc": str(proc.returncode)}
            except subprocess.TimeoutExpired as exc:
                parts = {"stdout": _text(exc.stdout), "stderr": _text(exc.stderr), "rc": "timed out"}
            if not step.until or re.search(step.until, parts["stdout"]) or time.monotonic() > deadline:
                return parts
            time.sleep(0.5)

    def api(self, step: Step) -> dict:
        spec = substitute(step.spec, self.variables)
        deadline = time.monotonic() + step.timeout
        while True:
            status, text = self.request(spec.get("method", "GET"), spec["path"], query=spec.get("query"),
                                        body=spec.get("body"), accept=spec.get("accept", "application/json"),
                                        content_type=spec.get("content_type", "application/json"),
                                        timeout=step.timeout)
            body = _decode(text)
            if not step.until or re.search(step.until, text) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for name, path in step.save.items():
            self.variables[name] = project(body, path)
        if spec.get("keep"):
            body = {path: project(body, path) for path in spec["keep"]}
        return {"status": str(status), "body": _dump(body)}

    def step(self, step: Step) -> dict:
        if step.kind == "sleep":
            time.sleep(float(step.spec))
            return {}
        parts = self.api(step) if step.kind == "api" else self.command(step.kind, step)
        parts = {k: normalise(v) for k, v in parts.items() if not step.compare or k in step.compare}
        if step.sort:
            parts = {k: sort_lines(v, keep_header=step.sort is True) for k, v in parts.items()}
        return parts


def run_case(target: Target, case: Case) -> Record:
    """The case's compared outputs on ``target``; setup and cleanup run too, a failed setup is an output."""
    started = time.monotonic()
    run = Run(target, case)
    record = Record()
    try:
        if case.namespace:
            run.ensure_namespace()
        for step in case.setup:
            parts = run.step(step)
            if parts.get("rc", "0") != "0" or parts.get("status", "200")[:1] not in "2":
                record.outputs.append(Output(f"setup failed: {step.describe()}", parts))
        for step in case.steps:
            record.outputs.append(Output(step.describe(), run.step(step)))
        for step in case.cleanup:
            run.step(step)
        if case.namespace:
            run.drop_namespace()
    except Exception as exc:  # noqa: BLE001 - a case that breaks the harness is reported, the rest still run
        record.outputs.append(Output("harness error", {"error": f"{type(exc).__name__}: {exc}"}))
    finally:
        run.close()
    record.seconds = time.monotonic() - started
    return record


def project(body, path: str):
    """The value at a dotted ``path`` of a JSON body; ``*`` takes every item of a list (``items.*.metadata.name``)."""
    values, many = [body], False
    for key in path.split("."):
        if key == "*":
            values, many = [v for value in values if isinstance(value, list) for v in value], True
        else:
            values = [value.get(key) if isinstance(value, dict) else None for value in values]
    return values if many else values[0]


def _decode(text: str):
    """A JSON body, a watch's stream of events as a list, or the text when it is neither."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return text


def _dump(body) -> str:
    return body if isinstance(body, str) else json.dumps(body, indent=1)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")
