"""The device plugin image's ``config-manager`` (gpulab/gpustack/configmanager.py, a native program of the node
agent): the choice of k8s-device-plugin ``cmd/config-manager/main.go`` ``updateConfigName``, its klog lines, exit 1
on error, and the sidecar choosing again when the node label changes."""
from __future__ import annotations

import pytest

from gpulab.cluster.kubelet.images import parse_reference
from gpulab.cluster.kubelet.process import Process
from gpulab.cluster.kubelet.shell import FileSystem, World
from test_kubelet_harness import CATALOG, container, run, shell

START = 1_767_225_600.0   # 2026-01-01T00:00:00Z: klog's header reads I0101 00:00:00.000000
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.18.1"
LABEL = "nvidia.com/device-plugin.config"


def klog(line: int, message: str, severity: str = "I", at: str = "00:00:00.000000") -> str:
    return f"{severity}0101 {at}       1 main.go:{line}] {message}"


def config_manager(configs: tuple[str, ...], labels: dict[str, str], *, oneshot: bool = True,
                   default: str = "", fallbacks: str = "named,single") -> Process:
    img = CATALOG.resolve(parse_reference(IMAGE))
    files = FileSystem()
    files.mkdirs("/available-configs")
    for name in configs:
        files.add_file(f"/available-configs/{name}", "version: v1\n")
    env = {"NODE_NAME": "gpu-1", "NODE_LABEL": LABEL, "CONFIG_FILE_SRCDIR": "/available-configs",
           "CONFIG_FILE_DST": "/config/config.yaml", "DEFAULT_CONFIG": default, "FALLBACK_STRATEGIES": fallbacks,
           "ONESHOT": "true" if oneshot else "false", "SEND_SIGNAL": "false" if oneshot else "true", "SIGNAL": "1",
           "PROCESS_TO_SIGNAL": "nvidia-device-plugin"}
    world = World(image=img, catalog=CATALOG, env=list(env.items()), files=files, hostname="plugin", nproc=4,
                  kernel="6.8.0-gpulab", node_labels=lambda: labels)
    return Process(world, ["config-manager"], START)


def lines(proc: Process) -> list[str]:
    return [line for _, line in proc.log]


def waiting(at: str = "00:00:00.000000") -> str:
    return klog(246, f"Waiting for change to '{LABEL}' label", at=at)


def detected(value: str, at: str = "00:00:00.000000") -> str:
    return klog(248, f"Label change detected: {LABEL}={value}", at=at)


@pytest.mark.parametrize("configs,labels,default,fallbacks,expected", [
    (("any", "h100"), {LABEL: "h100"}, "any", "named,single",
     [detected("h100"), klog(304, "Updating to config: h100"), klog(319, "Successfully updated to config: h100")]),
    (("any", "h100"), {}, "any", "named,single",
     [detected(""), klog(360, "No value set. Selecting default name: any"), klog(304, "Updating to config: any"),
      klog(319, "Successfully updated to config: any")]),
    (("default", "x"), {}, "", "named,single",
     [detected(""), klog(368, "No value set and no default set. Attempting fallback strategies: [named single]"),
      klog(372, "Attempting to find config named: default"), klog(304, "Updating to config: default"),
      klog(319, "Successfully updated to config: default")]),
    (("only",), {}, "", "named,single",
     [detected(""), klog(368, "No value set and no default set. Attempting fallback strategies: [named single]"),
      klog(372, "Attempting to find config named: default"), klog(376, "No configuration named 'default' was found"),
      klog(378, "Attempting to see if only a single config is available..."), klog(304, "Updating to config: only"),
      klog(319, "Successfully updated to config: only")]),
    (("a", "b"), {}, "", "single,empty",
     [detected(""), klog(368, "No value set and no default set. Attempting fallback strategies: [single empty]"),
      klog(378, "Attempting to see if only a single config is available..."),
      klog(382, "More than one configuration was found: [a b]"), klog(384, "Falling back to an empty configuration"),
      klog(302, "Updating to empty config"), klog(317, "Successfully updated to empty config")]),
])
def test_the_init_container_links_the_chosen_config_and_exits_0(configs, labels, default, fallbacks, expected):
    proc = config_manager(configs, labels, default=default, fallbacks=fallbacks)
    proc.advance(START + 1)
    assert (lines(proc), proc.exit_code) == ([waiting(), *expected], 0)


@pytest.mark.parametrize("configs,labels,default,logged,error", [
    (("any", "h100"), {LABEL: "a100"}, "any", [], "specified config a100 does not exist"),
    # updateConfigName formats the empty label, not the missing default
    (("h100",), {}, "any", [klog(360, "No value set. Selecting default name: any")], "specified config  does not exist"),
    (("a", "b"), {}, "", [klog(368, "No value set and no default set. Attempting fallback strategies: [named single]"),
                          klog(372, "Attempting to find config named: default"),
                          klog(376, "No configuration named 'default' was found"),
                          klog(378, "Attempting to see if only a single config is available..."),
                          klog(382, "More than one configuration was found: [a b]")],
     "no config was set, no default was provided, and all fallbacks failed"),
    ((), {LABEL: "h100"}, "", [], "no configuration files available"),
])
def test_a_failed_choice_is_logged_by_klog_and_exits_1(configs, labels, default, logged, error):
    proc = config_manager(configs, labels, default=default)
    proc.advance(START + 1)
    assert (lines(proc), proc.exit_code) == ([waiting(), detected(labels.get(LABEL, "")), *logged,
                                              klog(208, error, "E")], 1)


def test_the_sidecar_chooses_again_when_the_label_changes_and_exits_1_when_it_cannot():
    labels: dict[str, str] = {}
    proc = config_manager(("any", "h100"), labels, oneshot=False, default="any")
    proc.advance(START + 30)
    assert lines(proc) == [waiting(), detected(""), klog(360, "No value set. Selecting default name: any"),
                           klog(304, "Updating to config: any"), klog(312, "Already configured. Skipping update..."),
                           waiting()]
    assert proc.running and proc.wake == START + 35      # it looks at the label every 5 s
    labels[LABEL] = "h100"
    proc.advance(START + 40)
    at = "00:00:35.000000"
    assert lines(proc)[6:] == [detected("h100", at), klog(304, "Updating to config: h100", at=at),
                               klog(319, "Successfully updated to config: h100", at=at),
                               klog(323, "Sending signal 'hangup' to 'nvidia-device-plugin'", at=at),
                               klog(328, "Successfully sent signal", at=at), waiting(at)]
    labels[LABEL] = "a100"
    proc.advance(START + 60)
    at = "00:00:45.000000"
    assert lines(proc)[12:] == [detected("a100", at), klog(208, "specified config a100 does not exist", "E", at)]
    assert (proc.exit_code, proc.finished) == (1, START + 45)


def test_a_label_naming_a_missing_config_keeps_the_pod_in_init_until_it_is_fixed():
    """The label is read from the node object: the init container fails and restarts until the label is fixed."""
    async def body(h):
        h.api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "plugin-configs", "namespace": "default"},
                                    "data": {"any": "version: v1\n", "h100": "version: v1\n"}}, "default")
        h.api.patch("nodes", "worker", {"metadata": {"labels": {LABEL: "a100"}}}, "merge")
        env = [{"name": k, "value": v} for k, v in {
            "NODE_NAME": "worker", "NODE_LABEL": LABEL, "CONFIG_FILE_SRCDIR": "/available-configs",
            "CONFIG_FILE_DST": "/config/config.yaml", "DEFAULT_CONFIG": "any", "FALLBACK_STRATEGIES": "named,single",
            "ONESHOT": "true", "SEND_SIGNAL": "false"}.items()]
        h.pod("plugin", [container("main", **shell("sleep 3600"))],
              initContainers=[container("config-manager-init", IMAGE, command=["config-manager"], env=env,
                                        volumeMounts=[{"name": "cfg", "mountPath": "/available-configs"}])],
              volumes=[{"name": "cfg", "configMap": {"name": "plugin-configs"}}])

        def init_waiting():
            statuses = ((h.get("plugin") or {}).get("status") or {}).get("initContainerStatuses") or ()
            return statuses and statuses[0]["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"
        await h.until(init_waiting, what="Init:CrashLoopBackOff")
        init = h.get("plugin")["status"]["initContainerStatuses"][0]
        assert init["lastState"]["terminated"]["exitCode"] == 1 and h.get("plugin")["status"]["phase"] == "Pending"
        previous = h.api.logs("default", "plugin", {"container": "config-manager-init", "previous": "true"})
        assert previous.splitlines()[-1].endswith(" 1 main.go:208] specified config a100 does not exist")
        h.api.patch("nodes", "worker", {"metadata": {"labels": {LABEL: "h100"}}}, "merge")
        await h.phase("plugin", "Running", timeout=10)
        log = h.api.logs("default", "plugin", {"container": "config-manager-init"})
        assert log.splitlines()[-1].endswith(" 1 main.go:319] Successfully updated to config: h100")
    run(body)
