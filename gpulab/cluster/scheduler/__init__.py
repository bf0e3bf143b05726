"""The embedded cluster's scheduler: kube-scheduler v1.36 behaviour, plus scheduler-plugins' coscheduling.

``Scheduler`` is the component the runtime starts; ``ProfileScheduler`` runs
one profile and can be driven synchronously (``schedule_next``) in tests.
"""
from .component import DEFAULT_PROFILE, PLUGINS_PROFILE, Scheduler
from .instance import ProfileScheduler

__all__ = ["DEFAULT_PROFILE", "PLUGINS_PROFILE", "ProfileScheduler", "Scheduler"]
