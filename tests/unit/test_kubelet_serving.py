"""What an emulated container answers on its ports (kubelet/serving.py): routes, content providers, static files,
error pages, the access log, and one HTTP/1.1 connection parsed by h11."""
from __future__ import annotations

import pytest

from gpulab.cluster.kubelet.images import default_catalog
from gpulab.cluster.kubelet.serving import (HttpConnection, Request, ServingContext, parse_serves, register_provider,
                                            respond, unregister_provider)
from gpulab.cluster.kubelet.shell import FileSystem

SERVICE = parse_serves([{
    "port": 9400, "headers": {"Server": "exporter/${VERSION}"},
    "routes": [{"path": "/metrics", "provider": "test-metrics", "contentType": "text/plain; version=0.0.4"},
               {"path": "/static/*", "body": "fixed ${VERSION}\n"}],
    "errorPages": {404: "nothing here\n"}}])[0]


def ctx(**kw) -> ServingContext:
    base = dict(pod={"metadata": {"name": "p", "namespace": "ns"}}, container="c", node="n1", port=9400,
                env={"VERSION": "1.2"})
    return ServingContext(**{**base, **kw})


@pytest.fixture
def provider():
    seen = []

    def metrics(request, context):
        seen.append((request.path, context.pod["metadata"]["name"], context.node, context.port))
        return f"up{{pod=\"{context.pod['metadata']['name']}\"}} 1\n"

    register_provider("test-metrics", metrics)
    yield seen
    unregister_provider("test-metrics")


def test_a_provider_supplies_the_body_with_what_it_knows_of_the_container(provider):
    resp = respond(SERVICE, Request("GET", "/metrics?x=1"), ctx(), FileSystem())
    assert (resp.status, resp.body) == (200, b'up{pod="p"} 1\n')
    assert resp.header("Content-Type") == "text/plain; version=0.0.4"
    assert resp.header("Server") == "exporter/1.2" and resp.header("Content-Length") == "14"
    assert provider == [("/metrics", "p", "n1", 9400)]


def test_an_unregistered_provider_is_unavailable():
    assert respond(SERVICE, Request("GET", "/metrics"), ctx(), FileSystem()).status == 503


def test_fixed_routes_error_pages_methods_and_head():
    files = FileSystem()
    assert respond(SERVICE, Request("GET", "/static/a/b"), ctx(), files).body == b"fixed 1.2\n"
    missing = respond(SERVICE, Request("GET", "/other"), ctx(), files)
    assert (missing.status, missing.body) == (404, b"nothing here\n")
    assert respond(SERVICE, Request("POST", "/static/x"), ctx(), files).status == 405
    head = respond(SERVICE, Request("HEAD", "/static/x"), ctx(), files)
    assert (head.status, head.body, head.header("Content-Length")) == (200, b"", "10")


def test_nginx_serves_its_page_or_the_mounted_one_and_logs_each_request():
    [nginx] = default_catalog().behaviours["nginx"].serves
    lines = []
    context = ctx(port=80, env={"NGINX_VERSION": "1.29.0"}, log=lines.append)
    files = FileSystem()
    page = respond(nginx, Request("GET", "/", [("User-Agent", "curl/8")]), context, files)
    assert page.status == 200 and len(page.body) == 615 and page.header("Server") == "nginx/1.29.0"
    files.add_file("/usr/share/nginx/html/index.html", "mine\n")
    assert respond(nginx, Request("GET", "/index.html"), context, files).body == b"mine\n"
    assert respond(nginx, Request("GET", "/../../etc/passwd"), context, files).status == 404
    assert lines[0].startswith("127.0.0.1 - - [") and lines[0].endswith('"GET / HTTP/1.1" 200 615 "-" "curl/8" "-"\n')


def test_one_connection_keeps_alive_until_asked_to_close(provider):
    conn = HttpConnection(lambda req: respond(SERVICE, req, ctx(), FileSystem()))
    out = conn.receive(b"GET /static/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /static/2 HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n")
    assert out.count(b"HTTP/1.1 200 OK\r\n") == 2 and out.endswith(b"fixed 1.2\n")
    assert b"Connection: keep-alive" in out and b"Connection: close" in out and conn.closed


def test_a_malformed_request_is_answered_400():
    conn = HttpConnection(lambda req: respond(SERVICE, req, ctx(), FileSystem()))
    assert conn.receive(b"NOT HTTP\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request\r\n") and conn.closed
