"""HTTPS requests to a test cluster's API server as a hostile client sends them, and a health probe that checks
the server keeps answering while it handles them."""
from __future__ import annotations

import http.client
import json
import ssl
import statistics
import threading
import time
from dataclasses import dataclass, field

import yaml

PROBE_BUDGET = 0.1  # seconds: /healthz must answer within this while a bad request is being handled


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict = field(default_factory=dict)

    @property
    def json(self):
        return json.loads(self.body)


class Api:
    """Plain HTTPS to the cluster with its CA and token; one connection per call unless ``keep`` is used."""

    def __init__(self, cluster):
        cfg = yaml.safe_load(cluster.kubeconfig.read_text())
        server = cfg["clusters"][0]["cluster"]["server"]
        self.host, port = server.removeprefix("https://").rsplit(":", 1)
        self.port = int(port)
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=str(cluster.home / "clusters" / cluster.name / "pki" /
                                                         "ca.crt"))

    def connection(self, timeout: float = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | str | None = None,
                content_type: str = "application/json", headers: dict | None = None,
                conn: http.client.HTTPSConnection | None = None, auth: str | None = "Bearer") -> Reply:
        own = conn is None
        conn = conn or self.connection()
        sent = {"Content-Type": content_type, **(headers or {})}
        if auth:
            sent["Authorization"] = f"{auth} {self.token}"
        try:
            conn.request(method, path, body=body.encode() if isinstance(body, str) else body, headers=sent)
            resp = conn.getresponse()
            return Reply(resp.status, resp.read(), dict(resp.getheaders()))
        finally:
            if own:
                conn.close()


def during(api: Api, bad_request, *, probes: int = 3) -> tuple[object, list[float]]:
    """Run ``bad_request()`` in a thread and probe ``/healthz`` meanwhile (at least ``probes`` times, more while
    the bad request is still being answered); return its result and the probes' latencies."""
    done = threading.Event()
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = bad_request()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = exc
        finally:
            done.set()

    conn = api.connection(timeout=30)
    api.request("GET", "/healthz", conn=conn)  # the probe's connection is ready before the bad request starts
    calibrate()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    latencies = []
    while len(latencies) < probes or not done.is_set():
        start = time.monotonic()
        reply = api.request("GET", "/healthz", conn=conn)
        latencies.append(time.monotonic() - start)
        assert reply.status == 200 and reply.body == b"ok", reply
        if len(latencies) > 2000:
            break
    worker.join(60)
    conn.close()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result"), latencies


_contention = 1.0  # wall time over CPU time of a fixed computation, measured before the last bad request


def calibrate() -> None:
    """Measure how contended the machine's CPUs are now, for :func:`budget`."""
    global _contention
    samples = []
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        sum(i * i for i in range(200_000))
        samples.append((time.perf_counter() - wall) / max(time.process_time() - cpu, 1e-6))
    _contention = max(1.0, statistics.median(samples))


def budget() -> float:
    """PROBE_BUDGET of an uncontended machine: on one whose CPUs are shared by other work, a computation takes
    longer in wall time by the measured factor, and so does the server's (a server busy with a bad request
    answers seconds later either way)."""
    return PROBE_BUDGET * _contention


def assert_responsive(latencies: list[float]) -> None:
    limit = budget()
    slow = [round(t, 3) for t in latencies if t > limit]
    assert not slow, f"/healthz took longer than {limit:.3f}s while the bad request was handled: {slow}"


def probe_for(api: Api, seconds: float, pause: float = 0.02) -> list[float]:
    """Latencies of ``/healthz`` over ``seconds``, each on a new HTTPS connection (TCP and TLS handshake
    included: the most event-loop iterations a request needs, so the most a busy loop could delay it)."""
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        reply = api.request("GET", "/healthz")
        latencies.append(time.monotonic() - start)
        assert reply.status == 200 and reply.body == b"ok", reply
        time.sleep(pause)
    return latencies


def percentile(latencies: list[float], fraction: float) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]
