"""``/healthz``, ``/livez`` and ``/readyz``, with ``?verbose``, ``?exclude=`` and one path per check.

staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go handleRootHealth: each check prints
``[+]name ok`` (``[-]name failed: reason withheld`` and a 500 when one fails, ``[+]name excluded: ok`` when
excluded), then ``<endpoint> check passed``; without ``verbose`` the body is ``ok``. Every check also has its own
path (``/healthz/etcd``) answering ``ok``. The checks are those a kube-apiserver lists on a kind cluster:
ping, log, etcd (readyz adds etcd-readiness, informer-sync and shutdown) and the post-start hooks in the
order kube-apiserver registers them. Here ``etcd`` checks the state database; the others hold while the
server serves.
"""
from __future__ import annotations

from aiohttp import web

from ..store import Store

# The post-start hooks and aggregator checks of kube-apiserver, in registration order (as listed by
# `kubectl get --raw '/readyz?verbose'` on a v1.33 kubeadm cluster; kind runs the same apiserver).
_HOOKS = [f"poststarthook/{name}" for name in (
    "start-apiserver-admission-initializer", "generic-apiserver-start-informers",
    "priority-and-fairness-config-consumer", "priority-and-fairness-filter", "storage-object-count-tracker-hook",
    "start-apiextensions-informers", "start-apiextensions-controllers", "crd-informer-synced",
    "start-system-namespaces-controller", "start-cluster-authentication-info-controller",
    "start-kube-apiserver-identity-lease-controller", "start-kube-apiserver-identity-lease-garbage-collector",
    "start-legacy-token-tracking-controller", "start-service-ip-repair-controllers", "rbac/bootstrap-roles",
    "scheduling/bootstrap-system-priority-classes", "priority-and-fairness-config-producer",
    "bootstrap-controller", "start-kubernetes-service-cidr-controller", "aggregator-reload-proxy-client-cert",
    "start-kube-aggregator-informers", "apiservice-status-local-available-controller",
    "apiservice-status-remote-available-controller", "apiservice-registration-controller",
    "apiservice-discovery-controller", "kube-apiserver-autoregistration")]
_AFTER_AUTOREGISTRATION = ["autoregister-completion", "poststarthook/apiservice-openapi-controller",
                           "poststarthook/apiservice-openapiv3-controller"]
_LIVE = ["ping", "log", "etcd", *_HOOKS, *_AFTER_AUTOREGISTRATION]
CHECKS = {
    "healthz": _LIVE,
    "livez": _LIVE,
    "readyz": ["ping", "log", "etcd", "etcd-readiness", "informer-sync", *_HOOKS, *_AFTER_AUTOREGISTRATION,
               "shutdown"],
}
_HEADERS = {"X-Content-Type-Options": "nosniff"}


def is_health_path(path: str) -> bool:
    return path.lstrip("/").split("/", 1)[0] in CHECKS


def _check(store: Store, name: str) -> str | None:
    """None when the check passes, else why not (for the log; the reply withholds it)."""
    if name in ("etcd", "etcd-readiness"):
        try:
            store.ping()
        except Exception as exc:  # noqa: BLE001 - any failure of the database fails the check
            return str(exc)
    return None


def _text(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8", headers=_HEADERS)


def respond(request: web.Request, store: Store) -> web.Response | None:
    """The reply to a health path, or None when the path names no check (a 404 for the caller)."""
    endpoint, _, check = request.path.strip("/").partition("/")
    names = CHECKS[endpoint]
    if check:
        if check not in names:
            return None
        failure = _check(store, check)
        return _text("ok") if failure is None else _text(f"internal server error: {failure}\n", 500)
    excluded = set(request.query.getall("exclude", []))
    unknown = set(excluded)
    lines, failed = [], False
    for name in names:
        if name in excluded:
            unknown.discard(name)
            lines.append(f"[+]{name} excluded: ok")
        elif _check(store, name) is not None:
            failed = True
            lines.append(f"[-]{name} failed: reason withheld")
        else:
            lines.append(f"[+]{name} ok")
    if unknown:
        quoted = ",".join(f'"{name}"' for name in sorted(unknown))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    if failed:
        return _text("\n".join(lines) + f"\n{endpoint} check failed\n", 500)
    if "verbose" not in request.query:
        return _text("ok")
    return _text("\n".join(lines) + f"\n{endpoint} check passed\n")
