"""Why a pod fits no node (framework.Diagnosis): each rejection covers a group of nodes."""
from __future__ import annotations

from dataclasses import dataclass, field

from .status import Status, fit_error_message


@dataclass
class Diagnosis:
    num_nodes: int
    rejections: list[tuple[Status, frozenset | set]] = field(default_factory=list)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add(self, status: Status, names) -> None:
        """Nodes ``names`` got ``status`` (the set may be the cache's own: ``freeze`` copies it)."""
        if names:
            self.rejections.append((status, names))

    def freeze(self) -> None:
        """Copy the node groups out of the cache, which PostFilter plugins (preemption) may change."""
        self.rejections = [(status, frozenset(names)) for status, names in self.rejections]

    def groups(self):
        return iter(self.rejections)

    def status_of(self, node: str) -> Status | None:
        return next((status for status, names in self.rejections if node in names), None)

    def unschedulable_plugins(self) -> set[str]:
        return {status.plugin for status, _ in self.rejections if status.plugin}

    def reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, names in self.rejections:
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + len(names)
        return counts

    def nodes_with_code(self, code: int) -> list[str]:
        out: list[str] = []
        for status, names in self.rejections:
            if status.code == code:
                out.extend(names)
        return sorted(out)

    def message(self) -> str:
        return fit_error_message(self.num_nodes, self.reason_counts(), self.pre_filter_msg, self.post_filter_msg)
