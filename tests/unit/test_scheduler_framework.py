"""The plugin interface: a plugin written outside the scheduler joins a profile with one line and is called at
its extension points, with or without the grouped fast path; profiles name only plugins that exist."""
from __future__ import annotations

import pytest

from gpulab.cluster.scheduler import Profile
from gpulab.cluster.scheduler.interface import SETS, FilterPlugin, ScorePlugin
from gpulab.cluster.scheduler.profiles import DEFAULT_PLUGINS, PLUGINS_PROFILE, merge_plugins
from gpulab.cluster.scheduler.registry import REGISTRY
from gpulab.cluster.scheduler.runtime import ProfileError
from gpulab.cluster.scheduler.status import unschedulable

from test_scheduler import Cluster

RACK = "example.com/rack"


class Rack(FilterPlugin, ScorePlugin):
    """Nodes need a rack label; rack "b" is preferred. Node by node (no fast path)."""

    NAME = "Rack"

    def filter(self, state, pod, node):
        return None if RACK in node.labels else unschedulable("node(s) had no rack", plugin=self.NAME)

    def score(self, state, pod, node):
        return 100 if node.labels.get(RACK) == "b" else 0


class RackBySets(Rack):
    """The same plugin through the label index."""

    filter_scope = score_scope = SETS

    def filter_sets(self, state, pod):
        return [self.handle.cache.labels.term_members({"matchExpressions": [{"key": RACK, "operator": "Exists"}]})]

    def score_sets(self, state, pod):
        return [self.handle.cache.labels.term_members({"matchExpressions": [
            {"key": RACK, "operator": "In", "values": ["b"]}]})]


@pytest.mark.parametrize("plugin", [Rack, RackBySets], ids=["node-by-node", "node-sets"])
def test_a_new_plugin_is_one_class_and_one_profile_line(plugin):
    profile = Profile("rack-scheduler", merge_plugins(DEFAULT_PLUGINS, enabled=[("Rack", 10)]))
    c = Cluster(profile, registry={**REGISTRY, "Rack": plugin})
    c.pod("first", scheduler="rack-scheduler")
    c.run()
    assert c.message("first") == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) had no rack. "
        "preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No "
        "preemption victims found for incoming pod.")
    for node, rack in (("gpulab-worker", "a"), ("gpulab-worker3", "b")):
        c.api.patch("nodes", node, {"metadata": {"labels": {RACK: rack}}}, "merge")
    c.clock.advance(331)
    c.run()
    # Resources alone tie gpulab-worker with gpulab-worker3 for a best-effort pod; the rack score decides.
    assert c.node_of("first") == "gpulab-worker3"


def test_profiles_name_existing_plugins_only():
    with pytest.raises(ProfileError, match='plugin "Rack" does not exist'):
        Cluster(Profile("rack-scheduler", merge_plugins(DEFAULT_PLUGINS, enabled=[("Rack", 1)])))
    with pytest.raises(ProfileError, match="only one queue sort plugin"):
        Cluster(Profile("no-sort", merge_plugins(DEFAULT_PLUGINS, disabled=["PrioritySort"])))


def test_the_second_schedulers_profile_is_the_charts():
    names = PLUGINS_PROFILE.plugin_names
    assert "PrioritySort" not in names and names[-2:] == ["Coscheduling", "NodeResourcesAllocatable"]
    assert PLUGINS_PROFILE.plugin_args["Coscheduling"] == {"permitWaitingTimeSeconds": 10}
