"""A watcher sees only durable changes (issue 23, item 4): kill -9 the server while controllers churn and
watchers stream, and no watcher has seen a resourceVersion, or an object's version, that the restarted
server does not have; watchers resuming from their last version pick up where they were.

The restarted server starts from its state database and nothing else, so that file, read right after the
kill and before the restart, is exactly what the restarted server has. Before this change watch events went
out before the controllers' writes were committed (at most 50 ms later), and a kill in between let a
watcher see resourceVersion 20627 and the restarted server hand out 20617 again."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time

import pytest

from .conftest import start_cluster, stop_cluster, wait_for
from .responsiveness import Api

KILLS = 5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("durable"))
    yield c
    stop_cluster(c)


class Watcher(threading.Thread):
    """A raw watch of every pod from ``since``: what it saw, in order, until the connection ends."""

    def __init__(self, api: Api, since: str):
        super().__init__(daemon=True)
        self.api, self.since = api, since
        self.seen: list[tuple[str, str, int]] = []   # (type, namespace/name, resourceVersion)
        self.errors: list[dict] = []

    def run(self):
        conn = self.api.connection(timeout=30)
        try:
            conn.request("GET", f"/api/v1/pods?watch=1&resourceVersion={self.since}",
                         headers={"Authorization": f"Bearer {self.api.token}"})
            for line in conn.getresponse():
                event = json.loads(line)
                meta = event["object"]["metadata"]
                if event["type"] == "ERROR":
                    self.errors.append(event["object"])
                else:
                    self.seen.append((event["type"], f"{meta.get('namespace')}/{meta['name']}",
                                      int(meta["resourceVersion"])))
        except (OSError, ValueError):   # the server was killed mid-stream
            pass
        finally:
            conn.close()

    @property
    def last_rv(self) -> int:
        return max((rv for _, _, rv in self.seen), default=int(self.since))


def _on_disk(cluster) -> tuple[int, dict[str, int]]:
    """The state database the restarted server will start from: its resourceVersion and every pod's."""
    path = cluster.home / "clusters" / cluster.name / "state.db"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rv = int(db.execute("SELECT v FROM meta WHERE k='rv'").fetchone()[0])
        pods = {f"{ns}/{name}": int(json.loads(data)["metadata"]["resourceVersion"])
                for ns, name, data in db.execute("SELECT namespace, name, data FROM objects WHERE key='pods'")}
    finally:
        db.close()
    return rv, pods


def test_no_watcher_sees_a_change_that_kill_9_takes_back(cluster):
    cluster.kubectl("create", "deployment", "churn", "--image=busybox", "--replicas=4", "--", "sleep", "3600")
    since = json.loads(cluster.kubectl("get", "--raw", "/api/v1/pods?limit=1").stdout)["metadata"]["resourceVersion"]
    for kill in range(KILLS):
        api = Api(cluster)
        watchers = [Watcher(api, since) for _ in range(3)]
        for w in watchers:
            w.start()
        # One client write, then the controllers' burst: the ReplicaSet controller creates or deletes twenty
        # pods, the scheduler binds them, the node agent writes their statuses; kill -9 in the middle of it.
        cluster.kubectl("scale", "deployment", "churn", f"--replicas={24 if kill % 2 == 0 else 4}")
        wait_for(lambda: all(len(w.seen) > 10 for w in watchers), timeout=60, interval=0.01,
                 what="every watcher streaming the controllers' writes")
        time.sleep(0.05 * kill)
        os.kill(int((cluster.home / "clusters" / cluster.name / "server.pid").read_text()), signal.SIGKILL)
        for w in watchers:
            w.join(30)
        rv, pods = _on_disk(cluster)
        for w in watchers:
            assert not w.errors, w.errors
            assert w.last_rv <= rv, f"a watcher saw resourceVersion {w.last_rv}, the restarted server has {rv}"
            last = {}
            for kind, name, seen_rv in w.seen:
                last[name] = (kind, seen_rv)
            rolled_back = {name: (seen_rv, pods[name]) for name, (kind, seen_rv) in last.items()
                           if kind != "DELETED" and name in pods and pods[name] < seen_rv}
            assert not rolled_back, f"watched versions the restarted server does not have: {rolled_back}"
        cluster.gpulab("cluster", "up")
        # Watchers resume from the last version they saw. The restarted server has every version up to it, so
        # each either carries on from there or, its watch cache starting at the restart, answers 410 Expired
        # and the client lists again (what client-go's reflector does): never a silent gap.
        resumed = [Watcher(Api(cluster), str(w.last_rv)) for w in watchers]
        for r in resumed:
            r.start()
        cluster.kubectl("scale", "deployment", "churn", "--replicas=6")
        wait_for(lambda: all(r.seen or r.errors for r in resumed), timeout=60, interval=0.1,
                 what="resumed watchers' first answers")
        for r in resumed:
            assert all((e["code"], e["reason"]) == (410, "Expired") for e in r.errors), r.errors
            assert all(seen_rv > int(r.since) for _, _, seen_rv in r.seen)
        since = json.loads(cluster.kubectl("get", "--raw", "/api/v1/pods?limit=1").stdout)["metadata"][
            "resourceVersion"]
