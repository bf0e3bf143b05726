"""Scheduler profiles as data: the plugins each one enables, with their weights and arguments.

``DEFAULT_PLUGINS`` is kube-scheduler's default profile in the order of
pkg/scheduler/apis/config/v1/default_plugins.go ``getDefaultPlugins`` (with
DynamicResources before DefaultPreemption, as ``applyFeatureGates`` inserts
it); weight 0 means unset (1 for a score plugin). Plugins of that list that
gpulab does not emulate are left out, each with the reason, in
``NOT_EMULATED``.

``merge_plugins`` is ``mergePlugins``: a profile's ``multiPoint`` enabled and
disabled lists applied to the defaults, which is how scheduler-plugins' Helm
chart (manifests/install/charts/as-a-second-scheduler, ``scheduler-config``)
defines the ``scheduler-plugins-scheduler`` profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("GangScheduling", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

NOT_EMULATED = {  # upstream's default plugins absent from DEFAULT_PLUGINS (between NodeResourcesFit and PTS)
    "VolumeRestrictions": "not ported: ReadWriteOncePod claims and in-tree disk volumes are not emulated",
    "NodeVolumeLimits": "not ported: CSINodes carry no attach limits (no CSI drivers run)",
    "VolumeZone": "not ported: the local-path provisioner's volumes have node affinity, no zone labels",
}


@dataclass(frozen=True)
class Profile:
    """A KubeSchedulerProfile: the schedulerName it serves, its plugins (name, weight) and their args."""

    name: str
    plugins: tuple[tuple[str, int], ...] = DEFAULT_PLUGINS
    plugin_args: dict = field(default_factory=dict)

    @property
    def plugin_names(self) -> list[str]:
        return [name for name, _ in self.plugins]


def merge_plugins(defaults, enabled=(), disabled=()) -> tuple[tuple[str, int], ...]:
    """mergePluginSet: drop the disabled defaults ("*" drops all), reconfigure the re-enabled ones in place,
    append the other enabled plugins."""
    custom = dict(enabled)
    out = [] if "*" in disabled else [(name, custom.pop(name, weight)) for name, weight in defaults
                                       if name not in disabled]
    out.extend((name, weight) for name, weight in enabled if name in custom)
    return tuple(out)


DEFAULT_PROFILE = Profile("default-scheduler")
PLUGINS_PROFILE = Profile(
    "scheduler-plugins-scheduler",
    merge_plugins(DEFAULT_PLUGINS, enabled=(("Coscheduling", 0), ("NodeResourcesAllocatable", 0)),
                  disabled=("PrioritySort",)),
    {"Coscheduling": {"permitWaitingTimeSeconds": 10}},
)
