"""The framework runtime: one profile's plugins sorted into extension points, and the runs over them.

Port of pkg/scheduler/framework/runtime/framework.go: ``NewFramework`` builds
each plugin of the profile from the registry once and files it under every
extension point it implements, in profile order (score plugins with their
weight, 1 when unset); ``Run*Plugins`` call them with upstream's rules: the
first rejection wins, a ``Skip`` from PreFilter/PreScore leaves the plugin out
of Filter/Score for the cycle, PostFilter plugins run until one succeeds or
gives up for good, Bind plugins until one does not skip. The Filter and Score
runs over all nodes are ``search.Search``'s; here are the runs for one node.
"""
from __future__ import annotations

from .events import ClusterEvent, ClusterEventWithHint
from .interface import (BindPlugin, EnqueueExtensions, FilterPlugin, PermitPlugin, PostFilterPlugin, PreBindPlugin,
                        PreEnqueuePlugin, PreFilterPlugin, PreScorePlugin, QueueSortPlugin, ReservePlugin, ScorePlugin)
from .status import ERROR, SKIP, UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, WAIT, Status


class ProfileError(ValueError):
    """A profile names a plugin the registry does not know, or lacks a QueueSort or Bind plugin."""


def _with_plugin(status: Status, name: str) -> Status:
    return status if status.plugin else Status(status.code, status.reasons, name)


def _as_error(status: Status, point: str, name: str) -> Status:
    return Status(ERROR, (f'running {point} plugin "{name}": {status.message}',), name)


class FilterError(Exception):
    """A Filter plugin returned neither success nor a rejection: the attempt ends with this Error status."""

    def __init__(self, status: Status):
        super().__init__(status.message)
        self.status = status


def check_filter_status(status: Status | None, name: str) -> Status | None:
    """RunFilterPlugins' rule: a Filter status that is not a rejection becomes ``running "<name>" filter plugin:
    <message>`` and fails the whole attempt (findNodesThatPassFilters stops at the first error)."""
    if status is not None and not status.rejected:
        raise FilterError(Status(ERROR, (f'running "{name}" filter plugin: {status.message}',), name))
    return status


class Framework:
    def __init__(self, profile, registry: dict, handle):
        self.profile = profile
        self.handle = handle
        self.plugins = []
        weights: dict[str, int] = {}
        for name, weight in profile.plugins:
            try:
                factory = registry[name]
            except KeyError:
                raise ProfileError(f'plugin "{name}" does not exist') from None
            self.plugins.append(factory(handle, profile.plugin_args.get(name)))
            weights[name] = weight or 1

        def point(kind) -> list:
            return [p for p in self.plugins if isinstance(p, kind)]

        self.pre_enqueue_plugins = point(PreEnqueuePlugin)
        sorters = point(QueueSortPlugin)
        if len(sorters) != 1:
            raise ProfileError(f"only one queue sort plugin can be enabled, got {len(sorters)}")
        self.queue_sort = sorters[0]
        self.pre_filter_plugins = point(PreFilterPlugin)
        self.filter_plugins = point(FilterPlugin)
        self.post_filter_plugins = point(PostFilterPlugin)
        self.score_plugins = [(p, weights[p.NAME]) for p in point(ScorePlugin)]
        self.reserve_plugins = point(ReservePlugin)
        self.permit_plugins = point(PermitPlugin)
        self.pre_bind_plugins = point(PreBindPlugin)
        self.bind_plugins = point(BindPlugin)
        if not self.bind_plugins:
            raise ProfileError("at least one bind plugin is needed")
        self.registrations: dict[str, list[ClusterEventWithHint]] = {
            p.NAME: p.events_to_register() for p in point(EnqueueExtensions)}

    @property
    def cache(self):
        return self.handle.cache

    # --- the queue ----------------------------------------------------------
    def sort_key(self, qpi) -> tuple:
        return self.queue_sort.sort_key(qpi)

    def run_pre_enqueue(self, pod) -> Status | None:
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if status is not None:
                return status
        return None

    def event_resources(self) -> set[str]:
        return {reg.resource for regs in self.registrations.values() for reg in regs}

    def plugins_for(self, event: ClusterEvent) -> list[str]:
        """The plugins registered for an event (EventsToRegister)."""
        return [name for name, regs in self.registrations.items() if any(reg.matches(event) for reg in regs)]

    def queueing_hint(self, plugin: str, pod, event: ClusterEvent) -> bool:
        """Whether an event may make a pod the plugin rejected schedulable: a matching registration whose hint
        (if any) says Queue."""
        return any(reg.matches(event) and (reg.hint is None or reg.hint(pod, event))
                   for reg in self.registrations.get(plugin, ()))

    # --- filtering ----------------------------------------------------------
    def run_pre_filter(self, state, pod) -> Status | None:
        """RunPreFilterPlugins: an Unschedulable rejection lets the others run, an unresolvable one stops."""
        rejection = None
        for plugin in self.pre_filter_plugins:
            status = plugin.pre_filter(state, pod)
            if status is None:
                continue
            if status.code == SKIP:
                state.skip_filter.add(plugin.NAME)
            elif status.code == UNSCHEDULABLE_AND_UNRESOLVABLE:
                return _with_plugin(status, plugin.NAME)
            elif status.code == UNSCHEDULABLE:
                rejection = _with_plugin(status, plugin.NAME)
            else:
                return _as_error(status, "PreFilter", plugin.NAME)
        return rejection

    def run_filters(self, state, pod, node) -> Status | None:
        """RunFilterPlugins for one node: the first failing plugin's status."""
        for plugin in self.filter_plugins:
            if plugin.NAME in state.skip_filter:
                continue
            status = check_filter_status(plugin.filter(state, pod, node), plugin.NAME)
            if status is not None:
                return _with_plugin(status, plugin.NAME)
        return None

    def run_filters_with_nominated(self, state, pod, node) -> Status | None:
        """RunFilterPluginsWithNominatedPods: with the pods of at least the pod's priority nominated to the node
        added, then (when some were) without them, as either state may fail inter-pod affinity."""
        nominated = [p for p in self.cache.nominated.get(node.name, {}).values()
                     if p.uid != pod.uid and p.priority >= pod.priority]
        if nominated:
            with_state, with_node = state.clone(), node.copy()
            for other in nominated:
                with_node.add_pod(other)
                self.run_add_pod(with_state, pod, other, with_node)
            status = self.run_filters(with_state, pod, with_node)
            if status is not None:
                return status
        return self.run_filters(state, pod, node)

    def run_add_pod(self, state, pod, added, node) -> None:
        for plugin in self.pre_filter_plugins:
            if plugin.NAME not in state.skip_filter:
                plugin.add_pod(state, pod, added, node)

    def run_remove_pod(self, state, pod, removed, node) -> None:
        for plugin in self.pre_filter_plugins:
            if plugin.NAME not in state.skip_filter:
                plugin.remove_pod(state, pod, removed, node)

    def run_post_filter(self, state, pod, diagnosis) -> tuple[Status | None, str | None]:
        """RunPostFilterPlugins: (status, node to nominate); reasons of the plugins that gave up are joined."""
        reasons: list[str] = []
        nominated = None
        rejector = ""
        for plugin in self.post_filter_plugins:
            result = plugin.post_filter(state, pod, diagnosis)
            status = result.status
            if status is None or status.code == UNSCHEDULABLE_AND_UNRESOLVABLE:
                return status and _with_plugin(status, plugin.NAME), result.nominated_node
            if not status.rejected:
                return _as_error(status, "PostFilter", plugin.NAME), None
            if result.nominated_node is not None:
                nominated = result.nominated_node
            reasons.extend(status.reasons)
            rejector = rejector or plugin.NAME
        return Status(UNSCHEDULABLE, tuple(reasons), rejector), nominated

    # --- scoring ------------------------------------------------------------
    def run_pre_score(self, state, pod, feasible, score_plugins) -> None:
        """RunPreScorePlugins for the PreScore plugins among ``score_plugins``."""
        for plugin in score_plugins:
            if isinstance(plugin, PreScorePlugin):
                status = plugin.pre_score(state, pod, feasible)
                if status is not None and status.code == SKIP:
                    state.skip_score.add(plugin.NAME)

    # --- reserving, permitting, binding ---------------------------------------
    def run_reserve(self, state, pod, node_name: str) -> Status | None:
        for plugin in self.reserve_plugins:
            status = plugin.reserve(state, pod, node_name)
            if status is not None:
                return _with_plugin(status, plugin.NAME)
        return None

    def run_unreserve(self, state, pod, node_name: str) -> None:
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node_name)

    def run_permit(self, state, pod, node_name: str) -> tuple[Status | None, float]:
        """RunPermitPlugins: a rejection wins; otherwise a WAIT with the shortest timeout of the waiting plugins."""
        wait: Status | None = None
        timeout = 0.0
        for plugin in self.permit_plugins:
            status, seconds = plugin.permit(state, pod, node_name)
            if status is None:
                continue
            if status.rejected:
                return _with_plugin(status, plugin.NAME), 0.0
            if status.code != WAIT:
                return _as_error(status, "Permit", plugin.NAME), 0.0
            timeout = seconds if wait is None else min(timeout, seconds)
            wait = _with_plugin(status, plugin.NAME)
        return wait, timeout

    def run_pre_bind(self, state, pod, node_name: str) -> Status | None:
        for plugin in self.pre_bind_plugins:
            status = plugin.pre_bind(state, pod, node_name)
            if status is not None:
                return _as_error(status, "PreBind", plugin.NAME)
        return None

    def run_bind(self, state, pod, node_name: str) -> Status | None:
        for plugin in self.bind_plugins:
            status = plugin.bind(state, pod, node_name)
            if status is None:
                return None
            if status.code != SKIP:
                return _as_error(status, "Bind", plugin.NAME)
        return None
