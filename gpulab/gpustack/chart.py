"""The gpu-operator Helm chart: its default values, ``--set`` overrides and the ClusterPolicy it renders.

Learners install the operator with ``helm install ... nvidia/gpu-operator --version
v26.7.0 --set driver.version=...``; the emulation has no Helm, so this module
plays the three parts of it that matter:

* ``default_values(version)``: the chart's ``values.yaml`` for each chart version
  we ship (``data/gpu-operator-values-<version>.yaml``, sources per key in
  ``docs/fidelity.md#gpustack-core``).
* ``parse_set(items)``: Helm's ``--set`` syntax (helm ``pkg/strvals/parser.go``):
  dotted keys, ``\\.`` in keys, ``a[0]=x`` and ``a[0].b=x``, ``a={x,y}``,
  comma-separated pairs with ``\\,``, and ``typedVal`` typing (``true``/``false``/
  ``null`` case-insensitive, int64 unless the text starts with ``0``; floats stay
  strings). ``values_for`` merges them like Helm's ``coalesce``: maps merge, lists
  and scalars replace, ``null`` deletes a default.
* ``cluster_policy(values)``: the ``ClusterPolicy`` named ``cluster-policy`` from
  ``deployments/gpu-operator/templates/clusterpolicy.yaml``. The template copies
  each component block field by field behind ``{{- if .Values.x.y }}``; we copy the
  block and drop what such guards drop (empty strings, lists and maps), keeping
  booleans, which the template writes unconditionally for ``enabled``.

Deviation (documented): the chart has no ``values.schema.json`` (only its
node-feature-discovery subchart does), so real Helm accepts ``--set drvier.version=x``
silently. ``values_for`` rejects keys the chart does not read, to catch typos;
free-form subtrees (labels, env, resources, tolerations, ...) accept anything.

Hand-written because Helm is Go; a Python port of its Go-template engine would be
far larger than the one template we need.
"""
from __future__ import annotations

import copy
import difflib
from functools import cache
from importlib import resources
from typing import Any

import yaml

CHART_NAME = "gpu-operator"
CHART_REPOSITORY_URL = "https://helm.ngc.nvidia.com/nvidia"
KNOWN_VERSIONS = ("v25.10.1", "v26.3.3", "v26.7.0")
DEFAULT_VERSION = "v26.7.0"     # the supported release (NVIDIA's life cycle: 26.3.x deprecated, 25.10.x ended)

# Subtrees whose content the chart passes through verbatim (toYaml): any key is valid below them.
_FREE_FORM = frozenset({
    "labels", "annotations", "env", "args", "resources", "tolerations", "nodeSelector", "affinity",
    "imagePullSecrets", "securityContext", "data", "additionalLabels", "relabelings",
    "extraObjects", "node-feature-discovery", "startupProbe", "livenessProbe", "readinessProbe",
    "podSecurityContext",
})
_FREE_FORM_PATHS = frozenset({("kataManager", "config"), ("dcgmExporter", "config"), ("draDriver", "featureGates"),
                               ("draDriver", "gpus", "kubeletPlugin"), ("draDriver", "computeDomains", "controller"),
                               ("draDriver", "computeDomains", "kubeletPlugin")})
# Keys the templates read although values.yaml leaves them out (commented or absent).
_OPTIONAL_KEYS = {
    (): {"nameOverride", "fullnameOverride"},
    ("operator",): {"defaultRuntime", "defaultGPUMode", "version", "labels", "nodeSelector"},
    ("validator",): {"version", "driver", "toolkit", "cuda", "vfioPCI", "vgpuManager", "vgpuDevices", "ccManager"},
    ("nodeStatusExporter",): {"version"},
    ("dcgmExporter",): {"config", "args"},
    ("gfd",): {"args"},
    ("migManager",): {"args"},
    ("toolkit",): {"args"},
    ("driver",): {"args", "securityContext", "nodeSelector"},
}
_COMPONENT_OPTIONAL = {"version", "securityContext", "args", "env", "resources", "imagePullSecrets"}


class ChartError(ValueError):
    """A chart version, ``--set`` expression or value the emulated ``helm install`` refuses."""


def _data_text(name: str) -> str:
    return resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")


def normalise_version(version: str | None) -> str:
    """``25.10.1`` and ``v25.10.1`` both select chart v25.10.1 (Helm matches versions as semver)."""
    wanted = version or DEFAULT_VERSION
    canonical = wanted if wanted.startswith("v") else f"v{wanted}"
    if canonical not in KNOWN_VERSIONS:
        raise ChartError(
            f'chart "{CHART_NAME}" version "{wanted}" not found in {CHART_REPOSITORY_URL} repository '
            f"(known versions: {', '.join(KNOWN_VERSIONS)})"
        )
    return canonical


def _release_key(version: str) -> tuple[int, ...]:
    """``v26.7.0`` -> ``(26, 7, 0)``: chart versions compare as calendar versions."""
    return tuple(int(part) for part in version.lstrip("v").split("."))


@cache
def _defaults(version: str) -> dict[str, Any]:
    return yaml.safe_load(_data_text(f"gpu-operator-values-{version}.yaml"))


def default_values(version: str | None = None) -> dict[str, Any]:
    """A fresh copy of the chart's ``values.yaml`` for ``version`` (default: :data:`DEFAULT_VERSION`)."""
    return copy.deepcopy(_defaults(normalise_version(version)))


# --- helm --set (pkg/strvals) ---------------------------------------------------------------

def _typed(text: str) -> Any:
    """strvals ``typedVal``: booleans and null case-insensitively, int64 unless it starts with 0."""
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0":
        try:
            number = int(text, 10)
        except ValueError:
            return text
        if -(2**63) <= number < 2**63 and text.lstrip("+-").isdigit():
            return number
    return text


class _Reader:
    """Rune-by-rune reader over one ``--set`` argument, as strvals' parser walks it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def until(self, stops: str) -> tuple[str, str | None]:
        """Read up to the first unescaped stop character; return (text, stop or None at end)."""
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            self.pos += 1
            if char == "\\" and self.pos < len(self.text):
                out.append(self.text[self.pos])
                self.pos += 1
                continue
            if char in stops:
                return "".join(out), char
            out.append(char)
        return "".join(out), None


def _set_path(target: Any, path: list[str | int], value: Any) -> Any:
    """Set ``value`` at ``path`` (str: map key, int: list index) inside ``target``; return the new target."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = target if isinstance(target, list) else []
        while len(items) <= head:
            items.append(None)
        items[head] = _set_path(items[head], rest, value)
        return items
    mapping = target if isinstance(target, dict) else {}
    mapping[head] = _set_path(mapping.get(head), rest, value)
    return mapping


def _parse_one(text: str, into: dict[str, Any]) -> None:
    reader = _Reader(text)
    while reader.pos < len(reader.text):
        path: list[str | int] = []
        while True:
            key, stop = reader.until(".=,[")
            if stop == "[":
                index_text, close = reader.until("]")
                if key:
                    path.append(key)
                try:
                    index = int(index_text)
                except ValueError:
                    raise ChartError(f"failed to parse key: strconv.Atoi: parsing {index_text!r}: invalid syntax") from None
                if index < 0:
                    raise ChartError(f"negative {index} index not allowed")
                path.append(index)
                follow = reader.text[reader.pos:reader.pos + 1]
                reader.pos += 1
                if follow == "=":
                    break
                if follow != ".":
                    raise ChartError(f'key "{key}" has no value')
                continue
            if key:
                path.append(key)
            if stop == ".":
                continue
            if stop == "=":
                break
            if stop == ",":
                raise ChartError(f'key "{key}" has no value (cannot end with ,)')
            raise ChartError(f'key "{key}" has no value')
        if reader.text[reader.pos:reader.pos + 1] == "{":
            reader.pos += 1
            body, _ = reader.until("}")
            value: Any = [_typed(item) for item in body.split(",")] if body else []
            reader.until(",")
        else:
            raw, _ = reader.until(",")
            value = _typed(raw)
        _set_path(into, path, value)


def parse_set(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Helm's ``--set`` arguments as the nested values map they denote, e.g.
    ``parse_set(["driver.version=580.105.08", "mig.strategy=mixed"])``."""
    values: dict[str, Any] = {}
    for item in items:
        _parse_one(item, values)
    return values


# --- values ---------------------------------------------------------------------------------

def _coalesce(defaults: Any, overrides: Any) -> Any:
    """Helm's coalesce: maps merge key by key, anything else replaces; ``None`` removes a default."""
    if not (isinstance(defaults, dict) and isinstance(overrides, dict)):
        return copy.deepcopy(overrides)
    merged = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged:
            merged[key] = _coalesce(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _known_keys(defaults: dict[str, Any], path: tuple[str, ...]) -> set[str]:
    keys = set(defaults) | _OPTIONAL_KEYS.get(path, set())
    if len(path) == 1 and path[0] not in ("operator", "daemonsets", "mig", "platform", "nfd", "psa", "cdi",
                                          "sandboxWorkloads", "hostPaths"):
        keys |= _COMPONENT_OPTIONAL
    return keys


def _all_paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[str]:
    paths = []
    for key, value in tree.items():
        paths.append(".".join(prefix + (key,)))
        if isinstance(value, dict) and key not in _FREE_FORM:
            paths.extend(_all_paths(value, prefix + (key,)))
    return paths


def _first_leaf(value: Any) -> tuple[str, ...]:
    """The rest of the dotted key a ``--set`` wrote below an unknown key (``drivr`` -> ``drivr.version``)."""
    if isinstance(value, dict) and value:
        key, below = next(iter(value.items()))
        return (key,) + _first_leaf(below)
    return ()


def _check_known(overrides: dict[str, Any], defaults: dict[str, Any], version: str,
                 path: tuple[str, ...] = ()) -> None:
    for key, value in overrides.items():
        here = path + (key,)
        if key in _FREE_FORM or here in _FREE_FORM_PATHS:
            continue
        if key not in _known_keys(defaults, path):
            dotted = ".".join(here + _first_leaf(value))
            suggestion = difflib.get_close_matches(dotted, _all_paths(_defaults(version)), n=1)
            hint = f'; did you mean "{suggestion[0]}"?' if suggestion else ""
            raise ChartError(
                f'unknown value "{dotted}": chart {CHART_NAME} {version} has no such key in its values.yaml '
                f"(Helm would silently ignore it; gpulab rejects it to catch typos){hint}"
            )
        default = defaults.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            _check_known(value, default, version, here)
        elif isinstance(default, dict) and value is not None:
            raise ChartError(f'value "{".".join(here)}" must be a map, as in the chart\'s values.yaml; got {value!r}')


def values_for(version: str | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The chart's values for ``version`` with ``overrides`` (e.g. from ``parse_set``) merged in.

    Raises ``ChartError`` for an unknown chart version (listing the known ones) and
    for override keys the chart does not have.
    """
    canonical = normalise_version(version)
    overrides = overrides or {}
    _check_known(overrides, _defaults(canonical), canonical)
    values = _coalesce(_defaults(canonical), overrides)
    _refuse_other_custom_resources(values, canonical)
    return values


_VALIDATIONS = f"execution error at ({CHART_NAME}/templates/validations.yaml:{{line}}:3): "
GPUCLUSTER_FROM = "v26.7.0"


def _refuse_other_custom_resources(values: dict[str, Any], version: str) -> None:
    """From v26.7.0 the chart renders the ClusterPolicy only with ``clusterPolicy.deployCR`` and can render a
    GPUCluster instead (``gpuCluster.deployCR``, Technology Preview). ``templates/validations.yaml`` refuses both
    at once, and a GPUCluster whose driver the ClusterPolicy-less operator would have to install without an
    NVIDIADriver; gpulab then refuses an NVIDIADriver-managed driver (not emulated) and a release with neither CR."""
    cluster_policy = (values.get("clusterPolicy") or {}).get("deployCR", True) is not False
    gpu_cluster = bool((values.get("gpuCluster") or {}).get("deployCR"))
    driver = values.get("driver") or {}
    nvidia_driver_crd = bool((driver.get("nvidiaDriverCRD") or {}).get("enabled"))
    if cluster_policy and gpu_cluster:
        raise ChartError(_VALIDATIONS.format(line=2) + "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be "
                         "true; only one CR can exist")
    if gpu_cluster and driver.get("enabled", True) and not nvidia_driver_crd:
        raise ChartError(_VALIDATIONS.format(line=6) + "the NVIDIADriver CRD must be enabled when deploying a "
                         "GPUCluster CR, set driver.nvidiaDriverCRD.enabled=true")
    if gpu_cluster and driver.get("enabled", True):
        raise ChartError(f"gpuCluster.deployCR=true with driver.nvidiaDriverCRD.enabled=true: chart {CHART_NAME} "
                         f"{version} would leave the driver to NVIDIADriver objects, which gpulab does not emulate; "
                         "set driver.enabled=false (the emulated hosts have their driver installed)")
    if not cluster_policy and not gpu_cluster:
        raise ChartError(f"clusterPolicy.deployCR=false: chart {CHART_NAME} {version} would deploy no "
                         "ClusterPolicy and no GPUCluster, leaving the operator nothing to do; set "
                         "gpuCluster.deployCR=true for the DRA stack")


def gpu_cluster(values: dict[str, Any], *, version: str | None = None,
                release_name: str = CHART_NAME) -> dict[str, Any]:
    """The ``GPUCluster`` ``gpu-cluster`` of ``templates/gpucluster.yaml`` (v26.7.0): the ``draDriver`` block, the
    DCGM and DCGM Exporter switches, the host paths and the DaemonSets' common settings."""
    canonical = normalise_version(version)
    dra = values.get("draDriver") or {}
    driver_spec: dict[str, Any] = {key: copy.deepcopy(dra[key]) for key in (
        "repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "featureGates") if dra.get(key)}
    if ((dra.get("gpus") or {}).get("kubeletPlugin")):
        driver_spec["gpus"] = {"kubeletPlugin": copy.deepcopy(dra["gpus"]["kubeletPlugin"])}
    domains = dra.get("computeDomains") or {}
    driver_spec["computeDomains"] = {"enabled": domains.get("enabled", True),
                                     **{key: copy.deepcopy(domains[key]) for key in ("controller", "kubeletPlugin")
                                        if domains.get(key)}}
    host_paths = values.get("hostPaths") or {}
    labels = {**chart_labels(canonical, release_name), "app.kubernetes.io/component": CHART_NAME}
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster", "labels": labels, "annotations": {"helm.sh/resource-policy": "keep"}},
        "spec": {"draDriver": driver_spec,
                 "dcgm": {"enabled": bool((values.get("dcgm") or {}).get("enabled"))},
                 "dcgmExporter": {"enabled": bool((values.get("dcgmExporter") or {}).get("enabled", True))},
                 "hostPaths": {key: host_paths[key] for key in ("driverInstallDir", "kubeletRootDir")
                               if host_paths.get(key)},
                 "daemonsets": copy.deepcopy(values.get("daemonsets") or {})},
    }


def deploys(values: dict[str, Any]) -> tuple[bool, bool]:
    """(ClusterPolicy, GPUCluster): which custom resource the chart renders for these values."""
    return ((values.get("clusterPolicy") or {}).get("deployCR", True) is not False,
            bool((values.get("gpuCluster") or {}).get("deployCR")))


# --- templates/clusterpolicy.yaml -----------------------------------------------------------

# Component blocks of ClusterPolicy.spec, in the template's order.
_SPEC_BLOCKS = (
    "hostPaths", "daemonsets", "validator", "mig", "psa", "cdi", "sandboxWorkloads", "driver", "toolkit",
    "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter", "gds", "gdrcopy",
    "vgpuManager", "vgpuDeviceManager", "vfioManager", "kataManager", "sandboxDevicePlugin",
    "kataSandboxDevicePlugin", "ccManager",
)
_OPERATOR_SPEC_KEYS = ("defaultRuntime", "runtimeClass", "defaultGPUMode", "initContainer", "use_ocp_driver_toolkit")
_APP_VERSION_DEFAULTED = ("validator", "nodeStatusExporter")  # version: {{ .x.version | default .Chart.AppVersion }}
# Sub-blocks the template writes key by key behind ``{{- if }}`` guards (so their empty ``env`` is left out).
_GUARDED_SUB_BLOCKS = {("driver", "manager"), ("vgpuManager", "driverManager"), ("vfioManager", "driverManager")}
# Keys a block has in values.yaml that the template never writes.
_NOT_RENDERED = {("devicePlugin", "mps")}
# From v26.7.0 a driver managed through NVIDIADriver objects keeps only these keys in the ClusterPolicy (the rest
# of templates/clusterpolicy.yaml's driver block sits in ``{{- if not .Values.driver.nvidiaDriverCRD.enabled }}``).
_DRIVER_KEYS_WITH_NVIDIADRIVER = ("enabled", "useNvidiaDriverCRD", "upgradePolicy", "hostNetwork")
_DRIVER_KEYS_GUARDED_FROM = "v26.7.0"


def _rendered(block: dict[str, Any]) -> dict[str, Any]:
    """What ``{{- if .Values.x.key }}key: ...{{- end }}`` guards keep: all but empty values; booleans always."""
    return {key: copy.deepcopy(value) for key, value in block.items()
            if isinstance(value, bool) or value not in (None, "", [], {})}


def _upgrade_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """The template's ``driver.upgradePolicy``: values' ``gpuPodDeletion`` is written as ``podDeletion``."""
    wait = policy.get("waitForCompletion") or {}
    deletion = policy.get("gpuPodDeletion") or {}
    drain = policy.get("drain") or {}
    rendered = {
        "autoUpgrade": policy.get("autoUpgrade") or False,
        "maxParallelUpgrades": policy.get("maxParallelUpgrades") or 0,
        "maxUnavailable": policy.get("maxUnavailable") or "25%",
        "waitForCompletion": {"timeoutSeconds": wait.get("timeoutSeconds")},
        "podDeletion": {"force": deletion.get("force") or False, "timeoutSeconds": deletion.get("timeoutSeconds"),
                        "deleteEmptyDir": deletion.get("deleteEmptyDir") or False},
        "drain": {"enable": drain.get("enable") or False, "force": drain.get("force") or False},
    }
    if wait.get("podSelector"):
        rendered["waitForCompletion"]["podSelector"] = wait["podSelector"]
    if drain.get("podSelector"):
        rendered["drain"]["podSelector"] = drain["podSelector"]
    rendered["drain"].update({"timeoutSeconds": drain.get("timeoutSeconds"),
                              "deleteEmptyDir": drain.get("deleteEmptyDir") or False})
    return rendered


def _config_ref(config: dict[str, Any] | None, *, default_name: str | None) -> dict[str, Any] | None:
    """A ``config: {name, default}`` reference; ``create``/``data`` only feed the chart's own ConfigMap."""
    if not config:
        return None
    name = config.get("name") or default_name
    if not name:
        return None
    return {"name": name, "default": config.get("default", "")}


def chart_labels(version: str, release_name: str = CHART_NAME) -> dict[str, str]:
    """``gpu-operator.labels`` from the chart's ``_helpers.tpl`` (chart name = appVersion = version)."""
    return {
        "app.kubernetes.io/name": CHART_NAME,
        "helm.sh/chart": f"{CHART_NAME}-{version}",
        "app.kubernetes.io/instance": release_name,
        "app.kubernetes.io/version": version,
        "app.kubernetes.io/managed-by": "Helm",
    }


def operand_labels(version: str, extra: dict[str, str]) -> dict[str, str]:
    """``gpu-operator.operand-labels`` (``_helpers.tpl``): chart and manager labels, then ``daemonsets.labels``."""
    return {"helm.sh/chart": f"{CHART_NAME}-{version}", "app.kubernetes.io/managed-by": CHART_NAME, **extra}


def cluster_policy(values: dict[str, Any], *, version: str | None = None,
                   release_name: str = CHART_NAME) -> dict[str, Any]:
    """The ``ClusterPolicy`` object ``cluster-policy`` the chart renders from ``values``."""
    canonical = normalise_version(version)
    operator = values.get("operator", {})
    spec: dict[str, Any] = {"operator": {key: copy.deepcopy(operator[key]) for key in _OPERATOR_SPEC_KEYS
                                         if key in operator and operator[key] not in (None, "", {}, [])}}
    for name in _SPEC_BLOCKS:
        if name not in values:
            continue
        block = _rendered(values[name])
        for sub in [key for key in block if (name, key) in _GUARDED_SUB_BLOCKS]:
            block[sub] = _rendered(block[sub])
        for key in [key for key in block if (name, key) in _NOT_RENDERED]:
            del block[key]
        if not block.get("hostNetwork"):    # {{- if .Values.x.hostNetwork }} in every block
            block.pop("hostNetwork", None)
        if name == "daemonsets":
            block["labels"] = operand_labels(canonical, values[name].get("labels") or {})
        if name == "driver" and block.get("upgradePolicy"):
            block["upgradePolicy"] = _upgrade_policy(block["upgradePolicy"])
        if name in _APP_VERSION_DEFAULTED:
            block.setdefault("version", canonical)
        if name == "driver":
            crd = block.pop("nvidiaDriverCRD", {})
            block["useNvidiaDriverCRD"] = bool(crd.get("enabled", False))
            if block["useNvidiaDriverCRD"] and _release_key(canonical) >= _release_key(_DRIVER_KEYS_GUARDED_FROM):
                block = {key: value for key, value in block.items() if key in _DRIVER_KEYS_WITH_NVIDIADRIVER}
        if name in ("devicePlugin", "migManager", "vgpuDeviceManager"):
            default_name = "default-mig-parted-config" if name == "migManager" else None
            reference = _config_ref(values[name].get("config"), default_name=default_name)
            block.pop("config", None)
            if reference:
                block["config"] = reference
        spec[name] = block
    labels = chart_labels(canonical, release_name)
    labels.update(operator.get("labels") or {})
    labels["app.kubernetes.io/component"] = CHART_NAME
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy", "labels": labels},
        "spec": spec,
    }


# The chart's crds/ (and its node-feature-discovery sub-chart's), in the order Helm creates them; v26.7.0 adds
# the GPUCluster's (NVIDIA/gpu-operator deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml at the tag).
CRD_FILES = ("nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml", "nfd-api-crds.yaml")
GPUCLUSTER_CRD_FILE = "nvidia.com_gpuclusters.yaml"


@cache
def _crds(with_gpucluster: bool = False) -> tuple[dict[str, Any], ...]:
    names = (*CRD_FILES[:2], GPUCLUSTER_CRD_FILE, *CRD_FILES[2:]) if with_gpucluster else CRD_FILES
    return tuple(doc for name in names for doc in yaml.safe_load_all(_data_text(f"crds/{name}")) if doc)


def operator_crds(version: str | None = None) -> list[dict[str, Any]]:
    """Fresh copies of every CustomResourceDefinition chart ``version`` installs (ClusterPolicy, NVIDIADriver,
    from v26.7.0 GPUCluster, NFD's); without a version, the first three only."""
    with_gpucluster = version is not None and \
        _release_key(normalise_version(version)) >= _release_key(GPUCLUSTER_FROM)
    return copy.deepcopy(list(_crds(with_gpucluster)))


def clusterpolicy_crd() -> dict[str, Any]:
    """A fresh copy of the ``clusterpolicies.nvidia.com`` CustomResourceDefinition."""
    return next(crd for crd in operator_crds() if crd["metadata"]["name"] == "clusterpolicies.nvidia.com")


CLUSTERPOLICY_CRD: dict[str, Any] = clusterpolicy_crd()
