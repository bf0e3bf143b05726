"""The MIG manager's reconfiguration on one node, step by step as the reconciler sees the node change.

NVIDIA/mig-parted ``pkg/mig/reconfigure/reconfigure.go`` runs to completion in one process,
waiting in place for the operand pods to go; here each reconcile of the node takes the next step
(see :mod:`.migmanager` for the rules and messages), so the wait is the DaemonSet controller
deleting the paused pods, and the next pod event moves on. The manager reacts to a change of the
``nvidia.com/mig.config`` label (or its own restart), never to the same value twice.
"""
from __future__ import annotations

from .. import kubeclient
from .allocation import allocated_ids
from .deviceplugin import physical_devices
from .mig import Layout, MigPartedError
from .migmanager import (CONFIG_LABEL, EVENT_REASON, OPERATOR_VALIDATOR_APP, PAUSED_APPS, SAVED_ANNOTATION,
                         STATE_LABEL, VALIDATOR_APPS, apply, encode_saved, in_use_error, load_configs, paused_labels,
                         restored_labels, saved_labels)
from .nodestate import MIG_LAYOUT_ANNOTATION, encode_layout
from .operator import DEFAULT_MIG_CONFIG
from .pods import active, meta, operand_app


class MigReconfigure:
    """The MIG manager of every node, driven by the reconciler ``stack`` (its client, caches, recorder)."""

    def __init__(self, stack):
        self.stack = stack
        self._handled: dict[str, tuple[str, str]] = {}      # node -> (manager pod uid, config) last settled

    def step(self, node: dict, gpus, layout: Layout, labels: dict[str, str], notes: dict[str, str],
             pods_here: list[dict], spec: dict, operands: dict[str, dict]) -> Layout:
        """One step of ``reconfigure.go`` for this node; mutates ``labels``/``notes``; returns the layout."""
        selected = labels.get(CONFIG_LABEL)
        if not selected or not gpus.model.mig_capable:
            return layout
        saved = saved_labels(notes)
        handled = (meta(operands["nvidia-mig-manager"])["uid"], selected)
        name = node["metadata"]["name"]
        if saved is None and self._handled.get(name) == handled and \
                labels.get(STATE_LABEL) in ("success", "failed"):
            return layout
        self._handled.pop(name, None)
        mig_config = (spec.get("migManager") or {}).get("config") or {}
        config_name = mig_config.get("name") or DEFAULT_MIG_CONFIG
        try:
            configs = load_configs(self.stack.configmaps.get(config_name, self.stack.namespace), config_name)
            if selected not in configs:
                raise MigPartedError(f"error selecting MIG config: selected mig-config not present: {selected}")
        except MigPartedError as err:
            self._handled[name] = handled
            return self._failed(node, labels, notes, saved, str(err), layout)
        try:
            wanted = apply(gpus.model, gpus.count, selected, configs, layout)
        except MigPartedError as err:
            wanted, failure = None, err
        else:
            failure = None
        if saved is None:
            if wanted == layout:
                labels[STATE_LABEL] = "success"
                self._handled[name] = handled
                return layout
            notes[SAVED_ANNOTATION] = encode_saved(labels)
            labels[STATE_LABEL] = "pending"
            labels.update(paused_labels(labels))
            return layout
        waiting = [p for p in pods_here if meta(p).get("namespace") == self.stack.namespace
                   and operand_app(p) in PAUSED_APPS]
        if waiting:
            return layout
        for pod in pods_here:
            if meta(pod).get("namespace") == self.stack.namespace and operand_app(pod) in VALIDATOR_APPS:
                self.stack.kube.delete(kubeclient.PODS, meta(pod)["name"], self.stack.namespace)
        self._handled[name] = handled
        if failure is not None:
            return self._failed(node, labels, notes, saved, str(failure), layout, log_lines=failure.log)
        busy = self._busy_gpus(name, pods_here, gpus, layout)
        refusal = in_use_error(layout, wanted, busy)
        if refusal:
            return self._failed(node, labels, notes, saved, refusal, layout)
        encoded = encode_layout(wanted)
        if encoded is None:
            notes.pop(MIG_LAYOUT_ANNOTATION, None)
        else:
            notes[MIG_LAYOUT_ANNOTATION] = encoded
        for pod in pods_here:
            if meta(pod).get("namespace") == self.stack.namespace and \
                    operand_app(pod) == OPERATOR_VALIDATOR_APP:
                self.stack.kube.delete(kubeclient.PODS, meta(pod)["name"], self.stack.namespace)
        labels.update(restored_labels(saved))
        labels[STATE_LABEL] = "success"
        notes.pop(SAVED_ANNOTATION, None)
        return wanted

    def _failed(self, node: dict, labels, notes, saved, message: str, layout, log_lines=()):
        labels.update(restored_labels(saved or labels))
        labels[STATE_LABEL] = "failed"
        notes.pop(SAVED_ANNOTATION, None)
        detail = "; ".join([*log_lines, message])
        self.stack.recorder.event({**node, "kind": "Node", "apiVersion": "v1"}, "Warning", EVENT_REASON,
                            f"Failed to apply MIG config {labels.get(CONFIG_LABEL)!r}: {detail}",
                            host=node["metadata"]["name"])
        return layout

    def _busy_gpus(self, name: str, pods_here: list[dict], gpus, layout) -> set[int]:
        """GPU indices with a device held by a running pod other than the operands."""
        index_of = {}
        for strategy in ("none", "single", "mixed"):
            for devs in physical_devices(name, layout, strategy).values():
                for d in devs:
                    index_of[d.physical] = d.gpu_index
        busy = set()
        for pod in pods_here:
            if not active(pod) or meta(pod).get("namespace") == self.stack.namespace:
                continue
            for device_id in allocated_ids(pod):
                physical = device_id.split("::")[0]
                if physical in index_of:
                    busy.add(index_of[physical])
        return busy
