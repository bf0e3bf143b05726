"""The work queue under the reconciler (gpulab.gpustack.informer) and the CLI's helm-style durations."""
import argparse
import threading
import time

import pytest

from gpulab.gpustack.cli import _duration
from gpulab.gpustack.informer import WorkQueue


def test_keys_are_deduplicated_and_delayed_keys_wait():
    queue, stop = WorkQueue(), threading.Event()
    queue.add(("node", "a"))
    queue.add(("node", "a"))
    queue.add_after(("policy",), 0.2)
    assert queue.get(stop, idle=0.05) == ("node", "a")
    assert queue.get(stop, idle=0.05) is None
    started = time.monotonic()
    assert queue.get(stop, idle=1.0) == ("policy",)
    assert time.monotonic() - started >= 0.1


def test_helm_durations():
    assert _duration("5m0s") == 300 and _duration("90s") == 90 and _duration("1h") == 3600
    with pytest.raises(argparse.ArgumentTypeError, match='time: invalid duration "soon"'):
        _duration("soon")
