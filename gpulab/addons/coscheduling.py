"""``gpulab install coscheduling``: scheduler-plugins as a second scheduler, as its Helm chart installs it.

On a real cluster the course's gang-scheduling fix is
``helm install scheduler-plugins as-a-second-scheduler/ --create-namespace --namespace scheduler-plugins``
(kubernetes-sigs/scheduler-plugins, manifests/install/charts/as-a-second-scheduler). This installer creates
what that chart creates, through the official client and a kubeconfig, so it
works on the embedded cluster, kind and real clusters alike:

* the chart's ``crds/`` first: the PodGroup CRD, read as data from
  ``gpulab/cluster/crds/scheduling.x-k8s.io_podgroups.yaml`` (the same file
  the chart ships), and the ElasticQuota and NodeResourceTopology CRDs
  (``data/``), without which the chart's scheduler never schedules (its
  profile enables CapacityScheduling and NodeResourceTopologyMatch, which list
  those kinds: the upstream engine runs the real scheduler and showed it); the
  chart's other CRDs (AppGroup, NetworkTopology, ...) are for plugins the
  profile leaves off. Helm never replaces an existing CRD, neither does this;
* the release namespace (``--create-namespace``), then the templates rendered
  with the chart's default values (``data/scheduler-plugins-v0.35.7.yaml``):
  ServiceAccounts, the ``scheduler-config`` ConfigMap, RBAC, and the
  Deployments ``scheduler-plugins-controller`` and ``scheduler-plugins-scheduler``.

The embedded cluster's scheduler runs the ``scheduler-plugins-scheduler``
profile (Coscheduling) as soon as the PodGroup CRD is served; the Deployments
are there so the cluster looks like one where the chart was installed.
Objects of API groups the cluster does not serve (RBAC on the embedded
cluster, which authorises every request) are skipped.

Hand-written rather than shelling out to helm: helm is not available in the
course environment, and the chart is a handful of static objects.
"""
from __future__ import annotations

import argparse
import string
import sys
import time
from importlib import resources
from pathlib import Path

import yaml

CHART_NAMES = ("coscheduling", "scheduler-plugins", "as-a-second-scheduler",
               "scheduler-plugins/as-a-second-scheduler")
RELEASE = "scheduler-plugins"
DEFAULT_NAMESPACE = "scheduler-plugins"
CHART_VERSION = "v0.35.7"
SCHEDULER = "scheduler-plugins-scheduler"
# The chart's CRD, shipped with the embedded cluster's data; read as a file, so gpulab.cluster is not imported.
_CRD_FILE = Path(__file__).resolve().parent.parent / "cluster" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
_POLL_SECONDS = 0.5
PROFILE_CRDS = ("scheduling.x-k8s.io_elasticquotas.yaml", "topology.node.k8s.io_noderesourcetopologies.yaml")


class InstallError(RuntimeError):
    """A helm-style failure; ``str()`` is what follows ``Error: INSTALLATION FAILED: ``."""


def podgroup_crd() -> dict:
    """The PodGroup CRD as the chart ships it."""
    text = _CRD_FILE.read_text(encoding="utf-8")
    return next(doc for doc in yaml.safe_load_all(text) if doc)


def chart_crds() -> list[dict]:
    """The chart's ``crds/`` that its scheduler profile needs: PodGroup, ElasticQuota, NodeResourceTopology."""
    data = resources.files(__package__).joinpath("data")
    return [podgroup_crd()] + [next(doc for doc in yaml.safe_load_all(data.joinpath(name).read_text(encoding="utf-8"))
                                    if doc) for name in PROFILE_CRDS]


def manifests(namespace: str = DEFAULT_NAMESPACE) -> list[dict]:
    """The chart's templated objects for a release in ``namespace``."""
    text = resources.files(__package__).joinpath(f"data/scheduler-plugins-{CHART_VERSION}.yaml").read_text(
        encoding="utf-8")
    rendered = string.Template(text).substitute(namespace=namespace)
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def install(api_client, *, namespace: str = DEFAULT_NAMESPACE, wait: bool = False,
            timeout: float = 300.0) -> list[str]:
    """Install the chart; return ``kind/name`` of every object created. Raises InstallError like helm."""
    from kubernetes import client, utils
    from kubernetes.client import ApiException

    apps = client.AppsV1Api(api_client)
    try:
        apps.read_namespaced_deployment(SCHEDULER, namespace, _preload_content=False)
        raise InstallError("cannot re-use a name that is still in use")
    except ApiException as exc:
        if exc.status != 404:
            raise
    created = []
    for crd in chart_crds():
        if _create(utils, api_client, crd, None):
            created.append(f"customresourcedefinition/{crd['metadata']['name']}")
    for crd in chart_crds():
        _wait_established(client.ApiextensionsV1Api(api_client), crd["metadata"]["name"], timeout)
    if _create(utils, api_client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, None):
        created.append(f"namespace/{namespace}")
    served = {g.name for g in client.ApisApi(api_client).get_api_versions().groups} | {""}
    for obj in manifests(namespace):
        group = obj["apiVersion"].rpartition("/")[0]
        if group not in served:
            continue
        if _create(utils, api_client, obj, obj["metadata"].get("namespace")):
            created.append(f"{obj['kind'].lower()}/{obj['metadata']['name']}")
    if wait:
        _wait_available(apps, namespace, timeout)
    return created


def _create(utils, api_client, obj: dict, namespace: str | None) -> bool:
    """Create ``obj``; False when it exists already (a CRD or namespace left from an earlier install)."""
    try:
        utils.create_from_dict(api_client, obj, namespace=namespace or "default")
    except utils.FailToCreateError as exc:
        if all(e.status == 409 for e in exc.api_exceptions):
            return False
        raise
    return True


def _wait_established(extensions, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        crd = extensions.read_custom_resource_definition(name)
        if any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or [])):
            return
        if time.monotonic() > deadline:
            raise InstallError("context deadline exceeded")
        time.sleep(_POLL_SECONDS)


def _wait_available(apps, namespace: str, timeout: float) -> None:
    """helm --wait: every Deployment of the chart has its replicas available."""
    deadline = time.monotonic() + timeout
    names = [o["metadata"]["name"] for o in manifests(namespace) if o["kind"] == "Deployment"]
    while True:
        pending = [n for n in names
                   if ((apps.read_namespaced_deployment(n, namespace).status.available_replicas or 0) < 1)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise InstallError("context deadline exceeded")
        time.sleep(_POLL_SECONDS)


# --- `gpulab install coscheduling` ------------------------------------------------------------------

def extend_install(sub: argparse._SubParsersAction) -> None:
    """Teach ``gpulab install`` (registered by the GPU stack for gpu-operator) the scheduler-plugins chart.

    The GPU stack owns the ``install`` subcommand and its options; this wraps
    its handler so ``gpulab install coscheduling`` (or ``scheduler-plugins``)
    comes here and every other chart name goes on to the GPU stack.
    """
    parser = sub.choices.get("install")
    if parser is None:
        parser = sub.add_parser("install", help="install a chart")
        parser.add_argument("chart")
        parser.add_argument("-n", "--namespace", default=DEFAULT_NAMESPACE)
        parser.add_argument("--kubeconfig")
        parser.add_argument("--kube-context", dest="context")
    other = parser.get_default("func")
    defaults = {key: parser.get_default(key) for key in ("namespace", "name")}

    def dispatch(args: argparse.Namespace) -> int:
        if args.chart in CHART_NAMES:
            # The options' defaults are the GPU Operator's; an untouched one means this chart's default.
            namespace = DEFAULT_NAMESPACE if args.namespace == defaults["namespace"] else args.namespace
            release = RELEASE if getattr(args, "name", None) in (None, defaults["name"]) else args.name
            return run_install(args, namespace, release)
        if other is None:
            print(f"Error: INSTALLATION FAILED: chart {args.chart!r} is not available", file=sys.stderr)
            return 1
        return other(args)

    parser.set_defaults(func=dispatch)


def run_install(args: argparse.Namespace, namespace: str, release: str = RELEASE) -> int:
    from datetime import datetime

    from kubernetes import config

    from ..gpustack.install import Release, summary
    from ..kubeclient import resolve_kubeconfig

    api_client = config.new_client_from_config(config_file=resolve_kubeconfig(getattr(args, "kubeconfig", None)),
                                               context=getattr(args, "context", None), persist_config=False)
    try:
        install(api_client, namespace=namespace, wait=getattr(args, "wait", False),
                timeout=getattr(args, "timeout", 300.0))
    except InstallError as exc:
        print(f"Error: INSTALLATION FAILED: {exc}", file=sys.stderr)
        return 1
    print(summary(Release(release, namespace, 1, CHART_VERSION, {}, datetime.now().astimezone())), end="")
    return 0
